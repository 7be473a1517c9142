//! The allocator's share of RSS. glibc's malloc gives threads that allocate
//! at the same time arenas of their own (up to eight per core), and memory
//! freed into one arena is reused only by the threads allocating from it.
//! A cache frees each object minutes after it was allocated, on whichever
//! thread trims the log, while async tasks move between threads; so every
//! arena keeps free space the others cannot use, and RSS creeps up long
//! after what kache holds has levelled off. Measured (release, 10,000 pods,
//! 200 changes a second, a 30-second window, two kaches in front of one
//! simulator, over 140 s after their stores had levelled off, 26,000
//! events): with one arena RSS rose 4.2 MB while the store rose 3.7 MB;
//! with two it rose 19.2 MB; with glibc's default it rose faster still
//! (3.7 MB a minute at 20 changes a second, against 1.1 with two).
//!
//! So kache runs with one arena unless `MALLOC_ARENA_MAX` is set (the
//! operator's choice wins). Small allocations, most of kache's, come from
//! each thread's own cache (glibc's tcache) without taking the arena's lock.
//! glibc reads the variable only as the process starts, so kache sets it and
//! executes itself again, once, before anything else (same process, same
//! arguments); should that fail, it runs on as it is.
//!
//! Not mimalloc, which takes no lock shared by threads: its CPU was within
//! the noise of one glibc arena's, and it held more RSS (6–13 % over 50,000
//! pods, more over small stores) outside what the memory budget counts.

/// Restarts the process with `MALLOC_ARENA_MAX=1`, unless the variable is
/// set already; call first thing in `main`, before any thread exists.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        use std::os::unix::process::CommandExt;
        let Ok(exe) = std::env::current_exe() else { return };
        let mut args = std::env::args_os();
        let mut command = std::process::Command::new(exe);
        if let Some(arg0) = args.next() {
            command.arg0(arg0);
        }
        // Returns only when the exec failed: then run on as it is.
        let _ = command.args(args).env("MALLOC_ARENA_MAX", "1").exec();
    }
}

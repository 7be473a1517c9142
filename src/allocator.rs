//! The allocator's share of RSS. glibc's malloc gives threads that allocate
//! at the same time arenas of their own (up to eight per core), and memory
//! freed into one arena is reused only by the threads allocating from it.
//! A cache frees each object minutes after it was allocated, on whichever
//! thread trims the log, while async tasks move between threads; so every
//! arena keeps free space the others cannot use, and RSS creeps up long
//! after what kache holds has levelled off. Measured (release, 10,000 pods
//! and 20 changes a second, kache and the simulator as two processes, after
//! their stores had levelled off): with glibc's default arenas each
//! process's RSS still grew 60–80 KiB a second; with one arena the
//! simulator's stopped and kache's settled within two minutes.
//!
//! So kache runs with at most [`ARENAS`] arenas unless `MALLOC_ARENA_MAX`
//! is set (the operator's choice wins). glibc reads it only as the process
//! starts, so kache sets it and executes itself again, once, before
//! anything else (same process, same arguments); should that fail, it runs
//! on as it is.

/// Arenas kache allows: a few, so threads rarely wait for one another's, and
/// few enough that freed memory is found again.
const ARENAS: &str = "2";

/// Restarts the process with `MALLOC_ARENA_MAX` set, unless it is set
/// already; call first thing in `main`, before any thread exists.
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
        let _ = command.args(args).env("MALLOC_ARENA_MAX", ARENAS).exec();
    }
}

//! The allocator's share of RSS. glibc's malloc gives threads that allocate
//! at the same time arenas of their own (up to eight per core), and memory
//! freed into one arena is reused only by the threads allocating from it.
//! A cache frees each object minutes after it was allocated, on whichever
//! thread trims the log, while async tasks move between threads; so every
//! arena keeps free space the others cannot use, and RSS creeps up long
//! after what kache holds has levelled off. Measured (release, 10,000 pods
//! and 20 changes a second, kache and the simulator as two processes, after
//! their stores had levelled off): with glibc's default arenas kache's RSS
//! still grew 3.7 MB a minute and the simulator's 5 MB; with two arenas
//! kache's grew 1.2 MB a minute, as with one, while the simulator's still
//! grew 2.5 MB; with one arena the simulator's stopped.
//!
//! So `kache serve` runs with two arenas, and the simulator (`demo`, `sim`:
//! a test tool, where allocation contention does not matter) with one,
//! unless `MALLOC_ARENA_MAX` is set (the operator's choice wins). glibc
//! reads it only as the process starts, so kache sets it and executes
//! itself again, once, before anything else (same process, same
//! arguments); should that fail, it runs on as it is.

/// How many arenas a process allows.
#[derive(Debug, Clone, Copy)]
pub enum Arenas {
    /// kache serving: a few, so threads rarely wait for one another's, and
    /// few enough that freed memory is found again.
    Server,
    /// A process with the simulator in it: one.
    Simulator,
}

/// Restarts the process with `MALLOC_ARENA_MAX` set for `arenas`, unless it
/// is set already; call first thing in `main`, before any thread exists.
pub fn limit_arenas(arenas: Arenas) {
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = arenas;
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        let max = match arenas {
            Arenas::Server => "2",
            Arenas::Simulator => "1",
        };
        use std::os::unix::process::CommandExt;
        let Ok(exe) = std::env::current_exe() else { return };
        let mut args = std::env::args_os();
        let mut command = std::process::Command::new(exe);
        if let Some(arg0) = args.next() {
            command.arg0(arg0);
        }
        // Returns only when the exec failed: then run on as it is.
        let _ = command.args(args).env("MALLOC_ARENA_MAX", max).exec();
    }
}

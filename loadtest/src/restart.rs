//! The worst day, halfway through `loadtest mixed`: kube-apiserver
//! restarts. The tool runs the command it was given (`sh -c CMD`: it
//! restarts the apiserver with the arguments it had and returns once the
//! new one is ready), and measures a window (two minutes unless told) from the moment it runs
//! it: the clients whose watch ended (directly, every one: the apiserver
//! closes them as it stops), the lists clients made again (client-go lists
//! again when its watch cannot resume: the new apiserver's watch cache
//! starts at a later revision), and the CPU seconds of the apiserver —
//! the new process from its start, which includes starting up and loading
//! its caches from etcd, much the same on both sides; and apart, from the
//! moment the command returned (the new apiserver ready) to the window's
//! end: what its clients cost it.
//!
//! Bounded: the command is killed if it has not returned within
//! [`COMMAND_TIMEOUT`], and the run fails.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use indicatif::ProgressBar;

use crate::follow::Followed;
use crate::progress::note;
use crate::vitals::Vitals;

/// How long after the restart begins its effects are counted, unless told
/// (`--restart-window`): the two minutes an apiserver takes to settle.
pub const WINDOW_SECONDS: u64 = 120;

/// The longest the restart command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

/// What a restart did.
#[derive(Debug, Clone, Copy)]
pub struct Restart {
    /// When it began: the window's start.
    pub begun: Instant,
    /// How long its effects are counted from then.
    pub window: Duration,
    /// How long the command took (the apiserver down and starting).
    pub took: Duration,
    /// The apiserver's CPU seconds in the window, when measured.
    pub apiserver_cpu: Option<f64>,
    /// Those from when it was ready on.
    pub apiserver_cpu_ready: Option<f64>,
}

impl Restart {
    /// Among `clients`: how many had a watch ended in the window, and how many lists they made again in it.
    pub fn effects<'a>(&self, clients: impl Iterator<Item = &'a Followed>) -> (usize, usize) {
        let within = |t: &&Instant| self.begun <= **t && **t <= self.begun + self.window;
        clients.fold((0, 0), |(ended, relists), f| {
            (ended + usize::from(f.ended.iter().any(|t| within(&t))), relists + f.relisted.iter().filter(within).count())
        })
    }
}

/// Runs `command` now and returns at the end of `window` with what the
/// apiserver's `vitals` saw in it.
pub async fn restart(command: &str, window: Duration, vitals: Option<&Vitals>, bar: &ProgressBar) -> anyhow::Result<Restart> {
    let begun = mark(vitals).await;
    note(bar, format!("restarting the apiserver: {command}"));
    // Its output goes to stderr: stdout is the report's.
    let stderr = std::io::stderr();
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::null())
        .stdout(std::os::fd::AsFd::as_fd(&stderr).try_clone_to_owned()?)
        .spawn()
        .with_context(|| format!("running `{command}`"))?;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if begun.elapsed() > COMMAND_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            bail!("`{command}` had not returned after {COMMAND_TIMEOUT:?}: killed");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    if !status.success() {
        bail!("`{command}` failed: {status}");
    }
    let took = begun.elapsed();
    let ready = mark(vitals).await;
    note(bar, format!("the apiserver restarted in {took:.1?}; counting until {window:?} after the restart began"));
    tokio::time::sleep_until((begun + window).into()).await;
    let end = mark(vitals).await;
    Ok(Restart {
        begun,
        window,
        took,
        apiserver_cpu: vitals.and_then(|v| v.cpu(begun, end)),
        apiserver_cpu_ready: vitals.and_then(|v| v.cpu(ready, end)),
    })
}

/// Samples `vitals` now, if any; the instant to window on.
async fn mark(vitals: Option<&Vitals>) -> Instant {
    match vitals {
        Some(v) => v.mark().await,
        None => Instant::now(),
    }
}

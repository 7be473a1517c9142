//! What a run leaves on a target, and the one place that removes it.
//!
//! A scenario writing to a real cluster creates namespaces of its own
//! (`kache-loadtest-PID-N`) holding up to hundreds of thousands of pods,
//! and the Nodes they are bound to ([`crate::fixtures`]). [`Objects::create`]
//! records them in the run's [`Cleanup`] before it sends the first request
//! that creates any, and [`supervise`], which `main` runs every
//! scenario under, deletes what is recorded however the scenario ended: it
//! returned, failed, panicked (a panic in any of its tasks surfaces as an
//! error when the task is joined), or SIGINT or SIGTERM came — then the
//! scenario is aborted first: dropping it kills the processes it started
//! and stops its watchers, creators and writers. So a scenario has no
//! cleanup of its own and no exit path around this one.
//!
//! Invariant: once anything exists on a target, it is recorded; the tool
//! exits without deleting it only when the deletion fails or outlasts
//! [`WITHIN`] (and [`PER_OBJECT`] for each object), or a second signal asks
//! to leave at once — and then it says on stderr what it left and how to
//! delete it.
//!
//! Exit codes: 0; 1 for an error (also when the deletion failed); 101 for a
//! panic; 130 after SIGINT and 143 after SIGTERM (128 + the signal's
//! number, as a shell reports a process the signal ended).

use std::future::Future;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::fixtures::Ledger;
use crate::objects::Objects;
use crate::target::{Http, Target};

/// How long deleting may take before the tool gives up and says what it
/// left, besides [`PER_OBJECT`]: 30 s, about as long as a person waits
/// after Ctrl-C before pressing it again.
const WITHIN: Duration = Duration::from_secs(30);

/// And for each object made: kube-apiserver 1.36.2 on two cores deleted
/// about 325 a second (pods, Nodes, 64 at a time, sweeps and waits
/// included); twice that long (150,000 pods: 16 minutes at most).
const PER_OBJECT: Duration = Duration::from_millis(6);

/// What the run created and must delete: shared by the scenario (which
/// records) and [`supervise`] (which deletes). Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Cleanup {
    owned: Arc<Mutex<Vec<Owned>>>,
}

/// Objects the run created on one target.
#[derive(Debug, Clone)]
struct Owned {
    target: String,
    http: Http,
    objects: Objects,
}

impl Ledger for Cleanup {
    /// Records `objects` as the run's on `target`: called before creating them.
    fn record(&self, target: &Target, objects: &Objects) {
        let owned = Owned { target: target.name.clone(), http: target.http.clone(), objects: objects.clone() };
        self.owned.lock().unwrap_or_else(PoisonError::into_inner).push(owned);
    }
}

impl Cleanup {
    fn owned(&self) -> Vec<Owned> {
        self.owned.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Deletes everything recorded, each at most [`WITHIN`], saying so on
    /// stderr; whether all of it is gone.
    async fn run(&self) -> bool {
        let mut clean = true;
        for o in self.owned() {
            let what = o.objects.describe();
            let within = WITHIN + PER_OBJECT * o.objects.made() as u32;
            eprintln!("loadtest: deleting {what} on {} (at most {within:.0?}; a second Ctrl-C leaves it)", o.target);
            let started = Instant::now();
            match tokio::time::timeout(within, o.objects.delete(&o.http)).await {
                Ok(Ok(())) => eprintln!("loadtest: deleted {what} in {:.1?}", started.elapsed()),
                Ok(Err(e)) => {
                    clean = false;
                    eprintln!("loadtest: deleting {what} failed: {e:#}; {}", o.objects.by_hand());
                }
                Err(_) => {
                    clean = false;
                    eprintln!("loadtest: {what} not gone after {within:.0?}; {}", o.objects.by_hand());
                }
            }
        }
        clean
    }

    /// Exits at once on a second signal, naming what is left.
    fn abandon(&self, signal: Interrupt) -> ! {
        for o in self.owned() {
            eprintln!("loadtest: {} again: leaving {} on {}; {}", signal.name(), o.objects.describe(), o.target, o.objects.by_hand());
        }
        std::process::exit(signal.code().into())
    }
}

/// A signal that stops a run.
#[derive(Debug, Clone, Copy)]
enum Interrupt {
    /// SIGINT (Ctrl-C).
    Int,
    /// SIGTERM.
    Term,
}

impl Interrupt {
    fn name(self) -> &'static str {
        match self {
            Interrupt::Int => "SIGINT",
            Interrupt::Term => "SIGTERM",
        }
    }

    /// 128 + the signal's number.
    fn code(self) -> u8 {
        match self {
            Interrupt::Int => 130,
            Interrupt::Term => 143,
        }
    }
}

/// SIGINT and SIGTERM, caught from the moment this exists (instead of ending the process).
#[derive(Debug)]
struct Interrupts {
    int: Signal,
    term: Signal,
}

impl Interrupts {
    fn listen() -> std::io::Result<Interrupts> {
        Ok(Interrupts { int: signal(SignalKind::interrupt())?, term: signal(SignalKind::terminate())? })
    }

    async fn next(&mut self) -> Interrupt {
        tokio::select! {
            _ = self.int.recv() => Interrupt::Int,
            _ = self.term.recv() => Interrupt::Term,
        }
    }
}

/// How a scenario ended.
#[derive(Debug)]
enum End {
    Done,
    Failed,
    Panicked,
    Interrupted(Interrupt),
}

/// Runs `scenario` as a task with the run's [`Cleanup`], deletes what it
/// recorded however it ended, and returns the exit code (module doc).
pub async fn supervise<F, Fut>(scenario: F) -> ExitCode
where
    F: FnOnce(Cleanup) -> Fut,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    // Before the scenario starts: from here on a signal no longer ends the process where it stands.
    let mut interrupts = match Interrupts::listen() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("Error: listening for SIGINT and SIGTERM: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cleanup = Cleanup::default();
    let mut task = tokio::spawn(scenario(cleanup.clone()));
    let end = tokio::select! {
        joined = &mut task => match joined {
            Ok(Ok(())) => End::Done,
            Ok(Err(e)) => {
                eprintln!("Error: {e:?}");
                End::Failed
            }
            // The task is aborted only below, so this is a panic, already reported by the panic hook.
            Err(_) => End::Panicked,
        },
        signal = interrupts.next() => {
            eprintln!("loadtest: {}: stopping", signal.name());
            task.abort();
            tokio::select! {
                _ = task => {}
                again = interrupts.next() => cleanup.abandon(again),
            }
            End::Interrupted(signal)
        }
    };
    let clean = tokio::select! {
        clean = cleanup.run() => clean,
        again = interrupts.next() => cleanup.abandon(again),
    };
    match end {
        End::Done if clean => ExitCode::SUCCESS,
        End::Done | End::Failed => ExitCode::FAILURE,
        End::Panicked => ExitCode::from(101),
        End::Interrupted(signal) => ExitCode::from(signal.code()),
    }
}

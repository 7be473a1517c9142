//! The CPU seconds and resident memory of a server under test over the
//! phases of a run: a local process's from `/proc`, kube-apiserver's from
//! its own `/metrics` (`process_cpu_seconds_total`,
//! `process_resident_memory_bytes`, `process_start_time_seconds`; an admin
//! may read it), sampled periodically (for the peak) and whenever a phase
//! begins or ends ([`Vitals::mark`]).
//!
//! CPU over a window is summed per process: a restart (a new
//! `process_start_time_seconds`) starts a new counter from zero, so a
//! window holding a restart counts the old process up to its last sample
//! and the new one from its start. What the old one spent after its last
//! sample (its shutdown) is not seen: mark just before stopping it. Peak
//! RSS over a window is the largest sample in it.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::task::JoinHandle;

use crate::procs::{cpu_seconds, memory};
use crate::target::{Http, Role, Target};

/// Where the figures come from.
#[derive(Debug, Clone)]
enum Source {
    /// A local process.
    Proc(u32),
    /// kube-apiserver's `/metrics`.
    Metrics(Box<Http>),
}

impl Source {
    /// How often it is sampled: kube-apiserver's `/metrics` is some 15 MB,
    /// which cost it about 0.2 s of CPU each time (1.36.2, after its
    /// conformance tests: a percent of a core every 15 s, on both sides
    /// alike); `/proc` costs next to nothing.
    fn period(&self) -> Duration {
        match self {
            Source::Proc(_) => Duration::from_secs(1),
            Source::Metrics(_) => Duration::from_secs(15),
        }
    }

    /// A sample now, if the process answers.
    async fn sample(&self) -> Option<Sample> {
        let (start, cpu, rss) = match self {
            Source::Proc(pid) => (0.0, cpu_seconds(*pid), memory(*pid).0 as f64),
            Source::Metrics(http) => {
                let get = http.get("/metrics", &[]);
                let (status, text) = tokio::time::timeout(Duration::from_secs(10), get).await.ok()?.ok()?;
                if status != 200 {
                    return None;
                }
                let text = String::from_utf8_lossy(&text);
                let value = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse::<f64>().ok());
                (value("process_start_time_seconds")?, value("process_cpu_seconds_total")?, value("process_resident_memory_bytes")?)
            }
        };
        Some(Sample { at: Instant::now(), start, cpu, rss })
    }
}

/// One reading.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Instant,
    /// The process's start (Unix seconds; 0 for a local process, which is never restarted).
    start: f64,
    /// CPU seconds since its start.
    cpu: f64,
    /// Resident bytes.
    rss: f64,
}

/// A server's samples, taken until dropped.
#[derive(Debug)]
pub struct Vitals {
    source: Source,
    samples: Arc<Mutex<Vec<Sample>>>,
    /// When this began, on both clocks: a process started later was restarted within the run.
    began: (Instant, f64),
    task: JoinHandle<()>,
}

impl Drop for Vitals {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Vitals {
    /// Samples `target`'s process: its own when local, else kube-apiserver's
    /// `/metrics` for the direct target; `None` for a remote kache.
    pub fn of(target: &Target) -> Option<Vitals> {
        let source = match (target.pid, target.role) {
            (Some(pid), _) => Source::Proc(pid),
            (None, Role::Direct) => Source::Metrics(Box::new(target.http.clone())),
            (None, _) => return None,
        };
        let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
        let (sampler, into) = (source.clone(), samples.clone());
        let task = tokio::spawn(async move {
            loop {
                if let Some(s) = sampler.sample().await {
                    into.lock().unwrap_or_else(PoisonError::into_inner).push(s);
                }
                tokio::time::sleep(sampler.period()).await;
            }
        });
        let unix = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64();
        Some(Vitals { source, samples, began: (Instant::now(), unix), task })
    }

    /// Samples now (when the process answers); the instant to window on.
    pub async fn mark(&self) -> Instant {
        let at = Instant::now();
        if let Some(s) = self.source.sample().await {
            self.push(s);
        }
        at
    }

    fn push(&self, s: Sample) {
        self.samples.lock().unwrap_or_else(PoisonError::into_inner).push(s);
    }

    /// The samples taken in `[from, to]`, in order.
    fn within(&self, from: Instant, to: Instant) -> Vec<Sample> {
        let mut all: Vec<Sample> =
            self.samples.lock().unwrap_or_else(PoisonError::into_inner).iter().filter(|s| from <= s.at && s.at <= to).copied().collect();
        all.sort_by_key(|s| s.at);
        all
    }

    /// CPU seconds spent in `[from, to]`, summed over the processes it saw (module doc).
    pub fn cpu(&self, from: Instant, to: Instant) -> Option<f64> {
        let samples = self.within(from, to);
        let from_unix = self.began.1 + from.saturating_duration_since(self.began.0).as_secs_f64();
        let mut total = 0.0;
        let mut last: Option<Sample> = None;
        for s in &samples {
            total += match last {
                Some(l) if l.start == s.start => s.cpu - l.cpu,
                // A process started in the window: all it spent is in it.
                Some(_) => s.cpu,
                None if s.start > from_unix => s.cpu,
                None => 0.0,
            };
            last = Some(*s);
        }
        (!samples.is_empty()).then_some(total)
    }

    /// The largest resident memory sampled in `[from, to]`, in bytes.
    pub fn peak_rss(&self, from: Instant, to: Instant) -> Option<u64> {
        self.within(from, to).iter().map(|s| s.rss as u64).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vitals over `samples` (seconds after `t0`, process start, cpu), begun at `t0`, Unix time 1000.
    fn vitals(t0: Instant, samples: &[(u64, f64, f64)]) -> Vitals {
        let samples: Vec<Sample> =
            samples.iter().map(|&(s, start, cpu)| Sample { at: t0 + Duration::from_secs(s), start, cpu, rss: cpu * 10.0 }).collect();
        Vitals { source: Source::Proc(0), samples: Arc::new(Mutex::new(samples)), began: (t0, 1000.0), task: tokio::spawn(async {}) }
    }

    #[tokio::test]
    async fn a_restart_in_the_window_counts_the_new_process_from_its_start() {
        let t0 = Instant::now();
        let v = vitals(t0, &[(0, 500.0, 100.0), (5, 500.0, 104.0), (10, 1008.0, 3.0), (15, 1008.0, 9.0), (20, 1008.0, 12.0)]);
        let at = |s| t0 + Duration::from_secs(s);
        assert_eq!(v.cpu(at(0), at(20)), Some(4.0 + 12.0));
        assert_eq!(v.cpu(at(5), at(15)), Some(9.0));
        // The window opens on the new process, started after it: counted from its start.
        assert_eq!(v.cpu(at(7), at(15)), Some(9.0));
        // Started before it: from the first sample in it.
        assert_eq!(v.cpu(at(12), at(20)), Some(3.0));
        assert_eq!(v.cpu(at(21), at(30)), None);
        assert_eq!(v.peak_rss(at(0), at(20)), Some(1040));
    }
}

//! What a scenario measures, per (workload, target) cell: latencies in an
//! HdrHistogram (microseconds, 3 significant digits), answers by status
//! code, bytes received, operations per time bucket (throughput over time),
//! the serving process's CPU seconds and peak RSS, and scenario-specific
//! counts (missed, duplicated and out-of-order watch events).
//!
//! Each client task records into its own [`Recorder`]; they are merged at
//! the end, so recording takes no lock.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::target::{Role, Target};

/// Width of a throughput bucket.
pub const BUCKET: Duration = Duration::from_millis(250);

/// Latencies, statuses, bytes and a timeline of one client (or merged).
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Microseconds.
    pub latency: Histogram<u64>,
    /// Answers by HTTP status; 0: a transport error.
    pub statuses: BTreeMap<u16, u64>,
    /// Bytes received.
    pub bytes: u64,
    /// Operations completed per [`BUCKET`] since `start`.
    pub timeline: Vec<u64>,
    start: Instant,
}

impl Recorder {
    /// An empty recorder whose timeline starts at `start`.
    pub fn new(start: Instant) -> Recorder {
        Recorder {
            latency: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds"),
            statuses: BTreeMap::new(),
            bytes: 0,
            timeline: Vec::new(),
            start,
        }
    }

    /// One operation that completed now after `latency`, answered `status` with `bytes`.
    pub fn record(&mut self, latency: Duration, status: u16, bytes: usize) {
        *self.statuses.entry(status).or_default() += 1;
        self.bytes += bytes as u64;
        if (200..300).contains(&status) {
            self.latency.saturating_record(latency.as_micros().max(1) as u64);
        }
        self.tick(Instant::now());
    }

    /// One delivery (a watch event) that arrived at `at`, `latency` after its write.
    pub fn delivery(&mut self, at: Instant, latency: Duration) {
        *self.statuses.entry(200).or_default() += 1;
        self.latency.saturating_record(latency.as_micros().max(1) as u64);
        self.tick(at);
    }

    fn tick(&mut self, at: Instant) {
        let i = (at.saturating_duration_since(self.start).as_nanos() / BUCKET.as_nanos()) as usize;
        if self.timeline.len() <= i {
            self.timeline.resize(i + 1, 0);
        }
        self.timeline[i] += 1;
    }

    /// Adds `other`'s figures to these.
    pub fn merge(&mut self, other: &Recorder) {
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        for (s, n) in &other.statuses {
            *self.statuses.entry(*s).or_default() += n;
        }
        self.bytes += other.bytes;
        if self.timeline.len() < other.timeline.len() {
            self.timeline.resize(other.timeline.len(), 0);
        }
        for (i, n) in other.timeline.iter().enumerate() {
            self.timeline[i] += n;
        }
    }

    /// The latency at quantile `q` of the answers 2xx, in milliseconds.
    pub fn ms(&self, q: f64) -> f64 {
        self.latency.value_at_quantile(q) as f64 / 1000.0
    }

    /// Operations answered, any status.
    pub fn count(&self) -> u64 {
        self.statuses.values().sum()
    }

    /// Operations not answered 2xx.
    pub fn errors(&self) -> u64 {
        self.statuses.iter().filter(|(s, _)| !(200..300).contains(*s)).map(|(_, n)| n).sum()
    }
}

/// The serving process's CPU and memory around a cell.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    cpu0: Option<f64>,
}

impl Usage {
    /// Starts counting `target`'s CPU.
    pub fn start(target: &Target) -> Usage {
        Usage { cpu0: target.cpu() }
    }

    /// CPU seconds since the start, and the peak RSS so far.
    pub fn finish(self, target: &Target) -> (Option<f64>, Option<u64>) {
        (target.cpu().zip(self.cpu0).map(|(c, c0)| c - c0), target.peak_rss())
    }
}

/// One (workload, target) cell of a report.
#[derive(Debug, Clone)]
pub struct Row {
    /// What was run.
    pub workload: String,
    /// Against what.
    pub target: String,
    /// Direct, kache or plain.
    pub role: Role,
    /// Its figures.
    pub rec: Recorder,
    /// How long it ran.
    pub wall: Duration,
    /// CPU seconds of the serving process during the cell, when local.
    pub cpu: Option<f64>,
    /// Peak RSS of the serving process, when local.
    pub peak_rss: Option<u64>,
    /// Scenario-specific counts, in order.
    pub extra: Vec<(&'static str, f64)>,
}

impl Row {
    /// A row for `workload` on `target` that ran `wall`, with `usage` figures.
    pub fn new(workload: &str, target: &Target, rec: Recorder, wall: Duration, usage: (Option<f64>, Option<u64>)) -> Row {
        Row {
            workload: workload.to_string(),
            target: target.name.clone(),
            role: target.role,
            rec,
            wall,
            cpu: usage.0,
            peak_rss: usage.1,
            extra: Vec::new(),
        }
    }

    /// Operations per second over the cell.
    pub fn throughput(&self) -> f64 {
        self.rec.count() as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// The latency at quantile `q`, in milliseconds.
    pub fn ms(&self, q: f64) -> f64 {
        self.rec.ms(q)
    }
}

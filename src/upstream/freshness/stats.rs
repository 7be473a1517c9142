//! What one resource's freshness work did and showed: counters and
//! histograms for the metrics ([`FreshnessStats`]), and the moving
//! averages its plans are made from ([`Observed`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use apimachinery::resource::Resource;
use parking_lot::Mutex;

use super::NotFresh;
use crate::upstream::costs::Average;
use crate::upstream::plan::{CATCH_UP, Plan};

/// Upper bounds (seconds) of the buckets of `kache_consistent_wait_seconds`
/// and `kache_freshness_proof_seconds`.
pub const WAIT_BUCKETS: [f64; 12] = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 1.5, 3.0];

/// Counters of one resource's freshness work.
#[derive(Debug)]
pub struct FreshnessStats {
    /// Probes sent.
    pub probes: AtomicU64,
    /// Catch-up watches opened.
    pub catch_ups: AtomicU64,
    /// Catch-ups that ended with a proof.
    pub proofs: AtomicU64,
    /// Consistent reads proven fresh (answered from memory).
    pub fresh: AtomicU64,
    /// Consistent reads passed through: sooner upstream, probe failed, timed out, late proof.
    pub passed: [AtomicU64; 4],
    /// Reads that chose memory and were sent upstream too: their proof late or failed ([`super::Proving`]).
    pub hedges: AtomicU64,
    /// How long the reads proven fresh waited (`kache_consistent_wait_seconds`).
    waited: metrics::Histogram,
    /// How long each catch-up took to prove (`kache_freshness_proof_seconds`).
    pub(super) proof_delay: metrics::Histogram,
    /// The last read's plan, for metrics.
    pub last_plan: Mutex<Option<Plan>>,
}

impl FreshnessStats {
    pub(super) fn new(resource: &Resource) -> FreshnessStats {
        FreshnessStats {
            probes: AtomicU64::new(0),
            catch_ups: AtomicU64::new(0),
            proofs: AtomicU64::new(0),
            fresh: AtomicU64::new(0),
            passed: Default::default(),
            hedges: AtomicU64::new(0),
            waited: metrics::histogram!("kache_consistent_wait_seconds", "resource" => resource.qualified()),
            proof_delay: metrics::histogram!("kache_freshness_proof_seconds", "resource" => resource.qualified()),
            last_plan: Mutex::new(None),
        }
    }

    /// A consistent read's outcome: proven fresh after waiting so long, or passed through.
    pub fn record(&self, outcome: Result<Duration, NotFresh>) {
        match outcome {
            Ok(waited) => {
                self.fresh.fetch_add(1, Ordering::Relaxed);
                self.waited.record(waited.as_secs_f64());
            }
            Err(why) => {
                self.passed[why as usize].fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// What this resource's probes and catch-ups showed: inputs of its [`Plan`]s.
#[derive(Debug, Default)]
pub struct Observed {
    /// 1 for a probe that found the store already at upstream's revision, else 0.
    pub(super) hits: Average,
    /// Seconds a catch-up took to prove.
    pub(super) proofs: Average,
    /// When the last probe was sent.
    pub(super) probed_at: Option<Instant>,
    /// When the catch-up under way started.
    pub(super) catching_up_since: Option<Instant>,
}

impl Observed {
    /// The share of probes that found the store fresh. Until measured, all:
    /// the first consistent read tries memory, which costs one probe if
    /// wrong (its budget is then spent at once) and measures the share.
    pub fn hit_ratio(&self) -> f64 {
        self.hits.get().unwrap_or(1.0).clamp(0.0, 1.0)
    }

    /// A proof's expected delay (until measured: the longest a catch-up takes).
    pub fn proof_delay(&self) -> Duration {
        self.proofs.get().map_or(CATCH_UP, Duration::from_secs_f64)
    }
}

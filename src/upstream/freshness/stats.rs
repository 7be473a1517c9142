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
    /// 1 for a probe that found the store already at upstream's revision,
    /// else 0 — of probes sent while the store was not behind the one before.
    hits: Average,
    /// The last probe's revision: upstream's, as far as kache knows.
    last_revision: Option<u64>,
    /// Seconds a catch-up took to prove.
    pub(super) proofs: Average,
    /// When the last probe was sent.
    pub(super) probed_at: Option<Instant>,
    /// When the oldest catch-up under way started.
    pub(super) catching_up_since: Option<Instant>,
    /// Catch-ups under way.
    pub(super) catch_ups: usize,
    /// When the last proof came.
    last_proof: Option<Instant>,
    /// Seconds between proofs on different ticks of the apiserver's bookmark timer.
    ticks: Average,
}

impl Observed {
    /// The chance that a probe now finds a store that confirmed
    /// `confirmed` fresh: none while it is behind the last probe's
    /// revision, else the hit ratio.
    pub(super) fn hit_chance(&self, confirmed: u64) -> f64 {
        if self.last_revision.is_some_and(|x| confirmed < x) { 0.0 } else { self.hit_ratio() }
    }

    /// Whether a store that confirmed `confirmed` holds the revision the
    /// last probe showed: a probe now finds it fresh unless upstream has
    /// moved since.
    pub(super) fn known_fresh(&self, confirmed: u64) -> bool {
        self.last_revision.is_some_and(|x| confirmed >= x)
    }

    /// A probe showed upstream at `revision`, the store `caught_up` to it
    /// or not. Only a probe sent while the store was `known_fresh` counts
    /// towards the hit ratio: one sent while it was behind (or before any
    /// probe) misses, or not, by how soon its proof came, which the plan
    /// weighs on its own.
    pub(super) fn probed(&mut self, revision: u64, caught_up: bool, known_fresh: bool) {
        if known_fresh {
            self.hits.record(if caught_up { 1.0 } else { 0.0 });
        }
        self.last_revision = Some(revision);
    }

    /// The share of probes, sent while the store was known fresh, that
    /// found it still fresh. Until measured, all:
    /// the first consistent read tries memory, which costs one probe if
    /// wrong (its budget is then spent at once) and measures the share.
    pub(crate) fn hit_ratio(&self) -> f64 {
        self.hits.get().unwrap_or(1.0).clamp(0.0, 1.0)
    }

    /// A proof's expected delay (until measured: the longest a catch-up takes).
    pub(crate) fn proof_delay(&self) -> Duration {
        self.proofs.get().map_or(CATCH_UP, Duration::from_secs_f64)
    }

    /// A catch-up proved at `now`, `took` after it opened; proofs less
    /// than `same_tick` apart came on one tick of the apiserver's timer.
    pub(super) fn proved(&mut self, took: Duration, now: Instant, same_tick: Duration) {
        self.proofs.record(took.as_secs_f64());
        let gap = self.last_proof.map(|at| now.saturating_duration_since(at));
        if let Some(gap) = gap.filter(|gap| (same_tick..=CATCH_UP).contains(gap)) {
            self.ticks.record(gap.as_secs_f64());
        }
        self.last_proof = Some(now);
    }

    /// What the next proof is expected to take in all, and how long it has
    /// been under way, at `now`. Kept `warm`, proofs come on every tick of
    /// the apiserver's bookmark timer: the next is a tick after the last.
    /// Otherwise it is a catch-up's, the one under way if there is one.
    pub(crate) fn next_proof(&self, warm: bool, now: Instant) -> (Duration, Option<Duration>) {
        let since_last = self.last_proof.map(|at| now.saturating_duration_since(at)).filter(|age| *age <= CATCH_UP);
        match (warm, since_last, self.ticks.get()) {
            (true, Some(age), Some(tick)) => (Duration::from_secs_f64(tick), Some(age)),
            _ => (self.proof_delay(), self.catching_up_since.map(|since| now.saturating_duration_since(since))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn only_probes_of_a_store_known_fresh_count_towards_its_hit_ratio() {
        let mut o = Observed::default();
        assert_eq!(o.hit_ratio(), 1.0, "unmeasured: memory is tried");
        assert!(!o.known_fresh(10), "no probe yet: not known");
        // Behind (or not yet known): misses that say nothing of a fresh store's chances.
        o.probed(12, false, o.known_fresh(10));
        assert_eq!(o.hit_chance(11), 0.0, "a store behind the last probe's revision misses for sure");
        o.probed(12, false, o.known_fresh(11));
        assert_eq!(o.hit_ratio(), 1.0);
        assert_eq!(o.hit_chance(12), 1.0);
        // Known fresh at 12, upstream moved since: a miss that counts; then a hit.
        assert!(o.known_fresh(12));
        o.probed(15, false, o.known_fresh(12));
        assert_eq!(o.hit_ratio(), 0.0);
        o.probed(15, true, o.known_fresh(15));
        assert_eq!(o.hit_ratio(), 0.5);
    }

    #[test]
    fn kept_warm_the_next_proof_is_a_tick_after_the_last() {
        let mut o = Observed::default();
        let t0 = Instant::now();
        assert_eq!(o.next_proof(true, t0), (CATCH_UP, None), "nothing measured: the longest a catch-up takes");
        o.proved(1000 * MS, t0, 100 * MS);
        o.proved(1000 * MS, t0 + 20 * MS, 100 * MS);
        assert_eq!(o.next_proof(true, t0 + 500 * MS), (1000 * MS, None), "one tick seen: a catch-up's delay");
        o.proved(1200 * MS, t0 + 1100 * MS, 100 * MS);
        assert_eq!(o.next_proof(true, t0 + 1500 * MS), (1080 * MS, Some(400 * MS)), "a tick after the last proof");
        assert_eq!(o.next_proof(false, t0 + 1500 * MS).1, None, "not kept warm: a catch-up of its own");
        assert_eq!(o.next_proof(true, t0 + 10_000 * MS).1, None, "proofs stopped coming: a catch-up of its own");
    }
}

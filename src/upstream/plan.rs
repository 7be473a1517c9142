//! The choice of road for a consistent read, by expected cost: pure
//! arithmetic over what kache measured, no I/O and no clock of its own.
//!
//! Answered upstream, a read costs one consistent round trip plus the
//! transfer of its answer at upstream's measured throughput (a streaming
//! list [`STREAM_COST`] times a list's). From memory it costs the probe's
//! round trip (the same) plus the expected wait for the store to reach the
//! probe's revision plus kache's transfer. The wait is expected from what
//! the resource showed: how often a probe found the store already there
//! (until a probe has shown it, always — so the first read tries memory and
//! measures it, at the cost of one probe if wrong), else the sooner of its
//! next event (at its recent event rate) and a catch-up's proof (its
//! measured delay, less the age of one under way, which the read joins).
//! Memory is chosen when it is expected no later than upstream.
//!
//! A read that chose memory and whose store is not yet at its probe's
//! revision also goes upstream — a hedge — once its expected wait is over
//! (and a quarter more), if upstream would then still end its answer
//! before memory at the latest; never before, so a read the store proves in
//! time costs the apiserver nothing ([`Plan::hedge_at`]). Memory gives up
//! after [`Plan::budget`].
//!
//! Invariant: the arithmetic never makes a case for memory out of a figure
//! not measured — upstream's unmeasured transfer counts nothing (when in
//! doubt, pass through), the proof its longest ([`CATCH_UP`]).

use std::time::{Duration, Instant};

/// A catch-up watch's timeout: the apiserver sends its bookmark 2 s
/// before, about 1 s in. Also a proof's expected delay until one was
/// measured: the longest it takes.
pub const CATCH_UP: Duration = Duration::from_secs(3);

/// What a streaming list costs the apiserver, in lists of the same objects:
/// it encodes and frames each object as its own watch event. Measured on
/// kube-apiserver 1.36.2 with 50,000 pods (JSON): 7.2 s for the streaming
/// list against 3.4 s for the list.
pub const STREAM_COST: f64 = 2.0;

/// Beyond a read's expected wait, how late its proof may be before the
/// read also goes upstream: scheduling, not the apiserver (a few ms).
pub const HEDGE_SLACK: Duration = Duration::from_millis(5);

/// A consistent read, as its cost is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// The bytes of the objects it would send (their JSON, as upstream
    /// stores them): what upstream must read and encode to answer it.
    pub bytes: u64,
    /// Reads at its revision are likely to follow (a list's continue
    /// pages, an informer's watch), which a proof under way serves.
    pub follows: bool,
    /// A streaming list (`sendInitialEvents`): the apiserver sends each
    /// object as an event of its own, which costs it [`STREAM_COST`] times a list's.
    pub stream: bool,
}

/// What the plan is made from: the figures kache measured for this read's
/// resource and bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// The apiserver's consistent-read round trip (`None`: not measured yet).
    pub round_trip: Option<Duration>,
    /// A catch-up's expected delay to its proof.
    pub proof_delay: Duration,
    /// How long the catch-up under way has been running, if one is.
    pub catching_up_for: Option<Duration>,
    /// The resource's recent events a second.
    pub events_per_second: f64,
    /// The share of probes that found the store already at upstream's revision.
    pub hit_ratio: f64,
    /// How long upstream takes to send the read's bytes after its head (nothing, unmeasured).
    pub upstream_transfer: Duration,
    /// How long kache takes to send them from memory (nothing, unmeasured).
    pub memory_transfer: Duration,
}

/// The decision for one consistent read and its inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Expected time from memory, beyond the one round trip both roads pay:
    /// the wait for the store to reach the probe's revision plus kache's transfer.
    pub memory: Duration,
    /// Of `memory`, the expected wait for the store to reach the probe's revision.
    pub wait: Duration,
    /// Expected time upstream, beyond that round trip: its transfer.
    pub upstream: Duration,
    /// The round trip both pay (the probe's, as measured; nothing until measured).
    pub round_trip: Duration,
}

impl Plan {
    /// The plan for `read` from what was `measured`.
    pub fn of(read: Read, measured: &Measured) -> Plan {
        let round_trip = measured.round_trip.unwrap_or_default();
        let full = measured.proof_delay;
        // A catch-up under way is joined: only what is left of its delay
        // counts — if that is more than the probe's round trip. Its bookmark
        // proves the read's revision only if sent after the probe was
        // answered; one due sooner leaves the read to the next catch-up.
        let proof = match measured.catching_up_for.map(|age| full.saturating_sub(age)) {
            None => full,
            Some(left) if left > round_trip => left,
            Some(left) => left + full,
        };
        let next_event =
            if measured.events_per_second > 0.0 { Duration::from_secs_f64(1.0 / measured.events_per_second) } else { Duration::MAX };
        let wait = proof.min(next_event).mul_f64(1.0 - measured.hit_ratio.clamp(0.0, 1.0));
        let upstream = measured.upstream_transfer.mul_f64(if read.stream { STREAM_COST } else { 1.0 });
        Plan { memory: wait + measured.memory_transfer, wait, upstream, round_trip }
    }

    /// Memory answers no later than upstream is expected to.
    pub fn from_memory(&self) -> bool {
        self.memory <= self.upstream
    }

    /// The chosen road's expected time to the answer's end, round trip included.
    pub fn expected(&self) -> Duration {
        self.round_trip + if self.from_memory() { self.memory } else { self.upstream }
    }

    /// How long a read that chose memory waits after its probe before it gives up.
    pub fn budget(&self) -> Duration {
        2 * self.memory.max(self.upstream)
    }

    /// When a read whose store was not at its probe's revision at `now`
    /// also goes upstream. Once its expected wait is over, with a quarter
    /// more (the apiserver's bookmark ticks, which time a quiet resource's
    /// proof, come every 1 to 1.25 s) and [`HEDGE_SLACK`] — if upstream
    /// would then answer it sooner than memory at the latest: a catch-up
    /// proves within [`CATCH_UP`] or not at all, so memory's latest is that
    /// from now plus kache's transfer. A large list, which upstream takes
    /// seconds to send, is not sent upstream for a proof that is only
    /// late; only for one that failed.
    pub fn hedge_at(&self, now: Instant) -> Instant {
        let last_chance = now + CATCH_UP;
        let memory_at_latest = last_chance + self.memory.saturating_sub(self.wait);
        let upstream_done = now + self.round_trip + self.upstream;
        let late = now + self.wait.mul_f64(1.25) + HEDGE_SLACK;
        if upstream_done < memory_at_latest { late } else { late.max(last_chance + HEDGE_SLACK) }
    }

    /// How long after `now` (its probe's answer) memory keeps trying: its
    /// budget, and at least as long as a catch-up started by its hedge may take.
    pub fn gives_up_at(&self, now: Instant) -> Instant {
        (now + self.budget()).max(self.hedge_at(now) + CATCH_UP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A resource measured: round trip 1 ms, proofs 1 s, no catch-up under
    /// way, quiet, never fresh when probed, transfers free.
    fn measured() -> Measured {
        Measured {
            round_trip: Some(MS),
            proof_delay: Duration::from_secs(1),
            catching_up_for: None,
            events_per_second: 0.0,
            hit_ratio: 0.0,
            upstream_transfer: Duration::ZERO,
            memory_transfer: Duration::ZERO,
        }
    }

    const LIST: Read = Read { bytes: 230_000_000, follows: true, stream: false };

    #[test]
    fn the_road_expected_sooner_is_chosen() {
        let secs = Duration::from_secs_f64;
        // (what differs from `measured()`, the read, expected wait, memory, upstream, chosen)
        let cases: Vec<(&str, Measured, Read, Duration, Duration, Duration, bool)> = vec![
            ("nothing measured upstream: no case for memory", measured(), LIST, secs(1.0), secs(1.0), Duration::ZERO, false),
            (
                "a whole list upstream outweighs a proof",
                Measured { upstream_transfer: secs(4.0), memory_transfer: secs(0.2), ..measured() },
                LIST,
                secs(1.0),
                secs(1.2),
                secs(4.0),
                true,
            ),
            (
                "a GET: a round trip of transfer upstream, a proof's wait in memory",
                Measured { upstream_transfer: MS, ..measured() },
                Read { bytes: 4_600, follows: false, stream: false },
                secs(1.0),
                secs(1.0),
                MS,
                false,
            ),
            (
                "always fresh when probed: no wait",
                Measured { hit_ratio: 1.0, upstream_transfer: MS, ..measured() },
                LIST,
                Duration::ZERO,
                Duration::ZERO,
                MS,
                true,
            ),
            (
                "half the probes fresh: half the wait",
                Measured { hit_ratio: 0.5, upstream_transfer: secs(1.0), ..measured() },
                LIST,
                secs(0.5),
                secs(0.5),
                secs(1.0),
                true,
            ),
            (
                "a busy resource's next event comes before a proof",
                Measured { events_per_second: 100.0, upstream_transfer: secs(0.05), ..measured() },
                LIST,
                secs(0.01),
                secs(0.01),
                secs(0.05),
                true,
            ),
            (
                "a catch-up under way is joined for what is left of it",
                Measured { catching_up_for: Some(secs(0.75)), upstream_transfer: secs(0.5), ..measured() },
                LIST,
                secs(0.25),
                secs(0.25),
                secs(0.5),
                true,
            ),
            (
                "one due before the probe's answer leaves the read to the next",
                Measured { catching_up_for: Some(secs(0.9995)), upstream_transfer: secs(0.5), ..measured() },
                LIST,
                secs(1.0005),
                secs(1.0005),
                secs(0.5),
                false,
            ),
            (
                "a streaming list costs upstream twice a list",
                Measured { upstream_transfer: secs(0.6), ..measured() },
                Read { stream: true, ..LIST },
                secs(1.0),
                secs(1.0),
                secs(1.2),
                true,
            ),
        ];
        for (why, m, read, wait, memory, upstream, chosen) in cases {
            let plan = Plan::of(read, &m);
            assert_eq!((plan.wait, plan.memory, plan.upstream), (wait, memory, upstream), "{why}");
            assert_eq!(plan.from_memory(), chosen, "{why}");
            assert_eq!(plan.round_trip, MS, "{why}");
            let road = if chosen { memory } else { upstream };
            assert_eq!(plan.expected(), MS + road, "{why}");
        }
    }

    #[test]
    fn an_unmeasured_round_trip_counts_nothing() {
        let plan = Plan::of(LIST, &Measured { round_trip: None, ..measured() });
        assert_eq!(plan.round_trip, Duration::ZERO);
    }

    #[test]
    fn a_late_proof_is_hedged_only_when_upstream_would_still_end_sooner() {
        let now = Instant::now();
        let secs = Duration::from_secs_f64;
        // (plan, hedge after now)
        let cases = [
            // A GET: upstream ends long before memory's latest: hedged once the wait is over by a quarter.
            (Plan { memory: secs(0.2), wait: secs(0.2), upstream: MS, round_trip: MS }, secs(0.25) + HEDGE_SLACK),
            // No wait expected: hedged after the slack.
            (Plan { memory: MS, wait: Duration::ZERO, upstream: MS, round_trip: MS }, HEDGE_SLACK),
            // A large list upstream ends after memory's latest: hedged only once a catch-up failed.
            (Plan { memory: secs(1.2), wait: secs(1.0), upstream: secs(4.0), round_trip: MS }, CATCH_UP + HEDGE_SLACK),
        ];
        for (plan, after) in cases {
            assert_eq!(plan.hedge_at(now), now + after, "{plan:?}");
            assert!(plan.gives_up_at(now) >= plan.hedge_at(now) + CATCH_UP, "memory keeps racing past its hedge");
            assert!(plan.gives_up_at(now) >= now + plan.budget());
        }
        let plan = Plan { memory: secs(2.0), wait: secs(1.0), upstream: secs(3.0), round_trip: MS };
        assert_eq!(plan.budget(), secs(6.0), "twice the longer road");
    }
}

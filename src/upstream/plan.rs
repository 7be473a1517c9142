//! The choice of source (memory or upstream) for a consistent read, by expected cost: pure
//! arithmetic over what kache measured, no I/O and no clock of its own.
//!
//! Answered upstream, a read costs one consistent round trip plus what
//! such reads took upstream beyond it: its work before the head (gathering
//! the objects, converting a Table) and the transfer (`super::costs`, by
//! class; a streaming list is its own class, or `costs::STREAM_COST` lists
//! until one was measured; a list at least what its resource's small lists
//! took, `costs::SmallLists`). From memory it costs the probe's round trip (the
//! same) plus kache's making; and when the probe finds the store behind
//! upstream's revision (a miss), the sooner of the proof's wait and
//! upstream asked at once — one more round trip and upstream's cost — for
//! a read that chose memory goes upstream as soon as the proof is expected
//! later than upstream ([`Plan::hedge_at`]). How often a probe misses is
//! what the resource showed while its store held the last probe's
//! revision, and always while it does not (until a probe has shown it, never — so the
//! first read tries memory and measures it, at the cost of one probe if
//! wrong); the proof's wait is the sooner of the resource's next event (at
//! its recent event rate) and a catch-up's proof (its measured delay, less
//! the age of one under way, which the read joins; kept warm, a tick of
//! upstream's bookmark timer after the last proof). Memory is chosen when
//! it is expected no later than upstream.
//!
//! A read that chose memory and missed also goes upstream — a hedge — at
//! once when upstream is expected sooner than the proof, else once the
//! proof is late (its expected wait and a quarter more), if upstream would
//! then still end before memory at the latest; so a read the store proves
//! in time costs the apiserver nothing. Memory gives up after
//! [`Plan::budget`]. What the source chosen then took is held against what
//! the other was expected to take ([`Plan::wrong`]).
//!
//! What "sooner" weighs is the [`Policy`]'s. By default ([`Policy::Offload`])
//! a large read — one that costs the apiserver [`LARGE`] bytes or more to
//! gather and encode — goes upstream only when memory is expected
//! [`MUCH_SLOWER`] times slower than upstream, and is hedged only once its
//! proof failed: kache exists to take such reads off the apiserver, and a
//! busy machine, which makes kache's own estimates longer, must not shift
//! them onto it. A small read (a GET, a page) goes where it is sooner.
//! [`Policy::Sooner`] weighs every read so; [`Policy::Memory`] has every
//! consistent read wait for its proof: the apiserver then answers only the
//! reads whose proof failed, at the price of a read that upstream would
//! have answered sooner waiting for it.
//!
//! Invariant: the arithmetic never makes a case for memory out of a figure
//! not measured — upstream's unmeasured cost counts nothing (when in
//! doubt, pass through), the proof its longest ([`CATCH_UP`]) — but under
//! [`Policy::Memory`], which asks for memory whatever the figures.

use std::time::{Duration, Instant};

/// A catch-up watch's timeout: the apiserver sends its bookmark 2 s
/// before, about 1 s in. Also a proof's expected delay until one was
/// measured: the longest it takes.
pub(crate) const CATCH_UP: Duration = Duration::from_secs(3);

/// Beyond a read's expected wait, how late its proof may be before the
/// read also goes upstream: scheduling, not the apiserver (a few ms).
pub(crate) const HEDGE_SLACK: Duration = Duration::from_millis(5);

/// From how many bytes a read is large: what kube-apiserver takes about
/// 0.15 s of CPU to gather and encode (50,000 pods, 242 MB of JSON, took it
/// 4.45 s: about 18 ms a MB).
pub(crate) const LARGE: u64 = 8 << 20;

/// How much slower than upstream memory may be expected to be and still
/// answer a large read under [`Policy::Offload`].
pub(crate) const MUCH_SLOWER: f64 = 4.0;

/// How consistent reads choose their source (`kache serve --consistent-reads`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Policy {
    /// Large reads from memory unless it is expected [`MUCH_SLOWER`] than
    /// upstream; small ones wherever they are expected to end sooner.
    #[default]
    Offload,
    /// Wherever it is expected to end sooner, by what kache measured.
    Sooner,
    /// From memory once proven: upstream only when the proof fails (its
    /// catch-up ended without one), never because upstream looked sooner.
    Memory,
}

/// A consistent read, as its cost is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// The bytes of the objects it would send (their JSON, as upstream
    /// stores them): what upstream must read and encode to answer it.
    pub bytes: u64,
    /// A read of a collection (a list or a watch), not of one object:
    /// upstream reads the collection for it, whose small lists cost what
    /// their bytes do not show (`costs::SmallLists`), and reads at its
    /// revision are likely to follow (continue pages, an informer's
    /// watch), which a proof under way serves.
    pub collection: bool,
    /// A streaming list (`sendInitialEvents`): the apiserver sends each
    /// object as an event of its own, which costs it more than a list.
    pub stream: bool,
}

/// What the plan is made from: the figures kache measured for this read's
/// resource, class and bytes.
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
    /// What upstream takes for the read beyond a round trip (nothing, unmeasured).
    pub upstream: Duration,
    /// What kache takes to make it from memory (nothing, unmeasured).
    pub making: Duration,
}

/// The decision for one consistent read and its inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Expected time from memory, beyond the one round trip both sources
    /// pay: kache's making, and for a probe that misses, the sooner of the
    /// proof and upstream asked at once, weighed by how often probes miss.
    pub memory: Duration,
    /// Of `memory`, what is not kache's making: the expected wait.
    pub wait: Duration,
    /// After a probe that missed: the expected wait for the proof.
    pub miss_wait: Duration,
    /// Expected time upstream, beyond that round trip.
    pub upstream: Duration,
    /// The round trip both pay (the probe's, as measured; nothing until measured).
    pub round_trip: Duration,
    /// How many times slower than upstream memory may be expected to be
    /// and still answer: 1 where the sooner source wins, more where the
    /// policy spares the apiserver (then hedged only once the proof failed).
    pub patience: f64,
}

impl Plan {
    /// The plan for `read` from what was `measured`, under `policy`.
    pub fn of(read: Read, measured: &Measured, policy: Policy) -> Plan {
        let patience = match policy {
            Policy::Memory => f64::INFINITY,
            Policy::Offload if read.bytes >= LARGE => MUCH_SLOWER,
            Policy::Offload | Policy::Sooner => 1.0,
        };
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
        let miss_wait = proof.min(next_event);
        let upstream = measured.upstream;
        // After a miss: the proof, or upstream asked at once (one more round trip), whichever is sooner.
        let miss = miss_wait.min(round_trip + upstream);
        let wait = miss.mul_f64(1.0 - measured.hit_ratio.clamp(0.0, 1.0));
        Plan { memory: wait + measured.making, wait, miss_wait, upstream, round_trip, patience }
    }

    /// Memory answers within the policy's patience of upstream's expected time.
    pub fn from_memory(&self) -> bool {
        self.patience == f64::INFINITY || self.memory.as_secs_f64() <= self.upstream.as_secs_f64() * self.patience
    }

    /// The chosen source's expected time to the answer's end, round trip included.
    pub fn expected(&self) -> Duration {
        self.round_trip + if self.from_memory() { self.memory } else { self.upstream }
    }

    /// Whether a read that took `actual` (round trip included) on the
    /// chosen source would have been sooner on the other, as expected: the
    /// plan guessed wrong.
    pub fn wrong(&self, actual: Duration) -> bool {
        actual > self.round_trip + if self.from_memory() { self.upstream } else { self.memory }
    }

    /// How long a read that chose memory waits after its probe before it gives up.
    pub fn budget(&self) -> Duration {
        2 * self.memory.max(self.upstream)
    }

    /// When a read whose store was not at its probe's revision at `now`
    /// also goes upstream. At once when upstream, asked now, is expected to
    /// answer before the proof. Otherwise once the proof's expected wait is
    /// over, with a quarter more (the apiserver's bookmark ticks, which
    /// time a quiet resource's proof, come every 1 to 1.25 s) and
    /// [`HEDGE_SLACK`] — if upstream would then answer it sooner than
    /// memory at the latest: a catch-up proves within [`CATCH_UP`] or not
    /// at all, so memory's latest is that from now plus kache's making. A
    /// large list, which upstream takes seconds to send, is not sent
    /// upstream for a proof that is only late; only for one that failed.
    /// A read the policy spares the apiserver (patience above 1), once a
    /// catch-up (or the budget) is over: only a proof that failed sends it upstream.
    pub(crate) fn hedge_at(&self, now: Instant) -> Instant {
        if self.patience > 1.0 {
            return now + CATCH_UP.max(self.budget());
        }
        let making = self.memory.saturating_sub(self.wait);
        if self.round_trip + self.upstream < self.miss_wait {
            return now;
        }
        let last_chance = now + CATCH_UP;
        let memory_at_latest = last_chance + making;
        let upstream_done = now + self.round_trip + self.upstream;
        let late = now + self.miss_wait.mul_f64(1.25) + HEDGE_SLACK;
        if upstream_done < memory_at_latest { late } else { late.max(last_chance + HEDGE_SLACK) }
    }

    /// How long after `now` (its probe's answer) memory keeps trying: its
    /// budget, and at least as long as a catch-up started by its hedge may take.
    pub(crate) fn gives_up_at(&self, now: Instant) -> Instant {
        (now + self.budget()).max(self.hedge_at(now) + CATCH_UP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    /// A GET of one pod.
    fn small() -> Read {
        Read { bytes: 4_600, collection: false, stream: false }
    }

    /// A resource measured: round trip 1 ms, proofs 1 s, no catch-up under
    /// way, quiet, never fresh when probed, nothing else measured.
    fn measured() -> Measured {
        Measured {
            round_trip: Some(MS),
            proof_delay: secs(1.0),
            catching_up_for: None,
            events_per_second: 0.0,
            hit_ratio: 0.0,
            upstream: Duration::ZERO,
            making: Duration::ZERO,
        }
    }

    #[test]
    fn the_road_expected_sooner_is_chosen() {
        // (why, what differs from `measured()`, expected wait, memory, chosen)
        let cases: Vec<(&str, Measured, Duration, Duration, bool)> = vec![
            ("nothing measured upstream: no case for memory", measured(), MS, MS, false),
            (
                "a whole list upstream outweighs a proof",
                Measured { upstream: secs(4.0), making: secs(0.2), ..measured() },
                secs(1.0),
                secs(1.2),
                true,
            ),
            (
                "a GET upstream takes a round trip: a miss is upstream's at once, after the probe's",
                Measured { upstream: MS, ..measured() },
                2 * MS,
                2 * MS,
                false,
            ),
            (
                "always fresh when probed: no wait",
                Measured { hit_ratio: 1.0, upstream: MS, ..measured() },
                Duration::ZERO,
                Duration::ZERO,
                true,
            ),
            (
                "a Table page, half the probes fresh: a miss costs upstream's time, not a proof's",
                Measured { hit_ratio: 0.5, upstream: 25 * MS, making: 3 * MS, ..measured() },
                13 * MS,
                16 * MS,
                true,
            ),
            (
                "the same page, every probe missing (the revision moves elsewhere)",
                Measured { upstream: 25 * MS, making: 3 * MS, ..measured() },
                26 * MS,
                29 * MS,
                false,
            ),
            (
                "a busy resource's next event comes before a proof",
                Measured { events_per_second: 100.0, upstream: 50 * MS, ..measured() },
                10 * MS,
                10 * MS,
                true,
            ),
            (
                "a catch-up under way is joined for what is left of it",
                Measured { catching_up_for: Some(secs(0.75)), upstream: secs(0.5), ..measured() },
                secs(0.25),
                secs(0.25),
                true,
            ),
            (
                "one due before the probe's answer leaves the read to the next",
                Measured { catching_up_for: Some(secs(0.9995)), upstream: secs(0.5), ..measured() },
                secs(0.501),
                secs(0.501),
                false,
            ),
        ];
        for (why, m, wait, memory, chosen) in cases {
            let plan = Plan::of(small(), &m, Policy::Sooner);
            assert_eq!((plan.wait, plan.memory, plan.upstream), (wait, memory, m.upstream), "{why}");
            assert_eq!(plan.from_memory(), chosen, "{why}");
            assert_eq!(plan.round_trip, MS, "{why}");
            let source = if chosen { memory } else { m.upstream };
            assert_eq!(plan.expected(), MS + source, "{why}");
        }
    }

    #[test]
    fn an_unmeasured_round_trip_counts_nothing() {
        let plan = Plan::of(small(), &Measured { round_trip: None, ..measured() }, Policy::Sooner);
        assert_eq!(plan.round_trip, Duration::ZERO);
    }

    #[test]
    fn a_plan_is_wrong_when_its_road_took_longer_than_the_other_was_expected_to() {
        let memory = Plan::of(small(), &Measured { hit_ratio: 0.5, upstream: 25 * MS, making: 3 * MS, ..measured() }, Policy::Sooner);
        assert!(memory.from_memory());
        assert!(!memory.wrong(20 * MS) && !memory.wrong(26 * MS), "within upstream's 1 + 25 ms");
        assert!(memory.wrong(30 * MS), "upstream was expected sooner");
        let upstream = Plan::of(small(), &Measured { upstream: 25 * MS, making: 3 * MS, ..measured() }, Policy::Sooner);
        assert!(!upstream.from_memory());
        assert!(!upstream.wrong(26 * MS) && upstream.wrong(31 * MS), "memory was expected in 1 + 29 ms");
    }

    #[test]
    fn a_miss_goes_upstream_at_once_when_upstream_beats_the_proof_else_once_the_proof_is_late() {
        let now = Instant::now();
        // (what differs from `measured()`, hedge after now)
        let cases = [
            // A GET, a Table page: upstream answers long before a proof: at once.
            (Measured { upstream: MS, ..measured() }, Duration::ZERO),
            (Measured { upstream: 25 * MS, making: 3 * MS, ..measured() }, Duration::ZERO),
            // A busy resource's next event is sooner than upstream: once it is late.
            (Measured { events_per_second: 100.0, upstream: 50 * MS, ..measured() }, (10 * MS).mul_f64(1.25) + HEDGE_SLACK),
            // Upstream ends before memory at the latest: once the proof is late.
            (Measured { upstream: secs(2.5), making: secs(0.2), ..measured() }, secs(1.25) + HEDGE_SLACK),
            // A large list upstream ends after memory at the latest: only once a catch-up failed.
            (Measured { upstream: secs(4.0), making: secs(0.2), ..measured() }, CATCH_UP + HEDGE_SLACK),
        ];
        for (m, after) in cases {
            let plan = Plan::of(small(), &m, Policy::Sooner);
            assert_eq!(plan.hedge_at(now), now + after, "{plan:?}");
            assert!(plan.gives_up_at(now) >= plan.hedge_at(now) + CATCH_UP, "memory keeps racing past its hedge");
            assert!(plan.gives_up_at(now) >= now + plan.budget());
        }
        let plan = Plan { memory: secs(2.0), wait: secs(1.0), miss_wait: secs(1.0), upstream: secs(3.0), round_trip: MS, patience: 1.0 };
        assert_eq!(plan.budget(), secs(6.0), "twice the longer source");
    }

    #[test]
    fn a_large_read_goes_upstream_only_when_memory_is_expected_much_slower() {
        // 20,000 pods: upstream expected 1 s, memory (a proof and kache's making) 1.5 s.
        let list = Read { bytes: 92 << 20, collection: true, stream: false };
        let m = Measured { upstream: secs(1.0), making: secs(0.5), ..measured() };
        assert!(!Plan::of(list, &m, Policy::Sooner).from_memory(), "sooner upstream");
        let plan = Plan::of(list, &m, Policy::Offload);
        assert!(plan.from_memory(), "memory: not four times slower");
        let now = Instant::now();
        assert!(plan.hedge_at(now) >= now + CATCH_UP, "hedged only once a catch-up is over");
        let slow = Measured { upstream: secs(1.0), making: secs(4.5), ..measured() };
        assert!(!Plan::of(list, &slow, Policy::Offload).from_memory(), "memory expected more than four times slower");
        // A small read under the default goes where it is sooner.
        let get = Measured { upstream: MS, ..measured() };
        assert_eq!(Plan::of(small(), &get, Policy::Offload), Plan::of(small(), &get, Policy::Sooner));
        assert!(!Plan::of(small(), &get, Policy::Offload).from_memory());
    }

    #[test]
    fn under_the_memory_policy_every_read_waits_for_its_proof_until_a_catch_up_failed() {
        let now = Instant::now();
        for m in [measured(), Measured { upstream: MS, ..measured() }, Measured { upstream: 25 * MS, making: 3 * MS, ..measured() }] {
            let plan = Plan::of(small(), &m, Policy::Memory);
            assert!(plan.from_memory(), "{plan:?}");
            assert!(plan.hedge_at(now) >= now + CATCH_UP, "upstream only once a catch-up is over: {plan:?}");
            assert!(plan.gives_up_at(now) >= plan.hedge_at(now) + CATCH_UP);
        }
    }
}

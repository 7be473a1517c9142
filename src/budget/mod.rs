//! The memory budget: a bound on what the cache holds, for the whole cache
//! (`--memory-budget`) and for each resource (`--resource-memory-budget`),
//! and what kache gives up, in a fixed order, when a resource is over it.
//!
//! **What is counted.** A resource's usage is its store's own account,
//! [`MemoryStats`](crate::store::MemoryStats): `object_bytes +
//! overhead_bytes`, exported as `kache_store_object_bytes` and
//! `kache_store_overhead_bytes`. That is every distinct object revision in
//! the head snapshot and in the event log, once, as upstream sent it, with
//! its parsed parts and its protobuf message once encoded
//! (`CachedResource::protobuf_of` keeps it with the object); map and index
//! nodes; log entries; and an estimate of the map nodes that checkpoints and
//! pinned snapshots (continue tokens) hold apart from the head. The cache's
//! usage is the sum over its resources.
//!
//! **Lists in flight** ([`inflight`]): what a list from memory holds while it
//! is written (a pointer per object, never a copy of the objects; a 64 KiB
//! frame and hyper's queue; gzipped, the deflate state) is reserved from
//! what the store leaves of the whole cache's budget, set at each check; a
//! list that does not fit waits for lists in flight to end, then gets 429 as from an overloaded
//! apiserver.
//!
//! **Not counted**: object revisions that only a pin, a response being
//! written, a watch's replay or a watcher's queued frame still holds (pins
//! are bounded by count and TTL, queues by `--watch-queue`); answers passed
//! through, GETs and watch streams in flight; the process's own memory
//! (code, runtime, connections) and the allocator's slack. So the process's
//! RSS is a baseline (the process's own, and the allocator's slack around
//! what the store holds) plus at most the budget.
//!
//! **Levels** ([`Pressure`]), per resource. A check raises a resource's
//! level one step while the resource is over a budget (its usage above its
//! own, or the cache's above the cache's) and the step before has done what
//! it can; it lowers it one step while under 90% of both (hysteresis):
//!
//! 1. [`Pressure::ShortLog`]: the event log is bounded below `--max-events`
//!    ([`StoreReader::set_event_limit`]), at the length that would put usage
//!    at 95% of the budget (the middle of the hysteresis band), estimated
//!    from the average cost of an object revision, re-estimated every check,
//!    never below [`MIN_EVENTS`]. Exact and continue reads reach less far
//!    back (older ones pass through) and a watch from before the log gets 410
//!    Expired, exactly as when the log rolls over by count or age. Done once
//!    the log is at that floor.
//! 2. [`Pressure::NoPins`]: no new continue-token pins: a list page that
//!    would pin its snapshot is passed through (an existing pin still
//!    serves its pages until its TTL).
//! 3. [`Pressure::PassThrough`]: lists and GETs of the resource are passed
//!    through, reason `memory budget`. Watches stay from memory: a watcher
//!    costs a bounded queue of shared frames, and handing informers' watches
//!    to the apiserver would give it the fan-out kache is there to absorb.
//!
//! The store keeps every object at every level (a watch cache must), so a
//! budget below a resource's objects holds it at level 3: kache then follows
//! the resource and serves its watches, and the apiserver answers its reads.
//!
//! Under the whole-cache budget the resources move together: each
//! resource's log gives up a share of the excess in proportion to its cost,
//! and the resources at the lowest level take the next step together, once
//! every one of them has done what its level can.
//!
//! Invariants: a level only changes what is answered from memory, never how
//! (a read passed through is the apiserver's answer; a shortened log refuses
//! what fell out, it never skips it); a resource's level is raised at most
//! one step per check, and every change is logged once with the figures
//! that caused it.
//!
//! **Cost.** A check reads every store's `MemoryStats`, which walks its
//! head and log once (a hash set of the distinct revisions): 11–27 ms for
//! 100,000 pods (release build; measured). Checks run off the async threads,
//! every second, or 100 times the last check's time when that is longer, so
//! the budget costs at most 1% of a core (0.8% measured at 100,000 pods).

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::cache::{CachedResource, Pressure};
use crate::store::StoreReader;

pub(crate) mod inflight;

use inflight::ListMemory;

/// The shortest the budget makes an event log: enough for the dispatcher to
/// read each publish before it is trimmed (a publish carries the events of
/// one upstream frame), so watchers are not closed for lag — 1,000 events
/// are a second of a resource written 1,000 times a second.
pub(crate) const MIN_EVENTS: usize = 1_000;

/// How often the budget is checked, at most.
const INTERVAL: Duration = Duration::from_secs(1);

/// A check may take this share of the time between checks (1%).
const SHARE: u32 = 100;

/// The budgets, in bytes (0: none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BudgetConfig {
    /// The whole cache's.
    pub total: u64,
    /// Each resource's.
    pub resource: u64,
}

impl BudgetConfig {
    /// Whether any budget is set.
    pub(crate) fn is_set(&self) -> bool {
        self.total > 0 || self.resource > 0
    }
}

/// A store's figures at a check.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    /// Bytes counted (object data and overhead).
    usage: u64,
    /// Objects at the head.
    objects: usize,
    /// Events in the log.
    events: usize,
    /// The configured bound on the log.
    max_events: usize,
}

impl Reading {
    fn of(store: &StoreReader) -> Reading {
        let m = store.memory();
        Reading { usage: (m.object_bytes + m.overhead_bytes) as u64, objects: m.objects, events: m.events, max_events: store.max_events() }
    }

    /// The log's shortest bound under pressure.
    fn floor(&self) -> usize {
        MIN_EVENTS.min(self.max_events)
    }

    /// Bytes per object revision held, on average (at least 1).
    fn per_revision(&self) -> f64 {
        (self.usage as f64 / (self.objects + self.events).max(1) as f64).max(1.0)
    }

    /// The log's length with `bytes` more (fewer, when negative) of revisions.
    fn events_with(&self, bytes: f64) -> f64 {
        self.events as f64 + bytes / self.per_revision()
    }

    /// What the log costs, estimated.
    fn log_bytes(&self) -> f64 {
        self.events as f64 * self.per_revision()
    }
}

/// Whether `usage` is over `budget` (0: none).
fn over(usage: u64, budget: u64) -> bool {
    budget > 0 && usage > budget
}

/// Whether `usage` is under 90% of `budget` (0: none, always under).
fn under(usage: u64, budget: u64) -> bool {
    budget == 0 || u128::from(usage) * 10 < u128::from(budget) * 9
}

/// 95% of `budget` less `usage`: what the log may take (or must give, when negative).
fn room(usage: u64, budget: u64) -> f64 {
    budget as f64 * 0.95 - usage as f64
}

/// One resource's place in the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Control {
    level: Pressure,
    /// The log's bound set in the store.
    limit: usize,
}

impl Control {
    /// Whether the resource's level has done all it can: a short log at its floor.
    fn done(&self, r: &Reading) -> bool {
        match self.level {
            Pressure::Normal => false,
            Pressure::ShortLog => self.limit <= r.floor() && r.events <= r.floor(),
            Pressure::NoPins | Pressure::PassThrough => true,
        }
    }
}

/// The budget's decisions, check by check: no I/O, so its rules are tested alone.
#[derive(Debug)]
struct Controller {
    config: BudgetConfig,
    controls: Vec<Control>,
}

impl Controller {
    fn new(config: BudgetConfig, readings: &[Reading]) -> Controller {
        Controller { config, controls: readings.iter().map(|r| Control { level: Pressure::Normal, limit: r.max_events }).collect() }
    }

    /// One check: every resource's level and log bound, from `readings` (in the controls' order).
    fn check(&mut self, readings: &[Reading]) {
        let BudgetConfig { total: cache_budget, resource: budget } = self.config;
        let cache_usage: u64 = readings.iter().map(|r| r.usage).sum();
        let cache_over = over(cache_usage, cache_budget);
        let cache_under = under(cache_usage, cache_budget);
        let log_bytes: f64 = readings.iter().map(Reading::log_bytes).sum();
        let lowest = self.controls.iter().map(|c| c.level).min().unwrap_or_default();
        let lowest_done = self.controls.iter().zip(readings).filter(|(c, _)| c.level == lowest).all(|(c, r)| c.done(r));
        let n = readings.len().max(1) as f64;
        for (c, r) in self.controls.iter_mut().zip(readings) {
            let own_over = over(r.usage, budget);
            if own_over || cache_over {
                let next = c.level == Pressure::Normal || (own_over && c.done(r)) || (cache_over && c.level == lowest && lowest_done);
                if next {
                    c.level = c.level.up();
                }
            } else if under(r.usage, budget) && cache_under {
                c.level = c.level.down();
            }
            c.limit = if c.level == Pressure::Normal {
                r.max_events
            } else {
                let mut target = f64::INFINITY;
                if budget > 0 {
                    target = r.events_with(room(r.usage, budget));
                }
                if cache_budget > 0 {
                    let share = if log_bytes > 0.0 { r.log_bytes() / log_bytes } else { 1.0 / n };
                    target = target.min(r.events_with(room(cache_usage, cache_budget) * share));
                }
                // `as` saturates; NaN cannot arise (per_revision is at least 1).
                (target.max(r.floor() as f64) as usize).min(r.max_events)
            };
        }
    }
}

/// Starts the budget's checks for `api` when a budget is set; they end when
/// the server is gone. Each check gives lists being written what the
/// stores leave of the whole cache's budget (`lists`' limit).
pub fn start(resources: &[Arc<CachedResource>], config: BudgetConfig, lists: Arc<ListMemory>) {
    if config.is_set() {
        tokio::spawn(run(resources.iter().map(Arc::downgrade).collect(), config, lists));
    }
}

/// Checks the budget until the resources are dropped (kache stopped).
async fn run(resources: Vec<Weak<CachedResource>>, config: BudgetConfig, lists: Arc<ListMemory>) {
    let mut controller: Option<Controller> = None;
    let mut delay = INTERVAL;
    loop {
        tokio::time::sleep(delay).await;
        let Some(resources) = resources.iter().map(Weak::upgrade).collect::<Option<Vec<_>>>() else { return };
        // Reading the stores walks them: off the async threads.
        let measured = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let readings: Vec<Reading> = resources.iter().map(|r| Reading::of(r.store())).collect();
            (resources, readings, started.elapsed())
        })
        .await;
        let Ok((resources, readings, took)) = measured else { return };
        let controller = controller.get_or_insert_with(|| Controller::new(config, &readings));
        let before = controller.controls.clone();
        controller.check(&readings);
        let cache_usage: u64 = readings.iter().map(|r| r.usage).sum();
        if config.total > 0 {
            lists.set_limit(config.total.saturating_sub(cache_usage));
        }
        tracing::debug!(took = ?took, cache_usage, "memory budget checked");
        for (((res, r), was), now) in resources.iter().zip(&readings).zip(&before).zip(&controller.controls) {
            apply(res, r, *was, *now, (cache_usage, config));
        }
        delay = INTERVAL.max(took * SHARE);
    }
}

/// Sets `res`'s level and log bound as the check decided, logging a level change.
fn apply(res: &CachedResource, r: &Reading, was: Control, now: Control, (cache_usage, config): (u64, BudgetConfig)) {
    debug_assert!((now.level as u8).abs_diff(was.level as u8) <= 1, "a level moves at most one step a check");
    if now.limit != res.store().event_limit() {
        res.store().set_event_limit(now.limit);
    }
    if now.level == was.level {
        return;
    }
    res.set_pressure(now.level);
    let resource = res.info().qualified();
    let (from, to) = (was.level as u8, now.level as u8);
    let (usage, budget, events, limit) = (r.usage, config.resource, r.events, now.limit);
    let (cache_budget, effect) = (config.total, now.level.effect());
    if to > from {
        tracing::warn!(%resource, from, to, usage, budget, cache_usage, cache_budget, events, limit, "memory pressure rose: {effect}");
    } else {
        tracing::info!(%resource, from, to, usage, budget, cache_usage, cache_budget, events, limit, "memory pressure fell: {effect}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// A resource of `objects` objects and `events` logged events, each revision costing 1 KiB.
    fn reading(objects: usize, events: usize) -> Reading {
        Reading { usage: ((objects + events) * 1024) as u64, objects, events, max_events: 100_000 }
    }

    fn levels(c: &Controller) -> Vec<Pressure> {
        c.controls.iter().map(|c| c.level).collect()
    }

    #[test]
    fn under_budget_nothing_changes() {
        let rs = [reading(1000, 5000)];
        let mut c = Controller::new(BudgetConfig { total: 0, resource: 100 * MIB }, &rs);
        c.check(&rs);
        assert_eq!(c.controls, [Control { level: Pressure::Normal, limit: 100_000 }]);
    }

    #[test]
    fn over_budget_the_log_shrinks_to_95_percent_and_holds_in_the_band() {
        // 10 MiB budget: 2,000 objects (2 MiB) and 10,000 events (~9.8 MiB).
        let mut rs = [reading(2000, 10_000)];
        let mut c = Controller::new(BudgetConfig { total: 0, resource: 10 * MIB }, &rs);
        c.check(&rs);
        assert_eq!(c.controls[0].level, Pressure::ShortLog);
        // 95% of 10 MiB is 9,728 revisions, 2,000 of them the objects'.
        assert_eq!(c.controls[0].limit, 7728);
        // The writer trimmed: usage at 95%, between 90% and 100%, holds.
        rs[0] = reading(2000, 7728);
        c.check(&rs);
        assert_eq!(c.controls, [Control { level: Pressure::ShortLog, limit: 7728 }]);
        // Churn stops and the log ages out: under 90%, the bound is released.
        rs[0] = reading(2000, 100);
        c.check(&rs);
        assert_eq!(c.controls, [Control { level: Pressure::Normal, limit: 100_000 }]);
    }

    #[test]
    fn a_budget_below_the_objects_goes_through_every_level_in_order_and_back_one_at_a_time() {
        let mut rs = [reading(4000, 5000)];
        let mut c = Controller::new(BudgetConfig { total: 0, resource: MIB }, &rs);
        c.check(&rs);
        assert_eq!(c.controls, [Control { level: Pressure::ShortLog, limit: MIN_EVENTS }]);
        // The log is not at its floor yet: level 1 has not done what it can.
        c.check(&rs);
        assert_eq!(levels(&c), [Pressure::ShortLog]);
        rs[0] = reading(4000, MIN_EVENTS);
        c.check(&rs);
        assert_eq!(levels(&c), [Pressure::NoPins]);
        c.check(&rs);
        assert_eq!(levels(&c), [Pressure::PassThrough]);
        c.check(&rs);
        assert_eq!(levels(&c), [Pressure::PassThrough]);
        // Objects deleted: under 90%, one step per check.
        rs[0] = reading(100, 50);
        for expected in [Pressure::NoPins, Pressure::ShortLog, Pressure::Normal] {
            c.check(&rs);
            assert_eq!(levels(&c), [expected]);
        }
        assert_eq!(c.controls[0].limit, 100_000);
    }

    #[test]
    fn under_the_cache_budget_logs_give_in_proportion_and_levels_move_together() {
        // Pods: big log; configmaps: no log. 20 MiB for the cache.
        let mut rs = [reading(5000, 20_000), reading(3000, 0)];
        let mut c = Controller::new(BudgetConfig { total: 20 * MIB, resource: 0 }, &rs);
        c.check(&rs);
        assert_eq!(levels(&c), [Pressure::ShortLog, Pressure::ShortLog]);
        // The excess (28,000 KiB less 95% of 20 MiB = 8,544 KiB) comes from the pods' log alone.
        assert_eq!(c.controls[0].limit, 20_000 - 8544);
        assert_eq!(c.controls[1].limit, MIN_EVENTS);
        // Still over (the writer has not trimmed yet): configmaps are done, pods are not, so nobody goes further.
        rs = [reading(5000, 15_000), reading(3000, 0)];
        c.check(&rs);
        assert_eq!(levels(&c), [Pressure::ShortLog, Pressure::ShortLog]);
        assert_eq!(c.controls[0].limit, 15_000 - 3544);
        // More objects than the budget: both logs at their floor, then both levels rise together.
        rs = [reading(20_000, MIN_EVENTS), reading(3000, 0)];
        c.check(&rs);
        assert_eq!(c.controls[0].limit, MIN_EVENTS);
        c.check(&rs);
        assert_eq!(levels(&c), [Pressure::NoPins, Pressure::NoPins]);
        c.check(&rs);
        assert_eq!(levels(&c), [Pressure::PassThrough, Pressure::PassThrough]);
    }

    #[test]
    fn a_resource_over_its_own_budget_moves_alone() {
        let rs = [reading(4000, 0), reading(10, 0)];
        let mut c = Controller::new(BudgetConfig { total: 0, resource: MIB }, &rs);
        for _ in 0..3 {
            c.check(&rs);
        }
        assert_eq!(levels(&c), [Pressure::PassThrough, Pressure::Normal]);
    }

    #[test]
    fn levels_round_trip_through_their_byte() {
        for p in [Pressure::Normal, Pressure::ShortLog, Pressure::NoPins, Pressure::PassThrough] {
            assert_eq!(Pressure::from_u8(p as u8), p);
        }
        assert_eq!(Pressure::PassThrough.up(), Pressure::PassThrough);
        assert_eq!(Pressure::Normal.down(), Pressure::Normal);
    }
}

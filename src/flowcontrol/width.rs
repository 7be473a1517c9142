//! How many seats a request kache answers occupies, ported from the
//! apiserver's work estimator as 1.36 runs it (`request/width.go`,
//! `request/list_work_estimator.go` with `SizeBasedListCostEstimate` and
//! `WatchList` on, `request/config.go`'s defaults) and the per-level cap of
//! `apf_controller.go` (`MAX(1, MIN(0.15 × nominalCL, nominalCL / handSize))`):
//!
//! - a GET (and anything but a list or watch): 1 seat;
//! - a list, or a watch that starts with the state (`sendInitialEvents`,
//!   or a legacy watch: `resourceVersion` unset or `0`): one seat per
//!   100 kB the apiserver would hold at once — the objects it returns
//!   (`limit`, or one for a list naming one object) times their average
//!   size, at most 1 MB for a list served from a cache, as every list
//!   kache answers is — so 1 to 10 seats, then held between 1 and the
//!   level's cap (100 where a level has none);
//! - any other watch: 1 seat.
//!
//! kache knows the count and the average size exactly: its store's head
//! (the apiserver estimates both from etcd every minute).

use apimachinery::params::Query;

/// Seats per 100 kB held at once (`bytesPerSeat`).
const BYTES_PER_SEAT: u64 = 100_000;
/// The most a list from a cache holds at once (`cacheWithStreamingMaxMemoryUsage`).
const CACHE_MAX_MEMORY: u64 = 1_000_000;
/// The size assumed of objects of unknown size (`maxObjectSize`).
const MAX_OBJECT_SIZE: u64 = 1_500_000;
/// `MaximumListSeatsLimit` with `SizeBasedListCostEstimate`.
pub(crate) const MAX_LIST_SEATS: usize = 100;
/// `priorityLevelMaxSeatsPercent`.
const LEVEL_MAX_SEATS_SHARE: f64 = 0.15;

/// A resource's objects as kache holds them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub count: u64,
    pub bytes: u64,
}

/// What the estimate reads of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// `get`, `list`, `watch`, …
    pub verb: &'a str,
    /// It names one object (a GET, or `fieldSelector=metadata.name=…`).
    pub single: bool,
    /// Its query, decoded.
    pub query: &'a Query,
}

/// The seats a level with `nominal` seats and hands of `hand_size` lets
/// one request take (`SetMaxSeats`); 0 for a level that does not queue.
pub(crate) fn level_max_seats(nominal: usize, hand_size: Option<usize>) -> usize {
    let Some(hand) = hand_size.filter(|h| *h > 0) else { return 0 };
    let share = (nominal as f64 * LEVEL_MAX_SEATS_SHARE).ceil();
    share.min((nominal / hand) as f64).max(1.0) as usize
}

/// The seats `req` occupies, for a level whose cap is `level_max` (0: none).
pub fn seats(req: Request<'_>, stats: Stats, level_max: usize) -> usize {
    let max = match level_max {
        0 => MAX_LIST_SEATS,
        m => m.min(MAX_LIST_SEATS),
    };
    if !matches!(req.verb, "list" | "watch") {
        return 1;
    }
    let param = |k: &str| req.query.get(k);
    let limit = match param("limit").map(str::parse::<i64>) {
        None => 0,
        Some(Ok(l)) => l,
        // Destined to fail validation: the most (`Convert_url_Values_To_v1_ListOptions` failed).
        Some(Err(_)) => return max,
    };
    if req.verb == "watch" {
        let initial_events = param("sendInitialEvents").is_some_and(|v| matches!(v, "true" | "1" | "t" | "T" | "TRUE" | "True"));
        let legacy = matches!(param("resourceVersion").unwrap_or(""), "" | "0");
        if !initial_events && !legacy {
            return 1;
        }
    }
    let average = match (stats.count, stats.bytes.checked_div(stats.count)) {
        (0, _) => 0,
        (_, Some(0) | None) => MAX_OBJECT_SIZE,
        (_, Some(a)) => a,
    };
    let limited = match u64::try_from(limit) {
        Ok(l) if l > 0 && l < stats.count => l,
        _ => stats.count,
    };
    let objects = if req.single { 1 } else { limited };
    let memory = (objects * average).min(CACHE_MAX_MEMORY);
    (memory.div_ceil(BYTES_PER_SEAT) as usize).clamp(1, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(query: &Query) -> Request<'_> {
        Request { verb: "list", single: false, query }
    }

    // The cache cases of `TestListWorkEstimator` (list_work_estimator_test.go), size-based.
    #[test]
    fn a_list_costs_a_seat_per_100_kb_at_once_at_most_ten_from_a_cache() {
        let stats = |total: u64, count: u64| Stats { count, bytes: total / count * count };
        let cases = [
            (stats(100_000 - 1, 99), "", false, 1),
            (stats(100_000 - 1, 10), "", false, 1),
            (stats(1_000_000 - 1, 1000), "", false, 10),
            (stats(1_000_000 - 1, 1000), "limit=100", false, 1),
            (stats(1_000_000 - 1, 1000), "limit=100&labelSelector=a", false, 1),
            (stats(1_000_000 - 1, 99), "", false, 10),
            (stats(10_000_000 - 1, 1000), "", false, 10),
            (stats(10_000_000 - 1, 1000), "limit=100", false, 10),
            (stats(10_000_000 - 1, 99), "limit=10", false, 10),
            (stats(1_000_000_000 - 1, 1000), "", true, 10),
        ];
        for (stats, query, single, want) in cases {
            assert_eq!(seats(Request { verb: "list", single, query: &Query::parse(query) }, stats, 0), want, "{stats:?} {query}");
        }
        assert_eq!(seats(list(&Query::parse("")), Stats::default(), 0), 1, "an empty resource: the minimum");
        assert_eq!(seats(list(&Query::parse("limit=x")), Stats::default(), 7), 7, "an option that does not parse: the most");
    }

    // `TestWorkEstimator` (width_test.go): reads and watches.
    #[test]
    fn gets_and_watches_without_initial_state_cost_one_seat() {
        let big = Stats { count: 50_000, bytes: 230_000_000 };
        assert_eq!(seats(Request { verb: "get", single: true, query: &Query::parse("") }, big, 0), 1);
        assert_eq!(seats(Request { verb: "watch", single: false, query: &Query::parse("resourceVersion=123") }, big, 0), 1);
        assert_eq!(
            seats(Request { verb: "watch", single: false, query: &Query::parse("resourceVersion=0") }, big, 0),
            10,
            "legacy: the state first"
        );
        let watch_list = "resourceVersion=123&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
        assert_eq!(seats(Request { verb: "watch", single: false, query: &Query::parse(watch_list) }, big, 0), 10);
        assert_eq!(seats(list(&Query::parse("")), big, 3), 3, "held to the level's cap");
    }

    #[test]
    fn a_levels_cap_is_the_apiservers() {
        // The apiserver's 600 seats: workload-low (shares 100 of 245) gets 245 seats and a cap of 37.
        assert_eq!(level_max_seats(245, Some(6)), 37);
        assert_eq!(level_max_seats(25, Some(6)), 4);
        assert_eq!(level_max_seats(9, Some(6)), 1);
        assert_eq!(level_max_seats(0, Some(6)), 1);
        assert_eq!(level_max_seats(40, None), 0, "a level that does not queue has none");
    }
}

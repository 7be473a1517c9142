//! The `Retry-After` of a rejection, ported from
//! `k8s.io/apiserver/pkg/util/flowcontrol/dropped_requests_tracker.go`:
//! per priority level, 1 s to start with; doubled (at most to 32 s, and at
//! most once per current value's seconds) when the level dropped at least
//! 3 × that many requests in that many seconds before the current one,
//! lowered by one when it dropped fewer than that many — as TCP backs off.
//!
//! Invariant: the value only changes as the first drop of a new second is
//! recorded, from the whole seconds before it.

use std::collections::HashMap;

use parking_lot::Mutex;

/// `maxRetryAfter`.
const MAX_RETRY_AFTER: i64 = 32;

/// One level's history (`droppedRequestsStats`).
#[derive(Debug)]
struct Stats {
    /// `(second, drops)` of past seconds.
    history: Vec<(i64, i64)>,
    current_unix: i64,
    current_count: i64,
    retry_after: i64,
    retry_after_update_unix: i64,
}

impl Stats {
    fn new() -> Stats {
        Stats { history: Vec::new(), current_unix: 0, current_count: 0, retry_after: 1, retry_after_update_unix: 0 }
    }

    fn record(&mut self, unix: i64) {
        if self.current_unix == unix {
            self.current_count += 1;
            return;
        }
        self.update_history(self.current_unix, self.current_count);
        self.current_unix = unix;
        self.current_count = 1;
        self.update_retry_after(unix);
    }

    fn update_history(&mut self, unix: i64, count: i64) {
        self.history.push((unix, count));
        let max_history = (2 * self.retry_after).min(MAX_RETRY_AFTER);
        let start = self.history.iter().take_while(|(t, _)| unix - t > max_history).count();
        self.history.drain(..start);
    }

    /// `updateRetryAfterIfNeededLocked`, over `[unix - retry_after, unix)`.
    fn update_retry_after(&mut self, unix: i64) {
        let retry_after = self.retry_after;
        let dropped: i64 =
            self.history.iter().rev().take_while(|(t, _)| unix - t <= retry_after).filter(|(t, _)| *t < unix).map(|(_, n)| n).sum();
        if unix - self.retry_after_update_unix >= retry_after && dropped >= 3 * retry_after {
            self.retry_after = (retry_after * 2).min(MAX_RETRY_AFTER);
            self.retry_after_update_unix = unix;
        } else if dropped < retry_after && retry_after > 1 {
            self.retry_after = retry_after - 1;
        }
    }
}

/// The drops of every level (`droppedRequestsTracker`).
#[derive(Debug, Default)]
pub(crate) struct Dropped {
    levels: Mutex<HashMap<String, Stats>>,
}

impl Dropped {
    /// A request of `level` was dropped at `unix` (seconds).
    pub fn record(&self, level: &str, unix: i64) {
        let mut levels = self.levels.lock();
        levels.entry(level.to_string()).or_insert_with(Stats::new).record(unix);
    }

    /// The seconds a client of `level` is asked to wait.
    pub fn retry_after(&self, level: &str) -> i64 {
        self.levels.lock().get(level).map_or(1, |s| s.retry_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // `TestDroppedRequestsTracker`: (seconds elapsed, drops then, Retry-After after).
    #[test]
    fn retry_after_backs_off_and_recovers_as_the_apiservers() {
        let steps = [
            (0, 5, 1),
            (1, 11, 2),
            (2, 1, 2),
            (3, 11, 4),
            (4, 1, 4),
            (7, 1, 8),
            (11, 1, 8),
            (15, 1, 7),
            (17, 1, 6),
            (21, 14, 5),
            (22, 1, 10),
        ];
        let t0 = 1_700_000_000;
        let dropped = Dropped::default();
        for (elapsed, drops, want) in steps {
            for _ in 0..drops {
                dropped.record("pl", t0 + elapsed);
            }
            assert_eq!(dropped.retry_after("pl"), want, "after {elapsed} s");
        }
    }

    // `TestDroppedRequestsTrackerPLIndependent`.
    #[test]
    fn levels_back_off_independently() {
        let dropped = Dropped::default();
        let level = |i: usize| format!("pl-{i}");
        (0..10).for_each(|i| dropped.record(&level(i), 100));
        for i in 0..10 {
            dropped.record(&level(i), 101);
            assert_eq!(dropped.retry_after(&level(i)), 1);
        }
        (0..5).for_each(|_| dropped.record("pl-0", 101));
        for i in 0..10 {
            dropped.record(&level(i), 102);
            assert_eq!(dropped.retry_after(&level(i)), if i == 0 { 2 } else { 1 });
        }
        assert_eq!(dropped.retry_after("other-pl"), 1);
    }
}

//! Each level's seats: its nominal share of the server's, what it may lend
//! and borrow, and what it may use now — ported from `apf_controller.go`'s
//! `finishQueueSetReconfigsLocked` (the limits), `seatDemandStats.update`
//! (the smoothed demand) and `updateBorrowingLocked` (every
//! [`ADJUSTMENT_PERIOD`], seats move to the levels whose demand exceeds
//! their share, as `conc_alloc.go` divides them).
//!
//! Invariants: a level never has fewer seats than its nominal share less
//! what it lends, nor more than that share plus what it may borrow; the
//! exempt level keeps what it used and is never limited by it.

use std::time::Duration;

use super::alloc::{self, Item};
use super::integrator::Results;

/// `borrowingAdjustmentPeriod`.
pub(crate) const ADJUSTMENT_PERIOD: Duration = Duration::from_secs(10);

/// `seatDemandSmoothingCoefficient`: a half-life of 5 minutes at one adjustment every 10 s.
const SMOOTHING: f64 = 0.977;

/// A level's seats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Its share of the server's seats (`nominalCL`).
    pub nominal: usize,
    /// Its share less what it lends (`minCL`).
    pub min: usize,
    /// Its share plus what it may borrow (`maxCL`).
    pub max: usize,
}

impl Limits {
    /// A level's limits for `shares` of `share_sum`, of a server of `server` seats.
    pub fn of(server: usize, share_sum: f64, (shares, lendable, borrowing): (u32, u32, Option<u32>)) -> Limits {
        // Rounded up: the levels' seats may sum to a little more than the server's.
        let nominal = match share_sum > 0.0 {
            true => (server as f64 * shares as f64 / share_sum).ceil() as usize,
            false => 0,
        };
        let lendable = (nominal as f64 * lendable as f64 / 100.0).round() as usize;
        let borrowing = borrowing.map_or(server, |b| (nominal as f64 * b as f64 / 100.0).round() as usize);
        Limits { nominal, min: nominal - lendable.min(nominal), max: nominal + borrowing }
    }

    /// The seats a new level starts with, before its first adjustment.
    pub fn initial(&self) -> usize {
        self.nominal - (self.nominal - self.min) / 2
    }
}

/// A level's smoothed seat demand (`seatDemandStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Demand {
    pub high_watermark: usize,
    pub smoothed: f64,
}

impl Demand {
    /// `update`: the period's peak, and `max(avg + σ, A × smoothed + (1 − A) × (avg + σ))`.
    pub fn update(&mut self, period: Results) {
        self.high_watermark = period.max.round() as usize;
        if period.duration <= 0.0 {
            return;
        }
        let deviation = if period.deviation.is_nan() { 0.0 } else { period.deviation };
        let envelope = period.average + deviation;
        self.smoothed = envelope.max(SMOOTHING * self.smoothed + (1.0 - SMOOTHING) * envelope);
    }
}

/// One level as an adjustment sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    pub exempt: bool,
    pub limits: Limits,
    pub demand: Demand,
    /// Its seats until now.
    pub current: usize,
}

/// `updateBorrowingLocked`: each level's seats from now on, the levels'
/// demands already updated; `nominal_sum` is the sum of their nominal seats.
pub(crate) fn adjust(nominal_sum: usize, levels: &[Level]) -> Vec<usize> {
    let mut remaining = nominal_sum as i64;
    let (mut min_sum, mut min_current_sum) = (0i64, 0i64);
    let mut items = Vec::new();
    let mut floors = Vec::with_capacity(levels.len());
    for l in levels {
        let hw = l.demand.high_watermark;
        let floor = match l.exempt {
            true => l.limits.min.max(hw),
            false => l.limits.min.max(l.limits.nominal.min(hw)),
        };
        floors.push(floor);
        if l.exempt {
            remaining -= floor as i64;
            continue;
        }
        items.push(Item { lower: floor as f64, upper: l.limits.max as f64, target: (floor as f64).max(l.demand.smoothed) });
        min_sum += l.limits.min as i64;
        min_current_sum += floor as i64;
    }
    let allocs = match (remaining <= min_sum, remaining <= min_current_sum) {
        (true, _) | (_, true) => None,
        _ => Some(alloc::allocate(nominal_sum, &items).map(|(a, _)| a)),
    };
    let share = match min_current_sum > min_sum {
        true => (remaining - min_sum) as f64 / (min_current_sum - min_sum) as f64,
        false => 0.0,
    };
    let mut next = 0;
    levels
        .iter()
        .zip(floors)
        .map(|(l, floor)| {
            if l.exempt {
                return floor;
            }
            let i = next;
            next += 1;
            if remaining <= min_sum {
                l.limits.min
            } else if remaining <= min_current_sum {
                l.limits.min + ((floor - l.limits.min) as f64 * share).round() as usize
            } else {
                match &allocs {
                    Some(Ok(a)) => a[i].round() as usize,
                    // As the apiserver's backstop: keep what each had.
                    _ => l.current,
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steady(seats: f64) -> Results {
        Results { duration: 10.0, average: seats, deviation: 0.0, min: seats, max: seats }
    }

    #[test]
    fn limits_are_shares_of_the_server_rounded_up() {
        // The apiserver's 600 seats and the bootstrap levels' shares (245 in all).
        let workload_low = Limits::of(600, 245.0, (100, 90, None));
        assert_eq!(workload_low, Limits { nominal: 245, min: 24, max: 845 });
        assert_eq!(workload_low.initial(), 245 - 221 / 2);
        let leader = Limits::of(600, 245.0, (10, 0, None));
        assert_eq!((leader.nominal, leader.min), (25, 25));
        assert_eq!(Limits::of(600, 245.0, (0, 0, Some(0))), Limits::default(), "a jail: no seats");
    }

    // `TestBorrowing` of borrowing_test.go: two levels of 12 seats, 24 and 6 clients.
    #[test]
    fn a_busy_level_borrows_what_an_idle_one_lends_within_both_limits() {
        for (lendable, borrowing) in [([50, 33], [67, 50]), ([50, 33], [33, 50])] {
            let mut levels: Vec<Level> = (0..2)
                .map(|i| {
                    let limits = Limits::of(24, 2.0, (1, lendable[i], Some(borrowing[i])));
                    Level { exempt: false, limits, demand: Demand::default(), current: limits.initial() }
                })
                .collect();
            for _ in 0..3 {
                levels[0].demand.update(steady(24.0));
                levels[1].demand.update(steady(6.0));
                let current = adjust(24, &levels);
                levels.iter_mut().zip(&current).for_each(|(l, c)| l.current = *c);
            }
            assert_eq!([levels[0].current, levels[1].current], [16, 8], "lendable {lendable:?}, borrowing {borrowing:?}");
        }
    }

    #[test]
    fn the_exempt_level_keeps_what_it_used_and_the_rest_go_to_their_floors_when_short() {
        let limited = |nominal: usize| Level {
            exempt: false,
            limits: Limits { nominal, min: nominal / 2, max: nominal * 2 },
            demand: Demand { high_watermark: nominal, smoothed: nominal as f64 },
            current: nominal,
        };
        let exempt = Level { exempt: true, limits: Limits::default(), demand: Demand { high_watermark: 15, smoothed: 0.0 }, current: 0 };
        // 20 seats, of which the exempt level used 15: the others fall to what they may not lend.
        assert_eq!(adjust(20, &[exempt, limited(10), limited(10)]), [15, 5, 5]);
    }
}

//! The pieces a queue set is made of, ported from the queueset package's
//! `types.go` and `fifo_list.go` and from `request/seat_seconds.go`: work
//! in fixed-point seat-seconds, a waiting request, and a queue (a FIFO of
//! waiting requests with the sums the dispatcher reads, its executing
//! count, and the virtual time at which it next dispatches).
//!
//! Invariant: a queue's `sum` is the sum over its waiting requests, kept
//! as each is pushed and removed (`addToQueueSum`, `deductFromQueueSum`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// Work in seat-seconds, as a fixed-point number of 1e-8 seat-seconds
/// (`SeatSeconds`, `ssScale = 1e8`), wrapping as Go's `uint64` does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SeatSeconds(pub u64);

const SCALE: f64 = 1e8;

impl SeatSeconds {
    /// The largest representable amount (`MaxSeatSeconds`).
    pub const MAX: SeatSeconds = SeatSeconds(u64::MAX);

    /// `SeatsTimesDuration`: `seats` held for `d`.
    pub fn of(seats: f64, d: Duration) -> SeatSeconds {
        SeatSeconds(Self::signed(seats, d.as_nanos() as f64) as u64)
    }

    /// `SeatsTimesDuration` of a signed number of nanoseconds, as Go computes
    /// it (an `int64`, converted to the unsigned type by wrapping).
    pub fn signed(seats: f64, nanos: f64) -> i64 {
        (seats * nanos / (1e9 / SCALE)).round() as i64
    }

    pub fn plus(self, o: SeatSeconds) -> SeatSeconds {
        SeatSeconds(self.0.wrapping_add(o.0))
    }

    pub(crate) fn minus(self, o: SeatSeconds) -> SeatSeconds {
        SeatSeconds(self.0.wrapping_sub(o.0))
    }
}

/// The id of a request while it is known to its queue set.
pub(crate) type RequestId = u64;
/// The id of a queue: stable while the queue lives, whatever its position.
pub(crate) type QueueId = u64;

/// A request waiting in a queue (`request` while in the virtual world).
#[derive(Debug)]
pub(crate) struct Waiting {
    pub id: RequestId,
    /// The seats it occupies while it executes (its width).
    pub seats: usize,
    /// Its estimated work: its seats times the estimated service duration.
    pub work: SeatSeconds,
    /// R when it arrived (`arrivalR`).
    pub arrival_r: SeatSeconds,
    /// Told the instant it is dispatched.
    pub decision: oneshot::Sender<Instant>,
}

/// The sums over a queue's waiting requests (`queueSum`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct QueueSum {
    pub seats: usize,
    pub work: SeatSeconds,
}

/// A queue: requests that arrived and have not finished, in both worlds.
#[derive(Debug)]
pub struct Queue {
    pub id: QueueId,
    waiting: VecDeque<Waiting>,
    sum: QueueSum,
    /// R at which the next request is dispatched in the virtual world.
    pub next_dispatch_r: SeatSeconds,
    /// Requests of this queue executing in the real world.
    pub executing: usize,
    /// Seats those occupy.
    pub seats_in_use: usize,
}

impl Queue {
    pub fn new(id: QueueId) -> Queue {
        Queue { id, waiting: VecDeque::new(), sum: QueueSum::default(), next_dispatch_r: SeatSeconds(0), executing: 0, seats_in_use: 0 }
    }

    /// Requests waiting.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether nothing waits or executes in it.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty() && self.executing == 0
    }

    pub fn sum(&self) -> QueueSum {
        self.sum
    }

    /// The oldest waiting request.
    pub(crate) fn peek(&self) -> Option<&Waiting> {
        self.waiting.front()
    }

    pub fn push(&mut self, w: Waiting) {
        self.sum.seats += w.seats;
        self.sum.work = self.sum.work.plus(w.work);
        self.waiting.push_back(w);
        debug_assert_eq!(self.sum, self.summed(), "a queue's sum is its waiting requests'");
    }

    /// Removes the oldest waiting request.
    pub fn pop(&mut self) -> Option<Waiting> {
        let w = self.waiting.pop_front()?;
        self.deduct(&w);
        Some(w)
    }

    /// Removes request `id` if it still waits here.
    pub fn remove(&mut self, id: RequestId) -> Option<Waiting> {
        let at = self.waiting.iter().position(|w| w.id == id)?;
        let w = self.waiting.remove(at)?;
        self.deduct(&w);
        Some(w)
    }

    /// Every waiting request's arrival R, for the epoch's advance.
    pub(crate) fn arrivals_mut(&mut self) -> impl Iterator<Item = &mut SeatSeconds> {
        self.waiting.iter_mut().map(|w| &mut w.arrival_r)
    }

    fn deduct(&mut self, w: &Waiting) {
        self.sum.seats -= w.seats;
        self.sum.work = self.sum.work.minus(w.work);
        debug_assert_eq!(self.sum, self.summed(), "a queue's sum is its waiting requests'");
    }

    /// The sums counted afresh, to check the kept ones by.
    fn summed(&self) -> QueueSum {
        let seats = self.waiting.iter().map(|w| w.seats).sum();
        QueueSum { seats, work: self.waiting.iter().fold(SeatSeconds(0), |sum, w| sum.plus(w.work)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seat_seconds_are_fixed_point_and_wrap_as_go_does() {
        assert_eq!(SeatSeconds::of(2.0, Duration::from_millis(3)), SeatSeconds(600_000));
        let negative = SeatSeconds::signed(1.0, -3_000_000.0);
        assert_eq!(SeatSeconds(1_000_000).minus(SeatSeconds(negative as u64)), SeatSeconds(1_300_000));
    }

    #[test]
    fn a_queue_keeps_its_sums_as_requests_come_and_go() {
        let mut q = Queue::new(0);
        for id in 0..3 {
            let (decision, _) = oneshot::channel();
            q.push(Waiting { id, seats: id as usize + 1, work: SeatSeconds(10), arrival_r: SeatSeconds(0), decision });
        }
        assert_eq!(q.sum(), QueueSum { seats: 6, work: SeatSeconds(30) });
        assert_eq!(q.remove(1).map(|w| w.id), Some(1));
        assert!(q.remove(1).is_none(), "removed once");
        assert_eq!(q.pop().map(|w| w.id), Some(0));
        assert_eq!(q.sum(), QueueSum { seats: 3, work: SeatSeconds(10) });
        assert_eq!(q.peek().map(|w| w.id), Some(2));
    }
}

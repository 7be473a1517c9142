//! A queue set's state and algorithm, ported function for function from
//! `k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset/queueset.go`
//! (the names in backquotes are its functions): fair queuing for server
//! requests, where R — the virtual time — advances at the rate each active
//! queue would be served at, a request's virtual finish is its queue's
//! next dispatch R plus its work, and the queue whose oldest request would
//! finish first is served next; a new request joins the queue of its hand
//! (shuffle sharding) that holds the least work.
//!
//! Every method takes the instant it acts at and syncs R to it first
//! (`lockAndSyncTime`). kache answers only reads, so a request's work has
//! no final seats or additional latency (the mutating estimator's) and its
//! seats are released as it finishes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::queue::{Queue, QueueId, RequestId, SeatSeconds, Waiting};
use crate::flowcontrol::integrator::Integrator;
use crate::flowcontrol::shuffle::Dealer;

/// How a level's requests wait (`QueuingConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queuing {
    /// Queues wanted: > 0 to queue, 0 to reject at the limit, < 0 never to limit (exempt).
    pub queues: i64,
    pub queue_length_limit: usize,
    pub hand_size: usize,
}

/// `estimatedServiceDuration`: the service time a request's work is estimated by.
pub const ESTIMATED_SERVICE: Duration = Duration::from_millis(3);

/// R is wound back by this much when it nears the top (`rDecrement`) …
const R_DECREMENT: u64 = u64::MAX / 2;
/// … which is when it reaches this (`highR`).
const HIGH_R: u64 = R_DECREMENT + R_DECREMENT / 2;

/// Why a request is not executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Its queue is full while the level's seats are all in use.
    QueueFull,
    /// A level that does not queue is at its limit.
    ConcurrencyLimit,
    /// It waited its longest in its queue, or its client went away.
    TimeOut,
}

impl Rejection {
    /// The `reason` label, as the apiserver's `rejected_requests_total` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::QueueFull => "queue-full",
            Rejection::ConcurrencyLimit => "concurrency-limit",
            Rejection::TimeOut => "time-out",
        }
    }
}

/// A request that executes: where, on how many seats, since when.
#[derive(Debug, Clone)]
pub(crate) struct Executing {
    pub queue: Option<QueueId>,
    pub seats: usize,
    pub started: Instant,
    pub flow_schema: Arc<str>,
}

/// A request the set took: executing now (dispatched as it arrived), or waiting in `queue` as `id`.
#[derive(Debug)]
pub(crate) enum Taken {
    Executing(Executing),
    Waiting { queue: QueueId, id: RequestId, decision: oneshot::Receiver<Instant> },
}

/// The state of one level's queue set.
#[derive(Debug)]
pub struct State {
    queuing: Queuing,
    /// The seats its requests may occupy now (`dCfg.ConcurrencyLimit`).
    limit: usize,
    dealer: Option<Dealer>,
    queues: Vec<Queue>,
    current_r: SeatSeconds,
    last_real_time: Instant,
    robin_index: isize,
    pub waiting: usize,
    pub executing: usize,
    pub seats_in_use: usize,
    seats_waiting: usize,
    enqueues: usize,
    next_id: u64,
    /// Seats in use and waiting, over time (borrowing's input).
    pub seat_demand: Integrator,
}

impl State {
    pub fn new(queuing: Queuing, dealer: Option<Dealer>, limit: usize, now: Instant) -> State {
        let mut s = State {
            queuing: Queuing { queues: 0, queue_length_limit: 0, hand_size: 0 },
            limit: 0,
            dealer: None,
            queues: Vec::new(),
            current_r: SeatSeconds(0),
            last_real_time: now,
            robin_index: 0,
            waiting: 0,
            executing: 0,
            seats_in_use: 0,
            seats_waiting: 0,
            enqueues: 0,
            next_id: 0,
            seat_demand: Integrator::new(now),
        };
        s.configure(queuing, dealer, limit, now);
        s
    }

    /// `setConfiguration`: queues are added at once, removed by attrition.
    pub(crate) fn configure(&mut self, mut queuing: Queuing, dealer: Option<Dealer>, limit: usize, now: Instant) {
        self.sync_time(now);
        if queuing.queues > 0 {
            while (self.queues.len() as i64) < queuing.queues {
                self.queues.push(Queue::new(self.next_id));
                self.next_id += 1;
            }
        } else {
            queuing.queue_length_limit = self.queuing.queue_length_limit;
            queuing.hand_size = self.queuing.hand_size;
        }
        self.queuing = queuing;
        self.dealer = dealer;
        self.limit = limit;
        self.dispatch_as_much_as_possible(now);
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn queuing(&self) -> &Queuing {
        &self.queuing
    }

    pub(crate) fn dealer(&self) -> Option<Dealer> {
        self.dealer
    }

    /// `StartRequest`: rejected, executing at once (no queues), or waiting.
    pub fn start(&mut self, seats: usize, hash: u64, flow_schema: &Arc<str>, now: Instant) -> Result<Taken, Rejection> {
        self.sync_time(now);
        if self.queuing.queues < 1 {
            if !self.can_accommodate(seats) {
                return Err(Rejection::ConcurrencyLimit);
            }
            self.executing += 1;
            self.seats_in_use += seats;
            self.note_demand(now);
            return Ok(Taken::Executing(Executing { queue: None, seats, started: now, flow_schema: flow_schema.clone() }));
        }
        let at = self.shuffle_shard(hash);
        let (decision, decided) = oneshot::channel();
        let id = self.next_id;
        self.next_id += 1;
        let work = SeatSeconds::of(seats as f64, ESTIMATED_SERVICE);
        let waiting = Waiting { id, seats, work, arrival_r: self.current_r, decision };
        // `rejectOrEnqueueToBoundLocked`.
        let full = self.seats_in_use >= self.limit && self.queues[at].len() >= self.queuing.queue_length_limit;
        if !full {
            let queue = &mut self.queues[at];
            if queue.is_empty() {
                queue.next_dispatch_r = self.current_r;
            }
            queue.push(waiting);
            self.waiting += 1;
            self.seats_waiting += seats;
            self.note_demand(now);
        }
        self.bound_next_dispatch(at);
        if full {
            return Err(Rejection::QueueFull);
        }
        let queue = self.queues[at].id;
        self.dispatch_as_much_as_possible(now);
        let mut decided = decided;
        Ok(match decided.try_recv() {
            Ok(started) => Taken::Executing(Executing { queue: Some(queue), seats, started, flow_schema: flow_schema.clone() }),
            Err(_) => Taken::Waiting { queue, id, decision: decided },
        })
    }

    /// A waiting request gives up (`wait` with its context done): `true` if
    /// it was still waiting; `false` if it was dispatched meanwhile (it then executes).
    pub(crate) fn cancel(&mut self, queue: QueueId, id: RequestId, now: Instant) -> bool {
        self.sync_time(now);
        let Some(at) = self.position(queue) else { return false };
        let Some(w) = self.queues[at].remove(id) else { return false };
        self.waiting -= 1;
        self.seats_waiting -= w.seats;
        self.note_demand(now);
        self.bound_next_dispatch(at);
        true
    }

    /// `finishRequestAndDispatchAsMuchAsPossible`.
    pub fn finish(&mut self, r: &Executing, now: Instant) {
        self.sync_time(now);
        self.executing -= 1;
        let at = r.queue.and_then(|q| self.position(q));
        if let Some(at) = at {
            let queue = &mut self.queues[at];
            queue.executing -= 1;
            // The queue's start R moves by (G - S) × seats for a service time S.
            let served = now.saturating_duration_since(r.started).as_nanos() as f64;
            let delta = SeatSeconds::signed(r.seats as f64, ESTIMATED_SERVICE.as_nanos() as f64 - served);
            queue.next_dispatch_r = queue.next_dispatch_r.minus(SeatSeconds(delta as u64));
            self.bound_next_dispatch(at);
        }
        self.seats_in_use -= r.seats;
        self.note_demand(now);
        if let Some(at) = at {
            self.queues[at].seats_in_use -= r.seats;
            self.remove_queue_if_empty(at);
        }
        self.dispatch_as_much_as_possible(now);
    }

    /// Whether nothing waits or executes.
    pub(crate) fn is_idle(&self) -> bool {
        self.waiting == 0 && self.executing == 0
    }

    fn position(&self, queue: QueueId) -> Option<usize> {
        self.queues.iter().position(|q| q.id == queue)
    }

    fn note_demand(&mut self, now: Instant) {
        self.seat_demand.set((self.seats_in_use + self.seats_waiting) as f64, now);
    }

    /// `syncTimeLocked`: R advances by the virtual time ratio times the real time since.
    fn sync_time(&mut self, now: Instant) {
        let since = now.saturating_duration_since(self.last_real_time);
        self.last_real_time = self.last_real_time.max(now);
        self.current_r = self.current_r.plus(SeatSeconds::of(self.virtual_time_ratio(), since));
        if self.current_r.0 >= HIGH_R {
            self.advance_epoch();
        }
    }

    /// `advanceEpoch`: every reading of R wound back together.
    fn advance_epoch(&mut self) {
        self.current_r = self.current_r.minus(SeatSeconds(R_DECREMENT));
        for queue in &mut self.queues {
            if queue.is_empty() {
                queue.next_dispatch_r = SeatSeconds(0);
                continue;
            }
            queue.next_dispatch_r = queue.next_dispatch_r.minus(SeatSeconds(R_DECREMENT));
            for arrival in queue.arrivals_mut() {
                *arrival = arrival.minus(SeatSeconds(R_DECREMENT));
            }
        }
    }

    /// `getVirtualTimeRatioLocked`: min(seats asked, limit) / active queues.
    fn virtual_time_ratio(&self) -> f64 {
        let (mut active, mut asked) = (0usize, 0usize);
        for queue in &self.queues {
            asked += queue.seats_in_use + queue.sum().seats;
            if !queue.is_empty() {
                active += 1;
            }
        }
        match active {
            0 => 0.0,
            n => asked.min(self.limit) as f64 / n as f64,
        }
    }

    /// `shuffleShardLocked`: the queue of the hand with the least waiting
    /// work, visiting the hand from a rotating offset.
    fn shuffle_shard(&mut self, hash: u64) -> usize {
        let hand = self.dealer.as_ref().map(|d| d.deal(hash)).unwrap_or_else(|| vec![0]);
        let offset = self.enqueues % hand.len();
        self.enqueues += 1;
        let (mut best, mut least) = (hand[offset], SeatSeconds::MAX);
        for i in 0..hand.len() {
            let at = hand[(offset + i) % hand.len()];
            let work = self.queues[at].sum().work;
            if work < least {
                (best, least) = (at, work);
            }
        }
        best
    }

    /// `dispatchAsMuchAsPossibleLocked`.
    fn dispatch_as_much_as_possible(&mut self, now: Instant) {
        while self.waiting != 0 && self.seats_in_use < self.limit && self.dispatch(now) {}
    }

    /// `dispatchLocked`: the oldest request of the queue whose would finish
    /// first in the virtual world, if it fits; `false` if none was.
    fn dispatch(&mut self, now: Instant) -> bool {
        let Some((at, w)) = self.find_dispatch_queue() else { return false };
        self.waiting -= 1;
        self.seats_waiting -= w.seats;
        if w.decision.send(now).is_err() {
            // Its waiter has gone (never, while it is queued: it removes itself first).
            self.note_demand(now);
            self.bound_next_dispatch(at);
            return true;
        }
        self.executing += 1;
        self.seats_in_use += w.seats;
        let queue = &mut self.queues[at];
        queue.executing += 1;
        queue.seats_in_use += w.seats;
        queue.next_dispatch_r = queue.next_dispatch_r.plus(w.work);
        self.note_demand(now);
        self.bound_next_dispatch(at);
        true
    }

    /// `findDispatchQueueToBoundLocked`: queues visited round robin; ties go
    /// to the queue after the last one served.
    fn find_dispatch_queue(&mut self) -> Option<(usize, Waiting)> {
        let n = self.queues.len() as isize;
        if n == 0 {
            return None;
        }
        let (mut best, mut min_finish) = (None, SeatSeconds::MAX);
        for _ in 0..n {
            self.robin_index = (self.robin_index + 1).rem_euclid(n);
            let queue = &self.queues[self.robin_index as usize];
            if let Some(oldest) = queue.peek() {
                let finish = queue.next_dispatch_r.plus(oldest.work);
                if finish < min_finish {
                    (best, min_finish) = (Some(self.robin_index as usize), finish);
                }
            }
        }
        let at = best?;
        let seats = self.queues[at].peek()?.seats;
        if !self.can_accommodate(seats) {
            return None;
        }
        let w = self.queues[at].pop()?;
        self.robin_index = at as isize;
        Some((at, w))
    }

    /// `canAccommodateSeatsLocked`: a request wider than the whole limit
    /// waits until nothing else executes.
    fn can_accommodate(&self, seats: usize) -> bool {
        if self.queuing.queues < 0 {
            return true;
        }
        if seats > self.limit {
            return self.executing == 0;
        }
        self.seats_in_use + seats <= self.limit
    }

    /// `boundNextDispatchLocked`, the anti-windup: a queue's dispatch in the
    /// virtual world never precedes its oldest request's arrival.
    fn bound_next_dispatch(&mut self, at: usize) {
        let queue = &mut self.queues[at];
        if let Some(arrival) = queue.peek().map(|w| w.arrival_r)
            && queue.next_dispatch_r < arrival
        {
            queue.next_dispatch_r = arrival;
        }
    }

    /// `removeQueueIfEmptyLocked`: a queue beyond those wanted goes once empty.
    fn remove_queue_if_empty(&mut self, at: usize) {
        if self.queues.len() as i64 > self.queuing.queues && self.queues[at].is_empty() {
            self.queues.remove(at);
            if self.robin_index >= at as isize {
                self.robin_index -= 1;
            }
        }
    }

    /// The queues' ids in order and each one's waiting count (tests).
    #[cfg(test)]
    pub(crate) fn lengths(&self) -> Vec<usize> {
        self.queues.iter().map(Queue::len).collect()
    }
}

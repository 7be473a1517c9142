//! One priority level's queue set: its state ([`state`], the port of
//! `queueset.go`) behind a lock, and the handles a request holds — a
//! [`Waiter`] while it waits in a queue, a [`Seat`] while it executes —
//! that give back what they hold when dropped, as the apiserver's
//! `request.Finish` and context cancellation do.
//!
//! Invariants: the lock is never held across an await; a request is
//! counted waiting until it is dispatched or gives up (its [`Waiter`]
//! takes itself out of its queue before it stops listening), and executing
//! from then until its [`Seat`] is dropped — so the set's seats in use are
//! exactly the seats of live [`Seat`]s.

mod queue;
mod state;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::integrator::Results;
use super::metrics;
use super::shuffle::{Dealer, DealerError};
use queue::{QueueId, RequestId};
use state::{Executing, State, Taken};
pub use state::{Queuing, Rejection};

/// A priority level's queues and seats.
#[derive(Debug)]
pub struct QueueSet {
    /// The level's name (the `priority_level` label).
    name: Arc<str>,
    state: Mutex<State>,
}

/// What became of a request offered to a queue set.
#[derive(Debug)]
pub enum Admission {
    /// It executes now.
    Executing(Seat),
    /// It waits in a queue.
    Waiting(Waiter),
    /// It is not executed.
    Rejected(Rejection),
}

/// The dealer `queuing` needs (`checkConfig`): none for a level that does not queue.
fn dealer(queuing: &Queuing) -> Result<Option<Dealer>, DealerError> {
    if queuing.queues <= 0 {
        return Ok(None);
    }
    Dealer::new(queuing.queues, queuing.hand_size as i64).map(Some)
}

impl QueueSet {
    /// A queue set for level `name`, whose requests may occupy `limit` seats.
    pub fn new(name: &str, queuing: Queuing, limit: usize) -> Result<Arc<QueueSet>, DealerError> {
        let dealer = dealer(&queuing)?;
        let state = State::new(queuing, dealer, limit, Instant::now());
        Ok(Arc::new(QueueSet { name: name.into(), state: Mutex::new(state) }))
    }

    /// Changes how its requests wait, keeping those waiting and executing.
    pub(crate) fn configure(&self, queuing: Queuing, limit: usize) -> Result<(), DealerError> {
        let dealer = dealer(&queuing)?;
        self.state.lock().configure(queuing, dealer, limit, Instant::now());
        Ok(())
    }

    /// Whether `queuing` is one it could take.
    pub fn check(queuing: &Queuing) -> Result<(), DealerError> {
        dealer(queuing).map(drop)
    }

    /// Changes the seats its requests may occupy (borrowing's adjustment).
    pub fn set_limit(&self, limit: usize) {
        let mut s = self.state.lock();
        let queuing = s.queuing().clone();
        let dealer = s.dealer();
        s.configure(queuing, dealer, limit, Instant::now());
    }

    /// The seats its requests may occupy now.
    pub fn limit(&self) -> usize {
        self.state.lock().limit()
    }

    /// Whether nothing waits or executes.
    pub(crate) fn is_idle(&self) -> bool {
        self.state.lock().is_idle()
    }

    /// Its seat demand since the last call.
    pub(crate) fn seat_demand(&self) -> Results {
        self.state.lock().seat_demand.reset(Instant::now())
    }

    /// Offers a request of `seats` from the flow that hashes to `hash`, matched by `flow_schema`.
    pub fn start(self: &Arc<Self>, seats: usize, hash: u64, flow_schema: &Arc<str>) -> Admission {
        let taken = self.state.lock().start(seats, hash, flow_schema, Instant::now());
        match taken {
            Ok(Taken::Executing(r)) => Admission::Executing(Seat::new(self.clone(), r)),
            Ok(Taken::Waiting { queue, id, decision }) => {
                metrics::queued(&self.name, flow_schema);
                let waiter = Waiter {
                    qs: self.clone(),
                    queue,
                    id,
                    seats,
                    flow_schema: flow_schema.clone(),
                    decision,
                    arrived: Instant::now(),
                    settled: false,
                };
                Admission::Waiting(waiter)
            }
            Err(why) => {
                metrics::rejected(&self.name, flow_schema, why.as_str());
                Admission::Rejected(why)
            }
        }
    }
}

/// A request waiting in a queue. Dropped before it is settled (its client
/// gone), it leaves its queue — or, dispatched meanwhile, finishes.
#[derive(Debug)]
pub struct Waiter {
    qs: Arc<QueueSet>,
    queue: QueueId,
    id: RequestId,
    seats: usize,
    flow_schema: Arc<str>,
    decision: oneshot::Receiver<Instant>,
    arrived: Instant,
    settled: bool,
}

impl Waiter {
    /// Waits until the request is dispatched, at most `limit`.
    pub async fn wait(mut self, limit: Duration) -> Result<Seat, Rejection> {
        let decided = tokio::time::timeout(limit, &mut self.decision).await;
        self.settled = true;
        let waited = self.arrived.elapsed().as_secs_f64();
        let started = match decided {
            Ok(Ok(started)) => started,
            _ => match self.give_up() {
                Some(started) => started,
                None => {
                    metrics::dequeued(&self.qs.name, &self.flow_schema, waited, false);
                    metrics::rejected(&self.qs.name, &self.flow_schema, Rejection::TimeOut.as_str());
                    return Err(Rejection::TimeOut);
                }
            },
        };
        metrics::dequeued(&self.qs.name, &self.flow_schema, waited, true);
        let executing = Executing { queue: Some(self.queue), seats: self.seats, started, flow_schema: self.flow_schema.clone() };
        Ok(Seat::new(self.qs.clone(), executing))
    }

    /// Leaves the queue; `Some(start)` if it was dispatched meanwhile.
    fn give_up(&mut self) -> Option<Instant> {
        let mut s = self.qs.state.lock();
        if s.cancel(self.queue, self.id, Instant::now()) {
            return None;
        }
        // Not in its queue: dispatched, its decision sent under the lock.
        self.decision.try_recv().ok()
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let waited = self.arrived.elapsed().as_secs_f64();
        match self.give_up() {
            None => {
                metrics::dequeued(&self.qs.name, &self.flow_schema, waited, false);
                metrics::rejected(&self.qs.name, &self.flow_schema, Rejection::TimeOut.as_str());
            }
            Some(started) => {
                metrics::dequeued(&self.qs.name, &self.flow_schema, waited, true);
                let executing = Executing { queue: Some(self.queue), seats: self.seats, started, flow_schema: self.flow_schema.clone() };
                drop(Seat::new(self.qs.clone(), executing));
            }
        }
    }
}

/// Seats a request occupies while it executes; released when dropped.
#[derive(Debug)]
pub struct Seat {
    qs: Arc<QueueSet>,
    executing: Executing,
}

impl Seat {
    fn new(qs: Arc<QueueSet>, executing: Executing) -> Seat {
        metrics::executing(&qs.name, &executing.flow_schema, executing.seats);
        Seat { qs, executing }
    }

    /// How many.
    pub fn seats(&self) -> usize {
        self.executing.seats
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        metrics::finished(&self.qs.name, &self.executing.flow_schema, self.executing.seats);
        self.qs.state.lock().finish(&self.executing, Instant::now());
    }
}

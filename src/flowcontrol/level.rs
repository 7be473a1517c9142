//! A priority level's lasting state (`priorityLevelState`): its queue set,
//! which outlives configuration changes that keep the level, and the seats
//! borrowing gives it.
//!
//! Invariant: the queue set's limit is the level's current seats, set only
//! by [`Level::apply`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::borrowing::{Demand, Limits};
use super::metrics;
use super::objects::{PriorityLevel, Queues};
use super::queueset::{QueueSet, Queuing};
use super::shuffle::DealerError;
use super::width::level_max_seats;

/// The queuing a level's limit response asks for.
pub fn queuing(q: Queues) -> Queuing {
    match q {
        Queues::Exempt => Queuing { queues: -1, queue_length_limit: 0, hand_size: 0 },
        Queues::Reject => Queuing { queues: 0, queue_length_limit: 0, hand_size: 0 },
        Queues::Queue(q) => {
            Queuing { queues: i64::from(q.queues), queue_length_limit: q.queue_length_limit as usize, hand_size: q.hand_size as usize }
        }
    }
}

/// What borrowing knows of a level.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seats {
    pub exempt: bool,
    pub limits: Limits,
    pub demand: Demand,
    pub current: usize,
}

#[derive(Debug)]
struct Inner {
    seats: Seats,
    queuing: Queuing,
    /// No longer configured, kept until its requests are done.
    quiescing: bool,
}

/// One priority level.
#[derive(Debug)]
pub struct Level {
    pub name: Arc<str>,
    pub queues: Arc<QueueSet>,
    inner: Mutex<Inner>,
    /// The most seats one request of it may take (`MaxSeatsTracker`).
    max_seats: AtomicUsize,
}

impl Level {
    /// A new level for `pl`, which must have a valid [`PriorityLevel::queuing`].
    pub fn new(pl: &PriorityLevel, q: Queues) -> Result<Arc<Level>, DealerError> {
        let queuing = queuing(q);
        let queues = QueueSet::new(&pl.metadata.name, queuing.clone(), 0)?;
        let seats = Seats { exempt: pl.is_exempt(), limits: Limits::default(), demand: Demand::default(), current: 0 };
        let inner = Mutex::new(Inner { seats, queuing, quiescing: false });
        Ok(Arc::new(Level { name: pl.metadata.name.as_str().into(), queues, inner, max_seats: AtomicUsize::new(0) }))
    }

    /// Takes `pl`'s queuing (checked) and limits; a new level starts with
    /// its initial seats (the nominal less half what it lends).
    pub fn set(&self, pl: &PriorityLevel, q: Queues, limits: Limits, new: bool) {
        let mut inner = self.inner.lock();
        inner.queuing = queuing(q);
        inner.quiescing = false;
        inner.seats.exempt = pl.is_exempt();
        inner.seats.limits = limits;
        if new {
            inner.seats.current = limits.initial();
        }
        let hand = match q {
            Queues::Queue(q) => Some(q.hand_size as usize),
            _ => None,
        };
        self.max_seats.store(level_max_seats(limits.nominal, hand), Ordering::Relaxed);
    }

    /// Marks it as no longer configured; whether it still has requests.
    pub fn quiesce(&self) -> bool {
        self.inner.lock().quiescing = true;
        !self.queues.is_idle()
    }

    /// Whether it is no longer configured.
    pub(crate) fn quiescing(&self) -> bool {
        self.inner.lock().quiescing
    }

    /// Its seats, its demand updated from the queue set's since the last adjustment.
    pub(crate) fn observe(&self) -> Seats {
        let mut inner = self.inner.lock();
        let period = self.queues.seat_demand();
        inner.seats.demand.update(period);
        inner.seats
    }

    /// Takes `current` seats from now on.
    pub fn apply(&self, current: usize) {
        let (queuing, nominal) = {
            let mut inner = self.inner.lock();
            inner.seats.current = current;
            (inner.queuing.clone(), inner.seats.limits.nominal)
        };
        metrics::limits(&self.name, nominal, current);
        if let Err(e) = self.queues.configure(queuing, current) {
            // Checked before it was set: cannot happen.
            tracing::error!(level = %self.name, error = %e, "a priority level's queuing is invalid");
        }
    }

    /// The most seats one request of it may take (0: no cap of its own).
    pub(crate) fn max_seats(&self) -> usize {
        self.max_seats.load(Ordering::Relaxed)
    }
}

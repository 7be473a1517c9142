//! Where events go: each backend's bounded queue, fed without ever waiting
//! (the apiserver's `buffered` backend), and the counts of what became of
//! every event — `kache_audit_events_total{backend, result}` with result
//! `written`, `dropped` (its queue was full: the backend is slower than
//! the requests, as `apiserver_audit_error_total{plugin="buffered"}`
//! counts) or `failed` (the backend could not take it: the file cannot be
//! written, the webhook refused the batch).
//!
//! Invariant: [`Sink::send`] takes constant time and never blocks; an event
//! is counted exactly once per backend.

use bytes::Bytes;
use metrics::Counter;
use tokio::sync::mpsc;

/// Which backend a count is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `--audit-log-path`.
    Log,
    /// `--audit-webhook-config-file`.
    Webhook,
}

impl Backend {
    /// The `backend` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Log => "log",
            Backend::Webhook => "webhook",
        }
    }
}

/// What became of events, per backend.
#[derive(Debug, Clone)]
pub struct Counts {
    pub written: Counter,
    pub dropped: Counter,
    pub failed: Counter,
}

impl Counts {
    /// `backend`'s counters (each starts at zero, so every series is scraped).
    pub fn of(backend: Backend) -> Counts {
        let counter = |result: &'static str| {
            let c = metrics::counter!("kache_audit_events_total", "backend" => backend.as_str(), "result" => result);
            c.absolute(0);
            c
        };
        Counts { written: counter("written"), dropped: counter("dropped"), failed: counter("failed") }
    }
}

/// One backend's queue.
#[derive(Debug)]
pub struct Queue {
    tx: mpsc::Sender<Bytes>,
    counts: Counts,
}

impl Queue {
    /// A queue of at most `size` events for `backend`, and its receiving end.
    pub fn new(backend: Backend, size: usize) -> (Queue, mpsc::Receiver<Bytes>, Counts) {
        let (tx, rx) = mpsc::channel(size.max(1));
        let counts = Counts::of(backend);
        (Queue { tx, counts: counts.clone() }, rx, counts)
    }
}

/// Every backend's queue.
#[derive(Debug, Default)]
pub struct Sink {
    queues: Vec<Queue>,
}

impl Sink {
    /// A sink feeding `queues`.
    pub fn new(queues: Vec<Queue>) -> Sink {
        Sink { queues }
    }

    /// Hands an event (its [`super::event::Event::line`]) to every backend, dropping it where the queue is full.
    pub fn send(&self, line: Vec<u8>) {
        let mut line = Some(Bytes::from(line));
        for (i, q) in self.queues.iter().enumerate() {
            // The last backend takes the line itself: a clone shares it, at the cost of an allocation.
            let this = if i + 1 == self.queues.len() { line.take() } else { line.clone() };
            if this.is_some_and(|l| q.tx.try_send(l).is_err()) {
                q.counts.dropped.increment(1);
            }
        }
    }
}

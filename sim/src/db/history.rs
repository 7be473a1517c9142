//! The event history watches replay from, and what open watches are told:
//! every committed change as an [`Event`], broadcast as it is recorded, and
//! per resource the revision its watch cache has reached.
//!
//! Invariants: events are in revision order, and an event is broadcast when
//! it is recorded — under the store's write lock, so a watcher that
//! subscribes under the lock sees every later event exactly once (unless a
//! fault unannounces it); a resource's cache revision never goes back but
//! on a restart.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use apimachinery::watch::EventType;
use tokio::sync::broadcast;

use crate::object::Obj;
use crate::resources::ResourceId;

/// One committed change.
#[derive(Debug, Clone)]
pub struct Event {
    /// The revision the change was committed at.
    pub rv: u64,
    /// The resource it belongs to.
    pub res: ResourceId,
    /// Added, modified or deleted.
    pub typ: EventType,
    /// The new object; for a deletion, the last state with `resourceVersion = rv`.
    pub obj: Arc<Obj>,
    /// The object before the change.
    pub prev: Option<Arc<Obj>>,
}

/// The events since the last compaction, and their broadcast.
#[derive(Debug)]
pub struct History {
    events: VecDeque<Arc<Event>>,
    tx: broadcast::Sender<Arc<Event>>,
    /// Per resource, the revision its watch cache has reached (what its
    /// bookmarks carry): its last event, or the revision of its last
    /// consistent read, which makes the apiserver's cache catch up with etcd.
    cache_rv: Vec<AtomicU64>,
    /// Per resource, how many of its next events watchers are not told of (a fault).
    unannounced: Vec<AtomicU64>,
}

impl History {
    /// No events, for `resources` resources whose caches are at `start`;
    /// a watcher more than `watch_buffer` events behind is closed.
    pub fn new(resources: usize, start: u64, watch_buffer: usize) -> Self {
        let (tx, _) = broadcast::channel(watch_buffer.max(1));
        History {
            events: VecDeque::new(),
            tx,
            cache_rv: (0..resources).map(|_| AtomicU64::new(start)).collect(),
            unannounced: (0..resources).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Records `event` and tells the watchers.
    pub fn record(&mut self, event: Arc<Event>) {
        let res = event.res;
        self.events.push_back(event.clone());
        self.cache_rv[res].fetch_max(event.rv, Ordering::Relaxed);
        let announce = self.unannounced[res].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_err();
        if announce {
            // No receivers is fine: nobody is watching.
            let _ = self.tx.send(event);
        }
    }

    /// A receiver of every event recorded from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    /// Events of `res` with revision `> after`, of those held.
    pub fn after(&self, res: ResourceId, after: u64) -> Vec<Arc<Event>> {
        let start = self.events.partition_point(|e| e.rv <= after);
        self.events.range(start..).filter(|e| e.res == res).cloned().collect()
    }

    /// Drops the events up to revision `to`.
    pub fn compact(&mut self, to: u64) {
        while self.events.front().is_some_and(|e| e.rv <= to) {
            self.events.pop_front();
        }
    }

    /// Forgets every event, every cache at `rev` (etcd restored from a snapshot).
    pub fn restart(&mut self, rev: u64) {
        self.events.clear();
        for c in &self.cache_rv {
            c.store(rev, Ordering::Relaxed);
        }
    }

    /// Events held.
    pub fn count(&self) -> usize {
        self.events.len()
    }

    /// The revision `res`'s watch cache has reached.
    pub fn cache_rv(&self, res: ResourceId) -> u64 {
        self.cache_rv[res].load(Ordering::Relaxed)
    }

    /// `res`'s watch cache catches up with `rev`.
    pub fn progress(&self, res: ResourceId, rev: u64) {
        self.cache_rv[res].fetch_max(rev, Ordering::Relaxed);
    }

    /// The next `n` events of `res` are recorded but not broadcast.
    pub fn unannounce(&self, res: ResourceId, n: u64) {
        self.unannounced[res].store(n, Ordering::Relaxed);
    }
}

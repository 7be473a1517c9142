//! [`View`]: what a reader sees, published whole by the writer — the head
//! snapshot, the event log and the checkpoints — and the two reads built on
//! them: the snapshot at any revision in the window, and the events after
//! a revision.
//!
//! Invariants of a published view:
//! - `head.rv` is `confirmed_rv`: every upstream event up to it is applied.
//! - the log holds events with non-decreasing revisions in `(oldest_rv,
//!   confirmed_rv]`, those of one revision (one etcd transaction) next to
//!   each other and all of them or none; the state at `oldest_rv` is the
//!   head with every logged event undone, so any revision in `[oldest_rv,
//!   confirmed_rv]` can be rebuilt.
//! - checkpoints are states of completed revisions (taken before the next
//!   revision's first event), ascending, within the window; they bound how
//!   many events a rebuild undoes.
//! - The head is published after every chunk upstream sends, so while a
//!   revision's events arrive a reader may see part of it, as readers of
//!   kube-apiserver's own watch cache may (its cache applies them one by one).

use std::sync::Arc;

use imbl::Vector;

use super::StoreError;
use super::event::Event;
use super::snapshot::Snapshot;

/// A consistent view of a store.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub(super) head: Arc<Snapshot>,
    pub(super) log: Vector<Arc<Event>>,
    pub(super) oldest_rv: u64,
    pub(super) checkpoints: Vector<Arc<Snapshot>>,
    pub(super) epoch: u64,
    /// Events dropped from the log's front in this epoch: the log's first
    /// event is at position `popped` (events are numbered from the epoch's
    /// start in the order applied; several may share a revision, a
    /// position never).
    pub(super) popped: u64,
}

impl View {
    /// The newest snapshot, at `confirmed_rv`.
    pub fn head(&self) -> &Arc<Snapshot> {
        &self.head
    }

    /// The highest revision up to which every upstream event is held.
    pub fn confirmed_rv(&self) -> u64 {
        self.head.rv
    }

    /// The oldest revision that can still be served.
    pub(crate) fn oldest_rv(&self) -> u64 {
        self.oldest_rv
    }

    /// Changes on every re-list ([`StoreWriter::replace`](super::StoreWriter::replace)):
    /// a watcher that saw another epoch cannot continue its stream.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// When the writer applied the oldest event still in the log.
    pub(crate) fn oldest_event_at(&self) -> Option<std::time::Instant> {
        self.log.front().map(|e| e.at)
    }

    /// The number of events in the log.
    pub fn log_len(&self) -> usize {
        self.log.len()
    }

    /// How many logged events the writer applied at or after `since`.
    pub(crate) fn events_since(&self, since: std::time::Instant) -> usize {
        // The log is in the order the writer applied it, so `at` never decreases.
        self.log.len()
            - self
                .log
                .binary_search_by(|e| if e.at < since { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater })
                .unwrap_or_else(|i| i)
    }

    fn check(&self, rv: u64) -> Result<(), StoreError> {
        if rv < self.oldest_rv {
            return Err(StoreError::TooOld { requested: rv, oldest: self.oldest_rv });
        }
        if rv > self.head.rv {
            return Err(StoreError::TooNew { requested: rv, confirmed: self.head.rv });
        }
        Ok(())
    }

    /// The index of the first logged event after `rv` (the log may hold
    /// several events of one revision).
    fn first_after(&self, rv: u64) -> usize {
        let (mut low, mut high) = (0, self.log.len());
        while low < high {
            let mid = low + (high - low) / 2;
            if self.log[mid].rv() <= rv { low = mid + 1 } else { high = mid }
        }
        low
    }

    /// The objects as they were at `rv`, which must be in the window.
    pub fn snapshot_at(&self, rv: u64) -> Result<Arc<Snapshot>, StoreError> {
        self.check(rv)?;
        if rv == self.head.rv {
            return Ok(self.head.clone());
        }
        let from = self.first_after(rv);
        // The nearest snapshot at or after `rv`: a checkpoint or the head.
        let start = self
            .checkpoints
            .binary_search_by(|c| c.rv.cmp(&rv))
            .map_or_else(|i| self.checkpoints.get(i), |i| self.checkpoints.get(i))
            .unwrap_or(&self.head);
        let to = self.first_after(start.rv);
        let mut snapshot = (**start).clone();
        for i in (from..to).rev() {
            if let Some(e) = self.log.get(i) {
                e.undo(&mut snapshot);
            }
        }
        snapshot.rv = rv;
        Ok(Arc::new(snapshot))
    }

    /// The position after the newest logged event (see [`View::events_from`]).
    pub fn end(&self) -> u64 {
        self.popped + self.log.len() as u64
    }

    /// The position of the first logged event after `rv`, which must be in the window.
    pub(crate) fn position_after(&self, rv: u64) -> Result<u64, StoreError> {
        self.check(rv)?;
        Ok(self.popped + self.first_after(rv) as u64)
    }

    /// The events from position `pos` on, in order; `None` when some of
    /// them already left the log. A revision's events can be published in
    /// parts (as upstream's chunks bring them), so followers of the log
    /// count positions, not revisions.
    pub(crate) fn events_from(&self, pos: u64) -> Option<Vector<Arc<Event>>> {
        let skip = usize::try_from(pos.checked_sub(self.popped)?).ok()?;
        Some(self.log.skip(skip.min(self.log.len())))
    }

    /// The events after `rv`, in order; `rv` must be in the window.
    pub fn events_after(&self, rv: u64) -> Result<Vector<Arc<Event>>, StoreError> {
        self.check(rv)?;
        Ok(self.log.skip(self.first_after(rv)))
    }
}

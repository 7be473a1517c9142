//! [`StoreWriter`]: the one writer of a store (ARCHITECTURE.md, invariant 1). It
//! changes a private working view and makes it visible with
//! [`StoreWriter::publish`], an atomic pointer swap: readers never wait on
//! it and it never waits on a reader. Subscribers learn of a publish through
//! a `watch` channel, which only overwrites a value, so a slow subscriber
//! cannot hold the writer back; it reads what it missed from the log, or
//! learns it fell out of the window.

use std::sync::Arc;
use std::time::Instant;

use imbl::ordmap::DiffItem;

use super::event::{Event, EventType};
use super::object::CachedObject;
use super::snapshot::Snapshot;
use super::view::View;
use super::{Shared, StoreConfig, StoreError, StoreReader};

/// The single writer of a store. Not `Clone`.
#[derive(Debug)]
pub struct StoreWriter {
    shared: Arc<Shared>,
    view: View,
    since_checkpoint: usize,
    /// The head's revision came from an event, and another event of the
    /// same revision may follow (see [`StoreWriter::apply`]); a bookmark or
    /// a re-list closes it.
    revision_open: bool,
}

impl StoreWriter {
    /// An empty store at revision 0 and a reader of it.
    pub fn new(config: StoreConfig) -> (StoreWriter, StoreReader) {
        let view = View { head: Arc::new(Snapshot::empty(config.indexed_fields.clone())), ..View::default() };
        let shared = Arc::new(Shared::new(config));
        let writer = StoreWriter { shared: shared.clone(), view, since_checkpoint: 0, revision_open: false };
        (writer, StoreReader { shared })
    }

    /// The working (possibly unpublished) view.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// Applies one upstream event; its revision is its object's and must be
    /// above `confirmed_rv` — or equal to it when the last thing applied was
    /// an event of that revision: one etcd transaction can change several
    /// keys at one revision (a lease's expiry deletes every Event attached
    /// to it at once), and upstream sends them one after another, before
    /// any bookmark. The change must fit the current state.
    pub fn apply(&mut self, typ: EventType, object: CachedObject, now: Instant) -> Result<(), StoreError> {
        let rv = object.resource_version();
        let confirmed = self.view.head.rv;
        if rv < confirmed || (rv == confirmed && !self.revision_open) {
            return Err(StoreError::OutOfOrder { rv, confirmed });
        }
        // A checkpoint is a completed revision's state: taken before the next revision's first event.
        if rv > confirmed && self.since_checkpoint >= self.shared.config.checkpoint_every {
            self.since_checkpoint = 0;
            self.view.checkpoints.push_back(self.view.head.clone());
        }
        let object = Arc::new(object);
        let key = object.key().clone();
        let head = Arc::make_mut(&mut self.view.head);
        // One descent: the change returns what it replaced.
        let prev = match typ {
            EventType::Deleted => head.take(&key),
            _ => head.put(object.clone()),
        };
        let fits = matches!((typ, &prev), (EventType::Added, None) | (EventType::Modified | EventType::Deleted, Some(_)));
        if !fits {
            match &prev {
                Some(p) => head.put(p.clone()),
                None => head.take(&key),
            };
            return Err(StoreError::Inconsistent { typ, key: key.to_string() });
        }
        head.rv = rv;
        self.revision_open = true;
        let event = Arc::new(Event { typ, object, prev, at: now });
        debug_assert!(self.view.log.back().is_none_or(|last| last.rv() <= rv), "the log's revisions never decrease");
        self.view.log.push_back(event);
        self.since_checkpoint += 1;
        self.trim_to(self.shared.event_limit());
        Ok(())
    }

    /// Upstream says every event up to `rv` has been sent.
    pub fn bookmark(&mut self, rv: u64) -> Result<(), StoreError> {
        let confirmed = self.view.head.rv;
        if rv < confirmed {
            return Err(StoreError::OutOfOrder { rv, confirmed });
        }
        if rv > confirmed {
            Arc::make_mut(&mut self.view.head).rv = rv;
        }
        self.revision_open = false;
        Ok(())
    }

    /// Replaces everything with a re-list taken at `rv`. The window restarts
    /// at `rv` (what happened between the old state and the list is
    /// unknown, so no older revision can be served exactly) and, if the list
    /// differs from the state held, the epoch changes (every watcher ends,
    /// as kube-apiserver ends its watchers when its cache re-lists). A list
    /// that holds exactly what the store did (a quiet resource re-listed
    /// after a compaction) keeps the epoch: its watchers go on from `rv`,
    /// having missed no change of state (at most an object created and
    /// deleted between two revisions no client can ask for any more).
    /// Returns the difference as events.
    pub fn replace(&mut self, objects: Vec<CachedObject>, rv: u64) -> Vec<Event> {
        let now = Instant::now();
        let fresh = Snapshot::build(rv, objects.into_iter().map(Arc::new), &self.view.head);
        let diff = self
            .view
            .head
            .objects()
            .diff(fresh.objects())
            .map(|item| match item {
                DiffItem::Add(_, o) => Event { typ: EventType::Added, object: o.clone(), prev: None, at: now },
                DiffItem::Update { old: (_, prev), new: (_, o) } => {
                    Event { typ: EventType::Modified, object: o.clone(), prev: Some(prev.clone()), at: now }
                }
                DiffItem::Remove(_, o) => Event { typ: EventType::Deleted, object: o.clone(), prev: Some(o.clone()), at: now },
            })
            .collect::<Vec<Event>>();
        if diff.is_empty() && rv >= self.view.head.rv {
            self.view.popped += self.view.log.len() as u64;
            self.view.log = Default::default();
            self.view.checkpoints = Default::default();
            self.view.oldest_rv = rv;
            Arc::make_mut(&mut self.view.head).rv = rv;
            self.since_checkpoint = 0;
            self.revision_open = false;
            return diff;
        }
        self.view = View {
            head: Arc::new(fresh),
            log: Default::default(),
            oldest_rv: rv,
            checkpoints: Default::default(),
            epoch: self.view.epoch + 1,
            popped: 0,
        };
        self.since_checkpoint = 0;
        self.revision_open = false;
        diff
    }

    /// Drops logged events older than the configured age.
    pub fn expire(&mut self, now: Instant) {
        let max_age = self.shared.config.max_age;
        while self.view.log.front().is_some_and(|e| now.saturating_duration_since(e.at) > max_age) {
            self.pop_oldest();
        }
    }

    /// Keeps at most `max` events.
    fn trim_to(&mut self, max: usize) {
        while self.view.log.len() > max {
            self.pop_oldest();
        }
    }

    /// Drops the oldest revision's events (all of them: the state at a
    /// revision is whole or not held).
    fn pop_oldest(&mut self) {
        if let Some(e) = self.view.log.pop_front() {
            self.view.popped += 1;
            while self.view.log.front().is_some_and(|next| next.rv() == e.rv()) {
                self.view.log.pop_front();
                self.view.popped += 1;
            }
            self.view.oldest_rv = e.rv();
            while self.view.checkpoints.front().is_some_and(|c| c.rv < self.view.oldest_rv) {
                self.view.checkpoints.pop_front();
            }
        }
    }

    /// Compacts the log to revisions `>= rv` (never past `confirmed_rv`).
    pub fn compact(&mut self, rv: u64) {
        let rv = rv.min(self.view.head.rv);
        while self.view.log.front().is_some_and(|e| e.rv() <= rv) {
            self.pop_oldest();
        }
        self.view.oldest_rv = self.view.oldest_rv.max(rv);
    }

    /// Makes the working view visible to readers and wakes subscribers;
    /// first trims the log to the run-time bound, so a lowered bound takes
    /// effect on a resource that has no events too.
    pub fn publish(&mut self) {
        self.trim_to(self.shared.event_limit());
        let (v, confirmed) = (&self.view, self.view.head.rv);
        debug_assert!(v.log.front().is_none_or(|e| e.rv() >= v.oldest_rv), "no logged event is below oldest_rv");
        debug_assert!(v.log.back().is_none_or(|e| e.rv() <= confirmed), "the log ends at most at confirmed_rv");
        self.shared.view.store(Arc::new(self.view.clone()));
        self.shared.published.send_replace(self.view.head.rv);
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn pod(name: &str, rv: u64) -> CachedObject {
        let json = format!(r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}}}}"#);
        CachedObject::parse(Bytes::from(json), &[]).expect("a valid object")
    }

    #[test]
    fn a_lowered_event_limit_trims_at_the_next_publish_and_too_old_is_refused_not_skipped() {
        let (mut writer, reader) = StoreWriter::new(StoreConfig { max_events: 10, ..StoreConfig::default() });
        writer.replace(vec![pod("a", 1)], 1);
        let now = Instant::now();
        for rv in 2..=9 {
            writer.apply(EventType::Modified, pod("a", rv), now).unwrap();
        }
        writer.publish();
        assert_eq!((reader.view().log_len(), reader.view().oldest_rv()), (8, 1));
        // Lowered past the configured bound's reach: no event yet, the next publish trims.
        reader.set_event_limit(3);
        assert_eq!((reader.event_limit(), reader.max_events()), (3, 10));
        writer.publish();
        let view = reader.view();
        assert_eq!((view.log_len(), view.oldest_rv()), (3, 6));
        // What fell out is refused as too old; what is left is exact.
        assert_eq!(view.events_after(5).unwrap_err(), StoreError::TooOld { requested: 5, oldest: 6 });
        assert_eq!(view.events_after(6).unwrap().iter().map(|e| e.rv()).collect::<Vec<_>>(), [7, 8, 9]);
        assert_eq!(view.snapshot_at(6).unwrap().get("ns/a").unwrap().resource_version(), 6);
        // Raised again: capped at the configured bound; the log grows back.
        reader.set_event_limit(usize::MAX);
        assert_eq!(reader.event_limit(), 10);
        for rv in 10..=30 {
            writer.apply(EventType::Modified, pod("a", rv), now).unwrap();
        }
        writer.publish();
        assert_eq!(reader.view().log_len(), 10);
    }

    #[test]
    fn a_revision_may_carry_several_events_until_a_bookmark_closes_it() {
        let (mut writer, reader) = StoreWriter::new(StoreConfig { max_events: 10, checkpoint_every: 1, ..StoreConfig::default() });
        writer.replace(vec![pod("a", 2), pod("b", 3), pod("c", 4)], 4);
        let now = Instant::now();
        // Re-listed at 4: nothing more of 4 can come.
        assert_eq!(writer.apply(EventType::Modified, pod("c", 4), now), Err(StoreError::OutOfOrder { rv: 4, confirmed: 4 }));
        // A lease expires: a and b deleted in one transaction, at 5; then c changes at 6.
        writer.apply(EventType::Deleted, pod("a", 5), now).unwrap();
        writer.apply(EventType::Deleted, pod("b", 5), now).unwrap();
        writer.apply(EventType::Modified, pod("c", 6), now).unwrap();
        writer.publish();
        let view = reader.view();
        assert_eq!(view.events_after(4).unwrap().iter().map(|e| e.rv()).collect::<Vec<_>>(), [5, 5, 6]);
        assert_eq!(view.events_after(5).unwrap().iter().map(|e| e.rv()).collect::<Vec<_>>(), [6]);
        let names = |rv| view.snapshot_at(rv).unwrap().objects().keys().map(|k| k.to_string()).collect::<Vec<_>>();
        assert_eq!(names(4), ["ns/a", "ns/b", "ns/c"]);
        assert_eq!(names(5), ["ns/c"]);
        // A bookmark at 6 closes it.
        writer.bookmark(6).unwrap();
        assert_eq!(writer.apply(EventType::Modified, pod("c", 6), now), Err(StoreError::OutOfOrder { rv: 6, confirmed: 6 }));
        // The oldest revision leaves the window whole: both of its events, never one.
        reader.set_event_limit(2);
        writer.publish();
        let view = reader.view();
        assert_eq!((view.log_len(), view.oldest_rv()), (1, 5));
        assert_eq!(view.snapshot_at(5).unwrap().objects().keys().map(|k| k.to_string()).collect::<Vec<_>>(), ["ns/c"]);
    }
}

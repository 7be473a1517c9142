//! [`Event`]: one change in the log, with the object before it so the
//! change can be undone (to rebuild an older snapshot) and so a watcher
//! whose selector the object stops matching can be told it went away.

use std::sync::Arc;

use super::object::CachedObject;
use super::snapshot::Snapshot;

/// What happened to the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// It was created.
    Added,
    /// It changed.
    Modified,
    /// It was deleted; the object is its last state at the deletion revision.
    Deleted,
}

/// One change, at the revision of its object.
#[derive(Debug, Clone)]
pub struct Event {
    /// The kind of change.
    pub typ: EventType,
    /// The object after the change (for a deletion: as deleted).
    pub object: Arc<CachedObject>,
    /// The object before the change, if it existed.
    pub prev: Option<Arc<CachedObject>>,
    /// When the writer applied it (for the log's age bound).
    pub(super) at: std::time::Instant,
}

impl Event {
    /// The revision of the change.
    pub fn rv(&self) -> u64 {
        self.object.resource_version()
    }

    /// Reverts the change in `objects`.
    pub(super) fn undo(&self, snapshot: &mut Snapshot) {
        match &self.prev {
            Some(prev) => snapshot.put(prev.clone()),
            None => snapshot.take(self.object.key()),
        };
    }
}

//! [`Snapshot`]: the objects of one resource at one revision, in etcd key
//! order, as a persistent ordered map. Snapshots share structure: deriving
//! one from another costs O(log n) per change and never alters the original,
//! so a reader can walk a snapshot for as long as it likes while the writer
//! moves on.

use std::ops::Bound;
use std::sync::Arc;

use imbl::OrdMap;

use super::object::CachedObject;

/// The objects by key.
pub type Objects = OrdMap<Arc<str>, Arc<CachedObject>>;

/// One resource's objects at one revision.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub(super) rv: u64,
    pub(super) objects: Objects,
}

impl Snapshot {
    /// A snapshot of `objects` at `rv`.
    pub fn new(rv: u64, objects: Objects) -> Self {
        Snapshot { rv, objects }
    }

    /// The revision this snapshot shows.
    pub fn rv(&self) -> u64 {
        self.rv
    }

    /// The number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether there are no objects.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The object under `key`.
    pub fn get(&self, key: &str) -> Option<&Arc<CachedObject>> {
        self.objects.get(key)
    }

    /// Every object, in key order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<CachedObject>> {
        self.objects.values()
    }

    /// Objects with keys after `start` (exclusive), in key order: the
    /// continuation of a page that ended at `start`.
    pub fn after<'a>(&'a self, start: &'a str) -> impl Iterator<Item = &'a Arc<CachedObject>> + 'a {
        self.objects.range::<_, str>((Bound::Excluded(start), Bound::Unbounded)).map(|(_, v)| v)
    }

    /// Objects with keys from `start` (inclusive), in key order.
    pub fn from<'a>(&'a self, start: &'a str) -> impl Iterator<Item = &'a Arc<CachedObject>> + 'a {
        self.objects.range::<_, str>((Bound::Included(start), Bound::Unbounded)).map(|(_, v)| v)
    }

    /// The objects themselves (to compare or derive snapshots).
    pub fn objects(&self) -> &Objects {
        &self.objects
    }
}

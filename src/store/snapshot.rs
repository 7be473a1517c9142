//! [`Snapshot`]: the objects of one resource at one revision, in etcd key
//! order, as a persistent ordered map, with persistent secondary indexes.
//! Snapshots share structure: deriving one from another costs O(log n) per
//! change and never alters the original, so a reader can walk a snapshot
//! for as long as it likes while the writer moves on — and every revision
//! keeps its indexes at the same cost.
//!
//! Indexes map an [`IndexKey`] — a label `key=value`, or the value of one of
//! the indexed fields (a pod's `spec.nodeName`) — to the keys of the objects
//! that have it, in key order. Invariant: for every object and every index
//! key it has, the object's key is in that key's set, and nothing else is;
//! every change goes through [`Snapshot::put`] and [`Snapshot::take`], which
//! keep it so (touching the indexes only when a label or indexed field
//! changed: an update of anything else costs the map write alone).

use std::ops::Bound;
use std::sync::Arc;

use imbl::{OrdMap, OrdSet};

use super::object::CachedObject;

/// The objects by key.
pub type Objects = OrdMap<Arc<str>, Arc<CachedObject>>;

/// What a secondary index is keyed by.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IndexKey {
    /// The value of the `i`-th indexed field (an absent field has empty text).
    Field(u8, Arc<str>),
    /// A label: key and value.
    Label(Arc<str>, Arc<str>),
}

/// Index keys to the keys of the objects that have them.
type Index = OrdMap<IndexKey, OrdSet<Arc<str>>>;

/// One resource's objects at one revision.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub(super) rv: u64,
    objects: Objects,
    index: Index,
    /// Positions (among the object's parsed fields) of the indexed fields.
    indexed_fields: Arc<[usize]>,
    /// Object keys held by the index, over all its sets.
    index_entries: usize,
    /// The objects' bytes, as upstream sent them.
    bytes: usize,
}

/// An object's index entries, borrowed: `(field position or none, key or field, value)`.
type Entry<'a> = (Option<u8>, &'a str, &'a str);

impl Snapshot {
    /// An empty snapshot at revision 0 that indexes labels and the fields at `indexed_fields`.
    pub fn empty(indexed_fields: Arc<[usize]>) -> Snapshot {
        Snapshot { indexed_fields, ..Snapshot::default() }
    }

    /// A snapshot of `objects` at `rv`, with the indexes of `like`.
    pub fn build(rv: u64, objects: impl IntoIterator<Item = Arc<CachedObject>>, like: &Snapshot) -> Snapshot {
        let mut s = Snapshot { rv, ..Snapshot::empty(like.indexed_fields.clone()) };
        for o in objects {
            s.put(o);
        }
        s
    }

    /// The revision this snapshot shows.
    pub fn rv(&self) -> u64 {
        self.rv
    }

    /// The number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// The objects' bytes, as upstream sent them (JSON): what a list of them all costs upstream to send.
    pub fn bytes(&self) -> usize {
        self.bytes
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

    /// The position among the indexed fields of the object field at `field`, if it is indexed.
    pub(crate) fn indexed_field(&self, field: usize) -> Option<u8> {
        self.indexed_fields.iter().position(|f| *f == field).and_then(|i| u8::try_from(i).ok())
    }

    /// The keys of the objects that have `key`, in key order (`None`: none has it).
    pub fn indexed(&self, key: &IndexKey) -> Option<&OrdSet<Arc<str>>> {
        self.index.get(key)
    }

    /// Every index key with the keys of the objects that have it, in order.
    #[cfg(test)]
    pub(crate) fn index_sets(&self) -> impl Iterator<Item = (&IndexKey, &OrdSet<Arc<str>>)> {
        self.index.iter()
    }

    /// Object keys held by the indexes.
    pub(crate) fn index_entries(&self) -> usize {
        self.index_entries
    }

    /// Stores `o` under its key; returns what it replaced.
    pub fn put(&mut self, o: Arc<CachedObject>) -> Option<Arc<CachedObject>> {
        let key = o.key().clone();
        let prev = self.objects.insert(key.clone(), o.clone());
        self.bytes = self.bytes + o.bytes().len() - prev.as_ref().map_or(0, |p| p.bytes().len());
        self.reindex(&key, prev.as_deref(), Some(&o));
        prev
    }

    /// Removes the object under `key`; returns it.
    pub fn take(&mut self, key: &Arc<str>) -> Option<Arc<CachedObject>> {
        let prev = self.objects.remove(key);
        if let Some(p) = &prev {
            self.bytes -= p.bytes().len();
            self.reindex(key, Some(p), None);
        }
        prev
    }

    fn entries<'a>(&self, o: Option<&'a CachedObject>) -> Vec<Entry<'a>> {
        let Some(o) = o else { return Vec::new() };
        let fields = self.indexed_fields.iter().enumerate().map(|(i, f)| (u8::try_from(i).ok(), "", o.field(*f)));
        o.labels().map(|(k, v)| (None, k, v)).chain(fields).collect()
    }

    /// Moves `key` from the entries of `before` to those of `after`.
    fn reindex(&mut self, key: &Arc<str>, before: Option<&CachedObject>, after: Option<&CachedObject>) {
        let (old, new) = (self.entries(before), self.entries(after));
        if old == new {
            return;
        }
        for e in old.iter().filter(|e| !new.contains(e)) {
            let k = index_key(*e);
            if let Some(set) = self.index.get_mut(&k) {
                set.remove(key);
                self.index_entries -= 1;
                if set.is_empty() {
                    self.index.remove(&k);
                }
            }
        }
        for e in new.iter().filter(|e| !old.contains(e)) {
            self.index.entry(index_key(*e)).or_default().insert(key.clone());
            self.index_entries += 1;
        }
    }
}

fn index_key((field, k, v): Entry<'_>) -> IndexKey {
    match field {
        Some(i) => IndexKey::Field(i, v.into()),
        None => IndexKey::Label(k.into(), v.into()),
    }
}

/// Two snapshots are equal when they hold the same revision of the same objects.
impl PartialEq for Snapshot {
    fn eq(&self, other: &Self) -> bool {
        self.rv == other.rv && self.objects == other.objects
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn pod(name: &str, rv: u64, node: &str, tier: &str) -> Arc<CachedObject> {
        let json = format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}","labels":{{"app":"a","tier":"{tier}"}}}},"spec":{{"nodeName":"{node}"}}}}"#
        );
        Arc::new(CachedObject::parse(Bytes::from(json), &["spec.nodeName"]).unwrap())
    }

    fn keys(s: &Snapshot, k: &IndexKey) -> Vec<String> {
        s.indexed(k).map(|set| set.iter().map(|k| k.to_string()).collect()).unwrap_or_default()
    }

    #[test]
    fn indexes_follow_every_change_and_old_snapshots_keep_theirs() {
        let mut s = Snapshot::empty(Arc::from([0usize]));
        s.put(pod("b", 1, "n1", "web"));
        s.put(pod("a", 2, "n1", "db"));
        let node = |n: &str| IndexKey::Field(0, n.into());
        let tier = |t: &str| IndexKey::Label("tier".into(), t.into());
        assert_eq!(keys(&s, &node("n1")), ["ns/a", "ns/b"]);
        let before = s.clone();
        s.put(pod("a", 3, "n2", "db"));
        s.put(pod("b", 4, "n1", "db"));
        s.take(&Arc::from("ns/a"));
        assert_eq!((keys(&s, &node("n1")), keys(&s, &node("n2"))), (vec!["ns/b".to_string()], vec![]));
        assert_eq!((keys(&s, &tier("db")), keys(&s, &tier("web"))), (vec!["ns/b".to_string()], vec![]));
        assert_eq!(s.index_entries(), 3, "app, tier and node of the one object left");
        assert_eq!(keys(&before, &node("n1")), ["ns/a", "ns/b"], "the older snapshot is untouched");
        assert_eq!(keys(&before, &tier("web")), ["ns/b"]);
        let rebuilt = Snapshot::build(4, s.iter().cloned(), &s);
        assert_eq!((rebuilt.index_entries(), keys(&rebuilt, &tier("db"))), (3, vec!["ns/b".to_string()]));
    }
}

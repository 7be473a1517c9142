//! The simulated etcd: one global revision counter, every version of every
//! key since the last compaction, and the event history watches replay from
//! (`history`); the apiserver's rules for what a write stores are
//! `strategy`'s.
//!
//! Invariants: `oldest <= rev`; every key's versions are in strictly
//! increasing revision order; the history holds every event with revision in
//! `(oldest, rev]`, in order; a write commits at one revision, its versions
//! and its events together. Pods are indexed by node, as the apiserver's
//! cache indexes them: every node a kept version of a pod names has the
//! pod's key (a key may outlive its version there; readers check the
//! version), so a kubelet's list reads its node's pods, not every pod.

mod history;
mod strategy;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use apimachinery::watch::EventType;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::object::Obj;
use crate::resources::{Registry, ResourceId};
use apimachinery::status::ApiError;
use history::History;

pub use history::Event;
pub use strategy::Preconditions;

#[derive(Debug, Clone)]
struct Version {
    rv: u64,
    obj: Option<Arc<Obj>>,
}

/// What a delete request did.
#[derive(Debug, Clone)]
pub enum Deleted {
    /// The object is gone; this was its last state.
    Gone(Arc<Obj>),
    /// The object has finalizers: it is marked for deletion and still exists.
    Marked(Arc<Obj>),
}

/// What [`Db::held`] counts.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    /// Object versions kept.
    pub versions: usize,
    /// Their JSON bytes.
    pub json_bytes: usize,
    /// Events in history.
    pub events: usize,
}

/// The simulated storage. Guarded by one `RwLock` in `State`.
#[derive(Debug)]
pub struct Db {
    registry: Arc<Registry>,
    rev: u64,
    oldest: u64,
    tables: Vec<BTreeMap<String, Vec<Version>>>,
    history: History,
    /// Pods' keys by the node their versions name.
    on_node: BTreeMap<String, BTreeSet<String>>,
    pods: ResourceId,
    /// Where `spec.nodeName` is among pods' selectable fields.
    node_field: Option<usize>,
    /// The revision the apiserver's watch caches started at when it last
    /// restarted: a watch of a watch-cached resource from before it gets 410
    /// (etcd, which serves events, still has it unless compacted).
    watch_floor: u64,
}

impl Db {
    /// An empty store at revision `start` (etcd starts at 1).
    pub fn new(registry: Arc<Registry>, start: u64, watch_buffer: usize) -> Self {
        let tables = registry.iter().map(|_| BTreeMap::new()).collect();
        let history = History::new(registry.iter().count(), start, watch_buffer);
        let pods = registry.builtin("", "pods");
        let node_field = registry.get(pods).fields.labels.iter().position(|l| l.name == "spec.nodeName");
        Self { registry, rev: start, oldest: start, tables, history, on_node: BTreeMap::new(), pods, node_field, watch_floor: start }
    }

    /// The revision `res`'s watch cache has reached: the newest of its last
    /// event and its last consistent read. A quiet resource's cache does not
    /// move with other resources' writes (measured on kube-apiserver 1.36:
    /// only a consistent read of the resource makes its next bookmark carry
    /// the current revision).
    pub fn cache_rv(&self, res: ResourceId) -> u64 {
        self.history.cache_rv(res)
    }

    /// A fault: the next `n` events of `res` are committed and listed, but
    /// open watches are not told of them, as a cache that missed an event
    /// would not be (watches started later from an older revision replay them).
    pub fn unannounce(&self, res: ResourceId, n: u64) {
        self.history.unannounce(res, n);
    }

    /// A consistent read of `res`: its watch cache catches up with the current revision.
    pub fn progress(&self, res: ResourceId) {
        self.history.progress(res, self.rev);
    }

    /// The resource table.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The current revision.
    pub fn rev(&self) -> u64 {
        self.rev
    }

    /// The oldest revision still readable (the compaction revision).
    pub fn oldest(&self) -> u64 {
        self.oldest
    }

    /// What the store holds: object versions kept (the live ones and those
    /// history still needs, each once — history events share them) and
    /// their JSON bytes; and the events of history.
    pub fn held(&self) -> Held {
        let kept = self.tables.iter().flat_map(|t| t.values().flatten()).filter_map(|v| v.obj.as_ref());
        let (versions, json_bytes) = kept.fold((0, 0), |(n, b), o| (n + 1, b + o.item.len()));
        Held { versions, json_bytes, events: self.history.count() }
    }

    /// A receiver of every event committed from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.history.subscribe()
    }

    /// The object at `key` as of revision `at`.
    pub fn get(&self, res: ResourceId, key: &str, at: u64) -> Option<&Arc<Obj>> {
        version_at(self.tables[res].get(key)?, at)
    }

    /// Notes a pod's node in the index.
    fn index(&mut self, res: ResourceId, key: &str, obj: &Obj) {
        let Some(node) = self.node_field.filter(|_| res == self.pods).map(|i| &obj.fields[i]).filter(|n| !n.is_empty()) else { return };
        self.on_node.entry(node.clone()).or_default().insert(key.to_string());
    }

    /// The pods on `node` whose key starts with `prefix` and is `>= start`,
    /// in key order, as of `at` — with their versions then, which the
    /// caller still checks (a pod may have been elsewhere at `at`).
    pub fn range_on_node<'a>(
        &'a self,
        node: &str,
        prefix: &'a str,
        start: &str,
        at: u64,
    ) -> impl Iterator<Item = (&'a String, &'a Arc<Obj>)> + 'a {
        let from = if start > prefix { start.to_string() } else { prefix.to_string() };
        let pods = &self.tables[self.pods];
        self.on_node
            .get(node)
            .into_iter()
            .flat_map(move |keys| keys.range(from.clone()..))
            .take_while(move |k| k.starts_with(prefix))
            .filter_map(move |k| pods.get_key_value(k).and_then(|(k, vs)| version_at(vs, at).map(|o| (k, o))))
    }

    /// Objects whose key starts with `prefix` and is `>= start`, in key order, as of `at`.
    pub fn range<'a>(
        &'a self,
        res: ResourceId,
        prefix: &'a str,
        start: &str,
        at: u64,
    ) -> impl Iterator<Item = (&'a String, &'a Arc<Obj>)> + 'a {
        let from = if start > prefix { start.to_string() } else { prefix.to_string() };
        self.tables[res]
            .range(from..)
            .take_while(move |(k, _)| k.starts_with(prefix))
            .filter_map(move |(k, vs)| version_at(vs, at).map(|o| (k, o)))
    }

    /// Events of `res` with revision `> after`, or `None` when `after` is
    /// older than the compaction revision.
    pub fn events_after(&self, res: ResourceId, after: u64) -> Option<Vec<Arc<Event>>> {
        if after < self.oldest {
            return None;
        }
        Some(self.history.after(res, after))
    }

    /// The oldest revision a watch of `res` may start after: what etcd
    /// still holds, and for a watch-cached resource no earlier than where
    /// the apiserver's cache started ([`Db::restart_watch_caches`]).
    pub fn watch_oldest(&self, res: ResourceId) -> u64 {
        match self.registry.get(res).watch_cached {
            true => self.oldest.max(self.watch_floor),
            false => self.oldest,
        }
    }

    /// The apiserver restarted: its watch caches start at the current revision.
    pub fn restart_watch_caches(&mut self) {
        self.watch_floor = self.rev;
    }

    /// Drops history up to `to` (clamped to the current revision): reads
    /// below it get 410 from now on.
    pub fn compact(&mut self, to: u64) {
        let to = to.min(self.rev);
        if to <= self.oldest {
            return;
        }
        self.oldest = to;
        self.history.compact(to);
        for table in &mut self.tables {
            table.retain(|_, versions| {
                // Keep the newest version at or below `to` (the state at `to`) and all later ones.
                let keep_from = versions.partition_point(|v| v.rv <= to).saturating_sub(1);
                versions.drain(..keep_from);
                !(versions.len() == 1 && versions[0].obj.is_none())
            });
        }
    }

    /// A copy of every live object, for a restart that renumbers revisions.
    pub fn live_objects(&self) -> Vec<(ResourceId, Value)> {
        let mut out = Vec::new();
        for (res, table) in self.tables.iter().enumerate() {
            for versions in table.values() {
                if let Some(Some(o)) = versions.last().map(|v| &v.obj) {
                    out.push((res, o.to_value()));
                }
            }
        }
        out
    }

    fn commit(&mut self, res: ResourceId, key: String, typ: EventType, obj: Arc<Obj>, prev: Option<Arc<Obj>>) {
        debug_assert_eq!(obj.rv, self.rev + 1);
        self.rev += 1;
        self.record(res, key, typ, obj, prev);
    }

    /// Records one change at the current revision (several of one
    /// transaction share it) and tells the watchers.
    fn record(&mut self, res: ResourceId, key: String, typ: EventType, obj: Arc<Obj>, prev: Option<Arc<Obj>>) {
        self.index(res, &key, &obj);
        let stored = if typ == EventType::Deleted { None } else { Some(obj.clone()) };
        self.tables[res].entry(key).or_default().push(Version { rv: self.rev, obj: stored });
        self.history.record(Arc::new(Event { rv: self.rev, res, typ, obj, prev }));
    }

    /// A lease's expiry: every object of `res` in `namespace` deleted in one
    /// transaction, at one revision, as etcd deletes every key attached to
    /// an expired lease (kube-apiserver attaches the Events it stores within
    /// a minute to one lease, `--lease-reuse-duration-seconds`). Watchers
    /// get one DELETED event a key, all at that revision. Returns it, and
    /// how many objects went.
    pub fn expire(&mut self, res: ResourceId, namespace: &str) -> (u64, usize) {
        let registry = self.registry.clone();
        let rt = registry.get(res);
        let prefix = rt.prefix(Some(namespace));
        let live: Vec<(String, Arc<Obj>)> = self.range(res, &prefix, &prefix, self.rev).map(|(k, o)| (k.clone(), o.clone())).collect();
        if live.is_empty() {
            return (self.rev, 0);
        }
        self.rev += 1;
        for (key, existing) in &live {
            let gone = Arc::new(existing.at_revision(rt, self.rev));
            self.record(res, key.clone(), EventType::Deleted, gone, Some(existing.clone()));
        }
        (self.rev, live.len())
    }

    fn current(&self, res: ResourceId, key: &str) -> Option<Arc<Obj>> {
        self.get(res, key, self.rev).cloned()
    }

    /// Creates an object (POST). `now` is the RFC 3339 creation time.
    pub fn create(&mut self, res: ResourceId, namespace: &str, body: Value, now: &str) -> Result<Arc<Obj>, ApiError> {
        let registry = self.registry.clone();
        let rt = registry.get(res);
        let (name, v) = strategy::before_create(rt, namespace, body)?;
        if rt.namespaced && self.current(self.registry.builtin("", "namespaces"), namespace).is_none() {
            return Err(ApiError::namespace_not_found(namespace));
        }
        let key = rt.key(namespace, &name);
        if self.current(res, &key).is_some() {
            return Err(ApiError::already_exists(rt, &name));
        }
        let obj = Arc::new(Obj::from_value(rt, strategy::created(rt, v, self.rev + 1, now)));
        self.commit(res, key, EventType::Added, obj.clone(), None);
        Ok(obj)
    }

    /// Stores `objects` with their metadata as it is, all in one new
    /// revision and without history (etcd restored from a snapshot).
    pub fn restore(&mut self, objects: Vec<(ResourceId, Value)>) {
        let registry = self.registry.clone();
        self.rev += 1;
        for (res, mut v) in objects {
            let rt = registry.get(res);
            strategy::set_resource_version(&mut v, self.rev);
            let obj = Arc::new(Obj::from_value(rt, v));
            let key = rt.key(&obj.namespace, &obj.name);
            self.index(res, &key, &obj);
            self.tables[res].insert(key, vec![Version { rv: self.rev, obj: Some(obj) }]);
        }
        self.history.restart(self.rev);
        self.oldest = self.rev;
    }

    /// Replaces an object (PUT, and the last step of PATCH). `status_only`
    /// writes the `status` subresource. A no-op update commits nothing.
    pub fn update(&mut self, res: ResourceId, namespace: &str, name: &str, body: Value, status_only: bool) -> Result<Arc<Obj>, ApiError> {
        let registry = self.registry.clone();
        let rt = registry.get(res);
        let v = strategy::require_object(rt, body)?;
        let key = rt.key(namespace, name);
        let existing = self.current(res, &key).ok_or_else(|| ApiError::not_found(rt, name))?;
        let mut v = strategy::before_update(rt, namespace, name, v, &existing, status_only)?;
        if Obj::from_value(rt, v.clone()).item == existing.item {
            return Ok(existing);
        }
        strategy::set_resource_version(&mut v, self.rev + 1);
        let obj = Arc::new(Obj::from_value(rt, v));
        if obj.deleting && !obj.has_finalizers {
            self.commit(res, key, EventType::Deleted, obj.clone(), Some(existing));
        } else {
            self.commit(res, key, EventType::Modified, obj.clone(), Some(existing));
        }
        Ok(obj)
    }

    /// Deletes an object, in two phases when it has finalizers.
    pub fn delete(&mut self, res: ResourceId, namespace: &str, name: &str, pre: &Preconditions, now: &str) -> Result<Deleted, ApiError> {
        let registry = self.registry.clone();
        let rt = registry.get(res);
        let key = rt.key(namespace, name);
        let existing = self.current(res, &key).ok_or_else(|| ApiError::not_found(rt, name))?;
        strategy::check_preconditions(rt, name, pre, &existing)?;
        if existing.has_finalizers {
            if existing.deleting {
                return Ok(Deleted::Marked(existing));
            }
            let obj = Arc::new(Obj::from_value(rt, strategy::marked_for_deletion(&existing, self.rev + 1, now)));
            self.commit(res, key, EventType::Modified, obj.clone(), Some(existing));
            return Ok(Deleted::Marked(obj));
        }
        let gone = Arc::new(existing.at_revision(rt, self.rev + 1));
        self.commit(res, key, EventType::Deleted, gone.clone(), Some(existing));
        Ok(Deleted::Gone(gone))
    }
}

fn version_at(versions: &[Version], at: u64) -> Option<&Arc<Obj>> {
    let i = versions.partition_point(|v| v.rv <= at);
    versions.get(i.checked_sub(1)?)?.obj.as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn db() -> (Db, ResourceId) {
        let reg = Arc::new(Registry::new(&[]).unwrap());
        let mut db = Db::new(reg.clone(), 1, 16);
        db.create(reg.builtin("", "namespaces"), "", json!({"metadata": {"name": "ns"}}), "t").unwrap();
        (db, reg.builtin("", "configmaps"))
    }

    #[test]
    fn a_nodes_pods_are_read_through_the_index_as_of_any_revision() {
        let (mut db, _) = db();
        let pods = db.registry().builtin("", "pods");
        let pod = |name: &str, node: &str| json!({"metadata": {"name": name}, "spec": {"nodeName": node}});
        for (name, node) in [("a", "n1"), ("b", "n2"), ("c", "n1"), ("d", "")] {
            db.create(pods, "ns", pod(name, node), "t").unwrap();
        }
        let before = db.rev();
        // `c` moves to n2; `a` goes.
        db.update(pods, "ns", "c", pod("c", "n2"), false).unwrap();
        db.delete(pods, "ns", "a", &Preconditions::default(), "t").unwrap();
        let on = |db: &Db, node: &str, at: u64| -> Vec<String> {
            db.range_on_node(node, "ns/", "ns/", at).filter(|(_, o)| o.fields[0] == node).map(|(k, _)| k.clone()).collect()
        };
        assert_eq!(on(&db, "n1", before), ["ns/a", "ns/c"]);
        assert_eq!(on(&db, "n2", before), ["ns/b"]);
        assert_eq!(on(&db, "n1", db.rev()), Vec::<String>::new());
        assert_eq!(on(&db, "n2", db.rev()), ["ns/b", "ns/c"]);
        assert_eq!(db.range_on_node("n2", "ns/", "ns/c", db.rev()).count(), 1, "from a start key");
        assert_eq!(db.range_on_node("n9", "ns/", "ns/", db.rev()).count(), 0);
    }

    #[test]
    fn every_write_bumps_the_revision_and_old_revisions_stay_readable() {
        let (mut db, cm) = db();
        let a = db.create(cm, "ns", json!({"metadata": {"name": "a"}, "data": {"k": "1"}}), "t").unwrap();
        let b = db.update(cm, "ns", "a", json!({"metadata": {"name": "a"}, "data": {"k": "2"}}), false).unwrap();
        assert_eq!(b.rv, a.rv + 1);
        assert_eq!(db.get(cm, "ns/a", a.rv).unwrap().item, a.item);
        db.delete(cm, "ns", "a", &Preconditions::default(), "t").unwrap();
        assert!(db.get(cm, "ns/a", db.rev()).is_none());
        assert_eq!(db.get(cm, "ns/a", b.rv).unwrap().item, b.item);
    }

    #[test]
    fn stale_updates_conflict_and_noop_updates_commit_nothing() {
        let (mut db, cm) = db();
        let a = db.create(cm, "ns", json!({"metadata": {"name": "a"}, "data": {"k": "1"}}), "t").unwrap();
        let rev = db.rev();
        let same = db.update(cm, "ns", "a", json!({"metadata": {"name": "a"}, "data": {"k": "1"}}), false).unwrap();
        assert_eq!((same.rv, db.rev()), (a.rv, rev));
        let err = db.update(cm, "ns", "a", json!({"metadata": {"name": "a", "resourceVersion": "1"}, "data": {}}), false).unwrap_err();
        assert_eq!(err.code, 409);
    }

    #[test]
    fn finalizers_make_deletion_two_phase() {
        let (mut db, cm) = db();
        db.create(cm, "ns", json!({"metadata": {"name": "a", "finalizers": ["x/y"]}}), "t").unwrap();
        let Deleted::Marked(marked) = db.delete(cm, "ns", "a", &Preconditions::default(), "now").unwrap() else { panic!("not marked") };
        assert!(marked.deleting);
        let mut v = marked.to_value();
        v["metadata"]["finalizers"] = json!([]);
        db.update(cm, "ns", "a", v, false).unwrap();
        assert!(db.get(cm, "ns/a", db.rev()).is_none());
        let events = db.events_after(cm, db.oldest()).unwrap();
        let types: Vec<_> = events.iter().map(|e| e.typ).collect();
        assert_eq!(types, [EventType::Added, EventType::Modified, EventType::Deleted]);
    }

    #[test]
    fn compaction_keeps_the_state_at_the_compaction_revision() {
        let (mut db, cm) = db();
        let a = db.create(cm, "ns", json!({"metadata": {"name": "a"}}), "t").unwrap();
        db.create(cm, "ns", json!({"metadata": {"name": "b"}}), "t").unwrap();
        db.delete(cm, "ns", "b", &Preconditions::default(), "t").unwrap();
        let at = db.rev();
        let a2 = db.update(cm, "ns", "a", json!({"metadata": {"name": "a"}, "data": {"x": "y"}}), false).unwrap();
        // The namespace, a twice, b once (its deletion holds no object); five events.
        let held = db.held();
        assert_eq!((held.versions, held.events), (4, 5));
        db.compact(at);
        // The namespace, a at `at` and after it; b is gone; one event after `at`.
        let ns = db.get(db.registry.builtin("", "namespaces"), "ns", at).unwrap();
        let held = db.held();
        assert_eq!((held.versions, held.json_bytes, held.events), (3, ns.item.len() + a.item.len() + a2.item.len(), 1));
        assert_eq!(db.oldest(), at);
        assert_eq!(db.get(cm, "ns/a", at).unwrap().rv, a.rv);
        assert!(db.events_after(cm, at - 1).is_none());
        assert_eq!(db.events_after(cm, at).unwrap().len(), 1);
    }
}

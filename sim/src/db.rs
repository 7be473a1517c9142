//! The simulated etcd plus the apiserver's write rules: one global revision
//! counter, every version of every key since the last compaction, and the
//! event history watches replay from.
//!
//! Invariants: `oldest <= rev`; every key's versions are in strictly
//! increasing revision order; the history holds every event with revision in
//! `(oldest, rev]`, in order; an event is broadcast while the write lock is
//! held, so a watcher that subscribes under the lock sees every later event
//! exactly once.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use apimachinery::watch::EventType;
use serde_json::{Map, Value};
use tokio::sync::broadcast;

use crate::object::Obj;
use crate::resources::{Registry, ResourceId, ResourceType};
use apimachinery::status::{ApiError, FieldError};

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

/// Preconditions of a delete (`DeleteOptions.preconditions`).
#[derive(Debug, Clone, Default)]
pub struct Preconditions {
    /// Required `metadata.uid`.
    pub uid: Option<String>,
    /// Required `metadata.resourceVersion`.
    pub resource_version: Option<String>,
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

/// The simulated storage. Guarded by one `RwLock` in [`crate::Sim`].
#[derive(Debug)]
pub struct Db {
    registry: Arc<Registry>,
    rev: u64,
    oldest: u64,
    tables: Vec<BTreeMap<String, Vec<Version>>>,
    history: VecDeque<Arc<Event>>,
    tx: broadcast::Sender<Arc<Event>>,
    /// Per resource, the revision its watch cache has reached (what its
    /// bookmarks carry): its last event, or the revision of its last
    /// consistent read, which makes the apiserver's cache catch up with etcd.
    cache_rv: Vec<AtomicU64>,
    /// Per resource, how many of its next events watchers are not told of (a fault).
    unannounced: Vec<AtomicU64>,
}

impl Db {
    /// An empty store at revision `start` (etcd starts at 1).
    pub fn new(registry: Arc<Registry>, start: u64, watch_buffer: usize) -> Self {
        let tables = registry.iter().map(|_| BTreeMap::new()).collect();
        let cache_rv = registry.iter().map(|_| AtomicU64::new(start)).collect();
        let unannounced = registry.iter().map(|_| AtomicU64::new(0)).collect();
        let (tx, _) = broadcast::channel(watch_buffer.max(1));
        Self { registry, rev: start, oldest: start, tables, history: VecDeque::new(), tx, cache_rv, unannounced }
    }

    /// The revision `res`'s watch cache has reached: the newest of its last
    /// event and its last consistent read. A quiet resource's cache does not
    /// move with other resources' writes (measured on kube-apiserver 1.36:
    /// only a consistent read of the resource makes its next bookmark carry
    /// the current revision).
    pub fn cache_rv(&self, res: ResourceId) -> u64 {
        self.cache_rv[res].load(Ordering::Relaxed)
    }

    /// A fault: the next `n` events of `res` are committed and listed, but
    /// open watches are not told of them, as a cache that missed an event
    /// would not be (watches started later from an older revision replay them).
    pub fn unannounce(&self, res: ResourceId, n: u64) {
        self.unannounced[res].store(n, Ordering::Relaxed);
    }

    /// A consistent read of `res`: its watch cache catches up with the current revision.
    pub fn progress(&self, res: ResourceId) {
        self.cache_rv[res].fetch_max(self.rev, Ordering::Relaxed);
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
        Held { versions, json_bytes, events: self.history.len() }
    }

    /// A receiver of every event committed from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    /// The object at `key` as of revision `at`.
    pub fn get(&self, res: ResourceId, key: &str, at: u64) -> Option<&Arc<Obj>> {
        version_at(self.tables[res].get(key)?, at)
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
        let start = self.history.partition_point(|e| e.rv <= after);
        Some(self.history.range(start..).filter(|e| e.res == res).cloned().collect())
    }

    /// Drops history up to `to` (clamped to the current revision): reads
    /// below it get 410 from now on.
    pub fn compact(&mut self, to: u64) {
        let to = to.min(self.rev);
        if to <= self.oldest {
            return;
        }
        self.oldest = to;
        while self.history.front().is_some_and(|e| e.rv <= to) {
            self.history.pop_front();
        }
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

    fn commit(&mut self, res: ResourceId, key: String, typ: EventType, obj: Arc<Obj>, prev: Option<Arc<Obj>>) -> Arc<Event> {
        debug_assert_eq!(obj.rv, self.rev + 1);
        self.rev += 1;
        self.record(res, key, typ, obj, prev)
    }

    /// Records one change at the current revision (several of one
    /// transaction share it) and tells the watchers.
    fn record(&mut self, res: ResourceId, key: String, typ: EventType, obj: Arc<Obj>, prev: Option<Arc<Obj>>) -> Arc<Event> {
        let stored = if typ == EventType::Deleted { None } else { Some(obj.clone()) };
        self.tables[res].entry(key).or_default().push(Version { rv: self.rev, obj: stored });
        let event = Arc::new(Event { rv: self.rev, res, typ, obj, prev });
        self.history.push_back(event.clone());
        self.cache_rv[res].fetch_max(self.rev, Ordering::Relaxed);
        let announce = self.unannounced[res].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_err();
        if announce {
            // No receivers is fine: nobody is watching.
            let _ = self.tx.send(event.clone());
        }
        event
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
        let mut v = require_object(rt, body)?;
        let meta = metadata_mut(&mut v);
        let name = match meta.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            Some(n) => n.to_string(),
            None => match meta.get("generateName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
                Some(prefix) => format!("{prefix}{}", random_suffix()),
                None => {
                    return Err(ApiError::invalid(
                        &rt.group,
                        &rt.kind,
                        "",
                        &[FieldError::required("metadata.name", "name or generateName is required")],
                    ));
                }
            },
        };
        if rt.namespaced {
            if let Some(ns) = meta.get("namespace").and_then(Value::as_str).filter(|ns| !ns.is_empty() && *ns != namespace) {
                return Err(ApiError::bad_request(format!(
                    "the namespace of the provided object ({ns}) does not match the namespace sent on the request ({namespace})"
                )));
            }
            meta.insert("namespace".into(), namespace.into());
        } else {
            meta.shift_remove("namespace");
        }
        meta.insert("name".into(), name.clone().into());
        for k in
            ["uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generation"]
        {
            meta.shift_remove(k);
        }
        if rt.namespaced && self.current(self.registry.builtin("", "namespaces"), namespace).is_none() {
            return Err(ApiError::namespace_not_found(namespace));
        }
        let key = rt.key(namespace, &name);
        if self.current(res, &key).is_some() {
            return Err(ApiError::already_exists(rt, &name));
        }
        let meta = metadata_mut(&mut v);
        meta.insert("uid".into(), new_uid().into());
        meta.insert("resourceVersion".into(), (self.rev + 1).to_string().into());
        if v.get("spec").is_some() || !is_builtin_group(&rt.group) {
            metadata_mut(&mut v).insert("generation".into(), 1.into());
        }
        metadata_mut(&mut v).insert("creationTimestamp".into(), now.into());
        if rt.group.is_empty() && rt.plural == "namespaces" {
            // The namespace strategy: active, and finalized by the namespace controller.
            let finalizers = v.pointer_mut("/spec/finalizers").and_then(Value::as_array_mut);
            match finalizers {
                Some(f) if f.iter().any(|f| f == "kubernetes") => {}
                Some(f) => f.push("kubernetes".into()),
                None => {
                    v["spec"] = serde_json::json!({"finalizers": ["kubernetes"]});
                }
            }
            v["status"] = serde_json::json!({"phase": "Active"});
        }
        if rt.group.is_empty() && rt.plural == "secrets" && v.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
            // `SetDefaults_Secret`.
            v["type"] = "Opaque".into();
        }
        let obj = Arc::new(Obj::from_value(rt, v));
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
            metadata_mut(&mut v).insert("resourceVersion".into(), self.rev.to_string().into());
            let obj = Arc::new(Obj::from_value(rt, v));
            let key = rt.key(&obj.namespace, &obj.name);
            self.tables[res].insert(key, vec![Version { rv: self.rev, obj: Some(obj) }]);
        }
        self.history.clear();
        self.oldest = self.rev;
        for c in &self.cache_rv {
            c.store(self.rev, Ordering::Relaxed);
        }
    }

    /// Replaces an object (PUT, and the last step of PATCH). `status_only`
    /// writes the `status` subresource. A no-op update commits nothing.
    pub fn update(&mut self, res: ResourceId, namespace: &str, name: &str, body: Value, status_only: bool) -> Result<Arc<Obj>, ApiError> {
        let registry = self.registry.clone();
        let rt = registry.get(res);
        let mut v = require_object(rt, body)?;
        let key = rt.key(namespace, name);
        let existing = self.current(res, &key).ok_or_else(|| ApiError::not_found(rt, name))?;
        let meta = metadata_mut(&mut v);
        match meta.get("name").and_then(Value::as_str) {
            Some(n) if n != name => {
                return Err(ApiError::bad_request(format!("the name of the object ({n}) does not match the name on the URL ({name})")));
            }
            _ => {}
        }
        if let Some(rv) = meta.get("resourceVersion").and_then(Value::as_str).filter(|rv| !rv.is_empty())
            && rv != existing.rv.to_string()
        {
            return Err(ApiError::stale(rt, name));
        }
        let old = existing.to_value();
        if rt.status_subresource {
            let keep_from = if status_only { &v } else { &old };
            let status = keep_from.get("status").cloned();
            let mut base = if status_only { old.clone() } else { v.clone() };
            match status {
                Some(s) => {
                    base["status"] = s;
                }
                None => {
                    if let Some(m) = base.as_object_mut() {
                        m.shift_remove("status");
                    }
                }
            }
            v = base;
        }
        // Server-owned metadata comes from the stored object.
        let old_meta = old.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
        let meta = metadata_mut(&mut v);
        meta.insert("name".into(), name.into());
        if rt.namespaced {
            meta.insert("namespace".into(), namespace.into());
        }
        for k in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"] {
            match old_meta.get(k) {
                Some(val) => meta.insert(k.into(), val.clone()),
                None => meta.shift_remove(k),
            };
        }
        meta.insert("resourceVersion".into(), existing.rv.to_string().into());
        if old.get("spec") != v.get("spec")
            && let Some(g) = old_meta.get("generation").and_then(Value::as_i64)
        {
            metadata_mut(&mut v).insert("generation".into(), (g + 1).into());
        }
        if Obj::from_value(rt, v.clone()).item == existing.item {
            return Ok(existing);
        }
        metadata_mut(&mut v).insert("resourceVersion".into(), (self.rev + 1).to_string().into());
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
        if let Some(uid) = pre.uid.as_deref().filter(|u| *u != existing.uid) {
            let why = format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", existing.uid);
            return Err(ApiError::conflict(rt, name, &why));
        }
        if let Some(rv) = pre.resource_version.as_deref().filter(|rv| *rv != existing.rv.to_string()) {
            let why =
                format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}", existing.rv);
            return Err(ApiError::conflict(rt, name, &why));
        }
        if existing.has_finalizers {
            if existing.deleting {
                return Ok(Deleted::Marked(existing));
            }
            let mut v = existing.to_value();
            let meta = metadata_mut(&mut v);
            meta.insert("resourceVersion".into(), (self.rev + 1).to_string().into());
            meta.insert("deletionTimestamp".into(), now.into());
            meta.insert("deletionGracePeriodSeconds".into(), 0.into());
            let obj = Arc::new(Obj::from_value(rt, v));
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

fn require_object(rt: &ResourceType, body: Value) -> Result<Value, ApiError> {
    match body {
        Value::Object(_) => Ok(body),
        _ => Err(ApiError::bad_request(format!("the body of the request was not a valid {} object", rt.kind))),
    }
}

fn metadata_mut(v: &mut Value) -> &mut Map<String, Value> {
    let top = v.as_object_mut().expect("checked by require_object");
    let meta = top.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().expect("just made an object")
}

/// Built-in groups are the core group and the `*.k8s.io`-less ones the table serves.
fn is_builtin_group(group: &str) -> bool {
    matches!(group, "" | "apps" | "batch") || group.ends_with(".k8s.io")
}

/// A random RFC 4122 version-4 UID.
pub fn new_uid() -> String {
    let b: [u8; 16] = rand::random();
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        u16::from_be_bytes([b[4], b[5]]),
        u16::from_be_bytes([b[6], b[7]]) & 0x0fff,
        (u16::from_be_bytes([b[8], b[9]]) & 0x3fff) | 0x8000,
        u64::from_be_bytes([0, 0, b[10], b[11], b[12], b[13], b[14], b[15]])
    )
}

/// The apiserver's `generateName` suffix: five characters from its alphabet.
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char).collect()
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

//! The cached resources: for each, what it is, its store's reader and its
//! reflector's status. Built once at start-up; the reflectors run as tasks
//! that end when the [`Cache`] is dropped.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use apimachinery::resource::Resource;
use apimachinery::table::{self, Printer};

use crate::state::StateDir;
use crate::store::{CachedObject, StoreConfig, StoreReader, StoreWriter};
use crate::upstream::client::Client;
use crate::upstream::consistency::{self, CheckStats};
use crate::upstream::freshness::{Decision, Freshness, NotFresh, Read};
use crate::upstream::reflector::{Reflector, ReflectorConfig, ReflectorStatus};
use crate::upstream::store_sink::{StoreSink, carries_type};

/// What a resource gives up for the budget; each level includes the ones below.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Pressure {
    /// Within budget: everything as configured.
    #[default]
    Normal = 0,
    /// The event log is held shorter than `--max-events`.
    ShortLog = 1,
    /// No new continue-token pins: pages that would pin pass through.
    NoPins = 2,
    /// Lists and GETs pass through.
    PassThrough = 3,
}

impl Pressure {
    /// The level stored as `v` (`level as u8`).
    pub fn from_u8(v: u8) -> Pressure {
        match v {
            0 => Pressure::Normal,
            1 => Pressure::ShortLog,
            2 => Pressure::NoPins,
            _ => Pressure::PassThrough,
        }
    }

    /// Whether new continue-token pins are refused.
    pub fn refuses_pins(self) -> bool {
        self >= Pressure::NoPins
    }

    /// Whether lists and GETs pass through.
    pub fn passes_through(self) -> bool {
        self == Pressure::PassThrough
    }

    pub(crate) fn up(self) -> Pressure {
        Pressure::from_u8(self as u8 + 1)
    }

    pub(crate) fn down(self) -> Pressure {
        Pressure::from_u8((self as u8).saturating_sub(1))
    }

    /// What the level does, for the log.
    pub(crate) fn effect(self) -> &'static str {
        match self {
            Pressure::Normal => "the event log keeps --max-events again",
            Pressure::ShortLog => "the event log is held shorter",
            Pressure::NoPins => "no new continue-token pins: paged lists pass through",
            Pressure::PassThrough => "lists and GETs pass through",
        }
    }
}

/// One cached resource.
#[derive(Debug)]
pub struct CachedResource {
    /// What the apiserver says it is.
    pub info: Resource,
    /// Its objects and history.
    pub store: StoreReader,
    /// Its reflector's readiness and counters.
    pub status: Arc<ReflectorStatus>,
    /// Proof that its store is fresh, for consistent reads.
    pub fresh: Arc<Freshness>,
    /// `{"kind":K,"apiVersion":V,`, spliced into stored list items that lack it.
    type_prefix: Bytes,
    /// The schema name of its protobuf message, for built-in kinds.
    protobuf: Option<String>,
    /// Set once an object had no protobuf encoding: protobuf requests then pass through.
    protobuf_failed: AtomicBool,
    /// Warm-ups of its objects' protobuf messages and CBOR maps ([`CachedResource::warm`]), by [`Binary`].
    warm: [Warm; 2],
    /// How its objects are written in CBOR (`None`: a built-in kind the
    /// protobuf schema, which says which strings are `[]byte`, lacks).
    cbor_shape: Option<apimachinery::cbor::Schema>,
    /// Set once an object had no exact CBOR encoding: CBOR requests for its
    /// objects then pass through (a stream that ended for it must not be
    /// answered from memory again, and fail again, when it resumes).
    cbor_failed: AtomicBool,
    /// Whether the apiserver serves it in CBOR, as last learned.
    pub cbor: Arc<crate::upstream::cbor::CborSupport>,
    /// A custom resource (served from a CRD, stored unstructured): see [`is_custom`].
    custom: bool,
    /// For a custom resource: the cached CRDs, whose columns its Tables follow.
    crds: OnceLock<Arc<CachedResource>>,
    /// The Table printer of the CRD revision last read, by that revision.
    crd_printer: Mutex<Option<(u64, Option<Arc<Printer>>)>>,
    /// Its memory pressure level (a [`Pressure`]), set by the budget task.
    pressure: AtomicU8,
    /// Lists and watches answered from memory (what a consistency check
    /// protects, and what saves upstream as much as a check costs it).
    pub collections_from_memory: AtomicU64,
    /// Its consistency checks.
    pub checks: Arc<CheckStats>,
}

impl CachedResource {
    /// A cached resource over `store`, which something else (a reflector,
    /// or a test) fills and to which `fresh`'s proofs go.
    pub fn new(info: Resource, store: StoreReader, status: Arc<ReflectorStatus>, fresh: Arc<Freshness>) -> CachedResource {
        let type_prefix = Bytes::from(info.type_prefix());
        let builtin = apimachinery::resource::builtin(&info.group, &info.version, &info.plural).is_some();
        let protobuf = builtin.then(|| apimachinery::protobuf::message_name(&info.api_version(), &info.kind)).flatten();
        let custom = is_custom(&info);
        let cbor_shape = match custom {
            true => Some(apimachinery::cbor::Schema::Custom),
            false => builtin.then(|| apimachinery::cbor::Schema::builtin(&info.api_version(), &info.kind)).flatten(),
        };
        CachedResource {
            info,
            store,
            status,
            fresh,
            type_prefix,
            protobuf,
            protobuf_failed: AtomicBool::new(false),
            warm: Default::default(),
            cbor_shape,
            cbor_failed: AtomicBool::new(false),
            cbor: Arc::default(),
            custom,
            crds: OnceLock::new(),
            crd_printer: Mutex::new(None),
            pressure: AtomicU8::new(Pressure::Normal as u8),
            collections_from_memory: AtomicU64::new(0),
            checks: Arc::default(),
        }
    }

    /// What it gives up for the memory budget now (`crate::budget`).
    pub fn pressure(&self) -> Pressure {
        Pressure::from_u8(self.pressure.load(Ordering::Relaxed))
    }

    /// Sets its memory pressure level (the budget task's decision).
    pub fn set_pressure(&self, level: Pressure) {
        self.pressure.store(level as u8, Ordering::Relaxed);
    }

    /// Whether it is a custom resource ([`is_custom`]).
    pub fn is_custom(&self) -> bool {
        self.custom
    }

    /// Its Table printer: a built-in resource's, or a custom resource's
    /// from its CRD as the cache holds it now; `None` leaves its Tables to
    /// the apiserver.
    pub fn printer(&self) -> Option<Arc<Printer>> {
        if !self.custom {
            return table::printer(&self.info.group, &self.info.plural);
        }
        let crds = self.crds.get().filter(|c| c.status.is_ready())?;
        let view = crds.store.view();
        let crd = view.head().get(&format!("{}.{}", self.info.plural, self.info.group))?;
        let mut memo = self.crd_printer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*memo {
            Some((rv, printer)) if *rv == crd.resource_version() => printer.clone(),
            _ => {
                let printer = table::crd_printer(crd.bytes(), &self.info.version).map(Arc::new);
                *memo = Some((crd.resource_version(), printer.clone()));
                printer
            }
        }
    }

    /// `o`'s `metadata` (at `rv` when given) as metadata-only answers and
    /// Table rows carry it ([`apimachinery::meta::served_metadata`]: a
    /// custom resource's in `ObjectMeta` order, a DaemonSet's without its
    /// template-generation annotation); the stored bytes, shared, otherwise.
    pub fn metadata_parts(&self, o: &CachedObject, rv: Option<u64>) -> Vec<Bytes> {
        if rv.is_none() {
            return vec![self.metadata_bytes(o)];
        }
        let parts = o.metadata_at(rv);
        match apimachinery::meta::served_metadata(&self.info, &parts.concat()) {
            std::borrow::Cow::Owned(served) => vec![Bytes::from(served)],
            std::borrow::Cow::Borrowed(_) => parts,
        }
    }

    /// [`CachedResource::metadata_parts`] of the current revision, in one piece.
    pub fn metadata_bytes(&self, o: &CachedObject) -> Bytes {
        let stored = o.bytes().slice(o.metadata_range());
        match apimachinery::meta::served_metadata(&self.info, &stored) {
            std::borrow::Cow::Owned(served) => Bytes::from(served),
            std::borrow::Cow::Borrowed(_) => stored,
        }
    }

    /// Whether kache answers protobuf for this resource: a built-in kind
    /// whose every object so far had an encoding.
    pub fn speaks_protobuf(&self) -> bool {
        self.protobuf.is_some() && !self.protobuf_failed.load(Ordering::Relaxed)
    }

    /// Whether kache answers metadata-only protobuf (`PartialObjectMetadata`)
    /// for this resource: any built-in kind it speaks protobuf for, and
    /// custom resources (their metadata is an `ObjectMeta` like any other).
    pub fn speaks_metadata_protobuf(&self) -> bool {
        self.custom || self.speaks_protobuf()
    }

    /// `o`'s `PartialObjectMetadata` message (at `rv` when given): its
    /// `ObjectMeta` a slice of the object's message where the served metadata
    /// is the stored one, else encoded from the served metadata.
    pub fn metadata_protobuf(&self, o: &CachedObject, rv: Option<u64>) -> Option<Vec<Bytes>> {
        let stored = o.metadata_at(rv).concat();
        let served = apimachinery::meta::served_metadata(&self.info, &stored);
        if let (std::borrow::Cow::Borrowed(_), false) = (&served, self.custom) {
            return apimachinery::protobuf::partial_object(&self.protobuf_of(o, rv)?);
        }
        let meta = apimachinery::protobuf::encode(OBJECT_META, &served).ok()?;
        let mut head = Vec::with_capacity(6);
        apimachinery::protobuf::wire::key(&mut head, 1, apimachinery::protobuf::wire::LEN);
        apimachinery::protobuf::wire::varint(&mut head, meta.len() as u64);
        Some(vec![Bytes::from(head), Bytes::from(meta)])
    }

    /// How its objects are written in CBOR, while kache can write them.
    pub fn cbor_shape(&self) -> Option<apimachinery::cbor::Schema> {
        self.cbor_shape.filter(|_| !self.cbor_failed.load(Ordering::Relaxed))
    }

    /// `o`'s CBOR map (at `rv` when given), with its `kind` and `apiVersion`
    /// when `typed` (a GET's or a watch event's object, and a custom
    /// resource's list item); `None` when it has no exact CBOR encoding.
    pub fn cbor_map(&self, o: &CachedObject, rv: Option<u64>, typed: bool) -> Option<Vec<Bytes>> {
        let shape = self.cbor_shape()?;
        let at;
        let object = match rv {
            None => o.cbor(shape),
            Some(rv) => {
                at = o.cbor_at(shape, rv);
                at.as_ref()
            }
        };
        let Some(object) = object else {
            if !self.cbor_failed.swap(true, Ordering::Relaxed) {
                let why = apimachinery::cbor::Object::encode(o.bytes(), shape).err().map(|e| e.to_string()).unwrap_or_default();
                tracing::warn!(resource = %self.info.qualified(), object = %o.key(), %why, "an object has no exact CBOR encoding here; CBOR requests for this resource now pass through");
            }
            return None;
        };
        Some(if typed { object.typed_map(&self.info.api_version(), &self.info.kind) } else { object.map() })
    }

    /// The schema name of its protobuf message, when it speaks protobuf.
    pub fn protobuf_message(&self) -> Option<&str> {
        self.protobuf.as_deref().filter(|_| self.speaks_protobuf())
    }

    /// Whether the head's objects all have their `binary` encodings made
    /// (protobuf messages, CBOR maps), so a large answer in it (a whole
    /// list, a watch's initial events) costs no encoding. The first time
    /// this is asked after a list (at start, or a re-list) they do not, and
    /// a warm-up starts in the background: every object of the head encoded
    /// once, on half the cores. Large answers in that encoding pass through
    /// until it is done, so the first protobuf (or CBOR) informer after a
    /// start is as fast as going direct, not slower. Objects that arrive
    /// later are encoded as their events are framed. Only resources read in
    /// an encoding pay its memory (protobuf: about two thirds of the
    /// objects' JSON); a protobuf warm-up of 50,000 pods takes about 2.5 s of CPU.
    pub fn warm(self: &Arc<Self>, binary: Binary) -> bool {
        let warm = &self.warm[binary as usize];
        if warm.epoch.load(Ordering::Acquire) == self.store.view().epoch() {
            return true;
        }
        if !warm.running.swap(true, Ordering::AcqRel) {
            let me = self.clone();
            tokio::task::spawn_blocking(move || me.make_ahead(binary));
        }
        false
    }

    fn make_ahead(&self, binary: Binary) {
        let started = std::time::Instant::now();
        let view = self.store.view();
        let objects: Vec<&Arc<CachedObject>> = view.head().iter().collect();
        // Half the cores: the read that asked meanwhile passes through, and its relay needs the rest.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().div_ceil(2));
        std::thread::scope(|s| {
            for chunk in objects.chunks(objects.len().div_ceil(threads).max(1)) {
                s.spawn(move || {
                    for o in chunk {
                        match binary {
                            Binary::Protobuf => drop(self.protobuf_of(o, None)),
                            Binary::Cbor => drop(self.cbor_map(o, None, false)),
                        }
                    }
                });
            }
        });
        let warm = &self.warm[binary as usize];
        warm.epoch.store(view.epoch(), Ordering::Release);
        warm.running.store(false, Ordering::Release);
        tracing::info!(resource = %self.info.qualified(), objects = objects.len(), took = ?started.elapsed(), "{} made ahead of large reads", binary.name());
    }

    /// `o`'s protobuf message (at `rv` when given); `None` when it has none,
    /// which turns protobuf off for the resource from then on.
    pub fn protobuf_of(&self, o: &CachedObject, rv: Option<u64>) -> Option<Bytes> {
        let message = self.protobuf_message()?;
        let encoded = match rv {
            None => o.protobuf(message).cloned(),
            Some(rv) => o.protobuf_at(message, rv),
        };
        if encoded.is_none() && !self.protobuf_failed.swap(true, Ordering::Relaxed) {
            let why = apimachinery::protobuf::encode(message, o.bytes()).err().map(|e| e.to_string()).unwrap_or_default();
            tracing::warn!(resource = %self.info.qualified(), object = %o.key(), %why, "an object has no protobuf encoding here; protobuf requests for this resource now pass through");
        }
        encoded
    }

    /// `base` with the indexes `info`'s store keeps: every label, and the
    /// fields of [`INDEXED_FIELDS`] the resource has.
    pub fn store_config(info: &Resource, base: &StoreConfig) -> StoreConfig {
        let indexed_fields = info.fields.iter().enumerate().filter(|(_, (f, _))| INDEXED_FIELDS.contains(f)).map(|(i, _)| i).collect();
        StoreConfig { indexed_fields, ..base.clone() }
    }

    /// `o` as the apiserver writes a lone object (a GET, a watch event):
    /// with `kind` and `apiVersion` first. Stored list items of built-in
    /// resources lack them; the parts concatenated are the object (a stored
    /// object always has `metadata`, so a field follows the prefix's comma).
    pub fn lone(&self, o: &CachedObject) -> Vec<Bytes> {
        self.with_type(vec![o.bytes().clone()])
    }

    /// [`CachedResource::lone`] with `metadata.resourceVersion` set to `rv`.
    pub fn lone_at(&self, o: &CachedObject, rv: u64) -> Vec<Bytes> {
        self.with_type(o.at_revision(rv).to_vec())
    }

    /// The bytes of the objects a list would send — those of the scope
    /// `prefix` from key `start`, at most `limit` — as the head holds them:
    /// what upstream must read and encode to answer it (selectors are not
    /// applied: upstream reads every object in scope either way).
    pub fn read_bytes(&self, prefix: &str, start: &str, limit: usize) -> u64 {
        let view = self.store.view();
        let head = view.head();
        let mean = head.bytes().checked_div(head.len()).unwrap_or(0);
        let n = if prefix.is_empty() && start.is_empty() {
            head.len().min(limit)
        } else {
            head.from(start).take_while(|o| o.key().starts_with(prefix)).take(limit).count()
        };
        (n * mean) as u64
    }

    /// A consistent read of one object: proven fresh, or why it passes through.
    pub async fn consistent_get(&self, key: &str, decision: &Decision) -> Result<u64, NotFresh> {
        let bytes = self.store.view().head().get(key).map_or(0, |o| o.bytes().len() as u64);
        self.fresh.consistent(Read { bytes, follows: false, stream: false }, decision).await
    }

    /// Whether the store has confirmed `rv`, waiting up to `wait` for it
    /// (and proving a quiet resource's progress meanwhile).
    pub async fn reached(&self, rv: u64, wait: std::time::Duration) -> bool {
        self.fresh.reach(rv, std::time::Instant::now() + wait).await
    }

    /// `parts` (an object in list-item form) with the type spliced in front.
    fn with_type(&self, mut parts: Vec<Bytes>) -> Vec<Bytes> {
        let Some(first) = parts.first_mut() else { return parts };
        if carries_type(first) || !first.starts_with(b"{") {
            return parts;
        }
        *first = first.slice(1..);
        parts.insert(0, self.type_prefix.clone());
        parts
    }
}

/// Fields whose values snapshots index (with every label): the field
/// selectors that select few objects of many, as the apiserver's cache
/// indexes pods by node.
const INDEXED_FIELDS: &[&str] = &["spec.nodeName"];

/// An encoding made per object and kept with it, ahead of large reads ([`CachedResource::warm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    Protobuf,
    Cbor,
}

impl Binary {
    /// `protobuf` or `cbor`.
    pub fn name(self) -> &'static str {
        match self {
            Binary::Protobuf => "protobuf",
            Binary::Cbor => "cbor",
        }
    }
}

/// Where the warm-up of one [`Binary`] encoding stands.
#[derive(Debug)]
struct Warm {
    /// The store epoch whose head has every object's encoding made.
    epoch: AtomicU64,
    /// Set while a warm-up runs.
    running: AtomicBool,
}

impl Default for Warm {
    fn default() -> Self {
        Warm { epoch: AtomicU64::new(u64::MAX), running: AtomicBool::new(false) }
    }
}

/// The protobuf message of object metadata.
pub const OBJECT_META: &str = "apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Whether `r` is a custom resource, its Tables following its CRD's columns:
/// neither one of the kinds kache knows whole ([`apimachinery::resource::BUILTINS`])
/// nor one the apiserver prints itself (RBAC, storage, flow control…).
pub fn is_custom(r: &Resource) -> bool {
    apimachinery::resource::builtin(&r.group, &r.version, &r.plural).is_none() && table::printer(&r.group, &r.plural).is_none()
}

/// The group and resource of CRDs, cached with any custom resource for its Tables' columns.
pub const CRDS: (&str, &str) = ("apiextensions.k8s.io", "customresourcedefinitions");

/// Every cached resource and the tasks that follow upstream.
#[derive(Debug)]
pub struct Cache {
    resources: Vec<Arc<CachedResource>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Cache {
    /// Starts one reflector per resource; with `state`, each starts from
    /// its saved state when there is a usable one (a warm restart).
    pub fn start(
        client: &Client,
        infos: Vec<Resource>,
        store: &StoreConfig,
        reflector: &ReflectorConfig,
        state: Option<&Arc<StateDir>>,
    ) -> Cache {
        let mut resources = Vec::new();
        let mut tasks = Vec::new();
        for info in infos {
            let (writer, reader) = StoreWriter::new(CachedResource::store_config(&info, store));
            let (proofs, proven) = mpsc::unbounded_channel();
            let fresh = Arc::new(Freshness::new(client.clone(), info.clone(), reader.clone(), proofs));
            let mut r = Reflector::new(client.clone(), info.clone(), reflector.clone(), StoreSink::new(&info, writer)).with_proofs(proven);
            if let Some(state) = state {
                let (state, info) = (state.clone(), info.clone());
                // Loaded beside the other resources', off the async threads.
                r = r.with_saved(tokio::task::spawn_blocking(move || state.load(&info)));
            }
            let cached = Arc::new(CachedResource::new(info.clone(), reader.clone(), r.status(), fresh.clone()));
            if let Some(interval) = reflector.consistency_check {
                let (res, stats) = (cached.clone(), cached.checks.clone());
                let served = move || res.collections_from_memory.load(Ordering::Relaxed);
                tasks.push(tokio::spawn(consistency::run(client.clone(), info, reader, r.status(), served, stats, interval)));
            }
            resources.push(cached);
            tasks.push(tokio::spawn(r.run()));
            tasks.push(tokio::spawn(fresh.run()));
        }
        if let Some(crds) = resources.iter().find(|r| r.info.group == CRDS.0 && r.info.plural == CRDS.1).cloned() {
            for r in resources.iter().filter(|r| r.custom) {
                let _ = r.crds.set(crds.clone());
            }
        }
        Cache { resources, tasks }
    }

    /// The cached resource at `group`/`version` named `resource`.
    pub fn find(&self, group: &str, version: &str, resource: &str) -> Option<&Arc<CachedResource>> {
        self.resources.iter().find(|r| r.info.group == group && r.info.version == version && r.info.plural == resource)
    }

    /// Every cached resource.
    pub fn resources(&self) -> &[Arc<CachedResource>] {
        &self.resources
    }

    /// Whether every resource has its initial list.
    pub fn ready(&self) -> bool {
        self.resources.iter().all(|r| r.status.is_ready())
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        self.tasks.iter().for_each(JoinHandle::abort);
    }
}

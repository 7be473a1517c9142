//! The cached resources: for each, what it is, its store's reader and its
//! reflector's status. Built once at start-up; the reflectors run as tasks
//! that end when the [`Cache`] is dropped.

mod encodings;
mod pressure;

pub use encodings::OBJECT_META;
pub use pressure::Pressure;

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use apimachinery::negotiate::Encoding;
use apimachinery::resource::Resource;
use apimachinery::table::{self, Printer};

use crate::state::StateDir;
use crate::store::{StoreConfig, StoreReader, StoreWriter};
use crate::upstream::capability::Probe;
use crate::upstream::client::Client;
use crate::upstream::consistency::{self, CheckStats};
use crate::upstream::costs::{Class, Meter};
use crate::upstream::freshness::{Freshness, NotFresh, Proving};
use crate::upstream::plan::{Plan, Policy, Read};
use crate::upstream::reflector::{Reflector, ReflectorConfig, ReflectorStatus};
use crate::upstream::store_sink::StoreSink;
use encodings::Encodings;

/// What a custom resource's CRD gives it.
#[derive(Debug, Clone)]
struct CrdFacts {
    printer: Option<Arc<Printer>>,
    warning: Option<Arc<str>>,
}

/// One cached resource.
#[derive(Debug)]
pub struct CachedResource {
    /// What the apiserver says it is.
    info: Resource,
    /// Its objects and history.
    store: StoreReader,
    /// Its reflector's readiness and counters.
    status: Arc<ReflectorStatus>,
    /// Proof that its store is fresh, for consistent reads.
    fresh: Arc<Freshness>,
    /// How its objects are written besides the stored JSON (`encodings`).
    encodings: Encodings,
    /// A custom resource (served from a CRD, stored unstructured): see [`is_custom`].
    custom: bool,
    /// For a custom resource: the cached CRDs, whose columns its Tables follow.
    crds: OnceLock<Arc<CachedResource>>,
    /// What the CRD revision last read gives it (its Table printer and
    /// deprecation warning), by that revision.
    memo: Mutex<Option<(u64, CrdFacts)>>,
    /// Its memory pressure level (a [`Pressure`]), set by the budget task.
    pressure: AtomicU8,
    /// Lists and watches answered from memory (what a consistency check
    /// protects, and what saves upstream as much as a check costs it).
    collections_from_memory: AtomicU64,
    /// Its consistency checks.
    checks: Arc<CheckStats>,
    /// Its protobuf messages are made as its lists come in ([`CachedResource::protobuf_ready`]).
    protobuf_ahead: AtomicBool,
}

impl CachedResource {
    /// A cached resource over `store`, which something else (a reflector,
    /// or a test) fills and to which `fresh`'s proofs go.
    pub fn new(info: Resource, store: StoreReader, status: Arc<ReflectorStatus>, fresh: Arc<Freshness>) -> CachedResource {
        let custom = is_custom(&info);
        CachedResource {
            encodings: Encodings::of(&info, custom),
            info,
            store,
            status,
            fresh,
            custom,
            crds: OnceLock::new(),
            memo: Mutex::new(None),
            pressure: AtomicU8::new(Pressure::Normal as u8),
            collections_from_memory: AtomicU64::new(0),
            checks: Arc::default(),
            protobuf_ahead: AtomicBool::new(false),
        }
    }

    /// What the apiserver says it is.
    pub fn info(&self) -> &Resource {
        &self.info
    }

    /// Its objects and history.
    pub fn store(&self) -> &StoreReader {
        &self.store
    }

    /// Its reflector's readiness, counters and what it learnt of upstream.
    pub fn status(&self) -> &ReflectorStatus {
        &self.status
    }

    /// The proof that its store is fresh, for consistent reads.
    pub fn fresh(&self) -> &Arc<Freshness> {
        &self.fresh
    }

    /// Its consistency checks.
    pub fn checks(&self) -> &CheckStats {
        &self.checks
    }

    /// A list or watch was answered from memory.
    pub fn served_collection(&self) {
        self.collections_from_memory.fetch_add(1, Ordering::Relaxed);
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
        match self.custom {
            false => table::printer(&self.info.group, &self.info.plural),
            true => self.crd_facts()?.printer,
        }
    }

    /// The `Warning` header value the apiserver adds to its every answer:
    /// a deprecated built-in's, or a custom resource's whose CRD deprecates
    /// its version (`None` while the CRDs are not cached: a warning would be lost).
    pub fn warning(&self) -> Option<Arc<str>> {
        match self.custom {
            false => apimachinery::deprecation::built_in(&self.info.group, &self.info.version, &self.info.plural)
                .map(|w| apimachinery::deprecation::header(w).into()),
            true => self.crd_facts()?.warning,
        }
    }

    /// What its CRD, as the cache holds it now, says of it (worked out once a CRD revision).
    fn crd_facts(&self) -> Option<CrdFacts> {
        let crds = self.crds.get().filter(|c| c.status.is_ready())?;
        let view = crds.store.view();
        let crd = view.head().get(&format!("{}.{}", self.info.plural, self.info.group))?;
        let mut memo = self.memo.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*memo {
            Some((rv, facts)) if *rv == crd.resource_version() => Some(facts.clone()),
            _ => {
                let version = &self.info.version;
                let facts = CrdFacts {
                    printer: table::crd_printer(crd.bytes(), version).map(Arc::new),
                    warning: apimachinery::deprecation::custom(crd.bytes(), version).map(|w| apimachinery::deprecation::header(&w).into()),
                };
                *memo = Some((crd.resource_version(), facts.clone()));
                Some(facts)
            }
        }
    }

    /// `base` with the indexes `info`'s store keeps: every label, and the
    /// fields of [`INDEXED_FIELDS`] the resource has.
    pub fn store_config(info: &Resource, base: &StoreConfig) -> StoreConfig {
        let indexed_fields = info.field_paths().iter().enumerate().filter(|(_, p)| INDEXED_FIELDS.contains(p)).map(|(i, _)| i).collect();
        StoreConfig { indexed_fields, ..base.clone() }
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

    /// Whether the store has confirmed `rv`, waiting up to `wait` for it
    /// (and proving a quiet resource's progress meanwhile).
    pub async fn reached(&self, rv: u64, wait: std::time::Duration) -> bool {
        self.fresh.reach(rv, std::time::Instant::now() + wait).await
    }

    /// Whether upstream honours shard selectors on it (`None`: not known
    /// yet, and asking starts learning it: `upstream::capability`).
    pub fn honours_shards(&self) -> Option<bool> {
        self.status.capabilities.learn(Probe::Shards, self.fresh.client(), &self.info)
    }

    /// The plan for a consistent read `read` of it in `class` under
    /// `policy`, from what was measured; a collection read also keeps its
    /// catch-ups going for the reads that follow it (`Freshness::keep_warm`).
    pub fn plan(&self, read: Read, class: Class, policy: Policy) -> Plan {
        if read.collection {
            self.fresh.keep_warm();
        }
        self.fresh.plan(read, class, policy)
    }

    /// A consistent read goes upstream at once, its plan having chosen
    /// upstream; the reason it passes through.
    pub fn go_upstream(&self) -> NotFresh {
        self.fresh.go_upstream()
    }

    /// The proof of a consistent read whose `plan` chose memory, from now.
    pub fn proving(&self, plan: Plan) -> Proving {
        self.fresh.proving(plan)
    }

    /// A consistent read that chose memory was asked of upstream as well, its proof late.
    pub fn count_hedge(&self) {
        self.fresh.stats.hedges.fetch_add(1, Ordering::Relaxed);
    }

    /// Upstream answered a consistent read that chose memory before its proof came.
    pub fn count_late(&self) {
        self.fresh.stats.record(Err(NotFresh::Late));
    }

    /// `meter`, of a consistent list of it sent upstream, measuring its small lists as well.
    pub fn measuring_lists(&self, meter: Meter) -> Meter {
        meter.of_list(self.fresh.small_lists.clone())
    }
}

/// Paths whose values snapshots index (with every label): the field
/// selectors that select few objects of many, as the apiserver's cache
/// indexes pods by node.
const INDEXED_FIELDS: &[&str] = &["spec.nodeName"];

/// Whether `r` is a custom resource, its Tables following its CRD's
/// columns: not a kind kube-apiserver builds in (`apimachinery::resource::is_builtin`).
pub fn is_custom(r: &Resource) -> bool {
    !apimachinery::resource::is_builtin(&r.group, &r.plural)
}

/// Makes `res`'s protobuf messages ahead as each of its lists (or re-lists)
/// is in ([`CachedResource::protobuf_ready`]), until the cache is dropped.
async fn make_protobuf_ahead(res: Arc<CachedResource>) {
    let mut published = res.store.subscribe();
    loop {
        if res.status.is_ready() {
            res.warm(Encoding::Protobuf);
        }
        if published.changed().await.is_err() {
            return;
        }
    }
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
    /// its saved state when there is a usable one (a warm restart). With
    /// `protobuf_ahead` (no memory budget: making every message would take
    /// it), protobuf messages are made as lists come in and gate readiness.
    pub fn start(
        client: &Client,
        infos: Vec<Resource>,
        store: &StoreConfig,
        reflector: &ReflectorConfig,
        state: Option<&Arc<StateDir>>,
        protobuf_ahead: bool,
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
            if protobuf_ahead && cached.speaks_protobuf() {
                cached.protobuf_ahead.store(true, Ordering::Relaxed);
                tasks.push(tokio::spawn(make_protobuf_ahead(cached.clone())));
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

    /// Whether every resource has its initial list (and its protobuf messages made).
    pub fn ready(&self) -> bool {
        self.resources.iter().all(|r| r.status.is_ready() && r.protobuf_ready())
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        self.tasks.iter().for_each(JoinHandle::abort);
    }
}

//! One reflector per cached resource: a state machine that keeps a [`Sink`]
//! (the resource's store) exactly in step with the apiserver.
//!
//! ```text
//!   Restore(saved rv) ──▶ Watch(saved rv) ─first event: ready─┐ (warm restart)
//!                           └─quiet ½ s─▶ Probe (ready) ──────┤
//!   Restore(nothing usable) ──▶ List                          ▼
//!   List ──ok──▶ Watch(rv) ──closed──▶ Watch(last rv)          (resume, no gap)
//!    ▲             │  └──broken/error──▶ backoff ▶ Probe ▶ Watch(last rv)
//!    │             └──410 / too large / revision went back──▶ List
//!    └──error── backoff
//! ```
//!
//! Invariants:
//! - The list is paged at one consistent revision (the first page is a quorum
//!   read; later pages follow its continue token) and handed to the sink as
//!   a whole with [`Sink::replace`]; the resource is ready after the first.
//! - A watch starts at the last revision the sink confirmed (event or
//!   bookmark), so events reach the sink gap-free, duplicate-free and in
//!   order; an event at or below that revision is a protocol error that
//!   forces a re-list rather than a silent skip.
//! - After a watch breaks before its timeout, a one-item quorum list (the
//!   probe) checks that upstream's revision has not gone backwards (etcd
//!   restored from a snapshot renumbers revisions and a watch from the old
//!   revision would wait silently); if it has, the reflector re-lists.
//! - A state saved by an earlier run ([`Saved`], a warm restart) is handed
//!   to the sink like a list taken at its revision, and the reflector
//!   resumes the watch from the saved revision; upstream's 410 (compacted
//!   past it) re-lists as usual. The resource is ready only once upstream
//!   has shown that its revision has not gone back below the saved one
//!   (etcd restored while kache was down): a store ahead of upstream would
//!   pass every freshness check, so its state must never be served; it is
//!   re-listed instead. The resumed watch shows it with its first event or
//!   bookmark (a revision above the saved one, which upstream has); a
//!   resource written while kache was down gets one at once, so a warm
//!   restart reads no list at all. A quiet resource's watch stays silent
//!   (upstream sends nothing it has not got, and a watch from a revision it
//!   has not reached yet waits for it), so after [`PROOF_WAIT`] the probe
//!   decides. The two proofs are equally strong: both see upstream's
//!   revision at or above the saved one. A saved state moves `confirmed_rv`
//!   only to its own revision: it proves nothing about upstream's present.
//! - A watch silent for [`ReflectorConfig::heartbeat`], or whose revision
//!   has not moved for as long, gets a heartbeat: the same one-item quorum
//!   list as the probe, on the watch's side. A quiet resource's watch may
//!   stay silent for ever, or get the same bookmark every minute: the
//!   apiserver's cache for a resource moves past its last event only when
//!   a consistent read of the resource makes it ask etcd for progress
//!   (measured on kube-apiserver 1.36) — and this one does, so the next
//!   bookmark carries upstream's present revision, and a watch resumed from
//!   it is one compaction has not passed (no 410, no re-list). Silence alone
//!   proves nothing; the heartbeat's answer is upstream's contact. (Events
//!   are the exception: kube-apiserver serves them without a watch cache,
//!   straight from etcd, and their watches get no bookmark at all; a quiet
//!   Event watch resumed after a compaction re-lists, which ends nothing
//!   when the list finds what kache held — see [`Sink::replace`]; a watch
//!   that got no bookmark in two heartbeats makes the next ones ask for
//!   [`BOOKMARKLESS_WATCH`], so that happens hours apart, not minutes.)
//!   A heartbeat that fails ends the watch as broken (its silence is no
//!   longer a quiet resource's); one that shows the revision gone back
//!   re-lists. A live watch on a dead connection is ended by the
//!   connection's pings (HTTP/2) or by the heartbeat failing.
//! - The resource's [`Health`] — listing, fresh, or stale (upstream silent
//!   past the staleness bound) — is one verdict from [`ReflectorStatus`];
//!   `/readyz`, the metrics, the reason on passed-through reads and the log
//!   all read it.
//! - Failures back off exponentially with jitter, up to a bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use parking_lot::Mutex;
use rand::Rng;
use serde::Deserialize;
use tokio::time::Instant;

use tokio::sync::mpsc;

use super::sharding::ShardingState;
use tokio::task::JoinHandle;

use super::UpstreamError;
use super::client::Client;
use super::freshness::Proof;
use apimachinery::decode::DecodeError;
use apimachinery::list::ListPage;
use apimachinery::resource::Resource;
use apimachinery::watch::{EventType, WatchDecoder, object_revision};

/// Where a reflector puts what it learns: the store's writer.
pub trait Sink: Send {
    /// Replaces the whole state with a list taken at `rv`; `Ok(false)`: the
    /// list held exactly what the sink did (same keys, same bytes), which
    /// then only moves to `rv`, as a bookmark would, and ends no watch.
    fn replace(&mut self, items: Vec<Bytes>, rv: u64) -> Result<bool, String>;
    /// Replaces the whole state with a saved one at `rv`, whose items each
    /// own their allocation (no page body behind them).
    fn restore(&mut self, items: Vec<Bytes>, rv: u64) -> Result<(), String> {
        self.replace(items, rv).map(|_| ())
    }
    /// Applies one watch event; its revision is the object's.
    fn apply(&mut self, typ: EventType, object: Bytes) -> Result<u64, String>;
    /// Every event up to `rv` has been applied.
    fn bookmark(&mut self, rv: u64);
    /// Makes what was applied visible (called after each received chunk).
    fn flush(&mut self);
    /// Changes with every [`Sink::replace`]: a freshness proof holds only in the epoch it was measured in.
    fn epoch(&self) -> u64;
}

/// A resource's state saved by an earlier run: the objects at `rv`, in
/// list-item form, as the sink held them.
#[derive(Debug)]
pub struct Saved {
    /// The objects, as a list's items.
    pub items: Vec<Bytes>,
    /// The revision they are the state at.
    pub rv: u64,
}

/// Reflector settings.
#[derive(Debug, Clone)]
pub struct ReflectorConfig {
    /// Items per page of the initial list.
    pub page_size: usize,
    /// The shortest upstream watch; each watch asks for a random time
    /// between this and twice this, as client-go does.
    pub watch_timeout: Duration,
    /// First retry delay after a failure.
    pub backoff_initial: Duration,
    /// Longest retry delay.
    pub backoff_max: Duration,
    /// Largest watch frame accepted.
    pub max_frame: usize,
    /// How long a watch may stay silent before a heartbeat asks upstream
    /// for its revision (above the apiserver's one-minute bookmarks, so a
    /// resource that gets them needs none).
    pub heartbeat: Duration,
    /// How often the store is checked against upstream ([`super::consistency`]); `None`: never.
    pub consistency_check: Option<Duration>,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            page_size: 500,
            watch_timeout: Duration::from_secs(300),
            backoff_initial: Duration::from_millis(200),
            backoff_max: Duration::from_secs(30),
            max_frame: 64 << 20,
            heartbeat: HEARTBEAT,
            consistency_check: None,
        }
    }
}

/// How long a watch resumed from a saved state may stay silent before a
/// probe checks upstream's revision instead (see the module docs).
const PROOF_WAIT: Duration = Duration::from_millis(500);

/// The default [`ReflectorConfig::heartbeat`]: the apiserver's bookmark
/// period (60 s), its dispatch tick (1.25 s) and a margin.
pub const HEARTBEAT: Duration = Duration::from_secs(75);

/// How long a heartbeat may take before the watch counts as broken.
const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a long list logs its progress.
const LIST_PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// What a reflector has done, for readiness and metrics.
#[derive(Debug, Default)]
pub struct ReflectorStatus {
    ready: AtomicBool,
    watching: AtomicBool,
    /// Lists started (initial and re-lists, not probes).
    pub lists: AtomicU64,
    /// Re-lists by cause ([`Relist::ALL`]'s order).
    relists: [AtomicU64; Relist::ALL.len()],
    /// Re-lists that found exactly what the store held (and ended nothing).
    pub relists_unchanged: AtomicU64,
    /// The consistency check found the store unlike upstream, and none has passed since.
    inconsistent: AtomicBool,
    /// Asks the reflector to re-list (the consistency check's finding).
    relist: tokio::sync::Notify,
    /// Watches started.
    pub watches: AtomicU64,
    /// Probes of upstream's revision.
    pub probes: AtomicU64,
    /// Events applied.
    pub events: AtomicU64,
    /// Whether upstream honours shard selectors: forgotten at every list and broken watch.
    pub sharding: ShardingState,
    /// The last revision the sink confirmed.
    pub confirmed_rv: AtomicU64,
    /// Milliseconds from [`contact_epoch`] to upstream's last answer (a list
    /// page, a watch opened, a watch frame), plus one; 0: none yet.
    contact: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// The origin of [`ReflectorStatus`] contact times.
fn contact_epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl ReflectorStatus {
    /// Whether the first list (or a saved state) has been applied.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Whether the upstream watch is open.
    pub fn is_watching(&self) -> bool {
        self.watching.load(Ordering::Relaxed)
    }

    /// Marks the store unlike upstream (reads pass through) and has it
    /// re-listed; or, `false`, like it again.
    pub fn set_inconsistent(&self, inconsistent: bool) {
        if inconsistent {
            self.relist.notify_one();
        }
        self.inconsistent.store(inconsistent, Ordering::Release);
    }

    /// Re-lists so far, by cause (every cause, 0 included).
    pub fn relists(&self) -> impl Iterator<Item = (Relist, u64)> + '_ {
        Relist::ALL.into_iter().zip(&self.relists).map(|(c, n)| (c, n.load(Ordering::Relaxed)))
    }

    fn relisted(&self, cause: Relist) {
        self.relists[cause as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The last failure, if any.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().clone()
    }

    /// The resource's health with staleness bound `bound`; only a
    /// [`Health::Fresh`] one is answered from memory. Past the bound
    /// (upstream gone), reads pass through and fail as the apiserver's would.
    pub fn health(&self, bound: Duration) -> Health {
        if !self.is_ready() {
            return Health::Listing { again: self.lists.load(Ordering::Relaxed) > 1 };
        }
        match self.silence() {
            Some(s) if s > bound => Health::Stale { silence: Some(s) },
            None => Health::Stale { silence: None },
            Some(_) if self.inconsistent.load(Ordering::Acquire) => Health::Inconsistent,
            Some(_) => Health::Fresh,
        }
    }

    /// How long since upstream last answered; `None` before it ever did.
    pub fn silence(&self) -> Option<Duration> {
        match self.contact.load(Ordering::Relaxed) {
            0 => None,
            at => Some(contact_epoch().elapsed().saturating_sub(Duration::from_millis(at - 1))),
        }
    }

    /// Upstream answered now.
    fn touch(&self) {
        self.contact.store(contact_epoch().elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
    }

    fn failed(&self, e: &UpstreamError) {
        *self.last_error.lock() = Some(e.to_string());
    }
}

/// Whether kache may answer a resource from memory, and if not why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// No list applied yet (`again`: re-listing after one was).
    Listing {
        /// A list was applied before: this is a re-list.
        again: bool,
    },
    /// Listed, and upstream answered within the staleness bound.
    Fresh,
    /// Listed, but upstream has not answered within the bound (`None`: never).
    Stale {
        /// How long since it last answered.
        silence: Option<Duration>,
    },
    /// The consistency check found the store unlike upstream; re-listed,
    /// it is fresh again once a check passes.
    Inconsistent,
}

impl Health {
    /// Whether reads may be answered from memory.
    pub fn is_fresh(self) -> bool {
        self == Health::Fresh
    }
}

/// Why a resource is re-listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Relist {
    /// Upstream compacted past the watch's revision (410 Gone).
    Compacted,
    /// Upstream refused the revision as too large (etcd restored behind it).
    TooLarge,
    /// Upstream's revision went below the store's.
    WentBack,
    /// Upstream sent what does not follow: an event out of order, one that
    /// does not fit the state, or a frame that does not decode.
    Protocol,
    /// The consistency check found the store unlike upstream.
    Inconsistent,
}

impl Relist {
    /// Every cause.
    pub const ALL: [Relist; 5] = [Relist::Compacted, Relist::TooLarge, Relist::WentBack, Relist::Protocol, Relist::Inconsistent];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Relist::Compacted => "compacted",
            Relist::TooLarge => "too large revision",
            Relist::WentBack => "revision went back",
            Relist::Protocol => "protocol",
            Relist::Inconsistent => "inconsistent",
        }
    }
}

/// How a watch ended.
#[derive(Debug)]
enum WatchEnd {
    /// Upstream closed it after its timeout: resume at once.
    Timeout,
    /// It broke early (connection, EOF, an error event to retry).
    Broken(UpstreamError),
    /// The revision is gone or unusable: re-list.
    Relist(Relist, String),
    /// Resumed from a saved state, it brought nothing in [`PROOF_WAIT`]: probe.
    Quiet,
}

enum Phase {
    List,
    Probe,
    Watch,
}

/// Follows one resource into a sink.
#[derive(Debug)]
pub struct Reflector<S> {
    client: Client,
    resource: Resource,
    config: ReflectorConfig,
    sink: S,
    status: Arc<ReflectorStatus>,
    /// The revision every event up to which is in the sink.
    rv: u64,
    /// Freshness proofs from catch-up watches (see [`super::freshness`]).
    proofs: Option<mpsc::UnboundedReceiver<Proof>>,
    /// Proofs received but not applicable yet (the sink lags their `through`).
    pending: Vec<Proof>,
    /// A saved state being loaded, to start from instead of a list.
    saved: Option<JoinHandle<Option<Saved>>>,
    /// Upstream sends this resource's watches no bookmarks (see [`BOOKMARKLESS_WATCH`]).
    bookmarkless: bool,
    /// A bookmark came on the current watch.
    bookmarked: bool,
}

/// The timeout a watch that gets no bookmarks asks for. kube-apiserver
/// serves Events without a watch cache, so their watches carry no bookmark
/// and their revision moves only with their own events: each time such a
/// watch is resumed after a compaction passed it, the resource re-lists
/// (ending nothing when nothing changed). Watches that long re-list an
/// hour apart, not every five to ten minutes; a dead connection still ends
/// them at once (HTTP/2 pings, heartbeats).
const BOOKMARKLESS_WATCH: Duration = Duration::from_secs(3600);

/// Most proofs kept waiting for the sink to catch up.
const MAX_PENDING_PROOFS: usize = 16;

impl<S: Sink> Reflector<S> {
    /// A reflector for `resource`; nothing happens until [`Reflector::run`].
    pub fn new(client: Client, resource: Resource, config: ReflectorConfig, sink: S) -> Self {
        Reflector {
            client,
            resource,
            config,
            sink,
            status: Arc::default(),
            rv: 0,
            proofs: None,
            pending: Vec::new(),
            saved: None,
            bookmarkless: false,
            bookmarked: false,
        }
    }

    /// Starts from the state `saved` yields, if any (a warm restart), instead of a list.
    pub fn with_saved(mut self, saved: JoinHandle<Option<Saved>>) -> Self {
        self.saved = Some(saved);
        self
    }

    /// Also applies the freshness proofs that arrive on `proofs`.
    pub fn with_proofs(mut self, proofs: mpsc::UnboundedReceiver<Proof>) -> Self {
        self.proofs = Some(proofs);
        self
    }

    /// The shared status (readiness, counters).
    pub fn status(&self) -> Arc<ReflectorStatus> {
        self.status.clone()
    }

    /// Runs until the task is dropped.
    pub async fn run(mut self) {
        let mut phase = match self.saved.take() {
            Some(saved) => self.restore(saved).await,
            None => Phase::List,
        };
        let mut failures = 0u32;
        loop {
            let result = match phase {
                Phase::List => self.list().await.map(|()| Phase::Watch),
                Phase::Probe => self.probe().await,
                Phase::Watch => match self.watch().await {
                    WatchEnd::Timeout => Ok(Phase::Watch),
                    WatchEnd::Quiet => Ok(Phase::Probe),
                    WatchEnd::Broken(e) => {
                        // Upstream may come back another version: learn again (`super::sharding`).
                        self.status.sharding.forget();
                        Err((e, Phase::Probe))
                    }
                    WatchEnd::Relist(cause, why) => {
                        tracing::info!(resource = %self.resource.qualified(), rv = self.rv, %why, "re-listing");
                        self.status.relisted(cause);
                        Ok(Phase::List)
                    }
                },
            };
            phase = match result {
                Ok(next) => {
                    failures = 0;
                    next
                }
                Err((e, retry)) => {
                    tracing::warn!(resource = %self.resource.qualified(), error = %e, "upstream failure; backing off");
                    self.status.failed(&e);
                    tokio::time::sleep(self.backoff(failures, &e)).await;
                    failures = failures.saturating_add(1);
                    retry
                }
            };
        }
    }

    fn backoff(&self, failures: u32, e: &UpstreamError) -> Duration {
        let base = self.config.backoff_initial.saturating_mul(1u32 << failures.min(16)).min(self.config.backoff_max);
        let jittered = base.mul_f64(rand::rng().random_range(0.5..1.0));
        match e {
            // 429 from a re-initializing apiserver: give it at least a second.
            UpstreamError::Status { code: 429, .. } => jittered.max(Duration::from_secs(1)),
            _ => jittered,
        }
    }

    async fn list(&mut self) -> Result<(), (UpstreamError, Phase)> {
        self.status.lists.fetch_add(1, Ordering::Relaxed);
        let base = format!("{}?limit={}", self.resource.collection_path(), self.config.page_size);
        let mut items = Vec::new();
        let mut path = base.clone();
        if self.status.ready.swap(false, Ordering::AcqRel) {
            tracing::info!(resource = %self.resource.qualified(), "not ready while re-listing: reads pass through");
        }
        let relisting = self.status.lists.load(Ordering::Relaxed) > 1;
        self.status.sharding.forget();
        let mut progress = Instant::now();
        let rv = loop {
            let body = self.client.get_bytes(&path).await.map_err(|e| (e, Phase::List))?;
            self.status.touch();
            let page = ListPage::parse(&body).map_err(|e| (decode(e), Phase::List))?;
            items.extend(page.items);
            if progress.elapsed() >= LIST_PROGRESS_EVERY {
                progress = Instant::now();
                tracing::info!(resource = %self.resource.qualified(), objects = items.len(), "listing");
            }
            match page.continue_token {
                Some(token) => path = format!("{base}&continue={}", encode_query(&token)),
                None => break page.resource_version,
            }
        };
        let changed = self.off_workers(|sink| sink.replace(items, rv)).map_err(|e| (UpstreamError::Decode(e), Phase::List))?;
        self.confirm(rv);
        self.status.ready.store(true, Ordering::Release);
        if relisting && !changed {
            self.status.relists_unchanged.fetch_add(1, Ordering::Relaxed);
            tracing::info!(resource = %self.resource.qualified(), rv, "re-listed: nothing changed, no watch ended; ready");
        } else {
            tracing::info!(resource = %self.resource.qualified(), rv, "listed; ready");
        }
        Ok(())
    }

    /// Hands a saved state to the sink; the phase to go on with: a watch
    /// from the saved revision (its first event or bookmark makes the
    /// resource ready), or a list when nothing usable was saved.
    async fn restore(&mut self, saved: JoinHandle<Option<Saved>>) -> Phase {
        let Ok(Some(Saved { items, rv })) = saved.await else { return Phase::List };
        let objects = items.len();
        if let Err(e) = self.off_workers(|sink| sink.restore(items, rv)) {
            tracing::warn!(resource = %self.resource.qualified(), error = %e, "saved state not restored; listing");
            return Phase::List;
        }
        self.confirm(rv);
        tracing::info!(resource = %self.resource.qualified(), rv, objects, "restored the saved state; resuming the watch from it");
        Phase::Watch
    }

    /// Upstream's current revision, from a one-item quorum list; an answer is contact.
    async fn upstream_revision(&self) -> Result<u64, UpstreamError> {
        self.status.probes.fetch_add(1, Ordering::Relaxed);
        let path = format!("{}?limit=1", self.resource.collection_path());
        let body = self.client.get_bytes(&path).await?;
        self.status.touch();
        let rv = ListPage::parse(&body).map_err(decode)?.resource_version;
        if rv < self.rv {
            tracing::warn!(resource = %self.resource.qualified(), ours = self.rv, upstream = rv, "upstream revision went back");
        }
        Ok(rv)
    }

    /// Checks upstream's current revision against ours after a broken watch.
    async fn probe(&mut self) -> Result<Phase, (UpstreamError, Phase)> {
        if self.upstream_revision().await.map_err(|e| (e, Phase::Probe))? < self.rv {
            self.status.relisted(Relist::WentBack);
            return Ok(Phase::List);
        }
        // A restored state becomes ready here (a listed one already is).
        self.status.ready.store(true, Ordering::Release);
        Ok(Phase::Watch)
    }

    /// Runs `f` (a whole list or saved state into the sink: parsing and
    /// indexing every object takes seconds at 100,000 objects) so that, on a
    /// multi-threaded runtime, the worker hands its other tasks (requests,
    /// health checks, other resources) to the rest meanwhile.
    fn off_workers<T>(&mut self, f: impl FnOnce(&mut S) -> T) -> T {
        let multi_thread = tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread;
        if multi_thread { tokio::task::block_in_place(|| f(&mut self.sink)) } else { f(&mut self.sink) }
    }

    /// Upstream sent a revision at or above the store's: a restored state is
    /// ready (a listed one already is).
    fn proven(&self) {
        if !self.status.ready.swap(true, Ordering::AcqRel) {
            tracing::info!(resource = %self.resource.qualified(), rv = self.rv, "the resumed watch reached the saved state; ready");
        }
    }

    fn confirm(&mut self, rv: u64) {
        self.rv = rv;
        self.status.confirmed_rv.store(rv, Ordering::Release);
    }

    async fn watch(&mut self) -> WatchEnd {
        self.status.watches.fetch_add(1, Ordering::Relaxed);
        self.status.watching.store(true, Ordering::Relaxed);
        self.bookmarked = false;
        let started = Instant::now();
        let end = self.follow().await;
        self.status.watching.store(false, Ordering::Relaxed);
        // A watch that lasted two heartbeats without a bookmark shows the resource gets none: a
        // cached one gets a bookmark a minute once a heartbeat moved upstream's cache past its start.
        if started.elapsed() >= self.config.heartbeat * 2 && self.bookmarked == self.bookmarkless {
            self.bookmarkless = !self.bookmarked;
            let why = if self.bookmarkless {
                "upstream's watches of the resource carry no bookmarks (no watch cache): the next ask for an hour or two"
            } else {
                "upstream's watches of the resource carry bookmarks again"
            };
            tracing::info!(resource = %self.resource.qualified(), "{why}");
        }
        end
    }

    /// One upstream watch from the confirmed revision, until it ends.
    async fn follow(&mut self) -> WatchEnd {
        let shortest = if self.bookmarkless { BOOKMARKLESS_WATCH } else { self.config.watch_timeout };
        let timeout = shortest.mul_f64(rand::rng().random_range(1.0..2.0));
        let path = format!(
            "{}?watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}",
            self.resource.collection_path(),
            self.rv,
            timeout.as_secs().max(1)
        );
        let started = Instant::now();
        let resp = match self.client.get(&path).await {
            Ok(r) => r,
            Err(e) => return WatchEnd::Broken(e),
        };
        let status = resp.status();
        let mut body = resp.into_body();
        if !status.is_success() {
            let bytes = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
            return classify(UpstreamError::status(status, &bytes));
        }
        self.status.touch();
        let mut decoder = WatchDecoder::new(self.config.max_frame);
        // Without a byte for this long past its deadline, the watch is dead.
        let idle = timeout + Duration::from_secs(30);
        let proof_by = started + PROOF_WAIT;
        let mut heard = Instant::now();
        // When the confirmed revision last moved (or a heartbeat asked upstream to move it).
        let mut progressed = Instant::now();
        loop {
            let next = tokio::select! {
                frame = tokio::time::timeout(idle, body.frame()) => frame,
                _ = tokio::time::sleep_until(proof_by), if !self.status.is_ready() => return WatchEnd::Quiet,
                _ = tokio::time::sleep_until(heard.min(progressed) + self.config.heartbeat), if self.status.is_ready() => {
                    match tokio::time::timeout(HEARTBEAT_TIMEOUT, self.upstream_revision()).await {
                        Ok(Ok(rv)) if rv < self.rv => return WatchEnd::Relist(Relist::WentBack, format!("upstream's revision {rv} is below {}", self.rv)),
                        Ok(Ok(_)) => (heard, progressed) = (Instant::now(), Instant::now()),
                        Ok(Err(e)) => return WatchEnd::Broken(e),
                        Err(_) => return WatchEnd::Broken(UpstreamError::Transport("the heartbeat got no answer".into())),
                    }
                    continue;
                }
                () = self.status.relist.notified() => {
                    return WatchEnd::Relist(Relist::Inconsistent, "the consistency check found the store unlike upstream".into());
                }
                Some(proof) = next_proof(&mut self.proofs) => {
                    self.pending.push(proof);
                    let before = self.rv;
                    self.apply_proofs();
                    if self.rv > before {
                        progressed = Instant::now();
                    }
                    continue;
                }
            };
            let frame = match next {
                Err(_) => return WatchEnd::Broken(UpstreamError::Transport("the watch went silent".into())),
                Ok(None) if decoder.has_partial() => return WatchEnd::Broken(UpstreamError::Transport("the watch ended mid-frame".into())),
                Ok(None) if started.elapsed() + Duration::from_secs(1) >= timeout => return WatchEnd::Timeout,
                Ok(None) => return WatchEnd::Broken(UpstreamError::Transport("the watch ended early".into())),
                Ok(Some(Err(e))) => return WatchEnd::Broken(UpstreamError::Transport(e.to_string())),
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else { continue };
            self.status.touch();
            heard = Instant::now();
            decoder.push(&data);
            let before = self.rv;
            loop {
                match decoder.next_frame() {
                    Ok(Some(f)) => {
                        if let Some(end) = self.handle(f.typ, f.object) {
                            self.sink.flush();
                            return end;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => return WatchEnd::Relist(Relist::Protocol, e.to_string()),
                }
            }
            self.sink.flush();
            self.apply_proofs();
            if self.rv > before {
                progressed = Instant::now();
            }
        }
    }

    /// Confirms the newest proven revision the sink has caught up for; drops
    /// proofs of another epoch or already overtaken.
    fn apply_proofs(&mut self) {
        let epoch = self.sink.epoch();
        let rv = self.rv;
        self.pending.retain(|p| p.epoch == epoch && p.to > rv);
        if let Some(to) = self.pending.iter().filter(|p| p.through <= rv).map(|p| p.to).max() {
            self.sink.bookmark(to);
            self.sink.flush();
            self.confirm(to);
            self.pending.retain(|p| p.to > to);
        }
        if self.pending.len() > MAX_PENDING_PROOFS {
            self.pending.drain(..self.pending.len() - MAX_PENDING_PROOFS);
        }
    }

    /// Applies one frame; `Some` ends the watch.
    fn handle(&mut self, typ: EventType, object: Bytes) -> Option<WatchEnd> {
        self.bookmarked |= typ == EventType::Bookmark;
        match typ {
            EventType::Error => Some(classify(status_error(&object))),
            EventType::Bookmark => match object_revision(&object) {
                Ok(rv) if rv >= self.rv => {
                    self.sink.bookmark(rv);
                    self.confirm(rv);
                    self.proven();
                    None
                }
                // Older than a proven revision: nothing new.
                Ok(_) => None,
                Err(e) => Some(WatchEnd::Relist(Relist::Protocol, e.to_string())),
            },
            // The store refuses what does not follow; one revision may carry several events (a multi-key transaction).
            _ => match self.sink.apply(typ, object) {
                Ok(rv) if rv >= self.rv => {
                    self.status.events.fetch_add(1, Ordering::Relaxed);
                    self.confirm(rv);
                    self.proven();
                    None
                }
                Ok(rv) => Some(WatchEnd::Relist(Relist::Protocol, format!("an event at {rv} after {}", self.rv))),
                Err(e) => Some(WatchEnd::Relist(Relist::Protocol, e)),
            },
        }
    }
}

/// The next proof, when there is a proof channel (never otherwise).
async fn next_proof(proofs: &mut Option<mpsc::UnboundedReceiver<Proof>>) -> Option<Proof> {
    match proofs {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// 410 Gone and "too large resource version" need a re-list; anything else a retry.
fn classify(e: UpstreamError) -> WatchEnd {
    match &e {
        UpstreamError::Status { code: 410, .. } => WatchEnd::Relist(Relist::Compacted, e.to_string()),
        UpstreamError::Status { code: 504, message } if message.contains("Too large resource version") => {
            WatchEnd::Relist(Relist::TooLarge, e.to_string())
        }
        _ => WatchEnd::Broken(e),
    }
}

#[derive(Deserialize)]
struct StatusBody {
    #[serde(default)]
    code: u16,
    #[serde(default)]
    message: String,
}

fn status_error(object: &[u8]) -> UpstreamError {
    match serde_json::from_slice::<StatusBody>(object) {
        Ok(s) => UpstreamError::Status { code: s.code, message: s.message },
        Err(e) => UpstreamError::Decode(format!("an ERROR event without a Status: {e}")),
    }
}

fn decode(e: DecodeError) -> UpstreamError {
    UpstreamError::Decode(e.to_string())
}

/// Percent-encodes a query value.
fn encode_query(v: &str) -> String {
    form_urlencoded::byte_serialize(v.as_bytes()).collect()
}

//! One reflector per cached resource: a state machine that keeps a [`Sink`]
//! (the resource's store) exactly in step with the apiserver.
//!
//! ```text
//!   Restore ──saved state in──▶ Watch{rv, unshown} ──first event or bookmark: shown──┐
//!      │                           └──quiet ½ s──▶ Probe{rv, unshown} ──not back──────┤
//!      └──nothing usable──▶ List                                                      ▼
//!   List{after, at, serving} ──ok──▶ Watch{rv, shown} ──timeout──▶ Watch{last rv}  (resume, no gap)
//!    ▲   ▲                             │  └──broken / error──▶ backoff ▶ Probe{last rv} ──not back──▶ Watch
//!    │   │                             └──410 (at its oldest rv) / too large / went back──▶ List
//!    │   └──went back── Probe
//!    └──error── backoff
//! ```
//!
//! Each [`Phase`] holds what is valid in it, and decides readiness
//! ([`Phase::ready`]): reads are answered from the store in a `Watch` or
//! `Probe` whose state upstream has shown (listed, or a restored state a
//! watch event, bookmark or probe reached), and in a `List` only while
//! `serving` (a ready store re-listed after a compaction); never while a
//! saved state is restored.
//!
//! A 410 from upstream's watch cache names the oldest revision it still
//! watches from (an apiserver restarted: its cache starts at the present):
//! the re-list reads exactly that revision, so a list that finds the
//! store's state shows nothing changed in between, and the watch goes on
//! from it — writes since reach the store as events, and no client watch
//! ends. A re-list after a compaction keeps answering from the store
//! meanwhile; after any other cause, reads pass through until it is in.
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
//!   has not reached yet waits for it), so after [`watch::PROOF_WAIT`] the probe
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
//!   [`watch::BOOKMARKLESS_WATCH`], so that happens hours apart, not minutes.)
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
use std::sync::atomic::Ordering;
use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

mod sink;
mod status;
mod watch;

pub use sink::{Saved, Sink};
pub use status::{Health, ReflectorStatus, Relist};

use tokio::sync::mpsc;
use watch::WatchEnd;

use tokio::task::JoinHandle;

use super::UpstreamError;
use super::client::Client;
use super::freshness::Proof;
use apimachinery::decode::DecodeError;
use apimachinery::list::ListPage;
use apimachinery::resource::Resource;

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

/// The default [`ReflectorConfig::heartbeat`]: the apiserver's bookmark
/// period (60 s), its dispatch tick (1.25 s) and a margin.
pub const HEARTBEAT: Duration = Duration::from_secs(75);

/// How often a long list logs its progress.
const LIST_PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// What the reflector does next, with what is valid only then. The
/// resource is ready exactly as [`Phase::ready`] says of the phase the
/// reflector is in ([`Reflector::enter`]).
#[derive(Debug)]
enum Phase {
    /// Load a state saved by an earlier run (a warm restart); then watch
    /// from its revision, or list when nothing usable was saved.
    Restore(JoinHandle<Option<Saved>>),
    /// List the resource. `after`: why, when the store was listed before;
    /// `at`: the revision to list at exactly — the oldest one upstream's
    /// watch cache still watches from, after its 410: a list there that
    /// finds the store's state shows nothing changed in between, and the
    /// watch goes on from it, ending no client watch; `serving`: reads keep
    /// coming from the store meanwhile (a ready store re-listed after a
    /// compaction: [`Relist::keeps_serving`]). Then watch from the list's revision.
    List { after: Option<Relist>, at: Option<u64>, serving: bool },
    /// Check upstream's revision against the store's before watching again
    /// (after a broken watch, or a restored state's quiet one); then watch,
    /// or re-list if it went back.
    Probe(Held),
    /// Watch from the store's revision, until the watch ends ([`WatchEnd`]).
    Watch(Held),
}

/// What the store holds, in the phases that read from it.
#[derive(Debug, Clone, Copy)]
struct Held {
    /// The revision every event up to which is in the sink.
    rv: u64,
    /// Upstream has shown it has this revision: a listed state, or a
    /// restored one once a watch event, bookmark or probe reached it. Only
    /// such a state is served.
    shown: bool,
}

impl Phase {
    /// A re-list of the store at `held` for `cause`, at `at`.
    fn relist(held: Held, cause: Relist, at: Option<u64>) -> Phase {
        let serving = held.shown && cause.keeps_serving();
        Phase::List { after: Some(cause), at, serving }
    }

    /// The first list.
    const FIRST_LIST: Phase = Phase::List { after: None, at: None, serving: false };

    /// Whether reads may be answered from the store in this phase: the one
    /// place readiness is decided.
    fn ready(&self) -> bool {
        match self {
            Phase::Restore(_) => false,
            Phase::List { serving, .. } => *serving,
            Phase::Probe(held) | Phase::Watch(held) => held.shown,
        }
    }
}

/// Freshness proofs from catch-up watches (see [`super::freshness`]).
#[derive(Debug, Default)]
struct Proofs {
    /// Where they arrive (`None`: nowhere).
    rx: Option<mpsc::UnboundedReceiver<Proof>>,
    /// Proofs received but not applicable yet (the sink lags their `through`).
    pending: Vec<Proof>,
}

/// Follows one resource into a sink.
#[derive(Debug)]
pub struct Reflector<S> {
    client: Client,
    resource: Resource,
    config: ReflectorConfig,
    sink: S,
    status: Arc<ReflectorStatus>,
    /// The phase [`Reflector::run`] starts in.
    start: Phase,
    proofs: Proofs,
    /// Learnt of upstream, whatever the phase: its watches of this resource
    /// carry no bookmarks (see [`watch::BOOKMARKLESS_WATCH`]).
    bookmarkless: bool,
}

impl<S: Sink> Reflector<S> {
    /// A reflector for `resource`; nothing happens until [`Reflector::run`].
    pub fn new(client: Client, resource: Resource, config: ReflectorConfig, sink: S) -> Self {
        Reflector {
            client,
            resource,
            config,
            sink,
            status: Arc::default(),
            start: Phase::FIRST_LIST,
            proofs: Proofs::default(),
            bookmarkless: false,
        }
    }

    /// Starts from the state `saved` yields, if any (a warm restart), instead of a list.
    pub fn with_saved(mut self, saved: JoinHandle<Option<Saved>>) -> Self {
        self.start = Phase::Restore(saved);
        self
    }

    /// Also applies the freshness proofs that arrive on `proofs`.
    pub fn with_proofs(mut self, proofs: mpsc::UnboundedReceiver<Proof>) -> Self {
        self.proofs.rx = Some(proofs);
        self
    }

    /// The shared status (readiness, counters).
    pub fn status(&self) -> Arc<ReflectorStatus> {
        self.status.clone()
    }

    /// Runs until the task is dropped.
    pub async fn run(mut self) {
        let mut phase = std::mem::replace(&mut self.start, Phase::FIRST_LIST);
        let mut failures = 0u32;
        loop {
            let was_ready = self.enter(&phase);
            let result = match phase {
                Phase::Restore(saved) => Ok(self.restore(saved).await),
                Phase::List { after, at, serving } => {
                    self.list((after, at, serving), was_ready).await.map(|rv| Phase::Watch(Held { rv, shown: true }))
                }
                Phase::Probe(held) => self.probe(held).await,
                Phase::Watch(mut held) => match self.watch(&mut held).await {
                    WatchEnd::Timeout => Ok(Phase::Watch(held)),
                    WatchEnd::Quiet => Ok(Phase::Probe(held)),
                    WatchEnd::Broken(e) => {
                        // Upstream may come back another version: learn again (`super::capability`).
                        self.status.capabilities.lost_touch();
                        Err((e, Phase::Probe(held)))
                    }
                    WatchEnd::Expired { at, why } => {
                        tracing::info!(resource = %self.resource.qualified(), rv = held.rv, at, %why, "re-listing");
                        self.status.relisted(Relist::Compacted);
                        Ok(Phase::relist(held, Relist::Compacted, at))
                    }
                    WatchEnd::Relist(cause, why) => {
                        tracing::info!(resource = %self.resource.qualified(), rv = held.rv, %why, "re-listing");
                        self.status.relisted(cause);
                        Ok(Phase::relist(held, cause, None))
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

    /// Publishes the readiness `phase` decides ([`Phase::ready`]) as the
    /// reflector enters it (or as a watch's state is shown); whether it
    /// was ready before.
    fn enter(&self, phase: &Phase) -> bool {
        self.status.ready.swap(phase.ready(), Ordering::AcqRel)
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

    /// Lists the resource (`cause`, `at`, `serving`: [`Phase::List`]'s),
    /// hands it to the sink; the revision it was listed at.
    async fn list(
        &mut self,
        (cause, at, serving): (Option<Relist>, Option<u64>, bool),
        was_ready: bool,
    ) -> Result<u64, (UpstreamError, Phase)> {
        self.status.lists.fetch_add(1, Ordering::Relaxed);
        let base = format!("{}?limit={}", self.resource.collection_path(), self.config.page_size);
        let mut items = Vec::new();
        let mut path = match at {
            Some(rv) => format!("{base}&resourceVersion={rv}&resourceVersionMatch=Exact"),
            None => base.clone(),
        };
        // A list at a revision that failed is tried again as a consistent one.
        let retry = || Phase::List { after: cause, at: None, serving };
        if serving {
            tracing::info!(resource = %self.resource.qualified(), "re-listing; reads keep coming from the last state until it is in");
        } else if was_ready {
            tracing::info!(resource = %self.resource.qualified(), "not ready while re-listing: reads pass through");
        }
        let relisting = self.status.lists.load(Ordering::Relaxed) > 1;
        self.status.capabilities.lost_touch();
        let mut progress = Instant::now();
        let rv = loop {
            let body = self.client.get_bytes(&path).await.map_err(|e| (e, retry()))?;
            self.status.touch();
            let page = ListPage::parse(&body).map_err(|e| (decode(e), retry()))?;
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
        let changed = self.off_workers(|sink| sink.replace(items, rv)).map_err(|e| (UpstreamError::Refused(Box::new(e)), retry()))?;
        self.confirm(rv);
        if relisting && !changed {
            self.status.relists_unchanged.fetch_add(1, Ordering::Relaxed);
            tracing::info!(resource = %self.resource.qualified(), rv, "re-listed: nothing changed, no watch ended; ready");
        } else {
            tracing::info!(resource = %self.resource.qualified(), rv, "listed; ready");
        }
        Ok(rv)
    }

    /// Hands a saved state to the sink; the phase to go on with: a watch
    /// from the saved revision (its first event or bookmark makes the
    /// resource ready), or a list when nothing usable was saved.
    async fn restore(&mut self, saved: JoinHandle<Option<Saved>>) -> Phase {
        let Ok(Some(Saved { items, rv })) = saved.await else { return Phase::FIRST_LIST };
        let objects = items.len();
        if let Err(e) = self.off_workers(|sink| sink.restore(items, rv)) {
            tracing::warn!(resource = %self.resource.qualified(), error = %e, "saved state not restored; listing");
            return Phase::FIRST_LIST;
        }
        self.confirm(rv);
        tracing::info!(resource = %self.resource.qualified(), rv, objects, "restored the saved state; resuming the watch from it");
        Phase::Watch(Held { rv, shown: false })
    }

    /// Upstream's current revision, from a consistent list of one name, for
    /// a store at `ours`; an answer is contact.
    async fn upstream_revision(&self, ours: u64) -> Result<u64, UpstreamError> {
        self.status.probes.fetch_add(1, Ordering::Relaxed);
        let body = self.client.get_bytes(&self.resource.probe_path()).await?;
        self.status.touch();
        let rv = ListPage::parse(&body).map_err(decode)?.resource_version;
        if rv < ours {
            tracing::warn!(resource = %self.resource.qualified(), ours, upstream = rv, "upstream revision went back");
        }
        Ok(rv)
    }

    /// Checks upstream's current revision against the store's `held` one:
    /// not gone back, it shows the store's state (a restored state's proof).
    async fn probe(&mut self, held: Held) -> Result<Phase, (UpstreamError, Phase)> {
        if self.upstream_revision(held.rv).await.map_err(|e| (e, Phase::Probe(held)))? < held.rv {
            self.status.relisted(Relist::WentBack);
            return Ok(Phase::relist(held, Relist::WentBack, None));
        }
        Ok(Phase::Watch(Held { rv: held.rv, shown: true }))
    }

    /// Runs `f` (a whole list or saved state into the sink: parsing and
    /// indexing every object takes seconds at 100,000 objects) so that, on a
    /// multi-threaded runtime, the worker hands its other tasks (requests,
    /// health checks, other resources) to the rest meanwhile.
    fn off_workers<T>(&mut self, f: impl FnOnce(&mut S) -> T) -> T {
        let multi_thread = tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread;
        if multi_thread { tokio::task::block_in_place(|| f(&mut self.sink)) } else { f(&mut self.sink) }
    }

    /// The sink holds every event up to `rv`.
    fn confirm(&self, rv: u64) {
        self.status.confirmed_rv.store(rv, Ordering::Release);
    }
}

fn decode(e: DecodeError) -> UpstreamError {
    UpstreamError::Decode(Box::new(e))
}

/// Percent-encodes a query value.
fn encode_query(v: &str) -> String {
    form_urlencoded::byte_serialize(v.as_bytes()).collect()
}

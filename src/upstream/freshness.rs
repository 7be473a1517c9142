//! Freshness: proving that a resource's store holds every write upstream
//! had committed when a consistent read arrived, so the read can be
//! answered from memory — or learning in time that it cannot, and passing
//! the read through.
//!
//! The argument.
//!
//! 1. *A revision X committed at or after the read arrived.* A probe is a
//!    one-item list without `resourceVersion`: a quorum read, which the
//!    apiserver answers with etcd's current revision (1.31+ serves it from
//!    its watch cache after waiting for the cache to reach that revision).
//!    Probes are coalesced per resource as in etcd's ReadIndex: a read that
//!    arrives at time t waits for a probe *sent* after t (the prober takes a
//!    new generation number immediately before sending; a reader asks for
//!    the generation after the current one), so one probe in flight serves
//!    every read that arrived before it was sent, and every X is at least
//!    every revision committed before its reads arrived.
//! 2. *The store reaches X.* `confirmed_rv >= X` means the store holds every
//!    event of the resource up to X (store invariant), so its head snapshot
//!    is the resource's state at or after X: fresh. A busy resource's own
//!    watch carries the store past X within milliseconds.
//! 3. *A quiet resource is proven.* Its watch delivers nothing, and its
//!    bookmarks come a minute apart. So kache opens a catch-up watch from
//!    the store's confirmed revision C with a 3 s timeout: upstream replays
//!    the resource's events after C at once, and sends a bookmark B about
//!    1 s in (2 s before the deadline, at its next 1–1.25 s tick). The probe
//!    was a consistent read of this resource, which made upstream's cache
//!    reach X before answering, so a bookmark sent after it carries B >= X
//!    (measured on kube-apiserver 1.36: 10 of 10 trials). Every event of the
//!    resource in (C, B] came on the catch-up stream, in order; once the
//!    store's own stream has applied the last of them (E), the store holds
//!    every event up to B, and the reflector — the store's only writer —
//!    moves `confirmed_rv` to B ([`Proof`]). Revisions are etcd's, global
//!    and the same on every apiserver of the cluster, so this holds behind
//!    a load balancer too; a proof is applied only in the store epoch it
//!    was measured in, never across a re-list.
//!
//! A read waits at most its budget, and only when the store is behind X
//! and the resource's recent event rate makes an event within the budget
//! likely; a quiet resource's read goes upstream at once (a catch-up then
//! serves the reads that name X later, such as a paged list's continue
//! pages, which wait for a revision rather than for a budget). A probe that
//! fails, or a store that does not reach X in time, sends the read upstream. Never is a snapshot
//! older than X served: the caller reads the head only after [`Freshness`]
//! returned X with `confirmed_rv >= X`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use apimachinery::list::ListPage;
use apimachinery::resource::Resource;
use apimachinery::watch::{EventType, WatchDecoder, object_revision};
use http_body_util::BodyExt;
use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc, watch};

use super::client::Client;
use crate::store::StoreReader;

/// A catch-up watch's timeout: its bookmark comes 2 s before, about 1 s in.
const CATCH_UP_SECONDS: u64 = 3;

/// Longest a probe or a catch-up may take before it counts as failed.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(5);

/// The recent past over which a resource's event rate is measured.
const RATE_WINDOW: Duration = Duration::from_secs(2);

/// A read waits for the store only when this many of the resource's events
/// are expected within its budget (at the recent rate): then one comes in
/// time 86% of the time; otherwise waiting would mostly add latency before
/// the read is passed through anyway.
const EVENTS_EXPECTED: f64 = 2.0;

/// Pause after a catch-up that proved nothing.
const RETRY_AFTER: Duration = Duration::from_millis(250);

/// Largest watch frame a catch-up accepts.
const MAX_FRAME: usize = 64 << 20;

/// Evidence that the store may move `confirmed_rv` to `to`: upstream had no
/// event of the resource in `(through, to]`. Valid in store epoch `epoch`
/// once `confirmed_rv >= through`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proof {
    /// The store epoch the catch-up started in.
    pub epoch: u64,
    /// The store must hold every event up to here first.
    pub through: u64,
    /// The revision the store may then confirm.
    pub to: u64,
}

/// Why a consistent read is not answered from memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum NotFresh {
    /// The store is behind upstream and the resource's events are too rare
    /// for one to arrive within the budget: upstream answers sooner.
    Quiet,
    /// The probe failed or took too long.
    Probe,
    /// The store did not reach upstream's revision within the budget.
    Timeout,
}

impl NotFresh {
    /// The reason, as metrics and logs name it.
    pub fn as_str(self) -> &'static str {
        match self {
            NotFresh::Quiet => "quiet",
            NotFresh::Probe => "probe",
            NotFresh::Timeout => "timeout",
        }
    }
}

/// Upper bounds (seconds) of the buckets of `kache_consistent_wait_seconds`.
pub const WAIT_BUCKETS: [f64; 10] = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0, 3.0];

/// Counters of one resource's freshness work.
#[derive(Debug)]
pub struct FreshnessStats {
    /// Probes sent.
    pub probes: AtomicU64,
    /// Catch-up watches opened.
    pub catch_ups: AtomicU64,
    /// Catch-ups that ended with a proof.
    pub proofs: AtomicU64,
    /// Consistent reads proven fresh (answered from memory).
    pub fresh: AtomicU64,
    /// Consistent reads passed through: quiet, probe failed, timed out.
    pub passed: [AtomicU64; 3],
    /// How long the reads proven fresh waited (`kache_consistent_wait_seconds`).
    waited: metrics::Histogram,
}

impl FreshnessStats {
    fn new(resource: &Resource) -> FreshnessStats {
        FreshnessStats {
            probes: AtomicU64::new(0),
            catch_ups: AtomicU64::new(0),
            proofs: AtomicU64::new(0),
            fresh: AtomicU64::new(0),
            passed: Default::default(),
            waited: metrics::histogram!("kache_consistent_wait_seconds", "resource" => resource.qualified()),
        }
    }

    fn record(&self, outcome: Result<Duration, NotFresh>) {
        match outcome {
            Ok(waited) => {
                self.fresh.fetch_add(1, Ordering::Relaxed);
                self.waited.record(waited.as_secs_f64());
            }
            Err(why) => {
                self.passed[why as usize].fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A probe's outcome: its generation, and upstream's revision (`None`: it failed).
#[derive(Debug, Clone, Copy)]
struct Probed {
    generation: u64,
    revision: Option<u64>,
}

/// Generations: the last probe started, and the newest one a reader waits for.
#[derive(Debug, Default)]
struct Generations {
    started: u64,
    wanted: u64,
}

/// The freshness machinery of one resource.
#[derive(Debug)]
pub struct Freshness {
    client: Client,
    resource: Resource,
    store: StoreReader,
    proofs: mpsc::UnboundedSender<Proof>,
    generations: Mutex<Generations>,
    wake: Notify,
    probed: watch::Sender<Probed>,
    catching_up: AtomicBool,
    caught_up: watch::Sender<u64>,
    /// Counters.
    pub stats: FreshnessStats,
}

impl Freshness {
    /// The machinery for `resource`, whose store `store` the reflector that
    /// receives `proofs` fills. The prober runs in [`Freshness::run`].
    pub fn new(client: Client, resource: Resource, store: StoreReader, proofs: mpsc::UnboundedSender<Proof>) -> Freshness {
        let stats = FreshnessStats::new(&resource);
        Freshness {
            client,
            resource,
            store,
            proofs,
            generations: Mutex::new(Generations::default()),
            wake: Notify::new(),
            probed: watch::Sender::new(Probed { generation: 0, revision: None }),
            catching_up: AtomicBool::new(false),
            caught_up: watch::Sender::new(0),
            stats,
        }
    }

    /// The prober: sends a probe whenever a reader waits for one, until dropped.
    pub async fn run(self: Arc<Self>) {
        loop {
            let generation = {
                let mut g = self.generations.lock();
                (g.wanted > g.started).then(|| {
                    g.started += 1;
                    g.started
                })
            };
            let Some(generation) = generation else {
                // `notify_one` keeps a permit for a reader that came in between.
                self.wake.notified().await;
                continue;
            };
            self.stats.probes.fetch_add(1, Ordering::Relaxed);
            let revision = tokio::time::timeout(UPSTREAM_TIMEOUT, self.probe()).await.ok().flatten();
            self.probed.send_replace(Probed { generation, revision });
        }
    }

    async fn probe(&self) -> Option<u64> {
        let body = self.client.get_bytes(&format!("{}?limit=1", self.resource.collection_path())).await.ok()?;
        Some(ListPage::parse(&body).ok()?.resource_version)
    }

    /// A revision upstream had committed when this was called, from a probe sent after it.
    async fn committed(&self, by: Instant) -> Result<u64, NotFresh> {
        let want = {
            let mut g = self.generations.lock();
            g.wanted = g.wanted.max(g.started + 1);
            g.started + 1
        };
        self.wake.notify_one();
        let mut rx = self.probed.subscribe();
        match tokio::time::timeout_at(by.into(), rx.wait_for(|p| p.generation >= want)).await {
            Ok(Ok(p)) => p.revision.ok_or(NotFresh::Probe),
            _ => Err(NotFresh::Probe),
        }
    }

    /// For a consistent read: a revision X upstream had committed when the
    /// read arrived, once the store has confirmed it (`confirmed_rv >= X`),
    /// within `budget`.
    pub async fn consistent(self: &Arc<Self>, budget: Duration) -> Result<u64, NotFresh> {
        let started = Instant::now();
        let outcome = self.prove(started + budget).await;
        self.stats.record(outcome.map(|_| started.elapsed()));
        outcome
    }

    async fn prove(self: &Arc<Self>, by: Instant) -> Result<u64, NotFresh> {
        let held = self.store.view().confirmed_rv();
        let x = self.committed(by).await?;
        // Upstream cannot be behind what kache already holds, unless its
        // revisions went back (an etcd restore): until the reflector
        // re-lists, nothing kache holds is proven.
        if x < held {
            return Err(NotFresh::Probe);
        }
        if self.store.view().confirmed_rv() >= x {
            return Ok(x);
        }
        if self.quiet(by.saturating_duration_since(Instant::now())) {
            // As the apiserver's cache follows etcd's progress, prove the
            // quiet store reached `x` meanwhile: the pages that continue
            // this read (at `x`) are then answered from memory.
            self.catch_up();
            return Err(NotFresh::Quiet);
        }
        if self.reach(x, by).await { Ok(x) } else { Err(NotFresh::Timeout) }
    }

    /// Whether the store reaches `rv` by `by`; a catch-up proves a quiet
    /// resource's progress meanwhile.
    pub async fn reach(self: &Arc<Self>, rv: u64, by: Instant) -> bool {
        let mut published = self.store.subscribe();
        let mut caught_up = self.caught_up.subscribe();
        loop {
            if self.store.view().confirmed_rv() >= rv {
                return true;
            }
            self.catch_up();
            let changed = async {
                tokio::select! {
                    r = published.changed() => r.is_ok(),
                    r = caught_up.changed() => r.is_ok(),
                }
            };
            match tokio::time::timeout_at(by.into(), changed).await {
                Ok(true) => {}
                _ => return self.store.view().confirmed_rv() >= rv,
            }
        }
    }

    /// Whether the resource's recent events are too rare for one to come within `budget`.
    fn quiet(&self, budget: Duration) -> bool {
        let since = Instant::now().checked_sub(RATE_WINDOW).unwrap_or_else(Instant::now);
        let rate = self.store.view().events_since(since) as f64 / RATE_WINDOW.as_secs_f64();
        rate * budget.as_secs_f64() < EVENTS_EXPECTED
    }

    /// Starts a catch-up watch unless one is running.
    fn catch_up(self: &Arc<Self>) {
        if self.catching_up.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            me.stats.catch_ups.fetch_add(1, Ordering::Relaxed);
            match tokio::time::timeout(UPSTREAM_TIMEOUT, me.catch_up_once()).await {
                Ok(Some(proof)) => {
                    me.stats.proofs.fetch_add(1, Ordering::Relaxed);
                    // The reflector may be gone (kache is stopping): nothing to prove then.
                    let _ = me.proofs.send(proof);
                }
                // Readers still waiting start another; not at once, so a failing upstream is not hammered.
                _ => tokio::time::sleep(RETRY_AFTER).await,
            }
            me.catching_up.store(false, Ordering::Release);
            me.caught_up.send_modify(|n| *n += 1);
        });
    }

    /// One catch-up watch from the store's confirmed revision, until its first bookmark.
    async fn catch_up_once(&self) -> Option<Proof> {
        let view = self.store.view();
        let (epoch, from) = (view.epoch(), view.confirmed_rv());
        let path = format!(
            "{}?watch=1&allowWatchBookmarks=true&resourceVersion={from}&timeoutSeconds={CATCH_UP_SECONDS}",
            self.resource.collection_path()
        );
        let resp = self.client.get(&path).await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let mut body = resp.into_body();
        let mut decoder = WatchDecoder::new(MAX_FRAME);
        let mut through = from;
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.ok()?.into_data() else { continue };
            decoder.push(&data);
            while let Some(f) = decoder.next_frame().ok()? {
                let rv = match f.typ {
                    EventType::Error => return None,
                    _ => object_revision(&f.object).ok()?,
                };
                if f.typ == EventType::Bookmark {
                    return (rv > through).then_some(Proof { epoch, through, to: rv });
                }
                through = through.max(rv);
            }
        }
        None
    }
}

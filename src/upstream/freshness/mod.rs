//! Freshness: proving that a resource's store holds every write upstream
//! had committed when a consistent read arrived, so the read can be
//! answered from memory — or learning in time that it cannot, and passing
//! the read through.
//!
//! The argument.
//!
//! 1. *A revision X committed at or after the read arrived.* A probe is a
//!    list of the resource without `resourceVersion` that names one object
//!    ([`Resource::probe_path`]): a quorum read, which the apiserver answers
//!    with etcd's current revision (1.31+ serves it from its watch cache
//!    after waiting for the cache to reach that revision, then reads one
//!    key, so the probe costs the same for ten objects or fifty thousand).
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
//!    moves `confirmed_rv` to B ([`Proof`]). While collection reads keep
//!    coming, catch-ups are kept going, one every half second, so a proof
//!    comes on every tick of upstream's bookmark timer (`catch_up`).
//!    Revisions are etcd's, global and the same on every apiserver of the
//!    cluster, so this holds behind a load balancer too; a proof is applied
//!    only in the store epoch it was measured in, never across a re-list.
//!
//! Whether to prove at all is a matter of cost, not rule, and is decided
//! before any probe ([`super::plan`]): [`Freshness::plan`] measures, a read
//! that memory would not answer sooner goes upstream at once
//! ([`Freshness::go_upstream`]: a list starts a catch-up for the reads at
//! its revision that follow, and now and then a probe is sent for no read,
//! [`SAMPLE_EVERY`], so the hit rate stays measured). A read that chose
//! memory is proven by a [`Proving`], owned by the caller that races it:
//! [`Proving::proven`] gives the proof, and [`Proving::upstream_due`] says
//! when the read should go upstream as well, because its proof is later
//! than its plan expected ([`Plan::hedge_at`]) or failed. Never is a
//! snapshot older than X served: only a [`Proven`], which only
//! [`Proving::proven`] makes once `confirmed_rv >= X`, lets a consistent
//! read use the head.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use apimachinery::list::ListPage;
use apimachinery::resource::Resource;
use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc, watch};

mod catch_up;
mod stats;

use catch_up::Warmth;
pub use stats::{FreshnessStats, Observed, WAIT_BUCKETS};

use super::client::Client;
use super::costs::{Class, Costs, SmallLists};
use super::plan::{Measured, Plan, Policy, Read};
use crate::store::StoreReader;

/// A resource whose consistent reads pass through is probed for no read at
/// most this often, to keep measuring how often its store is already fresh:
/// a probe (a one-item list) costs the apiserver less than any read it
/// rides beside, and the measure must follow within a few reads a quiet
/// resource whose catch-ups, started by those reads, now keep it fresh —
/// sampled every 10 s, a Table page of 500 (50 ms upstream) went upstream
/// 150 times of 150 on kube-apiserver 1.36.2, its store fresh most of them.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// Longest a probe or a catch-up may take before it counts as failed.
pub(super) const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(5);

/// The recent past over which a resource's event rate is measured.
const RATE_WINDOW: Duration = Duration::from_secs(2);

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
    /// Upstream is expected to answer sooner than proof plus memory ([`Plan`]).
    Sooner,
    /// The probe failed or took too long.
    Probe,
    /// The store did not reach upstream's revision within the budget.
    Timeout,
    /// The proof was late, and upstream, asked meanwhile, answered first ([`Proving`]).
    Late,
}

impl NotFresh {
    /// Every reason, in `repr` order.
    pub const ALL: [NotFresh; 4] = [NotFresh::Sooner, NotFresh::Probe, NotFresh::Timeout, NotFresh::Late];

    /// The reason, as metrics and logs name it.
    pub fn as_str(self) -> &'static str {
        match self {
            NotFresh::Sooner => "sooner upstream",
            NotFresh::Probe => "probe",
            NotFresh::Timeout => "timeout",
            NotFresh::Late => "late proof",
        }
    }
}

/// A consistent read's proof: upstream had committed `revision` when the
/// read arrived, and the store has confirmed it. Only [`Proving::proven`]
/// makes one; a consistent read answers from the head only holding one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proven {
    revision: u64,
}

impl Proven {
    /// The revision proven.
    pub fn revision(self) -> u64 {
        self.revision
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
    warmth: Warmth,
    caught_up: watch::Sender<u64>,
    /// What probes and catch-ups showed.
    pub observed: Mutex<Observed>,
    /// What the resource's small consistent lists took upstream.
    pub small_lists: Arc<SmallLists>,
    /// Counters.
    pub stats: FreshnessStats,
}

impl Freshness {
    /// The client it asks upstream with (shared by the resource's other probes).
    pub fn client(&self) -> &Client {
        &self.client
    }

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
            warmth: Warmth::default(),
            caught_up: watch::Sender::new(0),
            observed: Mutex::default(),
            small_lists: Arc::default(),
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
            let sent = Instant::now();
            let known_fresh = {
                let mut o = self.observed.lock();
                o.probed_at = Some(sent);
                o.known_fresh(self.store.view().confirmed_rv())
            };
            let revision = tokio::time::timeout(UPSTREAM_TIMEOUT, self.probe()).await.ok().flatten();
            if let Some(x) = revision {
                self.client.costs().record_latency(sent.elapsed());
                let caught_up = self.store.view().confirmed_rv() >= x;
                self.observed.lock().probed(x, caught_up, known_fresh);
            }
            self.probed.send_replace(Probed { generation, revision });
        }
    }

    async fn probe(&self) -> Option<u64> {
        let body = self.client.get_bytes(&self.resource.probe_path()).await.ok()?;
        Some(ListPage::parse(&body).ok()?.resource_version)
    }

    /// Asks the prober for a probe sent after now; returns its generation.
    fn want_probe(&self) -> u64 {
        let want = {
            let mut g = self.generations.lock();
            g.wanted = g.wanted.max(g.started + 1);
            g.started + 1
        };
        self.wake.notify_one();
        want
    }

    /// A revision upstream had committed when this was called, from a probe sent after it.
    async fn committed(&self, by: Instant) -> Result<u64, NotFresh> {
        let want = self.want_probe();
        let mut rx = self.probed.subscribe();
        match tokio::time::timeout_at(by.into(), rx.wait_for(|p| p.generation >= want)).await {
            Ok(Ok(p)) => p.revision.ok_or(NotFresh::Probe),
            _ => Err(NotFresh::Probe),
        }
    }

    /// The plan for a consistent read `read` of `class`: what it is
    /// expected to cost from memory and upstream, from what was measured.
    pub fn plan(&self, read: Read, class: Class, policy: Policy) -> Plan {
        let costs: &Costs = self.client.costs();
        let now = Instant::now();
        let since = now.checked_sub(RATE_WINDOW).unwrap_or(now);
        let events_per_second = self.store.view().events_since(since) as f64 / RATE_WINDOW.as_secs_f64();
        let confirmed = self.store.view().confirmed_rv();
        let measured = {
            let o = self.observed.lock();
            let (proof_delay, catching_up_for) = o.next_proof(self.warmth.is_warm(), now);
            Measured {
                round_trip: costs.latency(),
                proof_delay,
                catching_up_for,
                events_per_second,
                hit_ratio: o.hit_chance(confirmed),
                upstream: match read.collection {
                    // A list costs upstream at least what its resource's small lists took.
                    true => costs.upstream_read(class, read.bytes).max(self.small_lists.took()),
                    false => costs.upstream_read(class, read.bytes),
                },
                making: costs.memory_read(class, read.bytes),
            }
        };
        let plan = Plan::of(read, &measured, policy);
        *self.stats.last_plan.lock() = Some(plan);
        plan
    }

    /// A proof's expected delay from its start, and whether catch-ups are
    /// kept going ([`Freshness::keep_warm`]): for metrics.
    pub(crate) fn expected_proof(&self) -> (Duration, bool) {
        let warm = self.warmth.is_warm();
        (self.observed.lock().next_proof(warm, Instant::now()).0, warm)
    }

    /// A read goes upstream at once, its plan having chosen upstream: a
    /// probe now and then keeps the hit rate measured (a collection read
    /// keeps catch-ups going for the reads that follow it,
    /// [`Freshness::keep_warm`]). The reason it passes through.
    pub(crate) fn go_upstream(self: &Arc<Self>) -> NotFresh {
        let stale = self.observed.lock().probed_at.is_none_or(|at| at.elapsed() >= SAMPLE_EVERY);
        if stale {
            self.want_probe();
        }
        self.stats.record(Err(NotFresh::Sooner));
        NotFresh::Sooner
    }

    /// The proof of a read whose `plan` chose memory, from now.
    pub fn proving(self: &Arc<Self>, plan: Plan) -> Proving {
        Proving { fresh: self.clone(), plan, started: Instant::now(), hedge: watch::Sender::new(None) }
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
}

/// One read's proof, raced by its caller against upstream: the proof
/// itself ([`Proving::proven`]) and when the read should go upstream as
/// well ([`Proving::upstream_due`]) — once the proof is later than the
/// plan expected, or memory gave up ([`Proving::go_upstream`]). The first
/// answer's head wins and the other is dropped, so a wrong choice
/// costs upstream's time plus the expected wait, never a timeout first and
/// upstream from nothing after; and the apiserver is asked only for reads
/// whose proof is already late.
#[derive(Debug)]
pub struct Proving {
    fresh: Arc<Freshness>,
    plan: Plan,
    started: Instant,
    /// When the read should also go upstream (`None`: not yet known).
    hedge: watch::Sender<Option<Instant>>,
}

impl Proving {
    /// A revision X upstream had committed when the read arrived, once the
    /// store has confirmed it (`confirmed_rv >= X`); or why the read goes
    /// upstream: the probe failed, or the store did not reach X in time.
    pub async fn proven(&self) -> Result<Proven, NotFresh> {
        let outcome = self.prove().await;
        self.fresh.stats.record(outcome.map(|_| self.started.elapsed()));
        outcome.map(|revision| Proven { revision })
    }

    async fn prove(&self) -> Result<u64, NotFresh> {
        let fresh = &self.fresh;
        let held = fresh.store.view().confirmed_rv();
        let x = fresh.committed(Instant::now() + UPSTREAM_TIMEOUT).await?;
        // Upstream cannot be behind what kache already holds, unless its
        // revisions went back (an etcd restore): until the reflector
        // re-lists, nothing kache holds is proven.
        if x < held {
            return Err(NotFresh::Probe);
        }
        if fresh.store.view().confirmed_rv() >= x {
            return Ok(x);
        }
        let now = Instant::now();
        self.hedge.send_replace(Some(self.plan.hedge_at(now)));
        // Past its hedge, memory still races upstream, for as long as a catch-up may take.
        if fresh.reach(x, self.plan.gives_up_at(now)).await { Ok(x) } else { Err(NotFresh::Timeout) }
    }

    /// The read goes upstream now (memory gave up).
    pub(crate) fn go_upstream(&self) {
        self.hedge.send_replace(Some(Instant::now()));
    }

    /// Resolves once the read should (also) go upstream; never, for a read
    /// proven in time.
    pub(crate) async fn upstream_due(&self) {
        let mut rx = self.hedge.subscribe();
        loop {
            let at = *rx.borrow_and_update();
            match at {
                Some(at) if at <= Instant::now() => return,
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at.into()) => return,
                        _ = rx.changed() => {}
                    }
                }
                // The sender lives in `self`: `changed` fails only if it is gone, which borrowing `self` rules out.
                None => {
                    let _ = rx.changed().await;
                }
            }
        }
    }
}

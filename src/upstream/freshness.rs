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
//! Whether to prove at all is a matter of cost, not rule ([`Freshness::plan`]).
//! Answered upstream, a read costs one consistent round trip plus the
//! transfer of its answer at upstream's measured throughput; from memory,
//! the probe's round trip (the same) plus the expected wait for the store
//! to reach X plus the transfer at kache's measured throughput. The wait
//! is expected from what this resource showed: how often a probe found the
//! store already there (a resource whose upstream revision is not moving;
//! until a probe has shown it, assumed always, so the first read tries
//! memory and measures it at the cost of one probe if wrong),
//! else the sooner of its next event (at its recent event rate) and the
//! proof (the measured delay of its catch-ups, less the age of one under
//! way, which the read joins). A read that memory would not answer sooner
//! goes upstream at once, with no probe and no wait; a list that goes
//! upstream starts a catch-up for the reads that follow it (a paged list's
//! continue pages name its revision), and now and then a probe is sent
//! for no read ([`SAMPLE_EVERY`]) so the hit rate stays measured. A
//! streaming list costs upstream [`STREAM_COST`] lists. A read that chose
//! memory and whose proof is later than expected (the expected wait after
//! its probe's answer, and a quarter more) is sent upstream as well — a hedge
//! ([`Decision`]): the first answer's head wins and the other road is
//! dropped, so a wrong choice costs upstream's time plus the expected
//! wait, never a timeout first and upstream from nothing after. The hedge
//! is not sent at once: a read the store proves in time costs the
//! apiserver nothing; and memory goes on racing it for as long as a
//! catch-up may take (a read that gives up on memory is one whose hedge
//! has not answered either). Nor is a hedge sent when upstream, though it would
//! answer its head first, would end its answer later than memory at the
//! latest (a catch-up proves within its timeout or not at all): a large
//! list waits for a late proof, and is hedged only once the catch-up failed. The memory side gives up after twice the longer of
//! its two expected costs; a probe that fails, or a store that does not
//! reach X by then, leaves the read to upstream. Never is a snapshot older
//! than X served: the caller reads the head only after [`Freshness`]
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
use super::costs::{Average, Costs};
use crate::store::StoreReader;

/// A catch-up watch's timeout: its bookmark comes 2 s before, about 1 s in.
/// Also the proof's expected delay until one was measured: the longest it takes.
const CATCH_UP_SECONDS: u64 = 3;

/// A resource whose consistent reads pass through is probed for no read at
/// most this often, to keep measuring how often its store is already fresh.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(10);

/// Longest a probe or a catch-up may take before it counts as failed.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(5);

/// The recent past over which a resource's event rate is measured.
const RATE_WINDOW: Duration = Duration::from_secs(2);

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
    /// Upstream is expected to answer sooner than proof plus memory ([`Plan`]).
    Sooner,
    /// The probe failed or took too long.
    Probe,
    /// The store did not reach upstream's revision within the budget.
    Timeout,
    /// The proof was late, and upstream, asked meanwhile, answered first ([`Decision`]).
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

/// A consistent read, as its cost is judged.
#[derive(Debug, Clone, Copy)]
pub struct Read {
    /// The bytes of the objects it would send (their JSON, as upstream
    /// stores them): what upstream must read and encode to answer it.
    pub bytes: u64,
    /// Reads at its revision are likely to follow (a list's continue
    /// pages, an informer's watch), which a proof under way serves.
    pub follows: bool,
    /// A streaming list (`sendInitialEvents`): the apiserver sends each
    /// object as an event of its own, which costs it [`STREAM_COST`] times a list's.
    pub stream: bool,
}

/// The decision for one read and its inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Expected time from memory, beyond the one round trip both ways pay:
    /// the wait for the store to reach the probe's revision plus kache's transfer.
    pub memory: Duration,
    /// Of `memory`, the expected wait for the store to reach the probe's revision.
    pub wait: Duration,
    /// Expected time upstream, beyond that round trip: its transfer.
    pub upstream: Duration,
    /// The round trip both pay (the probe's, as measured; nothing until measured).
    pub round_trip: Duration,
}

impl Plan {
    /// Memory answers no later than upstream is expected to.
    pub fn from_memory(&self) -> bool {
        self.memory <= self.upstream
    }

    /// The chosen road's expected time to the answer's end, round trip included.
    pub fn expected(&self) -> Duration {
        self.round_trip + if self.from_memory() { self.memory } else { self.upstream }
    }

    /// How long a read that chose memory waits after its probe.
    fn budget(&self) -> Duration {
        2 * self.memory.max(self.upstream)
    }

    /// How long after its probe's answer a read that chose memory, and
    /// whose store was not yet there, also goes upstream: the expected
    /// wait with a quarter more (the apiserver's bookmark ticks, which time
    /// a quiet resource's proof, come every 1 to 1.25 s) and [`HEDGE_SLACK`].
    fn hedge_after(&self) -> Duration {
        self.wait.mul_f64(1.25) + HEDGE_SLACK
    }
}

/// What a streaming list costs the apiserver, in lists of the same objects:
/// it encodes and frames each object as its own watch event. Measured on
/// kube-apiserver 1.36.2 with 50,000 pods (JSON): 7.2 s for the streaming
/// list against 3.4 s for the list.
pub const STREAM_COST: f64 = 2.0;

/// Beyond a read's expected wait, how late its proof may be before the
/// read also goes upstream: scheduling, not the apiserver (a few ms).
const HEDGE_SLACK: Duration = Duration::from_millis(5);

/// One consistent read's decision, shared by [`Freshness::consistent`] and
/// the request handler: the plan it was made by, and — for a read that
/// chose memory — when the handler should send it upstream as well (a
/// hedge), because the proof is later than expected. The handler answers
/// with whichever road answers first and drops the other; so a read that
/// chose memory wrongly costs what upstream costs plus the expected wait,
/// never a timeout on top, and the apiserver is asked only for reads whose
/// proof is already late.
#[derive(Debug)]
pub struct Decision {
    hedge: watch::Sender<Option<Instant>>,
    plan: Mutex<Option<Plan>>,
}

impl Default for Decision {
    fn default() -> Decision {
        Decision { hedge: watch::Sender::new(None), plan: Mutex::new(None) }
    }
}

impl Decision {
    /// The plan the read was decided by (`None`: it was not a consistent read).
    pub fn plan(&self) -> Option<Plan> {
        *self.plan.lock()
    }

    /// The read goes upstream now (memory gave up, or was never chosen).
    pub fn go_upstream(&self) {
        self.hedge.send_replace(Some(Instant::now()));
    }

    /// Resolves once the read should (also) go upstream; never, for a read
    /// answered from memory without a hedge.
    pub async fn upstream_due(&self) {
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

/// Upper bounds (seconds) of the buckets of `kache_consistent_wait_seconds`
/// and `kache_freshness_proof_seconds`.
pub const WAIT_BUCKETS: [f64; 12] = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 1.5, 3.0];

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
    /// Consistent reads passed through: sooner upstream, probe failed, timed out, late proof.
    pub passed: [AtomicU64; 4],
    /// Reads that chose memory and were sent upstream too: their proof late ([`Decision`]) or failed.
    pub hedges: AtomicU64,
    /// How long the reads proven fresh waited (`kache_consistent_wait_seconds`).
    waited: metrics::Histogram,
    /// How long each catch-up took to prove (`kache_freshness_proof_seconds`).
    proof_delay: metrics::Histogram,
    /// The last read's plan, for metrics.
    pub last_plan: Mutex<Option<Plan>>,
}

impl FreshnessStats {
    fn new(resource: &Resource) -> FreshnessStats {
        FreshnessStats {
            probes: AtomicU64::new(0),
            catch_ups: AtomicU64::new(0),
            proofs: AtomicU64::new(0),
            fresh: AtomicU64::new(0),
            passed: Default::default(),
            hedges: AtomicU64::new(0),
            waited: metrics::histogram!("kache_consistent_wait_seconds", "resource" => resource.qualified()),
            proof_delay: metrics::histogram!("kache_freshness_proof_seconds", "resource" => resource.qualified()),
            last_plan: Mutex::new(None),
        }
    }

    /// A consistent read's outcome: proven fresh after waiting so long, or passed through.
    pub fn record(&self, outcome: Result<Duration, NotFresh>) {
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

/// What this resource's probes and catch-ups showed: the inputs of [`Plan`].
#[derive(Debug, Default)]
pub struct Observed {
    /// 1 for a probe that found the store already at upstream's revision, else 0.
    hits: Average,
    /// Seconds a catch-up took to prove.
    proofs: Average,
    /// When the last probe was sent.
    probed_at: Option<Instant>,
    /// When the catch-up under way started.
    catching_up_since: Option<Instant>,
}

impl Observed {
    /// The share of probes that found the store fresh. Until measured, all:
    /// the first consistent read tries memory, which costs one probe if
    /// wrong (its budget is then spent at once) and measures the share.
    pub fn hit_ratio(&self) -> f64 {
        self.hits.get().unwrap_or(1.0).clamp(0.0, 1.0)
    }

    /// A proof's expected delay (until measured: the longest a catch-up takes).
    pub fn proof_delay(&self) -> Duration {
        self.proofs.get().map_or(Duration::from_secs(CATCH_UP_SECONDS), Duration::from_secs_f64)
    }
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
    /// What probes and catch-ups showed.
    pub observed: Mutex<Observed>,
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
            catching_up: AtomicBool::new(false),
            caught_up: watch::Sender::new(0),
            observed: Mutex::default(),
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
            self.observed.lock().probed_at = Some(sent);
            let revision = tokio::time::timeout(UPSTREAM_TIMEOUT, self.probe()).await.ok().flatten();
            if let Some(x) = revision {
                self.client.costs().record_latency(sent.elapsed());
                let hit = if self.store.view().confirmed_rv() >= x { 1.0 } else { 0.0 };
                self.observed.lock().hits.record(hit);
            }
            self.probed.send_replace(Probed { generation, revision });
        }
    }

    async fn probe(&self) -> Option<u64> {
        let body = self.client.get_bytes(&format!("{}?limit=1", self.resource.collection_path())).await.ok()?;
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

    /// For a consistent read: a revision X upstream had committed when the
    /// read arrived, once the store has confirmed it (`confirmed_rv >= X`);
    /// or why the read goes upstream — at once when memory would not answer
    /// it sooner ([`Freshness::plan`]).
    /// The plan is recorded in `decision`, and a read that chose memory
    /// sets there when it should also go upstream ([`Decision`]).
    pub async fn consistent(self: &Arc<Self>, read: Read, decision: &Decision) -> Result<u64, NotFresh> {
        let started = Instant::now();
        let plan = self.plan(read);
        *self.stats.last_plan.lock() = Some(plan);
        *decision.plan.lock() = Some(plan);
        let outcome = if plan.from_memory() { self.prove(&plan, decision).await } else { Err(self.go_upstream(read)) };
        self.stats.record(outcome.map(|_| started.elapsed()));
        outcome
    }

    /// The expected costs of answering `read` from memory and upstream.
    pub fn plan(&self, read: Read) -> Plan {
        let costs: &Costs = self.client.costs();
        let now = Instant::now();
        let o = self.observed.lock();
        // A catch-up under way is joined: only what is left of its delay
        // counts — if that is more than the probe's round trip. Its bookmark
        // proves the read's revision only if sent after the probe was
        // answered; one due sooner leaves the read to the next catch-up.
        let round_trip = costs.latency().unwrap_or_default();
        let full = o.proof_delay();
        let proof = match o.catching_up_since.map(|since| full.saturating_sub(now.saturating_duration_since(since))) {
            None => full,
            Some(left) if left > round_trip => left,
            Some(left) => left + full,
        };
        let since = now.checked_sub(RATE_WINDOW).unwrap_or(now);
        let rate = self.store.view().events_since(since) as f64 / RATE_WINDOW.as_secs_f64();
        let next_event = if rate > 0.0 { Duration::from_secs_f64(1.0 / rate) } else { Duration::MAX };
        let wait = proof.min(next_event).mul_f64(1.0 - o.hit_ratio());
        let upstream = costs.upstream_transfer(read.bytes).mul_f64(if read.stream { STREAM_COST } else { 1.0 });
        Plan { memory: wait + costs.memory_transfer(read.bytes), wait, upstream, round_trip }
    }

    /// A read goes upstream: a catch-up starts for the reads that follow
    /// it, and a probe now and then keeps the hit rate measured.
    fn go_upstream(self: &Arc<Self>, read: Read) -> NotFresh {
        if read.follows {
            self.catch_up();
        }
        let stale = self.observed.lock().probed_at.is_none_or(|at| at.elapsed() >= SAMPLE_EVERY);
        if stale {
            self.want_probe();
        }
        NotFresh::Sooner
    }

    async fn prove(self: &Arc<Self>, plan: &Plan, decision: &Decision) -> Result<u64, NotFresh> {
        let held = self.store.view().confirmed_rv();
        let x = self.committed(Instant::now() + UPSTREAM_TIMEOUT).await?;
        // Upstream cannot be behind what kache already holds, unless its
        // revisions went back (an etcd restore): until the reflector
        // re-lists, nothing kache holds is proven.
        if x < held {
            return Err(NotFresh::Probe);
        }
        if self.store.view().confirmed_rv() >= x {
            return Ok(x);
        }
        let hedge = self.hedge_at(plan);
        decision.hedge.send_replace(Some(hedge));
        // Past its hedge, memory still races upstream, for as long as a catch-up may take.
        let by = (Instant::now() + plan.budget()).max(hedge + Duration::from_secs(CATCH_UP_SECONDS));
        if self.reach(x, by).await { Ok(x) } else { Err(NotFresh::Timeout) }
    }

    /// When a read whose store is not yet at its probe's revision also goes
    /// upstream. Once its expected wait is over (and a quarter more) — if
    /// upstream would then answer it sooner than memory at the latest: a
    /// catch-up proves within its timeout or not at all, and one that
    /// starts by now is done by that timeout from now, so memory's latest
    /// is then plus kache's transfer. A large list, which upstream takes
    /// seconds to send, is not sent upstream for a proof that is only
    /// late; only for one that failed.
    fn hedge_at(&self, plan: &Plan) -> Instant {
        let now = Instant::now();
        let last_chance = now + Duration::from_secs(CATCH_UP_SECONDS);
        let memory_at_latest = last_chance + plan.memory.saturating_sub(plan.wait);
        let upstream_done = now + plan.round_trip + plan.upstream;
        let late = now + plan.hedge_after();
        if upstream_done < memory_at_latest { late } else { late.max(last_chance + HEDGE_SLACK) }
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

    /// Starts a catch-up watch unless one is running.
    fn catch_up(self: &Arc<Self>) {
        if self.catching_up.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = self.clone();
        let started = Instant::now();
        self.observed.lock().catching_up_since = Some(started);
        tokio::spawn(async move {
            me.stats.catch_ups.fetch_add(1, Ordering::Relaxed);
            match tokio::time::timeout(UPSTREAM_TIMEOUT, me.catch_up_once()).await {
                Ok(Some(proof)) => {
                    let took = started.elapsed();
                    me.stats.proof_delay.record(took.as_secs_f64());
                    me.observed.lock().proofs.record(took.as_secs_f64());
                    me.stats.proofs.fetch_add(1, Ordering::Relaxed);
                    // The reflector may be gone (kache is stopping): nothing to prove then.
                    let _ = me.proofs.send(proof);
                }
                // Readers still waiting start another; not at once, so a failing upstream is not hammered.
                _ => tokio::time::sleep(RETRY_AFTER).await,
            }
            me.observed.lock().catching_up_since = None;
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

//! The simulator's shared state: the storage behind its lock, the revision
//! signal that waiting reads use, the fault switches, how slow reads are,
//! and the request counters.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;

use crate::config::SimConfig;
use crate::db::Db;
use crate::pace::Slowness;
use crate::policy::Policy;
use crate::resources::Registry;
use apimachinery::status::ApiError;

/// How many requests' audit records the simulator keeps.
const AUDITED: usize = 1000;

/// Everything a request handler needs.
#[derive(Debug)]
pub struct State {
    /// The storage. Writers hold the write lock only for one commit (or a batch of generated objects).
    pub db: RwLock<Db>,
    /// Start-up configuration.
    pub config: SimConfig,
    registry: Arc<Registry>,
    rev_tx: watch::Sender<u64>,
    drop_tx: watch::Sender<u64>,
    stall_until: Mutex<Option<Instant>>,
    initializing_until: Mutex<Option<Instant>>,
    counters: Mutex<BTreeMap<(String, &'static str), u64>>,
    /// The latest API requests' audit IDs (`GET /_sim/audit`), at most [`AUDITED`].
    audited: Mutex<std::collections::VecDeque<serde_json::Value>>,
    /// Objects of the start-up workload created so far (`usize::MAX` once complete).
    generated: AtomicUsize,
    /// Changes per second the churn driver writes (an `f64`'s bits).
    churn: AtomicU64,
    /// The policy in force (from `--policy`, replaced by `POST /_sim/policy`).
    policy: Mutex<Option<Arc<Policy>>>,
    /// How slow reads are (from the configuration, replaced by `POST /_sim/slow`).
    slowness: Mutex<Slowness>,
    /// Which FlowSchema and priority level a request is named with.
    pub flow_schemas: crate::flowcontrol::Classifier,
}

impl State {
    /// New state over an empty store.
    pub fn new(config: SimConfig, registry: Arc<Registry>) -> Self {
        let db = Db::new(registry.clone(), 1, config.watch_buffer);
        Self {
            db: RwLock::new(db),
            registry,
            rev_tx: watch::channel(1).0,
            drop_tx: watch::channel(0).0,
            stall_until: Mutex::new(None),
            initializing_until: Mutex::new(None),
            counters: Mutex::new(BTreeMap::new()),
            audited: Mutex::default(),
            generated: AtomicUsize::new(0),
            churn: AtomicU64::new(0f64.to_bits()),
            policy: Mutex::new(config.policy.clone().map(Arc::new)),
            slowness: Mutex::new(config.slowness),
            flow_schemas: crate::flowcontrol::Classifier::default(),
            config,
        }
    }

    /// The policy in force, if any.
    pub fn policy(&self) -> Option<Arc<Policy>> {
        self.policy.lock().clone()
    }

    /// Puts `policy` in force from now on.
    pub fn set_policy(&self, policy: Policy) {
        *self.policy.lock() = Some(Arc::new(policy));
    }

    /// How slow reads are now.
    pub fn slowness(&self) -> Slowness {
        *self.slowness.lock()
    }

    /// Makes reads from now on as slow as `slowness` says.
    pub fn set_slowness(&self, slowness: Slowness) {
        *self.slowness.lock() = slowness;
    }

    /// Waits what a consistent read costs (`Slowness::consistent_read_latency`).
    pub async fn consistent_read(&self) {
        let latency = self.slowness().consistent_read_latency;
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
    }

    /// Changes per second the churn driver writes.
    pub fn churn_rate(&self) -> f64 {
        f64::from_bits(self.churn.load(Ordering::Relaxed))
    }

    /// Sets the churn rate (finite, at least 0; anything else is 0).
    pub fn set_churn_rate(&self, rate: f64) {
        let rate = if rate.is_finite() && rate > 0.0 { rate } else { 0.0 };
        self.churn.store(rate.to_bits(), Ordering::Relaxed);
    }

    /// Records how many objects of the start-up workload exist.
    pub fn set_generated(&self, n: usize) {
        self.generated.store(n, Ordering::Release);
    }

    /// While the start-up workload is being created: how many objects of it exist.
    /// The API is not served until it is complete (`None`).
    pub fn generating(&self) -> Option<usize> {
        Some(self.generated.load(Ordering::Acquire)).filter(|n| *n != usize::MAX)
    }

    /// Marks the start-up workload complete: the API is served from now on.
    pub fn set_ready(&self) {
        self.generated.store(usize::MAX, Ordering::Release);
    }

    /// The resource table.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Announces the current revision to waiting reads; call after a write.
    pub fn publish_revision(&self) {
        let rev = self.db.read().rev();
        self.rev_tx.send_replace(rev);
    }

    /// Waits until the store reaches `rv`, at most `wait`; then 504.
    pub async fn wait_for_revision(&self, rv: u64, wait: Duration) -> Result<(), ApiError> {
        let mut rx = self.rev_tx.subscribe();
        match tokio::time::timeout(wait, rx.wait_for(|r| *r >= rv)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(ApiError::too_large_rv(rv, self.db.read().rev())),
        }
    }

    /// A receiver that changes whenever every watch must be dropped.
    pub fn drop_signal(&self) -> watch::Receiver<u64> {
        self.drop_tx.subscribe()
    }

    /// Ends every open watch (the connection stays up; the streams end).
    pub fn drop_watches(&self) {
        self.drop_tx.send_modify(|n| *n += 1);
    }

    /// Makes every response wait until `for_` has passed.
    pub fn stall(&self, for_: Duration) {
        *self.stall_until.lock() = Some(Instant::now() + for_);
    }

    /// Waits out a stall, if one is set.
    pub async fn wait_unstalled(&self) {
        let until = *self.stall_until.lock();
        if let Some(t) = until {
            tokio::time::sleep_until(t.into()).await;
        }
    }

    /// Marks the watch cache as (re)initializing for `for_`: watches get 429 meanwhile.
    pub fn reinitialize(&self, for_: Duration) {
        *self.initializing_until.lock() = Some(Instant::now() + for_);
    }

    /// Whether the watch cache is (re)initializing.
    pub fn initializing(&self) -> bool {
        self.initializing_until.lock().is_some_and(|t| Instant::now() < t)
    }

    /// Counts one request of `verb` on `resource`.
    pub fn count(&self, resource: String, verb: &'static str) {
        *self.counters.lock().entry((resource, verb)).or_default() += 1;
    }

    /// Requests served so far, by resource and verb.
    pub fn counts(&self) -> BTreeMap<(String, &'static str), u64> {
        self.counters.lock().clone()
    }

    /// Keeps what the apiserver's audit event would say of an API request
    /// (not of the harness's `/_sim/` paths): its audit ID, verb, URI and the
    /// user it impersonates.
    pub fn audited<B>(&self, req: &http::Request<B>, id: &http::HeaderValue) {
        let (path, query) = (req.uri().path(), req.uri().query().unwrap_or(""));
        if path.starts_with("/_sim/") {
            return;
        }
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let record = serde_json::json!({
            "auditID": String::from_utf8_lossy(id.as_bytes()),
            "verb": apimachinery::auth::Attributes::of(req.method().as_str(), path, query).verb,
            "requestURI": req.uri().path_and_query().map_or(path, |pq| pq.as_str()),
            "impersonatedUser": header("impersonate-user"),
        });
        let mut audited = self.audited.lock();
        if audited.len() == AUDITED {
            audited.pop_front();
        }
        audited.push_back(record);
    }

    /// The latest API requests' audit records, oldest first.
    pub fn audit_records(&self) -> Vec<serde_json::Value> {
        self.audited.lock().iter().cloned().collect()
    }
}

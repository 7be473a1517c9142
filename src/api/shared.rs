//! What every stage of the request path shares: the cached resources and
//! their watch dispatchers, the apiserver connection, the settings, the
//! client reviewer, the auditor, the memory lists take while written, priority and
//! fairness, and the counters. Built once
//! when kache serves; read, never replaced, by every request.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use super::watch::{Dispatcher, WatchConfig};
use crate::access::{AuthConfig, Reviewer};
use crate::audit::Auditor;
use crate::budget::BudgetConfig;
use crate::budget::inflight::ListMemory;
use crate::cache::Cache;
use crate::flowcontrol::FlowControl;
use crate::upstream::client::Client;
use crate::upstream::plan::Policy;

/// Serving settings.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// How long a read of a revision kache has not confirmed yet waits for
    /// the store before it is passed through (the apiserver's cache waits
    /// 3 s). A consistent read waits by its expected cost instead
    /// (`upstream::plan`).
    pub revision_wait: Duration,
    /// Watches.
    pub watch: WatchConfig,
    /// How long after upstream's last answer kache still answers from memory.
    pub max_staleness: Duration,
    /// The memory budget (`crate::budget`).
    pub budget: BudgetConfig,
    /// The seats priority and fairness shares (`crate::flowcontrol`); `None`: off.
    pub priority_and_fairness: Option<usize>,
    /// How consistent reads choose between memory and upstream.
    pub consistent_reads: Policy,
}

impl Default for ApiConfig {
    fn default() -> ApiConfig {
        ApiConfig {
            revision_wait: Duration::from_secs(3),
            watch: WatchConfig::default(),
            max_staleness: Duration::from_secs(300),
            budget: BudgetConfig::default(),
            priority_and_fairness: Some(crate::flowcontrol::default_seats()),
            consistent_reads: Policy::default(),
        }
    }
}

/// Requests answered and passed through.
#[derive(Debug, Default)]
pub struct Counters {
    /// Lists answered from memory.
    pub lists_served: AtomicU64,
    /// Single-object GETs answered from memory.
    pub gets_served: AtomicU64,
    /// Watches answered from memory.
    pub watches_served: AtomicU64,
    /// Watches of cached resources passed through (a consistent start, or a revision not reached).
    pub watches_passed_through: AtomicU64,
    /// Requests passed through to the apiserver.
    pub passed_through: AtomicU64,
}

/// What every request handler shares.
#[derive(Debug)]
pub struct Api {
    /// The cached resources.
    pub cache: Cache,
    /// One watch dispatcher per cached resource, in the cache's order.
    pub dispatchers: Vec<Dispatcher>,
    /// The apiserver connection.
    pub client: Client,
    /// Settings.
    pub config: ApiConfig,
    /// Counters.
    pub counters: Counters,
    /// Set when kache shuts down: watch streams end.
    pub stopping: tokio::sync::watch::Sender<bool>,
    /// Client authentication and authorization (`None`: none, loopback only).
    pub reviewer: Option<Arc<Reviewer>>,
    /// Memory reserved for lists being written from memory (`crate::budget::inflight`).
    pub list_memory: Arc<ListMemory>,
    /// Priority and fairness for what kache answers itself (`None`: off).
    pub flow: Option<Arc<FlowControl>>,
    /// The audit policy and backends (`None`: nothing is audited).
    pub audit: Option<Arc<Auditor>>,
}

impl Api {
    /// The server's state over `cache`, with a watch dispatcher per cached resource.
    pub fn new(cache: Cache, client: Client, config: ApiConfig, auth: Option<AuthConfig>) -> Api {
        let dispatchers = cache.resources().iter().map(|r| Dispatcher::start(r.clone())).collect();
        let reviewer = auth.map(|a| Arc::new(Reviewer::new(client.clone(), a)));
        let (counters, stopping, list_memory) = (Counters::default(), tokio::sync::watch::Sender::new(false), Arc::default());
        let flow = config.priority_and_fairness.map(|seats| FlowControl::start(seats, &cache));
        Api { cache, dispatchers, client, config, counters, stopping, reviewer, list_memory, flow, audit: None }
    }

    /// Ends every watch stream from memory (kache shuts down).
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }
}

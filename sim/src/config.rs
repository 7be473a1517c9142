//! A simulator's start-up settings ([`SimConfig`]): one value that combines
//! each concern's own settings (auth, policy, workload, slowness, TLS), each
//! defined beside its concern. Invariant: fixed once the simulator starts;
//! what can change at run time (churn, slowness, policy) is seeded from it
//! into `State`, which holds the live value.

use std::time::Duration;

use apimachinery::tls::TlsSettings;

use crate::auth::AuthSettings;
use crate::http2;
use crate::pace::Slowness;
use crate::policy::Policy;
use crate::resources::CustomResource;
use crate::workload::Workload;

/// Start-up settings of a simulator.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Custom resources served besides the built-ins.
    pub custom: Vec<CustomResource>,
    /// How often a watch that allows bookmarks gets one (the apiserver: about a minute).
    pub bookmark_interval: Duration,
    /// Events buffered for watchers; a watcher further behind is closed.
    pub watch_buffer: usize,
    /// Periodic compaction interval (`None`: only on demand).
    pub compact_interval: Option<Duration>,
    /// Serve HTTPS with these certificates (`None`: plain HTTP).
    pub tls: Option<TlsSettings>,
    /// Who may call the API.
    pub auth: AuthSettings,
    /// Identities and permissions (`--policy`): enforced on every request, and behind the review endpoints.
    pub policy: Option<Policy>,
    /// Objects generated at start-up, before the API is served.
    pub workload: Workload,
    /// Changes per second written to the workload's objects once it is in
    /// (changeable at run time with [`crate::Sim::set_churn`] or `POST /_sim/churn?rate=R`).
    pub churn: f64,
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` of HTTP/2 connections
    /// (`--http2-max-streams-per-connection`; 0: the apiserver's default, 100).
    pub http2_max_streams_per_connection: u32,
    /// An HTTP/2 connection with no stream open this long is closed (GOAWAY),
    /// as the apiserver's 90 s `IdleTimeout` does; zero: never.
    pub http2_idle_timeout: Duration,
    /// How slow reads are (default: not slow; changeable at run time with
    /// [`crate::Sim::set_slowness`] or `POST /_sim/slow`).
    pub slowness: Slowness,
    /// The `ShardedListAndWatch` feature gate (alpha in 1.36, off by
    /// default): on, lists and watches honour `shardSelector`; off, the
    /// parameter is ignored whole, as the apiserver ignores it.
    pub sharded_list_and_watch: bool,
    /// The apiserver's `CBORServingAndStorage` feature gate: CBOR answers
    /// (`--feature-gates CBORServingAndStorage=true`); off, as kube-apiserver
    /// 1.36 has it by default, CBOR requests get 406.
    pub cbor: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            custom: Vec::new(),
            bookmark_interval: Duration::from_secs(60),
            watch_buffer: 100_000,
            // kube-apiserver's --etcd-compaction-interval default.
            compact_interval: Some(Duration::from_secs(300)),
            tls: None,
            auth: AuthSettings::default(),
            policy: None,
            workload: Workload::default(),
            churn: 0.0,
            http2_max_streams_per_connection: http2::DEFAULT_MAX_STREAMS,
            http2_idle_timeout: http2::IDLE_TIMEOUT,
            slowness: Slowness::default(),
            sharded_list_and_watch: false,
            cbor: false,
        }
    }
}

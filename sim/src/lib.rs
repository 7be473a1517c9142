//! `sim`: an in-memory Kubernetes API server that behaves like kube-apiserver
//! on etcd. It is kache's upstream in every test, demo and benchmark, and the
//! oracle of the tests: for any request whose answer is determined by its
//! revision, kache must answer exactly as the simulator does.
//!
//! What it implements (see `docs/simulator.md`):
//! - one global revision; create / get / update / patch / delete (two-phase
//!   with finalizers) / deletecollection / list / watch over a table of
//!   built-in resources plus custom resources named at start-up, with
//!   discovery (legacy and aggregated) so kubectl works unchanged;
//! - lists with every `resourceVersion` × `resourceVersionMatch` × `limit` ×
//!   `continue` combination, label and field selectors, the apiserver's
//!   continue tokens and error `Status` bodies, 410 after compaction;
//! - watches from a revision, with initial events, bookmarks, timeouts and
//!   selector transitions;
//! - sharded lists and watches (KEP-5866) with `--sharded-list-and-watch`
//!   (the `ShardedListAndWatch` gate, off by default as in 1.36): a shard
//!   selector filters lists, watch-lists and watches alongside label and
//!   field selectors, typed lists say `shardInfo`, a page's
//!   `remainingItemCount` is the cacher's (the scope from its start, less
//!   the page), a malformed selector is the apiserver's 500; with the gate
//!   off the parameter is ignored whole;
//! - `pods/exec` and `pods/attach` over the WebSocket remote-command
//!   protocol (`v5.channel.k8s.io`), running a few built-in commands of a
//!   simulated container, and `pods/portforward` over SPDY (tunnelled in a
//!   WebSocket or plain) to ports that echo, so `kubectl exec`, `attach` and
//!   `port-forward` work;
//! - generators of realistic objects, a churn driver, and fault switches
//!   (drop watches, stall, compact, restart keeping or resetting revisions),
//!   reachable from Rust ([`Sim`]) and over HTTP (`/_sim/...`);
//! - the apiserver's wire, not only its answers: HTTP/2 (over TLS by ALPN,
//!   or h2c) with its settings — 100 streams per connection
//!   (`--http2-max-streams-per-connection`), 256 KiB stream windows and
//!   frames, 256 KiB × streams for the connection, idle connections closed
//!   after 90 s — and list bodies cut as its streaming encoders and Go's
//!   4 KiB response buffer cut them (about one DATA frame per item; a
//!   Table, encoded whole, in frames of the client's `MAX_FRAME_SIZE`),
//!   over TLS written as Go writes them: a record and a system call per
//!   full DATA frame (`gowrites`);
//! - on request, its slowness ([`Slowness`]): list bodies, and the initial
//!   events of watches, written no faster than `--list-mb-per-second`
//!   (the apiserver: about 80), and consistent reads — a list or GET
//!   without `resourceVersion`, a watch with `sendInitialEvents` and none —
//!   answered after `--consistent-read-latency-ms` (the apiserver: 5 ms of
//!   etcd quorum read); changeable at run time ([`Sim::set_slowness`],
//!   `POST /_sim/slow?list-mb-per-second=F&consistent-read-latency-ms=N`);
//! - API Priority and Fairness's configuration and names: the apiserver's
//!   bootstrap FlowSchemas and priority levels, and the
//!   `X-Kubernetes-PF-*` headers of the schema and level each request
//!   matches (`flowcontrol`; it limits nothing);
//! - CBOR (`application/cbor`, watches as `application/cbor-seq`) with
//!   `--cbor`, the apiserver's `CBORServingAndStorage` gate, and the
//!   apiserver's 406 for CBOR without it (the gate's 1.36 default);
//! - the apiserver's `Audit-ID` on every answer (the client's, else a fresh
//!   UUID), and the latest API requests' audit IDs, verbs, URIs and
//!   impersonated users at `GET /_sim/audit` (what its audit log would join on);
//! - HTTPS without certificate files (`--https-ca-out`, [`loopback_tls`]):
//!   a self-signed certificate for `127.0.0.1`, `::1` and `localhost`, made
//!   at start, that clients trust as their CA.
//!
//! It is deliberately simple (a `BTreeMap` of versions per key and a `Vec` of
//! events) and shares no code with kache's store; what it shares with kache
//! is the API's wire contract, the `apimachinery` crate (options,
//! selectors, continue tokens, `Status` bodies, encodings).

mod auth;
mod body;
mod cbor;
mod certificate;
pub mod cli;
mod config;
mod connect;
mod container;
mod db;
mod faults;
mod flowcontrol;
pub mod generate;
mod gowrites;
mod http2;
mod list;
mod listener;
mod object;
mod pace;
mod patch;
mod policy;
mod portforward;
mod proto;
mod remotecommand;
mod request_body;
pub mod resources;
mod server;
mod spdy;
mod state;
mod watch;
mod workload;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use apimachinery::tls::TlsSettings;
pub use auth::AuthSettings;
pub use certificate::{CertificateError, loopback_tls};
pub use config::SimConfig;
pub use pace::{Slowness, SlownessError};
pub use policy::{Policy, PolicyError};
pub use resources::CustomResource;
pub use workload::Workload;

use resources::Registry;
use state::State;

/// Why a simulator did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A custom resource clashes with another.
    #[error(transparent)]
    Registry(#[from] resources::RegistryError),
    /// The serving certificate, key or client CA is refused.
    #[error(transparent)]
    Tls(#[from] apimachinery::tls::TlsError),
    /// Client certificates were asked for without a client CA to verify them.
    #[error("client certificate authentication needs TLS with a client CA")]
    ClientCertificatesWithoutCa,
    /// The slowness cannot be served.
    #[error(transparent)]
    Slowness(#[from] SlownessError),
    /// The listener has no local address.
    #[error("listener address: {0}")]
    ListenerAddress(#[source] std::io::Error),
}

/// A running simulator. Dropping it stops serving.
#[derive(Debug)]
pub struct Sim {
    state: Arc<State>,
    addr: SocketAddr,
    scheme: &'static str,
    tasks: Vec<JoinHandle<()>>,
}

impl Sim {
    /// Starts serving on `listener` and creates the system namespaces and
    /// the configured workload; returns once it is all in. Until then the
    /// API answers 503 (and `/readyz` fails), as an apiserver that is not
    /// ready would: no client sees a partial cluster.
    pub fn start(config: SimConfig, listener: TcpListener) -> Result<Sim, StartError> {
        let registry = Arc::new(Registry::new(&config.custom)?);
        let (tls, clients) = match config.tls.as_ref().map(apimachinery::tls::server_config).transpose()? {
            Some((tls, clients)) => (Some(tls), clients),
            None => (None, None),
        };
        if config.auth.client_certificates && config.tls.as_ref().is_none_or(|t| t.client_ca_pem.is_none()) {
            return Err(StartError::ClientCertificatesWithoutCa);
        }
        config.slowness.validate()?;
        let compact_interval = config.compact_interval;
        let workload = config.workload;
        let churn = config.churn;
        let state = Arc::new(State::new(config, registry));
        let addr = listener.local_addr().map_err(StartError::ListenerAddress)?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let tls = tls.map(|t| (tokio_rustls::TlsAcceptor::from(t), clients));
        let mut tasks = vec![tokio::spawn(listener::serve(state.clone(), listener, addr, tls))];
        generate::system_namespaces(&mut state.db.write());
        flowcontrol::bootstrap(&mut state.db.write(), &humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string());
        generate::custom_resource_definitions(&mut state.db.write());
        state.publish_revision();
        generate::populate(&state, &workload);
        state.set_ready();
        state.set_churn_rate(churn);
        tasks.push(tokio::spawn(generate::churn(state.clone(), workload)));
        if let Some(every) = compact_interval {
            tasks.push(tokio::spawn(faults::compact_periodically(state.clone(), every)));
        }
        Ok(Sim { state, addr, scheme, tasks })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR` or `https://ADDR`.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// Writes `rate` changes per second from now on (0 stops).
    pub fn set_churn(&self, rate: f64) {
        self.state.set_churn_rate(rate);
    }

    /// Answers reads from now on as slowly as `slowness` says (lists already
    /// being written keep their pace).
    pub fn set_slowness(&self, slowness: Slowness) -> Result<(), SlownessError> {
        slowness.validate()?;
        self.state.set_slowness(slowness);
        Ok(())
    }

    /// The current revision.
    pub fn revision(&self) -> u64 {
        self.state.db.read().rev()
    }

    /// The oldest revision still readable.
    pub fn oldest_revision(&self) -> u64 {
        self.state.db.read().oldest()
    }

    /// Compacts history up to now; returns the revision.
    pub fn compact_now(&self) -> u64 {
        faults::compact_now(&self.state)
    }

    /// Ends every open watch.
    pub fn drop_watches(&self) {
        self.state.drop_watches();
    }

    /// Delays every response until `for_` has passed.
    pub fn stall(&self, for_: Duration) {
        self.state.stall(for_);
    }

    /// Simulates a restart, keeping or resetting revisions; watches get 429
    /// for `reinit` afterwards; the watch caches reach back as before
    /// (`cache_kept`: an HA peer) or start at the current revision (a
    /// restarted kube-apiserver). Returns the revision.
    pub fn restart(&self, reset_revisions: bool, reinit: Duration, cache_kept: bool) -> u64 {
        faults::restart(&self.state, reset_revisions, reinit, cache_kept)
    }

    /// Requests served for `resource` (e.g. `pods`, `deployments.apps`) and `verb` (`list`, `watch`, …).
    pub fn request_count(&self, resource: &str, verb: &str) -> u64 {
        self.state.counts().iter().filter(|((r, v), _)| r == resource && *v == verb).map(|(_, n)| *n).sum()
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

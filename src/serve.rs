//! `kache serve`: flags → upstream connection → discovery → one reflector
//! per cached resource → the HTTP front, until SIGINT or SIGTERM.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

use crate::api::starting::Starting;
use crate::api::watch::WatchConfig;
use crate::api::{self, Api, ApiConfig};
use crate::audit::AuditArgs;
use crate::budget::BudgetConfig;
use crate::cache::Cache;
use crate::state::{Kept, Saver, StateDir, Upstream};
use crate::store::StoreConfig;
use crate::upstream::client::Client;
use crate::upstream::connect::{ConnectArgs, Credentials};
use crate::upstream::plan::Policy;
use crate::upstream::reflector::{HEARTBEAT, ReflectorConfig};
use crate::upstream::{UpstreamError, discovery};

/// Options of `kache serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on. Without client authentication (--client-ca-file or --token-review) only a
    /// loopback address is accepted: every client would act with kache's credentials.
    #[arg(long, default_value = "127.0.0.1:8001")]
    pub listen: String,
    /// Also serve /livez, /readyz, /healthz and /metrics — nothing else, in plain HTTP, without
    /// authentication — on this address (e.g. 0.0.0.0:8081 for the kubelet's probes and Prometheus
    /// while --listen stays on loopback).
    #[arg(long)]
    pub health_listen: Option<String>,
    /// Authenticate clients by certificate: one signed by this CA (PEM) is user CN in groups O. Needs TLS.
    #[arg(long, requires = "tls_cert_file")]
    pub client_ca_file: Option<PathBuf>,
    /// Authenticate clients by bearer token, with a TokenReview upstream.
    #[arg(long)]
    pub token_review: bool,
    /// Let unauthenticated clients in as system:anonymous (authorized like anyone else).
    #[arg(long)]
    pub anonymous_auth: bool,
    /// Seconds a valid token's review is reused.
    #[arg(long, default_value_t = 120)]
    pub authn_cache_ttl: u64,
    /// Seconds an invalid token's review is reused.
    #[arg(long, default_value_t = 10)]
    pub authn_failure_cache_ttl: u64,
    /// Seconds an allow of a SubjectAccessReview is reused.
    #[arg(long, default_value_t = 300)]
    pub authz_allow_ttl: u64,
    /// Seconds a deny of a SubjectAccessReview is reused.
    #[arg(long, default_value_t = 30)]
    pub authz_deny_ttl: u64,
    /// Share kache among its clients as API Priority and Fairness shares the apiserver: every request kache answers
    /// itself is classified by the cluster's FlowSchemas and PriorityLevelConfigurations (cached from the apiserver:
    /// kache needs list and watch on them), queued fairly for its level's seats or refused with 429, and names them
    /// in X-Kubernetes-PF-* headers. Needs client authentication (without it, every client is kache's own user).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub enable_priority_and_fairness: bool,
    /// Seats priority and fairness shares among the levels (the apiserver's --max-requests-inflight plus
    /// --max-mutating-requests-inflight); 0: 1,500 per core kache may run on (five times the apiserver's 600 over 2 cores).
    #[arg(long, value_name = "SEATS", default_value_t = 0)]
    pub priority_and_fairness_seats: usize,
    /// Resources to cache: RESOURCE, RESOURCE.GROUP, GROUP/VERSION/RESOURCE, or `*` for all (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "pods,configmaps,nodes,namespaces,services,apps/v1/deployments")]
    pub resources: Vec<String>,
    /// Items per page of the initial lists.
    #[arg(long, default_value_t = 500)]
    pub page_size: usize,
    /// Shortest upstream watch, in seconds (each picks a random time up to twice this).
    #[arg(long, default_value_t = 300)]
    pub watch_timeout: u64,
    /// Seconds between consistency checks of each resource that answered reads from memory: its state at a
    /// revision against the apiserver's metadata-only list at exactly that revision, as kube-apiserver checks
    /// its own cache; a mismatch passes the resource's reads through and re-lists it (0: no checks).
    #[arg(long, default_value_t = 300)]
    pub consistency_check_interval: u64,
    /// Most events kept per resource.
    #[arg(long, default_value_t = 100_000)]
    pub max_events: usize,
    /// Seconds events are kept (the window for exact and continue reads).
    #[arg(long, default_value_t = 300)]
    pub max_age: u64,
    /// Milliseconds a list or watch for a revision kache has not reached waits before it is passed through.
    #[arg(long, default_value_t = 3000)]
    pub wait_ms: u64,
    /// How a consistent read (no resourceVersion) chooses its source (memory or upstream), once kache can prove it fresh: `offload`
    /// answers a large one (8 MiB or more) from memory unless that is expected four times slower than the
    /// apiserver, and a small one (a GET, a page) wherever it is expected to end sooner; `sooner` weighs every
    /// read so; `memory` answers every one from memory once proven, passing it through only when the proof
    /// fails (the apiserver carries the fewest reads; a read it would have answered sooner waits for the proof).
    #[arg(long, value_enum, default_value_t = Policy::Offload)]
    pub consistent_reads: Policy,
    /// Frames queued per watcher; a watcher further behind is closed (it resumes from its last revision).
    #[arg(long, default_value_t = 1024)]
    pub watch_queue: usize,
    /// Seconds between bookmarks on watches that allow them (the apiserver sends one a minute).
    #[arg(long, default_value_t = 60.0)]
    pub bookmark_interval: f64,
    /// Serving certificate chain (PEM): serve HTTPS (HTTP/2 and HTTP/1.1) instead of plain HTTP.
    #[arg(long, requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The serving certificate's private key (PEM).
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Seconds after the apiserver last answered (a list page, a watch frame, the heartbeat a silent watch gets
    /// every 75 s or a third of this) that kache still answers from memory; past it, the resource is not ready
    /// and its reads pass through (failing as the apiserver's would).
    #[arg(long, default_value_t = 300)]
    pub max_staleness: u64,
    /// MiB the whole cache may hold (0: no budget). Over it, each resource in turn holds a shorter event log,
    /// then makes no new continue-token pins, then passes its lists and GETs through.
    #[arg(long, value_name = "MIB", default_value_t = 0)]
    pub memory_budget: u64,
    /// MiB each cached resource may hold (0: no budget); over it, the resource does as under --memory-budget.
    #[arg(long, value_name = "MIB", default_value_t = 0)]
    pub resource_memory_budget: u64,
    /// Seconds open requests (long lists, passed-through watches) may take to finish after a shutdown signal; watches from memory end at once.
    #[arg(long, default_value_t = 30)]
    pub shutdown_drain: u64,
    /// Directory for warm restarts: each resource's state is saved there (periodically and on shutdown) and
    /// restored at start, resuming the upstream watch instead of listing.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Seconds between saves into --state-dir (0: on shutdown only).
    #[arg(long, default_value_t = 60)]
    pub state_interval: u64,
    /// Where the apiserver is and how to authenticate.
    #[command(flatten)]
    pub upstream: ConnectArgs,
    /// Auditing, as the apiserver's `--audit-*` flags.
    #[command(flatten)]
    pub audit: AuditArgs,
}

impl ServeArgs {
    /// Checks what can be checked without the apiserver: the serving
    /// certificate and CA files, client authentication against the listen
    /// address, the values, the `--resources` entries and the audit policy (`kache config check`).
    pub fn check(&self) -> anyhow::Result<()> {
        self.tls()?;
        self.api()?;
        self.auth()?;
        self.resources()?;
        self.audit.policy().map(drop)
    }

    /// Every `--resources` entry reads as a resource (the apiserver says later whether it has it).
    fn resources(&self) -> Result<Vec<discovery::Spec>, UpstreamError> {
        self.resources.iter().map(|s| discovery::Spec::parse(s)).collect()
    }

    fn store(&self) -> StoreConfig {
        StoreConfig { max_events: self.max_events.max(1), max_age: Duration::from_secs(self.max_age), ..StoreConfig::default() }
    }

    /// The TLS acceptor for `--tls-cert-file`/`--tls-private-key-file`, if given.
    fn tls(&self) -> anyhow::Result<Option<(TlsAcceptor, Option<Arc<apimachinery::tls::ClientCertificates>>)>> {
        let (Some(cert), Some(key)) = (&self.tls_cert_file, &self.tls_private_key_file) else { return Ok(None) };
        let read = |flag: &str, p: &PathBuf| std::fs::read(p).map_err(|e| anyhow::anyhow!("--{flag} {}: {e}", p.display()));
        let certificate = crate::serving_cert::ReloadingCert::new(cert.clone(), key.clone())
            .map_err(|e| anyhow::anyhow!("--tls-cert-file/--tls-private-key-file: {e}"))?;
        let client_ca = self.client_ca_file.as_ref().map(|p| read("client-ca-file", p)).transpose()?;
        let clients = client_ca
            .as_deref()
            .map(apimachinery::tls::ClientCertificates::from_pem)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--client-ca-file: {e}"))?;
        let config = apimachinery::tls::server_config_with(Arc::new(certificate), clients.clone())
            .map_err(|e| anyhow::anyhow!("serving TLS: {e}"))?;
        Ok(Some((TlsAcceptor::from(config), clients)))
    }

    fn api(&self) -> anyhow::Result<ApiConfig> {
        if !(self.bookmark_interval.is_finite() && self.bookmark_interval > 0.0) {
            anyhow::bail!("--bookmark-interval must be a number of seconds > 0, got {}", self.bookmark_interval);
        }
        let watch = WatchConfig { queue: self.watch_queue.max(1), bookmark_interval: Duration::from_secs_f64(self.bookmark_interval) };
        let mib = |flag: &str, v: u64| v.checked_mul(1 << 20).ok_or_else(|| anyhow::anyhow!("--{flag} {v}: too large"));
        let budget = BudgetConfig {
            total: mib("memory-budget", self.memory_budget)?,
            resource: mib("resource-memory-budget", self.resource_memory_budget)?,
        };
        Ok(ApiConfig {
            revision_wait: Duration::from_millis(self.wait_ms),
            watch,
            max_staleness: Duration::from_secs(self.max_staleness),
            budget,
            priority_and_fairness: self.priority_and_fairness().then(|| match self.priority_and_fairness_seats {
                0 => crate::flowcontrol::default_seats(),
                seats => seats,
            }),
            consistent_reads: self.consistent_reads,
        })
    }

    /// Whether priority and fairness is on: asked for, and clients authenticate (someone to classify).
    fn priority_and_fairness(&self) -> bool {
        self.enable_priority_and_fairness && (self.client_ca_file.is_some() || self.token_review)
    }

    /// How clients authenticate; `None` when they do not, which only a loopback `--listen` allows.
    fn auth(&self) -> anyhow::Result<Option<crate::access::AuthConfig>> {
        let (certificates, tokens) = (self.client_ca_file.is_some(), self.token_review);
        if !certificates && !tokens {
            if self.anonymous_auth {
                anyhow::bail!("--anonymous-auth needs client authentication (--client-ca-file or --token-review)");
            }
            let loopback = self
                .listen
                .parse::<std::net::SocketAddr>()
                .map(|a| a.ip().is_loopback())
                .unwrap_or_else(|_| self.listen.strip_prefix("localhost:").is_some_and(|port| port.parse::<u16>().is_ok()));
            if !loopback {
                anyhow::bail!(
                    "--listen {}: kache authenticates no client (neither --client-ca-file nor --token-review), so every client would act with kache's credentials; listen on loopback (127.0.0.1 or [::1]) or turn client authentication on",
                    self.listen
                );
            }
            return Ok(None);
        }
        let secs = Duration::from_secs;
        Ok(Some(crate::access::AuthConfig {
            tokens,
            certificates,
            anonymous: self.anonymous_auth,
            authn_ttl: secs(self.authn_cache_ttl),
            authn_failure_ttl: secs(self.authn_failure_cache_ttl),
            allow_ttl: secs(self.authz_allow_ttl),
            deny_ttl: secs(self.authz_deny_ttl),
        }))
    }

    /// The state directory, for the apiserver `client` talks to; `None`
    /// without --state-dir, or (logged) when the apiserver cannot be identified.
    async fn state(&self, client: &Client, creds: &Credentials) -> anyhow::Result<Option<Arc<StateDir>>> {
        let Some(dir) = &self.state_dir else { return Ok(None) };
        let upstream = match Upstream::identify(client, creds).await {
            Ok(u) => u,
            Err(e) => {
                tracing::warn!(error = %e, "--state-dir: cannot identify the apiserver; no state is restored or saved");
                return Ok(None);
            }
        };
        let state = StateDir::open(dir, upstream).map_err(|e| anyhow::anyhow!("--state-dir {}: {e}", dir.display()))?;
        Ok(Some(Arc::new(state)))
    }

    fn reflector(&self) -> ReflectorConfig {
        ReflectorConfig {
            page_size: self.page_size.max(1),
            watch_timeout: Duration::from_secs(self.watch_timeout.max(1)),
            // Contact at least three times within the staleness bound.
            heartbeat: HEARTBEAT.min(Duration::from_secs(self.max_staleness.max(1)) / 3),
            consistency_check: (self.consistency_check_interval > 0).then(|| Duration::from_secs(self.consistency_check_interval)),
            ..ReflectorConfig::default()
        }
    }
}

/// A running kache: its address and the shared state.
#[derive(Debug)]
pub struct Running {
    /// Where it listens.
    pub url: String,
    /// Its state (cache, counters).
    pub api: Arc<Api>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    saver: Option<Saver>,
    /// Connections opened while kache started, answered by the API since; closed gracefully when dropped.
    _opened_while_starting: Option<StartingConnections>,
}

/// Connections handed over from the starting server, kept open until dropped.
struct StartingConnections {
    _graceful: hyper_util::server::graceful::GracefulShutdown,
}

impl std::fmt::Debug for StartingConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StartingConnections")
    }
}

impl Running {
    /// Stops accepting, lets open requests finish (up to the drain period)
    /// and returns; with --state-dir, saves the state meanwhile (the drain
    /// may take all the time the process is given).
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let saver = self.saver.take();
        let save = async move {
            if let Some(saver) = saver {
                saver.finish().await;
            }
        };
        let _ = tokio::join!(&mut self.task, save);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Adds CRDs to the cached resources when a custom resource is cached
/// without them: its Tables follow its CRD's columns as the cache holds it.
/// Without access to CRDs its Tables are left to the apiserver.
async fn with_crds(client: &Client, resources: &mut Vec<apimachinery::resource::Resource>) {
    let (group, plural) = crate::cache::CRDS;
    if !resources.iter().any(crate::cache::is_custom) || resources.iter().any(|r| r.group == group && r.plural == plural) {
        return;
    }
    match discovery::resolve(client, &[format!("{plural}.{group}")]).await {
        Ok(crds) => resources.extend(crds),
        Err(e) => tracing::warn!(error = %e, "custom resources are cached without their CRDs: their Tables pass through"),
    }
}

/// Adds the cluster's FlowSchemas and PriorityLevelConfigurations to the
/// cached resources: priority and fairness follows them as they change.
/// Without them (not served, or kache may not list them) it runs on the
/// apiserver's bootstrap configuration.
async fn with_flow_control(client: &Client, resources: &mut Vec<apimachinery::resource::Resource>) {
    use crate::flowcontrol::controller::{FLOW_SCHEMAS, GROUP, PRIORITY_LEVELS};
    let specs: Vec<String> = [FLOW_SCHEMAS, PRIORITY_LEVELS]
        .into_iter()
        .filter(|plural| !resources.iter().any(|r| r.group == GROUP && r.plural == *plural))
        .map(|plural| format!("{GROUP}/v1/{plural}"))
        .collect();
    if specs.is_empty() {
        return;
    }
    // Cached only if kache may list them: one it may not list would keep
    // kache from ever being ready (an upgrade without the new RBAC rules).
    let listable = async {
        let found = discovery::resolve(client, &specs).await?;
        for r in &found {
            client.get_bytes(&format!("{}?limit=1", r.collection_path())).await?;
        }
        Ok::<_, UpstreamError>(found)
    };
    match listable.await {
        Ok(found) => resources.extend(found),
        Err(e) => tracing::warn!(error = %e, "priority and fairness runs on the apiserver's bootstrap configuration"),
    }
}

/// Connects, discovers, starts the reflectors and the server.
/// `listening` is called with kache's URL as soon as it listens: once the
/// apiserver has answered discovery, or has not within [`FIRST_DISCOVERY`].
/// From then on it answers — while the apiserver is not reachable yet, with
/// [`Starting`]'s answers (alive, not ready), retrying discovery with backoff.
/// Configuration errors (flags, files, an unknown resource) end it at once:
/// before it listens when the apiserver answered by then.
pub async fn start(args: &ServeArgs, listening: impl FnOnce(&str)) -> anyhow::Result<Running> {
    // Before anything takes a metric's handle (the freshness histograms): a handle taken earlier records nowhere.
    api::metrics::install();
    let tls = args.tls()?;
    let config = args.api()?;
    let auth = args.auth()?;
    args.resources()?;
    let audit = args.audit.start().await?;
    let creds = args.upstream.resolve().await?;
    let client = Client::new(&creds)?;
    // Discovery once before listening, so that an entry of --resources that
    // names nothing on an answering apiserver is refused before kache says
    // it serves; an apiserver that does not answer within FIRST_DISCOVERY
    // is waited for while listening, as below.
    let flow = args.priority_and_fairness();
    let answered = match tokio::time::timeout(FIRST_DISCOVERY, resolve(&client, &args.resources, flow)).await {
        Ok(Ok(resources)) => Some(resources),
        Ok(Err(UpstreamError::Config(e))) => anyhow::bail!(e),
        Ok(Err(_)) | Err(_) => None,
    };
    let listener = api::server::listen(&args.listen).await.map_err(|e| anyhow::anyhow!("--listen {}: {e}", args.listen))?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{}", listener.local_addr()?);
    let probes = match &args.health_listen {
        Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("--health-listen {addr}: {e}"))?),
        None => None,
    };
    listening(&url);
    let starting = Starting::new();
    if let Some(probes) = probes {
        tracing::info!(url = %format!("http://{}", probes.local_addr()?), "health checks and metrics served");
        let handler = api::probes::handler(&starting);
        // Until the process ends: probes must keep answering while kache drains.
        tokio::spawn(async move { api::server::accept(&probes, &None, handler, std::future::pending(), None, || {}).await });
    }
    let (discovered, done) = oneshot::channel::<()>();
    let discovering = async {
        let resources = match answered {
            Some(resources) => Ok(resources),
            None => discover(&client, &creds, (&args.resources, flow), &starting).await,
        };
        let _ = discovered.send(());
        resources
    };
    let answering = api::server::accept(&listener, &tls, starting.handler(), async { _ = done.await }, None, || {});
    let (resources, opened_while_starting) = tokio::join!(discovering, answering);
    let resources = resources?;
    let state = args.state(&client, &creds).await?;
    let budgeted = args.memory_budget > 0 || args.resource_memory_budget > 0;
    let cache = Cache::start(&client, resources, &args.store(), &args.reflector(), state.as_ref(), !budgeted);
    let kept = cache.resources().iter().map(|r| Kept { info: r.info().clone(), store: r.store().clone() }).collect();
    let saver = state.map(|dir| Saver::start(dir, kept, Duration::from_secs(args.state_interval)));
    let api = Arc::new(Api { audit, ..Api::new(cache, client, config, auth) });
    api.cache.resources().iter().for_each(|r| api::metrics::at_zero(&r.info().qualified()));
    crate::budget::start(api.cache.resources(), api.config.budget, api.list_memory.clone());
    api::health::log_changes(&api);
    starting.hand_over(&api);
    let (stop, stopped) = oneshot::channel::<()>();
    let drain = Duration::from_secs(args.shutdown_drain);
    // Watches end at once, as an apiserver's do when it shuts down; other requests get the drain period.
    let (handler, serving) = (api::chain::handler(&api), api.clone());
    let task = tokio::spawn(async move {
        api::server::accept(&listener, &tls, handler, async move { _ = stopped.await }, Some(drain), || serving.stop()).await;
    });
    let names: Vec<String> = api.cache.resources().iter().map(|r| r.info().qualified()).collect();
    tracing::info!(%url, upstream = %creds.server, resources = %names.join(","), "kache serving; loading the initial lists");
    Ok(Running {
        url,
        api,
        stop: Some(stop),
        task,
        saver,
        _opened_while_starting: opened_while_starting.map(|g| StartingConnections { _graceful: g }),
    })
}

/// How long kache waits for the apiserver's discovery before it listens:
/// far more than an answering apiserver takes (every group of a 1.36
/// apiserver, `--resources '*'`: 0.1 s), and a delay the kubelet's probes
/// tolerate (a liveness probe fails after 3 × 10 s).
const FIRST_DISCOVERY: Duration = Duration::from_secs(5);

/// The resources `specs` name, with the CRDs their custom resources need,
/// and with `flow` (priority and fairness on) its configuration.
async fn resolve(client: &Client, specs: &[String], flow: bool) -> Result<Vec<apimachinery::resource::Resource>, UpstreamError> {
    let mut resources = discovery::resolve(client, specs).await?;
    with_crds(client, &mut resources).await;
    if flow {
        with_flow_control(client, &mut resources).await;
    }
    Ok(resources)
}

/// The resources to cache, from the apiserver's discovery; until it
/// answers, retried with backoff (200 ms doubling to 30 s), each failure
/// logged with the apiserver's URL and shown by `/readyz`.
async fn discover(
    client: &Client,
    creds: &Credentials,
    (specs, flow): (&[String], bool),
    starting: &Starting,
) -> anyhow::Result<Vec<apimachinery::resource::Resource>> {
    let mut delay = Duration::from_millis(200);
    loop {
        match resolve(client, specs, flow).await {
            Ok(resources) => return Ok(resources),
            Err(UpstreamError::Config(e)) => anyhow::bail!(e),
            Err(e) => {
                tracing::warn!(upstream = %creds.server, error = %e, retry_in = ?delay, "the apiserver is not answering discovery yet");
                starting.failed(format!("the apiserver at {} is not answering discovery yet: {e}", creds.server));
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(30));
            }
        }
    }
}

/// `kache serve`: runs until SIGINT or SIGTERM, then drains. Prints
/// `kache: serving on URL` once listening.
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let running = start(&args, |url| crate::logs::say(&format!("kache: serving on {url}"))).await?;
    terminated().await?;
    tracing::info!("shutting down: no new connections; draining open requests");
    running.shutdown().await;
    Ok(())
}

/// Completes on SIGINT (Ctrl-C), SIGTERM (how Kubernetes stops a
/// container), or once whoever read kache's output has gone.
pub async fn terminated() -> anyhow::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
        () = crate::logs::output_closed() => {}
    }
    Ok(())
}

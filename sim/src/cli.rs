//! `kache sim`: the simulator as a standalone server.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use tokio::net::TcpListener;

use crate::{
    AuthSettings, CertificateError, CustomResource, PolicyError, Sim, SimConfig, Slowness, SlownessError, StartError, TlsSettings, Workload,
};

/// Why `kache sim` did not start or stopped, naming the flag at fault.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// `--churn` is negative or not a number.
    #[error("--churn must be a rate >= 0, got {0}")]
    Churn(f64),
    /// A number of seconds is negative or not a number.
    #[error("--{flag} must be a number of seconds >= 0, got {value}")]
    Seconds { flag: &'static str, value: f64 },
    /// `--bookmark-interval` is zero.
    #[error("--bookmark-interval must be > 0")]
    BookmarkInterval,
    /// A file a flag names cannot be read.
    #[error("--{flag} {}: {source}", path.display())]
    Read { flag: &'static str, path: PathBuf, source: std::io::Error },
    /// The self-signed certificate cannot be made.
    #[error(transparent)]
    Certificate(#[from] CertificateError),
    /// The `--https-ca-out` file cannot be written.
    #[error("--https-ca-out {}: {source}", path.display())]
    HttpsCaOut { path: PathBuf, source: std::io::Error },
    /// The slowness flags cannot be served.
    #[error("--{0}")]
    Slowness(#[source] SlownessError),
    /// The `--policy` file cannot be read.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The `--listen` address cannot be bound.
    #[error("--listen {listen}: {source}")]
    Listen { listen: String, source: std::io::Error },
    /// The simulator refused its configuration.
    #[error(transparent)]
    Start(#[from] StartError),
    /// Waiting for Ctrl-C failed.
    #[error("waiting for Ctrl-C: {0}")]
    CtrlC(#[source] std::io::Error),
}

fn read(flag: &'static str, path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|source| CliError::Read { flag, path: path.into(), source })
}

/// Options of `kache sim`.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: String,
    /// Pods to generate at start-up.
    #[arg(long, default_value_t = 0)]
    pub pods: usize,
    /// Nodes the pods are spread over.
    #[arg(long, default_value_t = 100)]
    pub nodes: usize,
    /// Namespaces the pods and configmaps are spread over.
    #[arg(long, default_value_t = 10)]
    pub namespaces: usize,
    /// ConfigMaps to generate at start-up.
    #[arg(long, default_value_t = 0)]
    pub configmaps: usize,
    /// Bytes of data in each generated ConfigMap.
    #[arg(long, default_value_t = 1024)]
    pub configmap_size: usize,
    /// RBAC cluster roles to generate at start-up, and as many role bindings (spread over the namespaces).
    #[arg(long, default_value_t = 0)]
    pub rbac: usize,
    /// Changes per second written after start-up (creates, updates, deletes).
    #[arg(long, default_value_t = 0.0)]
    pub churn: f64,
    /// A custom resource to serve: PLURAL.GROUP/VERSION=Kind[,cluster] (repeatable).
    #[arg(long = "crd")]
    pub custom: Vec<CustomResource>,
    /// Seconds between bookmarks on watches that allow them.
    #[arg(long, default_value_t = 60.0)]
    pub bookmark_interval: f64,
    /// Seconds between compactions (0: only on demand, via POST /_sim/compact).
    #[arg(long, default_value_t = 300.0)]
    pub compact_interval: f64,
    /// TLS, HTTP/2 and slowness; boxed, so that `kache`'s command enum stays small (clippy's `large_enum_variant`).
    #[command(flatten)]
    pub serving: Box<ServingArgs>,
    /// Require clients to authenticate; `Authorization: Bearer TOKEN` does.
    #[arg(long)]
    pub token: Option<String>,
    /// Identities and permissions (JSON: users with tokens and groups, allow rules), enforced on every
    /// request and answering TokenReviews and SubjectAccessReviews.
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Turn on the `ShardedListAndWatch` feature gate (kube-apiserver's
    /// `--feature-gates=ShardedListAndWatch=true`): serve `shardSelector`.
    #[arg(long)]
    pub sharded_list_and_watch: bool,
    /// Serve CBOR (`application/cbor`), as kube-apiserver does with its `CBORServingAndStorage`
    /// feature gate on; without it CBOR requests get 406, as with the gate off (1.36's default).
    #[arg(long)]
    pub cbor: bool,
}

/// How `kache sim` serves: TLS, client certificates, HTTP/2 settings and how
/// slow reads are.
#[derive(Debug, Clone, Args)]
pub struct ServingArgs {
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve HTTPS with a self-signed certificate made at start for 127.0.0.1, ::1 and localhost,
    /// written (PEM) to this file before the address is printed: trust it as the CA
    /// (`kubectl --certificate-authority`, `curl --cacert`). Not with --tls-cert, nor with --client-ca.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["tls_cert", "tls_key", "client_ca"])]
    pub https_ca_out: Option<PathBuf>,
    /// Require clients to authenticate; a client certificate signed by this CA (PEM) does. Needs TLS.
    #[arg(long, requires = "tls_cert")]
    pub client_ca: Option<PathBuf>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS of HTTP/2 connections, as the apiserver's flag (0: its default, 100).
    #[arg(long, value_name = "N", default_value_t = crate::http2::DEFAULT_MAX_STREAMS)]
    pub http2_max_streams_per_connection: u32,
    /// Write every list body (JSON, protobuf, Table, metadata-only; whole or a page; also a watch's
    /// initial events) no faster than this many megabytes (10^6 bytes) per second, a write at a
    /// time, as a real apiserver does (it measured about 80); 0: as fast as the client reads.
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub list_mb_per_second: f64,
    /// Answer every consistent read (a list or GET without resourceVersion, a watch with
    /// sendInitialEvents and no resourceVersion) after this many milliseconds, as the apiserver's
    /// etcd quorum read delays it (it measured 5); reads at a resourceVersion do not wait.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub consistent_read_latency_ms: u64,
}

impl SimArgs {
    fn workload(&self) -> Workload {
        Workload {
            pods: self.pods,
            nodes: self.nodes,
            namespaces: self.namespaces,
            configmaps: self.configmaps,
            configmap_size: self.configmap_size,
            rbac: self.rbac,
        }
    }

    fn config(&self) -> Result<SimConfig, CliError> {
        let secs = |flag: &'static str, value: f64| {
            if value.is_finite() && value >= 0.0 { Ok(Duration::from_secs_f64(value)) } else { Err(CliError::Seconds { flag, value }) }
        };
        let bookmark_interval = secs("bookmark-interval", self.bookmark_interval)?;
        if bookmark_interval.is_zero() {
            return Err(CliError::BookmarkInterval);
        }
        let compact = secs("compact-interval", self.compact_interval)?;
        let serving = &self.serving;
        let tls = match (&serving.tls_cert, &serving.tls_key, &serving.https_ca_out) {
            (Some(cert), Some(key), _) => Some(TlsSettings {
                cert_pem: read("tls-cert", cert)?,
                key_pem: read("tls-key", key)?,
                client_ca_pem: serving.client_ca.as_deref().map(|p| read("client-ca", p)).transpose()?,
            }),
            (_, _, Some(out)) => {
                let tls = crate::loopback_tls()?;
                std::fs::write(out, &tls.cert_pem).map_err(|source| CliError::HttpsCaOut { path: out.clone(), source })?;
                Some(tls)
            }
            _ => None,
        };
        let slowness = Slowness {
            list_mb_per_second: serving.list_mb_per_second,
            consistent_read_latency: Duration::from_millis(serving.consistent_read_latency_ms),
        };
        slowness.validate().map_err(CliError::Slowness)?;
        let auth = AuthSettings { token: self.token.clone(), client_certificates: serving.client_ca.is_some() };
        Ok(SimConfig {
            custom: self.custom.clone(),
            bookmark_interval,
            compact_interval: (!compact.is_zero()).then_some(compact),
            tls,
            auth,
            policy: self.policy.as_deref().map(crate::Policy::load).transpose()?,
            workload: self.workload(),
            churn: self.churn,
            http2_max_streams_per_connection: serving.http2_max_streams_per_connection,
            slowness,
            sharded_list_and_watch: self.sharded_list_and_watch,
            cbor: self.cbor,
            ..SimConfig::default()
        })
    }
}

/// Starts a simulator as `args` say: listening, populated, churning.
pub async fn start(args: &SimArgs) -> Result<Sim, CliError> {
    if !(args.churn.is_finite() && args.churn >= 0.0) {
        return Err(CliError::Churn(args.churn));
    }
    let config = args.config()?;
    let listener = TcpListener::bind(&args.listen).await.map_err(|source| CliError::Listen { listen: args.listen.clone(), source })?;
    Ok(Sim::start(config, listener)?)
}

/// Runs the simulator until interrupted. Prints `serving on http://ADDR`
/// (or `https://`) once every generated object is in (requests before that
/// get 503) and the `--https-ca-out` file is written.
pub async fn run(args: SimArgs) -> Result<(), CliError> {
    let started = std::time::Instant::now();
    let sim = start(&args).await?;
    // Whoever reads stdout may stop after the address line: a closed stdout is not an error.
    let _ = writeln!(
        std::io::stdout(),
        "kache sim: serving on {} ({} pods, {} configmaps, revision {}, generated in {:.1?})\ntry: kubectl --server {} get pods -A",
        sim.url(),
        args.pods,
        args.configmaps,
        sim.revision(),
        started.elapsed(),
        sim.url()
    );
    tokio::signal::ctrl_c().await.map_err(CliError::CtrlC)?;
    Ok(())
}

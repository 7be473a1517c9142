//! `kache sim`: the simulator as a standalone server.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use tokio::net::TcpListener;

use crate::{AuthSettings, CustomResource, Sim, SimConfig, TlsSettings, Workload};

fn read(flag: &str, path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("--{flag} {}: {e}", path.display()))
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
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Require clients to authenticate; a client certificate signed by this CA (PEM) does. Needs TLS.
    #[arg(long, requires = "tls_cert")]
    pub client_ca: Option<PathBuf>,
    /// Require clients to authenticate; `Authorization: Bearer TOKEN` does.
    #[arg(long)]
    pub token: Option<String>,
    /// Identities and permissions (JSON: users with tokens and groups, allow rules), enforced on every
    /// request and answering TokenReviews and SubjectAccessReviews.
    #[arg(long)]
    pub policy: Option<PathBuf>,
}

impl SimArgs {
    fn workload(&self) -> Workload {
        Workload {
            pods: self.pods,
            nodes: self.nodes,
            namespaces: self.namespaces,
            configmaps: self.configmaps,
            configmap_size: self.configmap_size,
        }
    }

    fn config(&self) -> Result<SimConfig, String> {
        let secs = |name: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(format!("--{name} must be a number of seconds >= 0, got {v}"))
            }
        };
        let bookmark_interval = secs("bookmark-interval", self.bookmark_interval)?;
        if bookmark_interval.is_zero() {
            return Err("--bookmark-interval must be > 0".into());
        }
        let compact = secs("compact-interval", self.compact_interval)?;
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(TlsSettings {
                cert_pem: read("tls-cert", cert)?,
                key_pem: read("tls-key", key)?,
                client_ca_pem: self.client_ca.as_deref().map(|p| read("client-ca", p)).transpose()?,
            }),
            _ => None,
        };
        let auth = AuthSettings { token: self.token.clone(), client_certificates: self.client_ca.is_some() };
        Ok(SimConfig {
            custom: self.custom.clone(),
            bookmark_interval,
            compact_interval: (!compact.is_zero()).then_some(compact),
            tls,
            auth,
            policy: self.policy.as_deref().map(crate::Policy::load).transpose()?,
            workload: self.workload(),
            churn: self.churn,
            ..SimConfig::default()
        })
    }
}

/// Starts a simulator as `args` say: listening, populated, churning.
pub async fn start(args: &SimArgs) -> Result<Sim, String> {
    if !(args.churn.is_finite() && args.churn >= 0.0) {
        return Err(format!("--churn must be a rate >= 0, got {}", args.churn));
    }
    let config = args.config()?;
    let listener = TcpListener::bind(&args.listen).await.map_err(|e| format!("--listen {}: {e}", args.listen))?;
    Sim::start(config, listener)
}

/// Runs the simulator until interrupted. Prints `serving on http://ADDR`
/// once every generated object is in (requests before that get 503).
pub async fn run(args: SimArgs) -> Result<(), String> {
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
    tokio::signal::ctrl_c().await.map_err(|e| format!("waiting for Ctrl-C: {e}"))?;
    Ok(())
}

//! The servers a scenario measures side by side, and how to talk to them.
//!
//! Without `--kubeconfig` the tool starts its own: the simulator (the
//! direct target, standing in for kube-apiserver) and kache in front of it,
//! both processes on loopback killed at the end. With `--kubeconfig`
//! (and `--context`) the direct target is that cluster's apiserver, with
//! the context's credentials, and `--kache URL` names a kache the user runs
//! in front of it. Every request goes through kache's own upstream client,
//! so TLS, tokens and client certificates work as they do for kache.
//!
//! Invariant: without a kubeconfig every address is loopback; the tool
//! refuses anything else.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Args;
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Full};
use kache::upstream::client::Body;
use kache::upstream::client::{Client, UpBody};
use kache::upstream::connect::{ConnectArgs, Credentials};

use crate::procs::{Proc, cpu_seconds, memory};

/// Where the targets come from, and where the results go.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// The kache binary that runs the simulator and kache (without --kubeconfig).
    #[arg(long, default_value = "target/release/kache")]
    pub kache_bin: String,
    /// Benchmark a real cluster: its kubeconfig (the direct target).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: the current one).
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    pub context: Option<String>,
    /// A kache in front of that cluster, measured beside it (same credentials; http or https).
    #[arg(long, value_name = "URL", requires = "kubeconfig")]
    pub kache: Option<String>,
    /// CA bundle (PEM) for the --kache URL's certificate (default: the cluster's CA).
    #[arg(long, value_name = "PATH", requires = "kache")]
    pub kache_certificate_authority: Option<PathBuf>,
    /// Write every figure as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw latency CDFs and throughput over time to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

impl TargetArgs {
    /// True when the direct target is a real cluster.
    pub fn real(&self) -> bool {
        self.kubeconfig.is_some()
    }
}

/// What a target is, for ratios and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The apiserver (or the simulator): the baseline of every ratio.
    Direct,
    /// kache in front of the direct target.
    Kache,
    /// A plain server sending fixed bytes from memory: the ceiling.
    Plain,
}

impl Role {
    /// Its lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Direct => "direct",
            Role::Kache => "kache",
            Role::Plain => "plain",
        }
    }
}

/// HTTP to one server through kache's upstream client.
#[derive(Debug, Clone)]
pub struct Http {
    client: Client,
}

impl Http {
    /// A client for `creds`.
    pub fn new(creds: &Credentials) -> anyhow::Result<Http> {
        Ok(Http { client: Client::new(creds)? })
    }

    /// A client for a server the tool started (or a plain server): `url` must be loopback.
    pub async fn local(url: &str) -> anyhow::Result<Http> {
        let uri: http::Uri = url.parse()?;
        let loopback = uri.host().is_some_and(|h| {
            h.trim_matches(|c| c == '[' || c == ']').parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()) || h == "localhost"
        });
        if !loopback {
            bail!("{url} is not a loopback address: give --kubeconfig to benchmark a real cluster");
        }
        Http::new(&ConnectArgs { server: Some(url.to_string()), ..Default::default() }.resolve().await?)
    }

    /// Sends `method path` with `headers` and `body`; the response streams.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Bytes>,
    ) -> anyhow::Result<Response<Body>> {
        let mut req = Request::builder().method(method).uri(self.client.uri(path)?);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let body: UpBody = Full::new(body.unwrap_or_default()).map_err(|never| match never {}).boxed();
        Ok(self.client.send(req.body(body)?).await?)
    }

    /// `GET path` with `headers`: the status and the whole body.
    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> anyhow::Result<(u16, Bytes)> {
        let resp = self.send(Method::GET, path, headers, None).await?;
        let status = resp.status().as_u16();
        Ok((status, resp.into_body().collect().await?.to_bytes()))
    }

    /// A JSON request whose answer must be 2xx; returns the body.
    pub async fn json(&self, method: Method, path: &str, content_type: &str, body: String) -> anyhow::Result<Bytes> {
        let resp =
            self.send(method.clone(), path, &[("content-type", content_type), ("accept", "application/json")], Some(body.into())).await?;
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            bail!("{method} {path}: {status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)]));
        }
        Ok(body)
    }
}

/// One server measured.
#[derive(Debug)]
pub struct Target {
    /// Its name in reports (`sim`, `kache`, `plain`, `cluster`).
    pub name: String,
    /// What it is.
    pub role: Role,
    /// How to reach it.
    pub http: Http,
    /// Its process, when it is local: CPU and memory come from `/proc`.
    pub pid: Option<u32>,
}

impl Target {
    /// CPU seconds used so far, when local.
    pub fn cpu(&self) -> Option<f64> {
        self.pid.map(cpu_seconds)
    }

    /// Peak resident memory so far in bytes, when local.
    pub fn peak_rss(&self) -> Option<u64> {
        self.pid.map(|p| memory(p).1)
    }
}

/// The direct target and kache (when there is one), and the processes the tool started.
#[derive(Debug)]
pub struct Fleet {
    /// Direct first, then kache.
    pub targets: Vec<Target>,
    /// The simulator's URL, when the tool started it (its `/_sim/stats` counts upstream requests).
    pub sim_url: Option<String>,
    _procs: Vec<Proc>,
}

impl Fleet {
    /// The targets for `args`: a real cluster (and the user's kache), or
    /// the simulator started with `sim_args` and kache in front of it.
    pub async fn start(args: &TargetArgs, sim_args: &[String], kache_args: &[&str]) -> anyhow::Result<Fleet> {
        if let Some(kubeconfig) = &args.kubeconfig {
            let connect = ConnectArgs { kubeconfig: Some(kubeconfig.clone()), context: args.context.clone(), ..Default::default() };
            let creds = connect.resolve().await.context("reading the kubeconfig")?;
            let mut targets = vec![Target { name: "cluster".into(), role: Role::Direct, http: Http::new(&creds)?, pid: None }];
            if let Some(url) = &args.kache {
                let mut creds = creds.clone();
                creds.server = url.parse().with_context(|| format!("--kache {url:?}"))?;
                if let Some(ca) = &args.kache_certificate_authority {
                    let pem = std::fs::read(ca).with_context(|| format!("{}", ca.display()))?;
                    creds.tls.ca = Some(kache::upstream::tls::certificates(&pem)?);
                }
                targets.push(Target { name: "kache".into(), role: Role::Kache, http: Http::new(&creds)?, pid: None });
            }
            return Ok(Fleet { targets, sim_url: None, _procs: Vec::new() });
        }
        let sim_args: Vec<&str> = sim_args.iter().map(String::as_str).collect();
        let sim = Proc::spawn(&args.kache_bin, &[&["sim", "--listen", "127.0.0.1:0", "--compact-interval", "0"], &sim_args[..]].concat())?;
        let kache = Proc::kache(&args.kache_bin, &sim.url, kache_args)?;
        let direct = Target { name: "sim".into(), role: Role::Direct, http: Http::local(&sim.url).await?, pid: Some(sim.pid()) };
        let cached = Target { name: "kache".into(), role: Role::Kache, http: Http::local(&kache.url).await?, pid: Some(kache.pid()) };
        wait_ready(&cached.http, Duration::from_secs(600)).await?;
        Ok(Fleet { targets: vec![direct, cached], sim_url: Some(sim.url.clone()), _procs: vec![sim, kache] })
    }

    /// The direct target (where the tool writes).
    pub fn direct(&self) -> &Target {
        &self.targets[0]
    }
}

/// Waits until a server's `/readyz` answers 200.
pub async fn wait_ready(http: &Http, within: Duration) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if http.get("/readyz", &[]).await.is_ok_and(|r| r.0 == 200) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("not ready after {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn without_a_kubeconfig_only_loopback_is_reached() {
        for url in ["http://127.0.0.1:1", "http://[::1]:1", "http://localhost:1"] {
            assert!(Http::local(url).await.is_ok(), "{url}");
        }
        for url in ["http://10.0.0.1:6443", "https://example.com", "http://0.0.0.0:80"] {
            let err = Http::local(url).await.unwrap_err().to_string();
            assert!(err.contains("not a loopback address"), "{url}: {err}");
        }
    }
}

//! The servers a scenario measures side by side, and how to talk to them.
//!
//! Without `--kubeconfig` the tool starts its own: the simulator (the
//! direct target, standing in for kube-apiserver; over HTTPS with
//! `--https`, trusted through the CA it writes) and kache in front of it,
//! both processes on loopback killed at the end. With `--kubeconfig`
//! (and `--context`) the direct target is that cluster's apiserver, with
//! the context's credentials, and `--kache URL` names a kache the user runs
//! in front of it (its process found by the port it listens on, or named
//! with `--kache-pid`). Every request goes through kache's own upstream
//! client, so TLS, tokens and client certificates work as they do for
//! kache; over HTTPS that is HTTP/2, 100 streams a connection. A scenario
//! with more clients than a process has files asks for h2c to plain-HTTP
//! targets too ([`Fleet::multiplexed`]).
//!
//! Invariant: without a kubeconfig every address is loopback; the tool
//! refuses anything else.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Args;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use kache::upstream::bearer::Bearer;
use kache::upstream::client::{Client, UpBody};
use kache::upstream::connect::{ConnectArgs, Credentials};

use crate::h2c::Mux;
use crate::procs::{Proc, cpu_seconds, listener, memory, open_files_limit};

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
    /// The --kache process's id, for its CPU and memory (default: the local
    /// process listening on the URL's port, if any).
    #[arg(long, value_name = "PID", requires = "kache")]
    pub kache_pid: Option<u32>,
    /// Serve the simulator the tool starts over HTTPS (HTTP/2 by ALPN, 100
    /// streams a connection, as kube-apiserver) with a certificate of its own,
    /// which the tool and kache trust.
    #[arg(long, conflicts_with = "kubeconfig")]
    pub https: bool,
    /// One more argument for the simulator the tool starts (repeatable), e.g.
    /// `--sim-arg=--list-mb-per-second=50 --sim-arg=--consistent-read-latency-ms=5`.
    #[arg(long = "sim-arg", value_name = "ARG", allow_hyphen_values = true, conflicts_with = "kubeconfig")]
    pub sim_args: Vec<String>,
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

/// HTTP to one server through kache's upstream client, or over h2c.
#[derive(Debug, Clone)]
pub struct Http {
    client: Client,
    /// The credentials' token, which h2c requests carry (kache's client sets it on its own).
    bearer: Bearer,
    /// h2c connections to a plain-HTTP server ([`Http::multiplexed`]).
    mux: Option<Mux>,
}

/// A response body, streaming.
pub type Reply = BoxBody<Bytes, hyper::Error>;

impl Http {
    /// A client for `creds`.
    pub fn new(creds: &Credentials) -> anyhow::Result<Http> {
        Ok(Http { client: Client::new(creds)?, bearer: creds.bearer.clone(), mux: None })
    }

    /// This client, sending over h2c when the server is plain HTTP (where
    /// it would otherwise take a connection per request in flight).
    fn multiplexed(mut self) -> anyhow::Result<Http> {
        if self.connection_per_request() {
            let uri = self.client.uri("/")?;
            self.mux = Some(Mux::new(uri.authority().context("a server URL without a host")?.as_str()));
        }
        Ok(self)
    }

    /// A client for a server the tool started (or a plain server): `url`
    /// must be loopback; an `https` one's certificate must chain to `ca` (PEM).
    pub async fn local(url: &str, ca: Option<&Path>) -> anyhow::Result<Http> {
        Http::new(&local_credentials(url, ca).await?)
    }

    /// HTTP/2 connections open to the server (`None`: it is not spoken).
    pub fn connections(&self) -> Option<usize> {
        self.client.connections().map(|(_, open)| open)
    }

    /// Whether every request in flight takes a connection of its own: plain
    /// `http` is HTTP/1.1 (HTTP/2 comes only by ALPN, over TLS) unless
    /// [`Http::multiplexed`].
    pub fn connection_per_request(&self) -> bool {
        self.mux.is_none() && self.client.uri("/").is_ok_and(|u| u.scheme_str() == Some("http"))
    }

    /// Sends `method path` with `headers` and `body`; the response streams.
    pub async fn send(&self, method: Method, path: &str, headers: &[(&str, &str)], body: Option<Bytes>) -> anyhow::Result<Response<Reply>> {
        let mut req = Request::builder().method(method).uri(self.client.uri(path)?);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let body: UpBody = Full::new(body.unwrap_or_default()).map_err(|never| match never {}).boxed();
        match &self.mux {
            Some(mux) => {
                if let Some(token) = self.bearer.header() {
                    req = req.header(http::header::AUTHORIZATION, token);
                }
                Ok(mux.send(req.body(body)?).await?.map(BodyExt::boxed))
            }
            None => Ok(self.client.send(req.body(body)?).await?.map(BodyExt::boxed)),
        }
    }

    /// `GET path` with `headers`: the status and the whole body.
    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> anyhow::Result<(u16, Bytes)> {
        let resp = self.send(Method::GET, path, headers, None).await?;
        let status = resp.status().as_u16();
        Ok((status, resp.into_body().collect().await?.to_bytes()))
    }

    /// `GET path` with `headers`: the status and the body's length, counted
    /// as it streams (a 1 GB list is not held).
    pub async fn get_length(&self, path: &str, headers: &[(&str, &str)]) -> anyhow::Result<(u16, usize)> {
        let mut body = self.send(Method::GET, path, headers, None).await?;
        let status = body.status().as_u16();
        let mut length = 0;
        while let Some(frame) = body.body_mut().frame().await {
            length += frame?.data_ref().map_or(0, Bytes::len);
        }
        Ok((status, length))
    }

    /// POSTs the JSON object `body` to `collection` ([`Http::retried`]); a
    /// 409 counts as created: it answers a retry of a create the server had
    /// already made.
    pub async fn create(&self, collection: &str, body: String) -> anyhow::Result<()> {
        self.retried(Method::POST, collection, Some(body), StatusCode::CONFLICT).await
    }

    /// PUTs the JSON object `body` to `path` ([`Http::retried`]); a 404 counts as done.
    pub async fn update(&self, path: &str, body: String) -> anyhow::Result<()> {
        self.retried(Method::PUT, path, Some(body), StatusCode::NOT_FOUND).await
    }

    /// DELETEs `path` ([`Http::retried`]); a 404 counts as deleted.
    pub async fn delete(&self, path: &str) -> anyhow::Result<()> {
        self.retried(Method::DELETE, path, None, StatusCode::NOT_FOUND).await
    }

    /// Sends `method path` with the JSON object `body`, retrying as
    /// client-go does: a 429 or 5xx answer after its `Retry-After` (else
    /// 1 s), a transport error or no answer within [`REQUEST_TIMEOUT`] after
    /// 1 s, at most [`RETRIES`] times. A success or `done` ends it.
    async fn retried(&self, method: Method, path: &str, body: Option<String>, done: StatusCode) -> anyhow::Result<()> {
        let (headers, body) = ([("content-type", "application/json"), ("accept", "application/json")], body.map(Bytes::from));
        let mut retries = 0;
        loop {
            let last = retries == RETRIES;
            retries += 1;
            let sent = tokio::time::timeout(REQUEST_TIMEOUT, self.send(method.clone(), path, &headers, body.clone())).await;
            let sent = sent.unwrap_or_else(|_| Err(anyhow::anyhow!("no answer within {REQUEST_TIMEOUT:?}")));
            let wait = match sent {
                Ok(resp) if resp.status().is_success() || resp.status() == done => {
                    // Read to its end: a stream reset instead costs the server an error (kube-apiserver logs each).
                    let _ = resp.into_body().collect().await;
                    return Ok(());
                }
                Ok(resp) if !last && (resp.status() == StatusCode::TOO_MANY_REQUESTS || resp.status().is_server_error()) => {
                    retry_after(resp.headers()).unwrap_or(Duration::from_secs(1))
                }
                Ok(resp) => {
                    let status = resp.status();
                    let body = resp.into_body().collect().await?.to_bytes();
                    bail!("{method} {path}: {status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)]));
                }
                Err(_) if !last => Duration::from_secs(1),
                Err(e) => return Err(e.context(format!("{method} {path}"))),
            };
            tokio::time::sleep(wait).await;
        }
    }
}

/// How long a request may go unanswered before it counts as failed: past
/// kube-apiserver's own timeout (60 s), by which it has answered.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(90);

/// Retries of a request the server shed or failed: client-go's `maxRetries`.
const RETRIES: u32 = 10;

/// The wait a `Retry-After: SECONDS` header asks for (kube-apiserver sends
/// seconds with 429s from API Priority and Fairness and with some 5xx).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let secs: u64 = headers.get(http::header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(secs))
}

/// The credentials of a server the tool started: `url` must be loopback;
/// an `https` one's certificate must chain to `ca` (PEM).
async fn local_credentials(url: &str, ca: Option<&Path>) -> anyhow::Result<Credentials> {
    let uri: http::Uri = url.parse()?;
    let loopback = uri.host().is_some_and(|h| {
        h.trim_matches(|c| c == '[' || c == ']').parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()) || h == "localhost"
    });
    if !loopback {
        bail!("{url} is not a loopback address: give --kubeconfig to benchmark a real cluster");
    }
    let connect = ConnectArgs { server: Some(url.to_string()), certificate_authority: ca.map(Path::to_path_buf), ..Default::default() };
    Ok(connect.resolve().await?)
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
    /// Each target's credentials, in order.
    creds: Vec<Credentials>,
    _procs: Vec<Proc>,
    /// With `--https`: the directory of the simulator's CA certificate, removed on drop.
    _ca_dir: Option<tempfile::TempDir>,
}

impl Fleet {
    /// The targets for `args`: a real cluster (and the user's kache), or
    /// the simulator started with `sim_args` (then the user's `--sim-arg`s)
    /// and kache in front of it started with `kache_args`.
    pub async fn start(args: &TargetArgs, sim_args: &[String], kache_args: &[&str]) -> anyhow::Result<Fleet> {
        if let Some(kubeconfig) = &args.kubeconfig {
            let connect = ConnectArgs { kubeconfig: Some(kubeconfig.clone()), context: args.context.clone(), ..Default::default() };
            let creds = connect.resolve().await.context("reading the kubeconfig")?;
            let mut targets = vec![Target { name: "cluster".into(), role: Role::Direct, http: Http::new(&creds)?, pid: None }];
            let mut all = vec![creds.clone()];
            if let Some(url) = &args.kache {
                let mut creds = creds.clone();
                creds.server = url.parse().with_context(|| format!("--kache {url:?}"))?;
                if let Some(ca) = &args.kache_certificate_authority {
                    let pem = std::fs::read(ca).with_context(|| format!("{}", ca.display()))?;
                    creds.tls.ca = Some(kache::upstream::tls::certificates(&pem)?);
                }
                let pid = args.kache_pid.or_else(|| listener(creds.server.port_u16()?));
                targets.push(Target { name: "kache".into(), role: Role::Kache, http: Http::new(&creds)?, pid });
                all.push(creds);
            }
            return Ok(Fleet { targets, sim_url: None, creds: all, _procs: Vec::new(), _ca_dir: None });
        }
        let ca_dir = args.https.then(tempfile::tempdir).transpose().context("a directory for the simulator's CA")?;
        let ca = ca_dir.as_ref().map(|d| d.path().join("ca.crt"));
        let ca_arg = ca.as_deref().map(|p| p.to_str().context("a UTF-8 temporary path")).transpose()?;
        let mut sim_cmd = vec!["sim", "--listen", "127.0.0.1:0", "--compact-interval", "0"];
        sim_cmd.extend(sim_args.iter().chain(&args.sim_args).map(String::as_str));
        let mut kache_cmd = kache_args.to_vec();
        if let Some(ca) = ca_arg {
            // The simulator writes its CA before it prints its address, which `Proc::spawn` waits for.
            sim_cmd.extend(["--https-ca-out", ca]);
            kache_cmd.extend(["--certificate-authority", ca]);
        }
        let sim = Proc::spawn(&args.kache_bin, &sim_cmd)?;
        let kache = Proc::kache(&args.kache_bin, &sim.url, &kache_cmd)?;
        let creds = vec![local_credentials(&sim.url, ca.as_deref()).await?, local_credentials(&kache.url, None).await?];
        let direct = Target { name: "sim".into(), role: Role::Direct, http: Http::new(&creds[0])?, pid: Some(sim.pid()) };
        let cached = Target { name: "kache".into(), role: Role::Kache, http: Http::new(&creds[1])?, pid: Some(kache.pid()) };
        wait_ready(&cached.http, Duration::from_secs(600)).await?;
        Ok(Fleet { targets: vec![direct, cached], sim_url: Some(sim.url.clone()), creds, _procs: vec![sim, kache], _ca_dir: ca_dir })
    }

    /// Target `i` as the user of bearer `token` (the same server, TLS and process).
    pub fn as_user(&self, i: usize, token: &str) -> anyhow::Result<Target> {
        let mut creds = self.creds[i].clone();
        creds.bearer = Bearer::token(token)?;
        let t = &self.targets[i];
        Ok(Target { name: t.name.clone(), role: t.role, http: Http::new(&creds)?, pid: t.pid })
    }

    /// The direct target (where the tool writes).
    pub fn direct(&self) -> &Target {
        &self.targets[0]
    }

    /// Every target's client sending over h2c when the target is plain
    /// HTTP ([`crate::h2c`]): for scenarios with more clients than this
    /// process may open files.
    pub fn multiplexed(mut self) -> anyhow::Result<Fleet> {
        for t in &mut self.targets {
            t.http = t.http.clone().multiplexed()?;
        }
        Ok(self)
    }

    /// Fails, before anything is created, when `clients` requests in flight
    /// at once to a target over plain HTTP (a connection each) would pass
    /// this process's open-files limit: they would fail to connect, and the
    /// run with them. The tool's own simulator and kache inherit the limit
    /// and hold the other ends.
    pub fn check_open_files(&self, clients: usize) -> anyhow::Result<()> {
        // The rest a run holds: standard streams, the runtime's, pipes, HTTP/2 connections (one per 100 streams).
        let needed = (clients + clients / 100 + 64) as u64;
        let Some(limit) = open_files_limit().filter(|l| *l < needed) else { return Ok(()) };
        if let Some(t) = self.targets.iter().find(|t| t.http.connection_per_request()) {
            bail!(
                "{clients} clients over plain HTTP to {} need about {needed} open files, and this process may open {limit}: raise the limit (`ulimit -n {needed}`)",
                t.name
            );
        }
        Ok(())
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
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn without_a_kubeconfig_only_loopback_is_reached() {
        for url in ["http://127.0.0.1:1", "http://[::1]:1", "http://localhost:1"] {
            assert!(Http::local(url, None).await.is_ok(), "{url}");
        }
        for url in ["http://10.0.0.1:6443", "https://example.com", "http://0.0.0.0:80"] {
            let err = Http::local(url, None).await.unwrap_err().to_string();
            assert!(err.contains("not a loopback address"), "{url}: {err}");
        }
    }

    /// A loopback server answering its `i`-th request with `statuses[i]`
    /// (`Retry-After: 0` on each): its client, and how many requests came.
    async fn scripted(statuses: &'static [u16]) -> (Http, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let counter = counter.clone();
                let svc = hyper::service::service_fn(move |_req| {
                    let status = statuses[counter.fetch_add(1, Ordering::Relaxed).min(statuses.len() - 1)];
                    let resp = Response::builder().status(status).header("retry-after", "0").body(Full::new(Bytes::new()));
                    async move { resp }
                });
                tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(stream), svc));
            }
        });
        (Http::local(&url, None).await.unwrap(), seen)
    }

    #[tokio::test]
    async fn a_create_the_server_shed_is_sent_again_and_a_conflict_after_it_counts_as_created() {
        let (http, seen) = scripted(&[429, 503, 409]).await;
        http.create("/api/v1/namespaces", "{}".into()).await.unwrap();
        assert_eq!(seen.load(Ordering::Relaxed), 3);
    }

    #[tokio::test]
    async fn a_create_the_server_refuses_fails_at_once() {
        let (http, seen) = scripted(&[403]).await;
        let err = http.create("/api/v1/namespaces", "{}".into()).await.unwrap_err().to_string();
        assert!(err.contains("403"), "{err}");
        assert_eq!(seen.load(Ordering::Relaxed), 1);
    }
}

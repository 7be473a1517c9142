//! The kache load generator. `loadtest lists` starts the simulator and kache
//! in front of it as processes on loopback, plus a plain in-memory server
//! that answers each workload with fixed bytes (the floor any server pays),
//! then runs each list workload against the three in one run and prints
//! requests/s, latency, and CPU per request of the serving process.
//!
//! Bounded: a fixed number of requests per workload and target, loopback
//! only, every child process killed at the end.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::{Args, Parser, Subcommand};
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

#[derive(Debug, Parser)]
#[command(name = "loadtest", about = "Load generator and latency benchmark for kache")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Lists through kache vs the simulator directly vs a plain memory server.
    Lists(ListsArgs),
}

#[derive(Debug, Args)]
struct ListsArgs {
    /// The kache binary (build it with `cargo build --release`).
    #[arg(long, default_value = "target/release/kache")]
    kache_bin: String,
    /// Pods in the simulated cluster.
    #[arg(long, default_value_t = 100_000)]
    pods: usize,
    /// Requests per workload and target.
    #[arg(long, default_value_t = 20)]
    requests: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 2)]
    concurrency: usize,
}

/// A child process killed on drop.
struct Proc(Child, String);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(bin: &str, args: &[&str]) -> anyhow::Result<Proc> {
    let mut child =
        Command::new(bin).args(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().with_context(|| format!("running {bin}"))?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("stdout")?).read_line(&mut line)?;
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).with_context(|| format!("no address in {line:?}"))?.to_string();
    Ok(Proc(child, url))
}

/// User + system CPU seconds of a process so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum());
    ticks / 100.0
}

type HttpClient = Client<HttpConnector, Empty<Bytes>>;

async fn get(client: &HttpClient, url: &str, gzip: bool) -> anyhow::Result<(u16, Bytes)> {
    let mut req = hyper::Request::get(url);
    if gzip {
        req = req.header("accept-encoding", "gzip");
    }
    let resp = client.request(req.body(Empty::new())?).await?;
    let status = resp.status().as_u16();
    Ok((status, resp.into_body().collect().await?.to_bytes()))
}

/// Serves `body` (gzip-encoded when `gzip`) to every request, like a server that did no work.
async fn plain_server(body: Bytes, gzip: bool) -> anyhow::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |_req| {
                    let mut resp = hyper::Response::new(Full::new(body.clone()));
                    resp.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
                    if gzip {
                        resp.headers_mut().insert("content-encoding", hyper::header::HeaderValue::from_static("gzip"));
                    }
                    async move { Ok::<_, std::convert::Infallible>(resp) }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    });
    Ok((url, task))
}

struct Outcome {
    rps: f64,
    p50: Duration,
    p99: Duration,
    bytes: usize,
    cpu_ms_per_req: Option<f64>,
}

async fn run(client: &HttpClient, url: &str, gzip: bool, n: usize, concurrency: usize, pid: Option<u32>) -> anyhow::Result<Outcome> {
    let cpu0 = pid.map(cpu_seconds);
    let started = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (client, url, next) = (client.clone(), url.to_string(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < n {
                let t = Instant::now();
                let (status, body) = get(&client, &url, gzip).await?;
                if status != 200 {
                    bail!("{url}: status {status}");
                }
                out.push((t.elapsed(), body.len()));
            }
            Ok(out)
        }));
    }
    let mut samples = Vec::new();
    for t in tasks {
        samples.extend(t.await??);
    }
    let wall = started.elapsed();
    samples.sort();
    let at =
        |q: f64| samples.get(((samples.len() as f64 * q) as usize).min(samples.len().saturating_sub(1))).map_or(Duration::ZERO, |s| s.0);
    Ok(Outcome {
        rps: samples.len() as f64 / wall.as_secs_f64(),
        p50: at(0.5),
        p99: at(0.99),
        bytes: samples.first().map_or(0, |s| s.1),
        cpu_ms_per_req: pid.zip(cpu0).map(|(p, c0)| (cpu_seconds(p) - c0) * 1000.0 / samples.len().max(1) as f64),
    })
}

async fn lists(args: ListsArgs) -> anyhow::Result<()> {
    let pods = args.pods.to_string();
    let sim = spawn(&args.kache_bin, &["sim", "--listen", "127.0.0.1:0", "--pods", &pods, "--compact-interval", "0"])?;
    let kache = spawn(&args.kache_bin, &["serve", "--listen", "127.0.0.1:0", "--server", &sim.1, "--resources", "pods"])?;
    let client: HttpClient = Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let deadline = Instant::now() + Duration::from_secs(600);
    while get(&client, &format!("{}/readyz", kache.1), false).await.map(|r| r.0).unwrap_or(0) != 200 {
        if Instant::now() > deadline {
            bail!("kache did not become ready");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, head) = get(&client, &format!("{}/api/v1/pods?resourceVersion=0&limit=1", kache.1), false).await?;
    let rv = serde_json::from_slice::<serde_json::Value>(&head)?["metadata"]["resourceVersion"].as_str().context("a revision")?.to_string();
    let workloads = [
        ("full list", format!("/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact"), false),
        ("full list, gzip", format!("/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact"), true),
        ("page of 500", format!("/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact&limit=500"), false),
    ];
    println!("{} pods, {} requests per cell, {} in flight\n", args.pods, args.requests, args.concurrency);
    println!("{:<16} {:<8} {:>9} {:>10} {:>10} {:>11} {:>12}", "workload", "target", "req/s", "p50", "p99", "bytes", "cpu ms/req");
    for (name, path, gzip) in workloads {
        let (_, oracle) = get(&client, &format!("{}{path}", sim.1), gzip).await?;
        let (plain_url, plain) = plain_server(oracle, gzip).await?;
        let mut rates = Vec::new();
        for (target, base, pid) in [("kache", &kache.1, Some(kache.0.id())), ("sim", &sim.1, Some(sim.0.id())), ("plain", &plain_url, None)]
        {
            let o = run(&client, &format!("{base}{path}"), gzip, args.requests, args.concurrency, pid).await?;
            let cpu = o.cpu_ms_per_req.map_or("-".to_string(), |c| format!("{c:.1}"));
            println!("{name:<16} {target:<8} {:>9.1} {:>10.2?} {:>10.2?} {:>11} {cpu:>12}", o.rps, o.p50, o.p99, o.bytes);
            rates.push(o.rps);
        }
        println!("{name:<16} ratios: kache/sim {:.2}x, kache/plain {:.2}x\n", rates[0] / rates[1], rates[0] / rates[2]);
        plain.abort();
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Cmd::Lists(args) => lists(args).await,
    }
}

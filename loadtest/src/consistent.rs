//! `loadtest consistent`: everything that goes to the apiserver through
//! kache, or might — against the simulator over HTTPS and HTTP/2 (100
//! streams a connection) made as slow as kube-apiserver (lists at
//! `--list-mb-per-second`, consistent reads after
//! `--consistent-read-latency-ms`), kache and the simulator directly in one
//! run:
//!
//! - `streams at once`: `--streams` watches of a resource kache does not
//!   cache, opened together: the slowest response head, and the
//!   connections each side needed upstream;
//! - `relayed list`: the whole list of pods at a revision older than
//!   kache's window, which kache relays from upstream as it comes;
//! - consistent reads (no `resourceVersion`), which kache answers from
//!   memory or passes through, whichever it expects sooner: a whole list
//!   in JSON, protobuf and Table, a page of 500 (a Table, as kubectl asks),
//!   a GET, client-go's streaming list, and kubectl's paging (a first page
//!   without revision, then every continue page).
//!
//! Each under a write load of `--load` (configmaps by default: the pods
//! stay quiet while the revision moves, as in a real cluster). For kache,
//! the share answered from memory comes from its own counters, and the
//! delays of its freshness proofs from its histogram.
//!
//! Bounded: a fixed number of requests per cell; loopback only; children
//! killed at the end.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use apimachinery::list::ListPage;
use clap::{Args, ValueEnum};
use http::Method;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::objects::{self, Objects};
use crate::procs::{Proc, cpu_seconds};
use crate::target::Http;

/// Options of `loadtest consistent`.
#[derive(Debug, Args)]
pub struct ConsistentArgs {
    /// The kache binary (build it with `cargo build --release`).
    #[arg(long, default_value = "target/release/kache")]
    kache_bin: String,
    /// Pods in the simulated cluster.
    #[arg(long, default_value_t = 50_000)]
    pods: usize,
    /// What is written meanwhile.
    #[arg(long, value_enum, default_value_t = Load::Configmaps)]
    load: Load,
    /// Writes per second.
    #[arg(long, default_value_t = 100.0)]
    rate: f64,
    /// Requests per cell (GETs and pages: ten times as many).
    #[arg(long, default_value_t = 3)]
    requests: usize,
    /// Watches opened at once in `streams at once`.
    #[arg(long, default_value_t = 10_000)]
    streams: usize,
    /// The simulator's list throughput, MB/s (kube-apiserver 1.36 measured: 230 MB in 2.9 s).
    #[arg(long, default_value_t = 80.0)]
    list_mb_per_second: f64,
    /// The simulator's consistent-read latency, ms (kube-apiserver 1.36 measured: a GET in 5 ms).
    #[arg(long, default_value_t = 5)]
    consistent_read_latency_ms: u64,
}

/// The write load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Load {
    /// Nothing written.
    None,
    /// Pods written: the resource read is busy.
    Pods,
    /// Configmaps written: the pods are quiet next to the moving revision.
    Configmaps,
}

/// What kubectl asks for on `get`.
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
/// What typed clients and controllers ask for.
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf, */*";

/// One workload: how to run one request of it against a target.
#[derive(Debug, Clone, Copy)]
enum Workload {
    /// The whole list of pods, accepting this.
    FullList(&'static str, &'static str),
    Page,
    Get,
    StreamingList,
    Paging,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::FullList(name, _) => name,
            Workload::Page => "page of 500 table",
            Workload::Get => "GET",
            Workload::StreamingList => "streaming list",
            Workload::Paging => "kubectl paging",
        }
    }

    fn count(self, requests: usize) -> usize {
        match self {
            Workload::Get | Workload::Page => requests * 10,
            _ => requests,
        }
    }

    /// Runs one request (for paging: every page); returns how many requests that was.
    async fn run(self, http: &Http) -> anyhow::Result<u64> {
        match self {
            Workload::FullList(_, accept) => fetch(http, "/api/v1/pods", accept).await.map(|_| 1),
            Workload::Page => fetch(http, "/api/v1/pods?limit=500", TABLE).await.map(|_| 1),
            Workload::Get => fetch(http, "/api/v1/namespaces/ns-0003/pods/app-00000-0000003", PROTOBUF).await.map(|_| 1),
            Workload::StreamingList => {
                let path = "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=120";
                let mut body = http.send(Method::GET, path, &[], None).await?.into_body();
                let marker = b"k8s.io/initial-events-end";
                // Keep the tail of what came so far: the marker may straddle two chunks.
                let mut tail = Vec::new();
                while let Some(frame) = body.frame().await {
                    let Ok(data) = frame?.into_data() else { continue };
                    tail.extend_from_slice(&data);
                    if tail.windows(marker.len()).any(|w| w == marker) {
                        return Ok(1);
                    }
                    tail.drain(..tail.len().saturating_sub(marker.len()));
                }
                bail!("the streaming list ended before its initial-events-end bookmark")
            }
            Workload::Paging => {
                let mut pages = 0;
                let mut token = String::new();
                loop {
                    let path = if token.is_empty() {
                        "/api/v1/pods?limit=500".to_string()
                    } else {
                        format!("/api/v1/pods?limit=500&continue={token}")
                    };
                    let body = fetch(http, &path, "application/json").await?;
                    pages += 1;
                    match ListPage::parse(&body)?.continue_token {
                        Some(next) => token = next,
                        None => return Ok(pages),
                    }
                }
            }
        }
    }
}

async fn fetch(http: &Http, path: &str, accept: &str) -> anyhow::Result<bytes::Bytes> {
    let (status, body) = http.get(path, &[("accept", accept)]).await?;
    if status != 200 {
        bail!("{path}: {status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)]));
    }
    Ok(body)
}

/// kache's `/metrics`, sample by sample.
async fn scrape(kache: &Http) -> anyhow::Result<Vec<(String, f64)>> {
    let body = fetch(kache, "/metrics", "text/plain").await?;
    Ok(String::from_utf8_lossy(&body)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(k, v)| Some((k.to_string(), v.parse().ok()?))))
        .collect())
}

/// The sum of the samples of `name` that are the pods' (or have no labels).
fn pods_sum(metrics: &[(String, f64)], name: &str) -> u64 {
    metrics
        .iter()
        .filter(|(k, _)| {
            k.strip_prefix(name).is_some_and(|rest| rest.is_empty() || (rest.starts_with('{') && rest.contains("resource=\"pods\"")))
        })
        .map(|(_, v)| *v as u64)
        .sum()
}

/// What kache answered from memory: consistent reads proven fresh and passed through, and lists served (continue pages).
async fn from_memory(kache: &Http) -> anyhow::Result<(u64, u64, u64)> {
    let m = scrape(kache).await?;
    Ok((
        pods_sum(&m, "kache_consistent_reads_fresh_total"),
        pods_sum(&m, "kache_consistent_reads_passed_through_total"),
        pods_sum(&m, "kache_lists_served_total"),
    ))
}

/// A watch of secrets, which kache does not cache: a stream upstream for each.
const SECRETS: &str = "/api/v1/namespaces/ns-0000/secrets?watch=1&timeoutSeconds=60";

/// Opens `n` watches on the simulator at once through `http` (HTTP/2 as
/// kache's client speaks it, 100 streams a connection); the slowest head.
async fn streams_at_once(http: &Http, n: usize) -> anyhow::Result<Duration> {
    let opens = (0..n).map(|_| async {
        let sent = Instant::now();
        let resp = http.send(Method::GET, SECRETS, &[], None).await?;
        anyhow::ensure!(resp.status() == 200, "a watch got {}", resp.status());
        Ok::<_, anyhow::Error>((resp, sent.elapsed()))
    });
    let open = futures_util::future::try_join_all(opens).await?;
    Ok(open.iter().map(|(_, head)| *head).max().unwrap_or_default())
}

/// Opens `n` watches through kache at once, as many clients would over
/// HTTP/2 without TLS (h2c), 100 streams a connection like the direct
/// side, so both measure the streams and not thousands of TCP handshakes;
/// the slowest head.
async fn streams_at_once_h2c(url: &str, n: usize) -> anyhow::Result<Duration> {
    let addr = url.strip_prefix("http://").context("kache listens on http://")?;
    let mut senders = Vec::new();
    for _ in 0..n.div_ceil(100) {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp)).await?;
        tokio::spawn(conn);
        senders.push(sender);
    }
    let opens = (0..n).map(|i| {
        let mut sender = senders[i / 100].clone();
        async move {
            let req = http::Request::get(format!("{url}{SECRETS}")).body(http_body_util::Empty::<bytes::Bytes>::new())?;
            let sent = Instant::now();
            let resp = sender.send_request(req).await?;
            anyhow::ensure!(resp.status() == 200, "a watch got {}", resp.status());
            Ok::<_, anyhow::Error>((resp, sent.elapsed()))
        }
    });
    let open = futures_util::future::try_join_all(opens).await?;
    Ok(open.iter().map(|(_, head)| *head).max().unwrap_or_default())
}

/// Runs every cell against both targets, under the chosen write load.
pub async fn run_all(args: ConsistentArgs) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("a directory for the simulator's CA")?;
    let ca = dir.path().join("ca.crt");
    let (rate, latency) = (args.list_mb_per_second.to_string(), args.consistent_read_latency_ms.to_string());
    let ca_arg = ca.to_str().context("a UTF-8 temp path")?;
    let sim_args =
        ["--https-ca-out", ca_arg, "--configmaps", "1000", "--list-mb-per-second", &rate, "--consistent-read-latency-ms", &latency];
    let sim = Proc::sim(&args.kache_bin, args.pods, args.pods / 100, &sim_args)?;
    let kache = Proc::kache(&args.kache_bin, &sim.url, &["--certificate-authority", ca_arg])?;
    let (direct, cached) = (Http::local(&sim.url, Some(&ca)).await?, Http::local(&kache.url, None).await?);
    crate::target::wait_ready(&cached, Duration::from_secs(600)).await?;
    let stop = Instant::now() + Duration::from_secs(3600);
    let target = match args.load {
        Load::None => None,
        Load::Pods => Some(Objects::SimPods { count: args.pods, nodes: args.pods / 100, mounts: 0 }),
        Load::Configmaps => Some(Objects::SimConfigMaps { count: 1000 }),
    };
    let writer = target.map(|t| tokio::spawn(objects::write(direct.clone(), t, args.rate, stop)));
    // Let the write load settle (kache measures a resource's recent event rate).
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!(
        "{} pods over HTTPS/HTTP/2 (100 streams a connection), lists at {} MB/s, consistent reads after {} ms; {:?} written at {}/s\n",
        args.pods, args.list_mb_per_second, args.consistent_read_latency_ms, args.load, args.rate
    );
    println!("{:<22} {:<6} {:>10} {:>10} {:>11} {:>14}", "workload", "target", "p50", "p99", "cpu ms/req", "from memory");
    for name in ["kache", "sim"] {
        let slowest = match name {
            "kache" => streams_at_once_h2c(&kache.url, args.streams).await,
            _ => streams_at_once(&direct, args.streams).await,
        };
        let slowest = slowest.with_context(|| format!("{} streams via {name}", args.streams))?;
        let connections = match name {
            "kache" => scrape(&cached).await?.iter().find(|(k, _)| k == "kache_upstream_connections").map_or(0.0, |(_, v)| *v) as usize,
            _ => direct.connections().unwrap_or(0),
        };
        println!(
            "{:<22} {name:<6} slowest head {slowest:.2?} of {} at once; {connections} connections upstream",
            "streams at once", args.streams
        );
    }
    // Below kache's window: relayed from upstream as it comes.
    let before = first_revision_of(&cached).await?.saturating_sub(1);
    let relayed = format!("/api/v1/pods?resourceVersion={before}&resourceVersionMatch=Exact");
    for (name, http, pid) in [("kache", &cached, kache.pid()), ("sim", &direct, sim.pid())] {
        let (cpu, mut times) = (cpu_seconds(pid), Vec::new());
        for _ in 0..args.requests {
            let t = Instant::now();
            fetch(http, &relayed, "application/json").await.with_context(|| format!("the relayed list via {name}"))?;
            times.push(t.elapsed());
        }
        report("relayed list", name, &mut times, (cpu_seconds(pid) - cpu) * 1000.0 / args.requests as f64, "-".into());
    }
    let workloads = [
        Workload::FullList("full list json", "application/json"),
        Workload::FullList("full list protobuf", PROTOBUF),
        Workload::FullList("full list table", TABLE),
        Workload::StreamingList,
        Workload::Page,
        Workload::Get,
        Workload::Paging,
    ];
    for w in workloads {
        let mut p50s = Vec::new();
        for (name, http, pid) in [("kache", &cached, kache.pid()), ("sim", &direct, sim.pid())] {
            let before = from_memory(&cached).await?;
            let (cpu, mut times, mut requests) = (cpu_seconds(pid), Vec::new(), 0);
            for _ in 0..w.count(args.requests) {
                let t = Instant::now();
                requests += w.run(http).await.with_context(|| format!("{} via {name}", w.name()))?;
                times.push(t.elapsed());
            }
            let after = from_memory(&cached).await?;
            let memory = match (name, w) {
                ("sim", _) => "-".to_string(),
                (_, Workload::Paging) => format!("{}/{requests} pages", after.2 - before.2),
                _ => format!("{}/{}", after.0 - before.0, (after.0 - before.0) + (after.1 - before.1)),
            };
            p50s.push(report(w.name(), name, &mut times, (cpu_seconds(pid) - cpu) * 1000.0 / requests.max(1) as f64, memory));
        }
        println!("{:<22} kache p50 ÷ sim p50 {:.2}", w.name(), p50s[0].as_secs_f64() / p50s[1].as_secs_f64().max(1e-9));
    }
    if let Some(w) = writer {
        w.abort();
    }
    let m = scrape(&cached).await?;
    let buckets: Vec<String> = m
        .iter()
        .filter(|(k, _)| k.starts_with("kache_freshness_proof_seconds_bucket") && k.contains("resource=\"pods\""))
        .map(|(k, v)| format!("≤{}: {v}", k.split("le=\"").nth(1).unwrap_or("").trim_end_matches("\"}")))
        .collect();
    println!("\nkache's freshness proofs of pods (cumulative, seconds): {}", buckets.join(", "));
    Ok(())
}

/// Prints one row; returns the p50.
fn report(workload: &str, target: &str, times: &mut [Duration], cpu_ms: f64, memory: String) -> Duration {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    println!("{workload:<22} {target:<6} {:>10.2?} {:>10.2?} {cpu_ms:>11.1} {memory:>14}", at(0.5), at(0.99));
    at(0.5)
}

/// The revision of kache's oldest event: the start of its window.
async fn first_revision_of(kache: &Http) -> anyhow::Result<u64> {
    let m = scrape(kache).await?;
    m.iter()
        .find(|(k, _)| k == "kache_store_oldest_revision{resource=\"pods\"}")
        .map(|(_, v)| *v as u64)
        .context("kache's oldest revision of pods")
}

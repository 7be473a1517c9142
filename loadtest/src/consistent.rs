//! `loadtest consistent`: reads without `resourceVersion` (consistent
//! reads), through kache and directly on the simulator, in one run: a full
//! list, a page of 500, a GET, client-go's streaming list, and kubectl's
//! paging pattern (a first page without revision, then every continue
//! page), each under three write loads — none, pods written, another
//! resource written. For kache, the share answered from memory comes from
//! its own counters.
//!
//! Bounded: a fixed number of requests per cell; loopback only; children
//! killed at the end.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use apimachinery::list::ListPage;
use bytes::Bytes;
use clap::Args;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::objects::{self, Objects};
use crate::procs::{self, Proc, cpu_seconds};
use crate::target::Http;

/// A client with request bodies.
type WriteClient = Client<HttpConnector, Full<Bytes>>;

/// Options of `loadtest consistent`.
#[derive(Debug, Args)]
pub struct ConsistentArgs {
    /// The kache binary (build it with `cargo build --release`).
    #[arg(long, default_value = "target/release/kache")]
    kache_bin: String,
    /// Pods in the simulated cluster.
    #[arg(long, default_value_t = 50_000)]
    pods: usize,
    /// Writes per second in the loaded conditions.
    #[arg(long, default_value_t = 100.0)]
    rate: f64,
    /// Requests per cell (GETs: ten times as many).
    #[arg(long, default_value_t = 5)]
    requests: usize,
}

/// One workload: a name and how to run one request of it against a base URL.
#[derive(Debug, Clone, Copy)]
enum Workload {
    FullList,
    Page,
    Get,
    StreamingList,
    Paging,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::FullList => "full list",
            Workload::Page => "page of 500",
            Workload::Get => "GET",
            Workload::StreamingList => "streaming list",
            Workload::Paging => "kubectl paging",
        }
    }

    /// Runs one request (for paging: every page); returns how many requests that was.
    async fn run(self, client: &WriteClient, base: &str) -> anyhow::Result<u64> {
        match self {
            Workload::FullList => fetch(client, &format!("{base}/api/v1/pods")).await.map(|_| 1),
            Workload::Page => fetch(client, &format!("{base}/api/v1/pods?limit=500")).await.map(|_| 1),
            Workload::Get => fetch(client, &format!("{base}/api/v1/namespaces/ns-0003/pods/app-00000-0000003")).await.map(|_| 1),
            Workload::StreamingList => {
                let url = format!(
                    "{base}/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=120"
                );
                let resp = client.request(hyper::Request::get(url).body(Full::new(Bytes::new()))?).await?;
                let mut body = resp.into_body();
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
                    let url = if token.is_empty() {
                        format!("{base}/api/v1/pods?limit=500")
                    } else {
                        format!("{base}/api/v1/pods?limit=500&continue={token}")
                    };
                    let body = fetch(client, &url).await?;
                    pages += 1;
                    // As a client reads a page: items stay unparsed slices.
                    let page = ListPage::parse(&body)?;
                    match page.continue_token {
                        Some(next) => token = next,
                        None => return Ok(pages),
                    }
                }
            }
        }
    }
}

async fn fetch(client: &WriteClient, url: &str) -> anyhow::Result<Bytes> {
    let resp = client.request(hyper::Request::get(url).body(Full::new(Bytes::new()))?).await?;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await?.to_bytes();
    if status != 200 {
        bail!("{url}: {status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)]));
    }
    Ok(body)
}

/// The sum of the samples of a counter family for pods in kache's `/metrics`.
async fn pods_counter(client: &WriteClient, kache: &str, name: &str) -> anyhow::Result<u64> {
    let text = fetch(client, &format!("{kache}/metrics")).await?;
    Ok(String::from_utf8_lossy(&text)
        .lines()
        .filter(|l| l.starts_with(name) && (l.contains("resource=\"pods\"") || !l.contains('{')))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum())
}

/// What kache answered from memory: consistent reads proven fresh, and lists served (continue pages).
async fn from_memory(client: &WriteClient, kache: &str) -> anyhow::Result<(u64, u64, u64)> {
    Ok((
        pods_counter(client, kache, "kache_consistent_reads_fresh_total").await?,
        pods_counter(client, kache, "kache_consistent_reads_passed_through_total").await?,
        pods_counter(client, kache, "kache_lists_served_total").await?,
    ))
}

/// Runs every workload under every write load against both targets.
pub async fn run_all(args: ConsistentArgs) -> anyhow::Result<()> {
    let sim = Proc::sim(&args.kache_bin, args.pods, args.pods / 100, &["--configmaps", "1000"])?;
    let kache = Proc::kache(&args.kache_bin, &sim.url, &[])?;
    let http = procs::client();
    procs::ready(&http, &format!("{}/readyz", kache.url), Duration::from_secs(600)).await?;
    let client: WriteClient = Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let conditions: [(&str, Option<Objects>); 3] = [
        ("no writes", None),
        ("pods written", Some(Objects::SimPods { count: args.pods, nodes: args.pods / 100 })),
        ("configmaps written", Some(Objects::SimConfigMaps { count: 1000 })),
    ];
    let writer_http = Http::local(&sim.url, None).await?;
    let workloads = [Workload::FullList, Workload::Page, Workload::Get, Workload::StreamingList, Workload::Paging];
    println!("consistent reads of {} pods; writes at {}/s where written; {} requests per cell\n", args.pods, args.rate, args.requests);
    println!("{:<19} {:<15} {:<6} {:>10} {:>10} {:>11} {:>12}", "load", "workload", "target", "p50", "p99", "cpu ms/req", "from memory");
    for (load, target) in conditions {
        let stop = Instant::now() + Duration::from_secs(3600);
        let writer = target.map(|t| tokio::spawn(objects::write(writer_http.clone(), t, args.rate, stop)));
        // Let the write load settle (kache measures a resource's recent event rate).
        tokio::time::sleep(Duration::from_secs(3)).await;
        for w in workloads {
            let n = if matches!(w, Workload::Get) { args.requests * 10 } else { args.requests };
            let mut p50s = Vec::new();
            for (name, base, pid) in [("kache", &kache.url, kache.pid()), ("sim", &sim.url, sim.pid())] {
                let before = from_memory(&client, &kache.url).await?;
                let cpu = cpu_seconds(pid);
                let mut times = Vec::new();
                let mut requests = 0;
                for _ in 0..n {
                    let t = Instant::now();
                    requests += w.run(&client, base).await.with_context(|| format!("{} via {name}", w.name()))?;
                    times.push(t.elapsed());
                }
                let cpu_ms = (cpu_seconds(pid) - cpu) * 1000.0 / requests.max(1) as f64;
                times.sort();
                let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
                let after = from_memory(&client, &kache.url).await?;
                let memory = match (name, w) {
                    ("sim", _) => "-".to_string(),
                    (_, Workload::Paging) => format!("{}/{requests} pages", after.2 - before.2),
                    _ => format!("{}/{}", after.0 - before.0, (after.0 - before.0) + (after.1 - before.1)),
                };
                println!("{load:<19} {:<15} {name:<6} {:>10.2?} {:>10.2?} {cpu_ms:>11.1} {memory:>12}", w.name(), at(0.5), at(0.99));
                p50s.push(at(0.5));
            }
            println!("{load:<19} {:<15} ratio  sim/kache p50 {:.2}x", w.name(), p50s[1].as_secs_f64() / p50s[0].as_secs_f64().max(1e-9));
        }
        if let Some(w) = writer {
            w.abort();
        }
    }
    Ok(())
}

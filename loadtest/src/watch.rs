//! `loadtest watch`: watch fan-out and latency. A simulated cluster of one
//! node per kubelet-pattern watcher (`fieldSelector=spec.nodeName=node-i`)
//! plus cluster-wide watchers; the tool writes pod updates to the simulator
//! at a set rate and measures, for every watcher that must see a write, the
//! time from the write's acknowledgement to the event's arrival. It knows
//! what each watcher must receive, so it counts missed, duplicated and
//! out-of-order events. Targets: kache in front of the simulator, and the
//! simulator directly, with the same clients in the same run.
//!
//! Bounded: the writes last `--duration` seconds, the drain after them at
//! most 10 s; loopback only; every child process is killed at the end.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Args;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::procs::{self, Proc, cpu_seconds, first_revision, get, memory};
use crate::writes::{self, Target, WriteClient};

/// Options of `loadtest watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The kache binary (build it with `cargo build --release`).
    #[arg(long, default_value = "target/release/kache")]
    kache_bin: String,
    /// Kubelet-pattern watchers, one per node (several counts: a cost curve).
    #[arg(long, value_delimiter = ',', default_value = "10000")]
    watchers: Vec<usize>,
    /// Cluster-wide pod watchers.
    #[arg(long, default_value_t = 100)]
    cluster_watchers: usize,
    /// Pod writes per second (updates of one annotation).
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Seconds of writes.
    #[arg(long, default_value_t = 20)]
    duration: u64,
    /// Pods per node.
    #[arg(long, default_value_t = 5)]
    pods_per_node: usize,
    /// Targets: `kache` (in front of the simulator) and/or `sim` (the simulator directly).
    #[arg(long, value_delimiter = ',', default_value = "kache,sim")]
    targets: Vec<String>,
}

/// What one watcher received: each event's revision and arrival time, and how often it had to resume.
#[derive(Debug, Default)]
struct Received {
    events: Vec<(u64, Instant)>,
    resumes: usize,
}

/// A client with one connection per watch (and pooled connections for writes).
fn client() -> WriteClient {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    Client::builder(TokioExecutor::new()).pool_max_idle_per_host(64).build(http)
}

/// Follows one watch until `stop`, resuming from the last revision when the server ends it.
async fn watcher(client: WriteClient, base: String, selector: String, from: u64, stop: Instant, connected: Arc<AtomicUsize>) -> Received {
    let mut got = Received::default();
    let mut rv = from;
    let mut first = true;
    while Instant::now() < stop {
        let url = format!("{base}/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds=3600{selector}");
        let Ok(req) = hyper::Request::get(url).body(Full::new(Bytes::new())) else { break };
        let resp = match tokio::time::timeout_at(stop.into(), client.request(req)).await {
            Ok(Ok(r)) if r.status() == 200 => r,
            _ => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if first {
            connected.fetch_add(1, Ordering::Relaxed);
            first = false;
        } else {
            got.resumes += 1;
        }
        let mut body = resp.into_body();
        let mut buf = Vec::new();
        loop {
            let frame = match tokio::time::timeout_at(stop.into(), body.frame()).await {
                Ok(Some(Ok(f))) => f,
                Ok(_) => break,
                Err(_) => return got,
            };
            let Ok(data) = frame.into_data() else { continue };
            let now = Instant::now();
            buf.extend_from_slice(&data);
            let mut consumed = 0;
            while let Some(end) = buf[consumed..].iter().position(|b| *b == b'\n') {
                let line = &buf[consumed..consumed + end];
                consumed += end + 1;
                let Some(r) = first_revision(line) else { continue };
                rv = rv.max(r);
                if !line.starts_with(b"{\"type\":\"BOOKMARK\"") {
                    got.events.push((r, now));
                }
            }
            buf.drain(..consumed);
        }
    }
    got
}

/// The figures of one run.
struct Outcome {
    latency: Histogram<u64>,
    expected: u64,
    missed: u64,
    disordered: u64,
    resumes: usize,
    writes: usize,
    /// CPU seconds of the serving process during the writes and drain, and of the simulator.
    cpu: f64,
    sim_cpu: f64,
    rss: (u64, u64),
    upstream_watches: u64,
}

/// Writes to `sim`, watches through `base` (kache, or the simulator itself).
async fn measure(args: &WatchArgs, sim: &Proc, serving: &Proc, nodes: usize) -> anyhow::Result<Outcome> {
    let http = procs::client();
    let client = client();
    let (_, head) = get(&http, &format!("{}/api/v1/namespaces/none/pods?resourceVersion=0", serving.url), false).await?;
    let from = first_revision(&head).context("a revision")?;
    let writes_start = Instant::now() + Duration::from_secs(30);
    let stop = writes_start + Duration::from_secs(args.duration) + Duration::from_secs(10);
    let connected = Arc::new(AtomicUsize::new(0));
    let selectors =
        (0..nodes).map(|n| format!("&fieldSelector=spec.nodeName%3Dnode-{n:04}")).chain((0..args.cluster_watchers).map(|_| String::new()));
    let watchers: Vec<_> =
        selectors.map(|sel| tokio::spawn(watcher(client.clone(), serving.url.clone(), sel, from, stop, connected.clone()))).collect();
    let total = watchers.len();
    while connected.load(Ordering::Relaxed) < total {
        if Instant::now() > writes_start {
            bail!("only {} of {total} watchers connected in 30 s", connected.load(Ordering::Relaxed));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep_until(writes_start.into()).await;
    let (cpu0, sim_cpu0) = (cpu_seconds(serving.pid()), cpu_seconds(sim.pid()));
    let pods = nodes * args.pods_per_node;
    let writers = 8;
    let write_stop = writes_start + Duration::from_secs(args.duration);
    let tasks: Vec<_> = (0..writers)
        .map(|_| {
            tokio::spawn(writes::write(
                client.clone(),
                sim.url.clone(),
                Target::Pods { count: pods },
                args.rate / writers as f64,
                write_stop,
            ))
        })
        .collect();
    let mut writes = Vec::new();
    for t in tasks {
        writes.extend(t.await?);
    }
    let mut received = Vec::new();
    for w in watchers {
        received.push(w.await?);
    }
    let cpu = cpu_seconds(serving.pid()) - cpu0;
    let sim_cpu = cpu_seconds(sim.pid()) - sim_cpu0;
    let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let (mut expected, mut missed, mut disordered, mut resumes) = (0, 0, 0, 0);
    let arrivals: Vec<HashMap<u64, Instant>> = received
        .iter()
        .map(|r| {
            disordered += r.events.windows(2).filter(|w| w[1].0 <= w[0].0).count() as u64;
            r.events.iter().copied().collect()
        })
        .collect();
    for r in &received {
        resumes += r.resumes;
    }
    for w in &writes {
        // Pod i runs on node i % nodes (the simulator's generator).
        for watcher in std::iter::once(w.index % nodes).chain(nodes..total) {
            expected += 1;
            match arrivals[watcher].get(&w.rv) {
                Some(at) => latency.record(at.saturating_duration_since(w.acked).as_micros().max(1) as u64)?,
                None => missed += 1,
            }
        }
    }
    let stats = get(&http, &format!("{}/_sim/stats", sim.url), false).await?.1;
    let stats: serde_json::Value = serde_json::from_slice(&stats)?;
    let upstream_watches = stats["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["resource"] == "pods" && r["verb"] == "watch")
        .and_then(|r| r["count"].as_u64())
        .unwrap_or(0);
    Ok(Outcome {
        latency,
        expected,
        missed,
        disordered,
        resumes,
        writes: writes.len(),
        cpu,
        sim_cpu,
        rss: memory(serving.pid()),
        upstream_watches,
    })
}

/// Runs every watcher count against every target.
pub async fn run_all(args: WatchArgs) -> anyhow::Result<()> {
    println!(
        "watch fan-out: kubelet-pattern watchers (one per node, {} pods each) + {} cluster-wide, {} pod writes/s for {} s\n",
        args.pods_per_node, args.cluster_watchers, args.rate, args.duration
    );
    println!(
        "{:<7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>6} {:>8} {:>9} {:>11} {:>9} {:>8}",
        "target",
        "watchers",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
        "missed",
        "disord",
        "resumes",
        "cpu s",
        "cpu µs/evt",
        "rss MB",
        "up.watch"
    );
    for &nodes in &args.watchers {
        for target in &args.targets {
            let sim = Proc::sim(&args.kache_bin, nodes * args.pods_per_node, nodes, &["--namespaces", "10"])?;
            let kache;
            let serving = match target.as_str() {
                "sim" => &sim,
                "kache" => {
                    kache = Proc::kache(&args.kache_bin, &sim.url, &[])?;
                    procs::ready(&procs::client(), &format!("{}/readyz", kache.url), Duration::from_secs(300)).await?;
                    &kache
                }
                other => bail!("unknown target {other:?} (kache or sim)"),
            };
            let o = measure(&args, &sim, serving, nodes).await?;
            let ms = |q: f64| format!("{:.2}ms", o.latency.value_at_quantile(q) as f64 / 1000.0);
            let delivered = (o.expected - o.missed).max(1);
            println!(
                "{target:<7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>6} {:>8} {:>9.2} {:>11.1} {:>9.0} {:>8}",
                nodes + args.cluster_watchers,
                ms(0.5),
                ms(0.9),
                ms(0.99),
                ms(0.999),
                format!("{:.2}ms", o.latency.max() as f64 / 1000.0),
                o.missed,
                o.disordered,
                o.resumes,
                o.cpu,
                o.cpu * 1e6 / delivered as f64,
                o.rss.0 as f64 / 1e6,
                o.upstream_watches
            );
            println!(
                "        writes {} ({:.0}/s), deliveries expected {}, simulator cpu {:.2} s, {} peak rss {:.0} MB",
                o.writes,
                o.writes as f64 / args.duration as f64,
                o.expected,
                o.sim_cpu,
                target,
                o.rss.1 as f64 / 1e6
            );
        }
    }
    Ok(())
}

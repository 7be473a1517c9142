//! `loadtest lists`: list workloads against kache, the simulator, and a
//! plain server that answers with the same bytes from memory (the floor any
//! server pays), in one run: requests/s, latency, CPU per request.

use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use clap::Args;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::procs::{self, HttpClient, Proc, cpu_seconds, get};

/// Options of `loadtest lists`.
#[derive(Debug, Args)]
pub struct ListsArgs {
    /// The kache binary (build it with `cargo build --release`).
    #[arg(long, default_value = "target/release/kache")]
    kache_bin: String,
    /// Pods in the simulated cluster.
    #[arg(long, default_value_t = 100_000)]
    pods: usize,
    /// Nodes they run on (100 pods a node by default).
    #[arg(long)]
    nodes: Option<usize>,
    /// Requests per workload and target.
    #[arg(long, default_value_t = 20)]
    requests: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 2)]
    concurrency: usize,
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
    let samples =
        procs::drive(client, url, n, concurrency, move |_| if gzip { vec![("accept-encoding", "gzip".to_string())] } else { vec![] })
            .await?;
    Ok(Outcome {
        rps: samples.rps(),
        p50: samples.quantile(0.5),
        p99: samples.quantile(0.99),
        bytes: samples.bytes,
        cpu_ms_per_req: pid.zip(cpu0).map(|(p, c0)| (cpu_seconds(p) - c0) * 1000.0 / samples.latencies.len().max(1) as f64),
    })
}

/// Runs every list workload against the three targets.
pub async fn run_all(args: ListsArgs) -> anyhow::Result<()> {
    let nodes = args.nodes.unwrap_or(args.pods / 100).max(1);
    let sim = Proc::sim(&args.kache_bin, args.pods, nodes, &[])?;
    let kache = Proc::kache(&args.kache_bin, &sim.url, &[])?;
    let client = procs::client();
    procs::ready(&client, &format!("{}/readyz", kache.url), Duration::from_secs(600)).await?;
    let (_, head) = get(&client, &format!("{}/api/v1/namespaces/none/pods?resourceVersion=0", kache.url), false).await?;
    let rv = serde_json::from_slice::<serde_json::Value>(&head)?["metadata"]["resourceVersion"].as_str().context("a revision")?.to_string();
    let workloads = [
        ("full list", format!("/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact"), false),
        ("full list, gzip", format!("/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact"), true),
        ("page of 500", format!("/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact&limit=500"), false),
        // A kubelet's pods, and one deployment's: the indexed selectors.
        (
            "node's pods",
            format!("/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact&fieldSelector=spec.nodeName%3Dnode-0007"),
            false,
        ),
        ("label app=X", format!("/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact&labelSelector=app%3Dapp-77"), false),
    ];
    println!("{} pods on {nodes} nodes, {} requests per cell, {} in flight\n", args.pods, args.requests, args.concurrency);
    println!("{:<16} {:<8} {:>9} {:>10} {:>10} {:>11} {:>12}", "workload", "target", "req/s", "p50", "p99", "bytes", "cpu ms/req");
    for (name, path, gzip) in workloads {
        let (_, oracle) = get(&client, &format!("{}{path}", sim.url), gzip).await?;
        let (plain_url, plain) = plain_server(oracle, gzip).await?;
        let mut rates = Vec::new();
        for (target, base, pid) in
            [("kache", &kache.url, Some(kache.pid())), ("sim", &sim.url, Some(sim.pid())), ("plain", &plain_url, None)]
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

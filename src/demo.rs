//! `kache demo`: a simulated cluster (pods on 100 nodes, configmaps, churn)
//! and kache in front of it, with kubectl commands to try. The simulator is
//! linked into the `kache` binary only (the `sim` feature), never into the
//! library.
//!
//! Memory, one process for both: kache's stores (the objects and a
//! `--max-age` 5-minute event log, `kache_store_*_bytes`), the simulator's
//! store (every object, and each version history still holds) and the
//! allocator's slack around both. The simulator compacts every five
//! minutes, as the apiserver does (a quiet resource's revision, which
//! kache's heartbeat and the bookmark after it move every two minutes or
//! so, stays ahead of compaction: no re-list), so both are bounded by
//! minutes of changes and RSS levels off once kache's window is full.

use std::time::Duration;

use clap::{Args, Parser};
use kache::serve::{self, ServeArgs};

/// Options of `kache demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Address kache listens on.
    #[arg(long, default_value = "127.0.0.1:8001")]
    pub listen: String,
    /// Pods in the simulated cluster.
    #[arg(long, default_value_t = 10_000)]
    pub pods: usize,
    /// Changes per second in the simulated cluster.
    #[arg(long, default_value_t = 20.0)]
    pub churn: f64,
    /// Seconds kache answers a resource from memory after the simulator last answered for it (as `kache serve`).
    #[arg(long, default_value_t = 300)]
    pub max_staleness: u64,
}

/// Flags parsed as their command would parse them, so the demo inherits every default.
#[derive(Debug, Parser)]
struct Flags<T: Args> {
    #[command(flatten)]
    args: T,
}

fn flags<T: Args>(argv: &[&str]) -> anyhow::Result<T> {
    Ok(Flags::<T>::try_parse_from(std::iter::once("kache").chain(argv.iter().copied()))?.args)
}

/// Runs the demo until SIGINT or SIGTERM.
pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let (pods, configmaps, churn) = (args.pods.to_string(), (args.pods / 10).to_string(), args.churn.to_string());
    let sim_args: sim::cli::SimArgs = flags(&[
        "--listen",
        "127.0.0.1:0",
        "--pods",
        &pods,
        "--nodes",
        "100",
        "--namespaces",
        "10",
        "--configmaps",
        &configmaps,
        "--churn",
        &churn,
        "--compact-interval",
        "300",
    ])?;
    let sim = sim::cli::start(&sim_args).await.map_err(anyhow::Error::msg)?;
    let url = sim.url();
    let staleness = args.max_staleness.to_string();
    let serve_args: ServeArgs = flags(&[
        "--listen",
        &args.listen,
        "--server",
        &url,
        "--resources",
        "pods,configmaps,nodes,namespaces",
        "--shutdown-drain",
        "5",
        "--max-staleness",
        &staleness,
    ])?;
    let running = serve::start(&serve_args, |_| {}).await?;
    while !running.api.cache.ready() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let k = &running.url;
    // kubectl's own work (decoding, printing, client-side throttling) takes
    // the same seconds whichever server answers `get pods -A`; a bare
    // client's time shows kache's part: one node's pods from an index
    // against the simulator's scan (figures: docs/performance.md).
    let node = "/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3Dnode-0001";
    kache::logs::say(&format!(
        "kache: serving on {k} in front of a simulated cluster at {url} ({} pods, {} changes/s)\n\
         time one node's pods (what a kubelet lists) from kache's index, then from the simulator, which scans every pod:\n  \
         curl -s -o /dev/null -w '%{{time_total}}s\\n' '{k}{node}'\n  \
         curl -s -o /dev/null -w '%{{time_total}}s\\n' '{url}{node}'\n\
         try:\n  kubectl --server {k} get pods -A --chunk-size=500\n  kubectl --server {k} get --raw '/api/v1/pods?resourceVersion=0' | head -c 300\n  \
         kubectl --server {k} get --raw '/api/v1/namespaces/ns-0001/pods?limit=5'\n  kubectl --server {k} get configmaps -n ns-0002\n  \
         kubectl --server {k} get pods -A -l tier=web\n  kubectl --server {k} get pods -A --field-selector spec.nodeName=node-0001\n  \
         kubectl --server {k} get pods -n ns-0001 -w\n\
         what came from memory and what passed through, and why:\n  \
         curl -s {k}/metrics | grep '^kache_requests_total'\n\
         whether every resource is ready:\n  \
         curl -s '{k}/readyz?verbose'",
        args.pods, args.churn
    ));
    serve::terminated().await?;
    tracing::info!("shutting down: no new connections; draining open requests");
    running.shutdown().await;
    drop(sim);
    Ok(())
}

//! `loadtest watch`: watch fan-out and latency. Kubelet-pattern watchers
//! (one per node, `fieldSelector=spec.nodeName=NODE`; on a real cluster
//! the nodes and pods are the tool's own) plus cluster-wide ones; the tool
//! writes at a set rate and measures, for every watcher that must see a
//! write, the time from the write's acknowledgement to the event's arrival.
//! It knows what each watcher must receive, so it counts missed, duplicated
//! and out-of-order events. Every target in one run: kache and the direct
//! target, with the same clients.
//!
//! Bounded: watchers start until all have (failing when none has for a
//! minute); writes last `--duration` seconds; the drain after them ends
//! when every expected event has arrived or after 10 s.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use indicatif::ProgressBar;
use serde_json::json;

use crate::cleanup::Cleanup;
use crate::follow::{self, Signals, Start};
use crate::objects::{self, NAMESPACES, Objects};
use crate::procs::first_revision;
use crate::progress::note;
use crate::record::{Row, Usage};
use crate::report::Report;
use crate::target::{Fleet, Target, TargetArgs};

/// Options of `loadtest watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Kubelet-pattern watchers, one per node (on a real cluster: per shard).
    #[arg(long, default_value_t = 10_000)]
    pub watchers: usize,
    /// Cluster-wide watchers (on a real cluster: namespace-wide).
    #[arg(long, default_value_t = 100)]
    pub cluster_watchers: usize,
    /// Writes per second (merge patches of one annotation).
    #[arg(long, default_value_t = 1000.0)]
    pub rate: f64,
    /// Seconds of writes.
    #[arg(long, default_value_t = 20)]
    pub duration: u64,
    /// Objects per node (per shard).
    #[arg(long, default_value_t = 5)]
    pub pods_per_node: usize,
}

/// How long after the writes the watchers may take to receive them.
const DRAIN: Duration = Duration::from_secs(10);

/// What a watch scenario runs on, and for how many clients.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Nodes (kubelets).
    pub nodes: usize,
    /// Pods a node.
    pub pods_per_node: usize,
    /// Secrets and configmaps a node's pods mount ([`crate::objects::Mounts`]).
    pub mounts: usize,
    /// Clients at once.
    pub clients: usize,
    /// Whether clients multiplex over h2c to plain-HTTP targets ([`Fleet::multiplexed`]).
    pub h2c: bool,
}

/// Starts the targets and makes the objects of a watch scenario: the
/// simulator's pods, or the tool's pods on its nodes on a real cluster
/// (recorded in `cleanup`), and the secrets and configmaps they mount.
pub async fn setup(targets: &TargetArgs, shape: Shape, cleanup: &Cleanup, bar: &ProgressBar) -> anyhow::Result<(Fleet, Objects)> {
    let (nodes, mounts) = (shape.nodes.max(1), shape.mounts);
    let count = nodes * shape.pods_per_node.max(1);
    let (fleet, objects) = if targets.real() {
        let run = format!("kache-loadtest-{}", std::process::id());
        (Fleet::start(targets, &[], &[]).await?, Objects::OwnPods { run, count, nodes, mounts })
    } else {
        let sim_args =
            ["--pods", &count.to_string(), "--nodes", &nodes.to_string(), "--namespaces", &NAMESPACES.to_string()].map(String::from);
        let cached: &[&str] = if mounts > 0 { &["--resources", "pods,secrets,configmaps"] } else { &[] };
        (Fleet::start(targets, &sim_args, cached).await?, Objects::SimPods { count, nodes, mounts })
    };
    let fleet = if shape.h2c { fleet.multiplexed()? } else { fleet };
    fleet.check_open_files(shape.clients)?;
    if objects.made() > 0 {
        let direct = fleet.direct();
        note(bar, format!("creating {} on {}", objects.describe(), direct.name));
        let begun = Instant::now();
        objects.create(direct, cleanup, bar).await.context("creating the run's objects")?;
        note(bar, format!("created {} objects in {:.1?}", objects.made(), begun.elapsed()));
    }
    Ok((fleet, objects))
}

/// The newest revision of `objects` as `target` lists it.
pub async fn head(target: &Target, objects: &Objects) -> anyhow::Result<u64> {
    let (status, body) = target.http.get(&format!("{}?limit=1", objects.collection()), &[]).await?;
    first_revision(&body).filter(|_| status == 200).with_context(|| format!("{}: no list revision (status {status})", target.name))
}

/// The upstream watches of pods the simulator has served (what kache saves it).
pub async fn upstream_watches(fleet: &Fleet) -> Option<f64> {
    fleet.sim_url.as_ref()?;
    let (_, body) = fleet.direct().http.get("/_sim/stats", &[]).await.ok()?;
    let stats: serde_json::Value = serde_json::from_slice(&body).ok()?;
    stats["requests"].as_array()?.iter().find(|r| r["resource"] == "pods" && r["verb"] == "watch").and_then(|r| r["count"].as_f64())
}

/// Runs the watchers against `target` while writing to the direct target.
async fn measure(args: &WatchArgs, fleet: &Fleet, target: &Target, objects: &Objects, bar: &ProgressBar) -> anyhow::Result<Row> {
    let from = head(target, objects).await?;
    let epoch = Instant::now();
    let (signals, stop_tx, _storm_tx) = Signals::new();
    let shards = args.watchers.min(objects.shards());
    let selectors = (0..shards).map(|s| objects.shard_selector(s)).chain((0..args.cluster_watchers).map(|_| String::new()));
    let followers: Vec<_> = selectors
        .map(|sel| tokio::spawn(follow::follow(target.http.clone(), objects.collection(), sel, Start::At(from), signals.clone(), epoch)))
        .collect();
    let total = followers.len();
    signals.all_started(total, &target.name, bar).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    signals.floor.store(head(fleet.direct(), objects).await?, Ordering::Relaxed);
    let usage = Usage::start(target);
    let started = Instant::now();
    let writes = objects::write_all(&fleet.direct().http, objects, args.rate, 8, started + Duration::from_secs(args.duration)).await?;
    let concerned = |w: &objects::Write| {
        let shard = objects.shard_of(w.index);
        (shard < shards).then_some(shard).into_iter().chain(shards..total).collect::<Vec<_>>()
    };
    let expected: u64 = writes.iter().map(|w| concerned(w).len() as u64).sum();
    let drained = Instant::now() + DRAIN;
    while signals.events.load(Ordering::Relaxed) < expected && Instant::now() < drained {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let wall = started.elapsed();
    let usage = usage.finish(target);
    let _ = stop_tx.send(true);
    let mut followed = Vec::with_capacity(total);
    for f in followers {
        followed.push(f.await?);
    }
    let t = follow::tally(&writes, &followed, concerned, epoch);
    let mut row = Row::new(&format!("{total} watchers"), target, t.deliveries, wall, usage);
    row.extra = vec![
        ("writes", writes.len() as f64),
        ("writes/s", (writes.len() as f64 / args.duration.max(1) as f64).round()),
        ("expected", t.expected as f64),
        ("missed", t.missed as f64),
        ("duplicated", t.duplicated as f64),
        ("reordered", t.reordered as f64),
        ("resumes", t.resumes as f64),
    ];
    Ok(row)
}

/// Runs the watchers against every target; what it creates is recorded in `cleanup`.
pub async fn run_all(args: WatchArgs, cleanup: Cleanup) -> anyhow::Result<()> {
    let bar = crate::progress::bar("watch", 0);
    let clients = args.watchers + args.cluster_watchers;
    let shape = Shape { nodes: args.watchers, pods_per_node: args.pods_per_node, mounts: 0, clients, h2c: false };
    let (fleet, objects) = setup(&args.targets, shape, &cleanup, &bar).await?;
    bar.set_length(fleet.targets.len() as u64);
    let mut rows = Vec::new();
    for target in &fleet.targets {
        bar.set_message(format!("{clients} watchers on {}", target.name));
        let before = upstream_watches(&fleet).await;
        let mut row = measure(&args, &fleet, target, &objects, &bar).await;
        if let (Ok(row), Some(before), Some(after)) = (&mut row, before, upstream_watches(&fleet).await) {
            row.extra.push(("upstream watches", after - before));
        }
        rows.push(row.with_context(|| format!("measuring {}", target.name))?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let params = json!({
        "watchers": args.watchers, "cluster_watchers": args.cluster_watchers, "rate": args.rate,
        "duration_s": args.duration, "objects": objects.count(), "collection": objects.collection(),
    });
    Report { scenario: "watch", params, rows, sides: Vec::new() }.emit(&args.targets)
}

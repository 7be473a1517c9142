//! `loadtest mixed`: a large cluster's clients together, against each
//! target in turn, while the tool writes at a set rate:
//!
//! - kubelets: list their node's pods at `resourceVersion=0`, then watch
//!   them (`fieldSelector=spec.nodeName=node-i`);
//! - controllers: informers starting with a streaming list
//!   (`sendInitialEvents=true`), then watching every pod;
//! - kubectl users: walking all pods in pages of 500 from the most recent
//!   revision, again and again;
//! - halfway through, a relist storm: every kubelet and controller drops
//!   its watch and lists again at once, as after an apiserver restart.
//!
//! Reported per client kind: watch delivery latency (write acknowledged →
//! event received) with missed, duplicated and out-of-order counts (a write
//! a list covered counts as seen), list and informer-sync latency, and
//! kubectl page latency; CPU and peak RSS of the serving process over the
//! whole run.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use indicatif::ProgressBar;
use serde_json::json;

use crate::cleanup::Cleanup;
use crate::follow::{self, Followed, Signals, Start, Tally};
use crate::lists::{Encoding, continue_token};
use crate::objects::{self, Objects, Write};
use crate::record::{Recorder, Row, Usage};
use crate::report::Report;
use crate::target::{Fleet, Http, Role, Target, TargetArgs};
use crate::watch::{head, setup};

/// Options of `loadtest mixed`.
#[derive(Debug, Args)]
pub struct MixedArgs {
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Kubelets (one per node).
    #[arg(long, default_value_t = 1000)]
    pub kubelets: usize,
    /// Pods per node.
    #[arg(long, default_value_t = 30)]
    pub pods_per_node: usize,
    /// Controllers' informers on every pod.
    #[arg(long, default_value_t = 10)]
    pub controllers: usize,
    /// kubectl users walking every pod in pages.
    #[arg(long, default_value_t = 2)]
    pub kubectl: usize,
    /// Pod writes per second.
    #[arg(long, default_value_t = 200.0)]
    pub rate: f64,
    /// Seconds of writes; the relist storm comes halfway.
    #[arg(long, default_value_t = 30)]
    pub duration: u64,
}

/// kubectl's walks: pages of 500 from the most recent revision, until `stop`.
async fn kubectl(http: Http, collection: String, stop: Instant, epoch: Instant) -> Recorder {
    let mut rec = Recorder::new(epoch);
    let mut token: Option<String> = None;
    while Instant::now() < stop {
        let path = match &token {
            Some(t) => format!("{collection}?limit=500&continue={t}"),
            None => format!("{collection}?limit=500"),
        };
        let t = Instant::now();
        let (status, body) = http.get(&path, &[]).await.unwrap_or((0, Default::default()));
        rec.record(t.elapsed(), status, body.len());
        token = if status == 200 { continue_token(&body, Encoding::Json) } else { None };
    }
    rec
}

/// Rows for one kind of watcher.
fn watch_rows(kind: &str, t: Tally, target: &Target, wall: Duration, usage: (Option<f64>, Option<u64>), lists: &str) -> [Row; 2] {
    let mut watch = Row::new(&format!("{kind} events"), target, t.deliveries, wall, usage);
    watch.extra = vec![
        ("expected", t.expected as f64),
        ("missed", t.missed as f64),
        ("covered by lists", t.covered as f64),
        ("duplicated", t.duplicated as f64),
        ("reordered", t.reordered as f64),
        ("resumes", t.resumes as f64),
    ];
    [watch, Row::new(&format!("{kind} {lists}"), target, t.lists, wall, usage)]
}

/// Runs every client kind against `target` while writing to the direct target.
async fn measure(args: &MixedArgs, fleet: &Fleet, target: &Target, objects: &Objects, bar: &ProgressBar) -> anyhow::Result<Vec<Row>> {
    head(target, objects).await?;
    let epoch = Instant::now();
    let usage = Usage::start(target);
    let (signals, stop_tx, storm_tx) = Signals::new();
    let kubelets = args.kubelets.min(objects.shards());
    let clients = (0..kubelets)
        .map(|s| (objects.shard_selector(s), Start::List))
        .chain((0..args.controllers).map(|_| (String::new(), Start::Streaming)));
    let followers: Vec<_> = clients
        .map(|(sel, start)| tokio::spawn(follow::follow(target.http.clone(), objects.collection(), sel, start, signals.clone(), epoch)))
        .collect();
    let total = followers.len();
    signals.all_started(total, &target.name, bar).await?;
    signals.floor.store(head(fleet.direct(), objects).await?, Ordering::Relaxed);
    let started = Instant::now();
    let write_stop = started + Duration::from_secs(args.duration);
    let users: Vec<_> =
        (0..args.kubectl).map(|_| tokio::spawn(kubectl(target.http.clone(), objects.collection(), write_stop, epoch))).collect();
    let storm_at = started + Duration::from_secs(args.duration) / 2;
    let storm_task = tokio::spawn(async move {
        tokio::time::sleep_until(storm_at.into()).await;
        let _ = storm_tx.send(1);
        storm_tx
    });
    let writes = objects::write_all(&fleet.direct().http, objects, args.rate, 4, write_stop).await?;
    // Drain: until no event has come for a second, at most 10 s.
    let drained = Instant::now() + Duration::from_secs(10);
    let mut last = signals.events.load(Ordering::Relaxed);
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = signals.events.load(Ordering::Relaxed);
        if now == last || Instant::now() > drained {
            break;
        }
        last = now;
    }
    let wall = started.elapsed();
    let usage = usage.finish(target);
    let _ = stop_tx.send(true);
    let _storm_tx = storm_task.await?;
    let mut followed: Vec<Followed> = Vec::with_capacity(total);
    for f in followers {
        followed.push(f.await?);
    }
    let mut pages = Recorder::new(epoch);
    for u in users {
        pages.merge(&u.await?);
    }
    let controllers = followed.split_off(kubelets);
    let kubelet_of = |w: &Write| {
        let s = objects.shard_of(w.index);
        (s < kubelets).then_some(s).into_iter().collect::<Vec<_>>()
    };
    let every = |_: &Write| (0..controllers.len()).collect::<Vec<_>>();
    let mut rows = Vec::new();
    rows.extend(watch_rows("kubelet", follow::tally(&writes, &followed, kubelet_of, epoch), target, wall, usage, "lists"));
    rows.extend(watch_rows("informer", follow::tally(&writes, &controllers, every, epoch), target, wall, usage, "syncs"));
    let mut kubectl = Row::new("kubectl pages", target, pages, wall, usage);
    kubectl.extra = vec![("writes", writes.len() as f64)];
    rows.push(kubectl);
    Ok(rows)
}

/// Runs the mixed clients against every target; what it creates is recorded in `cleanup`.
pub async fn run_all(args: MixedArgs, cleanup: Cleanup) -> anyhow::Result<()> {
    let bar = crate::progress::bar("mixed", 0);
    let clients = args.kubelets + args.controllers + args.kubectl;
    let (fleet, objects) = setup(&args.targets, args.kubelets, args.pods_per_node, clients, &cleanup, &bar).await?;
    bar.set_length(fleet.targets.len() as u64);
    let mut rows = Vec::new();
    for target in &fleet.targets {
        bar.set_message(format!(
            "{} kubelets, {} controllers, {} kubectl on {}",
            args.kubelets, args.controllers, args.kubectl, target.name
        ));
        rows.extend(measure(&args, &fleet, target, &objects, &bar).await.with_context(|| format!("measuring {}", target.name))?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    // Group by client kind, the direct target first.
    rows.sort_by_key(|r| (r.workload.clone(), r.role != Role::Direct));
    let params = json!({
        "kubelets": args.kubelets, "controllers": args.controllers, "kubectl": args.kubectl, "rate": args.rate,
        "duration_s": args.duration, "objects": objects.count(), "collection": objects.collection(),
        "relist_storm_at_s": args.duration as f64 / 2.0,
    });
    Report { scenario: "mixed", params, rows }.emit(&args.targets)
}

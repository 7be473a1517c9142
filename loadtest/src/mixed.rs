//! `loadtest mixed`: a large cluster's clients together, against each
//! target in turn, while the tool writes at a set rate:
//!
//! - kubelets: list their node's pods at `resourceVersion=0`, then watch
//!   them (`fieldSelector=spec.nodeName=NODE`); and list then watch each
//!   secret and configmap their pods mount, one watch each
//!   (`fieldSelector=metadata.name=NAME` in the pods' namespace), as the
//!   kubelet's watch-based manager does ([`crate::objects::Mounts`]);
//! - controllers: informers starting with a streaming list
//!   (`sendInitialEvents=true`), then watching every pod;
//! - kubectl users: walking all pods in pages of 500 from the most recent
//!   revision, again and again;
//! - writes: merge patches of pods and, one in ten, of mounted secrets and
//!   configmaps;
//! - halfway through, with `--restart-command`, the apiserver restarts
//!   ([`crate::restart`]): directly, every client's watch ends and every
//!   client lists again; through kache, kache answers on. Without it, a
//!   relist storm: every kubelet and controller drops its watches and lists
//!   again at once, as after an apiserver restart.
//!
//! Every client speaks HTTP/2 (h2c to a plain-HTTP target): 20,000 watches
//! on 200 connections, not 20,000.
//!
//! Reported per client kind: watch delivery latency (write acknowledged →
//! event received) with missed, duplicated and out-of-order counts (a write
//! a list covered counts as seen; one after the revision a client had
//! reached when the run stopped it mid-list, as not yet synced), list and
//! informer-sync latency, and
//! kubectl page latency, with the serving process's CPU and peak RSS over
//! the side; and per side (direct, kache): the apiserver's CPU seconds and
//! peak RSS (the simulator's from `/proc`, kube-apiserver's from its
//! `/metrics`), kache's, and what the restart did ([`crate::vitals`]).

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
use crate::record::{Recorder, Row};
use crate::report::{Figures, Report};
use crate::restart::{self, Restart};
use crate::target::{Fleet, Http, REQUEST_TIMEOUT, Role, Target, TargetArgs};
use crate::vitals::Vitals;
use crate::watch::{Shape, head, setup};

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
    /// Secrets and configmaps each node's pods mount, each watched by name by its kubelet.
    #[arg(long, default_value_t = 3)]
    pub mounts_per_node: usize,
    /// Controllers' informers on every pod.
    #[arg(long, default_value_t = 10)]
    pub controllers: usize,
    /// kubectl users walking every pod in pages.
    #[arg(long, default_value_t = 2)]
    pub kubectl: usize,
    /// Writes per second.
    #[arg(long, default_value_t = 200.0)]
    pub rate: f64,
    /// Seconds of writes; the relist storm (or the restart) comes halfway,
    /// and with a restart writes go on until the restart window ends.
    #[arg(long, default_value_t = 30)]
    pub duration: u64,
    /// Halfway through, instead of a relist storm, run this command (`sh
    /// -c`), which restarts kube-apiserver and returns once it is ready,
    /// e.g. `../shared/realapi/restart-apiserver.sh`.
    #[arg(long, value_name = "CMD", requires = "kubeconfig")]
    pub restart_command: Option<String>,
    /// Seconds after the restart begins in which its effects (watches
    /// ended, re-lists, the apiserver's CPU) are counted.
    #[arg(long, value_name = "SECONDS", default_value_t = restart::WINDOW_SECONDS, requires = "restart_command")]
    pub restart_window: u64,
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
        let page = tokio::time::timeout(REQUEST_TIMEOUT, http.get(&path, &[])).await;
        let (status, body) = page.ok().and_then(Result::ok).unwrap_or_default();
        rec.record(t.elapsed(), status, body.len());
        token = if status == 200 { continue_token(&body, Encoding::Json) } else { None };
        if status != 200 {
            // As kubectl would be run again by its user: not at once.
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    rec
}

/// Rows for one kind of watcher.
fn watch_rows(kind: &str, t: Tally, target: &Target, wall: Duration, usage: (Option<f64>, Option<u64>), lists: &str) -> [Row; 2] {
    let mut watch = Row::new(&format!("{kind} events"), target, t.deliveries, wall, usage);
    watch.extra = vec![
        ("expected", t.expected as f64),
        ("missed", t.missed as f64),
        ("not yet synced", t.unsynced as f64),
        ("covered by lists", t.covered as f64),
        ("duplicated", t.duplicated as f64),
        ("reordered", t.reordered as f64),
        ("resumes", t.resumes as f64),
    ];
    [watch, Row::new(&format!("{kind} {lists}"), target, t.lists, wall, usage)]
}

/// The apiserver's and kache's samples over the whole run.
struct Meters {
    apiserver: Option<Vitals>,
    kache: Option<Vitals>,
}

impl Meters {
    /// Samples both now; the instant to window on.
    async fn mark(&self) -> Instant {
        let at = Instant::now();
        for v in [&self.apiserver, &self.kache].into_iter().flatten() {
            v.mark().await;
        }
        at
    }
}

/// After the writes stop, the run waits until no event has come for this long...
const DRAIN_QUIET: Duration = Duration::from_secs(5);

/// ...or this long at most (a kache re-listing 150,000 pods after an
/// apiserver restart holds its watchers' events back for a minute or more).
const DRAIN_MOST: Duration = Duration::from_secs(180);

/// One side's rows and figures.
type Side = (Vec<Row>, Figures);

/// Runs every client kind against `target` while writing to the direct target.
async fn measure(
    args: &MixedArgs,
    fleet: &Fleet,
    target: &Target,
    objects: &Objects,
    meters: &Meters,
    bar: &ProgressBar,
) -> anyhow::Result<Side> {
    head(target, objects).await?;
    let epoch = Instant::now();
    let from = meters.mark().await;
    let (signals, stop_tx, storm_tx) = Signals::new();
    let kubelets = args.kubelets.min(objects.shards());
    let mounts = objects.mounts();
    // In order: each kubelet's pod watch, each kubelet's mounts (node n's j-th at n × per_node + j), the informers.
    let pods = (0..kubelets).map(|n| (objects.collection(), objects.shard_selector(n), Start::List));
    let mounted = (0..kubelets).flat_map(|n| (0..mounts.per_node).map(move |j| mounts.of(n, j))).map(|m| {
        let (collection, selector) = objects.mount_watch(m);
        (collection, selector, Start::List)
    });
    let informers = (0..args.controllers).map(|_| (objects.collection(), String::new(), Start::Streaming));
    let followers: Vec<_> = pods
        .chain(mounted)
        .chain(informers)
        .map(|(collection, sel, start)| tokio::spawn(follow::follow(target.http.clone(), collection, sel, start, signals.clone(), epoch)))
        .collect();
    let total = followers.len();
    signals.all_started(total, &target.name, bar).await?;
    signals.floor.store(head(fleet.direct(), objects).await?, Ordering::Relaxed);
    let started = Instant::now();
    let halfway = started + Duration::from_secs(args.duration) / 2;
    let mut write_stop = started + Duration::from_secs(args.duration);
    if args.restart_command.is_some() {
        write_stop = write_stop.max(halfway + Duration::from_secs(args.restart_window));
    }
    let users: Vec<_> =
        (0..args.kubectl).map(|_| tokio::spawn(kubectl(target.http.clone(), objects.collection(), write_stop, epoch))).collect();
    let turn = async {
        tokio::time::sleep_until(halfway.into()).await;
        match &args.restart_command {
            Some(command) => {
                restart::restart(command, Duration::from_secs(args.restart_window), meters.apiserver.as_ref(), bar).await.map(Some)
            }
            None => {
                let _ = storm_tx.send(1);
                Ok(None)
            }
        }
    };
    let (writes, restarted) = tokio::join!(objects::write_all(&fleet.direct().http, objects, args.rate, 4, write_stop), turn);
    let (writes, restarted): (Vec<Write>, Option<Restart>) = (writes?, restarted?);
    // Drain: until no event has come for DRAIN_QUIET, at most DRAIN_MOST:
    // events held back (behind a re-list after a restart) arrive late, and
    // only what never comes counts as missed.
    let drained = Instant::now() + DRAIN_MOST;
    let mut last = signals.events.load(Ordering::Relaxed);
    loop {
        tokio::time::sleep(DRAIN_QUIET).await;
        let now = signals.events.load(Ordering::Relaxed);
        if now == last || Instant::now() > drained {
            break;
        }
        last = now;
    }
    let wall = started.elapsed();
    let to = meters.mark().await;
    let _ = stop_tx.send(true);
    let mut followed: Vec<Followed> = Vec::with_capacity(total);
    for f in followers {
        followed.push(f.await?);
    }
    let mut pages = Recorder::new(epoch);
    for u in users {
        pages.merge(&u.await?);
    }
    let controllers = followed.split_off(kubelets * (1 + mounts.per_node));
    let mounted = followed.split_off(kubelets);
    let effects = restarted.map(|r| r.effects(followed.iter().chain(&mounted).chain(&controllers)));
    let (mount_writes, pod_writes): (Vec<Write>, Vec<Write>) = writes.iter().partition(|w| w.index >= objects.count());
    let kubelet_of = |w: &Write| {
        let s = objects.shard_of(w.index);
        (s < kubelets).then_some(s).into_iter().collect::<Vec<_>>()
    };
    let watchers_of = |w: &Write| {
        let m = w.index - objects.count();
        mounts.nodes_of(m).filter(|n| *n < kubelets).map(|n| n * mounts.per_node + m % mounts.per_node).collect::<Vec<_>>()
    };
    let every = |_: &Write| (0..controllers.len()).collect::<Vec<_>>();
    let tallies = [
        ("kubelet", "lists", follow::tally(&pod_writes, &followed, kubelet_of, epoch)),
        ("kubelet mount", "lists", follow::tally(&mount_writes, &mounted, watchers_of, epoch)),
        ("informer", "syncs", follow::tally(&pod_writes, &controllers, every, epoch)),
    ];
    let (apiserver, kache) = (meters.apiserver.as_ref(), meters.kache.as_ref());
    let cpu = |v: Option<&Vitals>| v.and_then(|v| v.cpu(from, to));
    let peak = |v: Option<&Vitals>| v.and_then(|v| v.peak_rss(from, to)).map(|b| b as f64);
    let mut deliveries = Recorder::new(epoch);
    for (_, _, t) in &tallies {
        deliveries.merge(&t.deliveries);
    }
    let sum = |count: fn(&Tally) -> u64| Some(tallies.iter().map(|(_, _, t)| count(t)).sum::<u64>() as f64);
    let p99 = |r: &Recorder| (!r.latency.is_empty()).then(|| r.ms(0.99));
    let figures = vec![
        ("apiserver_cpu_s", cpu(apiserver)),
        ("apiserver_peak_rss_bytes", peak(apiserver)),
        ("restart_apiserver_cpu_s", restarted.and_then(|r| r.apiserver_cpu)),
        ("restart_apiserver_cpu_once_ready_s", restarted.and_then(|r| r.apiserver_cpu_ready)),
        ("restart_seconds", restarted.map(|r| r.took.as_secs_f64())),
        ("watches_ended_by_restart", effects.map(|e| e.0 as f64)),
        ("relists_after_restart", effects.map(|e| e.1 as f64)),
        ("writes", Some(writes.len() as f64)),
        ("missed", sum(|t| t.missed)),
        ("not_yet_synced", sum(|t| t.unsynced)),
        ("duplicated", sum(|t| t.duplicated)),
        ("reordered", sum(|t| t.reordered)),
        ("delivery_p50_ms", (!deliveries.latency.is_empty()).then(|| deliveries.ms(0.5))),
        ("delivery_p99_ms", p99(&deliveries)),
        ("kubelet_delivery_p99_ms", p99(&tallies[0].2.deliveries)),
        ("mount_delivery_p99_ms", p99(&tallies[1].2.deliveries)),
        ("informer_delivery_p99_ms", p99(&tallies[2].2.deliveries)),
        ("kubelet_list_p99_ms", p99(&tallies[0].2.lists)),
        ("mount_list_p99_ms", p99(&tallies[1].2.lists)),
        ("informer_sync_p99_ms", p99(&tallies[2].2.lists)),
        ("kache_cpu_s", cpu(kache)),
        ("kache_peak_rss_bytes", peak(kache)),
    ];
    // The serving process's figures beside each row.
    let serving = if target.role == Role::Direct { apiserver } else { kache };
    let usage = (cpu(serving), peak(serving).map(|b| b as u64));
    let mut rows = Vec::new();
    for (kind, lists, t) in tallies {
        rows.extend(watch_rows(kind, t, target, wall, usage, lists));
    }
    let mut kubectl = Row::new("kubectl pages", target, pages, wall, usage);
    kubectl.extra = vec![("writes", writes.len() as f64)];
    rows.push(kubectl);
    Ok((rows, figures))
}

/// Runs the mixed clients against every target; what it creates is recorded in `cleanup`.
pub async fn run_all(args: MixedArgs, cleanup: Cleanup) -> anyhow::Result<()> {
    let bar = crate::progress::bar("mixed", 0);
    let clients = args.kubelets * (1 + args.mounts_per_node) + args.controllers + args.kubectl;
    let shape = Shape { nodes: args.kubelets, pods_per_node: args.pods_per_node, mounts: args.mounts_per_node, clients, h2c: true };
    let (fleet, objects) = setup(&args.targets, shape, &cleanup, &bar).await?;
    let meters = Meters { apiserver: Vitals::of(fleet.direct()), kache: fleet.targets.get(1).and_then(Vitals::of) };
    bar.set_length(fleet.targets.len() as u64);
    let (mut rows, mut sides) = (Vec::new(), Vec::new());
    for target in &fleet.targets {
        bar.set_message(format!(
            "{} kubelets ({} watches each), {} controllers, {} kubectl on {}",
            args.kubelets,
            1 + args.mounts_per_node,
            args.controllers,
            args.kubectl,
            target.name
        ));
        let (side, figures) =
            measure(&args, &fleet, target, &objects, &meters, &bar).await.with_context(|| format!("measuring {}", target.name))?;
        rows.extend(side);
        sides.push((target.role.name(), figures));
        bar.inc(1);
    }
    bar.finish_and_clear();
    // Group by client kind, the direct target first.
    rows.sort_by_key(|r| (r.workload.clone(), r.role != Role::Direct));
    let halfway = if args.restart_command.is_some() { "apiserver restart" } else { "relist storm" };
    let params = json!({
        "kubelets": args.kubelets, "mounts_per_node": args.mounts_per_node, "controllers": args.controllers, "kubectl": args.kubectl,
        "rate": args.rate, "duration_s": args.duration, "objects": objects.count(), "mounts": objects.mounts().count(),
        "collection": objects.collection(), "halfway": halfway, "halfway_at_s": args.duration as f64 / 2.0,
        "restart_command": args.restart_command, "restart_window_s": args.restart_window,
    });
    Report { scenario: "mixed", params, rows, sides }.emit(&args.targets)
}

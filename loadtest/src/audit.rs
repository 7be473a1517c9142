//! `loadtest audit`: what auditing costs kache. One simulator (writing
//! `--churn` changes a second) and two kaches in front of it — one without
//! an audit policy, one with `--audit-policy-file` at `--level` (`Metadata`)
//! for every request and `--audit-log-path` — take the same load in turn,
//! `--rounds` times each: `--watchers` kubelets each list their node's
//! pods and watch them; their watches end together (`timeoutSeconds`)
//! and they all list and watch again — `--storms` relist storms. Reported:
//! the CPU seconds each load cost kache, with and without auditing, and
//! their ratio, how much of the audited kache's CPU its log thread took
//! (writing the log: the kernel's copy of each line into the page cache,
//! whose price moves with what else the machine is doing), the events the
//! audited kache wrote, and any it dropped (its log queue is made large
//! enough that none should be).
//!
//! What a load costs is measured as it would be alone: kache's CPU from
//! the load's start until kache is idle again (what it does after the last
//! answer, closing ten thousand connections, is the load's too), less its
//! idle rate (the churn it follows, measured once before the first load)
//! over the same time, so a load that lasts longer is not charged for
//! following the churn meanwhile (the audited kache's `/metrics`, which
//! says whether its log holds every event, is read only after, so that it
//! pays for no scrape the plain one does not); and the two kaches take turns in the
//! order plain, audited, audited, plain, … so that neither is always
//! second (or, with `--side-by-side`, take each round's load at the same
//! moment, so that the machine's pace is the same for both, the order in
//! which their kubelets start taking turns as well). Each kache first
//! takes one load that is reported but not counted: the first time ten thousand watches are held, kache's heap
//! grows and the kernel hands it fresh pages to zero (in a virtual machine
//! each page's first touch also faults into the host: on the 2-core test
//! machine that first load cost a kache up to 3 s more than its later
//! ones), a cost paid once in kache's life, not per request audited. On a
//! small machine one load's cost differs from the next by up
//! to a quarter, so the figure is the ratio of the totals over several
//! rounds, with the median of the rounds' ratios beside it; `--level off`
//! gives both kaches no policy, and its ratio is the measurement's noise.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use http_body_util::BodyExt;

use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::procs::{self, HttpClient, Proc, cpu_seconds, first_revision, get_with, thread_cpu_seconds};

/// The name of kache's audit log thread (`kache::audit::log`), whose CPU is reported apart.
const LOG_THREAD: &str = "audit-log";

/// Options of `loadtest audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The kache binary (build it with `cargo build --release`).
    #[arg(long, default_value = "target/release/kache")]
    kache_bin: String,
    /// Kubelets, one per node, each listing and watching its node's pods.
    #[arg(long, default_value_t = 10_000)]
    watchers: usize,
    /// Pods per node.
    #[arg(long, default_value_t = 3)]
    pods_per_node: usize,
    /// Relist storms: every kubelet's watch ends (kache ends them all within the same moments), and
    /// every kubelet lists and watches again.
    #[arg(long, default_value_t = 3)]
    storms: usize,
    /// Seconds each watch lasts (its `timeoutSeconds`) before the kubelet relists.
    #[arg(long, default_value_t = 3)]
    watch_seconds: u64,
    /// Pod changes per second the simulator writes meanwhile.
    #[arg(long, default_value_t = 100.0)]
    churn: f64,
    /// Runs of the load against each kache, taking turns.
    #[arg(long, default_value_t = 4)]
    rounds: usize,
    /// The level the audited kache's policy gives every request (`None`: the
    /// policy asked about each, and nothing written; `off`: no policy, so
    /// both kaches are the same and the ratio shows the measurement's noise).
    #[arg(long, default_value = "Metadata", value_parser = ["off", "None", "Metadata", "Request", "RequestResponse"])]
    level: String,
    /// Where the audited kache writes its log (default: a file in a new
    /// temporary directory). `/dev/null` leaves out the kernel's copy of each
    /// line into the page cache, whose cost depends on the machine more than on
    /// kache (in a virtual machine, a page the host has not backed costs a
    /// fault into the host the first time it is touched).
    #[arg(long)]
    log: Option<String>,
    /// Run each round's two loads at the same moment (each with its own
    /// `--watchers` kubelets) rather than one after the other: both kaches
    /// then meet the machine at the same pace, which on a shared machine
    /// moves by a fifth within an hour. Halve `--watchers` to keep the
    /// machine's connections (and file descriptors) as many as one load's.
    #[arg(long)]
    side_by_side: bool,
}

/// How long a kache's idle rate is measured before the first load.
const IDLE: Duration = Duration::from_secs(5);

/// A kache is idle again once a second of its CPU is at most its idle rate and this.
const SETTLED: f64 = 0.02;

/// A kubelet: `cycles` times, a list of its node's pods, then a watch from
/// the list's revision until kache ends it (`timeoutSeconds`), as a
/// kubelet relists when its watch ends. Its connection is kept between
/// requests (an HTTP/1.1 connection a kubelet, as client-go's).
async fn kubelet(client: HttpClient, kache: String, node: usize, cycles: usize, timeout: u64) -> anyhow::Result<()> {
    let pods = format!("{kache}/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-{node:04}");
    for _ in 0..cycles {
        let (status, body) = get_with(&client, &format!("{pods}&resourceVersion=0"), &[]).await?;
        if status != 200 {
            bail!("list of node-{node:04}: status {status}");
        }
        let rv = first_revision(&body).context("a list revision")?;
        let watch = format!("{pods}&watch=true&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds={timeout}");
        let resp = client.request(hyper::Request::get(watch).body(http_body_util::Empty::new())?).await?;
        if resp.status() != 200 {
            bail!("watch of node-{node:04}: status {}", resp.status());
        }
        let mut body = resp.into_body();
        while body.frame().await.transpose()?.is_some() {}
    }
    Ok(())
}

/// A client whose connections come from the loopback address `127.0.0.N`:
/// each load has its own, so the ports the one before left closing (its
/// connections' TIME_WAIT, a minute) are not the ones it needs.
fn client_from(n: u8) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_local_address(Some(std::net::IpAddr::from([127, 0, 0, n])));
    Client::builder(TokioExecutor::new()).build(connector)
}

/// `kache`'s CPU seconds a second while no load runs (the churn it follows).
async fn idle_rate(kache: &Proc) -> f64 {
    let (cpu, started) = (cpu_seconds(kache.pid()), Instant::now());
    tokio::time::sleep(IDLE).await;
    (cpu_seconds(kache.pid()) - cpu) / started.elapsed().as_secs_f64()
}

/// The load once against `kache` (idle at `idle_rate`), its kubelets' connections from
/// `127.0.0.N`: the CPU seconds it cost beyond the idle rate until kache is idle again and
/// its audit log holds `events` events (each load's own, and what came before; `None`:
/// nothing written). Its `/metrics` (which says what the log holds) is read only once the
/// load's CPU is taken, so that the audited kache is not charged for scrapes the plain one
/// never gets; had its log not yet held every event then (it takes what gathered every few
/// milliseconds, and kache had been idle for a second), the wait for them is counted too.
async fn load(args: &AuditArgs, n: u8, kache: &Proc, idle_rate: f64, events: Option<f64>) -> anyhow::Result<f64> {
    let client = client_from(n);
    let (cpu, started) = (cpu_seconds(kache.pid()), Instant::now());
    let kubelets: Vec<_> = (0..args.watchers)
        .map(|n| tokio::spawn(kubelet(client.clone(), kache.url.clone(), n, 1 + args.storms, args.watch_seconds)))
        .collect();
    for k in kubelets {
        k.await??;
    }
    drop(client);
    settle(kache, idle_rate).await;
    let cost = || cpu_seconds(kache.pid()) - cpu - idle_rate * started.elapsed().as_secs_f64();
    let mut spent = cost();
    let Some(events) = events else { return Ok(spent) };
    let (client, deadline) = (procs::client(), Instant::now() + Duration::from_secs(60));
    let mut waited = false;
    while recorded(&client, &kache.url).await.map(|(written, dropped)| written + dropped)? < events {
        if Instant::now() > deadline {
            bail!("the audited kache recorded fewer than {events} events in a minute");
        }
        waited = true;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if waited {
        settle(kache, idle_rate).await;
        spent = cost();
    }
    Ok(spent)
}

/// Waits until `kache` is idle again: its connections closed and their state freed (at most a minute).
async fn settle(kache: &Proc, idle_rate: f64) {
    for _ in 0..60 {
        let last = cpu_seconds(kache.pid());
        tokio::time::sleep(Duration::from_secs(1)).await;
        if cpu_seconds(kache.pid()) - last <= idle_rate + SETTLED {
            break;
        }
    }
}

/// One load against each of `kaches` (plain, audited; idle at `idle`), the
/// plain one's kubelets from `127.0.0.N` and the audited one's from the
/// next address, the audited one's log to reach `events`: their CPU
/// seconds, plain first. One after the other, or at the same moment with
/// `--side-by-side`; `audited_first` says which goes (or starts) first.
async fn pair(
    args: &AuditArgs,
    n: u8,
    kaches: (&Proc, &Proc),
    idle: (f64, f64),
    events: Option<f64>,
    audited_first: bool,
) -> anyhow::Result<(f64, f64)> {
    let plain = load(args, n, kaches.0, idle.0, None);
    let audited = load(args, n + 1, kaches.1, idle.1, events);
    let (base, cpu) = match (args.side_by_side, audited_first) {
        (true, false) => tokio::join!(plain, audited),
        (true, true) => {
            let (cpu, base) = tokio::join!(audited, plain);
            (base, cpu)
        }
        (false, false) => (plain.await, audited.await),
        (false, true) => {
            let cpu = audited.await;
            (plain.await, cpu)
        }
    };
    Ok((base?, cpu?))
}

/// The events kache's log backend has written and dropped so far.
async fn recorded(client: &HttpClient, kache: &str) -> anyhow::Result<(f64, f64)> {
    let (_, body) = get_with(client, &format!("{kache}/metrics"), &[]).await?;
    let text = String::from_utf8_lossy(&body).into_owned();
    let sample = |result: &str| {
        let series = format!("kache_audit_events_total{{backend=\"log\",result=\"{result}\"}}");
        text.lines().find_map(|l| l.strip_prefix(series.as_str())?.trim().parse().ok()).unwrap_or(0.0)
    };
    Ok((sample("written"), sample("dropped")))
}

/// Runs the load against both kaches and prints the figures.
pub async fn run_all(args: AuditArgs) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("a directory for the policy and the log")?;
    let (policy, log) = (dir.path().join("policy.yaml"), dir.path().join("audit.log"));
    std::fs::write(&policy, format!("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: {}\n", args.level))?;
    let path = |p: &std::path::Path| p.to_str().map(str::to_string).context("a UTF-8 path");
    let sim = Proc::sim(&args.kache_bin, args.watchers * args.pods_per_node, args.watchers, &["--namespaces", "10"])?;
    let plain = Proc::kache(&args.kache_bin, &sim.url, &[])?;
    let (policy, log) = (path(&policy)?, args.log.clone().map_or_else(|| path(&log), Ok)?);
    let audit = [
        "--audit-policy-file",
        &policy,
        "--audit-log-path",
        &log,
        // Room for a storm's events, so that the figure counts writing them all.
        "--audit-log-batch-buffer-size",
        "1000000",
    ];
    let audited = Proc::kache(&args.kache_bin, &sim.url, if args.level == "off" { &[] } else { &audit })?;
    let client = procs::client();
    for k in [&plain, &audited] {
        procs::ready(&client, &format!("{}/readyz", k.url), Duration::from_secs(600)).await?;
    }
    let (status, _) = get_with(&client, &format!("{}/_sim/churn?rate={}", sim.url, args.churn), &[]).await?;
    if status != 200 {
        bail!("the simulator's churn: status {status}");
    }
    println!(
        "{} kubelets ({} pods), {} relist storms, {} changes/s, {} rounds; audited kache: {} for every request, to {}\n",
        args.watchers,
        args.watchers * args.pods_per_node,
        args.storms,
        args.churn,
        args.rounds,
        args.level,
        args.log.as_deref().unwrap_or("a log file")
    );
    let idle = (idle_rate(&plain).await, idle_rate(&audited).await);
    println!("idle: plain {:.3} CPU s/s, audited {:.3}", idle.0, idle.1);
    // A list's events (RequestReceived, ResponseComplete) and a watch's (and ResponseStarted), per kubelet and cycle.
    let per_load = match args.level.as_str() {
        "off" | "None" => 0.0,
        _ => (args.watchers * (1 + args.storms) * 5) as f64,
    };
    let events = |loads: usize| (per_load > 0.0).then_some(per_load * loads as f64);
    let first = pair(&args, 2, (&plain, &audited), idle, events(1), false).await?;
    println!("first load (not counted: the heap grows): plain {:.2} CPU s, audited {:.2}\n", first.0, first.1);
    println!("{:<8} {:<10} {:>10} {:>10}", "round", "kache", "cpu s", "÷ plain");
    let (mut off, mut on, mut ratios) = (0.0, 0.0, Vec::new());
    let log_thread = || thread_cpu_seconds(audited.pid(), LOG_THREAD);
    let log_before = log_thread();
    for round in 1..=args.rounds {
        let n = u8::try_from(2 * round + 2).context("at most 120 rounds")?;
        let (base, cpu) = pair(&args, n, (&plain, &audited), idle, events(round + 1), round % 2 == 0).await?;
        println!("{round:<8} {:<10} {base:>10.2}", "plain");
        println!("{round:<8} {:<10} {cpu:>10.2} {:>10.3}", "audited", cpu / base);
        (off, on) = (off + base, on + cpu);
        ratios.push(cpu / base);
    }
    let log_cpu = log_thread() - log_before;
    let (written, dropped) = recorded(&client, &audited.url).await?;
    ratios.sort_by(f64::total_cmp);
    let median = match ratios.len() % 2 {
        1 => ratios[ratios.len() / 2],
        _ => (ratios[ratios.len() / 2 - 1] + ratios[ratios.len() / 2]) / 2.0,
    };
    println!("\nCPU with auditing / without: {:.3} ({on:.2} s / {off:.2} s); the rounds' median {median:.3}", on / off);
    println!(
        "of which the log's thread (its writes, the kernel's copy into the page cache included): {log_cpu:.2} s, {:.1} % of the plain kache's",
        100.0 * log_cpu / off
    );
    println!(
        "audit events written {written:.0}, dropped {dropped:.0} (the load's {:.0}, and kache's health checks and metrics)",
        per_load * (args.rounds + 1) as f64
    );
    Ok(())
}

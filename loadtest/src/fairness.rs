//! `loadtest fairness`: one client floods, another makes small reads (issue
//! 41's table). For each target — the direct one, then kache — the victim
//! reads for `--seconds` alone (quiet), then again while the flooding
//! client keeps `--flood` full lists of the collection in flight
//! (`resourceVersion=0`), each as a user of its own: the victim's p50 and
//! p99 quiet and flooded, and how many full lists the flood was served.
//! The victim rotates a GET of one object, a page of 50 (consistent) and
//! one node's objects, one at a time; both retry a 429 after its `Retry-After`, as
//! client-go does. Then the victim read by read, to say what made a p99:
//! each read's count, p50 and p99 in each phase, and for kache the reads it
//! did not answer from memory and why (its own `kache_requests_total`,
//! before and after each phase).
//!
//! Without `--kubeconfig` the tool starts the simulator (a policy of two
//! ServiceAccounts and kache) and kache with `--token-review` and its
//! defaults (`--kache-arg` adds to them, e.g.
//! `--kache-arg=--enable-priority-and-fairness=false`). On a real cluster,
//! `--flood-token` and `--victim-token` are two ServiceAccounts' tokens
//! that may list the collection (bind them to a ClusterRole of your own:
//! `view` is empty without kube-controller-manager), and `--kache` a kache
//! running with `--token-review` in front of it. Nothing is written.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use http::Method;
use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::record::{Recorder, Row, Usage};
use crate::report::Report;
use crate::roads::{self, roads};
use crate::target::{Fleet, Role, Target, TargetArgs, retry_after};

/// Options of `loadtest fairness`.
#[derive(Debug, Args)]
pub struct FairnessArgs {
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Pods in the simulated cluster.
    #[arg(long, default_value_t = 50_000)]
    pub pods: usize,
    /// The collection the flood lists whole and the victim reads from.
    #[arg(long, default_value = "/api/v1/pods")]
    pub collection: String,
    /// Full lists the flooding client keeps in flight.
    #[arg(long, default_value_t = 6)]
    pub flood: usize,
    /// Seconds the victim reads in each phase (quiet, flooded).
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// The flooding client's bearer token (a real cluster's ServiceAccount that may list the collection).
    #[arg(long, requires = "kubeconfig", hide_env_values = true, env = "LOADTEST_FLOOD_TOKEN")]
    pub flood_token: Option<String>,
    /// The victim's bearer token (another ServiceAccount that may read the collection).
    #[arg(long, requires = "kubeconfig", hide_env_values = true, env = "LOADTEST_VICTIM_TOKEN")]
    pub victim_token: Option<String>,
    /// One more argument for the kache the tool starts (repeatable).
    #[arg(long = "kache-arg", value_name = "ARG", allow_hyphen_values = true, conflicts_with = "kubeconfig")]
    pub kache_args: Vec<String>,
}

/// The simulator's users: two ServiceAccounts (the bootstrap `service-accounts` schema) and kache.
fn policy() -> String {
    let sa = |name: &str| {
        json!({"name": format!("system:serviceaccount:loadtest:{name}"),
        "groups": ["system:serviceaccounts", "system:serviceaccounts:loadtest"], "tokens": [format!("{name}-token")]})
    };
    json!({"users": [sa("flood"), sa("victim"), {"name": "kache", "tokens": ["kache-token"]}],
        "rules": [
            {"subjects": ["group:system:serviceaccounts:loadtest"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["pods"]},
            {"subjects": ["user:kache"], "verbs": ["get", "list", "watch"], "groups": ["*"], "resources": ["*"]},
            {"subjects": ["user:kache"], "verbs": ["get"], "paths": ["/metrics"]},
            {"subjects": ["user:kache"], "verbs": ["create"], "groups": ["authentication.k8s.io"], "resources": ["tokenreviews"]},
            {"subjects": ["user:kache"], "verbs": ["create"], "groups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"]},
            {"subjects": ["user:kache"], "verbs": ["impersonate"], "groups": ["", "authentication.k8s.io"], "resources": ["users", "groups", "serviceaccounts", "uids", "userextras/*"]}
        ]})
    .to_string()
}

/// GET `path` as `target`'s user, recorded; on a 429, the wait its `Retry-After` asks for.
async fn get(target: &Target, path: &str, rec: &mut Recorder) -> anyhow::Result<Option<Duration>> {
    let started = Instant::now();
    let resp = target.http.send(Method::GET, path, &[], None).await?;
    let (status, wait) = (resp.status().as_u16(), retry_after(resp.headers()));
    let mut body = resp.into_body();
    let mut length = 0;
    while let Some(frame) = body.frame().await {
        length += frame?.data_ref().map_or(0, bytes::Bytes::len);
    }
    rec.record(started.elapsed(), status, length);
    Ok((status == 429).then(|| wait.unwrap_or(Duration::from_secs(1))))
}

/// The victim's reads, each named: one object, a page of 50, one node's objects.
async fn reads(victim: &Target, collection: &str) -> anyhow::Result<Vec<(&'static str, String)>> {
    let (status, page) = victim.http.get(&format!("{collection}?limit=50"), &[]).await?;
    anyhow::ensure!(status == 200, "the victim listing {collection} on {}: status {status}", victim.name);
    let page: Value = serde_json::from_slice(&page)?;
    let items = page["items"].as_array().context("a list")?;
    // An object on a node, if one of the first page is.
    let item = items.iter().find(|i| i["spec"]["nodeName"].is_string()).or(items.first()).context("an object to read")?;
    let (prefix, plural) = collection.rsplit_once('/').context("a collection path")?;
    let (ns, name) = (item["metadata"]["namespace"].as_str().unwrap_or(""), item["metadata"]["name"].as_str().context("an object")?);
    let object = match ns {
        "" => format!("{collection}/{name}?resourceVersion=0"),
        ns => format!("{prefix}/namespaces/{ns}/{plural}/{name}?resourceVersion=0"),
    };
    // A page is consistent (no resourceVersion): with `resourceVersion=0` the apiserver's cache ignores `limit`.
    let mut out = vec![("object", object), ("consistent page of 50", format!("{collection}?limit=50"))];
    if let Some(node) = item["spec"]["nodeName"].as_str() {
        out.push(("one node's", format!("{collection}?resourceVersion=0&fieldSelector=spec.nodeName%3D{node}")));
    }
    Ok(out)
}

/// The victim (a client of its own: `target` has no connection yet)
/// reading `paths` in turn for `seconds`, on a thread and runtime of its
/// own — apart from the flood, whose reading of its lists would otherwise
/// delay the victim's inside this process: a recorder for each path.
async fn victim(target: Target, paths: &[(&'static str, String)], seconds: u64) -> anyhow::Result<(Vec<Recorder>, Duration)> {
    let paths: Vec<String> = paths.iter().map(|(_, path)| path.clone()).collect();
    let reader = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(async move {
            let started = Instant::now();
            let until = started + Duration::from_secs(seconds);
            let mut recs: Vec<Recorder> = paths.iter().map(|_| Recorder::new(started)).collect();
            for i in (0..paths.len()).cycle() {
                if Instant::now() >= until {
                    break;
                }
                while let Some(wait) = get(&target, &paths[i], &mut recs[i]).await? {
                    tokio::time::sleep(wait).await;
                }
            }
            Ok((recs, started.elapsed()))
        })
    });
    tokio::task::spawn_blocking(move || reader.join().map_err(|_| anyhow::anyhow!("the victim's thread panicked"))?).await?
}

/// A phase of the victim's reads, read by read: what made its p99.
struct Phase {
    target: String,
    name: &'static str,
    /// Each read's name, count, p50 and p99 (ms).
    reads: Vec<(&'static str, u64, f64, f64)>,
    /// kache's answers of the collection's reads in the phase by road, those not from memory: the victim's that went
    /// upstream (the flood's lists name a revision, which memory answers), and any 429 (`kache`, the flood's as well);
    /// `None` for a target that is not kache.
    roads: Option<Vec<String>>,
}

/// The victim reading `paths` for `--seconds` as target `i`: its row, and
/// the phase read by read (kache's `/metrics` read as `metrics`).
async fn phase(
    (fleet, i, metrics): (&Fleet, usize, &Target),
    (token, paths): (&str, &[(&'static str, String)]),
    name: &'static str,
    args: &FairnessArgs,
) -> anyhow::Result<(Row, Phase)> {
    let target = &fleet.targets[i];
    let key = |verb: &str| (verb.to_string(), resource(&args.collection));
    let counted = || async {
        Ok::<_, anyhow::Error>(match target.role {
            Role::Kache => Some(roads(metrics).await?),
            _ => None,
        })
    };
    let (as_user, before) = (fleet.as_user(i, token)?, counted().await?);
    let usage = Usage::start(&as_user);
    let (recs, wall) = victim(fleet.as_user(i, token)?, paths, args.seconds).await?;
    let used = usage.finish(&as_user);
    let roads = match (before, counted().await?) {
        (Some(before), Some(after)) => Some(
            ["get", "list"]
                .into_iter()
                .flat_map(|verb| roads::since(&before, &after, &key(verb)).into_iter().map(move |road| format!("{verb} {road}")))
                .filter(|road| !road.contains(" memory "))
                .collect(),
        ),
        _ => None,
    };
    let reads = paths.iter().zip(&recs).map(|((read, _), rec)| (*read, rec.latency.len(), rec.ms(0.5), rec.ms(0.99))).collect();
    let mut all = Recorder::new(Instant::now());
    recs.iter().for_each(|rec| all.merge(rec));
    let row = Row::new(if name == "quiet" { "victim quiet" } else { "victim flooded" }, &as_user, all, wall, used);
    Ok((row, Phase { target: target.name.clone(), name, reads, roads }))
}

/// The `resource` label kache counts `collection`'s reads under (`pods`, `deployments.apps`).
fn resource(collection: &str) -> String {
    let parts: Vec<&str> = collection.trim_matches('/').split('/').collect();
    match (parts.first(), parts.last()) {
        (Some(&"apis"), Some(plural)) if parts.len() >= 4 => format!("{plural}.{}", parts[1]),
        (_, Some(plural)) => plural.to_string(),
        _ => String::new(),
    }
}

/// Target `i`'s three rows (the victim quiet, the victim flooded, the flood) and its two phases read by read.
async fn measure(
    fleet: &Fleet,
    i: usize,
    (victim_token, flood_token): (&str, &str),
    args: &FairnessArgs,
) -> anyhow::Result<(Vec<Row>, Vec<Phase>)> {
    let (victim_as, flood_as) = (&fleet.as_user(i, victim_token)?, Arc::new(fleet.as_user(i, flood_token)?));
    let paths = reads(victim_as, &args.collection).await?;
    // kache's figures: as the kubeconfig's user on a real cluster, as kache's own on the simulator (its policy lets it).
    let own = (!args.targets.real()).then(|| fleet.as_user(i, "kache-token")).transpose()?;
    let metrics = own.as_ref().unwrap_or(&fleet.targets[i]);
    // Connections open and the collection's answers warm (kache's encodings) before anything is measured.
    get(&flood_as, &format!("{}?resourceVersion=0", args.collection), &mut Recorder::new(Instant::now())).await?;
    let (quiet, quiet_phase) = phase((fleet, i, metrics), (victim_token, &paths), "quiet", args).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let flood_usage = Usage::start(victim_as);
    let mut flood = Vec::new();
    for _ in 0..args.flood {
        let (target, stop, path) = (flood_as.clone(), stop.clone(), format!("{}?resourceVersion=0", args.collection));
        flood.push(tokio::spawn(async move {
            let mut rec = Recorder::new(started);
            while !stop.load(Ordering::Relaxed) {
                if let Some(wait) = get(&target, &path, &mut rec).await? {
                    tokio::time::sleep(wait).await;
                }
            }
            Ok::<_, anyhow::Error>(rec)
        }));
    }
    let flooded = phase((fleet, i, metrics), (victim_token, &paths), "flooded", args).await;
    stop.store(true, Ordering::Relaxed);
    let mut lists = Recorder::new(started);
    for task in flood {
        lists.merge(&task.await??);
    }
    let (mut flooded, flooded_phase) = flooded?;
    (flooded.cpu, flooded.peak_rss) = (None, None);
    let flood_row = Row::new("flood full lists", victim_as, lists, started.elapsed(), flood_usage.finish(victim_as));
    flooded.extra =
        vec![("p50 ÷ quiet", round(flooded.ms(0.5) / quiet.ms(0.5))), ("p99 ÷ quiet", round(flooded.ms(0.99) / quiet.ms(0.99)))];
    Ok((vec![quiet, flooded, flood_row], vec![quiet_phase, flooded_phase]))
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

pub async fn run_all(args: FairnessArgs) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let policy_file = dir.path().join("policy.json");
    std::fs::write(&policy_file, policy())?;
    let pods = args.pods.to_string();
    let nodes = (args.pods / 100).max(1).to_string();
    let policy_arg = policy_file.to_str().context("a UTF-8 temporary path")?.to_string();
    let sim_args: Vec<String> = ["--pods", &pods, "--nodes", &nodes, "--policy", &policy_arg].iter().map(|s| s.to_string()).collect();
    let mut kache_args = vec!["--resources", "pods", "--token", "kache-token", "--token-review"];
    kache_args.extend(args.kache_args.iter().map(String::as_str));
    let fleet = Fleet::start(&args.targets, &sim_args, &kache_args).await?;
    let (flood_token, victim_token) = match (&args.flood_token, &args.victim_token) {
        (Some(f), Some(v)) => (f.clone(), v.clone()),
        _ if args.targets.real() => anyhow::bail!("a real cluster needs --flood-token and --victim-token"),
        _ => ("flood-token".to_string(), "victim-token".to_string()),
    };
    let (mut rows, mut phases) = (Vec::new(), Vec::new());
    for i in 0..fleet.targets.len() {
        let measured = measure(&fleet, i, (&victim_token, &flood_token), &args).await;
        let (measured, read_by_read) = measured.with_context(|| format!("measuring {}", fleet.targets[i].name))?;
        rows.extend(measured);
        phases.extend(read_by_read);
    }
    let params = json!({"collection": args.collection, "flood": args.flood, "seconds": args.seconds,
        "pods": (!args.targets.real()).then_some(args.pods), "kache_args": args.kache_args});
    let report = Report { scenario: "fairness", params, rows, sides: Vec::new() };
    report.emit(&args.targets)?;
    println!("{}", summary(&report.rows));
    println!("{}", read_by_read(&phases));
    Ok(())
}

/// Each phase read by read (count, p50 / p99 ms), and how kache answered the victim's reads it did not answer from memory.
fn read_by_read(phases: &[Phase]) -> String {
    let mut out = String::from("the victim read by read: count, p50 / p99 ms\n");
    for phase in phases {
        let reads: Vec<String> = phase.reads.iter().map(|(read, n, p50, p99)| format!("{read} {n}, {p50:.1} / {p99:.1}")).collect();
        out += &format!("{:<10} {:<8} {}\n", phase.target, phase.name, reads.join("; "));
        if let Some(roads) = &phase.roads {
            let roads = if roads.is_empty() { "none".to_string() } else { roads.join(", ") };
            out += &format!("{:<10} {:<8} not from memory: {roads}\n", "", "");
        }
    }
    out
}

/// The fairness table: per target, the victim's p50 and p99 quiet → flooded, and the flood's lists.
fn summary(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<10} {:>28} {:>28} {:>26}\n",
        "target", "victim p50 quiet → flooded", "victim p99 quiet → flooded", "flood's full lists served"
    );
    let ms = |v: f64| format!("{v:.1} ms");
    for quiet in rows.iter().filter(|r| r.workload == "victim quiet") {
        let same = |w: &str| rows.iter().find(|r| r.workload == w && r.target == quiet.target);
        let (Some(flooded), Some(flood)) = (same("victim flooded"), same("flood full lists")) else { continue };
        out += &format!(
            "{:<10} {:>28} {:>28} {:>26}\n",
            quiet.target,
            format!("{} → {}", ms(quiet.ms(0.5)), ms(flooded.ms(0.5))),
            format!("{} → {}", ms(quiet.ms(0.99)), ms(flooded.ms(0.99))),
            format!("{} in {:.0} s", flood.rec.count(), flood.wall.as_secs_f64()),
        );
    }
    out
}

//! Operating kache: the configuration file, health endpoints, start-up
//! before the apiserver is reachable, and shutdown under load — kache as a
//! real process in front of the simulator.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Process, eventually, scrape};

/// A temporary configuration file.
fn config(text: &str) -> tempfile::NamedTempFile {
    let f = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(f.path(), text).unwrap();
    f
}

/// `kache ARGS`: exit success, stdout, stderr.
fn kache(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kache")).env("RUST_BACKTRACE", "0").args(args).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The resources kache's `/readyz?verbose` lists.
fn cached(kache: &Process) -> Vec<String> {
    let body = kache.get("/readyz?verbose").text();
    body.lines().filter_map(|l| l.strip_prefix("[+]resource:")?.strip_suffix(" ok")).map(String::from).collect()
}

#[test]
fn a_config_file_configures_kache_and_flags_on_the_command_line_win() {
    let sim = Process::sim(&["--pods", "20"]);
    let file = config("listen: 127.0.0.1:1\nresources: [pods, configmaps]\npageSize: 5\nlogFormat: json\nshutdownDrain: 3\n");
    let path = file.path().to_str().unwrap();
    // The file's resources; its listen address is overridden by the test's --listen.
    let from_file = Process::kache(&sim.url, &["--config", path]);
    eventually(Duration::from_secs(30), "kache ready", || (from_file.get("/readyz").status == 200).then_some(()));
    assert_eq!(cached(&from_file), ["pods", "configmaps"]);
    // The initial list came in pages of 5 (the file's pageSize): 4 list requests for 20 pods.
    assert_eq!(sim.served("pods", "list"), 4, "the file's pageSize is used");
    // A list on the command line replaces the file's (it does not add to it).
    let overridden = Process::kache(&sim.url, &["--config", path, "--resources", "nodes"]);
    eventually(Duration::from_secs(30), "kache ready", || (overridden.get("/readyz").status == 200).then_some(()));
    assert_eq!(cached(&overridden), ["nodes"]);
}

#[test]
fn kache_config_check_accepts_the_example_and_names_what_is_wrong() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/config/kache.yaml");
    let (ok, stdout, stderr) = kache(&["config", "check", example]);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with(&format!("{example}: valid")) && stdout.contains("--page-size=500"), "{stdout}");
    for (text, error) in [
        ("lisen: 127.0.0.1:8001\n", "unknown key lisen (did you mean listen?)"),
        ("pageSize: lots\n", "invalid value 'lots' for key pageSize"),
        ("tokenReview: maybe\n", "key tokenReview: expected true or false, found a string"),
        ("listen: 0.0.0.0:8001\n", "kache authenticates no client"),
        ("resources: pods\n  nodes: 1\n", "not valid YAML"),
    ] {
        let file = config(text);
        let (ok, _, stderr) = kache(&["config", "check", file.path().to_str().unwrap()]);
        assert!(!ok, "{text:?} was accepted");
        assert!(stderr.contains(error), "{text:?}: {stderr}");
        // `serve` refuses the same file before doing anything.
        let (ok, _, serve_err) = kache(&["serve", "--config", file.path().to_str().unwrap(), "--server", "http://127.0.0.1:1"]);
        assert!(!ok && serve_err.contains(error), "serve took {text:?}: {serve_err}");
    }
}

#[test]
fn health_endpoints_answer_as_the_apiservers_with_a_check_per_resource() {
    let sim = Process::sim(&["--pods", "5"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,configmaps"]);
    eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    assert_eq!(kache.get("/readyz").text(), "ok");
    assert_eq!(kache.get("/livez").text(), "ok");
    assert_eq!(kache.get("/healthz").text(), "ok");
    let verbose = kache.get("/readyz?verbose");
    assert_eq!(verbose.status, 200);
    assert_eq!(verbose.text(), "[+]ping ok\n[+]shutdown ok\n[+]resource:pods ok\n[+]resource:configmaps ok\nreadyz check passed\n");
    assert_eq!(kache.get("/livez?verbose").text(), "[+]ping ok\nlivez check passed\n");
    assert_eq!(kache.get("/readyz/resource:pods").text(), "ok");
    assert_eq!(kache.get("/readyz/resource:nodes").status, 404);
    let excluded = kache.get("/readyz?verbose&exclude=resource:pods&exclude=etcd").text();
    assert!(!excluded.contains("resource:pods") && excluded.contains("no matches for \"etcd\""), "{excluded}");
}

/// A counter of kache's `/metrics` (summed over its label sets).
fn counter(kache: &Process, name: &str) -> u64 {
    let text = kache.get("/metrics").text();
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_a_thousand_watches_ends_every_one_cleanly_and_exits_without_waiting_out_the_drain() {
    let sim = Process::sim(&["--pods", "100", "--nodes", "10"]);
    // An hour's drain: kache exits long before it only if its watches end at once.
    let mut kache = Process::kache(&sim.url, &["--resources", "pods", "--shutdown-drain", "3600"]);
    let ready = || eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    tokio::task::block_in_place(ready);
    let rv = kache.get("/api/v1/pods?limit=1").json()["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let client = common::watching::client();
    let watches: Vec<_> = (0..1000)
        .map(|i| {
            let (client, url) = (
                client.clone(),
                format!("{}/api/v1/pods?watch=1&resourceVersion={rv}&fieldSelector=spec.nodeName%3Dnode-{:04}", kache.url, i % 10),
            );
            // `watch` fails the test if a stream breaks instead of ending.
            tokio::spawn(async move { common::watching::watch(&client, &url, Duration::from_secs(60)).await })
        })
        .collect();
    tokio::task::block_in_place(|| {
        eventually(Duration::from_secs(60), "1000 watches open", || (counter(&kache, "kache_watches_served_total") >= 1000).then_some(()))
    });
    assert!(Command::new("kill").args(["-TERM", &kache.pid().to_string()]).status().unwrap().success());
    // Watches from memory end at once; the drain bound is for other requests.
    let status = tokio::task::block_in_place(|| kache.wait(Duration::from_secs(300)));
    assert!(status.success(), "kache exited with {status}");
    for w in watches {
        let lines = w.await.expect("the watch ended cleanly");
        assert_eq!(lines.status, 200);
    }
}

#[test]
fn metrics_count_a_scripted_workload_exactly() {
    let sim = Process::sim(&["--pods", "30", "--nodes", "3", "--namespaces", "2"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods"]);
    eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    let before = scrape(&kache);
    // 3 lists from memory, 2 GETs from memory (one of them a 404), 1 request passed through.
    for _ in 0..3 {
        assert_eq!(kache.get("/api/v1/pods?resourceVersion=0").status, 200);
    }
    let name = sim.get("/api/v1/pods?limit=1").json()["items"][0]["metadata"]["name"].as_str().unwrap().to_string();
    let ns = sim.get("/api/v1/pods?limit=1").json()["items"][0]["metadata"]["namespace"].as_str().unwrap().to_string();
    assert_eq!(kache.get(&format!("/api/v1/namespaces/{ns}/pods/{name}?resourceVersion=0")).status, 200);
    assert_eq!(kache.get(&format!("/api/v1/namespaces/{ns}/pods/nope?resourceVersion=0")).status, 404);
    assert_eq!(kache.get("/api/v1/namespaces").status, 200);
    let m = scrape(&kache);
    let delta = |series: &str| m.get(series).copied().unwrap_or(0.0) - before.get(series).copied().unwrap_or(0.0);
    assert_eq!(delta(r#"kache_requests_total{verb="list",resource="pods",source="memory",reason="",code="200"}"#), 3.0);
    assert_eq!(delta(r#"kache_requests_total{verb="get",resource="pods",source="memory",reason="",code="200"}"#), 1.0);
    assert_eq!(delta(r#"kache_requests_total{verb="get",resource="pods",source="memory",reason="",code="404"}"#), 1.0);
    assert_eq!(delta(r#"kache_requests_total{verb="list",resource="namespaces",source="upstream",reason="not cached",code="200"}"#), 1.0);
    assert_eq!(delta("kache_lists_served_total"), 3.0);
    assert_eq!(delta("kache_gets_served_total"), 2.0, "GETs answered from memory, the 404 too");
    assert_eq!(delta("kache_passed_through_total"), 1.0);
    assert_eq!(delta(r#"kache_request_duration_seconds_count{verb="list",source="memory"}"#), 3.0);
    // Per resource, read from the store when scraped.
    assert_eq!(m[r#"kache_store_objects{resource="pods"}"#], 30.0);
    assert_eq!(m[r#"kache_resource_ready{resource="pods"}"#], 1.0);
    assert_eq!(m[r#"kache_watch_queued_frames{resource="pods"}"#], 0.0, "no watcher, nothing queued");
    assert_eq!(m[r#"kache_upstream_lists_total{resource="pods"}"#], 1.0, "one initial list, no re-list");
    assert_eq!(m[r#"kache_store_confirmed_revision{resource="pods"}"#], sim.revision() as f64);
    assert!(m["process_resident_memory_bytes"] > 1e6);
    // The bytes of the three full lists went out from memory.
    let list = kache.get("/api/v1/pods?resourceVersion=0").body.len() as f64;
    assert!(delta(r#"kache_response_bytes_total{verb="list",source="memory"}"#) >= 3.0 * list);

    // Every metric the Grafana dashboard queries is one kache exposes.
    let names: std::collections::HashSet<&str> = m.keys().map(|s| s.split('{').next().unwrap()).collect();
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/grafana/kache-dashboard.json")).unwrap(),
    )
    .unwrap();
    let mut queried = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("kache_") || word.starts_with("process_") {
                    assert!(names.contains(word), "the dashboard queries {word}, which kache does not expose");
                    queried += 1;
                }
            }
        }
    }
    assert!(queried >= 14, "the dashboard queries {queried} metrics");
}

/// A loopback port nothing listens on (yet).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn kache_started_before_its_apiserver_answers_alive_not_ready_then_serves() {
    let port = free_port();
    let upstream = format!("http://127.0.0.1:{port}");
    let probes = format!("127.0.0.1:{}", free_port());
    let kache = Process::kache(&upstream, &["--resources", "pods", "--health-listen", &probes]);
    // The probe listener: checks and metrics only, never an object.
    let probe = |method: &str, path: &str| common::request(&format!("http://{probes}{path}"), method, &[], None);
    assert_eq!(probe("GET", "/livez").status, 200);
    assert_eq!(probe("GET", "/readyz").status, 503);
    assert_eq!(probe("GET", "/metrics").status, 503, "no metrics before kache serves");
    assert_eq!(probe("GET", "/api/v1/pods").status, 404);
    assert_eq!(kache.get("/livez").status, 200, "alive while the apiserver is away");
    let ready = kache.get("/readyz?verbose");
    assert_eq!(ready.status, 503);
    let why = eventually(Duration::from_secs(60), "the upstream failure on /readyz", || {
        let text = kache.get("/readyz?verbose").text();
        text.contains(&upstream).then_some(text)
    });
    assert!(why.starts_with("[+]ping ok\n[-]upstream failed: the apiserver at") && why.ends_with("readyz check failed\n"), "{why}");
    let list = kache.get("/api/v1/pods");
    assert_eq!((list.status, list.header("retry-after")), (503, Some("1")));
    assert_eq!(list.json()["reason"], "ServiceUnavailable");
    // The apiserver comes up: kache discovers, lists and serves, without a restart.
    let sim = Process::sim_at(port, &["--pods", "12"]);
    eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    let pods = kache.get("/api/v1/pods?resourceVersion=0").json();
    assert_eq!(pods["items"].as_array().unwrap().len(), 12);
    assert_eq!(sim.served("pods", "list"), 1, "one initial list");
    let ready = probe("GET", "/readyz?verbose");
    assert_eq!((ready.status, ready.text()), (200, kache.get("/readyz?verbose").text()), "the same checks as the API listener's");
    let metrics = probe("GET", "/metrics");
    assert_eq!(metrics.header("content-type"), Some("text/plain; version=0.0.4"));
    assert!(metrics.text().lines().any(|l| l == r#"kache_store_objects{resource="pods"} 12"#), "{}", metrics.text());
    for (method, path) in [("GET", "/api/v1/pods?resourceVersion=0"), ("GET", "/api"), ("POST", "/readyz"), ("GET", "/")] {
        assert_eq!(probe(method, path).status, 404, "{method} {path} on the probe listener");
    }
}

#[test]
fn readiness_flips_while_a_resource_re_lists_and_reads_pass_through_meanwhile() {
    // Pages of one pod: the re-list of 1,500 takes a while.
    let sim = Process::sim(&["--pods", "1500", "--nodes", "3"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods", "--page-size", "1"]);
    eventually(Duration::from_secs(120), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    // An etcd restore: revisions renumbered, every watch ended. kache's probe sees upstream went back and re-lists.
    assert_eq!(sim.post("/_sim/restart?reset=true", &serde_json::json!({})).status, 200);
    let why = eventually(Duration::from_secs(30), "not ready while re-listing", || {
        let r = kache.get("/readyz?verbose");
        (r.status == 503).then(|| r.text())
    });
    assert!(why.contains("[-]resource:pods failed: re-listing"), "{why}");
    // Meanwhile reads pass through: the answer is upstream's, at its new revisions.
    let list = kache.get("/api/v1/pods?resourceVersion=0&limit=1");
    assert_eq!(list.status, 200);
    eventually(Duration::from_secs(120), "ready again", || (kache.get("/readyz").status == 200).then_some(()));
    let m = scrape(&kache);
    assert_eq!(m[r#"kache_upstream_lists_total{resource="pods"}"#], 2.0, "the initial list and one re-list");
    assert!(m.keys().any(|k| k.starts_with("kache_requests_total{") && k.contains(r#"source="upstream",reason="not synced""#)), "{m:?}");
    assert_eq!(
        kache.get("/api/v1/pods?resourceVersion=0").json()["metadata"]["resourceVersion"],
        sim.get("/api/v1/pods?limit=1").json()["metadata"]["resourceVersion"]
    );
}

#[test]
fn when_the_apiserver_goes_away_kache_serves_what_it_has_until_the_staleness_bound() {
    let mut sim = Process::sim(&["--pods", "10"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods", "--max-staleness", "8"]);
    eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    let held = kache.get("/api/v1/pods?resourceVersion=0").json();
    let _ = sim.child_kill();
    // Within the bound: lists at any revision from memory; consistent reads fail as the apiserver's would.
    let list = kache.get("/api/v1/pods?resourceVersion=0");
    assert_eq!((list.status, list.json()), (200, held));
    let consistent = kache.get("/api/v1/pods");
    assert_eq!(consistent.status, 503, "{}", consistent.text());
    // Still within the bound by kache's own clock, so the answers above were given within it.
    let within = kache.get("/readyz?verbose");
    assert_eq!(within.status, 200, "the checks above must run within the bound to mean anything: {}", within.text());
    // Past the bound: not ready, and nothing from memory.
    let why = eventually(Duration::from_secs(30), "not ready past the bound", || {
        let r = kache.get("/readyz?verbose");
        (r.status == 503).then(|| r.text())
    });
    assert!(why.contains("[-]resource:pods failed: no answer from the apiserver for") && why.contains("(max staleness 8s)"), "{why}");
    assert_eq!(kache.get("/api/v1/pods?resourceVersion=0").status, 503);
    assert_eq!(kache.get("/livez").status, 200, "alive: a restart would not help");
}

/// The sum of `name`'s series carrying every label in `labels` (`resource="nodes"`).
fn series(kache: &Process, name: &str, labels: &[&str]) -> f64 {
    scrape(kache)
        .into_iter()
        .filter(|(s, _)| s.split('{').next() == Some(name) && labels.iter().all(|l| s.contains(l)))
        .map(|(_, v)| v)
        .sum()
}

/// Samples kache every half second for `period` (ten times at least): every resource ready by
/// `/readyz` and by `kache_resource_ready`, and a read of `path` from memory.
fn stays_ready(kache: &Process, resource: &str, path: &str, period: Duration) {
    let from_memory = |k: &Process| series(k, "kache_requests_total", &[&format!("resource=\"{resource}\""), "source=\"memory\""]);
    let start = std::time::Instant::now();
    let mut samples = 0;
    while start.elapsed() < period || samples < 10 {
        let at = start.elapsed().as_secs_f64();
        let ready = kache.get("/readyz?verbose");
        assert_eq!(ready.status, 200, "at {at:.1}s: {}", ready.text());
        assert_eq!(series(kache, "kache_resource_ready", &[&format!("resource=\"{resource}\"")]), 1.0, "at {at:.1}s");
        let before = from_memory(kache);
        assert_eq!(kache.get(path).status, 200);
        assert_eq!(from_memory(kache), before + 1.0, "at {at:.1}s: {path} did not come from memory");
        samples += 1;
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn a_quiet_resource_stays_ready_and_a_lost_apiserver_turns_it_not_ready_everywhere_at_once() {
    // Pods change, nodes never do; the simulator's bookmarks come every minute, as the apiserver's,
    // far past the bound: only kache's heartbeat keeps the nodes' contact.
    let mut sim = Process::sim(&["--pods", "40", "--nodes", "3", "--churn", "20"]);
    let kache = Process::logged("serve", &["--server", &sim.url, "--resources", "pods,nodes", "--max-staleness", "6"]);
    eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    stays_ready(&kache, "nodes", "/api/v1/nodes?resourceVersion=0", Duration::from_secs(20));
    assert!(!kache.log().contains("stale"), "{}", kache.log());

    let _ = sim.child_kill();
    // Each resource counts its own silence: pods, heard last by a watch frame, may turn before the
    // nodes' last heartbeat runs out, so wait for the nodes' own check.
    let why = eventually(Duration::from_secs(60), "nodes not ready once the apiserver is gone", || {
        let r = kache.get("/readyz?verbose");
        (r.status == 503 && r.text().contains("[-]resource:nodes failed")).then(|| r.text())
    });
    assert!(why.contains("[-]resource:nodes failed: no answer from the apiserver for"), "{why}");
    // The metric and the reason of a read say the same; the log within its second.
    assert_eq!(series(&kache, "kache_resource_ready", &["resource=\"nodes\""]), 0.0);
    let stale = |k: &Process| series(k, "kache_requests_total", &["resource=\"nodes\"", "reason=\"stale\""]);
    let before = stale(&kache);
    assert_eq!(kache.get("/api/v1/nodes?resourceVersion=0").status, 503, "passed through to an apiserver that is gone");
    assert_eq!(stale(&kache), before + 1.0);
    eventually(Duration::from_secs(30), "one log line of the change", || {
        let log = kache.log();
        let lines: Vec<&str> = log.lines().filter(|l| l.contains("stale: not ready") && l.contains("resource=nodes")).collect();
        (lines.len() == 1).then_some(())
    });
}

#[test]
fn the_demo_stays_ready_tells_what_came_from_memory_and_logs_its_stop() {
    let mut demo = Process::logged("demo", &["--pods", "200", "--churn", "20", "--max-staleness", "6"]);
    stays_ready(&demo, "nodes", "/api/v1/nodes?resourceVersion=0", Duration::from_secs(20));
    // Its hint: `curl -s URL/metrics | grep '^kache_requests_total'` shows where reads went and why.
    let metrics = demo.get("/metrics").text();
    let hint: Vec<&str> = metrics.lines().filter(|l| l.starts_with("kache_requests_total")).collect();
    assert!(hint.iter().any(|l| l.contains("source=\"memory\"")), "{hint:?}");
    assert!(hint.iter().all(|l| l.contains("reason=")), "{hint:?}");
    let pid = demo.pid().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    assert!(demo.wait(Duration::from_secs(120)).success());
    assert!(demo.log().contains("shutting down"), "{}", demo.log());
}

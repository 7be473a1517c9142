//! Watches served by kache from memory, as real processes in front of the
//! simulator: every stream a client gets through kache equals the stream
//! the simulator itself gives for the same revision and selectors, byte for
//! byte (transitions included), through upstream faults; upstream sees one
//! watch per resource however many clients watch.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::watching::{self, Lines, frame_rv, frame_type, is_bookmark};
use common::{Process, eventually};
use serde_json::json;

fn ready(kache: &Process) {
    eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
}

/// A sample of kache's `/metrics` (the first line that starts with `name`).
fn metric(kache: &Process, name: &str) -> u64 {
    let text = kache.get("/metrics").text();
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.rsplit(' ').next()).and_then(|v| v.parse().ok()))
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
}

/// The revision kache's store has reached for `resource` (an empty list at `resourceVersion=0`).
fn kache_revision(kache: &Process, collection: &str) -> u64 {
    let r = kache.get(&format!("{collection}?resourceVersion=0&labelSelector=kache-test%3Dnone"));
    r.json()["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).expect("a list revision")
}

/// Stops the simulator's writes and waits until kache has every event; returns the final revision.
fn quiesce(sim: &Process, kache: &Process, collection: &str) -> u64 {
    assert_eq!(sim.request("POST", "/_sim/churn?rate=0", &[], None).status, 200);
    std::thread::sleep(Duration::from_millis(100));
    let last = sim.revision();
    eventually(Duration::from_secs(30), "kache to reach the simulator's revision", || {
        (kache_revision(kache, collection) >= last).then_some(())
    });
    last
}

/// A list item as the ADDED event of a pod.
fn added(item: &serde_json::Value) -> serde_json::Value {
    let mut object = serde_json::Map::new();
    object.insert("kind".into(), "Pod".into());
    object.insert("apiVersion".into(), "v1".into());
    object.extend(item.as_object().expect("an object").clone());
    json!({"type": "ADDED", "object": object})
}

fn parse(line: &[u8]) -> serde_json::Value {
    serde_json::from_slice(line).expect("a JSON frame")
}

/// What one watcher asked for.
#[derive(Debug, Clone)]
struct Shape {
    /// The collection path.
    path: String,
    /// Selectors (already escaped), without the revision parameters.
    selectors: String,
    /// `resourceVersion`.
    rv: u64,
    /// Initial events (`resourceVersion=0`'s default, or explicit).
    initial: Option<&'static str>,
    bookmarks: bool,
}

impl Shape {
    fn query(&self, timeout: u64) -> String {
        let mut q = format!("watch=1&resourceVersion={}&timeoutSeconds={timeout}", self.rv);
        if let Some(extra) = self.initial {
            q.push_str(extra);
        }
        if self.bookmarks {
            q.push_str("&allowWatchBookmarks=true");
        }
        if !self.selectors.is_empty() {
            q.push('&');
            q.push_str(&self.selectors);
        }
        q
    }
}

/// The mix of a big cluster's watchers: kubelets on their node, namespaced
/// controllers, cluster-wide informers, the scheduler's unscheduled pods,
/// label selectors that objects move in and out of, single objects.
fn shape(i: usize, starts: &[u64]) -> Shape {
    let pods = "/api/v1/pods".to_string();
    let (path, selectors) = match i % 10 {
        0..=3 => (pods, format!("fieldSelector=spec.nodeName%3Dnode-{:04}", i % 20)),
        4 => (format!("/api/v1/namespaces/ns-{:04}/pods", i % 4), String::new()),
        5 => (pods, String::new()),
        6 => (pods, "labelSelector=tier%3Dweb".into()),
        7 => (pods, "fieldSelector=spec.nodeName%3D".into()),
        8 => (pods, format!("fieldSelector=metadata.name%3Dapp-{:05}-{:07}", (i % 600) / 10, i % 600)),
        _ => (
            format!("/api/v1/namespaces/ns-{:04}/pods", i % 4),
            "labelSelector=tier%20in%20(db,cache)&fieldSelector=status.phase%3DRunning".into(),
        ),
    };
    let (rv, initial) = match i % 20 {
        10 => (0, Some("")),
        15 => (starts[0], Some("&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")),
        _ => (starts[i % starts.len()], None),
    };
    Shape { path, selectors, rv, initial, bookmarks: initial.is_some() || !i.is_multiple_of(3) }
}

/// One watcher's stream, checked on its own: the initial state (if asked)
/// is the simulator's state at the revision of the initial-events-end
/// bookmark; events are in strictly increasing revision order; bookmarks
/// never go back. What remains to compare is the events after `start`.
struct Examined {
    start: u64,
    events: Vec<Bytes>,
}

fn examine(sim: &Process, shape: &Shape, got: &Lines) -> Examined {
    assert_eq!(got.status, 200, "{shape:?}");
    let mut lines = got.lines.as_slice();
    let mut start = shape.rv;
    if shape.initial.is_some() {
        let end = lines.iter().position(|l| is_bookmark(l)).unwrap_or_else(|| panic!("{shape:?}: no initial-events-end bookmark"));
        assert!(String::from_utf8_lossy(&lines[end]).contains(r#""annotations":{"k8s.io/initial-events-end":"true"}"#));
        start = frame_rv(&lines[end]);
        assert!(start >= shape.rv);
        let list = sim.get(&format!("{}?resourceVersion={start}&resourceVersionMatch=Exact&{}", shape.path, shape.selectors)).json();
        let want: Vec<serde_json::Value> = list["items"].as_array().expect("items").iter().map(added).collect();
        let initial: Vec<serde_json::Value> = lines[..end].iter().map(|l| parse(l)).collect();
        assert!(initial == want, "{shape:?}: the initial events are not the state at {start}");
        lines = &lines[end + 1..];
    }
    let mut last = start;
    let mut events = Vec::new();
    for l in lines {
        let rv = frame_rv(l);
        if is_bookmark(l) {
            assert!(shape.bookmarks, "{shape:?}: a bookmark it did not allow");
            assert!(rv >= last, "{shape:?}: a bookmark at {rv} after an event at {last}");
        } else {
            assert!(rv > last, "{shape:?}: {} at {rv} after {last}: out of order or duplicated", frame_type(l));
            events.push(l.clone());
        }
        last = rv;
    }
    Examined { start, events }
}

/// The simulator's own watch for `shape` from `start`, once writes have stopped: every event since.
fn sim_watch_url(sim: &Process, shape: &Shape, start: u64) -> String {
    format!("{}{}?watch=1&resourceVersion={start}&timeoutSeconds=1&{}", sim.url, shape.path, shape.selectors)
}

/// Checks every watcher's stream against the simulator's (fetched once per
/// distinct request, concurrently); returns how many events were compared.
async fn check_against_sim(sim: &Process, shapes: &[Shape], got: &[Lines], client: &watching::Watcher) -> usize {
    let examined: Vec<Examined> = shapes.iter().zip(got).map(|(shape, lines)| examine(sim, shape, lines)).collect();
    let urls: std::collections::BTreeSet<String> = shapes.iter().zip(&examined).map(|(s, e)| sim_watch_url(sim, s, e.start)).collect();
    let fetches: Vec<_> = urls
        .into_iter()
        .map(|url| {
            let client = client.clone();
            tokio::spawn(async move { (url.clone(), watching::watch(&client, &url, Duration::from_secs(30)).await) })
        })
        .collect();
    let mut want = BTreeMap::new();
    for f in fetches {
        let (url, lines) = f.await.expect("the simulator's watch ran");
        want.insert(url, lines.lines);
    }
    let mut compared = 0;
    for (shape, e) in shapes.iter().zip(&examined) {
        let want = &want[&sim_watch_url(sim, shape, e.start)];
        assert!(
            e.events == *want,
            "{shape:?}: kache sent {} events, the simulator {} from {}; first difference at {:?}",
            e.events.len(),
            want.len(),
            e.start,
            e.events.iter().zip(want).position(|(a, b)| a != b)
        );
        compared += e.events.len();
    }
    compared
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_watchers_get_exactly_the_simulators_streams_through_upstream_faults() {
    let sim = Process::sim(&["--pods", "600", "--nodes", "20", "--namespaces", "4", "--churn", "40", "--compact-interval", "0"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods", "--bookmark-interval", "1", "--watch-timeout", "3"]);
    ready(&kache);
    let mut starts = Vec::new();
    for _ in 0..4 {
        starts.push(kache_revision(&kache, "/api/v1/pods"));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let client = watching::client();
    let shapes: Vec<Shape> = (0..1000).map(|i| shape(i, &starts)).collect();
    let url = kache.url.clone();
    let streams: Vec<_> = shapes
        .iter()
        .map(|s| {
            let (client, url) = (client.clone(), format!("{url}{}?{}", s.path, s.query(20)));
            tokio::spawn(async move { watching::watch(&client, &url, Duration::from_secs(40)).await })
        })
        .collect();
    eventually(Duration::from_secs(30), "every watcher registered", || (metric(&kache, "kache_watchers{") == 1000).then_some(()));
    // The restart is a peer's whose watch cache reaches back (kache resumes; `kache_restart.rs` has one that does not).
    for fault in ["/_sim/drop-watches", "/_sim/stall?seconds=1", "/_sim/restart?reinit-seconds=1&cache=kept", "/_sim/drop-watches"] {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(sim.request("POST", fault, &[], None).status, 200, "{fault}");
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    quiesce(&sim, &kache, "/api/v1/pods");
    let mut got = Vec::new();
    for stream in streams {
        got.push(stream.await.expect("the watcher ran"));
    }
    assert_eq!(metric(&kache, "kache_watches_served_total"), 1000);
    // One upstream watch per resource, plus its resumptions after each fault and timeout.
    let upstream = sim.served("pods", "watch");
    assert_eq!(upstream, metric(&kache, "kache_upstream_watches_total{"), "every upstream watch is the reflector's");
    assert!((2..40).contains(&upstream), "the simulator served {upstream} pod watches");
    let compared = check_against_sim(&sim, &shapes, &got, &client).await;
    assert!(compared > 10_000, "only {compared} events compared: the churn did not reach the watchers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_stops_reading_is_closed_and_the_others_stay_exact() {
    let sim = Process::sim(&["--pods", "300", "--nodes", "5", "--namespaces", "2", "--churn", "400", "--compact-interval", "0"]);
    // A queue of 256 frames: the stuck watcher fills it in well under a second at
    // this churn, while the reader, on a loaded machine, may pause that long.
    let kache = Process::kache(&sim.url, &["--resources", "pods", "--watch-queue", "256"]);
    ready(&kache);
    let start = kache_revision(&kache, "/api/v1/pods");
    let addr = kache.url.trim_start_matches("http://").to_string();
    let mut stuck = std::net::TcpStream::connect(&addr).expect("connects");
    write!(stuck, "GET /api/v1/pods?watch=1&resourceVersion={start} HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("sends");
    let client = watching::client();
    let shape = Shape { path: "/api/v1/pods".into(), selectors: String::new(), rv: start, initial: None, bookmarks: true };
    // The reader's stream must outlive the churn, however slow a busy machine makes the steps below.
    let url = format!("{}{}?{}", kache.url, shape.path, shape.query(60));
    let reader = tokio::spawn({
        let client = client.clone();
        async move { watching::watch(&client, &url, Duration::from_secs(120)).await }
    });
    eventually(Duration::from_secs(60), "the stuck watcher to be closed", || {
        (metric(&kache, "kache_watchers_closed_slow_total{") >= 1).then_some(())
    });
    quiesce(&sim, &kache, "/api/v1/pods");
    let got = reader.await.expect("the reader ran");
    assert!(check_against_sim(&sim, &[shape], &[got], &client).await > 100);
    eventually(Duration::from_secs(60), "both watchers gone", || (metric(&kache, "kache_watchers{") == 0).then_some(()));
    drop(stuck);
}

/// The same request to kache and to the simulator: status and body.
fn both(sim: &Process, kache: &Process, path: &str) -> (common::Resp, common::Resp) {
    (kache.get(path), sim.get(path))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_shapes_and_errors_are_the_apiservers() {
    let sim = Process::sim(&["--pods", "50", "--nodes", "2", "--namespaces", "2", "--churn", "50", "--compact-interval", "0"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,configmaps", "--max-events", "20", "--wait-ms", "300"]);
    ready(&kache);
    let first = kache_revision(&kache, "/api/v1/pods");

    // Refusals before the stream: the apiserver's Status bodies.
    for query in [
        "watch=1&resourceVersion=5&resourceVersionMatch=NotOlderThan",
        "watch=1&sendInitialEvents=true",
        "watch=1&fieldSelector=spec.bogus%3Dx",
        "watch=1&resourceVersion=x",
    ] {
        let (k, s) = both(&sim, &kache, &format!("/api/v1/pods?{query}"));
        assert_eq!((k.status, k.text()), (s.status, s.text()), "{query}");
    }

    // Older than kache's window (20 events): HTTP 200 and one ERROR 410.
    eventually(Duration::from_secs(60), "the window to move", || (kache_revision(&kache, "/api/v1/pods") > first + 40).then_some(()));
    let client = watching::client();
    let old =
        watching::watch(&client, &format!("{}/api/v1/pods?watch=1&resourceVersion={first}", kache.url), Duration::from_secs(10)).await;
    assert_eq!((old.status, old.lines.len()), (200, 1), "{old:?}");
    let status: serde_json::Value = serde_json::from_slice(&old.lines[0]).expect("JSON");
    assert_eq!((status["type"].as_str(), status["object"]["code"].as_u64()), (Some("ERROR"), Some(410)));
    assert_eq!(status["object"]["reason"], "Expired");
    assert!(status["object"]["message"].as_str().unwrap_or("").starts_with(&format!("too old resource version: {first} (")));
    // Streamed as the apiserver streams it on HTTP/1.1: chunked, no length.
    let expired = kache.get(&format!("/api/v1/pods?watch=1&resourceVersion={first}"));
    assert_eq!((expired.status, expired.header("transfer-encoding"), expired.header("content-length")), (200, Some("chunked"), None));

    // No revision: a consistent start, from memory once kache proves itself fresh, else upstream.
    let answered = metric(&kache, "kache_watches_passed_through_total") + metric(&kache, "kache_watches_served_total");
    let consistent = watching::watch(
        &client,
        &format!("{}/api/v1/namespaces/ns-0001/pods?watch=1&timeoutSeconds=1", kache.url),
        Duration::from_secs(10),
    )
    .await;
    assert!(consistent.lines.iter().any(|l| frame_type(l) == "ADDED"));
    assert_eq!(metric(&kache, "kache_watches_passed_through_total") + metric(&kache, "kache_watches_served_total"), answered + 1);

    // Initial events at a revision kache does not reach in time: passed through, and the simulator's ERROR 504.
    let future = sim.revision() + 1_000_000;
    let url =
        format!("{}/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={future}", kache.url);
    let late = watching::watch(&client, &url, Duration::from_secs(15)).await;
    assert_eq!(late.lines.len(), 1);
    assert!(String::from_utf8_lossy(&late.lines[0]).contains("Too large resource version"));

    // Selector transitions, byte for byte: a configmap leaves and re-enters `tier=web`.
    assert_eq!(sim.request("POST", "/_sim/churn?rate=0", &[], None).status, 200);
    let created = sim.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "moving", "labels": {"tier": "web"}}}));
    assert_eq!(created.status, 201);
    let from = created.json()["metadata"]["resourceVersion"].as_str().expect("a revision").to_string();
    for tier in ["db", "web", "db"] {
        let patch = json!({"metadata": {"labels": {"tier": tier}}}).to_string();
        let r = sim.request(
            "PATCH",
            "/api/v1/namespaces/default/configmaps/moving",
            &[("content-type", "application/merge-patch+json")],
            Some(patch.as_bytes()),
        );
        assert_eq!(r.status, 200);
    }
    assert_eq!(sim.request("DELETE", "/api/v1/namespaces/default/configmaps/moving", &[], None).status, 200);
    quiesce(&sim, &kache, "/api/v1/configmaps");
    let path = format!("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={from}&timeoutSeconds=1&labelSelector=tier%3Dweb");
    let (k, s) = (
        watching::watch(&client, &format!("{}{path}", kache.url), Duration::from_secs(10)).await,
        watching::watch(&client, &format!("{}{path}", sim.url), Duration::from_secs(10)).await,
    );
    let types: Vec<&str> = k.lines.iter().map(|l| frame_type(l)).collect();
    assert_eq!(types, ["DELETED", "ADDED", "DELETED"]);
    assert_eq!(k.lines, s.lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_ends_every_watch_cleanly_and_new_watches_see_the_new_state() {
    let sim = Process::sim(&["--pods", "100", "--nodes", "2", "--namespaces", "2", "--churn", "20"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods"]);
    ready(&kache);
    let client = watching::client();
    let start = kache_revision(&kache, "/api/v1/pods");
    let url = format!("{}/api/v1/pods?watch=1&resourceVersion={start}&allowWatchBookmarks=true", kache.url);
    let watchers: Vec<_> = (0..20)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { watching::watch(&client, &url, Duration::from_secs(60)).await })
        })
        .collect();
    eventually(Duration::from_secs(60), "the watchers registered", || (metric(&kache, "kache_watchers{") == 20).then_some(()));
    let lists = metric(&kache, "kache_upstream_lists_total{");
    // etcd restored from a snapshot: revisions go back, kache re-lists.
    assert_eq!(sim.request("POST", "/_sim/restart?reset=true", &[], None).status, 200);
    eventually(Duration::from_secs(30), "kache to re-list", || (metric(&kache, "kache_upstream_lists_total{") > lists).then_some(()));
    for w in watchers {
        let got = tokio::time::timeout(Duration::from_secs(10), w).await.expect("the stream ends").expect("the watcher ran");
        assert!(got.lines.iter().all(|l| frame_type(l) != "ERROR"), "the apiserver ends watches on a re-list without an ERROR");
    }
    let last = quiesce(&sim, &kache, "/api/v1/pods");
    let fresh =
        watching::watch(&client, &format!("{}/api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=1", kache.url), Duration::from_secs(10))
            .await;
    let list = sim.get(&format!("/api/v1/pods?resourceVersion={last}&resourceVersionMatch=Exact")).json();
    let want: Vec<serde_json::Value> = list["items"].as_array().expect("items").iter().map(added).collect();
    let got: Vec<serde_json::Value> = fresh.lines.iter().map(|l| parse(l)).collect();
    assert!(got == want, "a new watch starts from the re-listed state");
}

#[test]
fn kubectl_watches_through_kache() {
    let sim = Process::sim(&["--pods", "20", "--nodes", "2", "--namespaces", "2"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,configmaps"]);
    ready(&kache);
    let served = metric(&kache, "kache_watches_served_total");
    let spawn = |args: &[&str]| {
        let mut cmd = std::process::Command::new("kubectl");
        cmd.arg("--server").arg(&kache.url).args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
        cmd.env("KUBECONFIG", "/dev/null").env("HOME", std::env::temp_dir());
        cmd.spawn().expect("kubectl runs")
    };
    // JSON output: kubectl lists (passed through: no revision), then watches from the list's revision (from memory).
    let mut json_watch = spawn(&["get", "configmaps", "-n", "default", "-w", "-o", "json", "--output-watch-events"]);
    // Table output: kubectl asks for tables, lists and watches both answered from memory.
    let mut table_watch = spawn(&["get", "configmaps", "-n", "default", "-w", "--output-watch-events"]);
    eventually(Duration::from_secs(60), "kubectl's two watches from memory", || {
        (metric(&kache, "kache_watches_served_total") >= served + 2).then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(sim.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "watched"}})).status, 201);
    std::thread::sleep(Duration::from_secs(2));
    let _ = (json_watch.kill(), table_watch.kill());
    let json_out = String::from_utf8(json_watch.wait_with_output().expect("output").stdout).expect("UTF-8");
    let table_out = String::from_utf8(table_watch.wait_with_output().expect("output").stdout).expect("UTF-8");
    assert!(json_out.lines().any(|l| l.contains("\"type\":\"ADDED\"") && l.contains("\"name\":\"watched\"")), "{json_out}");
    assert!(table_out.lines().any(|l| l.starts_with("ADDED") && l.contains("watched")), "{table_out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_reflectors_through_kache_converge_to_the_simulators_state() {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::Pod;
    use kube::runtime::{WatchStreamExt, reflector, watcher};

    let sim = Process::sim(&["--pods", "300", "--nodes", "3", "--namespaces", "3", "--churn", "100", "--compact-interval", "0"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods"]);
    ready(&kache);
    let client = kube::Client::try_from(kube::Config::new(kache.url.parse().expect("a URL"))).expect("a client");
    let api: kube::Api<Pod> = kube::Api::all(client);
    let mut stores = Vec::new();
    let mut tasks = Vec::new();
    for config in [watcher::Config::default(), watcher::Config::default().streaming_lists()] {
        let (reader, writer) = reflector::store::<Pod>();
        // As kube-rs advises: without a backoff a watcher retries a refused connection in a busy loop.
        let stream = reflector(writer, watcher(api.clone(), config).default_backoff()).applied_objects();
        tasks.push(tokio::spawn(stream.for_each(|_| async {})));
        stores.push(Arc::new(reader));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let last = quiesce(&sim, &kache, "/api/v1/pods");
    let list = sim.get(&format!("/api/v1/pods?resourceVersion={last}&resourceVersionMatch=Exact")).json();
    let want: BTreeMap<String, String> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|p| (format!("{}/{}", p["metadata"]["namespace"], p["metadata"]["name"]), p["metadata"]["resourceVersion"].to_string()))
        .collect();
    for store in stores {
        eventually(Duration::from_secs(30), "the reflector to converge", || {
            let got: BTreeMap<String, String> = store
                .state()
                .iter()
                .map(|p| {
                    let m = &p.metadata;
                    (
                        format!("\"{}\"/\"{}\"", m.namespace.clone().unwrap_or_default(), m.name.clone().unwrap_or_default()),
                        format!("\"{}\"", m.resource_version.clone().unwrap_or_default()),
                    )
                })
                .collect();
            (got == want).then_some(())
        });
    }
    // kube-rs opens its streaming list at `resourceVersion=0`, so both reflectors' watches come from memory.
    assert!(metric(&kache, "kache_watches_served_total") >= 2);
    // Upstream's pod watches are kache's own: its reflector's, and catch-ups proving a quiet store fresh.
    let own = metric(&kache, "kache_upstream_watches_total{") + metric(&kache, "kache_freshness_catch_ups_total{");
    assert_eq!(sim.served("pods", "watch"), own, "no client watch reached upstream");
    tasks.iter().for_each(tokio::task::JoinHandle::abort);
}

/// A simulator churning 300 pods, kache in front of it, and a revision both have reached.
fn churning_pods() -> (Process, Process, u64) {
    let sim = Process::sim(&["--pods", "300", "--nodes", "3", "--namespaces", "3", "--churn", "200", "--compact-interval", "0"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods"]);
    ready(&kache);
    let from = sim.revision();
    eventually(Duration::from_secs(30), "kache at the start revision", || (kache_revision(&kache, "/api/v1/pods") >= from).then_some(()));
    (sim, kache, from)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_watches_are_answered_from_memory_as_the_simulator_answers_them() {
    const META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let (sim, kache, from) = churning_pods();
    let served = metric(&kache, "kache_watches_served_total");
    let queries = [
        format!("resourceVersion={from}"),
        format!("resourceVersion={from}&labelSelector=tier%3Dweb"),
        format!("resourceVersion={from}&fieldSelector=spec.nodeName%3Dnode-0001"),
        "resourceVersion=0&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&labelSelector=tier%3Ddb".to_string(),
    ];
    let client = watching::client();
    let mut tasks = Vec::new();
    for q in &queries {
        for base in [&kache.url, &sim.url] {
            let (client, url) = (client.clone(), format!("{base}/api/v1/pods?watch=1&timeoutSeconds=6&{q}"));
            tasks.push(tokio::spawn(async move { watching::watch_accepting(&client, &url, Some(META), Duration::from_secs(20)).await }));
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let last = quiesce(&sim, &kache, "/api/v1/pods");
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.expect("a watch"));
    }
    for (q, pair) in queries.iter().zip(answers.chunks(2)) {
        let (k, s) = (&pair[0], &pair[1]);
        assert_eq!((k.status, s.status), (200, 200), "{q}");
        let upto = |lines: &[Bytes]| -> Vec<Bytes> { lines.iter().filter(|l| !is_bookmark(l) && frame_rv(l) <= last).cloned().collect() };
        let (k_lines, s_lines) = (upto(&k.lines), upto(&s.lines));
        assert!(k_lines.len() > 10, "{q}: only {} events", k_lines.len());
        assert!(
            k_lines.iter().all(|l| parse(l)["object"]["kind"] == "PartialObjectMetadata" && parse(l)["object"].get("spec").is_none()),
            "{q}"
        );
        if q.starts_with("resourceVersion=0") {
            // Initial events from a revision each server picked itself: the same objects, as metadata.
            let names = |lines: &[Bytes]| lines.iter().filter(|l| frame_type(l) == "ADDED").count();
            assert!(names(&k_lines) > 0 && names(&s_lines) > 0, "{q}");
            continue;
        }
        assert!(k_lines == s_lines, "{q}: kache's {} events differ from the simulator's {}", k_lines.len(), s_lines.len());
    }
    assert_eq!(metric(&kache, "kache_watches_served_total"), served + queries.len() as u64, "every watch from memory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_watches_are_the_objects_stream_as_one_row_tables() {
    use apimachinery::table::{IncludeObject, json_watch_table, printer};
    const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let (sim, kache, from) = churning_pods();
    let served = metric(&kache, "kache_watches_served_total");
    let client = watching::client();
    let query = format!("/api/v1/pods?watch=1&timeoutSeconds=5&resourceVersion={from}&labelSelector=tier%3Dweb");
    let (k_url, s_url) = (format!("{}{query}", kache.url), format!("{}{query}", sim.url));
    let (k, s) = tokio::join!(
        watching::watch_accepting(&client, &k_url, Some(TABLE), Duration::from_secs(20)),
        watching::watch_accepting(&client, &s_url, None, Duration::from_secs(20)),
    );
    assert_eq!(metric(&kache, "kache_watches_served_total"), served + 1, "the table watch from memory");
    let last = quiesce(&sim, &kache, "/api/v1/pods");
    let pods = printer("", "pods").expect("a pod printer");
    // The simulator's JSON events as Tables, ages blanked (each side computes its own).
    let ageless = |line: &[u8]| {
        let mut v = parse(line);
        v["object"]["rows"][0]["cells"][4] = serde_json::Value::Null;
        v
    };
    let want: Vec<serde_json::Value> = s
        .lines
        .iter()
        .filter(|l| frame_rv(l) <= last)
        .enumerate()
        .map(|(i, l)| {
            let frame = parse(l);
            let object = Bytes::from(serde_json::to_vec(&frame["object"]).expect("JSON"));
            let table = json_watch_table(
                apimachinery::partial::MetaVersion::V1,
                &pods,
                IncludeObject::Metadata,
                &object,
                &apimachinery::resource::builtin("", "v1", "pods").unwrap().resource(),
                i == 0,
                0,
            )
            .expect("a row");
            let line =
                apimachinery::watch::json_frame(apimachinery::watch::EventType::Added, &table.iter().map(|p| &p[..]).collect::<Vec<_>>());
            let mut v = ageless(&line[..line.len() - 1]);
            v["type"] = frame["type"].clone();
            v
        })
        .collect();
    let got: Vec<serde_json::Value> = k.lines.iter().filter(|l| frame_rv_table(l) <= last).map(|l| ageless(l)).collect();
    assert!(got.len() > 10, "only {} events", got.len());
    assert_eq!(got[0]["object"]["columnDefinitions"].as_array().map(Vec::len), Some(9), "the first event carries the columns");
    assert!(got[1..].iter().all(|e| e["object"]["columnDefinitions"].is_null()), "later events do not");
    assert_eq!(got.len().min(want.len()), got.len(), "kache sent no event the simulator did not");
    assert_eq!(got, want[..got.len()], "the same events, as tables");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_watches_with_bookmarks_print_each_bookmark_as_the_kinds_empty_row() {
    use apimachinery::table::printer;
    const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let (_sim, kache, _from) = churning_pods();
    let served = metric(&kache, "kache_watches_served_total");
    let client = watching::client();
    // The initial events, their end's bookmark, then events, and the last bookmark 2 s before the deadline.
    let url = format!(
        "{}/api/v1/pods?watch=1&timeoutSeconds=5&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0&labelSelector=tier%3Ddb&includeObject=Object",
        kache.url
    );
    let k = watching::watch_accepting(&client, &url, Some(TABLE), Duration::from_secs(20)).await;
    assert_eq!(metric(&kache, "kache_watches_served_total"), served + 1, "the table watch with bookmarks from memory");
    let frames: Vec<serde_json::Value> = k.lines.iter().map(|l| parse(l)).collect();
    let bookmarks: Vec<&serde_json::Value> = frames.iter().filter(|f| f["type"] == "BOOKMARK").collect();
    assert!(bookmarks.len() >= 2, "the initial-events-end bookmark and the last one: {} of {} frames", bookmarks.len(), frames.len());
    let first = frames.iter().position(|f| f["type"] == "BOOKMARK").unwrap();
    assert!(first > 0 && frames[..first].iter().all(|f| f["type"] == "ADDED"), "the initial events come first");
    assert!(frames[0]["object"]["columnDefinitions"].is_array() && frames[1..].iter().all(|f| f["object"]["columnDefinitions"].is_null()));
    // A bookmark is a Table of one row: the printer's row of the kind's empty object at the bookmark's revision.
    let pod = apimachinery::resource::builtin("", "v1", "pods").unwrap().resource();
    let pods = printer("", "pods").expect("a pod printer");
    for (i, b) in bookmarks.iter().enumerate() {
        let table = &b["object"];
        let rv: u64 = table["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).expect("a revision");
        assert_eq!((table["kind"].as_str(), table["rows"].as_array().map(Vec::len)), (Some("Table"), Some(1)), "{table}");
        let empty = apimachinery::watch::bookmark_object(&pod, rv, i == 0);
        let cells: Vec<serde_json::Value> = pods
            .row(&empty, 0)
            .expect("the empty pod's row")
            .cells
            .into_iter()
            .map(|c| match c {
                apimachinery::table::Cell::Str(s) => json!(s),
                apimachinery::table::Cell::Int(n) => json!(n),
                apimachinery::table::Cell::Raw(r) => serde_json::from_str(&r).unwrap(),
            })
            .collect();
        let row = &table["rows"][0];
        assert_eq!(row["cells"].as_array().unwrap(), &cells, "{row}");
        assert_eq!(row["cells"][0], "", "no name");
        // Asked for whole, a bookmark's object is the kind's empty object (the first ends the initial events).
        let object = &row["object"];
        assert_eq!(object, &serde_json::from_slice::<serde_json::Value>(&apimachinery::watch::bookmark_object(&pod, rv, i == 0)).unwrap());
        assert_eq!(object["metadata"]["annotations"]["k8s.io/initial-events-end"].as_str(), (i == 0).then_some("true"), "{object}");
    }
}

/// A table event's revision (its Table's `metadata.resourceVersion`).
fn frame_rv_table(line: &[u8]) -> u64 {
    parse(line)["object"]["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).expect("a revision")
}

#[test]
fn protobuf_watches_are_answered_from_memory_byte_equal_to_the_simulators() {
    // As typed client-go clients (kubelets, controllers) watch.
    const TYPED: &str = "application/vnd.kubernetes.protobuf, */*";
    let (sim, kache, from) = churning_pods();
    let served = metric(&kache, "kache_watches_served_total");
    let queries = [format!("resourceVersion={from}"), format!("resourceVersion={from}&fieldSelector=spec.nodeName%3Dnode-0001")];
    let streams: Vec<_> = queries
        .iter()
        .flat_map(|q| [kache.url.clone(), sim.url.clone()].map(|base| (base, q.clone())))
        .map(|(base, q)| {
            std::thread::spawn(move || {
                common::request(
                    &format!("{base}/api/v1/pods?watch=1&timeoutSeconds=5&allowWatchBookmarks=true&{q}"),
                    "GET",
                    &[("accept", TYPED)],
                    None,
                )
            })
        })
        .collect();
    let answers: Vec<_> = streams.into_iter().map(|t| t.join().expect("a watch")).collect();
    for (q, pair) in queries.iter().zip(answers.chunks(2)) {
        let (k, s) = (&pair[0], &pair[1]);
        assert_eq!(k.header("content-type"), Some("application/vnd.kubernetes.protobuf;stream=watch"), "{q}");
        assert_eq!(k.header("content-type"), s.header("content-type"), "{q}");
        // Events only (bookmarks come when each server's ticker says), each frame `len, {1: type, 2: {1: k8s\0…}}`.
        let events = |body: &[u8]| -> Vec<Vec<u8>> {
            let mut out = Vec::new();
            let mut at = 0;
            while at + 4 <= body.len() {
                let len = u32::from_be_bytes(body[at..at + 4].try_into().unwrap()) as usize;
                let frame = &body[at..(at + 4 + len).min(body.len())];
                if !frame[4..].starts_with(b"\x0a\x08BOOKMARK") {
                    out.push(frame.to_vec());
                }
                at += 4 + len;
            }
            out
        };
        let (ke, se) = (events(&k.body), events(&s.body));
        let common = ke.len().min(se.len());
        assert!(common > 5, "{q}: only {common} events");
        assert!(ke[..common] == se[..common], "{q}: kache's events differ from the simulator's");
        assert!(ke.iter().all(|f| f.windows(4).any(|w| w == b"k8s\0")), "{q}: every object is a k8s\\0 document");
    }
    assert_eq!(metric(&kache, "kache_watches_served_total"), served + queries.len() as u64, "every watch from memory");
}

/// An etcd transaction that changes several keys gives them one revision: a
/// lease's expiry deletes every Event attached to it at once, and upstream
/// sends one DELETED event a key, all at that revision. kache takes them as
/// they are — no re-list, no client watch ended — and its watchers get
/// exactly the simulator's events.
#[test]
fn events_deleted_by_one_lease_expiry_share_a_revision_and_end_nothing() {
    let sim = Process::sim(&["--pods", "0"]);
    let kache = Process::kache_over(&sim, &["--resources", "events"]);
    ready(&kache);
    let collection = "/api/v1/namespaces/default/events";
    for name in ["a", "b", "c"] {
        let event = json!({"metadata": {"name": name}, "involvedObject": {"kind": "Pod", "name": name, "namespace": "default"},
                           "reason": "Test", "message": name, "type": "Normal"});
        assert_eq!(sim.post(collection, &event).status, 201);
    }
    let from = quiesce(&sim, &kache, "/api/v1/events");
    let lists = metric(&kache, "kache_upstream_lists_total");
    let through_kache = kache.watch(&format!("{collection}?watch=1&resourceVersion={from}"));
    let from_sim = sim.watch(&format!("{collection}?watch=1&resourceVersion={from}"));
    let expired = sim.request("POST", "/_sim/expire?resource=events&namespace=default", &[], None).json();
    assert_eq!(expired["deleted"], 3, "{expired}");
    let revision = expired["revision"].as_u64().expect("the expiry's revision");
    let three = |w: &common::Watch| -> Vec<serde_json::Value> {
        (0..3).map(|_| w.next(Duration::from_secs(60)).expect("a DELETED event")).collect()
    };
    let want = three(&from_sim);
    let got = three(&through_kache);
    assert_eq!(got, want, "kache passes on the simulator's events");
    assert!(
        got.iter().all(|e| e["type"] == "DELETED"
            && e["object"]["metadata"]["resourceVersion"].as_str().and_then(|r| r.parse().ok()) == Some(revision)),
        "{got:?}"
    );
    // Later events still flow on the same stream, and kache never re-listed.
    let event =
        json!({"metadata": {"name": "d"}, "involvedObject": {"kind": "Pod", "name": "d", "namespace": "default"}, "reason": "Test"});
    assert_eq!(sim.post(collection, &event).status, 201);
    let next = through_kache.next(Duration::from_secs(60)).expect("the next event on the same watch");
    assert_eq!((next["type"].as_str(), next["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("d")));
    assert_eq!(metric(&kache, "kache_upstream_lists_total"), lists, "no re-list");
    assert!(through_kache.is_open());
}

/// The sum of kache's `name{…}` samples whose labels contain `labels`.
fn sampled(kache: &Process, name: &str, labels: &str) -> f64 {
    common::scrape(kache)
        .iter()
        .filter(|(series, _)| series.starts_with(&format!("{name}{{")) && series.contains(labels))
        .map(|(_, v)| v)
        .sum()
}

/// Quiet resources across compactions, beside a busy one: a quiet resource
/// with a watch cache upstream (namespaces) gets its revision moved by the
/// heartbeat's consistent read and the bookmark after it, so its watch
/// resumes past every compaction — no re-list; one served without a cache
/// (events: no bookmarks at all) re-lists after a compaction, finds what
/// kache held, and ends nothing. Client watches of both never end.
#[test]
fn quiet_resources_keep_their_watches_across_compactions() {
    let sim = Process::sim(&["--pods", "0", "--bookmark-interval", "1", "--compact-interval", "6"]);
    let kache = Process::kache_over(&sim, &["--resources", "namespaces,configmaps,events", "--max-staleness", "6"]);
    ready(&kache);
    let event = |name: &str| json!({"metadata": {"name": name}, "involvedObject": {"kind": "Pod", "name": name, "namespace": "default"}, "reason": "Test"});
    assert_eq!(sim.post("/api/v1/namespaces/default/events", &event("before")).status, 201);
    let from = quiesce(&sim, &kache, "/api/v1/events");
    let namespaces = kache.watch(&format!("/api/v1/namespaces?watch=1&resourceVersion={from}"));
    let events = kache.watch(&format!("/api/v1/events?watch=1&resourceVersion={from}"));
    // A busy resource moves etcd's revision on; three compactions pass it by.
    let busy = std::thread::spawn({
        let url = sim.url.clone();
        move || {
            for i in 0..400 {
                let cm = json!({"metadata": {"name": format!("busy-{i}")}});
                let r = common::request(
                    &format!("{url}/api/v1/namespaces/default/configmaps"),
                    "POST",
                    &[("content-type", "application/json")],
                    Some(cm.to_string().as_bytes()),
                );
                assert_eq!(r.status, 201);
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    });
    busy.join().expect("the writer");
    let compacted = sim.get("/_sim/stats").json()["oldest"].as_u64().unwrap_or(0);
    assert!(compacted > from, "the simulator compacted past the quiet resources' last change ({compacted} ≤ {from})");
    // Every upstream watch is dropped: each resumes from the revision kache holds.
    let watches = sampled(&kache, "kache_upstream_watches_total", "");
    assert_eq!(sim.request("POST", "/_sim/drop-watches", &[], None).status, 200);
    eventually(Duration::from_secs(60), "every upstream watch resumed, events' after a re-list", || {
        let resumed = sampled(&kache, "kache_upstream_watches_total", "") >= watches + 3.0;
        (resumed && sampled(&kache, "kache_upstream_relists_unchanged_total", "resource=\"events\"") >= 1.0).then_some(())
    });
    assert_eq!(sim.post("/api/v1/namespaces", &json!({"metadata": {"name": "after"}})).status, 201);
    assert_eq!(sim.post("/api/v1/namespaces/default/events", &event("after")).status, 201);
    let next = |w: &common::Watch, what: &str| {
        let e = w.next(Duration::from_secs(60)).unwrap_or_else(|| panic!("the {what} watch ended or got nothing"));
        (e["type"].as_str().map(String::from), e["object"]["metadata"]["name"].as_str().map(String::from))
    };
    assert_eq!(next(&namespaces, "namespaces"), (Some("ADDED".into()), Some("after".into())));
    assert_eq!(next(&events, "events"), (Some("ADDED".into()), Some("after".into())));
    assert_eq!(sampled(&kache, "kache_upstream_relists_total", "resource=\"namespaces\""), 0.0, "namespaces never re-listed");
    assert_eq!(sampled(&kache, "kache_upstream_relists_total", "resource=\"configmaps\""), 0.0, "configmaps never re-listed");
    let events_relisted = sampled(&kache, "kache_upstream_relists_total", "resource=\"events\",cause=\"compacted\"");
    let unchanged = sampled(&kache, "kache_upstream_relists_unchanged_total", "resource=\"events\"");
    assert!(events_relisted >= 1.0 && unchanged == events_relisted, "events re-listed {events_relisted}, unchanged {unchanged}");
    assert!(namespaces.is_open() && events.is_open());
}

/// Upstream sends Events' watches no bookmarks: once a watch showed that,
/// kache's next Event watch asks for an hour or two (each resumption after a
/// compaction re-lists), while a resource that gets bookmarks keeps its
/// `--watch-timeout`.
#[test]
fn a_resource_whose_watches_carry_no_bookmarks_gets_long_watches() {
    // Pods change (kache does not cache them), so upstream's revision moves on as a real cluster's does.
    let sim = Process::sim(&["--pods", "20", "--churn", "10", "--bookmark-interval", "1"]);
    let kache = Process::kache_over(&sim, &["--resources", "namespaces,events", "--max-staleness", "6", "--watch-timeout", "5"]);
    ready(&kache);
    let watches = |resource: &str| sampled(&kache, "kache_upstream_watches_total", &format!("resource=\"{resource}\""));
    // The first watches last 5–10 s, more than two heartbeats (2 s each); then Events' next asks for an hour.
    eventually(Duration::from_secs(60), "a second Event watch", || (watches("events") >= 2.0).then_some(()));
    let (events, namespaces) = (watches("events"), watches("namespaces"));
    eventually(Duration::from_secs(120), "namespaces' watches to be resumed twice more", || {
        (watches("namespaces") >= namespaces + 2.0).then_some(())
    });
    assert_eq!(watches("events"), events, "the Event watch lasts");
    assert_eq!(sampled(&kache, "kache_upstream_relists_total", ""), 0.0);
}

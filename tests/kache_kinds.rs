//! What kube-apiserver 1.36 does differently for some kinds, as kache does it
//! from memory, against the simulator doing the same:
//! `tests/reference/apiserver-1.36/events-uncached/` (events come from etcd,
//! not the apiserver's watch cache: `resourceVersion=0` lists paged, etcd's
//! continue tokens, no periodic bookmarks, nothing to prove a consistent
//! read by) and the deprecation `Warning` every endpoints answer carries
//! (`encodings/endpoints/*.meta`).

mod common;

use std::time::Duration;

use base64::Engine;
use common::{Process, eventually, scrape};
use serde_json::json;

fn metric(process: &Process, name: &str) -> f64 {
    scrape(process).iter().filter(|(k, _)| k.starts_with(name)).map(|(_, v)| v).sum()
}

fn frames(watch: &common::Watch, within: Duration) -> Vec<serde_json::Value> {
    let until = std::time::Instant::now() + within;
    let mut out = Vec::new();
    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
        match watch.next(left) {
            Some(f) => out.push(f),
            None => break,
        }
    }
    out
}

#[test]
fn events_and_endpoints_are_answered_as_the_apiserver_answers_them() {
    let sim = Process::sim(&["--namespaces", "1", "--nodes", "0", "--compact-interval", "0", "--bookmark-interval", "1"]);
    assert_eq!(sim.post("/api/v1/namespaces", &json!({"metadata": {"name": "k"}})).status, 201);
    let endpoints = json!({"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]});
    assert_eq!(sim.post("/api/v1/namespaces/k/endpoints", &endpoints).status, 201);
    for name in ["e-1", "e-2", "e-3"] {
        let event = json!({"metadata": {"name": name}, "involvedObject": {"kind": "Pod", "namespace": "k", "name": "p"}, "reason": "R"});
        assert_eq!(sim.post("/api/v1/namespaces/k/events", &event).status, 201);
    }
    let kache = Process::kache(&sim.url, &["--resources", "events,endpoints", "--bookmark-interval", "1", "--consistent-reads", "memory"]);
    eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    let (lists, gets) = (metric(&kache, "kache_lists_served_total"), metric(&kache, "kache_gets_served_total"));

    // Endpoints: deprecated, and every answer says so.
    let captured = std::fs::read_to_string(common::reference_dir().join("encodings/endpoints/list.json.meta")).unwrap();
    let warning = captured.lines().find_map(|l| l.strip_prefix("< Warning: ")).expect("the captured warning");
    for path in ["/api/v1/namespaces/k/endpoints?resourceVersion=0", "/api/v1/namespaces/k/endpoints/web?resourceVersion=0"] {
        let (k, s) = (kache.get(path), sim.get(path));
        assert_eq!((k.status, k.header("warning"), k.body.clone()), (s.status, s.header("warning"), s.body.clone()), "{path}");
        assert_eq!(k.header("warning"), Some(warning), "{path}");
    }

    // Events at any revision with a limit: paged, as etcd pages them, with etcd's tokens.
    let first = "/api/v1/namespaces/k/events?resourceVersion=0&limit=2";
    let (k, s) = (kache.get(first), sim.get(first));
    assert_eq!((k.status, k.text()), (s.status, s.text()));
    let page = k.json();
    assert_eq!(page["items"].as_array().map(Vec::len), Some(2), "{page}");
    let token = page["metadata"]["continue"].as_str().expect("a continue token");
    let decoded: serde_json::Value =
        serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).unwrap()).unwrap();
    assert_eq!(decoded["start"], "e-2\u{0}", "no leading slash: etcd's key prefix ends in one");
    let next = format!("/api/v1/namespaces/k/events?limit=2&continue={token}");
    let (k, s) = (kache.get(&next), sim.get(&next));
    assert_eq!((k.status, k.text()), (s.status, s.text()));
    assert_eq!(k.json()["items"][0]["metadata"]["name"], "e-3");
    let served = (metric(&kache, "kache_lists_served_total") - lists, metric(&kache, "kache_gets_served_total") - gets);
    assert_eq!(served, (3.0, 1.0), "the endpoints and the events from memory");

    // A consistent read of events: nothing proves kache fresh (etcd's watch sends no bookmarks), so upstream answers.
    let relayed =
        |kache: &Process| scrape(kache).iter().filter(|(k, _)| k.contains("not watch-cached upstream")).map(|(_, v)| v).sum::<f64>();
    assert_eq!(kache.get("/api/v1/namespaces/k/events").status, 200);
    assert_eq!(relayed(&kache), 1.0);

    // A watch that allows bookmarks: the initial events and the end of them, and no bookmark after, as the simulator
    // (whose bookmarks come every second, `--bookmark-interval 1`, to what it watch-caches) sends.
    let path = "/api/v1/namespaces/k/events?watch=1&resourceVersion=0&allowWatchBookmarks=true";
    let (k, s) = (frames(&kache.watch(path), Duration::from_secs(3)), frames(&sim.watch(path), Duration::from_secs(3)));
    assert_eq!(k, s);
    assert_eq!(k.iter().filter(|f| f["type"] == "BOOKMARK").count(), 1, "only the initial events' end: {k:?}");
}

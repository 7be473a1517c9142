//! The road to the apiserver: kache in front of the simulator over HTTPS
//! and HTTP/2, which allows 100 streams a connection as kube-apiserver does.
//! A thousand requests at once through kache never wait for each other:
//! kache opens the connections they need, as Go's transport does.
//!
//! Nothing here is timed. A stream that waited for another to end would
//! wait for ever — the watches below stay open for an hour — so the
//! behaviour is "every head arrives while every stream is still open";
//! the deadlines only turn a hang into a failure and are far beyond any
//! machine's load.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::Process;
use common::watching::h2c;
use http_body_util::{BodyExt, Empty};
use serde_json::json;

/// Requests sent at once.
const AT_ONCE: usize = 1_000;
/// Streams a client connection to kache carries (10 connections).
const PER_CONNECTION: usize = 100;
/// Turns a hang into a failure: no head that is coming takes this long.
const HANG: Duration = Duration::from_secs(300);

/// Sends `AT_ONCE` GETs of `paths(i)` to kache over h2c, all at once, and
/// returns each response once every head has arrived.
async fn all_at_once(kache: &str, paths: impl Fn(usize) -> String) -> Vec<hyper::Response<hyper::body::Incoming>> {
    let mut senders = Vec::new();
    for _ in 0..AT_ONCE / PER_CONNECTION {
        senders.push(h2c(kache).await.0);
    }
    let sends = (0..AT_ONCE).map(|i| {
        let mut sender = senders[i / PER_CONNECTION].clone();
        let req = hyper::Request::get(format!("{kache}{}", paths(i))).body(Empty::<Bytes>::new()).expect("a request");
        async move { sender.send_request(req).await.expect("a response") }
    });
    tokio::time::timeout(HANG, futures::future::join_all(sends))
        .await
        .unwrap_or_else(|_| panic!("not every one of {AT_ONCE} heads arrived: a request waits for another to end"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_pass_through_watches_start_at_once_and_each_gets_its_events() {
    let sim = Process::sim_https(&["--pods", "10", "--compact-interval", "0"]);
    // Configmaps are not cached: their watches pass through, each a stream upstream.
    let kache = Process::kache_over(&sim, &["--resources", "pods"]);
    common::eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    assert_eq!(kache.post("/api/v1/namespaces", &json!({"metadata": {"name": "w"}})).status, 201);
    let rv = kache.get("/api/v1/namespaces/w/configmaps").json()["metadata"]["resourceVersion"].as_str().expect("a revision").to_string();
    // An hour each: none ends while the others start.
    let watches =
        all_at_once(&kache.url, |_| format!("/api/v1/namespaces/w/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=3600")).await;
    assert!(watches.iter().all(|r| r.status() == 200));
    let m = common::scrape(&kache);
    assert!(m["kache_upstream_streams"] >= AT_ONCE as f64, "{} streams upstream", m["kache_upstream_streams"]);
    assert!(
        m["kache_upstream_connections"] >= (AT_ONCE / 100) as f64,
        "{} connections for {AT_ONCE} streams",
        m["kache_upstream_connections"]
    );
    // A write reaches every watch.
    assert_eq!(kache.post("/api/v1/namespaces/w/configmaps", &json!({"metadata": {"name": "seen"}})).status, 201);
    let events = watches.into_iter().map(|resp| async move {
        let mut body = resp.into_body();
        let mut got = Vec::new();
        while !got.ends_with(b"\n") {
            let frame = tokio::time::timeout(HANG, body.frame()).await.expect("the event, before the watch ends");
            got.extend_from_slice(&frame.expect("an open stream").expect("a frame").into_data().unwrap_or_default());
        }
        serde_json::from_slice::<serde_json::Value>(&got).expect("a watch event")
    });
    for e in futures::future::join_all(events).await {
        assert_eq!((e["type"].as_str(), e["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("seen")));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_consistent_reads_at_once_are_answered_without_waiting_for_each_other() {
    // An apiserver as slow as a real one (5 ms a consistent read), with pods being written.
    let sim = Process::sim_https(&[
        "--pods",
        "200",
        "--nodes",
        "4",
        "--churn",
        "50",
        "--compact-interval",
        "0",
        "--consistent-read-latency-ms",
        "5",
    ]);
    let kache = Process::kache_over(&sim, &["--resources", "pods"]);
    common::eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    let names: Vec<String> = kache.get("/api/v1/namespaces/ns-0000/pods?resourceVersion=0").json()["items"]
        .as_array()
        .expect("pods")
        .iter()
        .map(|p| p["metadata"]["name"].as_str().expect("a name").to_string())
        .collect();
    // GETs of one pod and pages of 10, without resourceVersion: from memory or upstream, whichever is sooner.
    let reads = all_at_once(&kache.url, |i| match i % 2 {
        0 => format!("/api/v1/namespaces/ns-0000/pods/{}", names[i % names.len()]),
        _ => "/api/v1/pods?limit=10".to_string(),
    })
    .await;
    for resp in reads {
        // Churn deletes pods: NotFound is then the fresh answer.
        assert!(matches!(resp.status().as_u16(), 200 | 404), "{}", resp.status());
        resp.into_body().collect().await.expect("the whole body");
    }
    // They did not queue behind one probe each: reads that chose memory shared probes.
    let m = common::scrape(&kache);
    let probes = m.get(r#"kache_freshness_probes_total{resource="pods"}"#).copied().unwrap_or(0.0);
    assert!(probes < (AT_ONCE / 2) as f64, "{probes} probes for {AT_ONCE} reads");
}

/// The watch-list an informer starts with: every object, then the initial-events-end bookmark.
const WATCH_LIST: &str = "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";

/// Reads a relayed watch-list's initial events: every pod, then its bookmark.
fn initial_events(watch: &common::Watch, pods: usize) {
    for i in 0..pods {
        let event = watch.next(HANG).unwrap_or_else(|| panic!("initial event {i} of {pods}"));
        assert_eq!(event["type"], "ADDED", "{event}");
    }
    let bookmark = watch.next(HANG).expect("the initial-events-end bookmark");
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}

#[test]
fn relays_take_lanes_small_ones_kept_connections_whole_collections_their_own_at_most_four() {
    const PODS: usize = 300;
    let sim = Process::sim_https(&["--pods", &PODS.to_string(), "--configmaps", "3"]);
    // Pods are not cached: every read of them is relayed.
    let kache = Process::kache_over(&sim, &["--resources", "configmaps"]);
    // Until it has discovered what it caches, kache answers 503 (as it starts), relaying nothing.
    common::eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    let lanes = || {
        let m = common::scrape(&kache);
        (m["kache_upstream_own_lanes"], m["kache_upstream_own_lanes_total"])
    };
    let list = kache.get("/api/v1/pods").json();
    assert_eq!(list["items"].as_array().unwrap_or_else(|| panic!("items: {list}")).len(), PODS, "the whole list, relayed");
    assert_eq!(lanes(), (0.0, 1.0), "a whole list took a lane and gave it back at its end");
    let kept = || {
        let m = common::scrape(&kache);
        (m["kache_upstream_kept_lanes"], m["kache_upstream_kept_lanes_total"])
    };
    let page = kache.get("/api/v1/pods?limit=10").json();
    assert_eq!(page["items"].as_array().expect("items").len(), 10);
    assert_eq!(lanes(), (0.0, 1.0), "a page is no whole collection");
    assert_eq!(kept(), (0.0, 1.0), "a page took a kept connection and gave it back");
    // More small reads at once than kept lanes (32): every one answered, the rest on HTTP/2.
    let names: Vec<String> =
        page["items"].as_array().expect("items").iter().map(|p| p["metadata"]["name"].as_str().expect("a name").to_string()).collect();
    std::thread::scope(|s| {
        for i in 0..40 {
            let (kache, name) = (&kache, &names[i % names.len()]);
            s.spawn(move || {
                let pod = kache.get(&format!("/api/v1/namespaces/ns-0000/pods/{name}"));
                assert_eq!((pod.status, pod.json()["metadata"]["name"].as_str()), (200, Some(name.as_str())));
            });
        }
    });
    let (in_use, taken) = kept();
    assert_eq!(in_use, 0.0, "every kept lane given back");
    assert!((2.0..=41.0).contains(&taken), "{taken} small relays took kept lanes");

    // Six informers start at once: four lanes, two streams on the shared connection; all whole.
    let watches: Vec<_> = (0..6).map(|_| kache.watch(WATCH_LIST)).collect();
    for watch in &watches {
        initial_events(watch, PODS);
    }
    assert_eq!(lanes(), (4.0, 5.0), "never more than four lanes");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "late", "namespace": "ns-0000"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    assert_eq!(kache.post("/api/v1/namespaces/ns-0000/pods", &pod).status, 201);
    for watch in &watches {
        let event = watch.next(HANG).expect("the live event");
        assert_eq!((event["type"].as_str(), event["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("late")));
    }
    // The watchers go away (their readers end at the next event): every lane is given back.
    drop(watches);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "later", "namespace": "ns-0000"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    assert_eq!(kache.post("/api/v1/namespaces/ns-0000/pods", &pod).status, 201);
    common::eventually(HANG, "every lane given back", || (lanes().0 == 0.0).then_some(()));
    let list = kache.get("/api/v1/pods").json();
    assert_eq!(list["items"].as_array().expect("items").len(), PODS + 2);
    assert_eq!(lanes(), (0.0, 6.0));
}

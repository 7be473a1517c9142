//! The apiserver restarts under kache: the simulator's restart, as
//! kube-apiserver 1.36's (every watch ends; its watch cache comes back at
//! the current revision, so a watch resumed from before it gets 410).
//! kache re-lists the resource once — at the revision the 410 names as the
//! oldest it still watches from, so writes since then reach kache as events
//! — keeps answering reads at any revision from the state it held while the
//! re-list runs, and, the re-list finding what it held, ends no client watch.

mod common;

use std::time::Duration;

use common::{Process, eventually, scrape};

fn metric(process: &Process, name: &str) -> f64 {
    scrape(process).iter().filter(|(k, _)| k.starts_with(name)).map(|(_, v)| v).sum()
}

#[test]
fn an_apiserver_restart_costs_one_relist_and_no_client_watch_while_reads_keep_coming_from_memory() {
    // Lists sent at 2 MB/s: the re-list of 2,000 pods takes seconds.
    let sim =
        Process::sim(&["--pods", "2000", "--nodes", "20", "--namespaces", "2", "--compact-interval", "0", "--list-mb-per-second", "2"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods"]);
    eventually(Duration::from_secs(120), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    let watch = kache.watch("/api/v1/pods?watch=1&resourceVersion=0&allowWatchBookmarks=true");
    let initial = (0..2000).filter_map(|_| watch.next(Duration::from_secs(30))).filter(|f| f["type"] == "ADDED").count();
    assert_eq!(initial, 2000);
    let (lists, served) = (metric(&kache, "kache_upstream_lists_total"), metric(&kache, "kache_lists_served_total"));

    // Other resources' writes move the revision past the pods' last event, as a cluster's leases do.
    let cm = serde_json::json!({"metadata": {"name": "moves-the-revision"}});
    assert_eq!(sim.post("/api/v1/namespaces/ns-0001/configmaps", &cm).status, 201);
    let first = sim.get("/api/v1/pods?limit=1").json()["items"][0]["metadata"].clone();
    let (name, ns) = (first["name"].as_str().expect("a pod").to_string(), first["namespace"].as_str().expect("a namespace").to_string());
    assert_eq!(sim.request("POST", "/_sim/restart?reinit-seconds=0.5", &[], None).status, 200);
    // A write as soon as the apiserver is back, before kache re-lists: kache lists at the revision the restarted
    // apiserver's 410 named, so the list finds what kache held, and the write reaches the client's watch as an event.
    let patch = br#"{"metadata":{"labels":{"restarted":"yes"}}}"#;
    let patched = sim.request(
        "PATCH",
        &format!("/api/v1/namespaces/{ns}/pods/{name}"),
        &[("content-type", "application/merge-patch+json")],
        Some(patch),
    );
    assert_eq!(patched.status, 200, "{}", patched.text());
    // While the re-list runs: ready, and reads at any revision from the state kache held.
    eventually(Duration::from_secs(60), "the re-list to start", || (metric(&kache, "kache_upstream_lists_total") > lists).then_some(()));
    assert_eq!(metric(&kache, "kache_upstream_relists_unchanged_total"), 0.0, "the re-list is still running");
    assert_eq!(kache.get("/readyz").status, 200);
    let page = kache.get("/api/v1/pods?resourceVersion=0&labelSelector=app%3Dapp-3");
    assert_eq!(page.status, 200);
    assert_eq!(metric(&kache, "kache_lists_served_total"), served + 1.0, "from memory");

    eventually(Duration::from_secs(120), "the re-list to end", || {
        (metric(&kache, "kache_upstream_relists_unchanged_total") == 1.0).then_some(())
    });
    assert_eq!(metric(&kache, "kache_upstream_lists_total"), lists + 1.0, "one re-list");
    assert!(scrape(&kache).iter().any(|(k, v)| k.contains("cause=\"compacted\"") && *v == 1.0), "after the restarted apiserver's 410");
    let event = (0..100).find_map(|_| watch.next(Duration::from_secs(30)).filter(|f| f["type"] != "BOOKMARK")).expect("the next event");
    assert_eq!((event["type"].as_str(), event["object"]["metadata"]["name"].as_str()), (Some("MODIFIED"), Some(name.as_str())));
}

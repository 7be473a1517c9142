//! Consistent reads through kache (no `resourceVersion`): whatever path
//! answers them — memory once kache proves it is fresh, or upstream — a
//! client always sees every write that returned before its read began, also
//! while kache's upstream watch is dropped, stalled or re-listing. Real
//! processes, real clients.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{Process, Resp, eventually};
use serde_json::{Value, json};

fn ready(kache: &Process) {
    eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
}

/// The sum of a counter family's samples whose line contains `filter`.
fn counter(kache: &Process, name: &str, filter: &str) -> u64 {
    kache
        .get("/metrics")
        .text()
        .lines()
        .filter(|l| l.starts_with(name) && l.contains(filter))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

fn ok(r: Resp, what: &str) -> Value {
    assert!((200..300).contains(&r.status), "{what}: {} {}", r.status, r.text());
    r.json()
}

/// `name → data.v` of the configmaps in a list, or of the ADDED objects of a streaming list.
fn versions(items: impl Iterator<Item = Value>) -> BTreeMap<String, String> {
    items
        .map(|o| (o["metadata"]["name"].as_str().unwrap_or_default().to_string(), o["data"]["v"].as_str().unwrap_or_default().to_string()))
        .collect()
}

/// A consistent streaming list (client-go's WatchList): the ADDED objects up to the initial-events-end bookmark.
fn streaming_list(kache: &Process, path: &str) -> BTreeMap<String, String> {
    let query = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2";
    // A restarting apiserver refuses watches with 429 for a moment; clients retry.
    let w = eventually(Duration::from_secs(10), "a watch accepted", || match kache.try_watch(&format!("{path}?{query}")) {
        Ok(w) => Some(w),
        Err(429) => None,
        Err(status) => panic!("watch {path}: {status}"),
    });
    let mut objects = Vec::new();
    loop {
        let e = w.next(Duration::from_secs(10)).expect("the initial events end");
        if e["type"] == "BOOKMARK" {
            assert_eq!(e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
            return versions(objects.into_iter());
        }
        assert_eq!(e["type"], "ADDED");
        objects.push(e["object"].clone());
    }
}

#[test]
fn every_consistent_read_sees_every_write_that_returned_before_it() {
    let sim = Process::sim(&["--pods", "50", "--nodes", "2", "--namespaces", "2", "--compact-interval", "0"]);
    // The trials are sequential, so a read never overlaps the next write: a
    // short budget sends reads kache cannot prove at once upstream instead of
    // waiting for an event that cannot come. No read may be stale, whichever path answers.
    let kache = Process::kache(&sim.url, &["--resources", "configmaps,pods", "--watch-timeout", "5", "--consistent-wait-ms", "10"]);
    ready(&kache);
    assert_eq!(sim.post("/api/v1/namespaces", &json!({"metadata": {"name": "rw"}})).status, 201);
    let cms = "/api/v1/namespaces/rw/configmaps";
    // What the test has written: the truth a consistent read must show.
    let mut want: BTreeMap<String, String> = BTreeMap::new();
    let trials: usize = std::env::var("KACHE_TRIALS").ok().and_then(|t| t.parse().ok()).unwrap_or(10_000);
    let started = Instant::now();
    for i in 0..trials {
        // Faults on the way: the upstream watch is dropped, stalled, or the apiserver restarts.
        match i % 2_000 {
            500 => assert_eq!(sim.request("POST", "/_sim/drop-watches", &[], None).status, 200),
            1_000 => assert_eq!(sim.request("POST", "/_sim/stall?seconds=0.3", &[], None).status, 200),
            1_500 => assert_eq!(sim.request("POST", "/_sim/restart?reinit-seconds=0.5", &[], None).status, 200),
            _ => {}
        }
        let name = format!("cm-{}", i % 7);
        let v = i.to_string();
        match i % 10 {
            // A write to the resource read: create, update or delete.
            0..=5 => {
                let body = json!({"metadata": {"name": name}, "data": {"v": v}});
                if want.contains_key(&name) && i % 3 == 0 {
                    ok(sim.request("DELETE", &format!("{cms}/{name}"), &[], None), "delete");
                    want.remove(&name);
                } else if want.contains_key(&name) {
                    let patch = json!({"data": {"v": v}}).to_string();
                    let r = sim.request(
                        "PATCH",
                        &format!("{cms}/{name}"),
                        &[("content-type", "application/merge-patch+json")],
                        Some(patch.as_bytes()),
                    );
                    ok(r, "update");
                    want.insert(name.clone(), v);
                } else {
                    ok(sim.post(cms, &body), "create");
                    want.insert(name.clone(), v);
                }
            }
            // A write elsewhere (another resource), or none.
            6..=7 => {
                let patch = json!({"metadata": {"annotations": {"trial": v}}}).to_string();
                let pod = "/api/v1/namespaces/ns-0000/pods/app-00000-0000000";
                ok(sim.request("PATCH", pod, &[("content-type", "application/merge-patch+json")], Some(patch.as_bytes())), "other");
            }
            _ => {}
        }
        // Another client reads, consistently: a list, a GET of each object, or a streaming list.
        match i % 3 {
            0 => {
                let got = ok(kache.get(cms), "list");
                let items = got["items"].as_array().cloned().unwrap_or_default();
                assert_eq!(versions(items.into_iter()), want, "trial {i}: a stale list");
            }
            1 => {
                let r = kache.get(&format!("{cms}/{name}"));
                match want.get(&name) {
                    Some(v) => assert_eq!(ok(r, "get")["data"]["v"].as_str(), Some(v.as_str()), "trial {i}: a stale GET of {name}"),
                    None => assert_eq!(r.status, 404, "trial {i}: {name} was deleted: {}", r.text()),
                }
            }
            _ if i % 30 == 2 => assert_eq!(streaming_list(&kache, cms), want, "trial {i}: a stale streaming list"),
            _ => {}
        }
    }
    let fresh = counter(&kache, "kache_consistent_reads_fresh_total", "configmaps");
    let passed = counter(&kache, "kache_consistent_reads_passed_through_total", "configmaps");
    eprintln!("{trials} trials in {:.1?}: {fresh} consistent reads of configmaps from memory, {passed} passed through", started.elapsed());
    // Six trials in ten write the resource read: those reads are proven fresh at once.
    assert!(
        fresh * 3 > fresh + passed,
        "consistent reads of a resource being written come from memory: only {fresh} of {}",
        fresh + passed
    );
}

#[test]
fn kubectl_paging_of_a_quiet_resource_is_served_from_memory_after_the_first_page() {
    let sim = Process::sim(&["--configmaps", "300", "--namespaces", "2", "--compact-interval", "0"]);
    let kache = Process::kache(&sim.url, &["--resources", "configmaps"]);
    ready(&kache);
    // Other resources move the global revision past the quiet configmaps.
    for i in 0..5 {
        assert_eq!(sim.post("/api/v1/namespaces", &json!({"metadata": {"name": format!("other-{i}")}})).status, 201);
    }
    let lists = counter(&kache, "kache_lists_served_total", "");
    let out = kache.kubectl_ok(&["get", "configmaps", "-A", "--chunk-size=20", "-o", "name"]);
    assert_eq!(out.lines().count(), 300);
    assert_eq!(out, sim.kubectl_ok(&["get", "configmaps", "-A", "--chunk-size=20", "-o", "name"]));
    // The first page (no revision) went upstream; the 14 continue pages at its revision came from memory.
    assert_eq!(counter(&kache, "kache_lists_served_total", "") - lists, 14);
    assert!(counter(&kache, "kache_freshness_proofs_total", "configmaps") >= 1, "a catch-up proved the quiet resource fresh");
}

#[test]
fn kubectl_and_client_go_style_reads_without_revision_come_from_memory_when_fresh() {
    let sim = Process::sim(&["--pods", "60", "--nodes", "3", "--namespaces", "2", "--churn", "100", "--compact-interval", "0"]);
    // A generous budget, so a loaded test machine does not make the proof miss it.
    let kache = Process::kache(&sim.url, &["--resources", "pods", "--consistent-wait-ms", "1000"]);
    ready(&kache);
    let fresh = counter(&kache, "kache_consistent_reads_fresh_total", "pods");
    let pods = kache.kubectl_ok(&["get", "pods", "-n", "ns-0001", "-o", "json"]);
    let listed: Value = serde_json::from_str(&pods).expect("JSON");
    let name = listed["items"][0]["metadata"]["name"].as_str().expect("a pod").to_string();
    // Churn may delete the pod between the list and the GET: NotFound is then the fresh answer.
    let one = kache.kubectl(&["get", "pod", &name, "-n", "ns-0001", "-o", "json"]);
    let (out, err) = (String::from_utf8_lossy(&one.stdout), String::from_utf8_lossy(&one.stderr));
    match serde_json::from_str::<Value>(&out) {
        Ok(pod) => assert_eq!(pod["metadata"]["name"], name.as_str()),
        Err(_) => assert!(err.contains(&format!("pods \"{name}\" not found")), "kubectl get pod {name}: {out} {err}"),
    }
    // client-go's informer start with WatchList: a streaming list without revision.
    let streamed = streaming_list(&kache, "/api/v1/namespaces/ns-0001/pods");
    assert!(!streamed.is_empty());
    let now = counter(&kache, "kache_consistent_reads_fresh_total", "pods");
    assert!(now >= fresh + 3, "list, get and streaming list of a busy resource from memory ({} of 3)", now - fresh);
}

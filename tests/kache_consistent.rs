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
    let w = eventually(Duration::from_secs(60), "a watch accepted", || match kache.try_watch(&format!("{path}?{query}")) {
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
    // The apiserver as kache meets it: HTTPS, HTTP/2, 100 streams a
    // connection, lists sent at a real apiserver's pace, consistent reads
    // after a quorum read's delay.
    let sim = Process::sim_https(&[
        "--pods",
        "50",
        "--nodes",
        "2",
        "--namespaces",
        "2",
        "--compact-interval",
        "0",
        "--list-mb-per-second",
        "20",
        "--consistent-read-latency-ms",
        "2",
    ]);
    // Every request goes through kache: reads from memory or passed through
    // by their expected cost, writes and the simulator's fault switches passed through.
    let kache = Process::kache_over(&sim, &["--resources", "configmaps,pods", "--watch-timeout", "5"]);
    ready(&kache);
    assert_eq!(kache.post("/api/v1/namespaces", &json!({"metadata": {"name": "rw"}})).status, 201);
    let cms = "/api/v1/namespaces/rw/configmaps";
    // What the test has written: the truth a consistent read must show.
    let mut want: BTreeMap<String, String> = BTreeMap::new();
    // Lists large enough (640 KB, 32 ms upstream) for upstream to take longer than memory, GETs not.
    let pad = "x".repeat(16_000);
    for b in 0..40 {
        let name = format!("big-{b:03}");
        ok(kache.post(cms, &json!({"metadata": {"name": name}, "data": {"v": "big", "pad": pad}})), "create");
        want.insert(name, "big".into());
    }
    let trials: usize = std::env::var("KACHE_TRIALS").ok().and_then(|t| t.parse().ok()).unwrap_or(10_000);
    let started = Instant::now();
    for i in 0..trials {
        // Faults on the way: the upstream watch is dropped, stalled, or the apiserver restarts.
        match i % 2_000 {
            500 => assert_eq!(kache.request("POST", "/_sim/drop-watches", &[], None).status, 200),
            1_000 => assert_eq!(kache.request("POST", "/_sim/stall?seconds=0.3", &[], None).status, 200),
            1_500 => assert_eq!(kache.request("POST", "/_sim/restart?reinit-seconds=0.5", &[], None).status, 200),
            _ => {}
        }
        let name = format!("cm-{}", i % 7);
        let v = i.to_string();
        match i % 10 {
            // A write to the resource read: create, update or delete.
            0..=5 => {
                let body = json!({"metadata": {"name": name}, "data": {"v": v}});
                if want.contains_key(&name) && i % 3 == 0 {
                    ok(kache.request("DELETE", &format!("{cms}/{name}"), &[], None), "delete");
                    want.remove(&name);
                } else if want.contains_key(&name) {
                    let patch = json!({"data": {"v": v}}).to_string();
                    let r = kache.request(
                        "PATCH",
                        &format!("{cms}/{name}"),
                        &[("content-type", "application/merge-patch+json")],
                        Some(patch.as_bytes()),
                    );
                    ok(r, "update");
                    want.insert(name.clone(), v);
                } else {
                    ok(kache.post(cms, &body), "create");
                    want.insert(name.clone(), v);
                }
            }
            // A write elsewhere (another resource), or none.
            6..=7 => {
                let patch = json!({"metadata": {"annotations": {"trial": v}}}).to_string();
                let pod = "/api/v1/namespaces/ns-0000/pods/app-00000-0000000";
                ok(kache.request("PATCH", pod, &[("content-type", "application/merge-patch+json")], Some(patch.as_bytes())), "other");
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
    // Both ways were taken, and neither was ever stale: lists and streaming
    // lists from memory once proven fresh, GETs (upstream answers them as soon) passed through.
    assert!(fresh > trials as u64 / 10, "lists and streaming lists of a resource being written come from memory: {fresh}");
    let sooner = counter(&kache, "kache_consistent_reads_passed_through_total", "sooner upstream");
    assert!(sooner > trials as u64 / 10, "GETs go upstream at once: {sooner}");
}

#[test]
fn kubectl_paging_of_a_quiet_resource_is_served_from_memory_after_the_first_page() {
    let sim = Process::sim_https(&["--configmaps", "300", "--namespaces", "2", "--compact-interval", "0"]);
    let kache = Process::kache_over(&sim, &["--resources", "configmaps"]);
    ready(&kache);
    // Other resources move the global revision past the quiet configmaps.
    for i in 0..5 {
        assert_eq!(kache.post("/api/v1/namespaces", &json!({"metadata": {"name": format!("other-{i}")}})).status, 201);
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
fn collection_reads_keep_catch_ups_going_until_they_stop() {
    let sim = Process::sim_https(&["--configmaps", "50", "--namespaces", "2", "--compact-interval", "0"]);
    let kache = Process::kache_over(&sim, &["--resources", "configmaps"]);
    ready(&kache);
    let catch_ups = || counter(&kache, "kache_freshness_catch_ups_total", "configmaps");
    let warm = || counter(&kache, "kache_freshness_kept_warm", "configmaps");
    assert_eq!(warm(), 0, "no read yet, no catch-up kept going");
    // Consistent lists of quiet configmaps while other writes move the revision past them.
    for i in 0..6 {
        assert_eq!(kache.post("/api/v1/namespaces", &json!({"metadata": {"name": format!("moved-{i}")}})).status, 201);
        let list = ok(kache.get("/api/v1/configmaps"), "a consistent list");
        assert_eq!(list["items"].as_array().map(Vec::len), Some(50));
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(warm(), 1, "collection reads keep catch-ups going");
    // Without a read, the keeper still opens one every half second — until it stops for want of reads.
    let before = catch_ups();
    eventually(Duration::from_secs(30), "more catch-ups with no read", || (catch_ups() >= before + 2).then_some(()));
    assert!(counter(&kache, "kache_freshness_proofs_total", "configmaps") >= 2, "kept going, catch-ups prove again and again");
    eventually(Duration::from_secs(60), "the keeper stops", || (warm() == 0).then_some(()));
    let stopped = catch_ups();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(catch_ups(), stopped, "no catch-up opens once reads stopped");
    // What it proved was sound: a consistent list after one more write sees every configmap.
    assert_eq!(kache.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "late"}})).status, 201);
    let list = ok(kache.get("/api/v1/configmaps"), "a consistent list");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(51));
}

#[test]
fn consistent_reads_go_where_they_are_answered_sooner() {
    // Quiet pods (2,000, 9 MB) behind an apiserver as slow as a real one
    // (lists at 2 MB/s, consistent reads after 5 ms), while configmaps are
    // written: the revision moves, the pods' store never reaches it by itself.
    let sim = Process::sim_https(&[
        "--pods",
        "2000",
        "--nodes",
        "20",
        "--namespaces",
        "2",
        "--configmaps",
        "10",
        "--compact-interval",
        "0",
        "--list-mb-per-second",
        "2",
        "--consistent-read-latency-ms",
        "5",
    ]);
    let kache = Process::kache_over(&sim, &["--resources", "pods"]);
    ready(&kache);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let written = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let (url, stop, written) = (kache.url.clone(), stop.clone(), written.clone());
        std::thread::spawn(move || {
            let patch = |i: u64| json!({"metadata": {"annotations": {"w": i.to_string()}}}).to_string();
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let path = format!("{url}/api/v1/namespaces/ns-0000/configmaps/config-000000");
                let r = common::request(&path, "PATCH", &[("content-type", "application/merge-patch+json")], Some(patch(i).as_bytes()));
                assert_eq!(r.status, 200, "{}", r.text());
                i += 1;
                written.store(i, std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let sooner = |k: &Process| counter(k, "kache_consistent_reads_passed_through_total", "sooner upstream");
    let lists = |k: &Process| counter(k, "kache_lists_served_total", "");
    // However slow the machine, the revision has moved past the pods' before the first read.
    eventually(Duration::from_secs(60), "a write after kache's list", || {
        (written.load(std::sync::atomic::Ordering::Relaxed) > 0).then_some(())
    });
    // The first consistent read tries memory and its probe shows the pods' store behind upstream's
    // revision: its proof is late, so it goes upstream as well (the hedge), which answers first —
    // or, on a machine slow enough, the proof does. Either way no read waits out a budget first.
    let pod = "/api/v1/namespaces/ns-0000/pods/app-00000-0000000";
    assert_eq!(kache.get(pod).status, 200);
    assert_eq!(counter(&kache, "kache_freshness_probes_total", "pods"), 1, "the first GET tried memory");
    let (late, fresh) = (
        counter(&kache, "kache_consistent_reads_passed_through_total", "late proof"),
        counter(&kache, "kache_consistent_reads_fresh_total", "pods"),
    );
    assert_eq!(late + fresh, 1, "answered by the hedge or by memory");
    assert_eq!(counter(&kache, "kache_consistent_reads_passed_through_total", "timeout"), 0, "no read waits out its budget");
    // One object: upstream answers in one round trip, which memory's probe costs already: passed through at once.
    let before = sooner(&kache);
    let one = kache.get(pod);
    assert_eq!(one.status, 200, "{}", one.text());
    assert_eq!(sooner(&kache) - before, 1, "a GET went upstream");
    // The first GET's wait started a catch-up, which measures what a proof takes.
    eventually(Duration::from_secs(60), "the catch-up's proof", || {
        (counter(&kache, "kache_freshness_proofs_total", "pods") >= 1).then_some(())
    });
    // The proof, now measured (1–2.25 s: the simulator's bookmark tick), beats upstream's 4.6 s: from memory.
    let (fresh, served) = (counter(&kache, "kache_consistent_reads_fresh_total", "pods"), lists(&kache));
    assert_eq!(ok(kache.get("/api/v1/pods"), "a consistent list")["items"].as_array().map(Vec::len), Some(2000));
    assert_eq!(
        (counter(&kache, "kache_consistent_reads_fresh_total", "pods") - fresh, lists(&kache) - served),
        (1, 1),
        "the whole list from memory: {}",
        kache
            .get("/metrics")
            .text()
            .lines()
            .filter(|l| l.contains("consistent") || l.contains("freshness") || l.contains("throughput"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // client-go's informer start (WatchList): a streaming list without revision, from memory as well.
    let watches = counter(&kache, "kache_watches_served_total", "");
    assert_eq!(streaming_list(&kache, "/api/v1/pods").len(), 2000);
    assert_eq!(counter(&kache, "kache_watches_served_total", "") - watches, 1);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().expect("the writer");
    // The decision's inputs are measured, not assumed.
    let m = common::scrape(&kache);
    let get = |k: &str| m.get(k).copied().unwrap_or_else(|| panic!("{k} in {m:?}"));
    assert!((1e6..4e6).contains(&get("kache_upstream_throughput_bytes_per_second")));
    assert!(get("kache_upstream_latency_seconds") >= 0.005);
    assert!(get("kache_freshness_proof_expected_seconds{resource=\"pods\"}") < 2.5);
    assert!(get("kache_memory_throughput_bytes_per_second") > 0.0);
    // Every consistent list and GET that ended was held against its plan, whichever road it took.
    let sum =
        |name: &str| -> f64 { m.iter().filter(|(k, _)| k.starts_with(name) && k.contains("resource=\"pods\"")).map(|(_, v)| v).sum() };
    let (judged, planned) = (sum("kache_consistent_actual_seconds_count"), sum("kache_consistent_predicted_seconds_count"));
    assert!(judged >= 3.0 && judged == planned, "{judged} judged of {planned} planned");
}

#[test]
fn a_quiet_resource_next_to_a_fast_apiserver_is_read_upstream_and_its_proof_is_measured() {
    // The apiserver sends lists as fast as it can; the pods are quiet while other resources write.
    let sim = Process::sim_https(&["--pods", "2000", "--nodes", "20", "--namespaces", "2", "--compact-interval", "0"]);
    // Each read where it is sooner (the default would answer this 9 MB list from memory: it spares the apiserver).
    let kache = Process::kache_over(&sim, &["--resources", "pods", "--consistent-reads", "sooner"]);
    ready(&kache);
    let other = |i: usize| assert_eq!(kache.post("/api/v1/namespaces", &json!({"metadata": {"name": format!("other-{i}")}})).status, 201);
    other(0);
    // The first consistent read tries memory; its probe shows the quiet store behind.
    assert_eq!(kache.get("/api/v1/namespaces/ns-0000/pods/app-00000-0000000").status, 200);
    // Upstream sends 9 MB sooner than an unmeasured proof (up to 3 s) comes: passed through, and a catch-up starts.
    let lists = counter(&kache, "kache_lists_served_total", "");
    assert!(ok(kache.get("/api/v1/pods"), "a consistent list")["items"].as_array().is_some_and(|i| i.len() == 2000));
    assert_eq!(counter(&kache, "kache_lists_served_total", ""), lists, "passed through");
    assert_eq!(counter(&kache, "kache_consistent_reads_passed_through_total", "sooner upstream"), 1);
    eventually(Duration::from_secs(60), "the catch-up's proof", || {
        (counter(&kache, "kache_freshness_proofs_total", "pods") >= 1).then_some(())
    });
    let m = common::scrape(&kache);
    let expected = m.get("kache_freshness_proof_expected_seconds{resource=\"pods\"}").copied().expect("the proof's delay");
    assert!(expected < 3.0, "measured below the assumed 3 s: {expected}");
    assert!(
        m.get("kache_freshness_proof_seconds_count{resource=\"pods\"}").is_some_and(|n| *n >= 1.0),
        "each proof's delay is in the histogram"
    );
}

#[test]
fn a_large_consistent_list_is_taken_off_the_apiserver_even_where_upstream_is_sooner() {
    // As above, with the default policy: 9 MB of pods, which upstream sends sooner than a proof comes.
    let sim = Process::sim_https(&["--pods", "2000", "--nodes", "20", "--namespaces", "2", "--compact-interval", "0"]);
    let kache = Process::kache_over(&sim, &["--resources", "pods"]);
    ready(&kache);
    assert_eq!(kache.post("/api/v1/namespaces", &json!({"metadata": {"name": "other"}})).status, 201);
    assert_eq!(kache.get("/api/v1/namespaces/ns-0000/pods/app-00000-0000000").status, 200);
    let lists = counter(&kache, "kache_lists_served_total", "");
    assert!(ok(kache.get("/api/v1/pods"), "a consistent list")["items"].as_array().is_some_and(|i| i.len() == 2000));
    assert_eq!(counter(&kache, "kache_lists_served_total", ""), lists + 1, "from memory, once proven");
    assert_eq!(counter(&kache, "kache_consistent_reads_passed_through_total", "sooner upstream"), 0);
}

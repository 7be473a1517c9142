//! The memory budget (`--memory-budget`, `--resource-memory-budget`) with
//! kache as a real process in front of the simulator: what happens at the
//! bound, level by level, as `/metrics` shows it, and what a list storm
//! costs in resident memory.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::{Process, eventually, scrape};

const MIB: f64 = (1 << 20) as f64;

/// A per-resource gauge of pods (0 when absent).
fn pods(m: &HashMap<String, f64>, name: &str) -> f64 {
    m.get(&format!(r#"{name}{{resource="pods"}}"#)).copied().unwrap_or(0.0)
}

/// `kache_requests_total` of `verb` on pods from `source` (for `reason`, when given), summed over codes.
fn requests(m: &HashMap<String, f64>, verb: &str, source: &str, reason: Option<&str>) -> f64 {
    let labels = [format!(r#"verb="{verb}""#), r#"resource="pods""#.to_string(), format!(r#"source="{source}""#)];
    m.iter()
        .filter(|(k, _)| k.starts_with("kache_requests_total{") && labels.iter().all(|l| k.contains(l.as_str())))
        .filter(|(k, _)| reason.is_none_or(|r| k.contains(&format!(r#"reason="{r}""#))))
        .map(|(_, v)| v)
        .sum()
}

fn ready(kache: &Process) {
    eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
}

/// What kache's store of pods counts (object data and overhead), in bytes.
fn usage(m: &HashMap<String, f64>) -> f64 {
    pods(m, "kache_store_object_bytes") + pods(m, "kache_store_overhead_bytes")
}

/// The bytes a kache counts for the simulator's pods, under a budget far
/// above them (a budgeted kache makes no protobuf messages ahead).
fn objects_usage(sim: &Process) -> f64 {
    let kache = Process::kache(&sim.url, &["--resources", "pods", "--memory-budget", "1000000"]);
    ready(&kache);
    usage(&scrape(&kache))
}

/// A budget in whole MiB with room for 2,000 events (twice the log's floor
/// under pressure) above `objects` objects costing `usage` bytes.
fn budget_with_room_for_a_log(usage: f64, objects: f64) -> u64 {
    ((usage + 2000.0 * usage / objects) / MIB).ceil() as u64
}

fn set_churn(sim: &Process, rate: u32) {
    assert_eq!(sim.request("POST", &format!("/_sim/churn?rate={rate}"), &[], None).status, 200);
}

/// The process's resident memory (`VmRSS`), in bytes.
fn rss(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc is mounted");
    let kib = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok());
    kib.expect("a VmRSS line") * 1024.0
}

/// `n` concurrent `GET url` (every other one asking for gzip), each body
/// read and dropped as it arrives; returns their statuses and body sizes
/// and the process `pid`'s peak resident memory meanwhile.
fn storm(url: &str, n: usize, pid: u32) -> (Vec<(u16, u64)>, f64) {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = rss(pid);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss(pid));
                std::thread::sleep(Duration::from_millis(5));
            }
            peak.max(rss(pid))
        })
    };
    let lists: Vec<_> = (0..n)
        .map(|i| {
            let url = url.to_string();
            std::thread::spawn(move || {
                let agent: ureq::Agent =
                    ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(300))).build().into();
                let mut req = agent.get(&url);
                if i % 2 == 1 {
                    req = req.header("accept-encoding", "gzip");
                }
                let resp = req.call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
                let status = resp.status().as_u16();
                let read = std::io::copy(&mut resp.into_body().into_reader(), &mut std::io::sink()).expect("the whole body");
                (status, read)
            })
        })
        .collect();
    let answers = lists.into_iter().map(|l| l.join().expect("a list")).collect();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    (answers, sampler.join().expect("the sampler"))
}

#[test]
fn a_budget_smaller_than_the_objects_passes_lists_and_gets_through_and_keeps_watches() {
    let sim = Process::sim(&["--pods", "2000"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods", "--resource-memory-budget", "1"]);
    ready(&kache);
    // Level 1, 2 and 3 a check (a second) apart: the log has nothing to give.
    eventually(Duration::from_secs(30), "pressure level 3", || (pods(&scrape(&kache), "kache_memory_pressure") == 3.0).then_some(()));
    let m = scrape(&kache);
    assert_eq!((m["kache_resource_memory_budget_bytes"], m["kache_memory_budget_bytes"]), (MIB, 0.0));
    // The store still holds every object (it must, to follow the resource).
    assert_eq!(pods(&m, "kache_store_objects"), 2000.0);
    let list = kache.get("/api/v1/pods?resourceVersion=0");
    assert_eq!(list.status, 200);
    let list = list.json();
    assert_eq!(list["items"].as_array().map(Vec::len), Some(2000));
    let first = &list["items"][0]["metadata"];
    let get = kache.get(&format!("/api/v1/namespaces/{}/pods/{}?resourceVersion=0", first["namespace"], first["name"]).replace('"', ""));
    assert_eq!(get.status, 200);
    let rv = list["metadata"]["resourceVersion"].as_str().expect("a revision").to_string();
    let watch = kache.get(&format!("/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=1"));
    assert_eq!(watch.status, 200);
    let m = scrape(&kache);
    assert_eq!(requests(&m, "list", "upstream", Some("memory budget")), 1.0, "{m:?}");
    assert_eq!(requests(&m, "get", "upstream", Some("memory budget")), 1.0, "{m:?}");
    assert_eq!((requests(&m, "list", "memory", None), requests(&m, "get", "memory", None)), (0.0, 0.0));
    assert_eq!(m["kache_watches_served_total"], 1.0, "watches stay from memory");
}

#[test]
fn a_budget_between_the_objects_and_their_log_shortens_the_log_and_keeps_lists_in_memory() {
    let sim = Process::sim(&["--pods", "2000"]);
    let objects = objects_usage(&sim);
    let budget = budget_with_room_for_a_log(objects, 2000.0);
    let kache = Process::kache(&sim.url, &["--resources", "pods", "--resource-memory-budget", &budget.to_string()]);
    ready(&kache);
    let before = kache.get("/api/v1/pods?resourceVersion=0&limit=1").json()["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    set_churn(&sim, 400);
    eventually(Duration::from_secs(120), "pressure level 1", || (pods(&scrape(&kache), "kache_memory_pressure") == 1.0).then_some(()));
    // Events keep coming; the log keeps only what the budget holds, and goes no further than level 1.
    let at_level_1 = pods(&scrape(&kache), "kache_upstream_events_total");
    let m = eventually(Duration::from_secs(120), "3,000 more events", || {
        let m = scrape(&kache);
        assert_eq!(pods(&m, "kache_memory_pressure"), 1.0, "the shortened log is enough: {m:?}");
        (pods(&m, "kache_upstream_events_total") > at_level_1 + 3000.0).then_some(m)
    });
    assert!(pods(&m, "kache_store_events") < 3000.0, "{m:?}");
    assert!(usage(&m) <= budget as f64 * MIB * 1.05, "{} of {budget} MiB", usage(&m) / MIB);
    // Lists are answered from memory, a paged one too (its pages pin a snapshot).
    let served = requests(&m, "list", "memory", None);
    let whole = kache.get("/api/v1/pods?resourceVersion=0").json();
    let head = whole["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut path = format!("/api/v1/pods?resourceVersion={head}&resourceVersionMatch=Exact&limit=500");
    let mut pages = 0;
    loop {
        let page = kache.get(&path);
        assert_eq!(page.status, 200, "{}", page.text());
        pages += 1;
        let token = page.json()["metadata"]["continue"].as_str().unwrap_or_default().to_string();
        if token.is_empty() {
            break;
        }
        path = format!("/api/v1/pods?limit=500&continue={token}");
    }
    assert!(pages >= 4, "{pages} pages");
    assert_eq!(requests(&scrape(&kache), "list", "memory", None), served + 1.0 + f64::from(pages));
    // A watch from before the churn fell out of the log: the apiserver's 410, as when the log rolls over.
    let watch = kache.watch(&format!("/api/v1/pods?watch=1&resourceVersion={before}"));
    let error = watch.next(Duration::from_secs(10)).expect("an event");
    assert_eq!((error["type"].as_str(), error["object"]["code"].as_i64()), (Some("ERROR"), Some(410)), "{error}");
    assert_eq!(error["object"]["reason"], "Expired");
    set_churn(&sim, 0);
}

/// The budget bounds the cache and the lists being written together: a
/// list from memory reserves what it holds while it is written (a pointer
/// per object and its buffers, never a copy of the objects) from what the
/// store leaves of the budget, and waits for room when a storm has taken
/// it. So a storm larger than the room costs RSS no more than the room
/// above the resting process, and every list is still answered from memory
/// (or, past the wait, with the apiserver's 429) — none is sent upstream.
#[test]
fn a_list_storm_stays_within_the_memory_budget() {
    const LISTS: usize = 24;
    const PODS: usize = 2000;
    // The process's own cost of the same storm (connections, threads), with nothing cached.
    let empty = Process::sim(&["--pods", "0"]);
    let sim = Process::sim(&["--pods", &PODS.to_string()]);
    let budget = budget_with_room_for_a_log(objects_usage(&sim), PODS as f64);
    let args = ["--resources", "pods", "--memory-budget", &budget.to_string()];
    let baseline = {
        let kache = Process::kache(&empty.url, &args);
        ready(&kache);
        let (answers, peak) = storm(&format!("{}/api/v1/pods?resourceVersion=0", kache.url), LISTS, kache.pid());
        assert!(answers.iter().all(|(status, _)| *status == 200), "{answers:?}");
        peak
    };
    let kache = Process::kache(&sim.url, &args);
    ready(&kache);
    // The room is what the store leaves of the budget, from a check after the list.
    let m = eventually(Duration::from_secs(30), "the room for lists set", || {
        let m = scrape(&kache);
        (m.get("kache_list_room_bytes") == Some(&(budget as f64 * MIB - usage(&m)))).then_some(m)
    });
    let room = m["kache_list_room_bytes"];
    let served = requests(&m, "list", "memory", None);
    let passed = requests(&m, "list", "upstream", None);
    // A first storm brings the process to its working size (threads for
    // gzip, their stacks and allocator arenas); the second is measured.
    let url = format!("{}/api/v1/pods?resourceVersion=0", kache.url);
    let resting = rss(kache.pid());
    assert!(resting <= baseline + budget as f64 * MIB, "the cache alone fits the budget");
    let (first, first_peak) = storm(&url, LISTS, kache.pid());
    assert!(first.iter().all(|(status, _)| [200, 429].contains(status)), "{first:?}");
    let before = rss(kache.pid());
    let started = Instant::now();
    let (answers, peak) = storm(&url, LISTS, kache.pid());
    let took = started.elapsed();
    let m = scrape(&kache);
    let ok = answers.iter().filter(|(status, _)| *status == 200).count();
    eprintln!(
        "storm of {LISTS} lists in {took:?} ({ok} answered, the rest 429): RSS {:.1} MiB at rest, {:.1} MiB at the first storm's peak, {:.1} MiB before the second, {:.1} MiB at its peak (+{:.1} MiB; room {:.1} MiB); baseline {:.1} MiB, budget {budget} MiB, store counts {:.1} MiB",
        resting / MIB,
        first_peak / MIB,
        before / MIB,
        peak / MIB,
        (peak - before) / MIB,
        room / MIB,
        baseline / MIB,
        usage(&m) / MIB
    );
    assert!(answers.iter().all(|(status, _)| [200, 429].contains(status)), "{answers:?}");
    assert!(ok >= LISTS / 2, "most lists wait for room rather than fail: {answers:?}");
    assert_eq!(requests(&m, "list", "memory", None), served + 2.0 * LISTS as f64, "every list answered by kache");
    assert_eq!(requests(&m, "list", "upstream", None), passed, "none sent upstream");
    assert_eq!(m["kache_list_bytes_in_flight"], 0.0, "every list gave its room back");
    assert!(usage(&m) <= budget as f64 * MIB && pods(&m, "kache_memory_pressure") == 0.0, "{m:?}");
    // The storm needed more than the room: lists waited for each other.
    let gzip = LISTS / 2;
    let needed = (LISTS - gzip) as f64 * (512.0 * 1024.0 + 8.0 * PODS as f64) + gzip as f64 * (960.0 * 1024.0 + 8.0 * PODS as f64);
    assert!(needed > room, "the storm fits the room ({:.1} of {:.1} MiB): it tests nothing", needed / MIB, room / MIB);
    assert!(peak - before <= room, "the storm cost {:.1} MiB above the resting process, more than the room", (peak - before) / MIB);
}

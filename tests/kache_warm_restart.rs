//! Warm restarts (`--state-dir`), real processes: a kache stopped with
//! SIGTERM saves each resource's state, and the next one started on the same
//! directory resumes its upstream watch from it instead of listing — and
//! still ends up byte for byte equal to the simulator, with every write
//! made while it was down. Upstream compaction, revisions that went back, a
//! corrupt file and another upstream's file all fall back to a list.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{Process, eventually};
use serde_json::json;

/// Pods in the simulated cluster of the main test: `KACHE_WARM_PODS`, else
/// 100,000 in release builds and 10,000 in debug ones (where generating
/// and listing 100,000 pods takes minutes).
fn pods() -> String {
    let default = if cfg!(debug_assertions) { 10_000 } else { 100_000 };
    std::env::var("KACHE_WARM_PODS").ok().and_then(|n| n.parse::<usize>().ok()).unwrap_or(default).to_string()
}

fn ready(kache: &Process) {
    eventually(Duration::from_secs(300), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
}

/// A per-resource sample of kache's `/metrics`, for pods.
fn metric(kache: &Process, name: &str) -> u64 {
    let sample = format!("{name}{{resource=\"pods\"}} ");
    let text = kache.get("/metrics").text();
    text.lines().find_map(|l| l.strip_prefix(&sample)?.parse().ok()).unwrap_or_else(|| panic!("no {sample} in /metrics"))
}

/// kache with a state directory, pods only.
fn kache(sim: &Process, state: &Path) -> Process {
    let state = state.to_str().expect("a UTF-8 path");
    Process::kache(&sim.url, &["--resources", "pods", "--state-dir", state, "--state-interval", "1", "--shutdown-drain", "5"])
}

/// A kache that synced with `sim`, saved its state into a new directory and
/// stopped: the directory and the revision saved.
fn saved_and_stopped(sim: &Process) -> (tempfile::TempDir, u64) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let first = kache(sim, dir.path());
    ready(&first);
    let saved = same_as_sim(&first, sim);
    terminate(first);
    (dir, saved)
}

/// Stops kache as Kubernetes does, and waits for it to exit cleanly.
fn terminate(mut kache: Process) {
    let pid = kache.pid().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs").success());
    assert!(kache.wait(Duration::from_secs(60)).success(), "kache exits cleanly on SIGTERM");
}

/// Waits until kache holds every pod event the simulator has; returns that revision.
fn caught_up(kache: &Process, sim: &Process) -> u64 {
    let rv = sim.revision();
    eventually(Duration::from_secs(60), "kache to catch up", || (metric(kache, "kache_store_confirmed_revision") == rv).then_some(()));
    rv
}

/// Once kache has caught up, its full list is the simulator's, byte for byte, at the same revision.
fn same_as_sim(kache: &Process, sim: &Process) -> u64 {
    let rv = caught_up(kache, sim);
    let exact = format!("/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact");
    let (ours, theirs) = (kache.get(&exact), sim.get(&exact));
    assert_eq!((ours.status, theirs.status), (200, 200), "{}", ours.text());
    assert!(ours.body == theirs.body, "kache's list differs from the simulator's at {rv}");
    rv
}

/// Writes to pods: `tag` names the pods created and labels the ones changed.
fn write(sim: &Process, tag: &str, existing: &[&str]) {
    let pods = "/api/v1/namespaces/ns-0000/pods";
    for i in 0..3 {
        let pod = json!({"metadata": {"name": format!("{tag}-{i}"), "labels": {"app": tag}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        assert_eq!(sim.post(pods, &pod).status, 201);
    }
    let patch = json!({"metadata": {"labels": {"touched": tag}}}).to_string();
    for name in existing {
        let r =
            sim.request("PATCH", &format!("{pods}/{name}"), &[("content-type", "application/merge-patch+json")], Some(patch.as_bytes()));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    assert_eq!(sim.request("DELETE", &format!("{pods}/{tag}-0"), &[], None).status, 200);
}

/// Consistent reads (no `resourceVersion`) see every write `write(sim, tag, …)`
/// made, whatever kache restored: proven fresh, or passed through.
fn consistent_reads_see(kache: &Process, tag: &str) {
    let pods = "/api/v1/namespaces/ns-0000/pods";
    assert_eq!(kache.get(&format!("{pods}/{tag}-1")).status, 200, "{tag}-1 was created");
    assert_eq!(kache.get(&format!("{pods}/{tag}-0")).status, 404, "{tag}-0 was deleted");
    let list = kache.get(&format!("{pods}?labelSelector=app%3D{tag}")).json();
    let names: Vec<&str> = list["items"].as_array().expect("items").iter().filter_map(|o| o["metadata"]["name"].as_str()).collect();
    assert_eq!(names, [format!("{tag}-1"), format!("{tag}-2")]);
}

#[test]
fn a_restart_resumes_from_the_saved_state_without_listing() {
    let sim = Process::sim(&["--pods", &pods(), "--compact-interval", "0"]);
    let dir = tempfile::tempdir().expect("a temp dir");
    let first = kache(&sim, dir.path());
    ready(&first);
    write(&sim, "before", &["app-00000-0000000"]);
    let saved = same_as_sim(&first, &sim);
    // The periodic save, before any shutdown.
    let file = dir.path().join("pods.v1.core.state");
    eventually(Duration::from_secs(60), "a periodic save", || file.exists().then_some(()));
    terminate(first);
    // Written while kache is down: the resumed watch must bring them.
    write(&sim, "while-down", &["app-00000-0000000", "before-1"]);
    let lists = sim.served("pods", "list");
    let second = kache(&sim, dir.path());
    ready(&second);
    caught_up(&second, &sim);
    // Not one upstream list request: the resumed watch's first event showed
    // that upstream's revision did not go back while kache was down.
    assert_eq!(sim.served("pods", "list") - lists, 0, "no list request after a warm restart");
    assert_eq!(metric(&second, "kache_upstream_lists_total"), 0);
    assert_eq!(metric(&second, "kache_upstream_probes_total"), 0);
    assert_eq!(metric(&second, "kache_store_oldest_revision"), saved, "the window starts at the saved revision");
    same_as_sim(&second, &sim);
    consistent_reads_see(&second, "while-down");
    // And the state it keeps saving is still good for the next restart.
    write(&sim, "after", &["before-2"]);
    same_as_sim(&second, &sim);
    terminate(second);
    // Nothing written while down this time: the resumed watch stays silent,
    // and a one-item probe shows upstream's revision instead.
    let lists = sim.served("pods", "list");
    let third = kache(&sim, dir.path());
    ready(&third);
    assert_eq!(sim.served("pods", "list") - lists, 1, "the probe is the only list request");
    assert_eq!(metric(&third, "kache_upstream_lists_total"), 0);
    assert_eq!(metric(&third, "kache_upstream_probes_total"), 1);
    same_as_sim(&third, &sim);
}

#[test]
fn a_restart_after_upstream_compacted_past_the_saved_state_lists_again() {
    let sim = Process::sim(&["--pods", "300", "--compact-interval", "0"]);
    let (dir, saved) = saved_and_stopped(&sim);
    write(&sim, "while-down", &["app-00000-0000000"]);
    assert_eq!(sim.request("POST", "/_sim/compact", &[], None).status, 200);
    let second = kache(&sim, dir.path());
    ready(&second);
    // Until the watch is refused and kache re-lists, it holds the saved state.
    consistent_reads_see(&second, "while-down");
    same_as_sim(&second, &sim);
    // Restored, told 410 by the resumed watch, listed.
    assert_eq!((metric(&second, "kache_upstream_probes_total"), metric(&second, "kache_upstream_lists_total")), (0, 1));
    assert!(metric(&second, "kache_store_oldest_revision") > saved, "the saved state is gone");
}

#[test]
fn a_restart_after_upstream_revisions_went_back_lists_again() {
    let sim = Process::sim(&["--pods", "300", "--compact-interval", "0"]);
    let dir = tempfile::tempdir().expect("a temp dir");
    let first = kache(&sim, dir.path());
    ready(&first);
    write(&sim, "before", &[]);
    same_as_sim(&first, &sim);
    terminate(first);
    // etcd restored from a snapshot: the same objects, renumbered from revision 2.
    assert_eq!(sim.request("POST", "/_sim/restart?reset=true", &[], None).status, 200);
    write(&sim, "while-down", &[]);
    let second = kache(&sim, dir.path());
    ready(&second);
    // The saved state is ahead of upstream's revision, so it would pass every
    // freshness check: it must never be served, not even for a moment.
    consistent_reads_see(&second, "while-down");
    same_as_sim(&second, &sim);
    // The resumed watch stayed silent (upstream has not reached the saved
    // revision), so the probe saw the revision had gone back.
    assert_eq!((metric(&second, "kache_upstream_probes_total"), metric(&second, "kache_upstream_lists_total")), (1, 1));
}

#[test]
fn a_corrupt_state_or_another_upstreams_is_never_served() {
    let sim = Process::sim(&["--pods", "300", "--compact-interval", "0"]);
    let (dir, saved) = saved_and_stopped(&sim);
    write(&sim, "while-down", &[]);
    // One byte changed in the middle of the compressed objects.
    let file = dir.path().join("pods.v1.core.state");
    let mut bytes = std::fs::read(&file).expect("a state file");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    std::fs::write(&file, bytes).expect("written");
    let second = kache(&sim, dir.path());
    ready(&second);
    assert_eq!((metric(&second, "kache_upstream_probes_total"), metric(&second, "kache_upstream_lists_total")), (0, 1));
    assert!(metric(&second, "kache_store_oldest_revision") > saved, "nothing of the saved state is served");
    same_as_sim(&second, &sim);
    terminate(second);
    // A good file now, but of another apiserver (another URL).
    let other = Process::sim(&["--pods", "200", "--namespaces", "3", "--compact-interval", "0"]);
    let third = kache(&other, dir.path());
    ready(&third);
    assert_eq!((metric(&third, "kache_upstream_probes_total"), metric(&third, "kache_upstream_lists_total")), (0, 1));
    same_as_sim(&third, &other);
}

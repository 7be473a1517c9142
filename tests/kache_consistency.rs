//! kache checks its cache against the apiserver as kube-apiserver checks its
//! own: a real kache in front of the simulator, whose fault switch makes it
//! miss an event, finds the difference within a check period, passes the
//! resource's reads through, re-lists, and answers from memory again once a
//! check passes; under steady churn no check ever finds a difference.

mod common;

use std::time::Duration;

use common::{Process, eventually, scrape};
use serde_json::json;

fn ready(kache: &Process) {
    eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
}

/// kache's `kache_consistency_checks_total` for `resource` and `result`.
fn checks(kache: &Process, resource: &str, result: &str) -> f64 {
    let series = format!("kache_consistency_checks_total{{resource=\"{resource}\",result=\"{result}\"}}");
    scrape(kache).get(&series).copied().unwrap_or(0.0)
}

/// The data of configmap `name` in a list kache answers at `resourceVersion=0`.
fn data_through_kache(kache: &Process, name: &str) -> Option<String> {
    let list = kache.get("/api/v1/namespaces/default/configmaps?resourceVersion=0").json();
    let item = list["items"].as_array()?.iter().find(|i| i["metadata"]["name"] == name)?.clone();
    item["data"]["v"].as_str().map(String::from)
}

#[test]
fn a_missed_event_is_found_within_a_check_period_and_healed() {
    let sim = Process::sim(&["--pods", "0"]);
    let kache = Process::logged("serve", &["--server", &sim.url, "--resources", "configmaps", "--consistency-check-interval", "1"]);
    ready(&kache);
    let cms = "/api/v1/namespaces/default/configmaps";
    assert_eq!(sim.post(cms, &json!({"metadata": {"name": "a"}, "data": {"v": "1"}})).status, 201);
    eventually(Duration::from_secs(60), "kache to hold a", || (data_through_kache(&kache, "a").as_deref() == Some("1")).then_some(()));
    eventually(Duration::from_secs(60), "a check that passes", || (checks(&kache, "configmaps", "match") >= 1.0).then_some(()));
    assert_eq!(checks(&kache, "configmaps", "mismatch"), 0.0);

    // kache misses a's change; b's creation carries its revision past it.
    assert_eq!(sim.request("POST", "/_sim/unannounce?resource=configmaps&events=1", &[], None).status, 200);
    let patch = [("content-type", "application/merge-patch+json")];
    assert_eq!(sim.request("PATCH", &format!("{cms}/a"), &patch, Some(br#"{"data":{"v":"2"}}"#)).status, 200);
    assert_eq!(sim.post(cms, &json!({"metadata": {"name": "b"}, "data": {"v": "1"}})).status, 201);
    eventually(Duration::from_secs(60), "kache to hold b", || (data_through_kache(&kache, "b").as_deref() == Some("1")).then_some(()));
    // Reads from memory since the last check make the next one due; it finds a's change missing.
    eventually(Duration::from_secs(60), "the check to find the missed change", || {
        let _ = data_through_kache(&kache, "a");
        (checks(&kache, "configmaps", "mismatch") >= 1.0).then_some(())
    });
    let relisted = scrape(&kache).get("kache_upstream_relists_total{resource=\"configmaps\",cause=\"inconsistent\"}").copied();
    assert!(relisted.is_some_and(|n| n >= 1.0), "re-listed for it: {relisted:?}");
    assert!(kache.log().contains("default/a (kache"), "the log names the differing key:\n{}", kache.log());
    // Healed: kache holds a's change, and a later check passes.
    let passed = checks(&kache, "configmaps", "match");
    eventually(Duration::from_secs(60), "a's change through kache", || {
        (data_through_kache(&kache, "a").as_deref() == Some("2")).then_some(())
    });
    eventually(Duration::from_secs(60), "a check that passes again", || {
        let _ = data_through_kache(&kache, "a");
        (checks(&kache, "configmaps", "match") > passed).then_some(())
    });
    assert_eq!(kache.get("/readyz").status, 200);
}

/// 1,200 pods: each check lists three pages (the later ones by continue token alone, as the apiserver requires).
#[test]
fn steady_churn_never_fails_a_check() {
    let sim = Process::sim(&["--pods", "1200", "--nodes", "3"]);
    let kache = Process::kache_over(&sim, &["--resources", "pods", "--consistency-check-interval", "1"]);
    ready(&kache);
    assert_eq!(sim.request("POST", "/_sim/churn?rate=100", &[], None).status, 200);
    eventually(Duration::from_secs(120), "eight checks under churn", || {
        assert_eq!(kache.get("/api/v1/pods?resourceVersion=0&limit=50").status, 200);
        std::thread::sleep(Duration::from_millis(100));
        (checks(&kache, "pods", "match") >= 8.0).then_some(())
    });
    assert_eq!(checks(&kache, "pods", "mismatch"), 0.0, "no check found a difference under churn:\n{}", kache.log());
}

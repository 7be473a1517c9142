//! Replays the sharded requests captured from a real kube-apiserver 1.36
//! with `ShardedListAndWatch` on (`tests/reference/sharding/`) against the
//! simulator with its gate on, on objects of the same names. The uids differ
//! (the simulator makes its own), so which objects fall in a shard differs:
//! each answer is checked to hold exactly its shard of the simulator's
//! objects, and everything that does not depend on the uids — status, error
//! bodies, `metadata` members and their order, `shardInfo`,
//! `remainingItemCount` — to equal the capture's.

mod common;

use std::path::PathBuf;

use apimachinery::shard::ShardSelector;
use common::Process;
use serde_json::{Value, json};

const NS: &str = "shard-ref";

/// One captured exchange: the request target, the status, the body.
fn load(name: &str) -> (String, u16, Vec<u8>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/reference/sharding").join(name);
    let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let head_end = raw.windows(2).position(|w| w == b"\n\n").expect("a head");
    let head = std::str::from_utf8(&raw[..head_end]).expect("a text head");
    let target = head.lines().next().and_then(|l| l.strip_prefix("GET ")).expect("a GET").to_owned();
    let status = head.lines().find_map(|l| l.strip_prefix("--- ")).and_then(|s| s.parse().ok()).expect("a status");
    (target, status, raw[head_end + 2..].to_vec())
}

fn param(target: &str, name: &str) -> Option<String> {
    let query = target.split_once('?').map_or("", |(_, q)| q);
    form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

/// The simulator with the captured namespace's 12 pods, 12 configmaps and 12 widgets.
fn fixture() -> Process {
    let sim = Process::sim(&["--sharded-list-and-watch", "--compact-interval", "0", "--crd", "widgets.shard.kache.dev/v1=Widget"]);
    assert_eq!(sim.post("/api/v1/namespaces", &json!({"metadata": {"name": NS}})).status, 201);
    for i in 1..=12 {
        let tier = format!("t{}", i % 3);
        let pod = json!({"metadata": {"name": format!("pod-{i:02}"), "labels": {"app": "web", "tier": tier}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        assert_eq!(sim.post(&format!("/api/v1/namespaces/{NS}/pods"), &pod).status, 201);
        let cm = json!({"metadata": {"name": format!("cm-{i}")}, "data": {"k": format!("v{i}")}});
        assert_eq!(sim.post(&format!("/api/v1/namespaces/{NS}/configmaps"), &cm).status, 201);
        let w = json!({"apiVersion": "shard.kache.dev/v1", "kind": "Widget",
            "metadata": {"name": format!("w-{i:02}"), "labels": {"tier": tier}}, "spec": {"size": i}});
        assert_eq!(sim.post(&format!("/apis/shard.kache.dev/v1/namespaces/{NS}/widgets"), &w).status, 201);
    }
    sim
}

fn names(list: &Value) -> Vec<String> {
    list["items"].as_array().expect("items").iter().map(|o| o["metadata"]["name"].as_str().expect("a name").to_owned()).collect()
}

fn member_names(meta: &Value) -> Vec<String> {
    meta.as_object().expect("metadata").keys().cloned().collect()
}

#[test]
fn sharded_lists_hold_the_shard_and_say_so_as_the_apiserver_does() {
    let sim = fixture();
    for name in [
        "list-pods-lower.txt",
        "list-pods-upper.txt",
        "list-pods-or.txt",
        "list-pods-namespace.txt",
        "list-pods-label.txt",
        "list-pods-field.txt",
        "list-pods-paged-1.txt",
        "list-pods-label-paged.txt",
        "list-pods-rv0.txt",
        "list-pods-empty-selector.txt",
        "list-configmaps.txt",
        "list-widgets.txt",
        "list-widgets-paged-1.txt",
    ] {
        let (target, status, body) = load(name);
        let captured: Value = serde_json::from_slice(&body).expect("JSON");
        let got = sim.get(&target);
        assert_eq!(got.status, status, "{name}");
        let got = got.json();
        // Exactly the shard of what the same request without a shard selector lists.
        let unsharded = target.replace("shardSelector=", "ignored=");
        let whole = sim.get(&unsharded.replace("&limit=2", "").replace("&limit=3", "")).json();
        let selector = param(&target, "shardSelector").filter(|s| !s.trim().is_empty()).map(|s| ShardSelector::parse(&s).expect("valid"));
        let limit = param(&target, "limit").map_or(usize::MAX, |l| l.parse().unwrap());
        let mut expected: Vec<String> = whole["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| selector.as_ref().is_none_or(|s| s.selects(o["metadata"]["uid"].as_str().unwrap(), NS)))
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        // A page's metadata compares with the capture's when the simulator's
        // shard also goes on past it (the uids, hence the shards, differ).
        let paged_too = expected.len() > limit;
        expected.truncate(limit);
        assert_eq!(got["metadata"]["shardInfo"], captured["metadata"]["shardInfo"], "{name}");
        if paged_too || limit == usize::MAX {
            // The same members in the same order (a custom resource's list is
            // unstructured upstream, which the simulator does not write: its
            // `continue: ""` and key order are not sharding's), the same count.
            if !name.contains("widgets") {
                assert_eq!(member_names(&got["metadata"]), member_names(&captured["metadata"]), "{name}: {}", got["metadata"]);
            }
            assert_eq!(got["metadata"]["remainingItemCount"], captured["metadata"]["remainingItemCount"], "{name}");
        }
        assert_eq!(names(&got), expected, "{name}");
    }
}

#[test]
fn metadata_only_lists_and_tables_carry_no_shard_info() {
    let sim = fixture();
    for (name, accept) in [
        ("list-pods-metadata.txt", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
        ("list-pods-table.txt", "application/json;as=Table;v=v1;g=meta.k8s.io"),
    ] {
        let (target, status, body) = load(name);
        let captured: Value = serde_json::from_slice(&body).unwrap();
        let got = sim.request("GET", &target, &[("accept", accept)], None);
        assert_eq!(got.status, status, "{name}");
        assert_eq!(member_names(&got.json()["metadata"]), member_names(&captured["metadata"]), "{name}");
    }
}

#[test]
fn malformed_selectors_get_the_apiservers_500() {
    let sim = fixture();
    let errors = (1..=18).map(|n| format!("err-{n:02}.txt")).chain(["watch-err.txt".to_string()]);
    for name in errors {
        let (target, status, body) = load(&name);
        let got = sim.get(&target);
        assert_eq!(got.status, status, "{name}");
        let captured: Value = serde_json::from_slice(&body).unwrap();
        if captured["message"].as_str().unwrap().contains("CEL parse error") || ["err-10.txt", "err-18.txt"].contains(&name.as_str()) {
            // cel-go's wording, which the simulator does not have: the same shape.
            assert!(got.json()["message"].as_str().unwrap().starts_with("invalid shard selector: "), "{name}");
            assert!(got.json().get("reason").is_none(), "{name}");
        } else {
            assert_eq!(got.body, body, "{name}: {}", got.text());
        }
    }
}

#[test]
fn a_sharded_watch_list_sends_its_shard_then_the_initial_events_end() {
    let sim = fixture();
    let (target, _, body) = load("watch-pods-initial.txt");
    let captured: Vec<Value> = body.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
    let w = sim.watch(&target);
    let selector = ShardSelector::parse(&param(&target, "shardSelector").unwrap()).unwrap();
    let all = names(&sim.get(&format!("/api/v1/namespaces/{NS}/pods")).json());
    let whole = sim.get(&format!("/api/v1/namespaces/{NS}/pods")).json();
    let expected: Vec<String> = whole["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| selector.selects(o["metadata"]["uid"].as_str().unwrap(), NS))
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(all.len(), 12);
    let mut got = Vec::new();
    loop {
        let e = w.next(std::time::Duration::from_secs(10)).expect("an event");
        if e["type"] == "BOOKMARK" {
            assert_eq!(member_names(&e["object"]["metadata"]), member_names(&captured.last().unwrap()["object"]["metadata"]));
            break;
        }
        assert_eq!(e["type"], "ADDED");
        got.push(e["object"]["metadata"]["name"].as_str().unwrap().to_owned());
    }
    assert_eq!(got, expected);
}

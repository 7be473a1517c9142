//! Every field label of every built-in kind, as kube-apiserver 1.36.2
//! answers it (`tests/reference/apiserver-1.36/field-labels/answers.json`, made by
//! `capture.py` beside it): the objects the apiserver held are created in
//! the simulator, and each captured selector is asked of the simulator and
//! of kache from memory — at `resourceVersion=0` and as a consistent read —
//! which must answer with the apiserver's status and the same objects, or
//! the same refusal.

mod common;

use std::time::Duration;

use common::{Process, eventually, reference_dir, scrape};
use serde_json::{Value, json};

fn answers() -> Value {
    let path = reference_dir().join("field-labels/answers.json");
    serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).expect("JSON")
}

fn base(group: &str, version: &str) -> String {
    if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") }
}

/// The captured objects, created in `sim` as the apiserver held them: spec
/// and data on create, status through the status subresource.
fn create(sim: &Process, captured: &Value) {
    let ns = captured["namespace"].as_str().expect("a namespace");
    assert_eq!(sim.post("/api/v1/namespaces", &json!({"metadata": {"name": ns}})).status, 201);
    let sets = captured["objects"].as_array().expect("objects");
    // Cluster-scoped objects first: namespaces before what lives in them.
    for set in sets.iter().filter(|s| s["namespaced"] == false).chain(sets.iter().filter(|s| s["namespaced"] == true)) {
        let (group, version, plural) = (set["group"].as_str().unwrap(), set["version"].as_str().unwrap(), set["plural"].as_str().unwrap());
        let collection = match set["namespaced"].as_bool() {
            Some(true) => format!("{}/namespaces/{ns}/{plural}", base(group, version)),
            _ => format!("{}/{plural}", base(group, version)),
        };
        for item in set["items"].as_array().expect("items") {
            let mut object = item.clone();
            let meta = object["metadata"].as_object_mut().expect("metadata");
            meta.retain(|k, _| matches!(k.as_str(), "name" | "namespace" | "labels" | "annotations"));
            let created = sim.post(&collection, &object);
            assert_eq!(created.status, 201, "{collection}: {}", created.text());
            if item.get("status").is_some() {
                let name = item["metadata"]["name"].as_str().unwrap();
                let body = serde_json::to_vec(&object).expect("JSON");
                let put = sim.request("PUT", &format!("{collection}/{name}/status"), &[("content-type", "application/json")], Some(&body));
                assert!(put.status == 200 || put.status == 404, "{collection}/{name}/status: {}", put.text());
            }
        }
    }
}

/// What a list answered: its status and the selected `fl-` objects, or its refusal.
fn outcome(status: u16, body: &Value) -> Value {
    if status == 200 {
        let mut names: Vec<&str> = body["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str())
            .filter(|n| n.starts_with("fl-"))
            .collect();
        names.sort_unstable();
        json!({"code": 200, "names": names})
    } else {
        json!({"code": status, "message": body["message"]})
    }
}

fn expected(answer: &Value) -> Value {
    match answer["code"].as_u64() {
        Some(200) => json!({"code": 200, "names": answer["names"]}),
        code => json!({"code": code, "message": answer["message"]}),
    }
}

fn list(process: &Process, path: &str, selector: &str, rv: Option<&str>) -> Value {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("fieldSelector", selector);
    if let Some(rv) = rv {
        query.append_pair("resourceVersion", rv);
    }
    let resp = process.get(&format!("{path}?{}", query.finish()));
    outcome(resp.status, &resp.json())
}

fn metric(process: &Process, name: &str) -> f64 {
    scrape(process).iter().filter(|(k, _)| k.starts_with(name)).map(|(_, v)| v).sum()
}

#[test]
fn every_built_in_field_label_is_answered_from_memory_as_kube_apiserver_answers_it() {
    let captured = answers();
    assert_eq!(captured["apiserver"], "v1.36.2");
    let sim = Process::sim(&["--namespaces", "1", "--nodes", "0", "--compact-interval", "0"]);
    create(&sim, &captured);
    let kache = Process::kache(&sim.url, &["--resources", "*", "--consistent-reads", "memory"]);
    eventually(Duration::from_secs(120), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));

    let answers = captured["answers"].as_array().expect("answers");
    let served = metric(&kache, "kache_lists_served_total");
    let mut mismatches = Vec::new();
    for answer in answers {
        let (path, selector) = (answer["path"].as_str().unwrap(), answer["fieldSelector"].as_str().unwrap());
        let want = expected(answer);
        for (who, got) in [
            ("simulator", list(&sim, path, selector, None)),
            ("kache at resourceVersion=0", list(&kache, path, selector, Some("0"))),
            ("kache, consistent", list(&kache, path, selector, None)),
        ] {
            if got != want {
                mismatches.push(format!("{who}: {path}?fieldSelector={selector}\n  apiserver: {want}\n  got:       {got}"));
            }
        }
    }
    assert!(mismatches.is_empty(), "{} of {} answers differ:\n{}", mismatches.len(), answers.len() * 3, mismatches.join("\n"));

    // Every list of a resource kache caches (all but the refusals) came from memory.
    // kache caches each resource at its preferred version: autoscaling/v1's HorizontalPodAutoscalers are relayed;
    // and nothing proves events fresh (the apiserver serves them from etcd, whose watch sends no bookmarks): their
    // consistent reads are relayed too.
    let path = |a: &Value| a["path"].as_str().unwrap_or_default().to_string();
    let lists = answers.iter().filter(|a| a["code"] == 200 && !path(a).starts_with("/apis/autoscaling/v1/"));
    let from_memory: usize = lists.map(|a| if path(a).ends_with("/events") { 1 } else { 2 }).sum();
    assert_eq!(metric(&kache, "kache_lists_served_total") - served, from_memory as f64, "every list from memory");
}

//! The simulator's watch semantics, consistency under churn, error bodies
//! that no capture covers, and its fault switches — over real HTTP.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{Process, eventually};
use serde_json::{Value, json};

const SHORT: Duration = Duration::from_secs(30);

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"].as_str().expect("a resourceVersion").parse().expect("numeric")
}

fn create_cm(sim: &Process, ns: &str, name: &str, labels: Value) -> Value {
    let r = sim.post(&format!("/api/v1/namespaces/{ns}/configmaps"), &json!({"metadata": {"name": name, "labels": labels}}));
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn patch_labels(sim: &Process, ns: &str, name: &str, labels: Value) -> Value {
    let body = json!({"metadata": {"labels": labels}}).to_string();
    let r = sim.request(
        "PATCH",
        &format!("/api/v1/namespaces/{ns}/configmaps/{name}"),
        &[("content-type", "application/merge-patch+json")],
        Some(body.as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

#[test]
fn a_watch_from_a_revision_gets_only_later_changes_in_order() {
    let sim = Process::sim(&[]);
    let a = create_cm(&sim, "default", "a", json!({}));
    let b = create_cm(&sim, "default", "b", json!({}));
    let w = sim.watch(&format!("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={}", rv(&a)));
    let first = w.next(SHORT).expect("the replayed event");
    assert_eq!((first["type"].as_str(), rv(&first["object"])), (Some("ADDED"), rv(&b)));
    assert_eq!(first["object"]["kind"], "ConfigMap");
    let c = patch_labels(&sim, "default", "a", json!({"x": "1"}));
    let second = w.next(SHORT).expect("a live event");
    assert_eq!((second["type"].as_str(), rv(&second["object"])), (Some("MODIFIED"), rv(&c)));
}

#[test]
fn selector_transitions_arrive_as_added_and_deleted() {
    let sim = Process::sim(&[]);
    create_cm(&sim, "default", "a", json!({"team": "x"}));
    let w = sim.watch("/api/v1/namespaces/default/configmaps?watch=1&labelSelector=team%3Dy&allowWatchBookmarks=true");
    let end = w.next(SHORT).expect("the initial-events-end bookmark");
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    let joined = patch_labels(&sim, "default", "a", json!({"team": "y"}));
    let ev = w.next(SHORT).expect("ADDED on entering the selector");
    assert_eq!((ev["type"].as_str(), rv(&ev["object"])), (Some("ADDED"), rv(&joined)));
    let left = patch_labels(&sim, "default", "a", json!({"team": "z"}));
    let ev = w.next(SHORT).expect("DELETED on leaving the selector");
    assert_eq!(ev["type"], "DELETED");
    // The previous object (still matching), at the revision of the change.
    assert_eq!((ev["object"]["metadata"]["labels"]["team"].as_str(), rv(&ev["object"])), (Some("y"), rv(&left)));
}

#[test]
fn bookmarks_advance_with_the_store_and_timeouts_end_the_watch() {
    let sim = Process::sim(&["--bookmark-interval", "0.3"]);
    let start = sim.revision();
    let w =
        sim.watch(&format!("/api/v1/namespaces/default/pods?watch=1&resourceVersion={start}&allowWatchBookmarks=true&timeoutSeconds=3"));
    // Nothing changed: no bookmark (a bookmark is sent only above the watch's start).
    assert!(w.next(Duration::from_millis(800)).is_none());
    // A change elsewhere moves the revision but not the quiet pods' watch cache (as measured on kube-apiserver 1.36)...
    let other = create_cm(&sim, "default", "elsewhere", json!({}));
    assert!(w.next(Duration::from_millis(800)).is_none(), "another resource's write moves no bookmark");
    // ...until a consistent read of pods makes the cache catch up: the next bookmark carries the revision.
    assert_eq!(sim.get("/api/v1/namespaces/default/pods?limit=1").status, 200);
    let bm = w.next(SHORT).expect("a bookmark");
    assert_eq!(bm["type"], "BOOKMARK");
    assert_eq!(
        bm["object"],
        json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": rv(&other).to_string()}, "spec": {"containers": null}, "status": {}})
    );
    let rest = w.expect_end(SHORT);
    // Then the same bookmark every interval, though nothing moved (kube-apiserver 1.36: one a minute).
    assert!(rest.len() >= 2, "{rest:?}");
    assert!(rest.iter().all(|e| e["type"] == "BOOKMARK" && e["object"] == bm["object"]), "{rest:?}");
}

#[test]
fn a_watch_without_initial_events_from_zero_starts_now() {
    let sim = Process::sim(&["--pods", "5", "--compact-interval", "0"]);
    assert_eq!(sim.request("POST", "/_sim/compact", &[], None).status, 200);
    let w = sim
        .watch("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&sendInitialEvents=false&resourceVersionMatch=NotOlderThan");
    std::thread::sleep(Duration::from_millis(200));
    let c = create_cm(&sim, "default", "now", json!({}));
    let ev = w.next(SHORT).expect("the new configmap");
    assert_eq!((ev["type"].as_str(), rv(&ev["object"])), (Some("ADDED"), rv(&c)));
}

#[test]
fn a_watch_at_a_future_revision_waits_for_it() {
    let sim = Process::sim(&[]);
    let future = sim.revision() + 2;
    let w = sim.watch(&format!("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={future}"));
    create_cm(&sim, "default", "one", json!({}));
    create_cm(&sim, "default", "two", json!({}));
    let three = create_cm(&sim, "default", "three", json!({}));
    let ev = w.next(SHORT).expect("the event after the requested revision");
    assert_eq!(rv(&ev["object"]), rv(&three));
}

#[test]
fn an_initial_events_watch_at_a_future_revision_fails_in_the_stream_after_waiting() {
    let sim = Process::sim(&[]);
    let future = sim.revision() + 100;
    let w = sim.watch(&format!(
        "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={future}"
    ));
    let events = w.expect_end(Duration::from_secs(10));
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    let status = &events[0]["object"];
    assert_eq!((status["code"].as_u64(), status["reason"].as_str()), (Some(504), Some("Timeout")));
    assert!(status["message"].as_str().unwrap_or("").starts_with(&format!("Timeout: Too large resource version: {future}, current: ")));
}

#[test]
fn the_simulator_serves_nothing_until_its_cluster_is_generated() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("an address").port();
    let url = format!("http://127.0.0.1:{port}");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kache"))
        .args(["sim", "--listen", &format!("127.0.0.1:{port}"), "--pods", "20000", "--nodes", "50"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("kache runs");
    common::eventually(Duration::from_secs(30), "the port to answer", || std::net::TcpStream::connect(("127.0.0.1", port)).ok());
    let mut refused = 0;
    let pods = common::eventually(Duration::from_secs(120), "a list", || {
        // Readiness first: generation only ever finishes, so a refused list means it was not ready before either.
        let ready = common::request(&format!("{url}/readyz"), "GET", &[], None).status;
        let r = common::request(&format!("{url}/api/v1/pods?resourceVersion=0"), "GET", &[], None);
        if r.status == 503 {
            assert_eq!(r.json()["reason"], "ServiceUnavailable", "{}", r.text());
            assert_eq!(ready, 503, "ready, yet refusing lists");
            refused += 1;
            return None;
        }
        Some(r)
    });
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(pods.status, 200, "{}", pods.text());
    assert_eq!(pods.json()["items"].as_array().map(Vec::len), Some(20_000), "the first list served saw every pod");
    assert!(refused > 0, "the port answered only once generation was done: nothing was tested");
}

/// Replaying a watch from revision R onto the list at R must give the list
/// at the watch's last revision: the simulator's history is consistent.
#[test]
fn under_churn_list_plus_watch_events_equals_the_later_list() {
    let sim = Process::sim(&["--pods", "300", "--nodes", "5", "--churn", "400"]);
    let base = sim.get("/api/v1/pods").json();
    let r0 = rv(&base);
    let mut state: BTreeMap<String, Value> = base["items"].as_array().expect("items").iter().map(|p| (key(p), p.clone())).collect();
    std::thread::sleep(Duration::from_millis(700));
    let w = sim.watch(&format!("/api/v1/pods?watch=1&resourceVersion={r0}&timeoutSeconds=1"));
    let events = w.expect_end(SHORT);
    assert!(events.len() > 50, "churn wrote only {} events", events.len());
    let mut last = r0;
    for e in &events {
        let obj = &e["object"];
        assert!(rv(obj) > last, "events out of order");
        last = rv(obj);
        match e["type"].as_str() {
            Some("ADDED" | "MODIFIED") => {
                let mut item = obj.clone();
                let m = item.as_object_mut().expect("object");
                m.shift_remove("kind");
                m.shift_remove("apiVersion");
                state.insert(key(obj), item);
            }
            Some("DELETED") => assert!(state.remove(&key(obj)).is_some(), "deleted an unknown pod"),
            other => panic!("unexpected {other:?}"),
        }
    }
    let later = sim.get(&format!("/api/v1/pods?resourceVersion={last}&resourceVersionMatch=Exact")).json();
    let expected: Vec<&Value> = state.values().collect();
    let got: Vec<&Value> = later["items"].as_array().expect("items").iter().collect();
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "list at {last} differs from list at {r0} plus the watch's events");
}

fn key(o: &Value) -> String {
    format!("{}/{}", o["metadata"]["namespace"].as_str().unwrap_or(""), o["metadata"]["name"].as_str().unwrap_or(""))
}

#[test]
fn watch_option_errors_are_joined_like_the_apiserver() {
    let sim = Process::sim(&[]);
    let r = sim.get("/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=Exact");
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json()["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]"
    );
    assert_eq!(r.json()["details"]["causes"].as_array().map(Vec::len), Some(2));
    let exact_future = sim.get(&format!("/api/v1/pods?resourceVersion={}&resourceVersionMatch=Exact", sim.revision() + 100));
    assert_eq!((exact_future.status, exact_future.header("retry-after")), (504, Some("1")));
}

#[test]
fn continue_tokens_expire_with_compaction_and_offer_a_fresh_token() {
    let sim = Process::sim(&["--pods", "20", "--namespaces", "1", "--compact-interval", "0"]);
    let page = sim.get("/api/v1/namespaces/ns-0000/pods?limit=5").json();
    let token = page["metadata"]["continue"].as_str().expect("a token").to_string();
    create_cm(&sim, "default", "bump", json!({}));
    assert_eq!(sim.request("POST", "/_sim/compact", &[], None).status, 200);
    let expired = sim.get(&format!("/api/v1/namespaces/ns-0000/pods?limit=5&continue={token}"));
    assert_eq!(expired.status, 410);
    let fresh = expired.json()["metadata"]["continue"].as_str().expect("a fresh token").to_string();
    let rest = sim.get(&format!("/api/v1/namespaces/ns-0000/pods?limit=100&continue={fresh}")).json();
    let names: Vec<&str> = rest["items"].as_array().expect("items").iter().map(|p| p["metadata"]["name"].as_str().expect("name")).collect();
    assert_eq!(names.len(), 15);
    assert_eq!(names[0], page["items"][4]["metadata"]["name"].as_str().map(|_| names[0]).expect("a name"));
    assert!(*names[0] > *page["items"][4]["metadata"]["name"].as_str().expect("name"));
}

#[test]
fn dropping_watches_ends_every_stream() {
    let sim = Process::sim(&[]);
    let a = sim.watch("/api/v1/configmaps?watch=1");
    let b = sim.watch(&format!("/api/v1/pods?watch=1&resourceVersion={}", sim.revision()));
    // Let both streams subscribe before dropping.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(sim.request("POST", "/_sim/drop-watches", &[], None).status, 200);
    a.expect_end(SHORT);
    b.expect_end(SHORT);
}

#[test]
fn a_stall_holds_responses_until_it_passes() {
    let sim = Process::sim(&[]);
    assert_eq!(sim.request("POST", "/_sim/stall?seconds=1", &[], None).status, 200);
    let started = Instant::now();
    assert_eq!(sim.get("/api/v1/namespaces").status, 200);
    assert!(started.elapsed() >= Duration::from_millis(900), "answered after {:?}", started.elapsed());
}

#[test]
fn a_restart_that_resets_revisions_keeps_objects_and_renumbers_them() {
    let sim = Process::sim(&["--pods", "50", "--compact-interval", "0"]);
    let before = sim.get("/api/v1/pods").json();
    let old_rev = rv(&before);
    let w = sim.watch(&format!("/api/v1/pods?watch=1&resourceVersion={old_rev}"));
    let r = sim.request("POST", "/_sim/restart?reset=true", &[], None).json();
    w.expect_end(SHORT);
    let new_rev = r["revision"].as_u64().expect("a revision");
    assert!(new_rev < old_rev, "revisions were not reset: {new_rev} >= {old_rev}");
    let after = sim.get("/api/v1/pods").json();
    let uids = |v: &Value| v["items"].as_array().expect("items").iter().map(|p| p["metadata"]["uid"].clone()).collect::<Vec<_>>();
    assert_eq!(uids(&after), uids(&before));
    assert!(after["items"].as_array().expect("items").iter().all(|p| rv(p) <= new_rev));
    // The old revision is now in the future for the simulator: a NotOlderThan read waits, then 504.
    let stale = sim.get(&format!("/api/v1/pods?resourceVersion={old_rev}&resourceVersionMatch=NotOlderThan"));
    assert_eq!(stale.status, 504);
    let kept = sim.request("POST", "/_sim/restart?reset=false&reinit-seconds=30", &[], None).json();
    assert_eq!(kept["revision"].as_u64(), Some(new_rev));
    // While the watch cache re-initializes, watches are refused with the apiserver's 429.
    let refused = sim.get("/api/v1/pods?watch=1");
    assert_eq!((refused.status, refused.header("retry-after")), (429, Some("1")));
    assert_eq!(
        refused.text(),
        concat!(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"storage is (re)initializing","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}"#,
            "\n"
        )
    );
    assert_eq!(sim.get("/api/v1/pods").status, 200, "lists are still served");
}

#[test]
fn deletecollection_deletes_only_what_the_selector_picks() {
    let sim = Process::sim(&[]);
    for (name, team) in [("a", "x"), ("b", "y"), ("c", "x")] {
        create_cm(&sim, "default", name, json!({"team": team}));
    }
    let r = sim.request("DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=team%3Dx", &[], None);
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    let deleted: Vec<&str> =
        body["items"].as_array().expect("items").iter().map(|i| i["metadata"]["name"].as_str().expect("name")).collect();
    assert_eq!(deleted, ["a", "c"]);
    let left = sim.get("/api/v1/namespaces/default/configmaps").json();
    assert_eq!(left["items"].as_array().map(|i| i.len()), Some(1));
    assert_eq!(left["items"][0]["metadata"]["name"], "b");
}

#[test]
fn conflicts_not_found_and_already_exists_are_the_apiserver_statuses() {
    let sim = Process::sim(&[]);
    let a = create_cm(&sim, "default", "a", json!({}));
    let again = sim.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "a"}}));
    assert_eq!(
        again.text(),
        concat!(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"a\" already exists","reason":"AlreadyExists","details":{"name":"a","kind":"configmaps"},"code":409}"#,
            "\n"
        )
    );
    let mut stale = a.clone();
    stale["metadata"]["resourceVersion"] = json!((rv(&a) - 1).to_string());
    let put = sim.request(
        "PUT",
        "/api/v1/namespaces/default/configmaps/a",
        &[("content-type", "application/json")],
        Some(stale.to_string().as_bytes()),
    );
    assert_eq!(
        put.text(),
        concat!(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"a","kind":"configmaps"},"code":409}"#,
            "\n"
        )
    );
    let missing = sim.get("/apis/apps/v1/namespaces/default/deployments/nope");
    assert_eq!(
        missing.text(),
        concat!(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"nope\" not found","reason":"NotFound","details":{"name":"nope","group":"apps","kind":"deployments"},"code":404}"#,
            "\n"
        )
    );
    let generated = sim.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"generateName": "gen-"}})).json();
    assert!(generated["metadata"]["name"].as_str().expect("a name").starts_with("gen-"));
    assert_eq!(generated["metadata"]["name"].as_str().map(str::len), Some(9));
}

#[test]
fn requests_are_counted_per_resource_and_verb() {
    let sim = Process::sim(&[]);
    sim.get("/api/v1/pods");
    sim.get("/api/v1/pods?limit=1");
    let _w = sim.watch("/api/v1/pods?watch=1");
    let stats = eventually(SHORT, "the watch to be counted", || {
        let s = sim.get("/_sim/stats").json();
        let count = |verb: &str| {
            s["requests"]
                .as_array()
                .expect("requests")
                .iter()
                .find(|r| r["resource"] == "pods" && r["verb"] == verb)
                .map(|r| r["count"].as_u64())
        };
        (count("watch").flatten() == Some(1)).then_some(s)
    });
    let lists = stats["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .find(|r| r["resource"] == "pods" && r["verb"] == "list")
        .expect("lists counted");
    assert_eq!(lists["count"], 2);
}

/// Method, path, headers, body, and the status code the apiserver answers with.
type MalformedCase<'a> = (&'a str, String, &'a [(&'a str, &'a str)], Option<&'a [u8]>, u16);

#[test]
fn malformed_requests_get_status_bodies_and_the_server_survives() {
    let sim = Process::sim(&["--pods", "3"]);
    let cm = "/api/v1/namespaces/default/configmaps";
    create_cm(&sim, "default", "a", json!({}));
    let merge = [("content-type", "application/merge-patch+json")];
    let json_type = [("content-type", "application/json")];
    let cases: Vec<MalformedCase> = vec![
        ("GET", "/api/v1/nonsense".into(), &[], None, 404),
        ("GET", "/apis/example.com/v9/things".into(), &[], None, 404),
        ("GET", "/api/v1/namespaces/default/pods/a/b/c/d".into(), &[], None, 404),
        ("GET", format!("{cm}?limit=abc"), &[], None, 400),
        ("GET", format!("{cm}?resourceVersion=-1"), &[], None, 400),
        ("GET", format!("{cm}?resourceVersion=99999999999999999999999"), &[], None, 400),
        ("GET", format!("{cm}?continue=e30"), &[], None, 400),
        ("GET", format!("{cm}?continue=%FF%FE"), &[], None, 400),
        ("GET", format!("{cm}?fieldSelector=data.x%3D1"), &[], None, 400),
        ("GET", format!("{cm}?watch=1&fieldSelector=nope%3D1"), &[], None, 400),
        ("POST", cm.into(), &json_type, Some(b"{not json"), 400),
        ("POST", cm.into(), &json_type, Some(b"[1,2]"), 400),
        ("POST", cm.into(), &json_type, Some(br#"{"metadata":5}"#), 422),
        ("POST", cm.into(), &json_type, Some(br#"{"kind":"Pod","metadata":{"name":"x"}}"#), 400),
        ("POST", cm.into(), &[("content-type", "text/plain")], Some(b"x"), 415),
        ("POST", "/api/v1/namespaces/missing/configmaps".into(), &json_type, Some(br#"{"metadata":{"name":"x"}}"#), 404),
        ("PUT", format!("{cm}/a"), &json_type, Some(br#"{"metadata":{"name":"b"}}"#), 400),
        ("PATCH", format!("{cm}/a"), &merge, Some(b"5"), 400),
        ("PATCH", format!("{cm}/a"), &merge, Some(b"{"), 400),
        ("PATCH", format!("{cm}/a"), &[("content-type", "application/json-patch+json")], Some(br#"[{"op":"remove","path":"/nope"}]"#), 422),
        ("PATCH", format!("{cm}/missing"), &merge, Some(b"{}"), 404),
        ("DELETE", format!("{cm}/missing"), &[], None, 404),
        ("POST", format!("{cm}/a"), &json_type, Some(b"{}"), 405),
        ("GET", cm.into(), &[("accept", "text/html")], None, 406),
    ];
    for (method, path, headers, body, want) in cases {
        let r = sim.request(method, &path, headers, body);
        assert_eq!(r.status, want, "{method} {path}: {}", r.text());
        let v = r.json();
        assert_eq!((v["kind"].as_str(), v["code"].as_u64()), (Some("Status"), Some(u64::from(want))), "{method} {path}");
    }
    let big = vec![b'x'; 4 * 1024 * 1024];
    assert_eq!(sim.request("POST", cm, &json_type, Some(&big)).status, 413);
    assert_eq!(sim.get("/api/v1/pods").json()["items"].as_array().map(Vec::len), Some(3), "the server still answers");
}

#[test]
fn generated_rbac_objects_bind_generated_cluster_roles_and_print_as_tables() {
    let sim = Process::sim(&["--rbac", "7", "--namespaces", "3"]);
    let roles = sim.get("/apis/rbac.authorization.k8s.io/v1/clusterroles").json();
    let names: Vec<&str> = roles["items"].as_array().unwrap().iter().filter_map(|r| r["metadata"]["name"].as_str()).collect();
    let generated: Vec<&&str> = names.iter().filter(|n| n.starts_with("system:controller:generated-")).collect();
    assert_eq!(generated.len(), 7, "{names:?}");
    assert!(roles["items"].as_array().unwrap().iter().all(|r| r["rules"].as_array().is_some_and(|rules| !rules.is_empty())));
    let bindings = sim.get("/apis/rbac.authorization.k8s.io/v1/rolebindings").json();
    let bindings = bindings["items"].as_array().unwrap();
    assert_eq!(bindings.len(), 7);
    let namespaces: std::collections::BTreeSet<&str> = bindings.iter().filter_map(|b| b["metadata"]["namespace"].as_str()).collect();
    assert_eq!(namespaces.len(), 3, "spread over the namespaces");
    assert!(bindings.iter().all(|b| names.contains(&b["roleRef"]["name"].as_str().unwrap())), "each binds a generated role");
    let table = sim.request(
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/rolebindings",
        &[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
        None,
    );
    assert_eq!(table.json()["rows"].as_array().map(Vec::len), Some(7));
}

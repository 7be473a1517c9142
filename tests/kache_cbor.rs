//! CBOR through kache, against the simulator as the oracle: with the
//! apiserver's `CBORServingAndStorage` gate on (`kache sim --cbor`) kache
//! learns that upstream serves CBOR and answers lists, GETs, metadata-only
//! forms, watches and errors from memory, byte for byte the simulator's;
//! with the gate off every CBOR request passes through and gets the
//! apiserver's 406, while a request that also accepts JSON gets JSON from
//! memory, as the apiserver would answer it.

mod common;

use std::time::Duration;

use common::{Process, eventually};
use serde_json::json;

const CBOR: &str = "application/cbor";
const META: &str = "application/cbor;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const META_ONE: &str = "application/cbor;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const SELF_DESCRIBED: &[u8] = &[0xd9, 0xd9, 0xf7];

fn ready(kache: &Process) {
    eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
}

fn metric(kache: &Process, name: &str) -> u64 {
    let text = kache.get("/metrics").text();
    text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse().ok()).unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// Asserts kache's and the simulator's answers to GET `path` are the same
/// bytes with the same status and Content-Type; returns kache's.
fn same(kache: &Process, sim: &Process, path: &str, accept: &str) -> common::Resp {
    let (k, s) = (kache.request("GET", path, &[("accept", accept)], None), sim.request("GET", path, &[("accept", accept)], None));
    assert_eq!((k.status, k.header("content-type")), (s.status, s.header("content-type")), "{path} {accept}: {}", k.text());
    assert!(k.body == s.body, "{path} {accept}: kache {} bytes, simulator {}", k.body.len(), s.body.len());
    k
}

/// Waits until kache has learned that upstream serves CBOR for the
/// collection `path` (a CBOR list of it answered from memory).
fn learned(kache: &Process, path: &str) {
    eventually(Duration::from_secs(20), "kache learns upstream's CBOR", || {
        let before = metric(kache, "kache_lists_served_total");
        let r = kache.request("GET", &format!("{path}?resourceVersion=0"), &[("accept", CBOR)], None);
        assert_eq!(r.status, 200, "{}", r.text());
        (metric(kache, "kache_lists_served_total") > before).then_some(())
    });
}

#[test]
fn cbor_is_answered_from_memory_as_the_simulator_writes_it_when_upstream_serves_it() {
    let sim = Process::sim(&["--cbor", "--pods", "150", "--namespaces", "2", "--nodes", "3", "--crd", "widgets.example.com/v1=Widget"]);
    let json = [("content-type", "application/json")];
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default", "labels": {"b": "2", "a": "1"}},
        "type": "Opaque", "data": {"password": "c2VjcmV0", "empty": "", "bin": "/wAA"}});
    assert_eq!(sim.post("/api/v1/namespaces/default/secrets", &secret).status, 201);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
        "data": {"a": "x"}, "binaryData": {"blob": "AAEC/f7/"}});
    assert_eq!(sim.post("/api/v1/namespaces/default/configmaps", &cm).status, 201);
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let floats =
        r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"alpha"},"spec":{"size":"large","ratio":0.625,"on":true}}"#;
    assert_eq!(sim.request("POST", widgets, &json, Some(floats.as_bytes())).status, 201);
    let kache = Process::kache(&sim.url, &["--resources", "pods,namespaces,secrets,configmaps,widgets.example.com"]);
    ready(&kache);

    // The simulator serves CBOR: a self-described document.
    let direct = sim.request("GET", "/api/v1/namespaces/default/secrets/s", &[("accept", CBOR)], None);
    assert_eq!((direct.status, direct.header("content-type")), (200, Some(CBOR)));
    assert!(direct.body.starts_with(SELF_DESCRIBED));
    // `data` is tag 22 (d6) around the bytes: {"bin": 22(h'ff0000')}.
    assert!(direct.body.windows(9).any(|w| w == b"\x43bin\xd6\x43\xff\x00\x00"), "{:02x?}", direct.body);

    for path in ["/api/v1/pods", "/api/v1/secrets", "/api/v1/configmaps", "/api/v1/namespaces"] {
        learned(&kache, path);
    }
    let (lists, gets, passed) = (
        metric(&kache, "kache_lists_served_total"),
        metric(&kache, "kache_gets_served_total"),
        metric(&kache, "kache_passed_through_total"),
    );
    let first = sim.get("/api/v1/pods?limit=1").json();
    let (ns, name) =
        (first["items"][0]["metadata"]["namespace"].as_str().unwrap(), first["items"][0]["metadata"]["name"].as_str().unwrap());
    let all = same(&kache, &sim, "/api/v1/pods?resourceVersion=0", CBOR);
    assert!(all.body.starts_with(SELF_DESCRIBED));
    let rv = first["metadata"]["resourceVersion"].as_str().unwrap();
    let page = same(&kache, &sim, &format!("/api/v1/pods?limit=60&resourceVersion={rv}&resourceVersionMatch=Exact"), CBOR);
    assert!(page.body.windows(9).any(|w| w == b"\x48continue"), "a page with a continue token");
    same(&kache, &sim, &format!("/api/v1/namespaces/{ns}/pods?resourceVersion=0"), META);
    same(&kache, &sim, &format!("/api/v1/namespaces/{ns}/pods/{name}?resourceVersion=0"), CBOR);
    same(&kache, &sim, &format!("/api/v1/namespaces/{ns}/pods/{name}?resourceVersion=0"), META_ONE);
    same(&kache, &sim, "/api/v1/namespaces/default/secrets/s?resourceVersion=0", CBOR);
    same(&kache, &sim, "/api/v1/namespaces/default/configmaps/cm?resourceVersion=0", CBOR);
    same(&kache, &sim, "/api/v1/namespaces?resourceVersion=0", "application/cbor, application/json");
    let missing = same(&kache, &sim, "/api/v1/namespaces/default/secrets/nope?resourceVersion=0", CBOR);
    assert_eq!(missing.status, 404);
    assert!(missing.body.starts_with(SELF_DESCRIBED), "a CBOR Status");
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 4, "the lists from memory");
    assert_eq!(metric(&kache, "kache_gets_served_total"), gets + 5, "the GETs from memory");
    // A CBOR Table: the apiserver's 406 (no CBOR Tables), passed through.
    let table = kache.request("GET", "/api/v1/pods", &[("accept", "application/cbor;as=Table;v=v1;g=meta.k8s.io")], None);
    assert_eq!(table.status, 406);
    assert_eq!(metric(&kache, "kache_passed_through_total"), passed + 1, "only the Table passed through");
    // Nothing acceptable: the apiserver's 406, naming CBOR among its representations.
    let refused = same(&kache, &sim, "/api/v1/pods?resourceVersion=0", "text/html");
    assert_eq!(refused.status, 406);
    assert!(refused.text().contains("application/cbor, application/json;stream=watch"), "{}", refused.text());
    // A bad request: the apiserver's 400 Status, in CBOR.
    let bad = same(&kache, &sim, "/api/v1/pods?resourceVersion=0&labelSelector=a%3D%3D%3Db", CBOR);
    assert_eq!(bad.status, 400);
    assert!(bad.body.starts_with(SELF_DESCRIBED), "{}", bad.text());

    // A streaming list as a CBOR sequence: ADDED for every pod, then the initial-events-end bookmark.
    let path = format!(
        "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=2"
    );
    let watches = metric(&kache, "kache_watches_served_total");
    let stream = same(&kache, &sim, &path, CBOR);
    assert_eq!(stream.header("content-type"), Some("application/cbor-seq"));
    let events = stream.body.windows(3).filter(|w| *w == SELF_DESCRIBED).count();
    assert_eq!(events, 2 * 151, "150 ADDED and a BOOKMARK, each a document around a document");
    assert!(stream.body.windows(25).any(|w| w == b"k8s.io/initial-events-end"));
    let metadata = same(&kache, &sim, &path, META_ONE);
    assert!(metadata.body.windows(22).any(|w| w == b"\x55PartialObjectMetadata"), "metadata-only events");
    assert_eq!(metric(&kache, "kache_watches_served_total"), watches + 2, "the watches from memory");

    // A custom resource: from memory while its objects have no plain integers (a stored float may show as one in JSON)…
    learned(&kache, "/apis/example.com/v1/widgets");
    let (lists, gets) = (metric(&kache, "kache_lists_served_total"), metric(&kache, "kache_gets_served_total"));
    let alpha = same(&kache, &sim, &format!("{widgets}/alpha?resourceVersion=0"), CBOR);
    assert!(alpha.body.windows(9).any(|w| w == b"\x45ratio\xf9\x39\x00"), "0.625 as a half float");
    same(&kache, &sim, &format!("{widgets}?resourceVersion=0"), CBOR);
    assert_eq!(
        (metric(&kache, "kache_lists_served_total"), metric(&kache, "kache_gets_served_total")),
        (lists + 1, gets + 1),
        "the widget and their list from memory"
    );
    // …then, once one has, its CBOR passes through: the apiserver's answer, whatever it holds.
    let ints = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"beta"},"spec":{"replicas":3}}"#;
    assert_eq!(sim.request("POST", widgets, &json, Some(ints.as_bytes())).status, 201);
    let passed = metric(&kache, "kache_passed_through_total");
    eventually(Duration::from_secs(10), "kache holds beta", || {
        (kache.get(&format!("{widgets}/beta?resourceVersion=0")).status == 200).then_some(())
    });
    let list = same(&kache, &sim, &format!("{widgets}?resourceVersion=0"), CBOR);
    assert_eq!(list.status, 200);
    assert!(metric(&kache, "kache_passed_through_total") > passed, "passed through");
    // Their metadata has no such doubt: from memory.
    let lists = metric(&kache, "kache_lists_served_total");
    same(&kache, &sim, &format!("{widgets}?resourceVersion=0"), META);
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 1);

    // Live events: ADDED, MODIFIED and DELETED frames as the simulator writes them.
    let rv = sim.get("/api/v1/namespaces/default/secrets").json()["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let live = format!("/api/v1/namespaces/default/secrets?watch=1&resourceVersion={rv}&timeoutSeconds=3");
    let watches = metric(&kache, "kache_watches_served_total");
    let (k, s) = std::thread::scope(|scope| {
        let k = scope.spawn(|| kache.request("GET", &live, &[("accept", CBOR)], None));
        let s = scope.spawn(|| sim.request("GET", &live, &[("accept", CBOR)], None));
        std::thread::sleep(Duration::from_millis(500));
        let s2 = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s2", "namespace": "default"}, "data": {"k": "dg=="}});
        assert_eq!(sim.post("/api/v1/namespaces/default/secrets", &s2).status, 201);
        let patch = [("content-type", "application/merge-patch+json")];
        let patched = sim.request("PATCH", "/api/v1/namespaces/default/secrets/s2", &patch, Some(br#"{"data":{"k":"dzI="}}"#));
        assert_eq!(patched.status, 200, "{}", patched.text());
        assert_eq!(sim.request("DELETE", "/api/v1/namespaces/default/secrets/s2", &[], None).status, 200);
        (k.join().unwrap(), s.join().unwrap())
    });
    assert_eq!((k.status, k.header("content-type")), (200, Some("application/cbor-seq")));
    assert!(k.body == s.body, "kache {} bytes, simulator {}", k.body.len(), s.body.len());
    for typ in [&b"\x45ADDED"[..], b"\x48MODIFIED", b"\x47DELETED"] {
        assert!(k.body.windows(typ.len()).any(|w| w == typ), "{}", String::from_utf8_lossy(typ));
    }
    assert_eq!(metric(&kache, "kache_watches_served_total"), watches + 1, "the live watch from memory");
}

#[test]
fn with_the_gate_off_upstream_every_cbor_request_gets_the_apiservers_answer() {
    let sim = Process::sim(&["--pods", "20", "--namespaces", "2", "--nodes", "2"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,namespaces"]);
    ready(&kache);
    let direct = sim.request("GET", "/api/v1/pods", &[("accept", CBOR)], None);
    assert_eq!(direct.status, 406, "the simulator without --cbor refuses CBOR");
    let first = sim.get("/api/v1/pods?limit=1").json();
    let (ns, name) =
        (first["items"][0]["metadata"]["namespace"].as_str().unwrap(), first["items"][0]["metadata"]["name"].as_str().unwrap());
    let watch = "/api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=1";
    let paths =
        ["/api/v1/pods?resourceVersion=0".to_string(), format!("/api/v1/namespaces/{ns}/pods/{name}?resourceVersion=0"), watch.to_string()];
    for _ in 0..2 {
        // Asked twice: before and after kache learned that upstream refuses CBOR.
        for path in &paths {
            for accept in [CBOR, META, META_ONE] {
                let passed = metric(&kache, "kache_passed_through_total");
                let r = same(&kache, &sim, path, accept);
                assert_eq!(r.status, 406, "{path} {accept}");
                assert_eq!(metric(&kache, "kache_passed_through_total"), passed + 1, "{path} {accept}: passed through");
            }
        }
    }
    // Accepting JSON as well: the apiserver answers JSON, and so does kache, from memory once it knows.
    eventually(Duration::from_secs(20), "JSON from memory", || {
        let lists = metric(&kache, "kache_lists_served_total");
        let r = same(&kache, &sim, "/api/v1/pods?resourceVersion=0", "application/cbor, application/json");
        assert_eq!(r.header("content-type"), Some("application/json"));
        (metric(&kache, "kache_lists_served_total") > lists).then_some(())
    });
}

#[test]
fn an_apiserver_restarted_without_cbor_behind_kache_is_followed_once_kache_watches_it_again() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let sim = Process::sim_at(port, &["--cbor", "--pods", "10"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods"]);
    ready(&kache);
    learned(&kache, "/api/v1/pods");
    // The apiserver comes back with its gate off: kache's watch ends, and what it learned with it.
    drop(sim);
    let _sim = Process::sim_at(port, &["--pods", "10"]);
    let refused = eventually(Duration::from_secs(60), "the apiserver's 406 through kache", || {
        let r = kache.request("GET", "/api/v1/pods?resourceVersion=0", &[("accept", CBOR)], None);
        (r.status == 406).then_some(r)
    });
    assert!(!refused.text().contains("application/cbor"), "the gate is off: {}", refused.text());
    ready(&kache);
    for _ in 0..3 {
        let passed = metric(&kache, "kache_passed_through_total");
        assert_eq!(kache.request("GET", "/api/v1/pods?resourceVersion=0", &[("accept", CBOR)], None).status, 406);
        assert_eq!(metric(&kache, "kache_passed_through_total"), passed + 1, "passed through");
    }
}

//! Sharded lists and watches (KEP-5866) through kache as a real process in
//! front of the simulator as a real process: with the gate on upstream,
//! answers from memory equal the simulator's byte for byte and four sharded
//! watchers split the pods exactly; with it off, every sharded request
//! passes through and gets the simulator's (ignoring) answer.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use apimachinery::shard::ShardSelector;
use common::{Process, Resp, eventually};

const META: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

fn ready(kache: &Process) {
    eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
}

fn passed_through(kache: &Process) -> u64 {
    let text = kache.get("/metrics").text();
    text.lines().find_map(|l| l.strip_prefix("kache_passed_through_total")?.trim().parse().ok()).unwrap_or(0)
}

fn q(v: &str) -> String {
    form_urlencoded::byte_serialize(v.as_bytes()).collect()
}

/// `shardSelector=` for `[start, end)` of uids, ends as 16 hex digits (or 2^64).
fn range(start: u128, end: u128) -> String {
    let hex = |v: u128| if v == 1 << 64 { "0x10000000000000000".to_string() } else { format!("0x{v:016x}") };
    format!("shardRange(object.metadata.uid, '{}', '{}')", hex(start), hex(end))
}

fn get(p: &Process, path: &str, accept: &str) -> Resp {
    p.request("GET", path, &[("accept", accept)], None)
}

fn same(what: &str, kache: &Resp, sim: &Resp) {
    assert_eq!(kache.status, sim.status, "{what}: status; kache said {}", kache.text());
    assert!(kache.body == sim.body, "{what}: bodies differ\nkache: {:.800}\nsim:   {:.800}", kache.text(), sim.text());
}

fn rv_of(resp: &Resp) -> u64 {
    resp.json()["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).expect("a list revision")
}

fn widget(sim: &Process, i: usize) {
    let body = format!(
        r#"{{"apiVersion":"example.com/v1","kind":"Widget","metadata":{{"name":"w-{i:02}","namespace":"ns-0001","labels":{{"tier":"t{}"}}}},"spec":{{"size":{i}}}}}"#,
        i % 3
    );
    let path = "/apis/example.com/v1/namespaces/ns-0001/widgets";
    assert_eq!(sim.request("POST", path, &[("content-type", "application/json")], Some(body.as_bytes())).status, 201);
}

#[test]
fn sharded_lists_from_memory_match_the_simulator_byte_for_byte() {
    let sim = Process::sim(&[
        "--sharded-list-and-watch",
        "--pods",
        "400",
        "--namespaces",
        "4",
        "--configmaps",
        "40",
        "--crd",
        "widgets.example.com/v1=Widget",
        "--compact-interval",
        "0",
    ]);
    for i in 0..24 {
        widget(&sim, i);
    }
    let kache = Process::kache(&sim.url, &["--resources", "pods,configmaps,widgets.example.com"]);
    ready(&kache);
    let half = range(0, 1 << 63);
    let r = rv_of(&sim.get("/api/v1/pods?limit=1"));
    let exact = format!("resourceVersion={r}&resourceVersionMatch=Exact");
    // The first sharded request of a resource passes through while kache learns upstream honours them.
    eventually(Duration::from_secs(30), "sharded lists from memory", || {
        let before = passed_through(&kache);
        ["/api/v1/pods", "/api/v1/configmaps", "/apis/example.com/v1/widgets"]
            .iter()
            .all(|p| kache.get(&format!("{p}?{exact}&shardSelector={}", q(&half))).status == 200)
            .then_some(())
            .filter(|_| passed_through(&kache) == before)
    });
    let selectors = [
        half.clone(),
        range(1 << 63, 1 << 64),
        // Two ranges, written loosely: shardInfo has them canonically.
        "(shardRange(object.metadata.uid,\"0x0000000000000000\",'0x4000000000000000'))  ||shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
            .to_string(),
        "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')".to_string(),
    ];
    let extras = ["", "&labelSelector=app%3Dapp-3", "&fieldSelector=metadata.namespace%21%3Dns-0002", "&limit=7", "&limit=1"];
    let before = passed_through(&kache);
    for path in ["/api/v1/pods", "/api/v1/namespaces/ns-0001/pods", "/api/v1/configmaps", "/apis/example.com/v1/widgets"] {
        for s in &selectors {
            for extra in extras {
                let mut query = format!("{path}?{exact}&shardSelector={}{extra}", q(s));
                // Custom resources have no protobuf: those requests are upstream's to refuse.
                for accept in ["application/json", META, PROTOBUF].into_iter().filter(|a| *a != PROTOBUF || !path.contains("widgets")) {
                    let (k, sm) = (get(&kache, &query, accept), get(&sim, &query, accept));
                    same(&format!("{query} as {accept}"), &k, &sm);
                }
                // A Table's ages are computed when it is written: compare what does not move.
                let (k, sm) = (get(&kache, &query, TABLE).json(), get(&sim, &query, TABLE).json());
                assert_eq!(k["metadata"], sm["metadata"], "{query} as a Table");
                let names = |t: &serde_json::Value| t["rows"].as_array().unwrap().iter().map(|r| r["cells"][0].clone()).collect::<Vec<_>>();
                assert_eq!(names(&k), names(&sm), "{query} as a Table");
                // Every page, following the continue tokens (interchangeable between the two).
                let mut pages = 0;
                while let Some(token) =
                    get(&sim, &query, "application/json").json()["metadata"]["continue"].as_str().filter(|t| !t.is_empty())
                {
                    query = format!("{path}?shardSelector={}{extra}&continue={token}", q(s));
                    same(&query, &kache.get(&query), &sim.get(&query));
                    pages += 1;
                    assert!(pages < 500, "{query}: pages without end");
                }
            }
        }
    }
    // The shard's pods: JSON lists carry shardInfo; the halves split the collection.
    let lower = kache.get(&format!("/api/v1/pods?{exact}&shardSelector={}", q(&half))).json();
    assert_eq!(lower["metadata"]["shardInfo"]["selector"], half.as_str());
    let upper = kache.get(&format!("/api/v1/pods?{exact}&shardSelector={}", q(&range(1 << 63, 1 << 64)))).json();
    let all = kache.get(&format!("/api/v1/pods?{exact}")).json();
    let names = |l: &serde_json::Value| -> Vec<String> {
        l["items"].as_array().unwrap().iter().map(|o| o["metadata"]["name"].as_str().unwrap().to_owned()).collect()
    };
    let (lower, upper) = (names(&lower), names(&upper));
    assert!(!lower.is_empty() && !upper.is_empty());
    assert_eq!(lower.len() + upper.len(), names(&all).len());
    // Malformed selectors: the apiserver's 500, from memory.
    for bad in [
        "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
        "shardRange(object.metadata.name, '0x0000000000000000', '0x1000000000000000')",
        "   ",
    ] {
        for query in [format!("/api/v1/pods?shardSelector={}", q(bad)), format!("/api/v1/pods?watch=1&shardSelector={}", q(bad))] {
            same(&query, &kache.get(&query), &sim.get(&query));
            assert_eq!(kache.get(&query).status, 500);
        }
    }
    assert_eq!(passed_through(&kache), before, "every sharded list above was answered from memory");
}

/// Pod `name` in ns-0001, labelled `gen`.
fn pod(name: &str, generation: u32) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"ns-0001","labels":{{"gen":"{generation}"}}}},"spec":{{"containers":[{{"name":"c","image":"i"}}]}}}}"#
    )
    .into_bytes()
}

#[test]
fn four_sharded_watchers_split_the_pods_and_every_event_exactly() {
    let sim = Process::sim(&["--sharded-list-and-watch", "--pods", "200", "--namespaces", "2", "--compact-interval", "0"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods"]);
    ready(&kache);
    let quarter = 1u128 << 62;
    let shards: Vec<String> = (0..4).map(|i| range(i * quarter, (i + 1) * quarter)).collect();
    let path = "/api/v1/namespaces/ns-0001/pods";
    // Learnt once the first sharded request has gone upstream.
    eventually(Duration::from_secs(30), "sharded lists from memory", || {
        let before = passed_through(&kache);
        (kache.get(&format!("{path}?resourceVersion=0&shardSelector={}", q(&shards[0]))).status == 200 && passed_through(&kache) == before)
            .then_some(())
    });
    let before = passed_through(&kache);
    let watches: Vec<_> = shards
        .iter()
        .map(|s| {
            kache.watch(&format!(
                "{path}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&shardSelector={}",
                q(s)
            ))
        })
        .collect();
    // The initial events: together exactly the namespace's pods, each in the shard of its uid.
    let mut initial = BTreeMap::new();
    for (i, w) in watches.iter().enumerate() {
        let selector = ShardSelector::parse(&shards[i]).unwrap();
        loop {
            let e = w.next(Duration::from_secs(30)).expect("initial events");
            if e["type"] == "BOOKMARK" {
                assert_eq!(e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
                break;
            }
            assert_eq!(e["type"], "ADDED");
            let m = &e["object"]["metadata"];
            assert!(selector.selects(m["uid"].as_str().unwrap(), "ns-0001"), "{} in shard {i}", m["name"]);
            assert!(initial.insert(m["name"].as_str().unwrap().to_owned(), i).is_none(), "{} in two shards", m["name"]);
        }
    }
    let listed: BTreeSet<String> =
        sim.get(path).json()["items"].as_array().unwrap().iter().map(|o| o["metadata"]["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(initial.keys().cloned().collect::<BTreeSet<_>>(), listed);
    // Creates, updates, deletes: each reaches exactly the shard of its uid, in order.
    let json = [("content-type", "application/json")];
    let names: Vec<String> = (0..12).map(|i| format!("sharded-{i:02}")).collect();
    let mut expected: Vec<Vec<(String, String)>> = vec![Vec::new(); 4];
    let shard_of = |uid: &str| (0..4).find(|&i| ShardSelector::parse(&shards[i]).unwrap().selects(uid, "ns-0001")).unwrap();
    for n in &names {
        let created = sim.request("POST", path, &json, Some(&pod(n, 1))).json();
        let uid = created["metadata"]["uid"].as_str().unwrap().to_owned();
        let s = shard_of(&uid);
        expected[s].push(("ADDED".into(), n.clone()));
        let mut changed = created.clone();
        changed["metadata"]["labels"]["gen"] = "2".into();
        assert_eq!(sim.request("PUT", &format!("{path}/{n}"), &json, Some(changed.to_string().as_bytes())).status, 200);
        expected[s].push(("MODIFIED".into(), n.clone()));
    }
    for n in &names {
        assert_eq!(sim.request("DELETE", &format!("{path}/{n}"), &[], None).status, 200);
        let s = expected.iter().position(|e| e.iter().any(|(_, m)| m == n)).unwrap();
        expected[s].push(("DELETED".into(), n.clone()));
    }
    for (i, w) in watches.iter().enumerate() {
        let mut got = Vec::new();
        while got.len() < expected[i].len() {
            let e = w.next(Duration::from_secs(30)).unwrap_or_else(|| panic!("shard {i}: got {got:?}, expected {:?}", expected[i]));
            if e["type"] != "BOOKMARK" {
                got.push((e["type"].as_str().unwrap().to_owned(), e["object"]["metadata"]["name"].as_str().unwrap().to_owned()));
            }
        }
        assert_eq!(got, expected[i], "shard {i}");
        // Nothing more: a stray event would come with the others.
        let extra = w.next(Duration::from_millis(500)).filter(|e| e["type"] != "BOOKMARK");
        assert!(extra.is_none(), "shard {i}: also {extra:?}");
    }
    assert!(expected.iter().filter(|e| !e.is_empty()).count() >= 2, "the new pods fell in several shards");
    assert_eq!(passed_through(&kache), before, "the sharded watches were answered from memory");
}

#[test]
fn with_the_gate_off_upstream_every_sharded_request_passes_through() {
    let sim = Process::sim(&["--pods", "60", "--namespaces", "2", "--compact-interval", "0"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods"]);
    ready(&kache);
    let r = rv_of(&sim.get("/api/v1/pods?limit=1"));
    for s in [range(0, 1 << 63), "shardRange(object.metadata.uid, '0x0', '0x1')".to_string()] {
        for round in 0..3 {
            let before = passed_through(&kache);
            let query = format!("/api/v1/pods?resourceVersion={r}&resourceVersionMatch=Exact&shardSelector={}", q(&s));
            let (k, sm) = (kache.get(&query), sim.get(&query));
            same(&format!("{query} ({round})"), &k, &sm);
            assert!(k.json()["metadata"]["shardInfo"].is_null(), "the whole list, as upstream ignores the selector");
            assert_eq!(k.json()["items"].as_array().unwrap().len(), 60);
            assert_eq!(passed_through(&kache), before + 1, "{query}: passed through");
        }
    }
    let query = format!("/api/v1/pods?watch=1&resourceVersion={r}&timeoutSeconds=1&shardSelector={}", q(&range(0, 1 << 62)));
    let before = passed_through(&kache);
    assert_eq!(kache.get(&query).status, 200);
    assert_eq!(passed_through(&kache), before + 1, "a sharded watch passed through");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("an address").port()
}

#[test]
fn an_apiserver_restarted_with_the_gate_flipped_is_learnt_again() {
    let port = free_port();
    let workload = ["--pods", "60", "--namespaces", "2", "--compact-interval", "0"];
    let gate_on = [&["--sharded-list-and-watch"][..], &workload[..]].concat();
    let mut on = Process::sim_at(port, &gate_on);
    let kache = Process::kache(&on.url, &["--resources", "pods"]);
    ready(&kache);
    let sharded = format!("/api/v1/pods?resourceVersion=0&shardSelector={}", q(&range(0, 1 << 63)));
    let from_memory_with_shard_info = || {
        eventually(Duration::from_secs(60), "sharded lists from memory", || {
            let before = passed_through(&kache);
            let r = kache.get(&sharded);
            (r.status == 200 && r.json()["metadata"]["shardInfo"]["selector"].is_string() && passed_through(&kache) == before).then_some(())
        })
    };
    from_memory_with_shard_info();
    // Restarted with the gate off (a downgrade, or the alpha turned off):
    // kache's watch breaks, and no sharded answer comes from memory after.
    on.child_kill().expect("stopped");
    let watch_closed = r#"kache_upstream_watch_open{resource="pods"} 0"#;
    eventually(Duration::from_secs(30), "kache's watch to end", || {
        kache.get("/metrics").text().lines().any(|l| l == watch_closed).then_some(())
    });
    let mut off = Process::sim_at(port, &workload);
    eventually(Duration::from_secs(30), "the simulator's workload", || (off.get("/readyz").status == 200).then_some(()));
    for _ in 0..20 {
        let r = kache.get(&sharded);
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(r.json()["metadata"]["shardInfo"].is_null(), "the apiserver now ignores the selector: {:.300}", r.text());
        assert_eq!(r.json()["items"].as_array().unwrap().len(), 60);
        std::thread::sleep(Duration::from_millis(100));
    }
    ready(&kache);
    let before = passed_through(&kache);
    assert!(kache.get(&sharded).json()["metadata"]["shardInfo"].is_null());
    assert_eq!(passed_through(&kache), before + 1, "still passed through once kache is ready again");
    // And on again: learnt again.
    off.child_kill().expect("stopped");
    eventually(Duration::from_secs(30), "kache's watch to end", || {
        kache.get("/metrics").text().lines().any(|l| l == watch_closed).then_some(())
    });
    let _on = Process::sim_at(port, &gate_on);
    from_memory_with_shard_info();
}

//! kache as a real process in front of the simulator as a real process.
//! Differential: every list request shape answered by kache is byte for byte
//! what the simulator answers at the same revision. Multiplexing: however
//! many clients list, upstream sees one list and one watch per resource,
//! and one more of each only after a fault. kubectl works through kache.

mod common;

use std::io::Read;
use std::time::Duration;

use common::{Process, Resp, eventually};

fn ready(kache: &Process) {
    eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
}

fn rv_of(resp: &Resp) -> u64 {
    resp.json()["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).expect("a list revision")
}

/// The query with `resourceVersion`/`resourceVersionMatch` replaced by Exact at `rv`.
fn exact_at(query: &str, rv: u64) -> String {
    let mut q: Vec<String> = query.split('&').filter(|p| !p.is_empty() && !p.starts_with("resourceVersion")).map(str::to_string).collect();
    q.push(format!("resourceVersion={rv}"));
    q.push("resourceVersionMatch=Exact".into());
    q.join("&")
}

fn same(what: &str, kache: &Resp, sim: &Resp) {
    assert_eq!(kache.status, sim.status, "{what}: status; kache said {}", kache.text());
    assert!(kache.body == sim.body, "{what}: bodies differ\nkache: {:.600}\nsim:   {:.600}", kache.text(), sim.text());
}

#[test]
fn every_list_shape_matches_the_simulator_at_the_same_revision() {
    let sim = Process::sim(&[
        "--pods",
        "700",
        "--nodes",
        "20",
        "--namespaces",
        "4",
        "--configmaps",
        "40",
        "--churn",
        "100",
        "--compact-interval",
        "0",
    ]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,configmaps,namespaces,nodes"]);
    ready(&kache);
    let pods = "/api/v1/pods";
    let r = rv_of(&kache.get(&format!("{pods}?resourceVersion=0")));
    let shapes = [
        "limit=1",
        "limit=7",
        "limit=500",
        "",
        "labelSelector=app%3Dapp-3",
        "labelSelector=tier%20in%20(web,db),app!%3Dapp-1&limit=25",
        "labelSelector=!nothere",
        "fieldSelector=spec.nodeName%3Dnode-0003",
        "fieldSelector=status.phase%3DRunning,metadata.namespace!%3Dns-0001&limit=40",
        "fieldSelector=spec.hostNetwork%3Dfalse&limit=3",
        "fieldSelector=metadata.name%3Dapp-00001-0000010",
    ];
    for path in [pods, "/api/v1/namespaces/ns-0002/pods", "/api/v1/configmaps"] {
        for shape in shapes.iter().filter(|s| path != "/api/v1/configmaps" || !s.contains("fieldSelector=s")) {
            // Exact, and the legacy form (a revision with a limit reads exactly).
            let exact = format!("{path}?{}", exact_at(shape, r));
            same(&exact, &kache.get(&exact), &sim.get(&exact));
            if shape.contains("limit") {
                let legacy = format!("{path}?{shape}&resourceVersion={r}");
                same(&legacy, &kache.get(&legacy), &sim.get(&legacy));
            }
            // Any and NotOlderThan answer at kache's revision: compare with the simulator there.
            for rv in ["resourceVersion=0".to_string(), format!("resourceVersion={r}&resourceVersionMatch=NotOlderThan")] {
                let q = format!("{path}?{shape}&{rv}");
                let got = kache.get(&q);
                assert_eq!(got.status, 200, "{q}: {}", got.text());
                let at = rv_of(&got);
                assert!(at >= r, "{q}: older than asked");
                // Any ignores limit, as the apiserver does.
                let oracle = format!("{path}?{}", exact_at(if rv.ends_with("=0") { "" } else { shape }, at));
                let oracle = if rv.ends_with("=0") {
                    let sel: Vec<&str> = shape.split('&').filter(|p| !p.starts_with("limit")).collect();
                    format!("{oracle}&{}", sel.join("&"))
                } else {
                    oracle
                };
                same(&q, &got, &sim.get(&oracle));
            }
        }
    }

    lists_naming_one_object_read_its_key_alone(&kache, &sim, r);

    // Paging: every page through kache equals the page through the simulator, and tokens cross.
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let q = match &token {
            None => format!("{pods}?limit=150&resourceVersion={r}&resourceVersionMatch=Exact"),
            Some(t) => format!("{pods}?limit=150&continue={t}"),
        };
        let (k, s) = (kache.get(&q), sim.get(&q));
        same(&format!("page {pages}"), &k, &s);
        pages += 1;
        // Alternate which server issued the token the next page uses: they are the same token.
        token = k.json()["metadata"]["continue"].as_str().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    assert!(pages >= 5, "{pages} pages");
    // A token kache never issued (from the simulator, in a namespace) continues the same way.
    let first = sim.get(&format!("/api/v1/namespaces/ns-0001/pods?limit=20&resourceVersion={r}&resourceVersionMatch=Exact"));
    let token = first.json()["metadata"]["continue"].as_str().expect("more pages").to_string();
    let q = format!("/api/v1/namespaces/ns-0001/pods?limit=20&continue={token}");
    same("a foreign token", &kache.get(&q), &sim.get(&q));

    // gzip above 128 KiB, the same bytes once inflated.
    let q = format!("{pods}?{}", exact_at("", r));
    let gz = kache.request("GET", &q, &[("accept-encoding", "gzip")], None);
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    let mut inflated = Vec::new();
    flate2::read::GzDecoder::new(&gz.body[..]).read_to_end(&mut inflated).expect("gzip");
    assert!(inflated == sim.get(&q).body, "gzip inflates to the plain body");
    let small = format!("{pods}?{}", exact_at("limit=2", r));
    assert_eq!(
        kache.request("GET", &small, &[("accept-encoding", "gzip")], None).header("content-encoding"),
        None,
        "small bodies stay plain"
    );

    // Bad input gets the apiserver's errors, byte for byte.
    for bad in [
        "limit=abc",
        "resourceVersion=abc",
        "resourceVersionMatch=Exact",
        "resourceVersion=0&resourceVersionMatch=Exact",
        "resourceVersion=5&resourceVersionMatch=Newest",
        "continue=garbage!",
        "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIvLi4vLi4vIn0",
        "labelSelector=a%3D%3D%3Db",
        "fieldSelector=spec.nope%3D1",
        "fieldSelector=x",
        "sendInitialEvents=true",
        &format!("resourceVersion={r}&continue=abc"),
    ] {
        let q = format!("{pods}?{bad}");
        same(&q, &kache.get(&q), &sim.get(&q));
    }
}

/// A list whose field selector names one object in a namespace is read at
/// its key alone, as kube-apiserver 1.36.2 reads it (the registry's
/// `MatchesSingle`, checked there): one item and no `continue` whatever the
/// `limit`, and a legacy revision with a `limit` read as "not older than".
fn lists_naming_one_object_read_its_key_alone(kache: &Process, sim: &Process, r: u64) {
    let first = kache.get("/api/v1/namespaces/ns-0002/pods?limit=2");
    let name = first.json()["items"][0]["metadata"]["name"].as_str().expect("a pod").to_string();
    let named = [
        ("/api/v1/namespaces/ns-0002/pods", format!("fieldSelector=metadata.name%3D{name}&limit=1")),
        ("/api/v1/pods", format!("fieldSelector=metadata.namespace%3Dns-0002,metadata.name%3D{name}&limit=1")),
    ];
    for (path, one) in &named {
        let exact = format!("{path}?{}", exact_at(one, r));
        let (k, s) = (kache.get(&exact), sim.get(&exact));
        same(&exact, &k, &s);
        assert_eq!(k.json()["items"].as_array().map(Vec::len), Some(1), "{exact}: the object");
        assert!(k.json()["metadata"].get("continue").is_none(), "{exact}: no continue after one key: {}", k.text());
        let legacy = format!("{path}?{one}&resourceVersion={r}");
        let got = kache.get(&legacy);
        let at = rv_of(&got);
        assert!(at >= r, "{legacy}: older than asked");
        same(&legacy, &got, &sim.get(&format!("{path}?{}", exact_at(one, at))));
    }
    // Across namespaces the name is one filter among the scan: the page stops at its limit with a continue.
    let scan = format!("/api/v1/pods?{}", exact_at(&named[0].1, r));
    let (k, s) = (kache.get(&scan), sim.get(&scan));
    same(&scan, &k, &s);
    assert!(k.json()["metadata"]["continue"].is_string(), "{scan}: a scan's page continues: {}", k.text());
}

#[test]
fn many_clients_one_upstream_list_and_watch_until_a_fault() {
    let sim = Process::sim(&["--pods", "300", "--churn", "50", "--compact-interval", "0"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods"]);
    ready(&kache);
    let (lists, watches) = (sim.served("pods", "list"), sim.served("pods", "watch"));
    assert_eq!((lists, watches), (1, 1), "one paged list (one page) and one watch");
    let r = rv_of(&kache.get("/api/v1/pods?resourceVersion=0&limit=1"));
    let queries = [
        "/api/v1/pods?resourceVersion=0".to_string(),
        format!("/api/v1/pods?resourceVersion={r}&resourceVersionMatch=NotOlderThan&limit=50"),
        format!("/api/v1/pods?resourceVersion={r}&resourceVersionMatch=Exact&limit=10"),
        "/api/v1/namespaces/ns-0003/pods?resourceVersion=0".to_string(),
    ];
    let threads: Vec<_> = (0..50)
        .map(|t| {
            let (url, queries) = (kache.url.clone(), queries.clone());
            std::thread::spawn(move || {
                for i in 0..20 {
                    let resp = common::request(&format!("{url}{}", queries[(t + i) % queries.len()]), "GET", &[], None);
                    assert_eq!(resp.status, 200, "{}", resp.text());
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().expect("a client"));
    let metrics = kache.get("/metrics").text();
    let served: u64 =
        metrics.lines().find_map(|l| l.strip_prefix("kache_lists_served_total ")).and_then(|v| v.parse().ok()).expect("a counter");
    assert!(served >= 1000, "{metrics}");
    assert!(metrics.contains("kache_resource_ready{resource=\"pods\"} 1"), "{metrics}");
    assert_eq!((sim.served("pods", "list"), sim.served("pods", "watch")), (1, 1), "1,000 lists later, still one of each upstream");

    sim.post("/_sim/drop-watches", &serde_json::json!({}));
    eventually(Duration::from_secs(60), "a new upstream watch", || (sim.served("pods", "watch") == 2).then_some(()));
    std::thread::sleep(Duration::from_millis(500));
    // The probe after a broken watch is the one extra list.
    assert_eq!((sim.served("pods", "list"), sim.served("pods", "watch")), (2, 2));
}

#[test]
fn kubectl_works_through_kache() {
    let sim = Process::sim(&["--pods", "1200", "--namespaces", "3"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,configmaps"]);
    ready(&kache);
    let via = |p: &Process, args: &[&str]| p.kubectl_ok(args);
    let args = [
        "get",
        "pods",
        "-A",
        "--chunk-size=500",
        "--no-headers",
        "-o",
        "custom-columns=NS:.metadata.namespace,NAME:.metadata.name,NODE:.spec.nodeName",
    ];
    let through = via(&kache, &args);
    assert_eq!(through.lines().count(), 1200);
    assert_eq!(through, via(&sim, &args), "the same lines through kache");
    let first = through.lines().next().expect("a pod").split_whitespace().collect::<Vec<_>>();
    let logs = ["logs", "-n", first[0], first[1]];
    assert_eq!(via(&kache, &logs), via(&sim, &logs), "logs pass through");
    assert!(via(&kache, &logs).contains(first[1]));

    let manifest = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"via-kache","namespace":"ns-0001"},"data":{"k":"v"}}"#;
    kache.kubectl_stdin(&["apply", "-f", "-"], Some(manifest));
    let created = eventually(Duration::from_secs(60), "the configmap cached", || {
        let list = kache.get("/api/v1/namespaces/ns-0001/configmaps?resourceVersion=0").json();
        list["items"].as_array()?.iter().find(|i| i["metadata"]["name"] == "via-kache").cloned()
    });
    assert_eq!(created["data"]["k"], "v");
    assert!(via(&kache, &["get", "configmap", "via-kache", "-n", "ns-0001", "-o", "name"]).contains("configmap/via-kache"));
    via(&kache, &["delete", "configmap", "via-kache", "-n", "ns-0001"]);
    eventually(Duration::from_secs(60), "the deletion cached", || {
        let list = kache.get("/api/v1/namespaces/ns-0001/configmaps?resourceVersion=0").json();
        list["items"].as_array()?.iter().all(|i| i["metadata"]["name"] != "via-kache").then_some(())
    });
}

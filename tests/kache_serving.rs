//! kache's front as a client sees it, beyond lists: single-object GETs from
//! memory, JSON laid out as the apiserver lays it out (ended by a newline,
//! or indented), HTTPS serving, and a graceful stop on SIGTERM.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Process, eventually, pki::Pki};

fn ready(kache: &Process) {
    eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
}

fn metric(kache: &Process, name: &str) -> u64 {
    let text = kache.get("/metrics").text();
    text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse().ok()).unwrap_or_else(|| panic!("no {name} in {text}"))
}

#[test]
fn a_get_at_revision_0_is_answered_from_memory_as_the_apiserver_writes_it() {
    // No churn: the simulator's latest object is the one kache holds.
    let sim = Process::sim(&["--pods", "50", "--namespaces", "2", "--configmaps", "4", "--nodes", "3"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,nodes,namespaces"]);
    ready(&kache);
    let list = sim.get("/api/v1/pods?limit=1").json();
    let pod = &list["items"][0]["metadata"];
    let (ns, name) = (pod["namespace"].as_str().unwrap(), pod["name"].as_str().unwrap());
    let before = metric(&kache, "kache_gets_served_total");
    for path in [
        format!("/api/v1/namespaces/{ns}/pods/{name}"),
        "/api/v1/nodes/node-0001".to_string(),
        format!("/api/v1/namespaces/{ns}"),
        format!("/api/v1/namespaces/{ns}/pods/no-such-pod"),
        "/api/v1/nodes/no-such-node".to_string(),
    ] {
        let from_kache = kache.get(&format!("{path}?resourceVersion=0"));
        let from_sim = sim.get(&path);
        assert_eq!(from_kache.status, from_sim.status, "{path}: {}", from_kache.text());
        assert!(from_kache.body == from_sim.body, "{path}\nkache: {:.400}\nsim:   {:.400}", from_kache.text(), from_sim.text());
        assert_eq!(from_kache.header("content-type"), Some("application/json"), "{path}");
    }
    assert_eq!(metric(&kache, "kache_gets_served_total"), before + 5, "all five answered from memory");
    // Without a revision the GET is a consistent read: answered from memory once
    // kache proves it holds upstream's current revision (nothing is written here, so at once).
    let path = format!("/api/v1/namespaces/{ns}/pods/{name}");
    let consistent = kache.get(&path);
    assert_eq!((consistent.status, &consistent.body), (200, &sim.get(&path).body));
    assert_eq!(metric(&kache, "kache_gets_served_total"), before + 6, "a consistent GET proven fresh is answered from memory");
    // A subresource is never cached.
    let log = kache.get(&format!("/api/v1/namespaces/{ns}/pods/{name}/log"));
    assert_eq!(log.text(), format!("simulated log of pod {ns}/{name}\n"));
}

/// The body, decompressed if it was gzipped.
fn gunzip(resp: &common::Resp) -> Vec<u8> {
    if resp.header("content-encoding") != Some("gzip") {
        return resp.body.clone();
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&resp.body[..]).read_to_end(&mut out).expect("a gzip body");
    out
}

#[test]
fn json_is_ended_and_indented_from_memory_as_the_apiserver_writes_it() {
    let sim = Process::sim(&["--pods", "400", "--namespaces", "2", "--nodes", "3"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,nodes"]);
    ready(&kache);
    let name = sim.get("/api/v1/nodes?limit=1").json()["items"][0]["metadata"]["name"].as_str().unwrap().to_string();
    let (lists, gets) = (metric(&kache, "kache_lists_served_total"), metric(&kache, "kache_gets_served_total"));
    let curl = [("user-agent", "curl/8.5.0")];
    let gzip_curl = [("user-agent", "curl/8.5.0"), ("accept-encoding", "gzip")];
    type Headers<'a> = &'a [(&'a str, &'a str)];
    let cases: [(String, Headers, bool); 7] = [
        ("/api/v1/pods?resourceVersion=0".into(), &[], false),
        ("/api/v1/pods?resourceVersion=0&pretty=true".into(), &[], true),
        ("/api/v1/pods?resourceVersion=0".into(), &curl, true),
        ("/api/v1/pods?resourceVersion=0".into(), &gzip_curl, true),
        ("/api/v1/pods?resourceVersion=0&pretty=false".into(), &curl, false),
        (format!("/api/v1/nodes/{name}?resourceVersion=0"), &curl, true),
        ("/api/v1/pods?labelSelector=a%3D%3D%3Db".into(), &curl, true),
    ];
    for (path, headers, pretty) in &cases {
        let from_kache = kache.request("GET", path, headers, None);
        let from_sim = sim.request("GET", path, headers, None);
        assert_eq!(from_kache.status, from_sim.status, "{path} {headers:?}");
        assert_eq!(from_kache.header("content-encoding"), from_sim.header("content-encoding"), "{path} {headers:?}");
        let (body, sim_body) = (gunzip(&from_kache), gunzip(&from_sim));
        assert!(body == sim_body, "{path} {headers:?}\nkache: {:.300}\nsim:   {:.300}", from_kache.text(), from_sim.text());
        assert_eq!(body.ends_with(b"}\n"), !pretty, "{path} {headers:?}: compact JSON ends with a newline, indented JSON does not");
        assert_eq!(body.starts_with(b"{\n  \"kind\": "), *pretty, "{path} {headers:?}");
    }
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 5, "every list answered from memory");
    assert_eq!(metric(&kache, "kache_gets_served_total"), gets + 1, "the GET answered from memory");
    assert_eq!(metric(&kache, "kache_passed_through_total"), 0);
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn kache_serves_https_and_kubectl_trusts_it() {
    let pki = Pki::new();
    let sim = Process::sim(&["--pods", "300", "--namespaces", "3"]);
    let kache = Process::kache(
        &sim.url,
        &["--resources", "pods", "--tls-cert-file", &pki.path("server.crt"), "--tls-private-key-file", &pki.path("server.key")],
    );
    assert!(kache.url.starts_with("https://127.0.0.1:"), "{}", kache.url);
    let ca = format!("--certificate-authority={}", pki.path("ca.crt"));
    // Over HTTPS without credentials kubectl would prompt for a password;
    // kache does not authenticate clients yet, so any token will do.
    let tls = [ca.as_str(), "--token=unused"];
    let with = |args: &[&'static str]| -> Vec<String> { tls.iter().chain(args).map(|s| s.to_string()).collect() };
    eventually(Duration::from_secs(60), "kache ready over TLS", || {
        kache.kubectl(&refs(&with(&["get", "--raw", "/readyz"]))).status.success().then_some(())
    });
    let args = ["get", "pods", "-A", "--chunk-size=100", "--no-headers", "-o", "name"];
    let with_ca = with(&args);
    let with_ca = refs(&with_ca);
    let through = kache.kubectl_ok(&with_ca);
    assert_eq!(through.lines().count(), 300);
    assert_eq!(through, sim.kubectl_ok(&args));
    // Without the CA the client refuses the certificate.
    let untrusted = kache.kubectl(&[&["--token=unused"], &args[..]].concat());
    assert!(!untrusted.status.success());
    assert!(String::from_utf8_lossy(&untrusted.stderr).contains("certificate"), "{}", String::from_utf8_lossy(&untrusted.stderr));
    // A client that never finishes its handshake does not hold kache up.
    let port = kache.url.rsplit(':').next().unwrap();
    let mut idle = TcpStream::connect(format!("127.0.0.1:{port}")).expect("connects");
    idle.write_all(b"not a TLS hello\r\n\r\n").expect("writes");
    idle.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = Vec::new();
    let _ = idle.read_to_end(&mut buf);
    assert_eq!(kache.kubectl_ok(&with_ca).lines().count(), 300, "still serving");
}

#[test]
fn sigterm_stops_accepting_and_exits_once_requests_drain() {
    let sim = Process::sim(&["--pods", "20"]);
    let mut kache = Process::kache(&sim.url, &["--resources", "pods", "--shutdown-drain", "10"]);
    ready(&kache);
    // A watch from memory ends at once, as an apiserver's do when it shuts down;
    // a passed-through one (of a resource kache does not cache) stays open until the drain period ends.
    let memory = kache.watch("/api/v1/pods?watch=1&resourceVersion=0");
    let passed = kache.watch("/api/v1/namespaces?watch=1");
    assert!(memory.next(Duration::from_secs(30)).is_some() && passed.next(Duration::from_secs(30)).is_some(), "the watches deliver");
    let started = Instant::now();
    let pid = kache.pid().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs").success());
    memory.expect_end(Duration::from_secs(60));
    assert!(passed.is_open(), "the passed-through watch ended with the one from memory, before the drain");
    let status = kache.wait(Duration::from_secs(60));
    assert!(status.success(), "exit status {status}");
    assert!(started.elapsed() >= Duration::from_secs(9), "waited for the drain: {:?}", started.elapsed());
    passed.expect_end(Duration::from_secs(30));
    let port = kache.url.rsplit(':').next().unwrap().to_string();
    assert!(TcpStream::connect(format!("127.0.0.1:{port}")).is_err(), "no longer accepting");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_lists_and_gets_are_answered_from_memory() {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::Pod;
    use kube::core::metadata::PartialObjectMeta;
    use kube::runtime::{WatchStreamExt, reflector, watcher};

    let sim = Process::sim(&["--pods", "400", "--namespaces", "2", "--nodes", "3"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods"]);
    ready(&kache);
    const LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    const ONE: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    // As client-go's metadata client asks: protobuf first, then JSON.
    const CLIENT_GO: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    let first = sim.get("/api/v1/pods?limit=1").json();
    let (ns, name) =
        (first["items"][0]["metadata"]["namespace"].as_str().unwrap(), first["items"][0]["metadata"]["name"].as_str().unwrap());
    let page = kache.request("GET", "/api/v1/pods?limit=150", &[("accept", LIST)], None);
    let token = page.json()["metadata"]["continue"].as_str().expect("a continue token").to_string();
    let (lists, gets, passed) = (
        metric(&kache, "kache_lists_served_total"),
        metric(&kache, "kache_gets_served_total"),
        metric(&kache, "kache_passed_through_total"),
    );
    let same = |path: &str, accept: &str| {
        let (k, s) = (kache.request("GET", path, &[("accept", accept)], None), sim.request("GET", path, &[("accept", accept)], None));
        assert_eq!(k.status, s.status, "{path} {accept}: {}", k.text());
        assert!(k.body == s.body, "{path} {accept}\nkache: {:.300}\nsim:   {:.300}", k.text(), s.text());
        k
    };
    let all = same("/api/v1/pods?resourceVersion=0", LIST);
    assert_eq!(all.json()["kind"], "PartialObjectMetadataList");
    assert_eq!(all.json()["items"].as_array().unwrap().len(), 400);
    assert!(all.json()["items"][0].get("spec").is_none(), "metadata only");
    same(&format!("/api/v1/pods?limit=150&continue={token}"), LIST);
    same(
        &format!(
            "/api/v1/namespaces/{ns}/pods?labelSelector=app%3D{}&resourceVersion=0",
            first["items"][0]["metadata"]["labels"]["app"].as_str().unwrap()
        ),
        LIST,
    );
    let one = same(&format!("/api/v1/namespaces/{ns}/pods/{name}?resourceVersion=0"), ONE);
    assert_eq!(one.json()["kind"], "PartialObjectMetadata");
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 3, "the lists from memory");
    assert_eq!(metric(&kache, "kache_gets_served_total"), gets + 1, "the GET from memory");
    assert_eq!(metric(&kache, "kache_passed_through_total"), passed, "nothing passed through");
    // client-go's metadata client prefers protobuf, which kache answers from memory too.
    let pb = same("/api/v1/pods?resourceVersion=0", CLIENT_GO);
    assert_eq!(pb.header("content-type"), Some("application/vnd.kubernetes.protobuf"));
    assert!(pb.body.starts_with(b"k8s\0") && pb.body.windows(25).any(|w| w == b"PartialObjectMetadataList"));
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 4, "protobuf from memory");
    assert_eq!(metric(&kache, "kache_passed_through_total"), passed, "nothing passed through");
    // The wrong form for the request is the apiserver's 406 (passed through).
    let wrong = same("/api/v1/pods?resourceVersion=0", ONE);
    assert_eq!(wrong.status, 406);
    assert!(
        wrong.text().contains("you requested PartialObjectMetadata, but the requested object is a list (*core.PodList)"),
        "{}",
        wrong.text()
    );
    let wrong = same(&format!("/api/v1/namespaces/{ns}/pods/{name}"), LIST);
    assert_eq!(wrong.status, 406);

    // kube-rs's metadata watcher (a metadata list, then a metadata watch) converges.
    let client = kube::Client::try_from(kube::Config::new(kache.url.parse().expect("a URL"))).expect("a client");
    let api: kube::Api<PartialObjectMeta<Pod>> = kube::Api::all(client);
    let (reader, writer) = reflector::store::<PartialObjectMeta<Pod>>();
    let stream = reflector(writer, watcher(api, watcher::Config::default()).default_backoff()).applied_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    let created = sim.post(
        &format!("/api/v1/namespaces/{ns}/pods"),
        &serde_json::json!({"metadata": {"name": "late"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    eventually(Duration::from_secs(30), "the metadata reflector to hold every pod", || {
        let names: std::collections::BTreeSet<String> = reader.state().iter().filter_map(|p| p.metadata.name.clone()).collect();
        (names.len() == 401 && names.contains("late")).then_some(())
    });
    task.abort();
}

/// A Table with its Age cells blanked (ages are computed at each server's "now").
fn ageless(resp: &common::Resp) -> serde_json::Value {
    let mut t = resp.json();
    let age = t["columnDefinitions"].as_array().and_then(|c| c.iter().position(|c| c["name"] == "Age"));
    if let (Some(age), Some(rows)) = (age, t["rows"].as_array_mut()) {
        for row in rows {
            row["cells"][age] = serde_json::Value::Null;
        }
    }
    t
}

#[test]
fn kubectl_get_tables_are_answered_from_memory() {
    const KUBECTL: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let sim = Process::sim(&["--pods", "300", "--namespaces", "3", "--nodes", "3", "--configmaps", "20"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,configmaps,namespaces,nodes,endpointslices.discovery.k8s.io"]);
    ready(&kache);
    let first = sim.get("/api/v1/pods?limit=1").json();
    let (ns, name) =
        (first["items"][0]["metadata"]["namespace"].as_str().unwrap(), first["items"][0]["metadata"]["name"].as_str().unwrap());
    let (lists, gets, passed) = (
        metric(&kache, "kache_lists_served_total"),
        metric(&kache, "kache_gets_served_total"),
        metric(&kache, "kache_passed_through_total"),
    );
    for path in [
        "/api/v1/pods?limit=500".to_string(),
        format!("/api/v1/namespaces/{ns}/pods?limit=50&includeObject=Object"),
        "/api/v1/configmaps?limit=500&includeObject=None".to_string(),
        "/api/v1/namespaces?limit=500".to_string(),
        "/api/v1/nodes?limit=500".to_string(),
        format!("/api/v1/namespaces/{ns}/pods/{name}"),
    ] {
        let (k, s) = (kache.request("GET", &path, &[("accept", KUBECTL)], None), sim.request("GET", &path, &[("accept", KUBECTL)], None));
        assert_eq!((k.status, s.status), (200, 200), "{path}: {}", k.text());
        assert_eq!(k.json()["kind"], "Table", "{path}");
        assert_eq!(ageless(&k), ageless(&s), "{path}");
    }
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 5, "the tables of lists from memory");
    assert_eq!(metric(&kache, "kache_gets_served_total"), gets + 1, "the table of one pod from memory");
    assert_eq!(metric(&kache, "kache_passed_through_total"), passed, "nothing passed through");
    // Endpoint slices' table from memory too, and a v1beta1 Table as the apiserver writes it (another apiVersion).
    let path = "/apis/discovery.k8s.io/v1/endpointslices";
    let (k, s) = (kache.request("GET", path, &[("accept", KUBECTL)], None), sim.request("GET", path, &[("accept", KUBECTL)], None));
    assert_eq!(k.json()["columnDefinitions"][3]["name"], "Endpoints");
    assert_eq!(ageless(&k), ageless(&s), "{path}");
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 6, "the endpoint slices table from memory");
    const BETA: &str = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";
    for path in [path, "/api/v1/namespaces/ns-0001/pods"] {
        let (k, s) = (kache.request("GET", path, &[("accept", BETA)], None), sim.request("GET", path, &[("accept", BETA)], None));
        assert_eq!((k.status, k.json()["apiVersion"].as_str()), (200, Some("meta.k8s.io/v1beta1")), "{path}");
        let rows = k.json()["rows"].as_array().cloned().unwrap_or_default();
        assert!(rows.iter().all(|r| r["object"]["apiVersion"] == "meta.k8s.io/v1beta1"), "{path}");
        assert!(path.contains("endpointslices") || !rows.is_empty(), "{path}: no rows to check");
        assert_eq!(ageless(&k), ageless(&s), "{path}");
    }
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 8, "the v1beta1 tables from memory");
    assert_eq!(metric(&kache, "kache_passed_through_total"), passed, "nothing passed through");

    // kubectl itself, paging through every pod, wide.
    let lists = metric(&kache, "kache_lists_served_total");
    let args = ["get", "pods", "-A", "-o", "wide", "--chunk-size=50", "--no-headers"];
    let (through, direct) = (kache.kubectl_ok(&args), sim.kubectl_ok(&args));
    let strip_age = |out: &str| -> Vec<String> {
        out.lines()
            .map(|l| l.split_whitespace().enumerate().filter(|(i, _)| *i != 5).map(|(_, w)| w).collect::<Vec<_>>().join(" "))
            .collect()
    };
    assert_eq!(through.lines().count(), 300);
    assert_eq!(strip_age(&through), strip_age(&direct));
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 6, "six pages of 50, all from memory");
}

#[test]
fn kubectl_create_sends_protobuf_and_works_on_the_simulator_and_through_kache() {
    let sim = Process::sim(&["--pods", "10", "--namespaces", "1", "--nodes", "1"]);
    let kache = Process::kache(&sim.url, &["--resources", "configmaps,namespaces"]);
    ready(&kache);
    for (server, ns) in [(&sim, "made-directly"), (&kache, "made-through-kache")] {
        server.kubectl_ok(&["create", "namespace", ns]);
        server.kubectl_ok(&["create", "configmap", "settings", "-n", ns, "--from-literal=color=blue", "--from-literal=size=L"]);
        server.kubectl_ok(&["create", "secret", "generic", "token", "-n", ns, "--from-literal=key=s3cr3t"]);
        assert_eq!(sim.get(&format!("/api/v1/namespaces/{ns}")).json()["status"]["phase"], "Active");
        let cm = sim.get(&format!("/api/v1/namespaces/{ns}/configmaps/settings")).json();
        assert_eq!(cm["data"], serde_json::json!({"color": "blue", "size": "L"}), "{ns}");
        let secret = sim.get(&format!("/api/v1/namespaces/{ns}/secrets/token")).json();
        assert_eq!((secret["type"].as_str(), secret["data"]["key"].as_str()), (Some("Opaque"), Some("czNjcjN0")), "{ns}");
    }
}

/// Splits a protobuf watch stream into its frames (4-byte big-endian length, then a `WatchEvent`).
fn protobuf_frames(stream: &[u8]) -> Vec<&[u8]> {
    let mut frames = Vec::new();
    let mut at = 0;
    while at + 4 <= stream.len() {
        let len = u32::from_be_bytes(stream[at..at + 4].try_into().unwrap()) as usize;
        frames.push(&stream[at..(at + 4 + len).min(stream.len())]);
        at += 4 + len;
    }
    frames
}

#[test]
fn protobuf_lists_gets_and_watches_are_answered_from_memory_as_the_apiserver_writes_them() {
    const PB: &str = "application/vnd.kubernetes.protobuf";
    // As typed client-go clients ask.
    const TYPED: &str = "application/vnd.kubernetes.protobuf, */*";
    const META: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
    let sim = Process::sim(&["--pods", "300", "--namespaces", "2", "--nodes", "3"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,nodes,namespaces"]);
    ready(&kache);
    let first = sim.get("/api/v1/pods?limit=1").json();
    let (ns, name) =
        (first["items"][0]["metadata"]["namespace"].as_str().unwrap(), first["items"][0]["metadata"]["name"].as_str().unwrap());
    let token = kache.get("/api/v1/pods?limit=120").json()["metadata"]["continue"].as_str().expect("a continue token").to_string();
    let (lists, gets, watches, passed_before) = (
        metric(&kache, "kache_lists_served_total"),
        metric(&kache, "kache_gets_served_total"),
        metric(&kache, "kache_watches_served_total"),
        metric(&kache, "kache_passed_through_total"),
    );
    let same = |path: &str, accept: &str| {
        let (k, s) = (kache.request("GET", path, &[("accept", accept)], None), sim.request("GET", path, &[("accept", accept)], None));
        assert_eq!((k.status, k.header("content-type")), (s.status, s.header("content-type")), "{path} {accept}");
        assert!(k.body == s.body, "{path} {accept}: kache {} bytes, simulator {}", k.body.len(), s.body.len());
        k
    };
    let all = same("/api/v1/pods?resourceVersion=0", TYPED);
    assert_eq!(all.header("content-type"), Some(PB));
    assert!(all.body.starts_with(b"k8s\0\x0a\x0d\x0a\x02v1\x12\x07PodList"), "{:?}", &all.body[..20]);
    same("/api/v1/pods?limit=120", PB);
    same(&format!("/api/v1/pods?limit=120&continue={token}"), PB);
    same(
        &format!(
            "/api/v1/namespaces/{ns}/pods?resourceVersion=0&labelSelector=app%3D{}",
            first["items"][0]["metadata"]["labels"]["app"].as_str().unwrap()
        ),
        PB,
    );
    same("/api/v1/nodes?resourceVersion=0", PB);
    same("/api/v1/namespaces", "application/json;q=0.5, application/vnd.kubernetes.protobuf;q=0.9");
    same(&format!("/api/v1/namespaces/{ns}/pods/{name}"), PB);
    same(&format!("/api/v1/namespaces/{ns}/pods/{name}?resourceVersion=0"), META);
    let missing = same(&format!("/api/v1/namespaces/{ns}/pods/no-such-pod"), PB);
    assert_eq!(missing.status, 404);
    assert!(missing.body.starts_with(b"k8s\0\x0a\x0c\x0a\x02v1\x12\x06Status"), "a protobuf Status");
    // Reads naming a revision come from memory; consistent ones (no revision) too, unless their
    // freshness proof came later than upstream's answer (the same bytes either way).
    let (served_lists, served_gets) =
        (metric(&kache, "kache_lists_served_total") - lists, metric(&kache, "kache_gets_served_total") - gets);
    assert!(served_lists >= 4 && served_gets >= 1, "{served_lists} lists and {served_gets} GETs from memory");
    let passed = metric(&kache, "kache_passed_through_total");
    assert_eq!(served_lists + served_gets + passed - passed_before, 9, "every read answered once");
    // A streaming list in protobuf: ADDED for every pod in key order, then the initial-events-end bookmark.
    let rv = sim.get("/api/v1/pods?limit=1").json()["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let path = format!(
        "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=2"
    );
    let (k, s) = (kache.request("GET", &path, &[("accept", TYPED)], None), sim.request("GET", &path, &[("accept", TYPED)], None));
    assert_eq!(k.header("content-type"), Some("application/vnd.kubernetes.protobuf;stream=watch"));
    let (kf, sf) = (protobuf_frames(&k.body), protobuf_frames(&s.body));
    assert!(kf.len() > 300 && sf.len() > 300, "kache {} frames, simulator {}", kf.len(), sf.len());
    assert!(kf[..301] == sf[..301], "the 300 ADDED frames and the bookmark are the simulator's bytes");
    assert!(kf[300].windows(25).any(|w| w == b"k8s.io/initial-events-end"), "the initial-events-end bookmark");
    assert_eq!(metric(&kache, "kache_watches_served_total"), watches + 1, "the watch from memory");
    assert_eq!(metric(&kache, "kache_passed_through_total"), passed, "nothing passed through");
}

#[test]
fn custom_resource_tables_follow_their_crds_columns_from_memory() {
    const KUBECTL: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    const META: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    // Frequent bookmarks prove the quiet widgets fresh soon after the CRD changes.
    let sim = Process::sim(&["--pods", "3", "--crd", "widgets.example.com/v1=Widget", "--bookmark-interval", "0.2"]);
    let json = [("content-type", "application/json")];
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    for (name, spec, status) in [
        ("alpha", r#"{"size":"large","replicas":3}"#, r#"{"phase":"Ready","readyReplicas":3,"utilization":0.625}"#),
        ("beta", r#"{"size":"small","replicas":2,"paused":true}"#, r#"{"phase":"Degraded","readyReplicas":1,"utilization":1.5}"#),
        ("gamma", r#"{"size":"medium","replicas":1}"#, "{}"),
    ] {
        let body = format!(
            r#"{{"apiVersion":"example.com/v1","kind":"Widget","metadata":{{"name":"{name}","labels":{{"app":"{name}"}}}},"spec":{spec},"status":{status}}}"#
        );
        assert_eq!(sim.request("POST", widgets, &json, Some(body.as_bytes())).status, 201);
    }
    // Caching widgets caches their CRD too.
    let kache = Process::kache(&sim.url, &["--resources", "widgets.example.com"]);
    ready(&kache);
    let (lists, passed) = (metric(&kache, "kache_lists_served_total"), metric(&kache, "kache_passed_through_total"));
    let same_table = |path: &str| {
        let (k, s) = (kache.request("GET", path, &[("accept", KUBECTL)], None), sim.request("GET", path, &[("accept", KUBECTL)], None));
        assert_eq!((k.status, s.status), (200, 200), "{path}: {}", k.text());
        assert_eq!(k.json()["kind"], "Table", "{path}");
        assert_eq!(ageless(&k), ageless(&s), "{path}");
        k.json()
    };
    // No printer columns: Name and Age.
    let plain = same_table(widgets);
    assert_eq!(
        plain["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect::<Vec<_>>(),
        ["Name", "Age"]
    );
    // The CRDs themselves: the default table, Name and Created At.
    let crds = same_table("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    assert_eq!(crds["rows"][0]["cells"][0], "widgets.example.com");
    assert_eq!(crds["columnDefinitions"][1]["name"], "Created At");
    // Metadata-only lists of the custom resource, JSON and (as client-go's metadata client asks) protobuf: from memory too.
    const CLIENT_GO: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    for accept in [META, CLIENT_GO] {
        let (k, s) = (kache.request("GET", widgets, &[("accept", accept)], None), sim.request("GET", widgets, &[("accept", accept)], None));
        assert_eq!(k.header("content-type"), s.header("content-type"));
        assert!(k.body == s.body, "kache: {}\nsim: {}", k.text(), s.text());
    }
    // The object itself has no protobuf: the apiserver's 406 (passed through).
    assert_eq!(kache.request("GET", widgets, &[("accept", "application/vnd.kubernetes.protobuf")], None).status, 406);
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 4, "the tables and the metadata lists from memory");
    let passed = passed + 1;
    assert_eq!(metric(&kache, "kache_passed_through_total"), passed, "nothing passed through");
    // (After the CRD changes, the quiet widgets' consistent reads may pass through until kache proves them fresh.)
    // The CRD gains columns: kache's tables follow as soon as its CRD does.
    let columns = r#"{"spec":{"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}},"additionalPrinterColumns":[
        {"name":"Size","type":"string","description":"T-shirt size","jsonPath":".spec.size"},
        {"name":"Replicas","type":"integer","jsonPath":".spec.replicas"},
        {"name":"Ready","type":"integer","jsonPath":".status.readyReplicas"},
        {"name":"Phase","type":"string","jsonPath":".status.phase"},
        {"name":"Utilization","type":"number","priority":1,"jsonPath":".status.utilization"},
        {"name":"Paused","type":"boolean","priority":1,"jsonPath":".spec.paused"},
        {"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}]}]}}"#;
    let patched = sim.request(
        "PATCH",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        &[("content-type", "application/merge-patch+json")],
        Some(columns.as_bytes()),
    );
    assert_eq!(patched.status, 200, "{}", patched.text());
    let table = eventually(Duration::from_secs(60), "kache's table with the CRD's columns", || {
        let t = kache.request("GET", widgets, &[("accept", KUBECTL)], None).json();
        (t["columnDefinitions"].as_array().map(Vec::len) == Some(8)).then_some(t)
    });
    assert_eq!(table["rows"][0]["cells"], serde_json::json!(["alpha", "large", 3, 3, "Ready", 0.625, null, table["rows"][0]["cells"][7]]));
    assert_eq!(
        table["rows"][2]["cells"].as_array().unwrap()[..6],
        serde_json::json!(["gamma", "medium", 1, null, null, null]).as_array().unwrap()[..]
    );
    // From memory: at revision 0 (a consistent read goes where it is answered sooner), once kache's CRD has the columns.
    let at_any = format!("{widgets}?resourceVersion=0");
    eventually(Duration::from_secs(60), "a table with the new columns from memory", || {
        let lists = metric(&kache, "kache_lists_served_total");
        let (k, s) =
            (kache.request("GET", &at_any, &[("accept", KUBECTL)], None), sim.request("GET", &at_any, &[("accept", KUBECTL)], None));
        (k.status == 200 && ageless(&k) == ageless(&s) && metric(&kache, "kache_lists_served_total") > lists).then_some(())
    });
    same_table(&format!("{widgets}/beta"));
    // kubectl prints the same through kache as directly.
    let args = ["get", "widgets", "-n", "default", "-o", "wide", "--no-headers"];
    let cut_age =
        |out: String| out.lines().map(|l| l.rsplit_once(' ').map_or(l, |(rest, _)| rest).trim_end().to_string()).collect::<Vec<_>>();
    let through = cut_age(kache.kubectl_ok(&args));
    assert_eq!(through.len(), 3);
    assert_eq!(through, cut_age(sim.kubectl_ok(&args)));
}

#[test]
fn rbac_tables_are_answered_from_memory_as_the_simulator_prints_them() {
    let sim = Process::sim(&["--pods", "10", "--namespaces", "2"]);
    // The captured apiserver's objects, created in the simulator.
    let captured = |dir: &str| -> Vec<serde_json::Value> {
        let path = common::reference_dir().join("tables").join(dir).join("list.json");
        let list: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).expect("the capture")).expect("JSON");
        list["items"].as_array().expect("items").clone()
    };
    let strip = |mut o: serde_json::Value, kind: &str| {
        let meta = o["metadata"].as_object_mut().expect("metadata");
        for k in ["resourceVersion", "uid", "creationTimestamp", "managedFields"] {
            meta.remove(k);
        }
        o["apiVersion"] = "rbac.authorization.k8s.io/v1".into();
        o["kind"] = kind.into();
        o
    };
    let roles = captured("clusterroles.rbac.authorization.k8s.io.v1");
    for r in &roles {
        assert_eq!(sim.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", &strip(r.clone(), "ClusterRole")).status, 201);
    }
    let mut bindings = 0;
    for b in captured("rolebindings.rbac.authorization.k8s.io.v1") {
        let ns = b["metadata"]["namespace"].as_str().expect("a namespace").to_string();
        if sim.get(&format!("/api/v1/namespaces/{ns}")).status == 404 {
            assert_eq!(sim.post("/api/v1/namespaces", &serde_json::json!({"metadata": {"name": ns}})).status, 201);
        }
        let path = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings");
        assert_eq!(sim.post(&path, &strip(b, "RoleBinding")).status, 201);
        bindings += 1;
    }
    assert!(roles.len() > 2 && bindings >= 2, "{} cluster roles, {bindings} role bindings", roles.len());
    let kache = Process::kache(&sim.url, &["--resources", "clusterroles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io"]);
    eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    let lists = metric(&kache, "kache_lists_served_total");
    let commands: [&[&str]; 2] = [&["get", "clusterroles", "-o", "wide"], &["get", "rolebindings", "-A", "-o", "wide"]];
    for args in commands {
        // Ages (`0s`, `1s`) may tick between the two calls.
        let ageless = |out: String| -> Vec<String> {
            let age = |w: &str| w.len() > 1 && w.ends_with(['s', 'm']) && w[..w.len() - 1].bytes().all(|b| b.is_ascii_digit());
            out.lines().map(|l| l.split_whitespace().map(|w| if age(w) { "<age>" } else { w }).collect::<Vec<_>>().join(" ")).collect()
        };
        let (through, direct) = (ageless(kache.kubectl_ok(args)), ageless(sim.kubectl_ok(args)));
        assert!(through.len() > 2, "{through:?}");
        assert_eq!(through, direct, "{args:?}");
    }
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 2, "both tables from memory");
}

#[test]
fn yaml_lists_and_gets_are_answered_from_memory_as_the_apiserver_writes_them() {
    let sim = Process::sim(&["--pods", "400", "--namespaces", "2", "--nodes", "3", "--configmaps", "6"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,nodes,configmaps"]);
    ready(&kache);
    let first = sim.get("/api/v1/pods?limit=1").json();
    let (ns, name) =
        (first["items"][0]["metadata"]["namespace"].as_str().unwrap(), first["items"][0]["metadata"]["name"].as_str().unwrap());
    // A continue token is the apiserver's, whoever wrote it: the second page is asked of both.
    let token = kache.get("/api/v1/pods?limit=150").json()["metadata"]["continue"].as_str().expect("a continue token").to_string();
    let (lists, gets, passed) = (
        metric(&kache, "kache_lists_served_total"),
        metric(&kache, "kache_gets_served_total"),
        metric(&kache, "kache_passed_through_total"),
    );
    const YAML: &str = "application/yaml";
    const METADATA: &str = "application/yaml;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    let gzip = ("accept-encoding", "gzip");
    let cases: [(String, &str, u16); 8] = [
        ("/api/v1/pods?resourceVersion=0".into(), YAML, 200),
        (format!("/api/v1/pods?limit=150&continue={token}"), YAML, 200),
        (format!("/api/v1/namespaces/{ns}/pods?resourceVersion=0&limit=1000"), YAML, 200),
        ("/api/v1/configmaps?resourceVersion=0".into(), YAML, 200),
        ("/api/v1/pods?resourceVersion=0&labelSelector=no-such%3Dlabel".into(), YAML, 200),
        (format!("/api/v1/namespaces/{ns}/pods/{name}?resourceVersion=0"), YAML, 200),
        (format!("/api/v1/namespaces/{ns}/pods/no-such-pod?resourceVersion=0"), YAML, 404),
        ("/api/v1/pods?resourceVersion=0".into(), METADATA, 200),
    ];
    for (path, accept, status) in &cases {
        let headers = [("accept", *accept), gzip];
        let (k, s) = (kache.request("GET", path, &headers, None), sim.request("GET", path, &headers, None));
        assert_eq!((k.status, s.status), (*status, *status), "{path} {accept}: {}", k.text());
        assert_eq!(k.header("content-type"), Some("application/yaml"), "{path}");
        assert_eq!(k.header("content-encoding"), s.header("content-encoding"), "{path} {accept}");
        let (body, sim_body) = (gunzip(&k), gunzip(&s));
        assert!(
            body == sim_body,
            "{path} {accept}\nkache: {:.600}\nsim:   {:.600}",
            String::from_utf8_lossy(&body),
            String::from_utf8_lossy(&sim_body)
        );
    }
    let all = gunzip(&kache.request("GET", "/api/v1/pods?resourceVersion=0", &[("accept", YAML), gzip], None));
    let all = String::from_utf8(all).unwrap();
    assert!(all.starts_with("apiVersion: v1\nitems:\n- metadata:\n"), "{:.200}", all);
    assert!(all.contains("\nkind: PodList\nmetadata:\n  resourceVersion: \""), "{:.200}", all);
    assert_eq!(all.matches("\n- metadata:\n").count(), 400, "every pod");
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 7, "the lists from memory");
    assert_eq!(metric(&kache, "kache_gets_served_total"), gets + 2, "the GETs from memory");
    assert_eq!(metric(&kache, "kache_passed_through_total"), passed, "nothing passed through");
    // YAML has no stream form: a watch asking for it gets the apiserver's 406, from the apiserver.
    let watch = "/api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=1";
    let (k, s) = (kache.request("GET", watch, &[("accept", YAML)], None), sim.request("GET", watch, &[("accept", YAML)], None));
    assert_eq!((k.status, &k.body), (406, &s.body), "{}", k.text());
    assert_eq!(metric(&kache, "kache_passed_through_total"), passed + 1);
}

#[test]
fn protobuf_messages_are_made_before_kache_is_ready_so_no_protobuf_read_passes_through() {
    let sim = Process::sim(&["--pods", "1200", "--namespaces", "3", "--nodes", "6"]);
    let kache = Process::logged("serve", &["--server", &sim.url, "--resources", "pods"]);
    ready(&kache);
    assert!(kache.log().contains("protobuf made ahead of large reads"), "made before ready: {}", kache.log());
    let protobuf = [("accept", "application/vnd.kubernetes.protobuf")];
    let (lists, passed) = (metric(&kache, "kache_lists_served_total"), metric(&kache, "kache_passed_through_total"));
    for path in ["/api/v1/pods?resourceVersion=0", "/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3Dnode-0001"] {
        let (k, s) = (kache.request("GET", path, &protobuf, None), sim.request("GET", path, &protobuf, None));
        assert!(k.status == 200 && k.body == s.body, "{path}: memory's bytes are the simulator's");
    }
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 2, "from memory");
    assert_eq!(metric(&kache, "kache_passed_through_total"), passed, "nothing passed through");
}

#[test]
fn the_first_large_cbor_read_passes_through_while_every_map_is_made_then_memory_answers() {
    first_large_read_passes_through_then_memory_answers("application/cbor", "cbor", &["--cbor"]);
}

/// A whole list in a binary encoding (`accept`, named `name` in kache's
/// metrics and log) passes through while every object's encoding is made,
/// then memory answers it with the same bytes; a page of client-go's size
/// is made in the read.
fn first_large_read_passes_through_then_memory_answers(accept: &str, name: &str, sim_args: &[&str]) {
    // More pods than a client-go page: a whole list would make every encoding in the read.
    let sim = Process::sim(&[&["--pods", "1200", "--namespaces", "3", "--nodes", "6"], sim_args].concat());
    let kache = Process::logged("serve", &["--server", &sim.url, "--resources", "pods"]);
    ready(&kache);
    let list = |k: &Process| k.request("GET", "/api/v1/pods?resourceVersion=0", &[("accept", accept)], None);
    let making = |k: &Process| {
        k.get("/metrics")
            .text()
            .lines()
            .filter(|l| l.contains(&format!("reason=\"{name} being made\"")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum::<u64>()
    };
    // A page of client-go's size is made in the read, as the apiserver makes it
    // (once kache knows upstream serves the encoding: CBOR's first read passes through to learn it).
    eventually(Duration::from_secs(20), "a page of 500 from memory", || {
        let lists = metric(&kache, "kache_lists_served_total");
        assert_eq!(kache.request("GET", "/api/v1/pods?limit=500", &[("accept", accept)], None).status, 200);
        (metric(&kache, "kache_lists_served_total") == lists + 1).then_some(())
    });
    // The whole list: upstream's answer while the encodings are made, then memory's, the same bytes.
    let first = list(&kache);
    assert_eq!(first.status, 200);
    assert_eq!(making(&kache), 1, "the first whole list passed through");
    let made = format!("{name} made ahead of large reads");
    eventually(Duration::from_secs(60), "the encodings made", || kache.log().contains(&made).then_some(()));
    let lists = metric(&kache, "kache_lists_served_total");
    let again = list(&kache);
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 1, "then from memory");
    assert_eq!(making(&kache), 1);
    assert!(again.body == list(&sim).body, "memory's bytes are the simulator's");
    assert!(first.body == again.body, "upstream's and memory's answers are the same bytes");
}

#[test]
fn every_answer_is_private_to_its_client_as_the_apiserver_marks_it() {
    let sim = Process::sim(&["--pods", "20", "--namespaces", "2", "--nodes", "2"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,namespaces"]);
    ready(&kache);
    let pod = sim.get("/api/v1/pods?limit=1").json()["items"][0]["metadata"].clone();
    let (ns, name) = (pod["namespace"].as_str().unwrap(), pod["name"].as_str().unwrap());
    let lists = metric(&kache, "kache_lists_served_total");
    let gets = metric(&kache, "kache_gets_served_total");
    let watches = metric(&kache, "kache_watches_served_total");
    // From memory (a list, a GET, a GET of nothing, a watch), kache's own
    // refusals and endpoints, and a request passed through (a write): each
    // carries what the apiserver sends, so no shared HTTP cache between a
    // client and kache stores one user's answer for another.
    let answers = [
        ("GET", "/api/v1/pods?resourceVersion=0".to_string()),
        ("GET", format!("/api/v1/namespaces/{ns}/pods/{name}?resourceVersion=0")),
        ("GET", format!("/api/v1/namespaces/{ns}/pods/nothing?resourceVersion=0")),
        ("GET", "/api/v1/pods?resourceVersion=0&watch=1&timeoutSeconds=1".to_string()),
        ("GET", "/api/v1/pods?resourceVersion=0&labelSelector=a%20b".to_string()),
        ("GET", "/readyz".to_string()),
        ("POST", "/api/v1/namespaces".to_string()),
    ];
    for (method, path) in &answers {
        let from_kache = kache.request(method, path, &[("content-type", "application/json")], Some(b"{}"));
        let from_sim = sim.request(method, path, &[("content-type", "application/json")], Some(b"{}"));
        assert_eq!(from_kache.status, from_sim.status, "{method} {path}: {}", from_kache.text());
        assert_eq!(from_sim.header("cache-control"), Some("no-cache, private"), "the simulator, as the apiserver: {method} {path}");
        assert_eq!(from_kache.header("cache-control"), Some("no-cache, private"), "kache: {method} {path}");
    }
    assert_eq!(kache.get("/metrics").header("cache-control"), Some("no-cache, private"));
    assert_eq!(metric(&kache, "kache_lists_served_total"), lists + 1, "the list was answered from memory");
    assert_eq!(metric(&kache, "kache_gets_served_total"), gets + 2, "both GETs were answered from memory (one a 404)");
    assert_eq!(metric(&kache, "kache_watches_served_total"), watches + 1, "the watch was answered from memory");
}

//! kache's front as a client sees it, beyond lists: single-object GETs from
//! memory, HTTPS serving, and a graceful stop on SIGTERM.

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
    let mut kache = Process::kache(&sim.url, &["--resources", "pods", "--shutdown-drain", "2"]);
    ready(&kache);
    // A watch from memory ends at once, as an apiserver's do when it shuts down;
    // a passed-through one (of a resource kache does not cache) stays open until the drain period ends.
    let memory = kache.watch("/api/v1/pods?watch=1&resourceVersion=0");
    let passed = kache.watch("/api/v1/namespaces?watch=1");
    assert!(memory.next(Duration::from_secs(10)).is_some() && passed.next(Duration::from_secs(10)).is_some(), "the watches deliver");
    let started = Instant::now();
    let pid = kache.pid().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs").success());
    memory.expect_end(Duration::from_secs(1));
    let status = kache.wait(Duration::from_secs(15));
    assert!(status.success(), "exit status {status}");
    assert!(started.elapsed() >= Duration::from_millis(1500), "waited for the drain: {:?}", started.elapsed());
    passed.expect_end(Duration::from_secs(5));
    let port = kache.url.rsplit(':').next().unwrap().to_string();
    assert!(TcpStream::connect(format!("127.0.0.1:{port}")).is_err(), "no longer accepting");
}

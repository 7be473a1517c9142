//! Priority and fairness through kache against the simulator (its FlowSchemas
//! and levels, its `X-Kubernetes-PF-*` headers): answers from memory name
//! what the apiserver names; a flooding user's queued lists cannot hold back
//! another user's read; a `Reject` level answers 429 with `Retry-After`; a
//! FlowSchema applied upstream takes effect. Order and counts only: a
//! request holds its seats while its answer is unread (an HTTP/2 stream
//! whose window the test does not open), so the test decides when seats free.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::Process;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};

const GROUP: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";

const POLICY: &str = r#"{"anonymous": true,
  "users": [
    {"name": "root", "groups": ["system:masters"], "tokens": ["root-token"]},
    {"name": "kache", "tokens": ["kache-token"]},
    {"name": "flood", "tokens": ["flood-token"]},
    {"name": "victim", "tokens": ["victim-token"]},
    {"name": "system:serviceaccount:apps:reader", "groups": ["system:serviceaccounts", "system:serviceaccounts:apps"], "tokens": ["sa-token"]}
  ],
  "rules": [
    {"subjects": ["user:flood", "user:victim", "user:system:serviceaccount:apps:reader"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["pods"]},
    {"subjects": ["user:kache"], "verbs": ["get", "list", "watch"], "groups": ["*"], "resources": ["*"]},
    {"subjects": ["user:kache"], "verbs": ["create"], "groups": ["authentication.k8s.io"], "resources": ["tokenreviews"]},
    {"subjects": ["user:kache"], "verbs": ["create"], "groups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"]},
    {"subjects": ["user:kache"], "verbs": ["impersonate"], "groups": ["", "authentication.k8s.io"], "resources": ["users", "groups", "serviceaccounts", "uids", "userextras/*"]}
  ]}"#;

/// The simulator (with the policy and `pods` pods) and kache in front of it, ready.
fn cluster(pods: &str, extra: &[&str]) -> (Process, Process, tempfile::TempDir) {
    cluster_with(POLICY, pods, extra)
}

/// As [`cluster`], under `policy`.
fn cluster_with(policy_json: &str, pods: &str, extra: &[&str]) -> (Process, Process, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, policy_json).unwrap();
    let sim = Process::sim(&["--pods", pods, "--namespaces", "2", "--policy", policy.to_str().unwrap()]);
    let mut args = vec!["--token", "kache-token", "--token-review", "--resources", "pods", "--priority-and-fairness-seats", "100"];
    args.extend_from_slice(extra);
    let kache = Process::kache(&sim.url, &args);
    common::eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    (sim, kache, dir)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn as_user(p: &Process, token: &str, path: &str) -> common::Resp {
    p.request("GET", path, &[("authorization", &bearer(token))], None)
}

/// The schema and level UIDs an answer names.
fn named(r: &common::Resp) -> (Option<String>, Option<String>) {
    let h = |n: &str| r.header(n).map(str::to_string);
    (h("x-kubernetes-pf-flowschema-uid"), h("x-kubernetes-pf-prioritylevel-uid"))
}

/// Creates a priority level and a schema sending `users` to it, upstream; their UIDs.
fn apply(sim: &Process, name: &str, precedence: u32, users: &[&str], limited: Value) -> (String, String) {
    let root = bearer("root-token");
    let subjects: Vec<Value> = users.iter().map(|u| json!({"kind": "User", "user": {"name": u}})).collect();
    let level = json!({"metadata": {"name": name}, "spec": {"type": "Limited", "limited": limited}});
    let schema = json!({"metadata": {"name": name}, "spec": {"priorityLevelConfiguration": {"name": name}, "matchingPrecedence": precedence,
        "distinguisherMethod": {"type": "ByUser"},
        "rules": [{"subjects": subjects, "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}]}]}});
    let mut uids = Vec::new();
    for (resource, body) in [("prioritylevelconfigurations", level), ("flowschemas", schema)] {
        let headers = [("authorization", root.as_str()), ("content-type", "application/json")];
        let created = sim.request("POST", &format!("{GROUP}/{resource}"), &headers, Some(body.to_string().as_bytes()));
        assert_eq!(created.status, 201, "{}", created.text());
        uids.push(created.json()["metadata"]["uid"].as_str().unwrap().to_string());
    }
    (uids[1].clone(), uids[0].clone())
}

/// A response whose head has arrived and whose body the test reads only
/// when told: its HTTP/2 stream window (64 KiB) holds kache's writer.
struct Held {
    resp: http::Response<Incoming>,
    _send: hyper::client::conn::http2::SendRequest<http_body_util::Empty<Bytes>>,
}

async fn held(url: &str, token: &str, path: &str) -> Held {
    let tcp = tokio::net::TcpStream::connect(url.trim_start_matches("http://")).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(65_535)
        .initial_connection_window_size(65_535)
        .adaptive_window(false)
        .handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = http::Request::get(format!("{url}{path}")).header("authorization", bearer(token)).body(http_body_util::Empty::new()).unwrap();
    let resp = send.send_request(req).await.unwrap();
    Held { resp, _send: send }
}

impl Held {
    /// Reads the rest of the answer: its seats are given back.
    async fn finish(self) -> Bytes {
        self.resp.into_body().collect().await.unwrap().to_bytes()
    }
}

/// The sum of kache's figure `name` over the series of FlowSchema `schema`.
fn figure(kache_url: &str, name: &str, schema: &str) -> f64 {
    let text = common::request(&format!("{kache_url}/metrics"), "GET", &[("authorization", "Bearer root-token")], None).text();
    let label = format!("flow_schema=\"{schema}\"");
    text.lines().filter(|l| l.starts_with(name) && l.contains(&label)).filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).sum()
}

/// Waits until `n` requests of `schema` wait in kache's queues.
async fn until_queued(kache: &Process, schema: &str, n: f64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (url, schema) = (kache.url.clone(), schema.to_string());
        let got = tokio::task::spawn_blocking(move || figure(&url, "kache_flowcontrol_current_inqueue_requests", &schema)).await.unwrap();
        if got == n {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "never {n} requests waiting (last: {got})");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn answers_from_memory_name_the_schema_and_level_the_apiserver_names() {
    let (sim, kache, _dir) = cluster("20", &["--anonymous-auth"]);
    let pods = "/api/v1/namespaces/ns-0001/pods?resourceVersion=0";
    let lists = sim.served("pods", "list");
    let through: Vec<common::Resp> = ["root-token", "sa-token"].iter().map(|t| as_user(&kache, t, pods)).collect();
    assert_eq!(sim.served("pods", "list"), lists, "answered from memory");
    for (token, through) in ["root-token", "sa-token"].into_iter().zip(through) {
        let direct = as_user(&sim, token, pods);
        assert_eq!((through.status, direct.status), (200, 200), "{token}");
        assert!(named(&direct).0.is_some(), "the simulator names it");
        assert_eq!(named(&through), named(&direct), "{token}");
    }
    // Anonymous: kache's own 403 names global-default, as the apiserver's does.
    let (direct, through) = (sim.get(pods), kache.get(pods));
    assert_eq!((through.status, direct.status), (403, 403));
    assert_eq!(named(&through), named(&direct));
    assert_eq!(figure(&kache.url, "kache_flowcontrol_dispatched_requests_total", "service-accounts"), 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_user_cannot_hold_back_another_users_read() {
    let (sim, kache, _dir) = tokio::task::spawn_blocking(|| cluster("600", &[])).await.unwrap();
    // One seat for both users, a queue each (hands of one; their flows hash to queues 46 and 62 of 64).
    let limited = json!({"nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 1, "queueLengthLimit": 50}}});
    let (schema, _) = apply(&sim, "tight", 100, &["flood", "victim"], limited);
    let pod = as_user(&sim, "root-token", "/api/v1/namespaces/ns-0001/pods?limit=1").json()["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let victim_path = format!("/api/v1/namespaces/ns-0001/pods/{pod}?resourceVersion=0");
    common::eventually(Duration::from_secs(30), "kache to classify by the new schema", || {
        (named(&as_user(&kache, "victim-token", &victim_path)).0.as_deref() == Some(schema.as_str())).then_some(())
    });
    let (tx, mut heads) = tokio::sync::mpsc::unbounded_channel::<(String, Held)>();
    for i in 0..10 {
        let (tx, url) = (tx.clone(), kache.url.clone());
        tokio::spawn(async move { tx.send((format!("flood-{i}"), held(&url, "flood-token", "/api/v1/pods?resourceVersion=0").await)) });
    }
    let (first, running) = heads.recv().await.unwrap();
    assert!(first.starts_with("flood"));
    until_queued(&kache, "tight", 9.0).await;
    let (tx2, url) = (tx.clone(), kache.url.clone());
    tokio::spawn(async move { tx2.send(("victim".to_string(), held(&url, "victim-token", &victim_path).await)) });
    until_queued(&kache, "tight", 10.0).await;
    // The seat frees: of the nine lists and the read waiting, the read goes
    // first. A list let in first would keep the seat (nobody reads it: it is
    // larger than the stream window) and the read would never come. The read
    // ends at once and gives the seat to one list, whose head may reach this
    // task before the read's does: at most one list comes with the read.
    assert!(running.finish().await.len() > 1_000_000, "a list larger than the stream window");
    let mut floods = Vec::new();
    let victim = loop {
        let head = tokio::time::timeout(Duration::from_secs(60), heads.recv()).await;
        match head.expect("the read waiting beside the flood never came").unwrap() {
            (who, victim) if who == "victim" => break victim,
            (_, flood) => floods.push(flood),
        }
    };
    assert_eq!(victim.resp.status(), 200);
    let body: Value = serde_json::from_slice(&victim.finish().await).unwrap();
    assert_eq!(body["metadata"]["name"], pod.as_str());
    assert!(floods.len() <= 1, "{} of the flood's queued lists went before the read", floods.len());
    // Then the flood goes on, one list at a time.
    let flood = match floods.pop() {
        Some(flood) => flood,
        None => heads.recv().await.unwrap().1,
    };
    flood.finish().await;
    drop((sim, kache));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reject_level_answers_429_with_retry_after_once_a_schema_sends_a_user_there() {
    let (sim, kache, _dir) = tokio::task::spawn_blocking(|| cluster("600", &[])).await.unwrap();
    let list = "/api/v1/pods?resourceVersion=0";
    let before = tokio::task::spawn_blocking({
        let (k, s) = (kache.url.clone(), sim.url.clone());
        move || {
            let (through, direct) = (
                common::request(&format!("{k}{list}"), "GET", &[("authorization", "Bearer flood-token")], None),
                common::request(&format!("{s}{list}"), "GET", &[("authorization", "Bearer flood-token")], None),
            );
            (named(&through), named(&direct))
        }
    })
    .await
    .unwrap();
    assert_eq!(before.0, before.1, "global-default, as upstream names it");
    // A jail: no seats of its own, none borrowed; it admits one request when none executes.
    let limited =
        json!({"nominalConcurrencyShares": 0, "lendablePercent": 0, "borrowingLimitPercent": 0, "limitResponse": {"type": "Reject"}});
    let (schema, level) = apply(&sim, "jail", 50, &["flood"], limited);
    common::eventually(Duration::from_secs(30), "kache to take the new schema", || {
        (named(&as_user(&kache, "flood-token", "/api/v1/namespaces/ns-0001/pods?resourceVersion=0")).0.as_deref() == Some(schema.as_str()))
            .then_some(())
    });
    let running = held(&kache.url, "flood-token", list).await;
    assert_eq!(running.resp.status(), 200);
    let refused = held(&kache.url, "flood-token", list).await;
    assert_eq!(refused.resp.status(), 429);
    let header = |h: &Held, n: &str| h.resp.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
    assert!(header(&refused, "retry-after").and_then(|s| s.parse::<u64>().ok()).is_some_and(|s| s >= 1));
    assert_eq!(header(&refused, "content-type").as_deref(), Some("text/plain; charset=utf-8"));
    assert_eq!(
        (header(&refused, "x-kubernetes-pf-flowschema-uid"), header(&refused, "x-kubernetes-pf-prioritylevel-uid")),
        (Some(schema), Some(level))
    );
    assert_eq!(&refused.finish().await[..], b"Too many requests, please try again later.\n");
    // Another user is not in the jail.
    let victim = held(&kache.url, "victim-token", list).await;
    assert_eq!(victim.resp.status(), 200);
    running.finish().await;
    let again = held(&kache.url, "flood-token", list).await;
    assert_eq!(again.resp.status(), 200, "the jail's one request is done: the next goes");
    let url = kache.url.clone();
    let rejected = tokio::task::spawn_blocking(move || figure(&url, "kache_flowcontrol_rejected_requests_total", "jail")).await.unwrap();
    assert_eq!(rejected, 1.0);
    drop((victim, again));
}

#[test]
fn without_leave_to_list_the_configuration_kache_is_ready_and_queues_by_the_bootstrap_one() {
    // kache may list pods but not FlowSchemas and levels: an upgrade without the new RBAC rules.
    let everything = r#"{"subjects": ["user:kache"], "verbs": ["get", "list", "watch"], "groups": ["*"], "resources": ["*"]}"#;
    let pods_only = r#"{"subjects": ["user:kache"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["pods"]}"#;
    assert!(POLICY.contains(everything));
    let (sim, kache, _dir) = cluster_with(&POLICY.replace(everything, pods_only), "20", &[]);
    let direct = as_user(&sim, "kache-token", &format!("{GROUP}/flowschemas"));
    assert_eq!(direct.status, 403, "kache may not list the schemas");
    let pods = "/api/v1/namespaces/ns-0001/pods?resourceVersion=0";
    let lists = sim.served("pods", "list");
    assert_eq!(as_user(&kache, "sa-token", pods).status, 200);
    assert_eq!(sim.served("pods", "list"), lists, "answered from memory");
    assert_eq!(
        figure(&kache.url, "kache_flowcontrol_dispatched_requests_total", "service-accounts"),
        1.0,
        "queued by the bootstrap schemas"
    );
}

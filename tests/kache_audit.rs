//! Auditing as kube-apiserver audits: the requests of
//! `tests/reference/audit/capture.sh`, sent through kache in front of the
//! simulator (with the bench apiserver's users), leave the events the real
//! apiserver wrote for them (`apiserver.jsonl`), field for field but for
//! IDs, times, source addresses and kache's own annotations; what kache
//! passes through leaves none, the apiserver's side holding the same
//! `Audit-ID`; every answer carries an `Audit-ID`; a webhook gets batches;
//! a full queue drops and counts, an unwritable log counts and says so once.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Process, Resp, eventually};
use serde_json::Value;

const UA: &str = "kache-audit-capture/1.0";
const ADMIN: &str = "Bearer kreal-admin-token";
const VIEWER: &str = "Bearer kreal-viewer-token";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/// The bench apiserver's users (`/work/shared/realapi`) and its viewer's RoleBinding, with RBAC's reason.
const USERS: &str = r#"{
  "users": [
    {"name": "admin", "uid": "admin-uid", "groups": ["system:masters"], "tokens": ["kreal-admin-token"]},
    {"name": "viewer", "uid": "viewer-uid", "tokens": ["kreal-viewer-token"]},
    {"name": "quiet", "groups": ["system:masters"], "tokens": ["quiet-token"]}
  ],
  "rules": [
    {"subjects": ["user:viewer"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["pods", "configmaps"],
     "namespaces": ["view-ok"], "reason": "RBAC: allowed by RoleBinding \"viewer-read/view-ok\" of Role \"viewer-read\" to User \"viewer\""}
  ]
}"#;

/// The requests of `capture.sh` kache answers itself: (name, authorization, path, accept).
const ANSWERED: &[(&str, &str, &str, &str)] = &[
    ("list-pods", ADMIN, "/api/v1/pods?resourceVersion=0", "application/json"),
    ("list-pods-table", ADMIN, "/api/v1/pods?limit=500&resourceVersion=0", TABLE),
    ("get-pod", ADMIN, "/api/v1/namespaces/default/pods/p1?resourceVersion=0", "application/json"),
    ("get-configmap", ADMIN, "/api/v1/namespaces/default/configmaps/c1?resourceVersion=0", "application/json"),
    ("list-secrets", ADMIN, "/api/v1/namespaces/default/secrets?resourceVersion=0", "application/json"),
    ("watch-pods", ADMIN, "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0&timeoutSeconds=2", "application/json"),
    ("viewer-allowed", VIEWER, "/api/v1/namespaces/view-ok/pods?resourceVersion=0", "application/json"),
    ("viewer-forbidden", VIEWER, "/api/v1/namespaces/default/pods?resourceVersion=0", "application/json"),
    ("viewer-forbidden-watch", VIEWER, "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0", "application/json"),
    ("not-found", ADMIN, "/api/v1/namespaces/default/pods/nope?resourceVersion=0", "application/json"),
    ("unauthenticated", "Bearer not-a-token", "/api/v1/pods?resourceVersion=0", "application/json"),
];

fn reference() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/reference/audit")
}

/// The events of a log so far (a line being written is left for later).
fn events(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.split_inclusive('\n').filter(|l| l.ends_with('\n')).map(|l| serde_json::from_str(l).expect("a JSON event")).collect()
}

fn with_id<'a>(events: &'a [Value], id: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["auditID"] == id).collect()
}

/// An event without what differs between two servers: IDs, times, addresses, kache's own annotations, the body.
fn comparable(e: &Value) -> Value {
    let mut e = e.clone();
    let m = e.as_object_mut().unwrap();
    for k in ["auditID", "requestReceivedTimestamp", "stageTimestamp", "sourceIPs"] {
        m.shift_remove(k);
    }
    if let Some(Value::Object(a)) = m.get_mut("annotations") {
        a.retain(|k, _| !k.starts_with("kache.dev/"));
        if a.is_empty() {
            m.shift_remove("annotations");
        }
    }
    if m.contains_key("responseObject") {
        m.insert("responseObject".into(), "present".into());
    }
    e
}

/// The simulator with the bench apiserver's users and objects, and kache in front with `policy`.
fn cluster(dir: &Path, policy: &str, extra: &[&str]) -> (Process, Process, PathBuf) {
    let users = dir.join("users.json");
    std::fs::write(&users, USERS).unwrap();
    let sim = Process::sim(&["--pods", "0", "--configmaps", "0", "--policy", users.to_str().unwrap()]);
    let admin = [("authorization", ADMIN), ("content-type", "application/json")];
    for (path, body) in [
        ("/api/v1/namespaces", r#"{"metadata":{"name":"view-ok"}}"#),
        ("/api/v1/namespaces/default/pods", r#"{"metadata":{"name":"p1"},"spec":{"containers":[{"name":"p1","image":"busybox"}]}}"#),
        ("/api/v1/namespaces/view-ok/pods", r#"{"metadata":{"name":"p2"},"spec":{"containers":[{"name":"p2","image":"busybox"}]}}"#),
        ("/api/v1/namespaces/default/configmaps", r#"{"metadata":{"name":"c1"},"data":{"k":"v"}}"#),
        ("/api/v1/namespaces/default/secrets", r#"{"metadata":{"name":"s1"},"data":{"k":"dg=="},"type":"Opaque"}"#),
    ] {
        let r = sim.request("POST", path, &admin, Some(body.as_bytes()));
        assert_eq!(r.status, 201, "{path}: {}", r.text());
    }
    let (policy_file, log) = (dir.join("policy.yaml"), dir.join("audit/audit.log"));
    std::fs::write(&policy_file, policy).unwrap();
    let mut args = vec!["--token", "kreal-admin-token", "--token-review", "--resources", "pods,configmaps,secrets,namespaces"];
    args.extend(["--audit-policy-file", policy_file.to_str().unwrap(), "--audit-log-path", log.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let kache = Process::kache(&sim.url, &args);
    eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    (sim, kache, log)
}

/// `name`'s request through kache, as `capture.sh` sends it.
fn send(kache: &Process, name: &str, authorization: &str, method: &str, path: &str, accept: &str, body: Option<&[u8]>) -> Resp {
    let id = format!("cap-{name}-kache");
    let mut headers = vec![("user-agent", UA), ("accept", accept), ("audit-id", id.as_str()), ("authorization", authorization)];
    if body.is_some() {
        headers.push(("content-type", "application/json"));
    }
    let resp = kache.request(method, path, &headers, body);
    assert_eq!(resp.header("audit-id"), Some(id.as_str()), "{name}: the client's Audit-ID is echoed");
    resp
}

#[test]
fn kaches_events_equal_the_apiservers_for_the_same_requests() {
    let dir = tempfile::tempdir().unwrap();
    let policy = std::fs::read_to_string(reference().join("policy.yaml")).unwrap();
    // One more rule first: nothing of the user `quiet`.
    let policy = policy.replacen("rules:\n", "rules:\n- level: None\n  users: [\"quiet\"]\n", 1);
    let (sim, kache, log) = cluster(dir.path(), &policy, &[]);
    let mut bodies = std::collections::HashMap::new();
    for (name, authorization, path, accept) in ANSWERED {
        bodies.insert(*name, send(&kache, name, authorization, "GET", path, accept, None).body);
    }
    let acting = kache.request(
        "GET",
        "/api/v1/namespaces/view-ok/pods?resourceVersion=0",
        &[
            ("user-agent", UA),
            ("accept", "application/json"),
            ("audit-id", "cap-impersonated-kache"),
            ("authorization", ADMIN),
            ("impersonate-user", "viewer"),
        ],
        None,
    );
    assert_eq!(acting.status, 200, "{}", acting.text());
    let quiet = send(&kache, "quiet", "Bearer quiet-token", "GET", "/api/v1/pods?resourceVersion=0", "application/json", None);
    assert_eq!(quiet.status, 200);
    let create = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"made-via-kache"},"data":{"k":"v"}}"#;
    let created =
        send(&kache, "create-configmap", ADMIN, "POST", "/api/v1/namespaces/default/configmaps", "application/json", Some(create));
    assert_eq!(created.status, 201, "{}", created.text());
    // The last request kache answers itself: once its event is in, every earlier one is.
    send(&kache, "last", ADMIN, "GET", "/api/v1/namespaces?resourceVersion=0", "application/json", None);

    let apiserver: Vec<Value> =
        std::fs::read_to_string(reference().join("apiserver.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let got = eventually(Duration::from_secs(10), "the last event", || {
        let got = events(&log);
        (with_id(&got, "cap-last-kache").len() == 2).then_some(got)
    });
    for name in ANSWERED.iter().map(|(name, ..)| *name).chain(["impersonated"]) {
        let want: Vec<Value> = with_id(&apiserver, &format!("cap-{name}-direct2")).into_iter().map(comparable).collect();
        let mine = with_id(&got, &format!("cap-{name}-kache"));
        assert!(!want.is_empty(), "{name}: no reference events");
        let mut compared: Vec<Value> = mine.iter().map(|e| comparable(e)).collect();
        if name == "impersonated" {
            // Which mode the apiserver records depends on the one that last allowed the same requester — kache's own
            // relays impersonate as it — so the capture's (the legacy verb's: nothing) is one of two; a requester's
            // first impersonation of a plain user is allowed by `impersonate:user-info` where RBAC allows every mode.
            let complete = compared.iter_mut().find(|e| e["stage"] == "ResponseComplete").expect("the complete event");
            let mode = complete.as_object_mut().unwrap().shift_remove("authenticationMetadata");
            assert_eq!(mode, Some(serde_json::json!({"impersonationConstraint": "impersonate:user-info"})));
        }
        assert_eq!(compared, want, "{name}");
        assert!(
            mine.iter()
                .filter(|e| e["stage"] != "RequestReceived")
                .all(|e| e["annotations"]["kache.dev/road"] == "kache" || e["annotations"]["kache.dev/road"] == "memory"),
            "{name}: {mine:?}"
        );
        // At RequestResponse the body is the one the client got, as Go embeds it.
        for e in mine.iter().filter(|e| e.get("responseObject").is_some()) {
            let body: Value = serde_json::from_slice(&bodies[&name]).unwrap();
            assert_eq!(e["responseObject"], body, "{name}");
        }
    }
    assert_eq!(with_id(&got, "cap-quiet-kache").len(), 0, "level None writes nothing");
    // Passed through: the apiserver audits it, under the same ID, naming the client.
    assert_eq!(with_id(&got, "cap-create-configmap-kache").len(), 0, "kache writes no event for what it relays");
    let upstream = sim.get("/_sim/audit").json();
    let seen = upstream["requests"].as_array().unwrap().iter().find(|r| r["auditID"] == "cap-create-configmap-kache").cloned();
    assert_eq!(seen.map(|r| (r["verb"].clone(), r["impersonatedUser"].clone())), Some(("create".into(), "admin".into())));
}

fn is_fresh_id(id: &str) -> bool {
    let parts: Vec<&str> = id.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts[2].starts_with('4')
        && id.chars().all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
}

#[test]
fn every_answer_carries_an_audit_id_and_what_kache_relays_takes_it_upstream() {
    let sim = Process::sim(&["--pods", "5", "--configmaps", "1"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods,configmaps"]);
    eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    let cm = br#"{"metadata":{"name":"made"}}"#;
    let requests: &[(&str, &str, Option<&[u8]>)] = &[
        ("GET", "/livez", None),
        ("GET", "/readyz", None),
        ("GET", "/metrics", None),
        ("GET", "/api/v1/pods?resourceVersion=0", None),
        ("GET", "/api/v1/namespaces/ns-0001/pods/nope?resourceVersion=0", None),
        ("GET", "/api/v1/pods?resourceVersion=0&watch=true&timeoutSeconds=1", None),
        ("GET", "/api/v1/nodes/nope", None),
        ("POST", "/api/v1/namespaces/ns-0001/configmaps", Some(cm)),
    ];
    for (i, (method, path, body)) in requests.iter().enumerate() {
        let given = format!("given-{i}");
        let r = kache.request(method, path, &[("audit-id", &given), ("content-type", "application/json")], *body);
        assert_eq!(r.header("audit-id"), Some(given.as_str()), "{method} {path}: echoed");
        let r =
            kache.request(method, path, &[("content-type", "application/json")], body.map(|_| &br#"{"metadata":{"name":"made2"}}"#[..]));
        let id = r.header("audit-id").unwrap_or_else(|| panic!("{method} {path}: no audit-id"));
        assert!(is_fresh_id(id), "{method} {path}: {id}");
        if *method == "POST" {
            assert_eq!(r.status, 201, "{}", r.text());
            // kache's own ID went upstream with the request: the simulator saw it.
            let seen = sim.get("/_sim/audit").json();
            assert!(seen["requests"].as_array().unwrap().iter().any(|s| s["auditID"] == id && s["verb"] == "create"), "{id} not upstream");
        }
    }
}

/// A webhook receiver on a port of its own: each batch's path, `Authorization` and body; `answers`: whether it ever answers.
fn receiver(answers: bool) -> (String, std::sync::mpsc::Receiver<(String, String, Value)>) {
    use http_body_util::BodyExt;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((stream, _)) = listener.accept().await {
                let tx = tx.clone();
                let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let tx = tx.clone();
                    async move {
                        if !answers {
                            std::future::pending::<()>().await;
                        }
                        let path = req.uri().path().to_string();
                        let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                        let body = req.into_body().collect().await?.to_bytes();
                        let _ = tx.send((path, auth, serde_json::from_slice(&body).expect("an EventList")));
                        Ok::<_, hyper::Error>(hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(b"{}"))))
                    }
                });
                tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(stream), service));
            }
        });
    });
    (url, rx)
}

/// A kubeconfig naming the webhook at `url`.
fn webhook_config(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("webhook.kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: w\n  cluster:\n    server: {url}/audit\nusers:\n- name: w\n  user:\n    token: webhook-token\ncontexts:\n- name: w\n  context: {{cluster: w, user: w}}\ncurrent-context: w\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Metadata for everything but `/metrics` (so scraping counts nothing).
const METADATA: &str =
    "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [\"/metrics\", \"/readyz\"]\n- level: Metadata\n";

fn audit_counts(kache: &Process, backend: &str) -> [u64; 3] {
    let m = common::scrape(kache);
    ["written", "dropped", "failed"]
        .map(|r| m.get(&format!("kache_audit_events_total{{backend=\"{backend}\",result=\"{r}\"}}")).copied().unwrap_or(-1.0) as u64)
}

/// kache at Metadata level on the simulator, its events to a webhook that `answers` or never does.
fn hooked(dir: &Path, answers: bool, batching: &[&str]) -> (Process, Process, std::sync::mpsc::Receiver<(String, String, Value)>) {
    let (url, batches) = receiver(answers);
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, METADATA).unwrap();
    let sim = Process::sim(&["--pods", "5"]);
    let config = webhook_config(dir, &url);
    let mut args = vec!["--resources", "pods", "--audit-policy-file", policy.to_str().unwrap()];
    args.extend(["--audit-webhook-config-file", config.to_str().unwrap()]);
    args.extend_from_slice(batching);
    let kache = Process::kache(&sim.url, &args);
    eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    (sim, kache, batches)
}

#[test]
fn a_webhook_gets_the_events_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let (_sim, kache, batches) =
        hooked(dir.path(), true, &["--audit-webhook-batch-max-size", "3", "--audit-webhook-batch-max-wait", "200ms"]);
    for i in 0..4 {
        let r = kache.request("GET", "/api/v1/pods?resourceVersion=0", &[("audit-id", &format!("hook-{i}"))], None);
        assert_eq!(r.status, 200);
    }
    let mut items = Vec::new();
    while items.len() < 8 {
        let (path, auth, list) = batches.recv_timeout(Duration::from_secs(10)).expect("a batch");
        assert_eq!((path.as_str(), auth.as_str()), ("/audit", "Bearer webhook-token"));
        assert_eq!((&list["kind"], &list["apiVersion"]), (&Value::from("EventList"), &Value::from("audit.k8s.io/v1")));
        let batch = list["items"].as_array().unwrap();
        assert!((1..=3).contains(&batch.len()), "{} events in a batch", batch.len());
        // As the apiserver's batches: items without their own kind and apiVersion.
        assert!(batch.iter().all(|e| e.get("kind").is_none() && e["level"] == "Metadata"), "{batch:?}");
        items.extend(batch.iter().cloned());
    }
    let ids: Vec<String> = items.iter().map(|e| format!("{} {}", e["auditID"].as_str().unwrap(), e["stage"].as_str().unwrap())).collect();
    let want: Vec<String> = (0..4).flat_map(|i| [format!("hook-{i} RequestReceived"), format!("hook-{i} ResponseComplete")]).collect();
    assert_eq!(ids, want);
    eventually(Duration::from_secs(5), "the written count", || (audit_counts(&kache, "webhook") == [8, 0, 0]).then_some(()));
}

#[test]
fn a_full_queue_drops_and_counts_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let (_sim, kache, _batches) =
        hooked(dir.path(), false, &["--audit-webhook-batch-max-size", "1", "--audit-webhook-batch-buffer-size", "5"]);
    // The first event's batch hangs at the webhook; five wait in the queue; the rest do not fit.
    let requests = 20;
    for _ in 0..requests {
        assert_eq!(kache.get("/api/v1/pods?resourceVersion=0").status, 200, "answered whatever the webhook does");
    }
    assert_eq!(audit_counts(&kache, "webhook"), [0, 2 * requests - 6, 0]);
}

#[test]
fn an_unwritable_log_is_counted_and_said_once_while_kache_serves() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, METADATA).unwrap();
    // A directory that cannot be made: its parent is a file.
    std::fs::write(dir.path().join("file"), "").unwrap();
    let log = dir.path().join("file/audit/audit.log");
    let sim = Process::sim(&["--pods", "5"]);
    let kache = Process::logged(
        "serve",
        &[
            "--server",
            &sim.url,
            "--resources",
            "pods",
            "--audit-policy-file",
            policy.to_str().unwrap(),
            "--audit-log-path",
            log.to_str().unwrap(),
        ],
    );
    eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    for _ in 0..5 {
        assert_eq!(kache.get("/api/v1/pods?resourceVersion=0").status, 200);
    }
    eventually(Duration::from_secs(5), "failed events counted", || (audit_counts(&kache, "log") == [0, 0, 10]).then_some(()));
    assert_eq!(kache.log().matches("the audit log cannot be written").count(), 1, "{}", kache.log());
}

#[test]
fn a_bad_policy_is_refused_in_the_apiservers_words_before_kache_listens() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Foo\n  omitStages: [X]\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kache"))
        .args(["serve", "--listen", "127.0.0.1:0", "--server", "http://127.0.0.1:1", "--audit-policy-file", policy.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!((out.status.code(), stdout.as_ref()), (Some(1), ""), "{stderr}");
    // As `kube-apiserver --audit-policy-file` words it (tests/reference/audit/README.md).
    let want = format!(
        "Error: loading audit policy file: [rules[0].level: Unsupported value: \"Foo\": supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\", rules[0].omitStages[0]: Invalid value: \"X\": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic]: from file {}\n",
        policy.display()
    );
    assert_eq!(stderr, want);
}

#[test]
fn the_simulator_echoes_or_makes_an_audit_id_as_the_apiserver_does() {
    let sim = Process::sim(&["--pods", "2"]);
    for path in ["/api/v1/pods", "/livez", "/api/v1/nope"] {
        assert_eq!(sim.request("GET", path, &[("audit-id", "mine")], None).header("audit-id"), Some("mine"), "{path}");
        let made = sim.get(path);
        assert!(made.header("audit-id").is_some_and(is_fresh_id), "{path}: {:?}", made.header("audit-id"));
    }
    let seen = sim.get("/_sim/audit").json();
    let mine: Vec<&Value> = seen["requests"].as_array().unwrap().iter().filter(|r| r["auditID"] == "mine").collect();
    assert_eq!(mine.len(), 3, "{seen}");
    assert_eq!(mine[0]["verb"], "list");
}

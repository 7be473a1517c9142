//! Hostile input against a running kache with client authentication on:
//! random query strings, selectors, continue tokens, `Accept` and
//! `Content-Type` headers, bearer tokens, JSON and protobuf bodies, and
//! watches that are never read. kache must answer every one with a status
//! below 500 (a `Status` body for errors), never panic or hang, and stay
//! within a memory bound.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::Process;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const POLICY: &str = r#"{
  "users": [{"name": "dev", "groups": ["dev"], "tokens": ["dev-token"]}, {"name": "kache", "tokens": ["kache-token"]}],
  "rules": [
    {"subjects": ["group:dev"], "verbs": ["get", "list", "watch", "create", "update", "patch"], "groups": [""], "resources": ["pods", "configmaps"], "namespaces": ["ns-0001"]},
    {"subjects": ["user:kache"], "verbs": ["get", "list", "watch"], "groups": ["*"], "resources": ["*"]},
    {"subjects": ["user:kache"], "verbs": ["create"], "groups": ["authentication.k8s.io"], "resources": ["tokenreviews"]},
    {"subjects": ["user:kache"], "verbs": ["create"], "groups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"]},
    {"subjects": ["user:kache"], "verbs": ["impersonate"], "groups": ["", "authentication.k8s.io"], "resources": ["users", "groups", "serviceaccounts", "uids", "userextras/*"]}
  ]
}"#;

/// Something a client controls, as text: interesting values and noise.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("true".to_string()),
        Just("NotOlderThan".to_string()),
        Just("Exact".to_string()),
        Just("metadata.name=x".to_string()),
        Just("a in (b,c),!d,e!=f".to_string()),
        Just("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0".to_string()),
        "[ -~]{0,40}",
        any::<String>().prop_map(|s| s.chars().take(40).collect()),
    ]
}

const KEYS: &[&str] = &[
    "limit",
    "continue",
    "resourceVersion",
    "resourceVersionMatch",
    "labelSelector",
    "fieldSelector",
    "watch",
    "sendInitialEvents",
    "allowWatchBookmarks",
    "includeObject",
    "pretty",
    "timeoutSeconds",
];

const PATHS: &[&str] = &[
    "/api/v1/pods",
    "/api/v1/namespaces/ns-0001/pods",
    "/api/v1/namespaces/ns-0001/pods/nope",
    "/api/v1/namespaces/ns-0001/configmaps",
    "/api/v1/namespaces/ns-0002/configmaps",
    "/api/v1/watch/namespaces/ns-0001/pods",
    "/api/v1/namespaces/%2e%2e/pods",
    "/apis/apps/v1/deployments",
    "/api/v1/namespaces/ns-0001/pods/x/log",
    "/nonsense",
];

const ACCEPTS: &[&str] = &[
    "application/json",
    "application/vnd.kubernetes.protobuf",
    "application/vnd.kubernetes.protobuf;stream=watch",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    "text/html",
    "*/*;q=0.1, application/json;q=",
    ";;;,,,",
];

#[derive(Debug, Clone)]
struct Case {
    method: &'static str,
    path: &'static str,
    query: Vec<(&'static str, String)>,
    accept: String,
    authorization: Option<String>,
    content_type: String,
    body: Vec<u8>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop_oneof![4 => Just("GET"), 1 => Just("POST"), 1 => Just("PUT"), 1 => Just("PATCH"), 1 => Just("DELETE")],
        proptest::sample::select(PATHS),
        proptest::collection::vec((proptest::sample::select(KEYS), text()), 0..5),
        prop_oneof![proptest::sample::select(ACCEPTS).prop_map(str::to_string), text()],
        prop_oneof![
            Just(None),
            Just(Some("Bearer dev-token".to_string())),
            Just(Some("Bearer".to_string())),
            text().prop_map(|t| Some(format!("Bearer {t}"))),
            text().prop_map(Some),
        ],
        prop_oneof![
            Just("application/json".to_string()),
            Just("application/vnd.kubernetes.protobuf".to_string()),
            Just("application/merge-patch+json".to_string()),
            text(),
        ],
        prop_oneof![
            Just(br#"{"metadata":{"name":"x"}}"#.to_vec()),
            Just(b"k8s\0\x0a\x05\x0a\x02v1\x12\xff".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..200),
        ],
    )
        .prop_map(|(method, path, query, accept, authorization, content_type, body)| Case {
            method,
            path,
            query,
            accept,
            authorization,
            content_type,
            body,
        })
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

#[test]
fn hostile_requests_get_statuses_never_a_crash_a_hang_or_unbounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, POLICY).unwrap();
    let sim =
        Process::sim(&["--pods", "200", "--namespaces", "2", "--configmaps", "10", "--churn", "50", "--policy", policy.to_str().unwrap()]);
    let kache = Process::kache(&sim.url, &["--token", "kache-token", "--token-review", "--resources", "pods,configmaps"]);
    common::eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    let before = rss_kib(kache.pid());
    // Watches that are never read: their queues fill and kache closes them.
    let address = kache.url.trim_start_matches("http://").to_string();
    let stalled: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut s = TcpStream::connect(&address).unwrap();
            write!(s, "GET /api/v1/namespaces/ns-0001/pods?watch=1&resourceVersion=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dev-token\r\n\r\n").unwrap();
            s
        })
        .collect();
    let cases = 1000;
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let kache_url = kache.url.clone();
    runner
        .run(&case(), |c| {
            let mut query: Vec<(String, String)> = c.query.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
            // Bound every watch a case opens.
            query.retain(|(k, _)| *k != "timeoutSeconds");
            query.push(("timeoutSeconds".into(), "1".into()));
            let q: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(&query).finish();
            let url = format!("{kache_url}{}?{q}", c.path);
            // What an HTTP client can send at all (visible ASCII and spaces).
            let sendable = |s: &str| s.bytes().all(|b| (0x20..0x7f).contains(&b));
            let mut headers: Vec<(&str, &str)> = Vec::new();
            if sendable(&c.accept) {
                headers.push(("accept", &c.accept));
            }
            if let Some(a) = c.authorization.as_deref().filter(|a| sendable(a)) {
                headers.push(("authorization", a));
            }
            if sendable(&c.content_type) {
                headers.push(("content-type", &c.content_type));
            }
            let body = (c.method != "GET" && c.method != "DELETE").then_some(&c.body[..]);
            let r = common::request(&url, c.method, &headers, body);
            prop_assert!(r.status < 500, "{} {url}: {} {}", c.method, r.status, r.text());
            let json = r.header("content-type").is_some_and(|t| t.starts_with("application/json"));
            if r.status >= 400 && json {
                let v: serde_json::Value = serde_json::from_slice(&r.body).map_err(|e| TestCaseError::fail(format!("{url}: {e}")))?;
                prop_assert_eq!(&v["kind"], "Status", "{} {}", c.method, url);
                prop_assert_eq!(v["code"].as_u64(), Some(u64::from(r.status)), "{} {}", c.method, url);
            }
            Ok(())
        })
        .unwrap();
    drop(stalled);
    assert_eq!(kache.get("/healthz").status, 200, "kache is alive after {cases} hostile requests");
    let after = rss_kib(kache.pid());
    assert!(after < before + 200 * 1024, "RSS went from {before} KiB to {after} KiB");
    println!("{cases} hostile requests; kache RSS {before} KiB -> {after} KiB");
}

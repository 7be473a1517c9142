//! kubectl, unchanged, drives the simulator: the verbs a user runs, and
//! `--raw` requests for the rows of the list semantics table.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Process, eventually};
use serde_json::{Value, json};

fn json_of(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

#[test]
fn kubectl_lists_every_generated_pod_in_chunks() {
    let sim = Process::sim(&["--pods", "3000", "--nodes", "30"]);
    let out = sim.kubectl_ok(&["get", "pods", "-A", "--chunk-size=500", "--no-headers"]);
    assert_eq!(out.lines().count(), 3000);
    let names: Vec<&str> = out.lines().map(|l| l.split_whitespace().nth(1).expect("a name")).collect();
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(unique.len(), 3000, "a page repeated or skipped pods");
    let one_ns = sim.kubectl_ok(&["get", "pods", "-n", "ns-0003", "-o", "name", "--chunk-size=7"]);
    assert_eq!(one_ns.lines().count(), 300);
}

#[test]
fn kubectl_create_apply_patch_label_and_delete_round_trip() {
    let sim = Process::sim(&[]);
    let out = sim.kubectl_stdin(&["create", "-f", "-"], Some("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team\ndata:\n  mode: fast\n";
    let out = sim.kubectl_stdin(&["apply", "-f", "-"], Some(cm));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let first = json_of(&sim.kubectl_ok(&["get", "configmap", "settings", "-n", "team", "-o", "json"]));
    assert_eq!(first["data"]["mode"], "fast");
    assert!(first["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].is_string());

    // A second apply computes a strategic merge patch from the last-applied annotation.
    let changed = cm.replace("mode: fast", "mode: safe\n  extra: \"1\"");
    let out = sim.kubectl_stdin(&["apply", "-f", "-"], Some(&changed));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let second = json_of(&sim.kubectl_ok(&["get", "configmap", "settings", "-n", "team", "-o", "json"]));
    assert_eq!(second["data"], json!({"mode": "safe", "extra": "1"}));
    assert_eq!(second["metadata"]["uid"], first["metadata"]["uid"]);
    let rv = |v: &Value| v["metadata"]["resourceVersion"].as_str().expect("an rv").parse::<u64>().expect("numeric");
    assert!(rv(&second) > rv(&first));

    sim.kubectl_ok(&["patch", "configmap", "settings", "-n", "team", "--type=merge", "-p", r#"{"data":{"extra":null}}"#]);
    sim.kubectl_ok(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        "team",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/data/k","value":"v"}]"#,
    ]);
    sim.kubectl_ok(&["label", "configmap", "settings", "-n", "team", "tier=gold"]);
    let third = json_of(&sim.kubectl_ok(&["get", "configmap", "-n", "team", "-l", "tier=gold", "-o", "json"]));
    assert_eq!(third["items"][0]["data"], json!({"mode": "safe", "k": "v"}));
    assert!(sim.kubectl_ok(&["get", "configmap", "-n", "team", "-l", "tier!=gold", "-o", "name"]).trim().is_empty());

    sim.kubectl_ok(&["delete", "configmap", "settings", "-n", "team"]);
    let gone = sim.kubectl(&["get", "configmap", "settings", "-n", "team"]);
    assert!(!gone.status.success());
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains(r#"configmaps "settings" not found"#),
        "{}",
        String::from_utf8_lossy(&gone.stderr)
    );
}

#[test]
fn kubectl_applies_deployments_and_custom_resources() {
    let sim = Process::sim(&["--crd", "widgets.example.com/v1=Widget"]);
    let deploy = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
        "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
        "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1"}]}}}}"#;
    let out = sim.kubectl_stdin(&["apply", "-f", "-"], Some(deploy));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A changed image is merged into the container list by name.
    let out = sim.kubectl_stdin(&["apply", "-f", "-"], Some(&deploy.replace("nginx:1", "nginx:2")));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = json_of(&sim.kubectl_ok(&["get", "deployment", "web", "-o", "json"]));
    assert_eq!(d["spec"]["template"]["spec"]["containers"], json!([{"name": "web", "image": "nginx:2"}]));
    assert_eq!(d["metadata"]["generation"], 2);

    let widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n";
    let out = sim.kubectl_stdin(&["apply", "-f", "-"], Some(widget));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let w = json_of(&sim.kubectl_ok(&["get", "widgets", "w1", "-o", "json"]));
    assert_eq!((w["kind"].as_str(), w["spec"]["size"].as_i64()), (Some("Widget"), Some(3)));
    sim.kubectl_ok(&["delete", "widget", "w1"]);
    assert!(sim.kubectl_ok(&["get", "widgets", "-o", "name"]).trim().is_empty());
}

#[test]
fn kubectl_deletes_in_two_phases_when_finalizers_are_set() {
    let sim = Process::sim(&[]);
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","namespace":"default","finalizers":["example.com/hold"]}}"#;
    let out = sim.kubectl_stdin(&["create", "-f", "-"], Some(cm));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    sim.kubectl_ok(&["delete", "configmap", "held", "--wait=false"]);
    let held = json_of(&sim.kubectl_ok(&["get", "configmap", "held", "-o", "json"]));
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    sim.kubectl_ok(&["patch", "configmap", "held", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    assert!(!sim.kubectl(&["get", "configmap", "held"]).status.success());
}

#[test]
fn kubectl_watch_sees_changes_as_they_happen() {
    let sim = Process::sim(&[]);
    let mut watch = Command::new("kubectl")
        .args(["--server", &sim.url, "get", "configmaps", "-n", "default", "--watch-only", "-o", "name", "--request-timeout=30s"])
        .env("KUBECONFIG", "/nonexistent")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl runs");
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = watch.stdout.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Keep creating until the watch (which starts asynchronously) reports one.
    let seen = eventually(Duration::from_secs(60), "kubectl --watch to print a new configmap", || {
        let name = format!("cm-{}", sim.revision());
        assert_eq!(sim.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": name}})).status, 201);
        rx.recv_timeout(Duration::from_millis(500)).ok()
    });
    assert!(seen.starts_with("configmap/cm-"), "{seen}");
    let _ = watch.kill();
    let _ = watch.wait();
}

#[test]
fn kubectl_raw_requests_cover_the_list_semantics_table() {
    let sim = Process::sim(&["--pods", "40", "--namespaces", "2", "--nodes", "4"]);
    let raw = |path: &str| json_of(&sim.kubectl_ok(&["get", "--raw", path]));
    let base = "/api/v1/namespaces/ns-0000/pods";
    let names = |v: &Value| {
        v["items"].as_array().expect("items").iter().map(|i| i["metadata"]["name"].as_str().expect("name").to_string()).collect::<Vec<_>>()
    };
    let rv_of = |v: &Value| v["metadata"]["resourceVersion"].as_str().expect("rv").parse::<u64>().expect("numeric");

    // Most Recent, then an update so that older revisions differ from the head.
    let before = raw(base);
    let at = rv_of(&before);
    assert_eq!(names(&before).len(), 20);
    let first = names(&before)[0].clone();
    sim.kubectl_ok(&["label", "pod", &first, "-n", "ns-0000", "changed=yes"]);
    sim.kubectl_ok(&["delete", "pod", &names(&before)[1], "-n", "ns-0000", "--wait=false"]);

    // Any: resourceVersion=0 ignores limit.
    let any = raw(&format!("{base}?resourceVersion=0&limit=3"));
    assert_eq!((names(&any).len(), any["metadata"]["continue"].is_null()), (19, true));
    // NotOlderThan: the head, at least `at`.
    let newer = raw(&format!("{base}?resourceVersion={at}"));
    assert!(rv_of(&newer) > at);
    assert_eq!(names(&newer).len(), 19);
    let newer = raw(&format!("{base}?resourceVersion={at}&resourceVersionMatch=NotOlderThan&limit=5"));
    assert_eq!((names(&newer).len(), newer["metadata"]["remainingItemCount"].as_u64()), (5, Some(14)));
    // Exact: the old state, also through the legacy rv+limit form.
    let exact = raw(&format!("{base}?resourceVersion={at}&resourceVersionMatch=Exact"));
    assert_eq!((rv_of(&exact), names(&exact)), (at, names(&before)));
    assert!(exact["items"][0]["metadata"]["labels"].get("changed").is_none());
    let legacy = raw(&format!("{base}?resourceVersion={at}&limit=500"));
    assert_eq!((rv_of(&legacy), names(&legacy)), (at, names(&before)));
    // Continue: pages of 7 at one revision add up to the exact list.
    let mut paged = Vec::new();
    let mut page = raw(&format!("{base}?resourceVersion={at}&resourceVersionMatch=Exact&limit=7"));
    loop {
        assert_eq!(rv_of(&page), at);
        paged.extend(names(&page));
        let Some(token) = page["metadata"]["continue"].as_str().map(str::to_string) else { break };
        page = raw(&format!("{base}?limit=7&continue={token}"));
    }
    assert_eq!(paged, names(&before));
    // Selectors: labels and fields.
    let labelled = raw(&format!("{base}?labelSelector=changed%3Dyes"));
    assert_eq!(names(&labelled), vec![first.clone()]);
    let on_node = raw("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-0001");
    assert!(!names(&on_node).is_empty());
    assert!(on_node["items"].as_array().expect("items").iter().all(|p| p["spec"]["nodeName"] == "node-0001"));
}

#[test]
fn kubectl_reports_a_watch_from_a_compacted_revision_as_expired() {
    let sim = Process::sim(&["--pods", "5", "--compact-interval", "0"]);
    assert_eq!(sim.request("POST", "/_sim/compact", &[], None).status, 200);
    let out = sim.kubectl_ok(&["get", "--raw", "/api/v1/pods?watch=1&resourceVersion=2"]);
    let event = json_of(out.trim());
    assert_eq!(event["type"], "ERROR");
    assert_eq!((event["object"]["code"].as_u64(), event["object"]["reason"].as_str()), (Some(410), Some("Expired")));
    assert!(event["object"]["message"].as_str().expect("a message").starts_with("too old resource version: 2 ("));
    let exact = sim.kubectl(&["get", "--raw", "/api/v1/pods?resourceVersion=2&resourceVersionMatch=Exact"]);
    assert!(!exact.status.success());
    assert!(String::from_utf8_lossy(&exact.stderr).contains("The resourceVersion for the provided list is too old"));
}

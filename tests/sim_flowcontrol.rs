//! The simulator's API Priority and Fairness against the real apiserver's:
//! the bootstrap objects as captured (`tests/reference/flowcontrol/`), and
//! the `X-Kubernetes-PF-*` headers of the schema and level each identity
//! matches, following a schema applied at run time.

mod common;

use common::Process;
use serde_json::{Value, json};

const GROUP: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";

const POLICY: &str = r#"{"anonymous": true,
  "users": [
    {"name": "root", "groups": ["system:masters"], "tokens": ["root-token"]},
    {"name": "system:serviceaccount:apps:reader", "groups": ["system:serviceaccounts", "system:serviceaccounts:apps"], "tokens": ["sa-token"]}
  ],
  "rules": [{"subjects": ["user:system:serviceaccount:apps:reader"], "verbs": ["get", "list"], "groups": [""], "resources": ["pods"]}]}"#;

fn sim() -> (Process, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, POLICY).unwrap();
    (Process::sim(&["--pods", "4", "--policy", policy.to_str().unwrap()]), dir)
}

fn auth(token: &str) -> String {
    format!("Bearer {token}")
}

/// Each item of a list as the reference keeps it: name, annotations, spec, status without times.
fn reduced(list: &Value) -> Vec<Value> {
    let mut items = list["items"].as_array().cloned().unwrap_or_default();
    for item in &mut items {
        let mut status = item["status"].clone();
        for c in status.get_mut("conditions").and_then(Value::as_array_mut).into_iter().flatten() {
            c["lastTransitionTime"] = json!("<time>");
        }
        let meta = &item["metadata"];
        *item = json!({"metadata": {"name": meta["name"], "annotations": meta["annotations"]}, "spec": item["spec"], "status": status});
    }
    items
}

#[test]
fn the_bootstrap_objects_are_the_apiservers_field_for_field() {
    let (sim, _dir) = sim();
    let root = auth("root-token");
    for resource in ["flowschemas", "prioritylevelconfigurations"] {
        let served = sim.request("GET", &format!("{GROUP}/{resource}"), &[("authorization", &root)], None);
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/flowcontrol");
        let captured: Vec<Value> = serde_json::from_slice(&std::fs::read(dir.join(format!("{resource}.json"))).unwrap()).unwrap();
        let served = reduced(&served.json());
        // Compared as written: the same fields in the same order.
        let text = |items: &[Value]| items.iter().map(|i| i.to_string()).collect::<Vec<_>>();
        assert_eq!(text(&served), text(&captured), "{resource}");
    }
}

#[test]
fn headers_name_the_schema_and_level_each_identity_matches() {
    let (sim, _dir) = sim();
    let root = auth("root-token");
    let uid = |resource: &str, name: &str| -> String {
        let o = sim.request("GET", &format!("{GROUP}/{resource}/{name}"), &[("authorization", &root)], None).json();
        o["metadata"]["uid"].as_str().expect("a uid").to_string()
    };
    let named = |r: &common::Resp| {
        (r.header("x-kubernetes-pf-flowschema-uid").map(str::to_string), r.header("x-kubernetes-pf-prioritylevel-uid").map(str::to_string))
    };
    let expect = |fs: &str, pl: &str| (Some(uid("flowschemas", fs)), Some(uid("prioritylevelconfigurations", pl)));
    let pods = "/api/v1/namespaces/ns-0001/pods";
    let admin = sim.request("GET", pods, &[("authorization", &root)], None);
    assert_eq!(named(&admin), expect("exempt", "exempt"));
    let sa = sim.request("GET", pods, &[("authorization", &auth("sa-token"))], None);
    assert_eq!(sa.status, 200);
    assert_eq!(named(&sa), expect("service-accounts", "workload-low"));
    let anonymous = sim.get(pods);
    assert_eq!(anonymous.status, 403, "anonymous may not list pods");
    assert_eq!(named(&anonymous), expect("global-default", "global-default"));
    assert_eq!(named(&sim.get("/healthz")), expect("probes", "exempt"));
    let unauthenticated = sim.request("GET", pods, &[("authorization", &auth("wrong"))], None);
    assert_eq!((unauthenticated.status, named(&unauthenticated)), (401, (None, None)), "no headers before authentication");

    // A schema applied now takes the ServiceAccount's next request.
    let level = json!({"metadata": {"name": "readers"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
        "limitResponse": {"type": "Reject"}, "lendablePercent": 0}}});
    let schema = json!({"metadata": {"name": "readers"}, "spec": {"priorityLevelConfiguration": {"name": "readers"},
        "matchingPrecedence": 500, "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": "apps", "name": "*"}}],
        "resourceRules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["*"]}]}]}});
    for (resource, body) in [("prioritylevelconfigurations", level), ("flowschemas", schema)] {
        let created = sim.request(
            "POST",
            &format!("{GROUP}/{resource}"),
            &[("authorization", &root), ("content-type", "application/json")],
            Some(body.to_string().as_bytes()),
        );
        assert_eq!(created.status, 201, "{}", created.text());
    }
    let sa = sim.request("GET", pods, &[("authorization", &auth("sa-token"))], None);
    assert_eq!(named(&sa), expect("readers", "readers"));
    let get = sim.request("GET", &format!("{pods}/x"), &[("authorization", &auth("sa-token"))], None);
    assert_eq!(named(&get), expect("service-accounts", "workload-low"), "the schema's rule is for lists only");
}

//! API Priority and Fairness as the apiserver configures and names it: the
//! FlowSchemas and PriorityLevelConfigurations (`flowcontrol.apiserver.k8s.io/v1`)
//! a kube-apiserver creates at start (ported from
//! `k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go`), and the
//! response headers that name what a request was classified as.
//!
//! Invariants: the objects are the apiserver's, field for field and in its
//! order — the mandatory ones (`exempt`, `catch-all`), which its
//! configuration controller imagines whenever they are missing, and the
//! suggested ones its ensurer creates — each with the
//! `apf.kubernetes.io/autoupdate-spec: "true"` annotation and no server-set
//! metadata (no uid, revision or timestamp: the server that stores them sets those).

use serde_json::{Value, json};

/// The header naming the UID of the FlowSchema a request matched.
pub const FLOW_SCHEMA_UID: &str = "x-kubernetes-pf-flowschema-uid";
/// The header naming the UID of the PriorityLevelConfiguration it was given.
pub const PRIORITY_LEVEL_UID: &str = "x-kubernetes-pf-prioritylevel-uid";

/// The annotation the apiserver's ensurer keeps its objects up to date by.
pub const AUTO_UPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

/// The mandatory FlowSchemas, in `default.go`'s order: `exempt`, `catch-all`.
pub fn mandatory_flow_schemas() -> Vec<Value> {
    let everything = rule(&groups(&["system:unauthenticated", "system:authenticated"]));
    vec![
        flow_schema("exempt", "exempt", 1, None, rule(&groups(&["system:masters"]))),
        flow_schema("catch-all", "catch-all", 10000, Some("ByUser"), everything),
    ]
}

/// The mandatory PriorityLevelConfigurations, in `default.go`'s order: `catch-all`, `exempt`.
pub fn mandatory_priority_levels() -> Vec<Value> {
    vec![
        priority_level(
            "catch-all",
            json!({"type": "Limited", "limited": {
            "nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}, "lendablePercent": 0}}),
        ),
        priority_level("exempt", json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})),
    ]
}

/// The suggested PriorityLevelConfigurations, in `default.go`'s order.
pub fn suggested_priority_levels() -> Vec<Value> {
    let queuing = |name: &str, shares: u32, lendable: u32, (queues, hand): (u32, u32)| {
        priority_level(
            name,
            json!({"type": "Limited", "limited": {
            "nominalConcurrencyShares": shares,
            "limitResponse": {"type": "Queue", "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": 50}},
            "lendablePercent": lendable}}),
        )
    };
    vec![
        queuing("system", 30, 33, (64, 6)),
        queuing("node-high", 40, 25, (64, 6)),
        queuing("leader-election", 10, 0, (16, 4)),
        queuing("workload-high", 40, 50, (128, 6)),
        queuing("workload-low", 100, 90, (128, 6)),
        queuing("global-default", 20, 50, (128, 6)),
    ]
}

/// The suggested FlowSchemas, in `default.go`'s order.
pub fn suggested_flow_schemas() -> Vec<Value> {
    let every_request = |subjects: Vec<Value>| rule(&subjects);
    let kube_system_service_accounts =
        || vec![json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}})];
    let mut leader_election = users(&["system:kube-controller-manager", "system:kube-scheduler"]);
    leader_election.extend(kube_system_service_accounts());
    vec![
        flow_schema("system-nodes", "system", 500, Some("ByUser"), every_request(groups(&["system:nodes"]))),
        flow_schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            json!({"subjects": groups(&["system:nodes"]), "resourceRules": [
                resource_rule(&["*"], &[""], &["nodes", "nodes/status"], true),
                resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], false),
            ]}),
        ),
        flow_schema(
            "probes",
            "exempt",
            2,
            None,
            json!({"subjects": groups(&["system:unauthenticated", "system:authenticated"]),
                   "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]}),
        ),
        flow_schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            json!({"subjects": leader_election, "resourceRules": [
                resource_rule(&["get", "create", "update"], &["coordination.k8s.io"], &["leases"], false),
            ]}),
        ),
        flow_schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            every_request(users(&["system:kube-controller-manager"])),
        ),
        flow_schema("kube-scheduler", "workload-high", 800, Some("ByNamespace"), every_request(users(&["system:kube-scheduler"]))),
        flow_schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            every_request(kube_system_service_accounts()),
        ),
        flow_schema("service-accounts", "workload-low", 9000, Some("ByUser"), every_request(groups(&["system:serviceaccounts"]))),
        flow_schema(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            every_request(groups(&["system:unauthenticated", "system:authenticated"])),
        ),
    ]
}

fn metadata(name: &str) -> Value {
    json!({"name": name, "annotations": {AUTO_UPDATE: "true"}})
}

fn priority_level(name: &str, spec: Value) -> Value {
    json!({"metadata": metadata(name), "spec": spec})
}

fn flow_schema(name: &str, level: &str, precedence: u32, distinguisher: Option<&str>, rule: Value) -> Value {
    let mut spec = json!({"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence});
    if let Some(method) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": method});
    }
    spec["rules"] = json!([rule]);
    json!({"metadata": metadata(name), "spec": spec})
}

/// Every verb on every resource and path, for `subjects`.
fn rule(subjects: &[Value]) -> Value {
    json!({"subjects": subjects, "resourceRules": [resource_rule(&["*"], &["*"], &["*"], true)],
           "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]})
}

fn resource_rule(verbs: &[&str], groups: &[&str], resources: &[&str], cluster_scope: bool) -> Value {
    let mut r = json!({"verbs": verbs, "apiGroups": groups, "resources": resources});
    if cluster_scope {
        r["clusterScope"] = json!(true);
    }
    r["namespaces"] = json!(["*"]);
    r
}

fn groups(names: &[&str]) -> Vec<Value> {
    names.iter().map(|n| json!({"kind": "Group", "group": {"name": n}})).collect()
}

fn users(names: &[&str]) -> Vec<Value> {
    names.iter().map(|n| json!({"kind": "User", "user": {"name": n}})).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flow_schema_names_a_bootstrap_priority_level() {
        let levels: Vec<Value> = mandatory_priority_levels().into_iter().chain(suggested_priority_levels()).collect();
        let names: Vec<&str> = levels.iter().filter_map(|l| l["metadata"]["name"].as_str()).collect();
        assert_eq!(names.len(), 8);
        for fs in mandatory_flow_schemas().into_iter().chain(suggested_flow_schemas()) {
            let level = fs["spec"]["priorityLevelConfiguration"]["name"].as_str().unwrap_or_default().to_string();
            assert!(names.contains(&level.as_str()), "{} names {level}", fs["metadata"]["name"]);
        }
    }
}

//! API Priority and Fairness as the simulator shows it on the wire: the
//! apiserver's bootstrap FlowSchemas and PriorityLevelConfigurations,
//! created at start as its ensurer creates them (each with a UID, the
//! schemas with the `Dangling` condition its controller writes), and on
//! every answer past authentication the `X-Kubernetes-PF-FlowSchema-UID`
//! and `X-Kubernetes-PF-PriorityLevel-UID` of the schema a request matches
//! — the first, by `matchingPrecedence` then name, of those naming an
//! existing level — under the objects as they are now (`kubectl apply`
//! of a schema takes effect at once).
//!
//! It limits nothing (no seats, no queues, no 429): the simulator's
//! capacity is the test's. Its matching is its own, written from the
//! apiserver's `rule.go` apart from kache's, so each checks the other.

use std::sync::Arc;

use apimachinery::auth::{Attributes, UserInfo};
use apimachinery::flowcontrol as boot;
use http::{HeaderValue, Response};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::db::Db;

const GROUP: &str = "flowcontrol.apiserver.k8s.io";

/// Creates the mandatory and suggested objects, as a new apiserver does.
pub fn bootstrap(db: &mut Db, now: &str) {
    let (levels, schemas) = (db.registry().builtin(GROUP, "prioritylevelconfigurations"), db.registry().builtin(GROUP, "flowschemas"));
    for mut pl in boot::mandatory_priority_levels().into_iter().chain(boot::suggested_priority_levels()) {
        pl["status"] = json!({});
        db.create(levels, "", pl, now).expect("a fresh store has no priority levels");
    }
    for mut fs in boot::mandatory_flow_schemas().into_iter().chain(boot::suggested_flow_schemas()) {
        let level = fs["spec"]["priorityLevelConfiguration"]["name"].as_str().unwrap_or_default().to_string();
        fs["status"] = json!({"conditions": [{"type": "Dangling", "status": "False", "lastTransitionTime": now, "reason": "Found",
            "message": format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists")}]});
        db.create(schemas, "", fs, now).expect("a fresh store has no flow schemas");
    }
}

/// The schemas in matching order, each with its level's UID; made again
/// when an object of either resource changes.
#[derive(Debug, Default)]
pub struct Classifier {
    /// The schemas, and the objects they were read from.
    at: Mutex<Option<(Stamp, Arc<Vec<Schema>>)>>,
}

/// The count and newest revision of the schemas and the levels.
type Stamp = ((usize, u64), (usize, u64));

#[derive(Debug)]
struct Schema {
    precedence: i64,
    name: String,
    uid: String,
    level_uid: String,
    rules: Vec<Value>,
}

impl Classifier {
    /// The UIDs of the schema and level `a` of `user` is classified as.
    pub fn classify(&self, db: &Db, user: &UserInfo, a: &Attributes) -> Option<(String, String)> {
        let schemas = self.schemas(db);
        let s = schemas.iter().find(|s| s.rules.iter().any(|r| rule_matches(user, a, r)))?;
        Some((s.uid.clone(), s.level_uid.clone()))
    }

    fn schemas(&self, db: &Db) -> Arc<Vec<Schema>> {
        let reg = db.registry();
        let (fs, pl) = (reg.builtin(GROUP, "flowschemas"), reg.builtin(GROUP, "prioritylevelconfigurations"));
        let objects = |res| db.range(res, "", "", db.rev()).map(|(_, o)| o.clone()).collect::<Vec<_>>();
        let (fss, pls) = (objects(fs), objects(pl));
        let stamp = |os: &[Arc<crate::object::Obj>]| (os.len(), os.iter().map(|o| o.rv).max().unwrap_or(0));
        let (fs_at, pl_at) = (stamp(&fss), stamp(&pls));
        let mut at = self.at.lock();
        if let Some((stamp, schemas)) = at.as_ref()
            && *stamp == (fs_at, pl_at)
        {
            return schemas.clone();
        }
        let uid_of_level = |name: &str| pls.iter().find(|o| o.name == name).map(|o| o.uid.clone());
        let mut schemas: Vec<Schema> = fss
            .iter()
            .filter_map(|o| {
                let v: Value = serde_json::from_slice(&o.item).ok()?;
                let level_uid = uid_of_level(v["spec"]["priorityLevelConfiguration"]["name"].as_str()?)?;
                let precedence = v["spec"]["matchingPrecedence"].as_i64().filter(|p| *p != 0).unwrap_or(1000);
                let rules = v["spec"]["rules"].as_array().cloned().unwrap_or_default();
                Some(Schema { precedence, name: o.name.clone(), uid: o.uid.clone(), level_uid, rules })
            })
            .collect();
        schemas.sort_by(|a, b| (a.precedence, &a.name).cmp(&(b.precedence, &b.name)));
        let schemas = Arc::new(schemas);
        *at = Some(((fs_at, pl_at), schemas.clone()));
        schemas
    }
}

/// Adds the two headers to `resp`.
pub fn name<B>(mut resp: Response<B>, uids: Option<(String, String)>) -> Response<B> {
    if let Some((fs, pl)) = uids {
        // In Go's order: its HTTP servers write header names sorted.
        for (header, uid) in [(boot::FLOW_SCHEMA_UID, fs), (boot::PRIORITY_LEVEL_UID, pl)] {
            if let Ok(v) = HeaderValue::from_str(&uid) {
                resp.headers_mut().insert(header, v);
            }
        }
    }
    resp
}

/// Whether `list` is `["*"]` or holds `x`.
fn holds(list: &Value, x: &str) -> bool {
    let items = list.as_array().map(Vec::as_slice).unwrap_or_default();
    items.iter().any(|i| i == x) || (items.len() == 1 && items[0] == "*")
}

fn rule_matches(user: &UserInfo, a: &Attributes, rule: &Value) -> bool {
    let subjects = rule["subjects"].as_array().map(Vec::as_slice).unwrap_or_default();
    if !subjects.iter().any(|s| names(user, s)) {
        return false;
    }
    let list = |k: &str| rule[k].as_array().map(Vec::as_slice).unwrap_or_default().to_vec();
    if a.resource_request {
        let resource = if a.subresource.is_empty() { a.resource.clone() } else { format!("{}/{}", a.resource, a.subresource) };
        return list("resourceRules").iter().any(|r| {
            holds(&r["verbs"], &a.verb)
                && holds(&r["apiGroups"], &a.group)
                && holds(&r["resources"], &resource)
                && match a.namespace.as_str() {
                    "" => r["clusterScope"] == true,
                    ns => holds(&r["namespaces"], ns),
                }
        });
    }
    list("nonResourceRules").iter().any(|r| {
        holds(&r["verbs"], &a.verb)
            && r["nonResourceURLs"].as_array().is_some_and(|urls| {
                urls.iter().filter_map(Value::as_str).any(|u| {
                    let dir = u.trim_end_matches('*');
                    let dir = if dir.ends_with('/') { dir.to_string() } else { format!("{dir}/") };
                    u == "*" || u == a.path || a.path.starts_with(&dir)
                })
            })
    })
}

/// Whether subject `s` names `user`.
fn names(user: &UserInfo, s: &Value) -> bool {
    let name = |k: &str| s[k]["name"].as_str();
    match s["kind"].as_str() {
        Some("User") => name("user").is_some_and(|n| n == "*" || n == user.name),
        Some("Group") => name("group").is_some_and(|n| n == "*" || user.groups.iter().any(|g| g == n)),
        Some("ServiceAccount") => {
            let (Some(ns), Some(sa)) = (s["serviceAccount"]["namespace"].as_str(), name("serviceAccount")) else { return false };
            match user.name.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':')) {
                Some((user_ns, user_sa)) => user_ns == ns && (sa == "*" || sa == user_sa),
                None => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..UserInfo::default() }
    }

    #[test]
    fn rules_match_subjects_resources_and_paths() {
        let rule = json!({"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}}],
            "resourceRules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["*"]}],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz/*"]}]});
        let sa = user("system:serviceaccount:kube-system:x", &[]);
        assert!(rule_matches(&sa, &Attributes::of("GET", "/api/v1/namespaces/a/pods", ""), &rule));
        assert!(!rule_matches(&sa, &Attributes::of("GET", "/api/v1/pods", ""), &rule), "not cluster-scoped");
        assert!(!rule_matches(&user("system:serviceaccount:kube:x", &[]), &Attributes::of("GET", "/api/v1/namespaces/a/pods", ""), &rule));
        assert!(rule_matches(&sa, &Attributes::of("GET", "/healthz/etcd", ""), &rule));
        assert!(!rule_matches(&sa, &Attributes::of("GET", "/healthz", ""), &rule));
    }
}

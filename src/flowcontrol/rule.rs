//! Whether a request matches a FlowSchema, ported line for line from
//! `k8s.io/apiserver/pkg/util/flowcontrol/rule.go`: a schema matches when
//! one of its rules does; a rule when one of its subjects names the user
//! and, for a resource request, one of its resource rules holds (verb,
//! `resource[/subresource]`, API group, then the namespace — or, for a
//! cluster-scoped request, `clusterScope`), for any other request one of
//! its non-resource rules (verb, and the path exactly, `*`, or a prefix
//! ending in `/*`).
//!
//! Invariant: `*` is a wildcard only as a list's one member, as validation
//! keeps it (`containsString`); elsewhere it is a literal.

use apimachinery::auth::{Attributes, UserInfo};

use super::objects::{FlowSchema, NonResourcePolicyRule, PolicyRulesWithSubjects, ResourcePolicyRule, Subject};

/// `matchesFlowSchema`.
pub(crate) fn matches_flow_schema(user: &UserInfo, request: &Attributes, fs: &FlowSchema) -> bool {
    fs.spec.rules.iter().any(|rule| matches_policy_rule(user, request, rule))
}

fn matches_policy_rule(user: &UserInfo, request: &Attributes, rule: &PolicyRulesWithSubjects) -> bool {
    if !rule.subjects.iter().any(|s| matches_subject(user, s)) {
        return false;
    }
    if request.resource_request {
        return rule.resource_rules.iter().any(|r| matches_resource_rule(request, r));
    }
    rule.non_resource_rules.iter().any(|r| matches_non_resource_rule(request, r))
}

fn matches_subject(user: &UserInfo, subject: &Subject) -> bool {
    match subject.kind.as_str() {
        "User" => subject.user.as_ref().is_some_and(|u| u.name == "*" || u.name == user.name),
        "Group" => subject.group.as_ref().is_some_and(|g| g.name == "*" || user.groups.contains(&g.name)),
        "ServiceAccount" => subject.service_account.as_ref().is_some_and(|sa| {
            let Some(rest) = user.name.strip_prefix("system:serviceaccount:").and_then(|r| r.strip_prefix(sa.namespace.as_str())) else {
                return false;
            };
            match sa.name.as_str() {
                // `serviceAccountMatchesNamespace`: the namespace, then the separator.
                "*" => rest.starts_with(':'),
                name => rest.strip_prefix(':') == Some(name),
            }
        }),
        _ => false,
    }
}

fn matches_resource_rule(request: &Attributes, rule: &ResourcePolicyRule) -> bool {
    let resource = match request.subresource.as_str() {
        "" => request.resource.clone(),
        sub => format!("{}/{sub}", request.resource),
    };
    if !contains(&request.verb, &rule.verbs, "*")
        || !contains(&resource, &rule.resources, "*")
        || !contains(&request.group, &rule.api_groups, "*")
    {
        return false;
    }
    if request.namespace.is_empty() {
        return rule.cluster_scope;
    }
    contains(&request.namespace, &rule.namespaces, "*")
}

fn matches_non_resource_rule(request: &Attributes, rule: &NonResourcePolicyRule) -> bool {
    contains(&request.verb, &rule.verbs, "*") && rule.non_resource_urls.iter().any(|url| matches_path(url, &request.path))
}

/// `matchPolicyRuleNonResourceURL` for one URL of a rule.
fn matches_path(rule_path: &str, path: &str) -> bool {
    if rule_path == "*" || rule_path == path {
        return true;
    }
    let prefix = rule_path.strip_suffix('*').unwrap_or(rule_path);
    match prefix.ends_with('/') {
        true => path.starts_with(prefix),
        false => path.starts_with(&format!("{prefix}/")),
    }
}

/// `containsString`: `x` is in `list`, or `list` is the wildcard alone.
fn contains(x: &str, list: &[String], wildcard: &str) -> bool {
    (list.len() == 1 && list[0] == wildcard) || list.iter().any(|y| y == x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fs(rules: serde_json::Value) -> FlowSchema {
        let v = json!({"metadata": {"name": "t"}, "spec": {"priorityLevelConfiguration": {"name": "p"}, "rules": rules}});
        FlowSchema::read(v.to_string().as_bytes()).unwrap()
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..UserInfo::default() }
    }

    fn resource(verb: &str, group: &str, resource: &str, namespace: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            group: group.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            ..Attributes::default()
        }
    }

    fn subject(kind: &str, name: &str) -> serde_json::Value {
        match kind {
            "User" => json!({"kind": "User", "user": {"name": name}}),
            _ => json!({"kind": "Group", "group": {"name": name}}),
        }
    }

    fn resource_rule(subject: serde_json::Value, verb: &str, group: &str, res: &str, ns: Option<&str>) -> serde_json::Value {
        let mut r = json!({"verbs": [verb], "apiGroups": [group], "resources": [res]});
        match ns {
            Some(ns) => r["namespaces"] = json!([ns]),
            None => r["clusterScope"] = json!(true),
        }
        json!([{"subjects": [subject], "resourceRules": [r]}])
    }

    // `TestLiterals` of match_test.go: each rule differs from a matching one in one literal.
    #[test]
    fn literals_match_as_in_the_apiservers_test() {
        let u = user("goodu", &["goodg1", "goodg2"]);
        let namespaced = resource("goodverb", "goodapig", "goodrscs", "goodns");
        let (gu, gg) = (subject("User", "goodu"), subject("Group", "goodg1"));
        let matching = [
            resource_rule(gu.clone(), "goodverb", "goodapig", "goodrscs", Some("goodns")),
            resource_rule(gg, "goodverb", "goodapig", "goodrscs", Some("goodns")),
            resource_rule(subject("User", "*"), "goodverb", "goodapig", "goodrscs", Some("goodns")),
            resource_rule(subject("Group", "*"), "goodverb", "goodapig", "goodrscs", Some("goodns")),
            resource_rule(gu.clone(), "*", "goodapig", "goodrscs", Some("goodns")),
            resource_rule(gu.clone(), "goodverb", "*", "goodrscs", Some("goodns")),
            resource_rule(gu.clone(), "goodverb", "goodapig", "*", Some("goodns")),
            resource_rule(gu.clone(), "goodverb", "goodapig", "goodrscs", Some("*")),
        ];
        for rules in matching {
            assert!(matches_flow_schema(&u, &namespaced, &fs(rules.clone())), "{rules}");
        }
        let skipping = [
            resource_rule(subject("User", "badu"), "goodverb", "goodapig", "goodrscs", Some("goodns")),
            resource_rule(subject("Group", "badg"), "goodverb", "goodapig", "goodrscs", Some("goodns")),
            resource_rule(gu.clone(), "badverb", "goodapig", "goodrscs", Some("goodns")),
            resource_rule(gu.clone(), "goodverb", "badapig", "goodrscs", Some("goodns")),
            resource_rule(gu.clone(), "goodverb", "goodapig", "badrscs", Some("goodns")),
            resource_rule(gu.clone(), "goodverb", "goodapig", "goodrscs", Some("badns")),
            // A namespaced rule without clusterScope does not take a cluster-scoped request, nor the reverse.
            resource_rule(gu.clone(), "goodverb", "goodapig", "goodrscs", None),
        ];
        for rules in skipping {
            assert!(!matches_flow_schema(&u, &namespaced, &fs(rules.clone())), "{rules}");
        }
        let cluster = resource("goodverb", "goodapig", "goodrscs", "");
        assert!(matches_flow_schema(&u, &cluster, &fs(resource_rule(gu.clone(), "goodverb", "goodapig", "goodrscs", None))));
        assert!(!matches_flow_schema(&u, &cluster, &fs(resource_rule(gu.clone(), "goodverb", "goodapig", "goodrscs", Some("*")))));
        let mut status = namespaced.clone();
        status.subresource = "status".into();
        assert!(matches_flow_schema(&u, &status, &fs(resource_rule(gu.clone(), "goodverb", "goodapig", "goodrscs/status", Some("*")))));
        assert!(!matches_flow_schema(&u, &status, &fs(resource_rule(gu, "goodverb", "goodapig", "goodrscs", Some("*")))));
    }

    #[test]
    fn service_accounts_match_by_namespace_and_name_or_any_name() {
        let sa = |ns: &str, name: &str| {
            json!([{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": ns, "name": name}}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}])
        };
        let get = Attributes { verb: "get".into(), path: "/version".into(), ..Attributes::default() };
        let reader = user("system:serviceaccount:kube-system:reader", &[]);
        assert!(matches_flow_schema(&reader, &get, &fs(sa("kube-system", "reader"))));
        assert!(matches_flow_schema(&reader, &get, &fs(sa("kube-system", "*"))));
        assert!(!matches_flow_schema(&reader, &get, &fs(sa("kube-system", "writer"))));
        assert!(!matches_flow_schema(&reader, &get, &fs(sa("kube", "*"))), "a namespace prefix is not the namespace");
        assert!(!matches_flow_schema(&user("kube-system:reader", &[]), &get, &fs(sa("kube-system", "*"))));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_a_trailing_star() {
        let rule =
            |url: &str| json!([{"subjects": [subject("Group", "*")], "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": [url]}]}]);
        let get = |path: &str| Attributes { verb: "get".into(), path: path.into(), ..Attributes::default() };
        let u = user("u", &[]);
        assert!(matches_flow_schema(&u, &get("/healthz"), &fs(rule("/healthz"))));
        assert!(matches_flow_schema(&u, &get("/healthz/etcd"), &fs(rule("/healthz/*"))));
        assert!(matches_flow_schema(&u, &get("/healthz/etcd"), &fs(rule("/healthz"))), "a rule path also covers what is under it");
        assert!(!matches_flow_schema(&u, &get("/healthzz"), &fs(rule("/healthz"))));
        assert!(!matches_flow_schema(&u, &get("/healthz"), &fs(rule("/healthz/*"))));
        assert!(matches_flow_schema(&u, &get("/anything"), &fs(rule("*"))));
        let post = Attributes { verb: "post".into(), path: "/healthz".into(), ..Attributes::default() };
        assert!(!matches_flow_schema(&u, &post, &fs(rule("/healthz"))));
        // A resource request is never matched by non-resource rules.
        assert!(!matches_flow_schema(&u, &resource("get", "", "pods", "default"), &fs(rule("*"))));
    }
}

//! The apiserver's `checker_test.go` and `validation_test.go` cases as tables.

use apimachinery::auth::{Attributes, UserInfo};

use super::read::parse;
use super::{GroupResources, Policy, Rule};
use crate::audit::event::{Level, Stage, Stages};

fn tim() -> UserInfo {
    UserInfo { name: "tim@k8s.io".into(), groups: vec!["humans".into(), "developers".into()], ..UserInfo::default() }
}

/// The requests of `checker_test.go`: (name, attributes, has a user).
fn request(name: &str) -> (Attributes, bool) {
    let resource = |verb: &str, group: &str, resource: &str, sub: &str, namespace: &str, name: &str| Attributes {
        verb: verb.into(),
        resource_request: true,
        group: group.into(),
        resource: resource.into(),
        subresource: sub.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Attributes::default()
    };
    match name {
        "namespaced" => (resource("get", "", "pods", "", "default", "busybox"), true),
        "cluster" => (resource("get", "rbac.authorization.k8s.io", "clusterroles", "", "", "edit"), true),
        "nonResource" => (Attributes { verb: "get".into(), path: "/logs/kubelet.log".into(), ..Attributes::default() }, true),
        "subresource" => (resource("get", "", "pods", "log", "default", "busybox"), true),
        "Unauthorized" => (resource("get", "", "pods", "", "default", "busybox"), false),
        "ClusterRoleUpdate" => (resource("update", "rbac.authorization.k8s.io", "clusterroles", "status", "", "somerole"), true),
        other => panic!("no request {other}"),
    }
}

fn list(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn resources(group: &str, resources: &[&str], names: &[&str]) -> Vec<GroupResources> {
    vec![GroupResources { group: group.into(), resources: list(resources), resource_names: list(names) }]
}

/// The rules of `checker_test.go`.
fn rule(name: &str) -> Rule {
    let at = Rule::at;
    match name {
        "default" => at(Level::Metadata),
        "create" => Rule { verbs: list(&["create"]), ..at(Level::Request) },
        "tims" => Rule { users: list(&["tim@k8s.io"]), ..at(Level::Metadata) },
        "humans" => Rule { user_groups: list(&["humans"]), ..at(Level::Metadata) },
        "serviceAccounts" => Rule { user_groups: list(&["system:serviceaccounts"]), ..at(Level::Request) },
        "getPods" => Rule { verbs: list(&["get"]), resources: resources("", &["pods"], &[]), ..at(Level::RequestResponse) },
        "getPodLogs" => Rule { verbs: list(&["get"]), resources: resources("", &["pods/log"], &[]), ..at(Level::Request) },
        "getPodWildcardMatching" => Rule { verbs: list(&["get"]), resources: resources("", &["*"], &[]), ..at(Level::Request) },
        "getPodResourceWildcardMatching" => Rule { verbs: list(&["get"]), resources: resources("", &["*/log"], &[]), ..at(Level::Request) },
        "getPodSubResourceWildcardMatching" => {
            Rule { verbs: list(&["get"]), resources: resources("", &["pods/*"], &[]), ..at(Level::Request) }
        }
        "getClusterRoles" => Rule {
            verbs: list(&["get"]),
            resources: resources("rbac.authorization.k8s.io", &["clusterroles"], &[]),
            namespaces: list(&[""]),
            ..at(Level::RequestResponse)
        },
        "getGroupWildCardMatchingWithSubresourceWildcardMatching" => {
            Rule { verbs: list(&["update"]), resources: resources("*", &["*/status"], &[]), ..at(Level::RequestResponse) }
        }
        "getLogs" => Rule { verbs: list(&["get"]), non_resource_urls: list(&["/logs*"]), ..at(Level::RequestResponse) },
        "getMetrics" => Rule { verbs: list(&["get"]), non_resource_urls: list(&["/metrics"]), ..at(Level::Request) },
        "clusterRoleEdit" => Rule { resources: resources("rbac.authorization.k8s.io", &["clusterroles"], &["edit"]), ..at(Level::Request) },
        "omit RequestReceived" => Rule { omit_stages: Stages::default().with(Stage::RequestReceived), ..at(Level::Request) },
        "only audit panic" => Rule {
            omit_stages: [Stage::RequestReceived, Stage::ResponseStarted, Stage::ResponseComplete].into_iter().collect(),
            ..at(Level::Request)
        },
        other => panic!("no rule {other}"),
    }
}

/// `NewPolicyRuleEvaluator` over the named rules, the policy omitting `stages`.
fn evaluate(req: &str, stages: Stages, rules: &[&str]) -> (Level, Stages) {
    let rules = rules.iter().map(|r| rule(r)).map(|r| Rule { omit_stages: r.omit_stages.union(stages), ..r }).collect();
    let policy = Policy { rules, omit_stages: stages, omit_managed_fields: false };
    let (attrs, has_user) = request(req);
    let user = tim();
    let config = policy.evaluate(&attrs, has_user.then_some(&user));
    (config.level, config.omit_stages)
}

/// `testAuditLevel`: (request, expected level, rules).
const LEVELS: &[(&str, Level, &[&str])] = &[
    ("namespaced", Level::Metadata, &["default"]),
    ("namespaced", Level::None, &["create"]),
    ("namespaced", Level::Metadata, &["tims"]),
    ("namespaced", Level::Metadata, &["humans"]),
    ("namespaced", Level::None, &["serviceAccounts"]),
    ("namespaced", Level::RequestResponse, &["getPods"]),
    ("namespaced", Level::None, &["getClusterRoles"]),
    ("namespaced", Level::None, &["getLogs"]),
    ("namespaced", Level::None, &["getMetrics"]),
    ("namespaced", Level::Metadata, &["getMetrics", "serviceAccounts", "default"]),
    ("namespaced", Level::RequestResponse, &["getMetrics", "getPods", "default"]),
    ("namespaced", Level::RequestResponse, &["getPodLogs", "getPods"]),
    ("cluster", Level::Metadata, &["default"]),
    ("cluster", Level::None, &["create"]),
    ("cluster", Level::Metadata, &["tims"]),
    ("cluster", Level::Metadata, &["humans"]),
    ("cluster", Level::None, &["serviceAccounts"]),
    ("cluster", Level::None, &["getPods"]),
    ("cluster", Level::RequestResponse, &["getClusterRoles"]),
    ("cluster", Level::Request, &["clusterRoleEdit", "getClusterRoles"]),
    ("cluster", Level::None, &["getLogs"]),
    ("cluster", Level::None, &["getMetrics"]),
    ("cluster", Level::Metadata, &["getMetrics", "serviceAccounts", "default"]),
    ("cluster", Level::RequestResponse, &["getMetrics", "getClusterRoles", "default"]),
    ("cluster", Level::None, &["getPodLogs", "getPods"]),
    ("nonResource", Level::Metadata, &["default"]),
    ("nonResource", Level::None, &["create"]),
    ("nonResource", Level::Metadata, &["tims"]),
    ("nonResource", Level::Metadata, &["humans"]),
    ("nonResource", Level::None, &["serviceAccounts"]),
    ("nonResource", Level::None, &["getPods"]),
    ("nonResource", Level::None, &["getClusterRoles"]),
    ("nonResource", Level::RequestResponse, &["getLogs"]),
    ("nonResource", Level::None, &["getMetrics"]),
    ("nonResource", Level::Metadata, &["getMetrics", "serviceAccounts", "default"]),
    ("nonResource", Level::RequestResponse, &["getLogs", "getClusterRoles", "default"]),
    ("nonResource", Level::None, &["getPodLogs", "getPods"]),
    ("subresource", Level::Request, &["getPodLogs", "getPods"]),
    ("subresource", Level::Request, &["getPodWildcardMatching"]),
    ("subresource", Level::Request, &["getPodResourceWildcardMatching"]),
    ("subresource", Level::Request, &["getPodSubResourceWildcardMatching"]),
    ("Unauthorized", Level::None, &["tims"]),
    ("Unauthorized", Level::Metadata, &["tims", "default"]),
    ("Unauthorized", Level::None, &["humans"]),
    ("Unauthorized", Level::Metadata, &["humans", "default"]),
    ("ClusterRoleUpdate", Level::RequestResponse, &["getGroupWildCardMatchingWithSubresourceWildcardMatching"]),
];

#[test]
fn the_first_matching_rule_decides_the_level_with_and_without_policy_wide_stages() {
    let policy_stages: Stages = [Stage::RequestReceived, Stage::ResponseStarted].into_iter().collect();
    for stages in [Stages::default(), policy_stages] {
        for (req, level, rules) in LEVELS {
            assert_eq!(evaluate(req, stages, rules), (*level, stages), "{req} with {rules:?}, policy omitting {stages:?}");
        }
    }
}

#[test]
fn a_rules_omitted_stages_join_the_policys() {
    let rr: Stages = [Stage::RequestReceived].into_iter().collect();
    let all_but_panic: Stages = [Stage::RequestReceived, Stage::ResponseStarted, Stage::ResponseComplete].into_iter().collect();
    let policy_stages: Stages = [Stage::RequestReceived, Stage::ResponseStarted].into_iter().collect();
    let cases: &[(&str, Stages, &[&str], Level, Stages)] = &[
        ("namespaced", Stages::default(), &["omit RequestReceived", "getPods", "default"], Level::Request, rr),
        ("namespaced", Stages::default(), &["only audit panic", "getPods", "default"], Level::Request, all_but_panic),
        ("cluster", Stages::default(), &["omit RequestReceived", "getPods", "default"], Level::Request, rr),
        ("nonResource", Stages::default(), &["only audit panic", "getPods", "default"], Level::Request, all_but_panic),
        ("namespaced", policy_stages, &["omit RequestReceived", "getPods", "default"], Level::Request, policy_stages),
        ("namespaced", policy_stages, &["only audit panic", "getPods", "default"], Level::Request, all_but_panic),
        ("nonResource", policy_stages, &["default", "omit RequestReceived", "getPods"], Level::Metadata, policy_stages),
    ];
    for (req, stages, rules, level, omitted) in cases {
        assert_eq!(evaluate(req, *stages, rules), (*level, *omitted), "{req} with {rules:?}");
    }
}

#[test]
fn a_rule_overrides_the_policys_managed_fields_choice() {
    let attrs = Attributes { verb: "get".into(), ..Attributes::default() };
    let rule = Rule { verbs: list(&["get"]), ..Rule::at(Level::RequestResponse) };
    for (policy_default, rule_says, want) in
        [(false, None, false), (true, None, true), (true, Some(false), false), (false, Some(true), true)]
    {
        let policy = Policy {
            rules: vec![Rule { omit_managed_fields: rule_says, ..rule.clone() }],
            omit_managed_fields: policy_default,
            ..Policy::default()
        };
        assert_eq!(policy.evaluate(&attrs, None).omit_managed_fields, want, "policy {policy_default}, rule {rule_says:?}");
    }
}

#[test]
fn a_policy_file_reads_as_yaml_or_json_with_the_policys_stages_in_every_rule() {
    let yaml = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: None\n  users: [\"system:kube-proxy\"]\n- level: RequestResponse\n  resources:\n  - group: \"\"\n    resources: [secrets]\n  omitStages: [ResponseStarted]\n- level: Metadata\n";
    let json = r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","omitStages":["RequestReceived"],"rules":[{"level":"None","users":["system:kube-proxy"]},{"level":"RequestResponse","resources":[{"group":"","resources":["secrets"]}],"omitStages":["ResponseStarted"]},{"level":"Metadata"}]}"#;
    for text in [yaml, json] {
        let p = parse(text).unwrap();
        assert_eq!(p.rules.iter().map(|r| r.level).collect::<Vec<_>>(), [Level::None, Level::RequestResponse, Level::Metadata]);
        assert!(p.rules.iter().all(|r| r.omit_stages.has(Stage::RequestReceived)));
        assert!(p.rules[1].omit_stages.has(Stage::ResponseStarted) && !p.rules[2].omit_stages.has(Stage::ResponseStarted));
        let secrets = Attributes { verb: "list".into(), resource_request: true, resource: "secrets".into(), ..Attributes::default() };
        assert_eq!(p.evaluate(&secrets, None).level, Level::RequestResponse);
    }
}

#[test]
fn bad_policies_are_refused_in_the_apiservers_words() {
    let head = "apiVersion: audit.k8s.io/v1\nkind: Policy\n";
    let cases: &[(&str, &str)] = &[
        (
            "rules:\n- level: Foo\n",
            r#"rules[0].level: Unsupported value: "Foo": supported values: "None", "Metadata", "Request", "RequestResponse""#,
        ),
        ("rules:\n- users: [a]\n", "rules[0].level: Required value"),
        ("rules: []\n", "loaded illegal policy with 0 rules"),
        (
            "omitStages: [Bar]\nrules:\n- level: None\n",
            r#"omitStages[0]: Invalid value: "Bar": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"#,
        ),
        (
            "rules:\n- level: None\n  nonResourceURLs: [\"logs\"]\n",
            r#"rules[0].nonResourceURLs[0]: Invalid value: "logs": non-resource URL rules must begin with a '/' character"#,
        ),
        (
            "rules:\n- level: None\n  nonResourceURLs: [\"/a*b\"]\n",
            r#"rules[0].nonResourceURLs[0]: Invalid value: "/a*b": non-resource URL wildcards '*' must be the final character of the rule"#,
        ),
        (
            "rules:\n- level: None\n  nonResourceURLs: [\"/x\"]\n  namespaces: [\"a\"]\n",
            r#"rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs"#,
        ),
        (
            "rules:\n- level: None\n  resources:\n  - group: rbac.authorization.k8s.io/v1\n",
            "rules[0].resources.group: Invalid value: \"rbac.authorization.k8s.io/v1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            "rules:\n- level: None\n  resources:\n  - resourceNames: [a]\n",
            r#"rules[0].resources.resourceNames: Invalid value: ["a"]: using resourceNames requires at least one resource"#,
        ),
        (
            "rules:\n- level: Foo\n  omitStages: [X]\n",
            r#"[rules[0].level: Unsupported value: "Foo": supported values: "None", "Metadata", "Request", "RequestResponse", rules[0].omitStages[0]: Invalid value: "X": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic]"#,
        ),
    ];
    for (body, want) in cases {
        assert_eq!(parse(&format!("{head}{body}")).unwrap_err(), *want, "{body}");
    }
    // How the decoder words what is not a v1 Policy (captured from kube-apiserver 1.36.2).
    let decoding: &[(&str, &str)] = &[
        ("kind: Policy\nrules:\n- level: None\n", "unknown group version field audit.k8s.io/__internal, Kind=Policy in policy"),
        (
            "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: None\n",
            r#"failed decoding: no kind "Policy" is registered for version "audit.k8s.io/v1beta1" in scheme "k8s.io/apiserver/pkg/audit/scheme.go:30""#,
        ),
        (
            "apiVersion: audit.k8s.io/v1\nkind: Foo\nrules:\n- level: None\n",
            r#"failed decoding: no kind "Foo" is registered for version "audit.k8s.io/v1" in scheme "k8s.io/apiserver/pkg/audit/scheme.go:30""#,
        ),
        (
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: [a]\n",
            "failed decoding: json: cannot unmarshal array into Go struct field PolicyRule.rules.level of type v1.Level",
        ),
        (
            "- a\n",
            r#"failed decoding: couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#,
        ),
    ];
    for (text, want) in decoding {
        assert_eq!(parse(text).unwrap_err(), *want, "{text}");
    }
    assert!(
        parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources:\n  - group: 5\n")
            .unwrap_err()
            .ends_with("GroupResources.rules.resources.group of type string")
    );
    // apiVersion without kind reads as the Policy asked for.
    assert!(parse("apiVersion: audit.k8s.io/v1\nrules:\n- level: None\n").is_ok());
}

#[test]
fn unknown_fields_are_ignored_as_the_lenient_decoder_ignores_them() {
    let text = "apiVersion: audit.k8s.io/v1\nkind: Policy\nmetadata: {name: p}\nrules:\n- level: Metadata\n  levl: None\n  resources: [{group: \"\", resourcez: [pods]}]\n";
    let p = parse(text).unwrap();
    assert_eq!(p.rules[0].level, Level::Metadata);
    let doc: serde_json::Value = serde_saphyr::from_str(text).unwrap();
    assert_eq!(super::read::unknown_fields(&doc), ["rules[0].levl", "rules[0].resources[0].resourcez"]);
}

//! Reading a policy file as `pkg/audit/policy/reader.go` reads it (YAML or
//! JSON; `audit.k8s.io/v1` `Policy` only; unknown fields warned about and
//! ignored, as its lenient fallback does) and validating it as
//! `pkg/apis/audit/validation` does, with its wording: field paths, Go's
//! quoting, errors joined as an aggregate (`[e1, e2]`), then
//! `: from file PATH`.
//!
//! Invariant: whatever the file holds, [`read`] returns a [`Policy`] the
//! apiserver would load or the error it would give — never a panic.

use std::path::Path;

use apimachinery::gostr::quote;
use apimachinery::json::write_go_string;
use serde::Deserialize;
use serde_json::Value;

use super::{GroupResources, Policy, Rule};
use crate::audit::event::{Level, Stage, Stages};

/// Why a policy file is refused; `Display` is the apiserver's wording.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file cannot be read.
    #[error("failed to read file path {}: {source}", quote(&path.display().to_string()))]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not an `audit.k8s.io/v1` `Policy`, or not a valid one.
    #[error("{reason}: from file {}", path.display())]
    Invalid { path: std::path::PathBuf, reason: String },
}

/// The policy in the file at `path`.
pub fn read(path: &Path) -> Result<Policy, PolicyError> {
    let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read { path: path.into(), source })?;
    parse(&text).map_err(|reason| PolicyError::Invalid { path: path.into(), reason })
}

/// What a policy file holds (an absent or `null` field: none, as Go reads it).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyFile {
    rules: Option<Vec<RuleFile>>,
    omit_stages: Option<Vec<String>>,
    omit_managed_fields: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleFile {
    level: Option<String>,
    users: Option<Vec<String>>,
    user_groups: Option<Vec<String>>,
    verbs: Option<Vec<String>>,
    resources: Option<Vec<GroupResourcesFile>>,
    namespaces: Option<Vec<String>>,
    #[serde(rename = "nonResourceURLs")]
    non_resource_urls: Option<Vec<String>>,
    omit_stages: Option<Vec<String>>,
    omit_managed_fields: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupResourcesFile {
    group: Option<String>,
    resources: Option<Vec<String>>,
    resource_names: Option<Vec<String>>,
}

/// The policy `text` holds, or why not (without the file's name).
pub(super) fn parse(text: &str) -> Result<Policy, String> {
    let doc: Value = serde_saphyr::from_str(text).map_err(|e| format!("failed decoding: {e}"))?;
    let Value::Object(m) = &doc else {
        return Err(format!(
            "failed decoding: couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            json_kind(&doc)
        ));
    };
    // Without an apiVersion the decoder reads the internal type; without a kind, the one asked for.
    let text_of = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text_of("apiVersion"), text_of("kind"));
    if api_version.is_empty() {
        return Err("unknown group version field audit.k8s.io/__internal, Kind=Policy in policy".into());
    }
    let kind = if kind.is_empty() { "Policy" } else { kind };
    if (api_version, kind) != ("audit.k8s.io/v1", "Policy") {
        return Err(format!(
            "failed decoding: no kind {} is registered for version {} in scheme \"k8s.io/apiserver/pkg/audit/scheme.go:30\"",
            quote(kind),
            quote(api_version)
        ));
    }
    if let Some(e) = type_error(&doc) {
        return Err(format!("failed decoding: {e}"));
    }
    let unknown = unknown_fields(&doc);
    if !unknown.is_empty() {
        let fields: Vec<String> = unknown.iter().map(|f| format!("unknown field {}", quote(f))).collect();
        tracing::warn!("Audit policy contains errors, falling back to lenient decoding: strict decoding error: {}", fields.join(", "));
    }
    let file: PolicyFile = serde_json::from_value(doc).map_err(|e| format!("failed decoding: {e}"))?;
    let policy = validate(file)?;
    if policy.rules.is_empty() {
        return Err("loaded illegal policy with 0 rules".into());
    }
    Ok(policy)
}

/// How Go's `encoding/json` names the kind of a JSON value.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// What a known field holds, as Go types it.
#[derive(Clone, Copy)]
enum Shape {
    String(&'static str),
    Strings(&'static str),
    Bool,
    Rules,
    GroupResources,
}

/// The first value of the wrong type, worded as `json.UnmarshalTypeError`:
/// `json: cannot unmarshal array into Go struct field PolicyRule.rules.level of type v1.Level`.
fn type_error(doc: &Value) -> Option<String> {
    fn check(v: &Value, shape: Shape, owner: &str, path: &str) -> Option<String> {
        let bad =
            |go: &str, v: &Value| Some(format!("json: cannot unmarshal {} into Go struct field {owner}.{path} of type {go}", json_kind(v)));
        let fields = |m: &serde_json::Map<String, Value>, known: &[(&'static str, Shape)], owner: &str| {
            known.iter().find_map(|(k, shape)| m.get(*k).and_then(|v| check(v, *shape, owner, &format!("{path}.{k}"))))
        };
        match (shape, v) {
            (_, Value::Null) => None,
            (Shape::String(_), Value::String(_)) | (Shape::Bool, Value::Bool(_)) => None,
            (Shape::String(go), v) => bad(go, v),
            (Shape::Bool, v) => bad("bool", v),
            (Shape::Strings(go), Value::Array(items)) => items.iter().find_map(|i| check(i, Shape::String(go), owner, path)),
            (Shape::Strings(go), v) => bad(&format!("[]{go}"), v),
            (Shape::Rules, Value::Array(items)) => items.iter().find_map(|rule| match rule {
                Value::Object(m) => fields(m, RULE_SHAPES, "PolicyRule"),
                Value::Null => None,
                v => bad("v1.PolicyRule", v),
            }),
            (Shape::Rules, v) => bad("[]v1.PolicyRule", v),
            (Shape::GroupResources, Value::Array(items)) => items.iter().find_map(|gr| match gr {
                Value::Object(m) => fields(m, GROUP_RESOURCES_SHAPES, "GroupResources"),
                Value::Null => None,
                v => bad("v1.GroupResources", v),
            }),
            (Shape::GroupResources, v) => bad("[]v1.GroupResources", v),
        }
    }
    let m = doc.as_object()?;
    POLICY_SHAPES.iter().find_map(|(k, shape)| m.get(*k).and_then(|v| check(v, *shape, "Policy", k)))
}

const POLICY_SHAPES: &[(&str, Shape)] =
    &[("rules", Shape::Rules), ("omitStages", Shape::Strings("v1.Stage")), ("omitManagedFields", Shape::Bool)];
const RULE_SHAPES: &[(&str, Shape)] = &[
    ("level", Shape::String("v1.Level")),
    ("users", Shape::Strings("string")),
    ("userGroups", Shape::Strings("string")),
    ("verbs", Shape::Strings("string")),
    ("resources", Shape::GroupResources),
    ("namespaces", Shape::Strings("string")),
    ("nonResourceURLs", Shape::Strings("string")),
    ("omitStages", Shape::Strings("v1.Stage")),
    ("omitManagedFields", Shape::Bool),
];
const GROUP_RESOURCES_SHAPES: &[(&str, Shape)] =
    &[("group", Shape::String("string")), ("resources", Shape::Strings("string")), ("resourceNames", Shape::Strings("string"))];

/// The fields strict decoding refuses, as `rules[0].levl`.
pub(super) fn unknown_fields(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let unknown = |v: &Value, known: &[(&str, Shape)], at: &str, out: &mut Vec<String>| {
        if let Value::Object(m) = v {
            let top = at.is_empty();
            let is_known = |k: &str| known.iter().any(|(f, _)| *f == k) || (top && matches!(k, "apiVersion" | "kind" | "metadata"));
            out.extend(m.keys().filter(|k| !is_known(k)).map(|k| if top { k.clone() } else { format!("{at}.{k}") }));
        }
    };
    unknown(doc, POLICY_SHAPES, "", &mut out);
    for (i, rule) in doc.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        unknown(rule, RULE_SHAPES, &format!("rules[{i}]"), &mut out);
        for (j, gr) in rule.get("resources").and_then(Value::as_array).into_iter().flatten().enumerate() {
            unknown(gr, GROUP_RESOURCES_SHAPES, &format!("rules[{i}].resources[{j}]"), &mut out);
        }
    }
    out
}

/// A value as `field.Error` shows a non-string bad value: Go's JSON of it.
fn json_list(items: &[String]) -> String {
    let mut s = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_go_string(&mut s, item);
    }
    s.push(']');
    s
}

/// `field.Invalid(path, value, detail)` with a string value.
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", quote(value))
}

/// `ValidatePolicy`, then the evaluator's union of the policy's and each rule's omitted stages.
fn validate(file: PolicyFile) -> Result<Policy, String> {
    let mut errs: Vec<String> = Vec::new();
    let omit_stages = stages(&file.omit_stages.unwrap_or_default(), "omitStages", &mut errs);
    let mut rules = Vec::new();
    for (i, r) in file.rules.unwrap_or_default().into_iter().enumerate() {
        let at = format!("rules[{i}]");
        let level = match r.level.as_deref().unwrap_or("") {
            "" => {
                errs.push(format!("{at}.level: Required value"));
                Level::None
            }
            name => Level::parse(name).unwrap_or_else(|| {
                let mut bad = String::new();
                write_go_string(&mut bad, name);
                let supported: Vec<String> = Level::ALL.iter().map(|l| quote(l.as_str())).collect();
                errs.push(format!("{at}.level: Unsupported value: {bad}: supported values: {}", supported.join(", ")));
                Level::None
            }),
        };
        let urls = r.non_resource_urls.unwrap_or_default();
        for (j, url) in urls.iter().enumerate().filter(|(_, u)| *u != "*") {
            let path = format!("{at}.nonResourceURLs[{j}]");
            if !url.starts_with('/') {
                errs.push(invalid(&path, url, "non-resource URL rules must begin with a '/' character"));
            }
            if url.len() > 1 && url[..url.len() - 1].contains('*') {
                errs.push(invalid(&path, url, "non-resource URL wildcards '*' must be the final character of the rule"));
            }
        }
        let mut resources = Vec::new();
        for gr in r.resources.unwrap_or_default() {
            let gr = GroupResources {
                group: gr.group.unwrap_or_default(),
                resources: gr.resources.unwrap_or_default(),
                resource_names: gr.resource_names.unwrap_or_default(),
            };
            if !gr.group.is_empty() && gr.group != "*" {
                let msgs = dns_subdomain_errors(&gr.group);
                if !msgs.is_empty() {
                    errs.push(invalid(&format!("{at}.resources.group"), &gr.group, &msgs.join(",")));
                }
            }
            if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                errs.push(format!(
                    "{at}.resources.resourceNames: Invalid value: {}: using resourceNames requires at least one resource",
                    json_list(&gr.resource_names)
                ));
            }
            resources.push(gr);
        }
        let rule_stages = stages(&r.omit_stages.unwrap_or_default(), &format!("{at}.omitStages"), &mut errs);
        let namespaces = r.namespaces.unwrap_or_default();
        if !urls.is_empty() && (!resources.is_empty() || !namespaces.is_empty()) {
            errs.push(format!(
                "{at}.nonResourceURLs: Invalid value: {}: rules cannot apply to both regular resources and non-resource URLs",
                json_list(&urls)
            ));
        }
        rules.push(Rule {
            level,
            users: r.users.unwrap_or_default(),
            user_groups: r.user_groups.unwrap_or_default(),
            verbs: r.verbs.unwrap_or_default(),
            resources,
            namespaces,
            non_resource_urls: urls,
            omit_stages: rule_stages.union(omit_stages),
            omit_managed_fields: r.omit_managed_fields,
        });
    }
    // `ErrorList.ToAggregate`: duplicates once; one error alone, several in brackets.
    let mut seen = std::collections::HashSet::new();
    errs.retain(|e| seen.insert(e.clone()));
    match errs.len() {
        0 => Ok(Policy { rules, omit_stages, omit_managed_fields: file.omit_managed_fields.unwrap_or(false) }),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

/// `validateOmitStages`: the stages named, each error pushed to `errs`.
fn stages(names: &[String], at: &str, errs: &mut Vec<String>) -> Stages {
    let allowed: Vec<&str> = Stage::ALL.iter().map(|s| s.as_str()).collect();
    let mut set = Stages::default();
    for (i, name) in names.iter().enumerate() {
        match Stage::parse(name) {
            Some(s) => set = set.with(s),
            None => errs.push(invalid(&format!("{at}[{i}]"), name, &format!("allowed stages are {}", allowed.join(",")))),
        }
    }
    set
}

/// `validation.IsDNS1123Subdomain` of `k8s.io/apimachinery/pkg/util/validation` (lengths in characters).
fn dns_subdomain_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let label = |l: &str| {
        let b = l.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(edge) && b.last().is_some_and(edge) && b.iter().all(|c| edge(c) || *c == b'-')
    };
    if !v.split('.').all(label) {
        errs.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an \
             alphanumeric character (e.g. 'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .to_string(),
        );
    }
    errs
}

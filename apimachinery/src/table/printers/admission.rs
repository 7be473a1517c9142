//! Printers of the admission configuration: webhook configurations,
//! validating and mutating admission policies and their bindings.

use serde_json::Value;

use super::super::{Cell, Row};
use super::{age, items, name, row, str_at, text};

/// `printValidatingWebhook`, `printMutatingWebhook`.
pub(super) fn webhooks(o: &Value, now: i64) -> Row {
    row(vec![name(o), Cell::Int(items(o, &["webhooks"]).len() as i64), age(o, now)])
}

/// `printValidatingAdmissionPolicy` (`validations`), `printMutatingAdmissionPolicy` (`mutations`).
fn policy(o: &Value, now: i64, list: &str) -> Row {
    let param_kind = match o.pointer("/spec/paramKind").filter(|p| p.is_object()) {
        Some(p) => format!("{}/{}", str_at(p, &["apiVersion"]), str_at(p, &["kind"])),
        None => "<unset>".to_string(),
    };
    row(vec![name(o), Cell::Int(items(o, &["spec", list]).len() as i64), text(param_kind), age(o, now)])
}

pub(super) fn validating_policy(o: &Value, now: i64) -> Row {
    policy(o, now, "validations")
}

pub(super) fn mutating_policy(o: &Value, now: i64) -> Row {
    policy(o, now, "mutations")
}

/// `printValidatingAdmissionPolicyBinding`, `printMutatingAdmissionPolicyBinding`;
/// `None` for a `paramRef` by selector, which the apiserver prints as Go's
/// dump of the `LabelSelector` struct.
pub(super) fn binding(o: &Value, now: i64) -> Option<Row> {
    let param = match o.pointer("/spec/paramRef").filter(|p| p.is_object()) {
        None => "<unset>".to_string(),
        Some(p) => match (str_at(p, &["name"]), str_at(p, &["namespace"])) {
            ("", _) if p.get("selector").is_some_and(|s| !s.is_null()) => return None,
            ("", _) => "<unset>".to_string(),
            (n, "") => format!("*/{n}"),
            (n, ns) => format!("{ns}/{n}"),
        },
    };
    Some(row(vec![name(o), text(str_at(o, &["spec", "policyName"])), text(param), age(o, now)]))
}

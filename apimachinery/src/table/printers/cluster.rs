//! Printers of cluster-level kinds: API services, API priority and
//! fairness (flow schemas, priority levels), priority classes, runtime
//! classes, component statuses and certificate signing requests.

use serde_json::Value;

use super::super::{Cell, Row};
use super::{age, flag, int_at, items, name, row, str_at, text};
use crate::time::human_duration;

fn condition<'a>(o: &'a Value, path: &[&str], typ: &str) -> Option<&'a Value> {
    items(o, path).iter().find(|c| str_at(c, &["type"]) == typ)
}

/// The aggregator's table of `apiservices`.
pub(super) fn apiservice(o: &Value, now: i64) -> Row {
    let service = match o.pointer("/spec/service").filter(|s| s.is_object()) {
        Some(s) => format!("{}/{}", str_at(s, &["namespace"]), str_at(s, &["name"])),
        None => "Local".to_string(),
    };
    let available = match condition(o, &["status", "conditions"], "Available") {
        None => "Unknown".to_string(),
        Some(c) => match (str_at(c, &["status"]), str_at(c, &["reason"])) {
            ("True", _) | (_, "") => str_at(c, &["status"]).to_string(),
            (status, reason) => format!("{status} ({reason})"),
        },
    };
    row(vec![name(o), text(service), text(available), age(o, now)])
}

/// `printFlowSchema`.
/// Where a flow schema's row goes (`apihelpers.FlowSchemaSequence`): by
/// matching precedence, then by name.
pub(super) fn flowschema_order(bytes: &[u8]) -> super::super::RowOrder {
    #[derive(serde::Deserialize, Default)]
    #[serde(default, rename_all = "camelCase")]
    struct Spec {
        matching_precedence: i64,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Meta {
        name: String,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct FlowSchema {
        metadata: Meta,
        spec: Spec,
    }
    let fs: FlowSchema = serde_json::from_slice(bytes).unwrap_or_default();
    super::super::RowOrder(fs.spec.matching_precedence, fs.metadata.name)
}

pub(super) fn flowschema(o: &Value, now: i64) -> Row {
    let distinguisher = match str_at(o, &["spec", "distinguisherMethod", "type"]) {
        "" if o.pointer("/spec/distinguisherMethod").is_none_or(Value::is_null) => "<none>",
        t => t,
    };
    let dangling = condition(o, &["status", "conditions"], "Dangling").map_or("?", |c| str_at(c, &["status"]));
    row(vec![
        name(o),
        text(str_at(o, &["spec", "priorityLevelConfiguration", "name"])),
        Cell::Int(int_at(o, &["spec", "matchingPrecedence"])),
        text(distinguisher),
        age(o, now),
        text(dangling),
    ])
}

/// `printPriorityLevelConfiguration`: the limits of a `Limited` level, `<none>` otherwise.
pub(super) fn prioritylevelconfiguration(o: &Value, now: i64) -> Row {
    let none = || text("<none>");
    let (mut shares, mut queues, mut hand, mut length) = (none(), none(), none(), none());
    if let Some(limited) = o.pointer("/spec/limited").filter(|l| l.is_object()) {
        shares = Cell::Int(int_at(limited, &["nominalConcurrencyShares"]));
        if let Some(q) = limited.pointer("/limitResponse/queuing").filter(|q| q.is_object()) {
            queues = Cell::Int(int_at(q, &["queues"]));
            hand = Cell::Int(int_at(q, &["handSize"]));
            length = Cell::Int(int_at(q, &["queueLengthLimit"]));
        }
    }
    row(vec![name(o), text(str_at(o, &["spec", "type"])), shares, queues, hand, length, age(o, now)])
}

/// `printPriorityClass`.
pub(super) fn priorityclass(o: &Value, now: i64) -> Row {
    row(vec![
        name(o),
        Cell::Int(int_at(o, &["value"])),
        flag(o, &["globalDefault"], false),
        age(o, now),
        text(str_at(o, &["preemptionPolicy"])),
    ])
}

/// `printRuntimeClass`.
pub(super) fn runtimeclass(o: &Value, now: i64) -> Row {
    row(vec![name(o), text(str_at(o, &["handler"])), age(o, now)])
}

/// `printComponentStatus`: the `Healthy` condition.
pub(super) fn componentstatus(o: &Value, _now: i64) -> Row {
    let (status, message, error) = match condition(o, &["conditions"], "Healthy") {
        Some(c) => {
            let status = if str_at(c, &["status"]) == "True" { "Healthy" } else { "Unhealthy" };
            (status, str_at(c, &["message"]), str_at(c, &["error"]))
        }
        None => ("Unknown", "", ""),
    };
    row(vec![name(o), text(status), text(message), text(error)])
}

/// `printCertificateSigningRequest` with `extractCSRStatus`.
pub(super) fn certificatesigningrequest(o: &Value, now: i64) -> Row {
    let has = |typ: &str| condition(o, &["status", "conditions"], typ).is_some();
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !str_at(o, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    let signer = match str_at(o, &["spec", "signerName"]) {
        "" => "<none>",
        s => s,
    };
    let duration = o.pointer("/spec/expirationSeconds").and_then(Value::as_i64).map_or("<none>".to_string(), human_duration);
    row(vec![name(o), age(o, now), text(signer), text(str_at(o, &["spec", "username"])), text(duration), text(status)])
}

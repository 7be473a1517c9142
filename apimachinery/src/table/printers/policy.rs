//! Printers of pod disruption budgets and resource quotas (limit ranges get
//! the default table).

use serde_json::Value;

use super::super::{Cell, Row};
use super::{age, int_at, name, row, text};

/// `IntOrString.String()`: a number's digits or the string.
fn int_or_string(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// `printPodDisruptionBudget`.
pub(super) fn poddisruptionbudget(o: &Value, now: i64) -> Row {
    let bound = |key: &str| o.pointer(&format!("/spec/{key}")).and_then(int_or_string).unwrap_or_else(|| "N/A".to_string());
    row(vec![
        name(o),
        text(bound("minAvailable")),
        text(bound("maxUnavailable")),
        Cell::Int(int_at(o, &["status", "disruptionsAllowed"])),
        age(o, now),
    ])
}

/// `printResourceQuota`: `used/hard` of each resource in name order, the
/// `limits.*` ones in the second column.
pub(super) fn resourcequota(o: &Value, now: i64) -> Row {
    let hard = o.pointer("/status/hard").and_then(Value::as_object);
    let mut resources: Vec<&String> = hard.into_iter().flat_map(|h| h.keys()).collect();
    resources.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for r in resources {
        let quantity = |map: &str| o.pointer(&format!("/status/{map}")).and_then(|m| m.get(r)).and_then(Value::as_str).unwrap_or("0");
        let cell = format!("{r}: {}/{}", quantity("used"), quantity("hard"));
        match r.split_once('.') {
            Some(("limits", _)) => limits.push(cell),
            _ => requests.push(cell),
        }
    }
    row(vec![name(o), text(requests.join(", ")), text(limits.join(", ")), age(o, now)])
}

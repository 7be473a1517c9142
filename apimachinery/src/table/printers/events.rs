//! `printEvent`: core/v1 events, with the events.k8s.io fields they carry
//! when written through the newer API (event time, series, reporting
//! controller and instance).

use serde_json::Value;

use super::super::{Cell, Row};
use super::{int_at, row, str_at};
use crate::time::since;

/// A timestamp field, unless it is unset (Go's zero time marshals as `null`).
fn time<'a>(o: &'a Value, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() { b } else { a }
}

pub(super) fn event(o: &Value, now: i64) -> Row {
    let first = match time(o, "firstTimestamp") {
        Some(t) => since(Some(t), now),
        None => since(time(o, "eventTime"), now),
    };
    let mut last = match time(o, "lastTimestamp") {
        Some(t) => since(Some(t), now),
        None => first.clone(),
    };
    let mut count = int_at(o, &["count"]);
    match o.get("series").filter(|s| !s.is_null()) {
        Some(series) => {
            last = since(series.get("lastObservedTime").and_then(Value::as_str), now);
            count = int_at(series, &["count"]);
        }
        None if count == 0 => count = 1,
        None => {}
    }
    let kind = str_at(o, &["involvedObject", "kind"]).to_lowercase();
    let target = match str_at(o, &["involvedObject", "name"]) {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let component = first_non_empty(str_at(o, &["source", "component"]), str_at(o, &["reportingComponent"]));
    let instance = first_non_empty(str_at(o, &["source", "host"]), str_at(o, &["reportingInstance"]));
    let source = if instance.is_empty() { component.to_string() } else { format!("{component}, {instance}") };
    let text = |s: &str| Cell::Str(s.to_string());
    row(vec![
        Cell::Str(last),
        text(str_at(o, &["type"])),
        text(str_at(o, &["reason"])),
        Cell::Str(target),
        text(str_at(o, &["involvedObject", "fieldPath"])),
        Cell::Str(source),
        text(str_at(o, &["message"]).trim()),
        Cell::Str(first),
        Cell::Int(count),
        text(str_at(o, &["metadata", "name"])),
    ])
}

/// events.k8s.io/v1 field names and their core/v1 twins (the apiserver converts to the core event to print).
const EVENTS_V1: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

/// An events.k8s.io/v1 event, printed as its core/v1 form.
pub(super) fn event_v1(o: &Value, now: i64) -> Row {
    let mut core = o.clone();
    if let Some(map) = core.as_object_mut() {
        for (v1, v1_core) in EVENTS_V1 {
            if let Some(v) = map.remove(v1) {
                map.insert(v1_core.to_string(), v);
            }
        }
    }
    event(&core, now)
}

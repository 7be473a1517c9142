//! `printHorizontalPodAutoscaler` with `formatHPAMetrics`, for
//! autoscaling/v2 objects and autoscaling/v1 ones.
//!
//! The apiserver prints the stored (v2) object whichever version is asked
//! for. A v1 object carries the same metrics split in two: the first CPU
//! utilization target in `targetCPUUtilizationPercentage`, the others (in
//! v1 field names) in the `autoscaling.alpha.kubernetes.io/metrics`
//! annotation, and every current metric in `.../current-metrics`. They are
//! put back together here with the CPU target first, which is the stored
//! order unless a v2 client listed the CPU target after other metrics.

use serde_json::{Map, Value, json};

use super::super::{Cell, Row};
use super::{age, int_at, items, name, row, str_at, text};

/// `Quantity.String()` of an optional quantity: its (canonical) text, or `<nil>`.
fn quantity(v: &Value, path: &[&str]) -> String {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(Value::as_str).unwrap_or("<nil>").to_string()
}

/// `formatHPAMetrics` of v2 `specs` and `statuses`.
fn metrics(specs: &[Value], statuses: &[Value]) -> String {
    const MAX: usize = 2;
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let status = |key: &str| statuses.get(i).and_then(|s| s.get(key)).filter(|s| s.is_object());
            let unknown = || "<unknown>".to_string();
            match str_at(spec, &["type"]) {
                typ @ ("External" | "Object") => {
                    let key = if typ == "External" { "external" } else { "object" };
                    let target = &spec[key]["target"];
                    if target.get("averageValue").is_some_and(|v| !v.is_null()) {
                        let current = status(key)
                            .filter(|s| s.pointer("/current/averageValue").is_some_and(|v| !v.is_null()))
                            .map_or_else(unknown, |s| quantity(s, &["current", "averageValue"]));
                        format!("{current}/{} (avg)", quantity(target, &["averageValue"]))
                    } else {
                        let current = status(key).map_or_else(unknown, |s| quantity(s, &["current", "value"]));
                        format!("{current}/{}", quantity(target, &["value"]))
                    }
                }
                "Pods" => {
                    let current = status("pods").map_or_else(unknown, |s| quantity(s, &["current", "averageValue"]));
                    format!("{current}/{}", quantity(&spec["pods"]["target"], &["averageValue"]))
                }
                typ @ ("Resource" | "ContainerResource") => {
                    let key = if typ == "Resource" { "resource" } else { "containerResource" };
                    let (source, target) = (&spec[key], &spec[key]["target"]);
                    let resource = str_at(source, &["name"]);
                    if target.get("averageValue").is_some_and(|v| !v.is_null()) {
                        let current = status(key).map_or_else(unknown, |s| quantity(s, &["current", "averageValue"]));
                        format!("{resource}: {current}/{}", quantity(target, &["averageValue"]))
                    } else {
                        let percent = |v: Option<&Value>| v.and_then(Value::as_i64).map(|p| format!("{p}%"));
                        let current = status(key).and_then(|s| percent(s.pointer("/current/averageUtilization"))).unwrap_or_else(unknown);
                        let target = percent(target.get("averageUtilization")).unwrap_or_else(|| "<auto>".to_string());
                        format!("{resource}: {current}/{target}")
                    }
                }
                _ => "<unknown type>".to_string(),
            }
        })
        .collect();
    if list.len() > MAX { format!("{} + {} more...", list[..MAX].join(", "), list.len() - MAX) } else { list.join(", ") }
}

/// A v2 `MetricTarget` or `MetricValueStatus`: the quantities given, without the null ones.
fn quantities(value: Option<&Value>, average: Option<&Value>, utilization: Option<&Value>) -> Value {
    let mut t = Map::new();
    for (k, v) in [("value", value), ("averageValue", average), ("averageUtilization", utilization)] {
        if let Some(v) = v.filter(|v| !v.is_null()) {
            t.insert(k.into(), v.clone());
        }
    }
    Value::Object(t)
}

/// A v1 `MetricSpec` (from the annotation) in v2 form.
fn v2_spec(m: &Value) -> Value {
    let typ = str_at(m, &["type"]);
    let target = quantities;
    let (key, source) = match typ {
        "External" => {
            let e = &m["external"];
            ("external", json!({"target": target(e.get("targetValue"), e.get("targetAverageValue"), None)}))
        }
        "Object" => {
            // v1's target value is always there; a zero one is dropped when an average is set.
            let o = &m["object"];
            let average = o.get("averageValue").filter(|v| !v.is_null());
            let value = o.get("targetValue").cloned().unwrap_or_else(|| json!("0"));
            let value = (average.is_none() || !is_zero(&value)).then_some(value);
            ("object", json!({"target": target(value.as_ref(), average, None)}))
        }
        "Pods" => ("pods", json!({"target": target(None, Some(m["pods"].get("targetAverageValue").unwrap_or(&json!("0"))), None)})),
        "Resource" | "ContainerResource" => {
            let key = if typ == "Resource" { "resource" } else { "containerResource" };
            let r = &m[key];
            (
                key,
                json!({"name": r["name"].clone(), "target": target(None, r.get("targetAverageValue"), r.get("targetAverageUtilization"))}),
            )
        }
        _ => return json!({"type": typ}),
    };
    json!({"type": typ, key: source})
}

fn is_zero(q: &Value) -> bool {
    q.as_str().is_some_and(|s| {
        s.trim_start_matches(['+', '-']).chars().take_while(|c| c.is_ascii_digit() || *c == '.').all(|c| c == '0' || c == '.')
    })
}

/// A v1 `MetricStatus` (from the annotation) in v2 form.
fn v2_status(m: &Value) -> Value {
    let typ = str_at(m, &["type"]);
    let current = quantities;
    let zero = json!("0");
    let (key, source) = match typ {
        "External" => {
            let e = &m["external"];
            ("external", current(Some(e.get("currentValue").unwrap_or(&zero)), e.get("currentAverageValue"), None))
        }
        "Object" => {
            let o = &m["object"];
            ("object", current(Some(o.get("currentValue").unwrap_or(&zero)), o.get("averageValue"), None))
        }
        "Pods" => ("pods", current(None, Some(m["pods"].get("currentAverageValue").unwrap_or(&zero)), None)),
        "Resource" | "ContainerResource" => {
            let key = if typ == "Resource" { "resource" } else { "containerResource" };
            let r = &m[key];
            (key, current(None, Some(r.get("currentAverageValue").unwrap_or(&zero)), r.get("currentAverageUtilization")))
        }
        _ => return json!({"type": typ}),
    };
    json!({"type": typ, key: {"current": source}})
}

/// A JSON list held in an annotation, each item turned to v2 form.
fn annotation_list(o: &Value, key: &str, convert: fn(&Value) -> Value) -> Option<Vec<Value>> {
    let text = o.pointer("/metadata/annotations")?.get(key)?.as_str()?;
    serde_json::from_str::<Vec<Value>>(text).ok().map(|l| l.iter().map(convert).collect())
}

/// The v2 metrics and current metrics of a v1 object.
fn v1_metrics(o: &Value) -> (Vec<Value>, Vec<Value>) {
    let cpu = |utilization: &str, field: &str| {
        o.pointer(utilization)
            .and_then(Value::as_i64)
            .map(|p| json!({"type": "Resource", "resource": {"name": "cpu", field: {"averageUtilization": p}}}))
    };
    let mut specs: Vec<Value> = cpu("/spec/targetCPUUtilizationPercentage", "target").into_iter().collect();
    specs.extend(annotation_list(o, "autoscaling.alpha.kubernetes.io/metrics", v2_spec).unwrap_or_default());
    if specs.is_empty() && !super::is_empty_object(o) {
        // autoscaling/v1's implicit default: 80% CPU (set on objects read from storage).
        specs.push(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"averageUtilization": 80}}}));
    }
    let statuses = annotation_list(o, "autoscaling.alpha.kubernetes.io/current-metrics", v2_status)
        .unwrap_or_else(|| cpu("/status/currentCPUUtilizationPercentage", "current").into_iter().collect());
    (specs, statuses)
}

/// `printHorizontalPodAutoscaler`: a v2 object has `spec.metrics` (defaulted when empty), a v1 one never.
pub(super) fn horizontalpodautoscaler(o: &Value, now: i64) -> Row {
    let targets = match o.pointer("/spec/metrics") {
        Some(specs) if !specs.is_null() => metrics(specs.as_array().map_or(&[], Vec::as_slice), items(o, &["status", "currentMetrics"])),
        _ => {
            let (specs, statuses) = v1_metrics(o);
            metrics(&specs, &statuses)
        }
    };
    let min = o.pointer("/spec/minReplicas").and_then(Value::as_i64).map_or("<unset>".to_string(), |m| m.to_string());
    row(vec![
        name(o),
        text(format!("{}/{}", str_at(o, &["spec", "scaleTargetRef", "kind"]), str_at(o, &["spec", "scaleTargetRef", "name"]))),
        text(targets),
        text(min),
        Cell::Int(int_at(o, &["spec", "maxReplicas"])),
        Cell::Int(int_at(o, &["status", "currentReplicas"])),
        age(o, now),
    ])
}

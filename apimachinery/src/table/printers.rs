//! The printers kache has, each the apiserver's (`pkg/printers/internalversion`)
//! for its resource, wide columns included.

use serde_json::Value;

use super::time::since;
use super::{Cell, Printer, Row, columns};

static PODS: Printer = Printer { columns: columns::PODS, cells: pod };
static CONFIGMAPS: Printer = Printer { columns: columns::CONFIGMAPS, cells: configmap };
static SECRETS: Printer = Printer { columns: columns::SECRETS, cells: secret };
static NAMESPACES: Printer = Printer { columns: columns::NAMESPACES, cells: namespace };
static SERVICEACCOUNTS: Printer = Printer { columns: columns::SERVICEACCOUNTS, cells: serviceaccount };
static LEASES: Printer = Printer { columns: columns::LEASES, cells: lease };

pub(super) fn of(group: &str, plural: &str) -> Option<&'static Printer> {
    Some(match (group, plural) {
        ("", "pods") => &PODS,
        ("", "configmaps") => &CONFIGMAPS,
        ("", "secrets") => &SECRETS,
        ("", "namespaces") => &NAMESPACES,
        ("", "serviceaccounts") => &SERVICEACCOUNTS,
        ("coordination.k8s.io", "leases") => &LEASES,
        _ => return None,
    })
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(Value::as_str).unwrap_or("")
}

fn len_at(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_object).map_or(0, |m| m.len() as i64)
}

fn name(o: &Value) -> Cell {
    Cell::Str(str_at(o, &["metadata", "name"]).to_string())
}

fn age(o: &Value, now: i64) -> Cell {
    Cell::Str(since(o.pointer("/metadata/creationTimestamp").and_then(Value::as_str), now))
}

fn row(cells: Vec<Cell>) -> Row {
    Row { cells, conditions: None }
}

fn configmap(o: &Value, now: i64) -> Row {
    row(vec![name(o), Cell::Int(len_at(o, "data") + len_at(o, "binaryData")), age(o, now)])
}

fn secret(o: &Value, now: i64) -> Row {
    row(vec![name(o), Cell::Str(str_at(o, &["type"]).to_string()), Cell::Int(len_at(o, "data")), age(o, now)])
}

fn namespace(o: &Value, now: i64) -> Row {
    row(vec![name(o), Cell::Str(str_at(o, &["status", "phase"]).to_string()), age(o, now)])
}

fn serviceaccount(o: &Value, now: i64) -> Row {
    row(vec![name(o), age(o, now)])
}

fn lease(o: &Value, now: i64) -> Row {
    row(vec![name(o), Cell::Str(str_at(o, &["spec", "holderIdentity"]).to_string()), age(o, now)])
}

const POD_SUCCEEDED: &str =
    r#"[{"type":"Completed","status":"True","reason":"Succeeded","message":"The pod has completed successfully."}]"#;
const POD_FAILED: &str = r#"[{"type":"Completed","status":"True","reason":"Failed","message":"The pod failed."}]"#;

fn items<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn int_at(v: &Value, path: &[&str]) -> i64 {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(Value::as_i64).unwrap_or(0)
}

fn condition_true(status: &Value, typ: &str) -> bool {
    items(status, &["conditions"]).iter().any(|c| str_at(c, &["type"]) == typ && str_at(c, &["status"]) == "True")
}

/// The latest `lastState.terminated.finishedAt` seen, as Unix seconds and text.
#[derive(Default)]
struct LastRestart(Option<(i64, String)>);

impl LastRestart {
    fn see(&mut self, status: &Value) {
        let Some(at) = status.pointer("/lastState/terminated/finishedAt").and_then(Value::as_str) else { return };
        let Some(t) = super::time::parse_time(at) else { return };
        if self.0.as_ref().is_none_or(|(seen, _)| *seen < t) {
            self.0 = Some((t, at.to_string()));
        }
    }
}

/// `printPod`.
fn pod(o: &Value, now: i64) -> Row {
    let spec = o.get("spec").unwrap_or(&Value::Null);
    let status = o.get("status").unwrap_or(&Value::Null);
    let phase = str_at(status, &["phase"]);
    let mut reason = match str_at(status, &["reason"]) {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    if items(status, &["conditions"]).iter().any(|c| str_at(c, &["type"]) == "PodScheduled" && str_at(c, &["reason"]) == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let conditions = match phase {
        "Succeeded" => Some(POD_SUCCEEDED),
        "Failed" => Some(POD_FAILED),
        _ => None,
    };
    let init_containers = items(spec, &["initContainers"]);
    let restartable =
        |name: &str| init_containers.iter().any(|c| str_at(c, &["name"]) == name && str_at(c, &["restartPolicy"]) == "Always");
    let total = items(spec, &["containers"]).len() + init_containers.iter().filter(|c| str_at(c, &["restartPolicy"]) == "Always").count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut restartable_restarts = 0;
    let mut last_restart = LastRestart::default();
    let mut last_restartable_restart = LastRestart::default();
    let mut initializing = false;
    for (i, c) in items(status, &["initContainerStatuses"]).iter().enumerate() {
        let count = int_at(c, &["restartCount"]);
        restarts += count;
        last_restart.see(c);
        let is_restartable = restartable(str_at(c, &["name"]));
        if is_restartable {
            restartable_restarts += count;
            last_restartable_restart.see(c);
        }
        let terminated = c.pointer("/state/terminated");
        let waiting_reason = str_at(c, &["state", "waiting", "reason"]);
        if terminated.is_some_and(|t| int_at(t, &["exitCode"]) == 0) {
            continue;
        }
        if is_restartable && c.get("started").and_then(Value::as_bool) == Some(true) {
            if c.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            reason = match str_at(t, &["reason"]) {
                "" if int_at(t, &["signal"]) != 0 => format!("Init:Signal:{}", int_at(t, &["signal"])),
                "" => format!("Init:ExitCode:{}", int_at(t, &["exitCode"])),
                r => format!("Init:{r}"),
            };
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{i}/{}", init_containers.len());
        }
        initializing = true;
        break;
    }
    if !initializing || condition_true(status, "Initialized") {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for c in items(status, &["containerStatuses"]).iter().rev() {
            restarts += int_at(c, &["restartCount"]);
            last_restart.see(c);
            let waiting_reason = str_at(c, &["state", "waiting", "reason"]);
            let terminated = c.pointer("/state/terminated");
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(t) = terminated {
                reason = match str_at(t, &["reason"]) {
                    "" if int_at(t, &["signal"]) != 0 => format!("Signal:{}", int_at(t, &["signal"])),
                    "" => format!("ExitCode:{}", int_at(t, &["exitCode"])),
                    r => r.to_string(),
                };
            } else if c.get("ready").and_then(Value::as_bool) == Some(true) && c.pointer("/state/running").is_some() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if condition_true(status, "Ready") { "Running" } else { "NotReady" }.into();
        }
    }
    let deleting = o.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
    if deleting && str_at(status, &["reason"]) == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }
    let restarts_cell = match &last_restart.0 {
        Some((_, at)) if restarts != 0 => format!("{restarts} ({} ago)", since(Some(at), now)),
        _ => restarts.to_string(),
    };
    let or_none = |s: &str| if s.is_empty() { "<none>".to_string() } else { s.to_string() };
    let pod_ip = items(status, &["podIPs"]).first().map_or("", |ip| str_at(ip, &["ip"]));
    let gates = items(spec, &["readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = items(status, &["conditions"]);
        let met = gates
            .iter()
            .filter(|g| {
                let typ = str_at(g, &["conditionType"]);
                conditions.iter().find(|c| str_at(c, &["type"]) == typ).is_some_and(|c| str_at(c, &["status"]) == "True")
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    Row {
        cells: vec![
            name(o),
            Cell::Str(format!("{ready}/{total}")),
            Cell::Str(reason),
            Cell::Str(restarts_cell),
            age(o, now),
            Cell::Str(or_none(pod_ip)),
            Cell::Str(or_none(str_at(spec, &["nodeName"]))),
            Cell::Str(or_none(str_at(status, &["nominatedNodeName"]))),
            Cell::Str(readiness_gates),
        ],
        conditions,
    }
}

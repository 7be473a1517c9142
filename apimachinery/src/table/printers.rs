//! The printers kache has, each the apiserver's (`pkg/printers/internalversion`)
//! for its resource, wide columns included.

use serde_json::Value;

mod events;
mod network;
mod pod;
mod workloads;

use super::{Cell, Printer, Row, columns};
use crate::time::since;

static PODS: Printer = Printer { columns: columns::PODS, cells: pod::row };
static CONFIGMAPS: Printer = Printer { columns: columns::CONFIGMAPS, cells: |b, now| parsed(b, now, configmap) };
static SECRETS: Printer = Printer { columns: columns::SECRETS, cells: |b, now| parsed(b, now, secret) };
static NAMESPACES: Printer = Printer { columns: columns::NAMESPACES, cells: |b, now| parsed(b, now, namespace) };
static SERVICEACCOUNTS: Printer = Printer { columns: columns::SERVICEACCOUNTS, cells: |b, now| parsed(b, now, serviceaccount) };
static LEASES: Printer = Printer { columns: columns::LEASES, cells: |b, now| parsed(b, now, lease) };
static NODES: Printer = Printer { columns: columns::NODES, cells: |b, now| parsed(b, now, workloads::node) };
static DEPLOYMENTS: Printer = Printer { columns: columns::DEPLOYMENTS, cells: |b, now| parsed(b, now, workloads::deployment) };
static REPLICASETS: Printer = Printer { columns: columns::REPLICASETS, cells: |b, now| parsed(b, now, workloads::replicaset) };
static DAEMONSETS: Printer = Printer { columns: columns::DAEMONSETS, cells: |b, now| parsed(b, now, workloads::daemonset) };
static STATEFULSETS: Printer = Printer { columns: columns::STATEFULSETS, cells: |b, now| parsed(b, now, workloads::statefulset) };
static JOBS: Printer = Printer { columns: columns::JOBS, cells: |b, now| parsed(b, now, workloads::job) };
static EVENTS: Printer = Printer { columns: columns::EVENTS, cells: |b, now| parsed(b, now, events::event) };
static ENDPOINTS: Printer = Printer { columns: columns::ENDPOINTS, cells: |b, now| parsed(b, now, workloads::endpoints) };
static CRONJOBS: Printer = Printer { columns: columns::CRONJOBS, cells: |b, now| parsed(b, now, workloads::cronjob) };
static INGRESSES: Printer = Printer { columns: columns::INGRESSES, cells: |b, now| parsed(b, now, network::ingress) };
static PERSISTENTVOLUMECLAIMS: Printer =
    Printer { columns: columns::PERSISTENTVOLUMECLAIMS, cells: |b, now| parsed(b, now, network::persistentvolumeclaim) };
static ENDPOINTSLICES: Printer = Printer { columns: columns::ENDPOINTSLICES, cells: |b, now| parsed(b, now, network::endpointslice) };
static SERVICES: Printer = Printer { columns: columns::SERVICES, cells: |b, now| parsed(b, now, workloads::service) };

/// A row from the object parsed whole (small objects).
fn parsed(bytes: &[u8], now: i64, cells: fn(&Value, i64) -> Row) -> Option<Row> {
    Some(cells(&serde_json::from_slice(bytes).ok()?, now))
}

pub(super) fn of(group: &str, plural: &str) -> Option<&'static Printer> {
    Some(match (group, plural) {
        ("", "pods") => &PODS,
        ("", "configmaps") => &CONFIGMAPS,
        ("", "secrets") => &SECRETS,
        ("", "namespaces") => &NAMESPACES,
        ("", "serviceaccounts") => &SERVICEACCOUNTS,
        ("coordination.k8s.io", "leases") => &LEASES,
        ("", "nodes") => &NODES,
        ("", "services") => &SERVICES,
        ("", "endpoints") => &ENDPOINTS,
        ("", "events") => &EVENTS,
        ("apps", "deployments") => &DEPLOYMENTS,
        ("apps", "replicasets") => &REPLICASETS,
        ("apps", "daemonsets") => &DAEMONSETS,
        ("apps", "statefulsets") => &STATEFULSETS,
        ("batch", "jobs") => &JOBS,
        ("batch", "cronjobs") => &CRONJOBS,
        ("networking.k8s.io", "ingresses") => &INGRESSES,
        ("discovery.k8s.io", "endpointslices") => &ENDPOINTSLICES,
        ("", "persistentvolumeclaims") => &PERSISTENTVOLUMECLAIMS,
        _ => return None,
    })
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(Value::as_str).unwrap_or("")
}

fn items<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn int_at(v: &Value, path: &[&str]) -> i64 {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(Value::as_i64).unwrap_or(0)
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

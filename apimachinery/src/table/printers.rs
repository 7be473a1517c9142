//! The printers kache has, each the apiserver's (`pkg/printers/internalversion`)
//! for its resource, wide columns included.

use serde_json::Value;

mod events;
mod network;
mod pod;
mod workloads;

use std::sync::Arc;

use super::{Cell, Printer, Row, columns};
use crate::time::since;

/// A row from the object parsed whole (small objects).
fn parsed(bytes: &[u8], now: i64, cells: fn(&Value, i64) -> Row) -> Option<Row> {
    Some(cells(&serde_json::from_slice(bytes).ok()?, now))
}

pub(super) fn of(group: &str, plural: &str) -> Option<Arc<Printer>> {
    let (columns, cells): (&'static str, super::RowFn) = match (group, plural) {
        ("", "pods") => (columns::PODS, pod::row),
        ("", "configmaps") => (columns::CONFIGMAPS, |b, now| parsed(b, now, configmap)),
        ("", "secrets") => (columns::SECRETS, |b, now| parsed(b, now, secret)),
        ("", "namespaces") => (columns::NAMESPACES, |b, now| parsed(b, now, namespace)),
        ("", "serviceaccounts") => (columns::SERVICEACCOUNTS, |b, now| parsed(b, now, serviceaccount)),
        ("coordination.k8s.io", "leases") => (columns::LEASES, |b, now| parsed(b, now, lease)),
        ("", "nodes") => (columns::NODES, |b, now| parsed(b, now, workloads::node)),
        ("", "services") => (columns::SERVICES, |b, now| parsed(b, now, workloads::service)),
        ("", "endpoints") => (columns::ENDPOINTS, |b, now| parsed(b, now, workloads::endpoints)),
        ("", "events") => (columns::EVENTS, |b, now| parsed(b, now, events::event)),
        ("apps", "deployments") => (columns::DEPLOYMENTS, |b, now| parsed(b, now, workloads::deployment)),
        ("apps", "replicasets") => (columns::REPLICASETS, |b, now| parsed(b, now, workloads::replicaset)),
        ("apps", "daemonsets") => (columns::DAEMONSETS, |b, now| parsed(b, now, workloads::daemonset)),
        ("apps", "statefulsets") => (columns::STATEFULSETS, |b, now| parsed(b, now, workloads::statefulset)),
        ("batch", "jobs") => (columns::JOBS, |b, now| parsed(b, now, workloads::job)),
        ("batch", "cronjobs") => (columns::CRONJOBS, |b, now| parsed(b, now, workloads::cronjob)),
        ("networking.k8s.io", "ingresses") => (columns::INGRESSES, |b, now| parsed(b, now, network::ingress)),
        ("discovery.k8s.io", "endpointslices") => (columns::ENDPOINTSLICES, |b, now| parsed(b, now, network::endpointslice)),
        ("", "persistentvolumeclaims") => (columns::PERSISTENTVOLUMECLAIMS, |b, now| parsed(b, now, network::persistentvolumeclaim)),
        // Served with the default table convertor.
        ("apiextensions.k8s.io", "customresourcedefinitions") => (columns::CREATED_AT, super::custom::created_at_row),
        _ => return None,
    };
    Some(Arc::new(Printer::builtin(columns, cells)))
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

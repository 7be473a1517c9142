//! The printers kache has, each the apiserver's (`pkg/printers/internalversion`)
//! for its resource, wide columns included.

use serde_json::Value;

mod admission;
mod autoscaling;
mod cluster;
mod events;
mod network;
mod pod;
mod policy;
mod rbac;
mod resource;
mod storage;
mod workloads;

use std::sync::Arc;

use super::{Cell, Printer, Row, columns};
use crate::time::since;

/// A row from the object parsed whole (small objects).
fn parsed(bytes: &[u8], now: i64, cells: fn(&Value, i64) -> Row) -> Option<Row> {
    Some(cells(&serde_json::from_slice(bytes).ok()?, now))
}

/// [`parsed`] for printers that leave some objects to the apiserver (`None`).
fn parsed_or_none(bytes: &[u8], now: i64, cells: fn(&Value, i64) -> Option<Row>) -> Option<Row> {
    cells(&serde_json::from_slice(bytes).ok()?, now)
}

/// The apiserver's printer of `plural` of `group`: its columns, its cells
/// and, where it sorts a list's rows (flow schemas, by matching
/// precedence, then name), that order.
pub(super) fn of(group: &str, plural: &str) -> Option<Arc<Printer>> {
    let (columns, cells): (&'static str, super::RowFn) = match (group, plural) {
        ("", "pods") => (columns::PODS, pod::row),
        ("", "configmaps") => (columns::CONFIGMAPS, |b, now| parsed(b, now, configmap)),
        ("", "secrets") => (columns::SECRETS, |b, now| parsed(b, now, secret)),
        ("", "namespaces") => (columns::NAMESPACES, |b, now| parsed(b, now, namespace)),
        ("", "serviceaccounts") => (columns::SERVICEACCOUNTS, |b, now| parsed(b, now, name_age)),
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
        ("", "persistentvolumeclaims") => (columns::PERSISTENTVOLUMECLAIMS, |b, now| parsed(b, now, storage::persistentvolumeclaim)),
        ("", "persistentvolumes") => (columns::PERSISTENTVOLUMES, |b, now| parsed(b, now, storage::persistentvolume)),
        ("", "podtemplates") => (columns::PODTEMPLATES, |b, now| parsed(b, now, workloads::podtemplate)),
        ("", "replicationcontrollers") => (columns::REPLICATIONCONTROLLERS, |b, now| parsed(b, now, workloads::replicationcontroller)),
        ("", "resourcequotas") => (columns::RESOURCEQUOTAS, |b, now| parsed(b, now, policy::resourcequota)),
        ("", "componentstatuses") => (columns::COMPONENTSTATUSES, |b, now| parsed(b, now, cluster::componentstatus)),
        ("apps", "controllerrevisions") => (columns::CONTROLLERREVISIONS, |b, now| parsed_or_none(b, now, workloads::controllerrevision)),
        ("events.k8s.io", "events") => (columns::EVENTS, |b, now| parsed(b, now, events::event_v1)),
        ("autoscaling", "horizontalpodautoscalers") => {
            (columns::HORIZONTALPODAUTOSCALERS, |b, now| parsed(b, now, autoscaling::horizontalpodautoscaler))
        }
        ("policy", "poddisruptionbudgets") => (columns::PODDISRUPTIONBUDGETS, |b, now| parsed(b, now, policy::poddisruptionbudget)),
        ("rbac.authorization.k8s.io", "rolebindings") => (columns::ROLEBINDINGS, |b, now| parsed(b, now, rbac::binding)),
        ("rbac.authorization.k8s.io", "clusterrolebindings") => (columns::CLUSTERROLEBINDINGS, |b, now| parsed(b, now, rbac::binding)),
        ("networking.k8s.io", "ingressclasses") => (columns::INGRESSCLASSES, |b, now| parsed(b, now, network::ingressclass)),
        ("networking.k8s.io", "networkpolicies") => (columns::NETWORKPOLICIES, |b, now| parsed(b, now, network::networkpolicy)),
        ("networking.k8s.io", "servicecidrs") => (columns::SERVICECIDRS, |b, now| parsed(b, now, network::servicecidr)),
        ("networking.k8s.io", "ipaddresses") => (columns::IPADDRESSES, |b, now| parsed(b, now, network::ipaddress)),
        ("storage.k8s.io", "storageclasses") => (columns::STORAGECLASSES, |b, now| parsed(b, now, storage::storageclass)),
        ("storage.k8s.io", "volumeattributesclasses") => {
            (columns::VOLUMEATTRIBUTESCLASSES, |b, now| parsed(b, now, storage::volumeattributesclass))
        }
        ("storage.k8s.io", "volumeattachments") => (columns::VOLUMEATTACHMENTS, |b, now| parsed(b, now, storage::volumeattachment)),
        ("storage.k8s.io", "csidrivers") => (columns::CSIDRIVERS, |b, now| parsed(b, now, storage::csidriver)),
        ("storage.k8s.io", "csinodes") => (columns::CSINODES, |b, now| parsed(b, now, storage::csinode)),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations" | "mutatingwebhookconfigurations") => {
            (columns::WEBHOOK_CONFIGURATIONS, |b, now| parsed(b, now, admission::webhooks))
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            (columns::VALIDATINGADMISSIONPOLICIES, |b, now| parsed(b, now, admission::validating_policy))
        }
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies") => {
            (columns::MUTATINGADMISSIONPOLICIES, |b, now| parsed(b, now, admission::mutating_policy))
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings" | "mutatingadmissionpolicybindings") => {
            (columns::ADMISSION_POLICY_BINDINGS, |b, now| parsed_or_none(b, now, admission::binding))
        }
        ("apiregistration.k8s.io", "apiservices") => (columns::APISERVICES, |b, now| parsed(b, now, cluster::apiservice)),
        ("flowcontrol.apiserver.k8s.io", "flowschemas") => (columns::FLOWSCHEMAS, |b, now| parsed(b, now, cluster::flowschema)),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations") => {
            (columns::PRIORITYLEVELCONFIGURATIONS, |b, now| parsed(b, now, cluster::prioritylevelconfiguration))
        }
        ("scheduling.k8s.io", "priorityclasses") => (columns::PRIORITYCLASSES, |b, now| parsed(b, now, cluster::priorityclass)),
        ("node.k8s.io", "runtimeclasses") => (columns::RUNTIMECLASSES, |b, now| parsed(b, now, cluster::runtimeclass)),
        ("certificates.k8s.io", "certificatesigningrequests") => {
            (columns::CERTIFICATESIGNINGREQUESTS, |b, now| parsed(b, now, cluster::certificatesigningrequest))
        }
        ("resource.k8s.io", "deviceclasses" | "resourceclaimtemplates") => (columns::SERVICEACCOUNTS, |b, now| parsed(b, now, name_age)),
        ("resource.k8s.io", "resourceclaims") => (columns::RESOURCECLAIMS, |b, now| parsed(b, now, resource::resourceclaim)),
        ("resource.k8s.io", "resourceslices") => (columns::RESOURCESLICES, |b, now| parsed(b, now, resource::resourceslice)),
        // Served with the default table convertor (no printer registered for the kind).
        ("apiextensions.k8s.io", "customresourcedefinitions")
        | ("", "limitranges")
        | ("rbac.authorization.k8s.io", "roles" | "clusterroles")
        | ("storage.k8s.io", "csistoragecapacities") => (columns::CREATED_AT, super::custom::created_at_row),
        _ => return None,
    };
    let printer = Printer::builtin(columns, cells);
    Some(Arc::new(match (group, plural) {
        ("flowcontrol.apiserver.k8s.io", "flowschemas") => printer.ordered(cluster::flowschema_order),
        // The aggregator's table convertor ignores `NoHeaders`.
        ("apiregistration.k8s.io", "apiservices") => printer.with_columns_on_every_event(),
        _ => printer,
    }))
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

fn text(s: impl Into<String>) -> Cell {
    Cell::Str(s.into())
}

/// `labels.FormatLabels`: `k=v` pairs in key order, or `<none>`.
fn format_labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<(&str, &str)> =
        map.and_then(Value::as_object).map(|m| m.iter().map(|(k, v)| (k.as_str(), v.as_str().unwrap_or(""))).collect()).unwrap_or_default();
    if pairs.is_empty() {
        return "<none>".into();
    }
    pairs.sort();
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// `metav1.FormatLabelSelector`: [`selector`], `<none>` when it selects everything or nothing.
fn format_selector(s: Option<&Value>) -> String {
    match selector(s) {
        s if s.is_empty() => "<none>".to_string(),
        s => s,
    }
}

/// Whether `o` is a kind's empty object (a bookmark's: no name), which the
/// apiserver prints as it is, where objects read from storage come defaulted.
fn is_empty_object(o: &Value) -> bool {
    o.pointer("/metadata/name").is_none()
}

/// `metav1.LabelSelectorAsSelector(s).String()`: requirements in key order.
fn selector(s: Option<&Value>) -> String {
    let Some(s) = s.filter(|s| !s.is_null()) else { return String::new() };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = s.get("matchLabels").and_then(Value::as_object) {
        reqs.extend(m.iter().map(|(k, v)| (k.clone(), format!("{k}={}", v.as_str().unwrap_or("")))));
    }
    for e in items(s, &["matchExpressions"]) {
        let key = str_at(e, &["key"]);
        let mut values: Vec<&str> = items(e, &["values"]).iter().filter_map(Value::as_str).collect();
        values.sort_unstable();
        let text = match str_at(e, &["operator"]) {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return "<error>".into(),
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(",")
}

/// A boolean field as a JSON boolean cell, `default` when absent.
fn flag(o: &Value, path: &[&str], default: bool) -> Cell {
    let value = path.iter().try_fold(o, |v, k| v.get(k)).and_then(Value::as_bool).unwrap_or(default);
    Cell::Raw(value.to_string())
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

/// Name and Age: service accounts, device classes, resource claim templates.
fn name_age(o: &Value, now: i64) -> Row {
    row(vec![name(o), age(o, now)])
}

fn lease(o: &Value, now: i64) -> Row {
    row(vec![name(o), Cell::Str(str_at(o, &["spec", "holderIdentity"]).to_string()), age(o, now)])
}

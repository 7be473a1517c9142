//! Printers of ingresses, endpoint slices and persistent volume claims.

use serde_json::Value;

use super::super::{Cell, Row};
use super::{age, items, name, row, str_at};

fn text(s: impl Into<String>) -> Cell {
    Cell::Str(s.into())
}

/// `printIngress`.
pub(super) fn ingress(o: &Value, now: i64) -> Row {
    const MAX: usize = 3;
    let rules = items(o, &["spec", "rules"]);
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for r in rules {
        if hosts.len() == MAX {
            more = true;
        }
        let host = str_at(r, &["host"]);
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    let hosts = match (hosts.is_empty(), more) {
        (true, _) => "*".to_string(),
        (false, true) => format!("{} + {} more...", hosts.join(","), rules.len() - MAX),
        (false, false) => hosts.join(","),
    };
    let address: Vec<&str> = items(o, &["status", "loadBalancer", "ingress"])
        .iter()
        .filter_map(|i| [str_at(i, &["ip"]), str_at(i, &["hostname"])].into_iter().find(|s| !s.is_empty()))
        .collect();
    let class = match str_at(o, &["spec", "ingressClassName"]) {
        "" => "<none>",
        c => c,
    };
    let ports = if items(o, &["spec", "tls"]).is_empty() { "80" } else { "80, 443" };
    row(vec![name(o), text(class), text(hosts), text(address.join(",")), text(ports), age(o, now)])
}

/// `printEndpointSlice`.
pub(super) fn endpointslice(o: &Value, now: i64) -> Row {
    let ports = items(o, &["ports"]).iter().map(|p| match (p.get("port").and_then(Value::as_i64), p.get("name").and_then(Value::as_str)) {
        (Some(port), _) => port.to_string(),
        (None, Some(name)) => name.to_string(),
        (None, None) => "*".to_string(),
    });
    let addresses =
        items(o, &["endpoints"]).iter().flat_map(|e| items(e, &["addresses"])).map(|a| a.as_str().unwrap_or_default().to_string());
    row(vec![name(o), text(str_at(o, &["addressType"])), text(list_with_more(ports)), text(list_with_more(addresses)), age(o, now)])
}

/// `listWithMoreString` over the first three of `all`.
fn list_with_more(all: impl Iterator<Item = String>) -> String {
    const MAX: usize = 3;
    let (mut list, mut count) = (Vec::new(), 0);
    for s in all {
        if list.len() < MAX {
            list.push(s);
        }
        count += 1;
    }
    match (list.join(","), count > MAX) {
        (l, true) => format!("{l} + {} more...", count - MAX),
        (l, false) if l.is_empty() => "<unset>".to_string(),
        (l, false) => l,
    }
}

/// `printPersistentVolumeClaim`.
pub(super) fn persistentvolumeclaim(o: &Value, now: i64) -> Row {
    let deleting = o.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
    let phase = if deleting { "Terminating" } else { str_at(o, &["status", "phase"]) };
    let volume = str_at(o, &["spec", "volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        let modes: Vec<&str> = items(o, &["status", "accessModes"]).iter().filter_map(Value::as_str).collect();
        let short = [("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP")]
            .iter()
            .filter(|(mode, _)| modes.contains(mode))
            .map(|(_, s)| *s)
            .collect::<Vec<_>>()
            .join(",");
        (str_at(o, &["status", "capacity", "storage"]).to_string(), short)
    };
    let class = match str_at(o, &["metadata", "annotations", "volume.beta.kubernetes.io/storage-class"]) {
        "" => str_at(o, &["spec", "storageClassName"]),
        beta => beta,
    };
    let unset = |s: &str| if s.is_empty() { "<unset>".to_string() } else { s.to_string() };
    row(vec![
        name(o),
        text(phase),
        text(volume),
        text(capacity),
        text(modes),
        text(class),
        text(unset(str_at(o, &["spec", "volumeAttributesClassName"]))),
        age(o, now),
        text(unset(str_at(o, &["spec", "volumeMode"]))),
    ])
}

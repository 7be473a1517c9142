//! Printers of the networking kinds: ingresses and ingress classes,
//! endpoint slices, network policies, service CIDRs and IP addresses.

use serde_json::Value;

use super::super::Row;
use super::{age, items, name, row, selector, str_at, text};

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

/// `printIngressClass`.
pub(super) fn ingressclass(o: &Value, now: i64) -> Row {
    let mut class = str_at(o, &["metadata", "name"]).to_string();
    if str_at(o, &["metadata", "annotations", "ingressclass.kubernetes.io/is-default-class"]) == "true" {
        class.push_str(" (default)");
    }
    let parameters = match o.pointer("/spec/parameters").filter(|p| p.is_object()) {
        None => "<none>".to_string(),
        Some(p) => match p.get("apiGroup").and_then(Value::as_str) {
            Some(group) => format!("{}.{group}/{}", str_at(p, &["kind"]), str_at(p, &["name"])),
            None => format!("{}/{}", str_at(p, &["kind"]), str_at(p, &["name"])),
        },
    };
    row(vec![text(class), text(str_at(o, &["spec", "controller"])), text(parameters), age(o, now)])
}

/// `printNetworkPolicy`: the pod selector as `metav1.FormatLabelSelector` writes it.
pub(super) fn networkpolicy(o: &Value, now: i64) -> Row {
    let pods = match selector(o.pointer("/spec/podSelector")) {
        s if s.is_empty() => "<none>".to_string(),
        s => s,
    };
    row(vec![name(o), text(pods), age(o, now)])
}

/// `printServiceCIDR`.
pub(super) fn servicecidr(o: &Value, now: i64) -> Row {
    let cidrs: Vec<&str> = items(o, &["spec", "cidrs"]).iter().filter_map(Value::as_str).collect();
    row(vec![name(o), text(cidrs.join(",")), age(o, now)])
}

/// `printIPAddress`: three cells, though the table declares two columns (the apiserver's own mismatch).
pub(super) fn ipaddress(o: &Value, now: i64) -> Row {
    let parent = match o.pointer("/spec/parentRef").filter(|p| p.is_object()) {
        None => "<none>".to_string(),
        Some(p) => {
            let resource = match (str_at(p, &["resource"]), str_at(p, &["group"])) {
                (r, "") => r.to_lowercase(),
                (r, g) => format!("{r}.{g}").to_lowercase(),
            };
            match str_at(p, &["namespace"]) {
                "" => format!("{resource}/{}", str_at(p, &["name"])),
                ns => format!("{resource}/{ns}/{}", str_at(p, &["name"])),
            }
        }
    };
    row(vec![name(o), text(parent), age(o, now)])
}

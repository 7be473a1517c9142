//! Printers of nodes, services and the workload controllers (deployments,
//! replica sets, daemon sets, stateful sets, jobs), wide columns included.

use serde_json::Value;

use super::super::{Cell, Row};
use super::{age, format_labels, format_selector, int_at, items, name, row, selector, str_at, text};
use crate::time::{human_duration, parse_time, since};

/// `layoutContainerCells`: the template's container names and images, comma-joined.
fn containers(o: &Value) -> (Cell, Cell) {
    containers_at(o, &["spec", "template", "spec", "containers"])
}

pub(super) fn containers_at(o: &Value, path: &[&str]) -> (Cell, Cell) {
    let cs = items(o, path);
    let join = |key: &str| cs.iter().map(|c| str_at(c, &[key])).collect::<Vec<_>>().join(",");
    (text(join("name")), text(join("image")))
}

fn condition_true(o: &Value, typ: &str) -> bool {
    items(o, &["status", "conditions"]).iter().any(|c| str_at(c, &["type"]) == typ && str_at(c, &["status"]) == "True")
}

/// `printNode`.
pub(super) fn node(o: &Value, now: i64) -> Row {
    let mut status: Vec<String> = items(o, &["status", "conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == "Ready")
        .map(|c| if str_at(c, &["status"]) == "True" { "Ready".into() } else { "NotReady".into() })
        .into_iter()
        .collect();
    if status.is_empty() {
        status.push("Unknown".into());
    }
    if o.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".into());
    }
    let mut roles: Vec<&str> = o
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) => Some(role),
            None if k == "kubernetes.io/role" => v.as_str(),
            None => None,
        })
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort_unstable();
    roles.dedup();
    let address = |typ: &str| {
        items(o, &["status", "addresses"])
            .iter()
            .find(|a| str_at(a, &["type"]) == typ)
            .map_or("<none>".to_string(), |a| str_at(a, &["address"]).to_string())
    };
    let info = |key: &str| match str_at(o, &["status", "nodeInfo", key]) {
        "" => "<unknown>".to_string(),
        v => v.to_string(),
    };
    let kernel = match (info("kernelVersion"), str_at(o, &["status", "nodeInfo", "architecture"])) {
        (k, "") => k,
        (k, arch) => format!("{k} ({arch})"),
    };
    row(vec![
        name(o),
        text(status.join(",")),
        text(if roles.is_empty() { "<none>".to_string() } else { roles.join(",") }),
        age(o, now),
        text(str_at(o, &["status", "nodeInfo", "kubeletVersion"])),
        text(address("InternalIP")),
        text(address("ExternalIP")),
        text(info("osImage")),
        text(kernel),
        text(info("containerRuntimeVersion")),
    ])
}

/// `printDeployment`.
pub(super) fn deployment(o: &Value, now: i64) -> Row {
    let (names, images) = containers(o);
    row(vec![
        name(o),
        text(format!("{}/{}", int_at(o, &["status", "readyReplicas"]), int_at(o, &["spec", "replicas"]))),
        Cell::Int(int_at(o, &["status", "updatedReplicas"])),
        Cell::Int(int_at(o, &["status", "availableReplicas"])),
        age(o, now),
        names,
        images,
        text(selector(o.pointer("/spec/selector"))),
    ])
}

/// `printReplicaSet`.
pub(super) fn replicaset(o: &Value, now: i64) -> Row {
    replicas(o, now, text(format_selector(o.pointer("/spec/selector"))))
}

/// The row of a ReplicaSet or a ReplicationController, whose selectors
/// differ in type (a `LabelSelector`, a map of labels).
fn replicas(o: &Value, now: i64, selector: Cell) -> Row {
    let (names, images) = containers(o);
    row(vec![
        name(o),
        Cell::Int(int_at(o, &["spec", "replicas"])),
        Cell::Int(int_at(o, &["status", "replicas"])),
        Cell::Int(int_at(o, &["status", "readyReplicas"])),
        age(o, now),
        names,
        images,
        selector,
    ])
}

/// `printDaemonSet`.
pub(super) fn daemonset(o: &Value, now: i64) -> Row {
    let (names, images) = containers(o);
    let status = |key: &str| Cell::Int(int_at(o, &["status", key]));
    row(vec![
        name(o),
        status("desiredNumberScheduled"),
        status("currentNumberScheduled"),
        status("numberReady"),
        status("updatedNumberScheduled"),
        status("numberAvailable"),
        text(format_labels(o.pointer("/spec/template/spec/nodeSelector"))),
        age(o, now),
        names,
        images,
        text(format_selector(o.pointer("/spec/selector"))),
    ])
}

/// `printStatefulSet`.
pub(super) fn statefulset(o: &Value, now: i64) -> Row {
    let (names, images) = containers(o);
    row(vec![
        name(o),
        text(format!("{}/{}", int_at(o, &["status", "readyReplicas"]), int_at(o, &["spec", "replicas"]))),
        age(o, now),
        names,
        images,
    ])
}

/// `printJob`.
pub(super) fn job(o: &Value, now: i64) -> Row {
    let succeeded = int_at(o, &["status", "succeeded"]);
    let completions = match o.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int_at(o, &["spec", "parallelism"]) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = o.pointer("/status/startTime").and_then(Value::as_str).and_then(parse_time);
    let end = o.pointer("/status/completionTime").and_then(Value::as_str).and_then(parse_time);
    let duration = match (start, end) {
        (None, _) => String::new(),
        (Some(s), None) => human_duration(now - s),
        (Some(s), Some(e)) => human_duration(e - s),
    };
    let deleting = o.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
    let status = if condition_true(o, "Complete") {
        "Complete"
    } else if condition_true(o, "Failed") {
        "Failed"
    } else if deleting {
        "Terminating"
    } else if condition_true(o, "Suspended") {
        "Suspended"
    } else if condition_true(o, "FailureTarget") {
        "FailureTarget"
    } else if condition_true(o, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let (names, images) = containers(o);
    row(vec![
        name(o),
        text(status),
        text(completions),
        text(duration),
        age(o, now),
        names,
        images,
        text(format_selector(o.pointer("/spec/selector"))),
    ])
}

/// `printEndpoints`: up to three `ip:port` pairs of the ready addresses, then how many more.
pub(super) fn endpoints(o: &Value, now: i64) -> Row {
    const MAX: usize = 3;
    let subsets = items(o, &["subsets"]);
    let mut list: Vec<String> = Vec::new();
    let (mut count, mut more) = (0, false);
    for ss in subsets {
        let addresses = items(ss, &["addresses"]);
        let ports = items(ss, &["ports"]);
        if ports.is_empty() {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(str_at(a, &["ip"]).to_string());
            }
            continue;
        }
        for p in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                let ip = str_at(a, &["ip"]);
                // `net.JoinHostPort`: IPv6 addresses in brackets.
                let host = if ip.contains(':') { format!("[{ip}]") } else { ip.to_string() };
                list.push(format!("{host}:{}", int_at(p, &["port"])));
            }
        }
    }
    let cell = match (subsets.is_empty(), more) {
        (true, _) => "<none>".to_string(),
        (false, true) => format!("{} + {} more...", list.join(","), count - MAX),
        (false, false) => list.join(","),
    };
    row(vec![name(o), text(cell), age(o, now)])
}

/// `printCronJob`.
pub(super) fn cronjob(o: &Value, now: i64) -> Row {
    let (names, images) = containers_at(o, &["spec", "jobTemplate", "spec", "template", "spec", "containers"]);
    let last = o.pointer("/status/lastScheduleTime").and_then(Value::as_str).map_or("<none>".to_string(), |t| since(Some(t), now));
    let suspend = match o.pointer("/spec/suspend").and_then(Value::as_bool) {
        None => "<unset>",
        Some(true) => "True",
        Some(false) => "False",
    };
    let selector = format_selector(o.pointer("/spec/jobTemplate/spec/selector"));
    row(vec![
        name(o),
        text(str_at(o, &["spec", "schedule"])),
        text(match str_at(o, &["spec", "timeZone"]) {
            "" => "<none>",
            tz => tz,
        }),
        text(suspend),
        Cell::Int(items(o, &["status", "active"]).len() as i64),
        text(last),
        age(o, now),
        names,
        images,
        text(selector),
    ])
}

/// `printService`.
pub(super) fn service(o: &Value, now: i64) -> Row {
    let typ = str_at(o, &["spec", "type"]);
    let cluster_ip = items(o, &["spec", "clusterIPs"]).first().and_then(Value::as_str).unwrap_or("<none>");
    let external_ips: Vec<&str> = items(o, &["spec", "externalIPs"]).iter().filter_map(Value::as_str).collect();
    let external = match typ {
        "ClusterIP" | "NodePort" if !external_ips.is_empty() => external_ips.join(","),
        "ClusterIP" | "NodePort" => "<none>".into(),
        "LoadBalancer" => {
            let lb: Vec<&str> = items(o, &["status", "loadBalancer", "ingress"])
                .iter()
                .filter_map(|i| [str_at(i, &["ip"]), str_at(i, &["hostname"])].into_iter().find(|s| !s.is_empty()))
                .collect();
            match (lb.is_empty(), external_ips.is_empty()) {
                (_, false) => lb.iter().chain(&external_ips).copied().collect::<Vec<_>>().join(","),
                (false, true) => lb.join(","),
                (true, true) => "<pending>".into(),
            }
        }
        "ExternalName" => str_at(o, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".into(),
    };
    let ports = items(o, &["spec", "ports"])
        .iter()
        .map(|p| {
            let (port, protocol, node_port) = (int_at(p, &["port"]), str_at(p, &["protocol"]), int_at(p, &["nodePort"]));
            if node_port > 0 { format!("{port}:{node_port}/{protocol}") } else { format!("{port}/{protocol}") }
        })
        .collect::<Vec<_>>()
        .join(",");
    row(vec![
        name(o),
        text(typ),
        text(cluster_ip),
        text(external),
        text(if ports.is_empty() { "<none>".to_string() } else { ports }),
        age(o, now),
        text(format_labels(o.pointer("/spec/selector"))),
    ])
}

/// `printPodTemplate`.
pub(super) fn podtemplate(o: &Value, _now: i64) -> Row {
    let (names, images) = containers_at(o, &["template", "spec", "containers"]);
    row(vec![name(o), names, images, text(format_labels(o.pointer("/template/metadata/labels")))])
}

/// `printReplicationController`.
pub(super) fn replicationcontroller(o: &Value, now: i64) -> Row {
    replicas(o, now, text(format_labels(o.pointer("/spec/selector"))))
}

/// `printControllerRevision`: the controller as `kind.group/name`, lowercased.
pub(super) fn controllerrevision(o: &Value, now: i64) -> Option<Row> {
    let controller =
        match items(o, &["metadata", "ownerReferences"]).iter().find(|r| r.get("controller").and_then(Value::as_bool) == Some(true)) {
            None => "<none>".to_string(),
            Some(r) => {
                let group = match str_at(r, &["apiVersion"]).split('/').collect::<Vec<_>>()[..] {
                    [_] => "",
                    [group, _] => group,
                    _ => return None,
                };
                match (str_at(r, &["kind"]), group) {
                    ("", "") => str_at(r, &["name"]).to_string(),
                    (kind, "") => format!("{}/{}", kind.to_lowercase(), str_at(r, &["name"])),
                    (kind, group) => format!("{}/{}", format!("{kind}.{group}").to_lowercase(), str_at(r, &["name"])),
                }
            }
        };
    Some(row(vec![name(o), text(controller), Cell::Int(int_at(o, &["revision"])), age(o, now)]))
}

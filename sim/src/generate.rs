//! Realistic objects in bulk and a churn driver.
//!
//! Pods follow `pod-template.json` (a 4.6 KB pod of a ReplicaSet captured
//! from kube-apiserver 1.36): each gets its own name, namespace, labels,
//! owner, node, phase and IP. Churn writes creates, updates and deletes at
//! a set rate, spread over namespaces and nodes.
//!
//! Generation reports its progress: a bar on a terminal, otherwise a log
//! line per tenth (for workloads large enough to take a while).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rand::Rng;
use serde_json::{Value, json};

use crate::db::{Db, Preconditions};
use crate::resources::ResourceId;
use crate::state::State;
use crate::workload::Workload;

const POD_TEMPLATE: &str = include_str!("pod-template.json");

/// Objects inserted writes-at-a-time while holding the lock (readers get a turn in between).
const BATCH: usize = 2_000;

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

fn namespace_name(i: usize) -> String {
    format!("ns-{i:04}")
}

fn node_name(i: usize) -> String {
    format!("node-{i:04}")
}

/// The i-th generated pod.
pub fn pod(i: usize, nodes: usize, namespaces: usize) -> (String, Value) {
    let mut v: Value = serde_json::from_str(POD_TEMPLATE).expect("the template is JSON");
    let deployment = i / 10;
    let ns = namespace_name(i % namespaces.max(1));
    let name = format!("app-{deployment:05}-{i:07}");
    let meta = &mut v["metadata"];
    meta["name"] = json!(name);
    meta["namespace"] = json!(ns);
    let tier = ["web", "db", "cache"][i % 3];
    meta["labels"] = json!({"app": format!("app-{deployment}"), "pod-template-hash": format!("{:010x}", deployment * 7919), "tier": tier});
    meta["ownerReferences"][0]["name"] = json!(format!("app-{deployment:05}-7c9f8d6b5"));
    meta["ownerReferences"][0]["uid"] = json!(format!("0b9c8f3e-3b0a-4c7e-9a55-{deployment:012}"));
    v["spec"]["nodeName"] = json!(node_name(i % nodes.max(1)));
    v["status"] = if i % 10 == 9 {
        json!({"phase": "Pending", "qosClass": "Burstable"})
    } else {
        json!({"phase": "Running", "podIP": format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255), "qosClass": "Burstable"})
    };
    (ns, v)
}

fn configmap(i: usize, size: usize, namespaces: usize) -> (String, Value) {
    let ns = namespace_name(i % namespaces.max(1));
    let filler: String = std::iter::repeat_n("abcdefghij", size / 10 + 1).collect::<String>()[..size].to_string();
    (
        ns.clone(),
        json!({"metadata": {"name": format!("config-{i:06}"), "namespace": ns, "labels": {"app": format!("app-{}", i / 10)}}, "data": {"config.yaml": filler}}),
    )
}

/// The i-th generated cluster role: rules as a controller's role has them.
fn clusterrole(i: usize) -> (String, Value) {
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| json!({"apiGroups": groups, "resources": resources, "verbs": verbs});
    let rules = [
        rule(&[""], &["pods", "pods/status"], &["get", "list", "watch", "update", "patch"]),
        rule(&["apps"], &["deployments", "replicasets", "statefulsets"], &["get", "list", "watch"]),
        rule(&["", "events.k8s.io"], &["events"], &["create", "patch", "update"]),
        rule(&["coordination.k8s.io"], &["leases"], &["get", "create", "update"]),
    ];
    let name = format!("system:controller:generated-{i:06}");
    let meta = json!({"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}});
    (String::new(), json!({"metadata": meta, "rules": &rules[..1 + i % rules.len()]}))
}

/// The i-th generated role binding: a cluster role bound to a service account and a group.
fn rolebinding(i: usize, namespaces: usize) -> (String, Value) {
    let ns = namespace_name(i % namespaces.max(1));
    let subjects = json!([
        {"kind": "ServiceAccount", "name": format!("controller-{}", i % 50), "namespace": ns},
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": format!("team-{}", i % 20)},
    ]);
    let role_ref =
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("system:controller:generated-{i:06}")});
    (ns.clone(), json!({"metadata": {"name": format!("binding-{i:06}"), "namespace": ns}, "subjects": subjects, "roleRef": role_ref}))
}

/// Below this many objects generation is quick and reports nothing.
const REPORT_FROM: usize = 10_000;

/// Shows how far generation has come.
enum Progress {
    Silent,
    Bar(indicatif::ProgressBar),
    /// Logs each tenth; the last tenth logged.
    Log {
        total: usize,
        tenth: usize,
    },
}

impl Progress {
    fn new(total: usize) -> Progress {
        if total < REPORT_FROM {
            Progress::Silent
        } else if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            let bar = indicatif::ProgressBar::new(total as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template("generating {bar:40} {pos}/{len} objects ({per_sec}, {eta} left)")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            Progress::Bar(bar)
        } else {
            Progress::Log { total, tenth: 0 }
        }
    }

    fn update(&mut self, done: usize) {
        match self {
            Progress::Silent => {}
            Progress::Bar(bar) => bar.set_position(done as u64),
            Progress::Log { total, tenth } => {
                let now = done * 10 / (*total).max(1);
                if now > *tenth {
                    *tenth = now;
                    tracing::info!(done, total = *total, "generating the simulated cluster: {}%", now * 10);
                }
            }
        }
    }

    fn finish(self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

fn insert_batched(state: &State, res: ResourceId, items: impl Iterator<Item = (String, Value)>, done: &mut usize, progress: &mut Progress) {
    let mut iter = items.peekable();
    while iter.peek().is_some() {
        let ts = now();
        let mut db = state.db.write();
        for (ns, v) in iter.by_ref().take(BATCH) {
            // Generated names are unique and namespaces exist: a failure here is a bug.
            db.create(res, &ns, v, &ts).expect("generated objects are valid");
            *done += 1;
        }
        drop(db);
        state.set_generated(*done);
        progress.update(*done);
    }
    state.publish_revision();
}

/// Creates the workload's namespaces, nodes, pods, configmaps and RBAC objects, showing progress.
pub fn populate(state: &State, w: &Workload) {
    let mut progress = Progress::new(w.objects());
    let mut done = 0;
    let (d, p) = (&mut done, &mut progress);
    let reg = state.registry().clone();
    let ns_res = reg.builtin("", "namespaces");
    insert_batched(
        state,
        ns_res,
        (0..w.namespaces).map(|i| {
            (
                String::new(),
                json!({"metadata": {"name": namespace_name(i)}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
            )
        }),
        d,
        p,
    );
    let nodes = reg.builtin("", "nodes");
    insert_batched(
        state,
        nodes,
        (0..w.nodes).map(|i| (String::new(), json!({"metadata": {"name": node_name(i), "labels": {"kubernetes.io/hostname": node_name(i)}}, "spec": {}, "status": {"phase": "Running"}}))),
        d,
        p,
    );
    insert_batched(state, reg.builtin("", "pods"), (0..w.pods).map(|i| pod(i, w.nodes, w.namespaces)), d, p);
    insert_batched(state, reg.builtin("", "configmaps"), (0..w.configmaps).map(|i| configmap(i, w.configmap_size, w.namespaces)), d, p);
    insert_batched(state, reg.builtin("rbac.authorization.k8s.io", "clusterroles"), (0..w.rbac).map(clusterrole), d, p);
    let bindings = reg.builtin("rbac.authorization.k8s.io", "rolebindings");
    insert_batched(state, bindings, (0..w.rbac).map(|i| rolebinding(i, w.namespaces)), d, p);
    progress.finish();
}

/// Creates the namespaces every cluster has.
pub fn system_namespaces(db: &mut Db) {
    let res = db.registry().builtin("", "namespaces");
    for name in ["default", "kube-node-lease", "kube-public", "kube-system"] {
        db.create(
            res,
            "",
            json!({"metadata": {"name": name}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
            &now(),
        )
        .expect("a fresh store has no namespaces");
    }
}

/// A CRD for every custom resource the simulator serves (one per
/// `PLURAL.GROUP`, listing its versions), as `kubectl apply` of a minimal
/// CRD and the apiextensions controllers would leave it.
pub fn custom_resource_definitions(db: &mut Db) {
    let registry = db.registry().clone();
    let crds = registry.builtin("apiextensions.k8s.io", "customresourcedefinitions");
    let mut by_name: Vec<(String, &crate::resources::ResourceType, Vec<String>)> = Vec::new();
    for (id, rt) in registry.iter().filter(|(id, _)| !registry.is_builtin(*id)) {
        let _ = id;
        let name = format!("{}.{}", rt.plural, rt.group);
        match by_name.iter_mut().find(|(n, _, _)| *n == name) {
            Some((_, _, versions)) => versions.push(rt.version.clone()),
            None => by_name.push((name, rt, vec![rt.version.clone()])),
        }
    }
    for (name, rt, versions) in by_name {
        let names = json!({"plural": rt.plural, "singular": rt.singular, "kind": rt.kind, "listKind": format!("{}List", rt.kind)});
        let versions: Vec<Value> = versions
            .iter()
            .enumerate()
            .map(|(i, v)| {
                json!({"name": v, "served": true, "storage": i == 0,
                       "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
            })
            .collect();
        let crd = json!({
            "metadata": {"name": name},
            "spec": {"group": rt.group, "names": names, "scope": if rt.namespaced { "Namespaced" } else { "Cluster" }, "versions": versions, "conversion": {"strategy": "None"}},
            "status": {"acceptedNames": names, "storedVersions": [versions[0]["name"]]}
        });
        db.create(crds, "", crd, &now()).expect("one CRD per custom resource");
    }
}

/// Writes [`State::churn_rate`] changes per second (read at every tick, so
/// it can change at run time) until the task is dropped: 20% creates (half
/// of them unscheduled pods, without a node), 20% deletes, 10% configmap
/// updates (when there are configmaps), 5% relabellings (`tier`), 10%
/// bindings of an unscheduled pod to a node, and the rest pod updates (an
/// annotation). Relabellings and bindings move pods in and out of label
/// and `spec.nodeName` selectors, as the scheduler and deployments do.
pub async fn churn(state: Arc<State>, w: Workload) {
    const TICK: Duration = Duration::from_millis(10);
    let reg = state.registry().clone();
    let pods = reg.builtin("", "pods");
    let cms = reg.builtin("", "configmaps");
    let mut next = w.pods;
    let mut unscheduled: Vec<(String, String)> = Vec::new();
    let mut owed = 0.0;
    let mut ticker = tokio::time::interval(TICK);
    loop {
        ticker.tick().await;
        let rate = state.churn_rate();
        if rate == 0.0 {
            owed = 0.0;
            continue;
        }
        owed += rate * TICK.as_secs_f64();
        let n = owed as usize;
        owed -= n as f64;
        if n == 0 {
            continue;
        }
        {
            let mut db = state.db.write();
            let mut rng = rand::rng();
            for _ in 0..n {
                let roll: u32 = rng.random_range(0..100);
                let i = rng.random_range(0..next.max(1));
                let (ns, v) = pod(i, w.nodes, w.namespaces);
                let name = v["metadata"]["name"].as_str().unwrap_or_default().to_string();
                let ts = now();
                // Errors are expected here (the pod was deleted, or exists): churn is random.
                let _ = match roll {
                    0..20 => {
                        let (ns, mut v) = pod(next, w.nodes, w.namespaces);
                        next += 1;
                        if roll < 10 {
                            if let Some(spec) = v["spec"].as_object_mut() {
                                spec.shift_remove("nodeName");
                            }
                            v["status"] = json!({"phase": "Pending", "qosClass": "Burstable"});
                            unscheduled.push((ns.clone(), v["metadata"]["name"].as_str().unwrap_or_default().to_string()));
                        }
                        db.create(pods, &ns, v, &ts).map(drop)
                    }
                    20..40 => db.delete(pods, &ns, &name, &Preconditions::default(), &ts).map(drop),
                    40..50 if w.configmaps > 0 => {
                        let (ns, mut cm) = configmap(rng.random_range(0..w.configmaps), w.configmap_size, w.namespaces);
                        let name = cm["metadata"]["name"].as_str().unwrap_or_default().to_string();
                        cm["metadata"]["annotations"] = json!({"churn": ts});
                        db.update(cms, &ns, &name, cm, false).map(drop)
                    }
                    55..65 => {
                        let Some((ns, name)) = unscheduled.pop() else { continue };
                        let Some(cur) = db.get(pods, &format!("{ns}/{name}"), db.rev()).cloned() else { continue };
                        let mut v = cur.to_value();
                        v["spec"]["nodeName"] = json!(node_name(rng.random_range(0..w.nodes.max(1))));
                        db.update(pods, &ns, &name, v, false).map(drop)
                    }
                    _ => {
                        let Some(cur) = db.get(pods, &format!("{ns}/{name}"), db.rev()).cloned() else { continue };
                        let mut v = cur.to_value();
                        if roll < 55 {
                            v["metadata"]["labels"]["tier"] = json!(["web", "db", "cache"][rng.random_range(0..3)]);
                        } else {
                            v["metadata"]["annotations"]["churn"] = json!(rng.random::<u32>().to_string());
                        }
                        db.update(pods, &ns, &name, v, false).map(drop)
                    }
                };
            }
        }
        state.publish_revision();
    }
}

//! What the tool makes on a target for a run, and how it goes away.
//!
//! On a real cluster, for pods ([`Objects::OwnPods`]): namespaces `RUN-N`
//! (one per group of nodes, at most [`NAMESPACES`]), each with its
//! `default` ServiceAccount (pods need one, and no controller may run to
//! make it); Nodes `RUN-node-NNNNN`; the mounted secrets and configmaps;
//! and the pods, bound to their nodes (`spec.nodeName`) as the scheduler
//! leaves them, about 3 KB each as stored: a container with resources,
//! env, ports and a probe, a volume per mount, labels. Everything is
//! labelled `kache-loadtest/run=RUN`. No kubelet runs the nodes: the pods
//! tolerate every taint, so a node lifecycle controller finding the nodes
//! unreachable evicts nothing. For one write to make
//! ([`Objects::OwnConfigMaps`]): a namespace and its configmaps. On the
//! simulator: only the mounted secrets and configmaps, in its namespaces
//! (the simulator is the tool's, and goes with it).
//!
//! Created [`CONCURRENCY`] requests at a time (over HTTP/2 to an HTTPS
//! server), each retried as client-go retries ([`Http::create`]), after
//! they are recorded in the run's [`Ledger`], so that the run's
//! [`crate::cleanup`] deletes them however it ends: the namespaces first
//! (nothing more can be created in them), then every object by name,
//! [`CONCURRENCY`] at a time — pods with `gracePeriodSeconds=0`, as no
//! kubelet would confirm a graceful deletion — then `deletecollection`
//! sweeps of what is left (a `kube-root-ca.crt`, a `default`
//! ServiceAccount, anything a run cut short), until nothing is; then each
//! namespace is finalized as its controller would, in case none runs.

use std::time::{Duration, Instant};

use futures_util::{StreamExt, TryStreamExt, stream};
use indicatif::ProgressBar;
use serde_json::json;

use crate::objects::{Mounts, NAMESPACES, Objects, RUN_LABEL, pod_name};
use crate::progress::note;
use crate::target::{Http, Target};

/// Requests in flight while creating or deleting: well under the
/// concurrency kube-apiserver's priority levels give a non-exempt user, so
/// it sheds few (and those are retried).
const CONCURRENCY: usize = 64;

/// Where what a run creates is recorded before it exists (the run's
/// [`crate::cleanup::Cleanup`], which deletes it however the run ends).
pub trait Ledger {
    /// Records `objects` as the run's on `target`.
    fn record(&self, target: &Target, objects: &Objects);
}

/// A kind of object the tool makes, in the order it makes them.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Node,
    Mount,
    Pod,
    ConfigMap,
}

impl Kind {
    fn what(self) -> &'static str {
        match self {
            Kind::Node => "Nodes",
            Kind::Mount => "mounted Secrets and ConfigMaps",
            Kind::Pod => "Pods",
            Kind::ConfigMap => "ConfigMaps",
        }
    }
}

impl Objects {
    /// The namespaces the tool makes (the simulator's are its own).
    fn own_namespaces(&self) -> Vec<String> {
        match self {
            Objects::OwnPods { nodes, .. } => {
                (0..NAMESPACES.min(Mounts { nodes: *nodes, per_node: 1 }.count())).map(|k| self.namespace(k)).collect()
            }
            Objects::OwnConfigMaps { namespace, .. } => vec![namespace.clone()],
            Objects::SimPods { .. } | Objects::SimConfigMaps { .. } => Vec::new(),
        }
    }

    /// The run everything the tool makes is labelled with (`kache-loadtest-PID`).
    fn run(&self) -> &str {
        match self {
            Objects::OwnPods { run, .. } => run,
            Objects::OwnConfigMaps { namespace, .. } => namespace,
            Objects::SimPods { .. } | Objects::SimConfigMaps { .. } => "",
        }
    }

    /// The kinds the tool makes and how many of each, in order.
    fn kinds(&self) -> Vec<(Kind, usize)> {
        let mounts = (Kind::Mount, self.mounts().count());
        match self {
            Objects::OwnPods { count, nodes, .. } => vec![(Kind::Node, *nodes), mounts, (Kind::Pod, *count)],
            Objects::SimPods { .. } => vec![mounts],
            Objects::OwnConfigMaps { count, .. } => vec![(Kind::ConfigMap, *count)],
            Objects::SimConfigMaps { .. } => Vec::new(),
        }
    }

    /// How many objects the tool makes (for how long deleting them may take).
    pub fn made(&self) -> usize {
        self.own_namespaces().len() + self.kinds().iter().map(|(_, n)| n).sum::<usize>()
    }

    /// The collection and name of the `i`-th object of `kind`.
    fn object(&self, kind: Kind, i: usize) -> (String, String) {
        let path = match kind {
            Kind::Node => return ("/api/v1/nodes".into(), self.node(i)),
            Kind::Mount => self.path(self.count() + i),
            Kind::Pod | Kind::ConfigMap => self.path(i),
        };
        let (collection, name) = path.rsplit_once('/').expect("an object's path has a name");
        (collection.to_string(), name.to_string())
    }

    /// The `i`-th object of `kind`, as JSON.
    fn body(&self, kind: Kind, i: usize) -> String {
        let (_, name) = self.object(kind, i);
        let run = self.run();
        let labels = json!({RUN_LABEL: run, "app": format!("app-{}", i / 10)});
        match kind {
            Kind::Node => json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                RUN_LABEL: run, "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}}}),
            Kind::Mount if self.mounts().name(i).0 == "secrets" => json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": name, "labels": labels}, "type": "Opaque",
                "data": {"token": "c2VjcmV0LXRva2VuLWZvci10aGUtbG9hZC10ZXN0", "ca.crt": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"}}),
            Kind::Mount => json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels},
                "data": {"app.yaml": "log-level: info\nport: 8080\nmetrics-port: 9102\nfeatures:\n  cache: true\n  tracing: false\n"}}),
            Kind::ConfigMap => json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}),
            Kind::Pod => self.pod(i),
        }
        .to_string()
    }

    /// Pod `i`: bound to its node, mounting its node's secrets and configmaps.
    fn pod(&self, i: usize) -> serde_json::Value {
        let (node, mounts) = (self.shard_of(i), self.mounts());
        let (mut volumes, mut volume_mounts) = (Vec::new(), Vec::new());
        for j in 0..mounts.per_node {
            let (resource, name) = mounts.name(mounts.of(node, j));
            let volume = format!("mount-{j}");
            volumes.push(match resource {
                "secrets" => json!({"name": volume, "secret": {"secretName": name}}),
                _ => json!({"name": volume, "configMap": {"name": name}}),
            });
            volume_mounts.push(json!({"name": volume, "mountPath": format!("/etc/{name}"), "readOnly": true}));
        }
        let (app, tier) = (format!("app-{}", i / 10), ["web", "db", "cache"][i % 3]);
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": pod_name(i),
                "labels": {RUN_LABEL: self.run(), "app": app, "tier": tier},
            },
            "spec": {
                "nodeName": self.node(node),
                "automountServiceAccountToken": false,
                "tolerations": [{"operator": "Exists"}],
                "containers": [{
                    "name": "main",
                    "image": "registry.example.com/team/app:v1.21.3",
                    "ports": [{"containerPort": 8080}, {"containerPort": 9102}],
                    "env": [
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        {"name": "GOMAXPROCS", "value": "2"},
                    ],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
                    "volumeMounts": volume_mounts,
                }],
                "volumes": volumes,
            },
        })
    }

    /// Creates what the tool makes on `target` (module doc), recorded in
    /// `ledger` first, saying on `bar` how long each kind took. The
    /// requests stop when this future is dropped.
    pub async fn create(&self, target: &Target, ledger: &impl Ledger, bar: &ProgressBar) -> anyhow::Result<()> {
        if matches!(self, Objects::OwnPods { .. } | Objects::OwnConfigMaps { .. }) {
            ledger.record(target, self);
        }
        let http = &target.http;
        for ns in self.own_namespaces() {
            let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {RUN_LABEL: self.run()}}});
            http.create("/api/v1/namespaces", namespace.to_string()).await?;
            if matches!(self, Objects::OwnPods { .. }) {
                let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
                http.create(&format!("/api/v1/namespaces/{ns}/serviceaccounts"), account.to_string()).await?;
            }
        }
        for (kind, n) in self.kinds().into_iter().filter(|(_, n)| *n > 0) {
            let begun = Instant::now();
            each(n, |i| async move {
                let (collection, _) = self.object(kind, i);
                http.create(&collection, self.body(kind, i)).await
            })
            .await?;
            let took = begun.elapsed();
            note(bar, format!("created {n} {} on {} in {took:.1?} ({:.0}/s)", kind.what(), target.name, n as f64 / took.as_secs_f64()));
        }
        Ok(())
    }

    /// What [`Objects::create`] records, for messages.
    pub fn describe(&self) -> String {
        let namespaces = self.own_namespaces();
        let plural = if namespaces.len() == 1 { "" } else { "s" };
        let namespaces = (!namespaces.is_empty()).then(|| format!("namespace{plural} {}", namespaces.join(", ")));
        let made = self.kinds().into_iter().filter(|(_, n)| *n > 0).map(|(kind, n)| format!("{n} {}", kind.what()));
        namespaces.into_iter().chain(made).collect::<Vec<_>>().join(", ")
    }

    /// How a person deletes it.
    pub fn by_hand(&self) -> String {
        let namespaces = self.own_namespaces().join(" ");
        let nodes = match self {
            Objects::OwnPods { run, .. } => format!("kubectl delete nodes -l {RUN_LABEL}={run}; "),
            _ => String::new(),
        };
        format!(
            "delete it with `{nodes}for ns in {namespaces}; do kubectl delete pods --all --force --grace-period=0 -n $ns; kubectl delete namespace $ns; done` (and finalize the namespaces if no namespace controller runs)"
        )
    }

    /// Deletes what [`Objects::create`] recorded and waits until it is gone (module doc).
    pub async fn delete(&self, http: &Http) -> anyhow::Result<()> {
        let namespaces = self.own_namespaces();
        for ns in &namespaces {
            http.delete(&format!("/api/v1/namespaces/{ns}")).await?;
        }
        for (kind, n) in self.kinds() {
            each(n, |i| async move {
                let (collection, name) = self.object(kind, i);
                http.delete(&format!("{collection}/{name}?gracePeriodSeconds=0")).await
            })
            .await?;
        }
        let mut sweeps: Vec<String> = namespaces
            .iter()
            .flat_map(|ns| ["pods", "secrets", "configmaps", "serviceaccounts"].map(|r| format!("/api/v1/namespaces/{ns}/{r}?")))
            .collect();
        if let Objects::OwnPods { run, .. } = self {
            sweeps.push(format!("/api/v1/nodes?labelSelector={}%3D{run}&", RUN_LABEL.replace('/', "%2F")));
        }
        for sweep in &sweeps {
            http.delete(&format!("{sweep}gracePeriodSeconds=0")).await?;
        }
        for sweep in &sweeps {
            while !empty(http, &format!("{sweep}limit=1")).await? {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        for ns in &namespaces {
            let finalized = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}, "spec": {"finalizers": []}});
            let mut finalize = Some(finalized.to_string());
            while http.get(&format!("/api/v1/namespaces/{ns}"), &[]).await?.0 != 404 {
                if let Some(body) = finalize.take() {
                    http.update(&format!("/api/v1/namespaces/{ns}/finalize"), body).await?;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Ok(())
    }
}

/// Whether the list at `path` has no items (or its namespace is gone).
async fn empty(http: &Http, path: &str) -> anyhow::Result<bool> {
    let (status, list) = http.get(path, &[]).await?;
    let list: serde_json::Value = serde_json::from_slice(&list).unwrap_or_default();
    Ok(status == 404 || (status == 200 && list["items"].as_array().is_some_and(Vec::is_empty)))
}

/// Runs `job(i)` for every `i` below `n`, [`CONCURRENCY`] at a time, until one fails.
async fn each<F, Fut>(n: usize, job: F) -> anyhow::Result<()>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    stream::iter(0..n).map(anyhow::Ok).try_for_each_concurrent(CONCURRENCY, job).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_is_bound_to_its_node_and_mounts_its_groups_secret_and_configmaps_in_its_namespace() {
        let objects = Objects::OwnPods { run: "kache-loadtest-7".into(), count: 300, nodes: 30, mounts: 3 };
        let (collection, name) = objects.object(Kind::Pod, 42);
        assert_eq!((collection.as_str(), name.as_str()), ("/api/v1/namespaces/kache-loadtest-7-1/pods", "load-0000042"));
        let body = objects.body(Kind::Pod, 42);
        assert!((1000..2500).contains(&body.len()), "{} bytes before the server's defaults and managedFields", body.len());
        let pod: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(pod["spec"]["nodeName"], "kache-loadtest-7-node-00012");
        assert_eq!(pod["metadata"]["labels"][RUN_LABEL], "kache-loadtest-7");
        let volumes: Vec<String> = pod["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["secret"]["secretName"].as_str().or(v["configMap"]["name"].as_str()).unwrap().to_string())
            .collect();
        assert_eq!(volumes, ["mounted-secret-00001", "mounted-config-00001-1", "mounted-config-00001-2"]);
        for m in 3..6 {
            assert_eq!(objects.object(Kind::Mount, m).0.rsplit_once('/').unwrap().0, "/api/v1/namespaces/kache-loadtest-7-1");
        }
        assert_eq!(objects.own_namespaces().len(), 3, "one per group of ten nodes");
        assert_eq!(objects.made(), 3 + 30 + 9 + 300);
    }
}

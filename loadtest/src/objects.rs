//! The objects a scenario writes and watches, and how watchers partition
//! them.
//!
//! - On the simulator: its generated pods (`app-DDDDD-IIIIIII` in
//!   `ns-000N`, pod `i` on node `node-NNNN`, `i % nodes`), watched by
//!   kubelet-pattern watchers with `fieldSelector=spec.nodeName=NODE`, and
//!   cluster-wide; or its generated configmaps (`config-IIIIII`).
//! - On a real cluster: pods the tool creates, bound to Nodes it creates,
//!   in namespaces of its own (`kache-loadtest-PID-N`), watched the same
//!   way ([`crate::fixtures`] makes and deletes them); or, for a write to
//!   make, one ConfigMap in a namespace of its own.
//! - With pods, the secrets and configmaps kubelets watch because their
//!   pods mount them ([`Mounts`]): on a real cluster the pods mount them,
//!   on the simulator (whose pods mount something else) the tool creates
//!   them beside its pods, with the same names and watchers.
//!
//! Writes are merge patches of one annotation, to a pod or, one in
//! [`MOUNT_WRITES`], to a mounted secret or configmap; each acknowledged
//! write carries the revision it committed at.

use std::ops::Range;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Method;
use rand::Rng;
use tokio::task::JoinSet;

use crate::procs::first_revision;
use crate::target::Http;

/// Which objects, and how many.
#[derive(Debug, Clone)]
pub enum Objects {
    /// The simulator's `count` pods over `nodes` nodes and [`NAMESPACES`]
    /// namespaces, and `mounts` secrets and configmaps a node.
    SimPods { count: usize, nodes: usize, mounts: usize },
    /// The simulator's `count` configmaps over 10 namespaces.
    SimConfigMaps { count: usize },
    /// `count` pods the tool creates over `nodes` Nodes it creates, in
    /// namespaces `RUN-N`, and `mounts` secrets and configmaps a node.
    OwnPods { run: String, count: usize, nodes: usize, mounts: usize },
    /// `count` configmaps the tool creates in `namespace`.
    OwnConfigMaps { namespace: String, count: usize },
}

/// The namespaces pods are spread over (the simulator's `--namespaces`).
pub const NAMESPACES: usize = 10;

/// Nodes whose pods mount the same secrets and configmaps: a mounted
/// object is watched by this many kubelets.
const GROUP: usize = 10;

/// One write in this many goes to a mounted secret or configmap.
const MOUNT_WRITES: u32 = 10;

/// The secrets and configmaps kubelets watch, as the kubelet's watch-based
/// manager does for every one its pods mount: one watch each, in the pod's
/// namespace, `fieldSelector=metadata.name=NAME`. Nodes come in groups of
/// [`GROUP`]; a group's pods live in one namespace and mount `per_node`
/// objects there (a secret, then configmaps), so each kubelet watches
/// `per_node` objects and each object is watched by its group's kubelets.
/// Mount `m` is group `m / per_node`'s `m % per_node`-th.
#[derive(Debug, Clone, Copy)]
pub struct Mounts {
    /// Nodes.
    pub nodes: usize,
    /// Objects each node's pods mount.
    pub per_node: usize,
}

impl Mounts {
    /// How many objects.
    pub fn count(&self) -> usize {
        self.nodes.div_ceil(GROUP) * self.per_node
    }

    /// Node `n`'s `j`-th mount.
    pub fn of(&self, n: usize, j: usize) -> usize {
        n / GROUP * self.per_node + j
    }

    /// The nodes whose kubelets watch mount `m`.
    pub fn nodes_of(&self, m: usize) -> Range<usize> {
        let group = m / self.per_node.max(1);
        group * GROUP..((group + 1) * GROUP).min(self.nodes)
    }

    /// The namespace (`0..NAMESPACES`) of node `n`'s pods and mounts.
    pub fn namespace_of_node(n: usize) -> usize {
        n / GROUP % NAMESPACES
    }

    /// Mount `m`'s resource (`secrets` or `configmaps`) and name.
    pub fn name(&self, m: usize) -> (&'static str, String) {
        let (group, j) = (m / self.per_node.max(1), m % self.per_node.max(1));
        match j {
            0 => ("secrets", format!("mounted-secret-{group:05}")),
            j => ("configmaps", format!("mounted-config-{group:05}-{j}")),
        }
    }
}

/// A label on everything the tool creates for pods: the run (`kache-loadtest-PID`).
pub const RUN_LABEL: &str = "kache-loadtest/run";

impl Objects {
    /// The collection every watcher and list reads.
    pub fn collection(&self) -> String {
        match self {
            Objects::SimPods { .. } | Objects::OwnPods { .. } => "/api/v1/pods".into(),
            Objects::SimConfigMaps { .. } => "/api/v1/configmaps".into(),
            Objects::OwnConfigMaps { namespace, .. } => format!("/api/v1/namespaces/{namespace}/configmaps"),
        }
    }

    /// How many objects watchers partition (pods; mounts apart).
    pub fn count(&self) -> usize {
        match self {
            Objects::SimPods { count, .. }
            | Objects::SimConfigMaps { count }
            | Objects::OwnPods { count, .. }
            | Objects::OwnConfigMaps { count, .. } => *count,
        }
    }

    /// How many kubelet-like partitions: nodes.
    pub fn shards(&self) -> usize {
        match self {
            Objects::SimPods { nodes, .. } | Objects::OwnPods { nodes, .. } => *nodes,
            Objects::SimConfigMaps { .. } | Objects::OwnConfigMaps { .. } => 1,
        }
    }

    /// The secrets and configmaps the nodes' pods mount (none without pods).
    pub fn mounts(&self) -> Mounts {
        match self {
            Objects::SimPods { nodes, mounts, .. } | Objects::OwnPods { nodes, mounts, .. } => Mounts { nodes: *nodes, per_node: *mounts },
            Objects::SimConfigMaps { .. } | Objects::OwnConfigMaps { .. } => Mounts { nodes: 0, per_node: 0 },
        }
    }

    /// The partition object `i` is in (its node).
    pub fn shard_of(&self, i: usize) -> usize {
        i % self.shards().max(1)
    }

    /// Node `n`'s name.
    pub fn node(&self, n: usize) -> String {
        match self {
            Objects::OwnPods { run, .. } => format!("{run}-node-{n:05}"),
            _ => format!("node-{n:04}"),
        }
    }

    /// Namespace `k` (`0..NAMESPACES`) of the pods and mounts.
    pub fn namespace(&self, k: usize) -> String {
        match self {
            Objects::OwnPods { run, .. } => format!("{run}-{k}"),
            Objects::OwnConfigMaps { namespace, .. } => namespace.clone(),
            Objects::SimPods { .. } | Objects::SimConfigMaps { .. } => format!("ns-{k:04}"),
        }
    }

    /// The query parameter (`&…`) selecting partition `s`.
    pub fn shard_selector(&self, s: usize) -> String {
        match self {
            Objects::SimPods { .. } | Objects::OwnPods { .. } => format!("&fieldSelector=spec.nodeName%3D{}", self.node(s)),
            Objects::SimConfigMaps { .. } | Objects::OwnConfigMaps { .. } => String::new(),
        }
    }

    /// The collection of mount `m` and the query part (`&…`) selecting it by name.
    pub fn mount_watch(&self, m: usize) -> (String, String) {
        let (resource, name) = self.mounts().name(m);
        let ns = self.namespace(self.mount_namespace(m));
        (format!("/api/v1/namespaces/{ns}/{resource}"), format!("&fieldSelector=metadata.name%3D{name}"))
    }

    /// The namespace index of mount `m`: its group's nodes'.
    pub fn mount_namespace(&self, m: usize) -> usize {
        Mounts::namespace_of_node(self.mounts().nodes_of(m).start)
    }

    /// The path of object `i`: pods below [`Objects::count`], then the mounts.
    pub fn path(&self, i: usize) -> String {
        if let Some(m) = i.checked_sub(self.count()) {
            let (resource, name) = self.mounts().name(m);
            return format!("/api/v1/namespaces/{}/{resource}/{name}", self.namespace(self.mount_namespace(m)));
        }
        match self {
            Objects::SimPods { .. } => format!("/api/v1/namespaces/ns-{:04}/pods/app-{:05}-{i:07}", i % NAMESPACES, i / 10),
            Objects::SimConfigMaps { .. } => format!("/api/v1/namespaces/ns-{:04}/configmaps/config-{i:06}", i % 10),
            Objects::OwnPods { .. } => {
                format!("/api/v1/namespaces/{}/pods/{}", self.namespace(Mounts::namespace_of_node(self.shard_of(i))), pod_name(i))
            }
            Objects::OwnConfigMaps { namespace, .. } => format!("/api/v1/namespaces/{namespace}/configmaps/load-{i:06}"),
        }
    }

    /// A random object to write: a mount one write in [`MOUNT_WRITES`] (when there are any), else a pod.
    fn pick(&self) -> usize {
        let mut rng = rand::rng();
        let mounts = self.mounts().count();
        if mounts > 0 && rng.random_ratio(1, MOUNT_WRITES) {
            self.count() + rng.random_range(0..mounts)
        } else {
            rng.random_range(0..self.count().max(1))
        }
    }
}

/// The name of the tool's pod `i`.
pub fn pod_name(i: usize) -> String {
    format!("load-{i:07}")
}

/// One acknowledged write.
#[derive(Debug, Clone, Copy)]
pub struct Write {
    /// Which object ([`Objects::path`]).
    pub index: usize,
    /// The revision it committed at.
    pub rv: u64,
    /// When it was acknowledged.
    pub acked: Instant,
}

/// How long a write may take before it counts as failed.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// Writes `rate` merge patches per second to random objects through `http` until `stop`.
pub async fn write(http: Http, objects: Objects, rate: f64, stop: Instant) -> Vec<Write> {
    let mut out = Vec::new();
    let every = Duration::from_secs_f64(1.0 / rate.max(0.001));
    let mut next = Instant::now();
    // Never past `stop`, even when the server acknowledges slower than the rate.
    while next < stop && Instant::now() < stop {
        tokio::time::sleep_until(next.into()).await;
        next += every;
        let index = objects.pick();
        // A value no write has set before: a patch that changes nothing commits no revision.
        let patch = format!(r#"{{"metadata":{{"annotations":{{"loadtest":"{}"}}}}}}"#, unique());
        let headers = [("content-type", "application/merge-patch+json")];
        let sent = async {
            let resp = http.send(Method::PATCH, &objects.path(index), &headers, Some(Bytes::from(patch))).await?;
            let ok = resp.status().is_success();
            let body = http_body_util::BodyExt::collect(resp.into_body()).await?.to_bytes();
            anyhow::Ok(first_revision(&body).filter(|_| ok))
        };
        if let Ok(Ok(Some(rv))) = tokio::time::timeout(WRITE_TIMEOUT, sent).await {
            out.push(Write { index, rv, acked: Instant::now() });
        }
    }
    out
}

/// A number no other call in this process, or in an earlier run, returned.
fn unique() -> u64 {
    static NEXT: std::sync::OnceLock<std::sync::atomic::AtomicU64> = std::sync::OnceLock::new();
    let next = NEXT.get_or_init(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        std::sync::atomic::AtomicU64::new(now.as_nanos() as u64)
    });
    next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// `writers` tasks writing `rate` per second in all until `stop`; every
/// acknowledged write. The tasks stop when this future is dropped.
pub async fn write_all(http: &Http, objects: &Objects, rate: f64, writers: usize, stop: Instant) -> anyhow::Result<Vec<Write>> {
    let mut tasks = JoinSet::new();
    for _ in 0..writers.max(1) {
        tasks.spawn(write(http.clone(), objects.clone(), rate / writers.max(1) as f64, stop));
    }
    let mut writes = Vec::new();
    while let Some(done) = tasks.join_next().await {
        writes.extend(done?);
    }
    Ok(writes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kubelet_watches_its_groups_mounts_in_its_pods_namespace() {
        let objects = Objects::OwnPods { run: "kache-loadtest-7".into(), count: 250 * 3, nodes: 250, mounts: 3 };
        let mounts = objects.mounts();
        assert_eq!(mounts.count(), 25 * 3);
        for n in 0..250 {
            let pods_ns = objects.path(n).split('/').nth(4).unwrap().to_string();
            for j in 0..3 {
                let m = mounts.of(n, j);
                assert!(mounts.nodes_of(m).contains(&n), "node {n} watches mount {m}");
                let (collection, selector) = objects.mount_watch(m);
                assert_eq!(collection.split('/').nth(4).unwrap(), pods_ns, "in its pods' namespace");
                assert!(objects.path(objects.count() + m).starts_with(&collection));
                assert!(selector.ends_with(&objects.path(objects.count() + m).rsplit('/').next().unwrap().to_string()));
            }
        }
        assert_eq!(mounts.name(0), ("secrets", "mounted-secret-00000".to_string()));
        assert_eq!(mounts.name(5), ("configmaps", "mounted-config-00001-2".to_string()));
        assert_eq!(mounts.nodes_of(74), 240..250);
    }
}

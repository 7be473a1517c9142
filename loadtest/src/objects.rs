//! The objects a scenario writes and watches, and how watchers partition
//! them.
//!
//! - On the simulator: its generated pods (`app-DDDDD-IIIIIII` in
//!   `ns-000N`, pod `i` on node `i % nodes`), watched by kubelet-pattern
//!   watchers with `fieldSelector=spec.nodeName=node-NNNN`, and
//!   cluster-wide; or its generated configmaps (`config-IIIIII`).
//! - On a real cluster: ConfigMaps the tool creates in a namespace of its
//!   own (`kache-loadtest-PID`), labelled `kache-loadtest/shard=S`, watched
//!   by shard (`labelSelector`, the kubelet-like partition) and
//!   namespace-wide; recorded in the run's [`Cleanup`] before the first is
//!   created, which deletes them however the run ends. Pods would need
//!   real nodes (the pod GC deletes pods bound to nodes that do not exist).
//!
//! Writes are merge patches of one annotation; each acknowledged write
//! carries the revision it committed at.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use bytes::Bytes;
use http::Method;
use rand::Rng;
use tokio::task::JoinSet;

use crate::procs::first_revision;
use crate::target::{Http, Target};

/// Which objects, and how many.
#[derive(Debug, Clone)]
pub enum Objects {
    /// The simulator's `count` pods over `nodes` nodes and 10 namespaces.
    SimPods { count: usize, nodes: usize },
    /// The simulator's `count` configmaps over 10 namespaces.
    SimConfigMaps { count: usize },
    /// `count` configmaps the tool creates in `namespace`, over `shards` shards.
    OwnConfigMaps { namespace: String, count: usize, shards: usize },
}

/// A label key of the tool's own configmaps.
const SHARD_LABEL: &str = "kache-loadtest/shard";

/// Where what a run creates is recorded before it exists (the run's
/// [`crate::cleanup::Cleanup`], which deletes it however the run ends).
pub trait Ledger {
    /// Records `objects` as the run's on `target`.
    fn record(&self, target: &Target, objects: &Objects);
}

impl Objects {
    /// The collection every watcher and list reads.
    pub fn collection(&self) -> String {
        match self {
            Objects::SimPods { .. } => "/api/v1/pods".into(),
            Objects::SimConfigMaps { .. } => "/api/v1/configmaps".into(),
            Objects::OwnConfigMaps { namespace, .. } => format!("/api/v1/namespaces/{namespace}/configmaps"),
        }
    }

    /// How many objects.
    pub fn count(&self) -> usize {
        match self {
            Objects::SimPods { count, .. } | Objects::SimConfigMaps { count } | Objects::OwnConfigMaps { count, .. } => *count,
        }
    }

    /// How many kubelet-like partitions.
    pub fn shards(&self) -> usize {
        match self {
            Objects::SimPods { nodes, .. } => *nodes,
            Objects::SimConfigMaps { .. } => 1,
            Objects::OwnConfigMaps { shards, .. } => *shards,
        }
    }

    /// The partition object `i` is in.
    pub fn shard_of(&self, i: usize) -> usize {
        i % self.shards().max(1)
    }

    /// The query parameter (`&…`) selecting partition `s`.
    pub fn shard_selector(&self, s: usize) -> String {
        match self {
            Objects::SimPods { .. } => format!("&fieldSelector=spec.nodeName%3Dnode-{s:04}"),
            Objects::SimConfigMaps { .. } => String::new(),
            Objects::OwnConfigMaps { .. } => format!("&labelSelector=kache-loadtest%2Fshard%3D{s}"),
        }
    }

    /// The path of object `i`.
    pub fn path(&self, i: usize) -> String {
        match self {
            Objects::SimPods { .. } => format!("/api/v1/namespaces/ns-{:04}/pods/app-{:05}-{i:07}", i % 10, i / 10),
            Objects::SimConfigMaps { .. } => format!("/api/v1/namespaces/ns-{:04}/configmaps/config-{i:06}", i % 10),
            Objects::OwnConfigMaps { namespace, .. } => format!("/api/v1/namespaces/{namespace}/configmaps/load-{i:06}"),
        }
    }

    /// Creates what the tool owns (a real cluster's namespace and
    /// configmaps) on `target`, recorded in `ledger` first. The tasks
    /// creating stop when this future is dropped.
    pub async fn create(&self, target: &Target, ledger: &impl Ledger) -> anyhow::Result<()> {
        let Objects::OwnConfigMaps { namespace, count, .. } = self else { return Ok(()) };
        ledger.record(target, self);
        let ns = format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{namespace}"}}}}"#);
        target.http.create("/api/v1/namespaces", ns).await?;
        let next = Arc::new(AtomicUsize::new(0));
        let mut tasks = JoinSet::new();
        // 16 in flight: well under the concurrency kube-apiserver's priority
        // levels give a user by default, so it does not shed them (and
        // `Http::create` retries when it does).
        for _ in 0..16 {
            let (http, next, me, count) = (target.http.clone(), next.clone(), self.clone(), *count);
            tasks.spawn(async move {
                let collection = me.collection();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return Ok::<_, anyhow::Error>(());
                    }
                    let body = format!(
                        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"load-{i:06}","labels":{{"{SHARD_LABEL}":"{}"}}}},"data":{{"k":"v"}}}}"#,
                        me.shard_of(i)
                    );
                    http.create(&collection, body).await?;
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done??;
        }
        Ok(())
    }

    /// What [`Objects::create`] makes, for messages (the simulator's own objects are not the tool's).
    pub fn describe(&self) -> String {
        match self {
            Objects::OwnConfigMaps { namespace, .. } => format!("namespace {namespace} and its ConfigMaps"),
            Objects::SimPods { .. } | Objects::SimConfigMaps { .. } => "nothing".into(),
        }
    }

    /// How a person deletes it.
    pub fn by_hand(&self) -> String {
        match self {
            Objects::OwnConfigMaps { namespace, .. } => format!("delete it with `kubectl delete namespace {namespace}`"),
            Objects::SimPods { .. } | Objects::SimConfigMaps { .. } => String::new(),
        }
    }

    /// Deletes what [`Objects::create`] made and waits until it is gone:
    /// the namespace first, then its configmaps in one `deletecollection`,
    /// then until none is left and the namespace is gone or terminating.
    ///
    /// The namespace first, because then no configmap can be created in it
    /// any more (kube-apiserver refuses creates in a terminating namespace,
    /// the simulator in a missing one), and if the tool stops before the
    /// `deletecollection` ends, kube-apiserver's namespace controller
    /// finishes it. The `deletecollection`, because nothing may depend on a
    /// namespace controller: the simulator has none (a deleted namespace is
    /// gone at once and the objects in it stay).
    pub async fn delete(&self, http: &Http) -> anyhow::Result<()> {
        let Objects::OwnConfigMaps { namespace, .. } = self else { return Ok(()) };
        let ns_path = format!("/api/v1/namespaces/{namespace}");
        for path in [&ns_path, &self.collection()] {
            let status = http.send(Method::DELETE, path, &[], None).await?.status();
            if !(status.is_success() || status == http::StatusCode::NOT_FOUND) {
                bail!("DELETE {path}: {status}");
            }
        }
        loop {
            let (status, list) = http.get(&format!("{}?limit=1", self.collection()), &[]).await?;
            let empty = status == 404 || (status == 200 && json(&list)["items"].as_array().is_some_and(Vec::is_empty));
            let (status, ns) = http.get(&ns_path, &[]).await?;
            // Terminating: kube-apiserver's namespace controller removes it once it is empty.
            if empty && (status == 404 || (status == 200 && !json(&ns)["metadata"]["deletionTimestamp"].is_null())) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

fn json(body: &[u8]) -> serde_json::Value {
    serde_json::from_slice(body).unwrap_or_default()
}

/// One acknowledged write.
#[derive(Debug, Clone, Copy)]
pub struct Write {
    /// Which object.
    pub index: usize,
    /// The revision it committed at.
    pub rv: u64,
    /// When it was acknowledged.
    pub acked: Instant,
}

/// Writes `rate` merge patches per second to random objects through `http` until `stop`.
pub async fn write(http: Http, objects: Objects, rate: f64, stop: Instant) -> Vec<Write> {
    let mut out = Vec::new();
    let every = Duration::from_secs_f64(1.0 / rate.max(0.001));
    let mut next = Instant::now();
    // Never past `stop`, even when the server acknowledges slower than the rate.
    while next < stop && Instant::now() < stop {
        tokio::time::sleep_until(next.into()).await;
        next += every;
        let index = rand::rng().random_range(0..objects.count().max(1));
        // A value no write has set before: a patch that changes nothing commits no revision.
        let patch = format!(r#"{{"metadata":{{"annotations":{{"loadtest":"{}"}}}}}}"#, unique());
        let Ok(resp) = http
            .send(Method::PATCH, &objects.path(index), &[("content-type", "application/merge-patch+json")], Some(Bytes::from(patch)))
            .await
        else {
            continue;
        };
        let ok = resp.status().is_success();
        let Ok(body) = http_body_util::BodyExt::collect(resp.into_body()).await else { continue };
        if let Some(rv) = first_revision(&body.to_bytes()).filter(|_| ok) {
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

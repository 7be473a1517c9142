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
//!   namespace-wide; the namespace is deleted at the end. Pods would need
//!   real nodes (the pod GC deletes pods bound to nodes that do not exist).
//!
//! Writes are merge patches of one annotation; each acknowledged write
//! carries the revision it committed at.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Method;
use rand::Rng;

use crate::procs::first_revision;
use crate::target::Http;

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

    /// Creates what the tool owns (a real cluster's namespace and configmaps), 16 at a time.
    pub async fn create(&self, http: &Http) -> anyhow::Result<()> {
        let Objects::OwnConfigMaps { namespace, count, .. } = self else { return Ok(()) };
        let ns = format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{namespace}"}}}}"#);
        http.json(Method::POST, "/api/v1/namespaces", "application/json", ns).await?;
        let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let (http, next, me, namespace, count) = (http.clone(), next.clone(), self.clone(), namespace.clone(), *count);
                tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= count {
                            return Ok::<_, anyhow::Error>(());
                        }
                        let body = format!(
                            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"load-{i:06}","labels":{{"{SHARD_LABEL}":"{}"}}}},"data":{{"k":"v"}}}}"#,
                            me.shard_of(i)
                        );
                        http.json(Method::POST, &format!("/api/v1/namespaces/{namespace}/configmaps"), "application/json", body).await?;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await??;
        }
        Ok(())
    }

    /// Deletes what [`Objects::create`] made.
    pub async fn delete(&self, http: &Http) -> anyhow::Result<()> {
        if let Objects::OwnConfigMaps { namespace, .. } = self {
            http.send(Method::DELETE, &format!("/api/v1/namespaces/{namespace}"), &[], None).await?;
        }
        Ok(())
    }
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

/// `writers` tasks writing `rate` per second in all until `stop`; every acknowledged write.
pub async fn write_all(http: &Http, objects: &Objects, rate: f64, writers: usize, stop: Instant) -> anyhow::Result<Vec<Write>> {
    let tasks: Vec<_> =
        (0..writers.max(1)).map(|_| tokio::spawn(write(http.clone(), objects.clone(), rate / writers.max(1) as f64, stop))).collect();
    let mut writes = Vec::new();
    for t in tasks {
        writes.extend(t.await?);
    }
    Ok(writes)
}

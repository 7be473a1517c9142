//! Writes at a set rate: merge patches of one annotation on the simulator's
//! generated objects (pods `app-DDDDD-IIIIIII`, configmaps `config-IIIIII`,
//! spread over namespaces `ns-NNNN`), each acknowledged with its revision.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use rand::Rng;

use crate::procs::first_revision;

/// A client for writes (and watches) with request bodies.
pub type WriteClient = Client<HttpConnector, Full<Bytes>>;

/// Which generated objects to write.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// `count` pods over 10 namespaces.
    Pods { count: usize },
    /// `count` configmaps over 10 namespaces.
    ConfigMaps { count: usize },
}

impl Target {
    /// The path of the `i`-th object.
    fn path(self, i: usize) -> String {
        match self {
            Target::Pods { .. } => format!("/api/v1/namespaces/ns-{:04}/pods/app-{:05}-{i:07}", i % 10, i / 10),
            Target::ConfigMaps { .. } => format!("/api/v1/namespaces/ns-{:04}/configmaps/config-{i:06}", i % 10),
        }
    }

    fn count(self) -> usize {
        match self {
            Target::Pods { count } | Target::ConfigMaps { count } => count,
        }
    }
}

/// One acknowledged write: the index of the object, its new revision, when it was acknowledged.
#[derive(Debug, Clone, Copy)]
pub struct Write {
    /// Which object (as [`Target`] numbers them).
    pub index: usize,
    /// The revision the write committed at.
    pub rv: u64,
    /// When the simulator acknowledged it.
    pub acked: Instant,
}

/// Writes `rate` updates per second of random objects of `target` to the simulator at `sim` until `stop`.
pub async fn write(client: WriteClient, sim: String, target: Target, rate: f64, stop: Instant) -> Vec<Write> {
    let mut out = Vec::new();
    let every = Duration::from_secs_f64(1.0 / rate.max(0.001));
    let mut next = Instant::now();
    let mut seq = 0u64;
    while next < stop {
        tokio::time::sleep_until(next.into()).await;
        next += every;
        let index = rand::rng().random_range(0..target.count().max(1));
        seq += 1;
        let patch = format!(r#"{{"metadata":{{"annotations":{{"loadtest":"{seq}"}}}}}}"#);
        let url = format!("{sim}{}", target.path(index));
        let Ok(req) = hyper::Request::patch(url).header("content-type", "application/merge-patch+json").body(Full::new(Bytes::from(patch)))
        else {
            continue;
        };
        let Ok(resp) = client.request(req).await else { continue };
        let Ok(body) = resp.into_body().collect().await else { continue };
        if let Some(rv) = first_revision(&body.to_bytes()) {
            out.push(Write { index, rv, acked: Instant::now() });
        }
    }
    out
}

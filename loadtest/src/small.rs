//! `loadtest small`: the small requests most of a cluster's traffic is — a
//! consistent GET of a cached pod, the first page of 500 pods as a Table
//! (`kubectl get pods`), a GET of a Service (a resource kache does not
//! cache by default) and a PATCH of a ConfigMap — each in a run of its own,
//! sent to the direct target and to kache interleaved: each sample sends
//! the request to both, which goes first alternating, one at a time, each
//! timed from sending to the body's end. The write runs last, so the reads
//! meet only the cluster's own writes (a consistent read of a resource
//! quiet since another's write needs a proof upstream gives about a second
//! later, so it goes upstream: interleaved with the PATCHes, every Table
//! page would). Per request and target: p50, p90 and p99, what kache adds,
//! and for kache how it answered (its own `kache_requests_total`, by road
//! and reason, before and after the run).
//!
//! On a real cluster (`--kubeconfig` and `--kache`): kache must cache pods
//! (`--resources pods,configmaps` measures the issue's four rows); the
//! ConfigMap is one the tool creates in a namespace of its own and deletes
//! at the end; the Service is `default/kubernetes`. Without a kubeconfig:
//! the simulator and kache the tool starts, a Service it creates.
//!
//! Bounded: `--samples` of each; nothing else in flight.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Args;
use http::Method;
use http_body_util::BodyExt;
use serde_json::json;

use crate::cleanup::Cleanup;
use crate::objects::Objects;
use crate::roads::{self, roads};
use crate::target::{Fleet, Target, TargetArgs};

/// Options of `loadtest small`.
#[derive(Debug, Args)]
pub struct SmallArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Samples of each request on each target.
    #[arg(long, default_value_t = 150)]
    samples: usize,
    /// Pods in the simulated cluster (without --kubeconfig).
    #[arg(long, default_value_t = 10_000)]
    pods: usize,
}

/// What `kubectl get` asks for: a Table, in either version, else JSON.
const KUBECTL_TABLE: &str =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/// One request of the run.
#[derive(Debug, Clone)]
struct Small {
    /// Its row in the report.
    name: &'static str,
    method: Method,
    path: String,
    headers: Vec<(&'static str, &'static str)>,
    /// The body of a write (`{}` marks where the sample's number goes).
    body: Option<&'static str>,
    /// Its `verb` and `resource` in kache's `kache_requests_total`.
    counted_as: (&'static str, &'static str),
}

impl Small {
    async fn send(&self, target: &Target, sample: usize) -> anyhow::Result<Duration> {
        let body = self.body.map(|b| Bytes::from(b.replace("{}", &sample.to_string())));
        let started = Instant::now();
        let resp = target.http.send(self.method.clone(), &self.path, &self.headers, body).await?;
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        let took = started.elapsed();
        if !status.is_success() {
            bail!("{} {} on {}: {status}: {}", self.method, self.path, target.name, String::from_utf8_lossy(&body[..body.len().min(300)]));
        }
        Ok(took)
    }
}

/// The run's four requests, on objects found or made on `fleet`'s direct target.
async fn requests(fleet: &Fleet, cleanup: &Cleanup) -> anyhow::Result<Vec<Small>> {
    let direct = fleet.direct();
    let (status, page) = direct.http.get("/api/v1/pods?limit=1", &[]).await?;
    let page: serde_json::Value = serde_json::from_slice(&page).context("a list of pods")?;
    let pod = &page["items"][0]["metadata"];
    let (Some(ns), Some(name)) = (pod["namespace"].as_str(), pod["name"].as_str()) else {
        bail!("no pod to read (status {status}): the run reads a pod kache caches");
    };
    let (service, configmap) = if fleet.sim_url.is_some() {
        let body =
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kache-loadtest-small"}, "spec": {"ports": [{"port": 80}]}});
        direct.http.create("/api/v1/namespaces/ns-0000/services", body.to_string()).await?;
        ("/api/v1/namespaces/ns-0000/services/kache-loadtest-small".to_string(), Objects::SimConfigMaps { count: 1 }.path(0))
    } else {
        let own = Objects::OwnConfigMaps { namespace: format!("kache-loadtest-{}", std::process::id()), count: 1 };
        own.create(direct, cleanup, &indicatif::ProgressBar::hidden()).await?;
        ("/api/v1/namespaces/default/services/kubernetes".to_string(), own.path(0))
    };
    Ok(vec![
        Small {
            name: "consistent GET of a cached pod",
            method: Method::GET,
            path: format!("/api/v1/namespaces/{ns}/pods/{name}"),
            headers: vec![("accept", "application/json")],
            body: None,
            counted_as: ("get", "pods"),
        },
        Small {
            name: "first page of 500 pods, Table",
            method: Method::GET,
            path: "/api/v1/pods?limit=500".into(),
            headers: vec![("accept", KUBECTL_TABLE)],
            body: None,
            counted_as: ("list", "pods"),
        },
        Small {
            name: "GET of a Service",
            method: Method::GET,
            path: service,
            headers: vec![("accept", "application/json")],
            body: None,
            counted_as: ("get", "services"),
        },
        Small {
            name: "PATCH of a ConfigMap",
            method: Method::PATCH,
            path: configmap,
            headers: vec![("content-type", "application/merge-patch+json"), ("accept", "application/json")],
            body: Some(r#"{"metadata":{"annotations":{"kache-loadtest/sample":"{}"}}}"#),
            counted_as: ("patch", "configmaps"),
        },
    ])
}

/// The `q` quantile of `samples` (sorted), in milliseconds.
fn ms(samples: &[Duration], q: f64) -> f64 {
    let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
    samples[i].as_secs_f64() * 1e3
}

/// Runs the scenario and prints its table.
pub async fn run_all(args: SmallArgs, cleanup: Cleanup) -> anyhow::Result<()> {
    if args.target.plot.is_some() {
        bail!("`small` prints a table (and --json); it draws no plot");
    }
    if args.samples == 0 {
        bail!("--samples must be at least 1");
    }
    let pods = args.pods.to_string();
    let sim_args: Vec<String> = ["--pods", &pods, "--configmaps", "10", "--namespaces", "10"].map(String::from).to_vec();
    let fleet = Fleet::start(&args.target, &sim_args, &["--resources", "pods,configmaps"]).await?;
    let Some(kache) = fleet.targets.get(1) else { bail!("give --kache URL: the run measures kache beside the cluster") };
    let smalls = requests(&fleet, &cleanup).await?;
    let before = roads(kache).await?;
    let mut times: Vec<[Vec<Duration>; 2]> = smalls.iter().map(|_| [Vec::new(), Vec::new()]).collect();
    for (small, times) in smalls.iter().zip(&mut times) {
        for sample in 0..args.samples {
            let order = if sample % 2 == 0 { [0, 1] } else { [1, 0] };
            for side in order {
                times[side].push(small.send(&fleet.targets[side], sample).await?);
            }
        }
    }
    let after = roads(kache).await?;
    let direct = fleet.direct().name.clone();
    println!(
        "{} samples of each request in a run of its own, interleaved ({direct} and kache); ms from sending to the body's end\n",
        args.samples
    );
    println!(
        "{:<32} {:>22} {:>22} {:>8} {:>8}  how kache answered",
        "request",
        format!("{direct} p50/p90/p99"),
        "kache p50/p90/p99",
        "+p50",
        "+p99"
    );
    let mut rows = Vec::new();
    for (small, mut times) in smalls.iter().zip(times) {
        times.iter_mut().for_each(|t| t.sort());
        let q = |side: usize| [ms(&times[side], 0.5), ms(&times[side], 0.9), ms(&times[side], 0.99)];
        let (d, k) = (q(0), q(1));
        let key = (small.counted_as.0.to_string(), small.counted_as.1.to_string());
        let answered = roads::since(&before, &after, &key);
        println!(
            "{:<32} {:>22} {:>22} {:>+8.2} {:>+8.2}  {}",
            small.name,
            format!("{:.2} / {:.2} / {:.2}", d[0], d[1], d[2]),
            format!("{:.2} / {:.2} / {:.2}", k[0], k[1], k[2]),
            k[0] - d[0],
            k[2] - d[2],
            answered.join(", ")
        );
        rows.push(json!({"request": small.name, direct.as_str(): d, "kache": k, "kache_answered": answered}));
    }
    if let Some(path) = &args.target.json {
        std::fs::write(path, serde_json::to_vec_pretty(&json!({"samples": args.samples, "rows": rows}))?)?;
    }
    Ok(())
}

//! Watch and selection micro-benchmarks on realistic pods (the simulator's
//! 4.6 KB pods of ReplicaSets):
//!
//! - `dispatch`: the cost per event of fanning it out to 1,000 or 10,000
//!   kubelet-pattern watchers (`spec.nodeName=node-i`, one per node) plus 0
//!   or 100 cluster-wide ones — from publish to every frame queued. It must
//!   not grow with the watchers an event does not concern.
//! - `select`: a list of one node's 100 pods and of one deployment's pods
//!   (the node and label indexes), against a field no index holds (a scan),
//!   on 50,000 pods; and a kubelet's filter asked of each of them, as a new
//!   watch asks it of every event it replays.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apimachinery::negotiate::{Encoding, Negotiated, Shape};
use apimachinery::params::ListOptions;
use apimachinery::resource::Resource;
use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// The objects, in JSON.
const JSON: Negotiated = Negotiated { encoding: Encoding::Json, shape: Shape::Objects, pretty: false, gzip: false };
use kache::api::filter::Filter;
use kache::api::list;
use kache::api::source::Answer;
use kache::api::watch::{Dispatcher, Subscription};
use kache::cache::CachedResource;
use kache::store::{CachedObject, EventType, StoreConfig, StoreWriter};
use kache::upstream::client::Client;
use kache::upstream::connect::ConnectArgs;
use kache::upstream::freshness::Freshness;

const PODS: usize = 50_000;

fn pods() -> Resource {
    Resource::new("", "v1", "pods", "Pod", true)
}

/// The simulator's `i`-th pod on one of `nodes`, at revision `rv`, as the store parses it.
fn pod(i: usize, nodes: usize, rv: u64) -> CachedObject {
    let (_, mut v) = sim::generate::pod(i, nodes, 10);
    v["metadata"]["resourceVersion"] = rv.to_string().into();
    CachedObject::parse(Bytes::from(serde_json::to_vec(&v).expect("JSON")), &pods().field_paths()).expect("a pod")
}

/// A cached resource of `PODS` pods on `nodes` nodes, and its writer (no
/// upstream: the benchmarks make no consistent reads).
fn cluster(rt: &tokio::runtime::Runtime, nodes: usize) -> (StoreWriter, Arc<CachedResource>, u64) {
    let info = pods();
    let (mut writer, reader) = StoreWriter::new(CachedResource::store_config(&info, &StoreConfig::default()));
    writer.replace((0..PODS).map(|i| pod(i, nodes, i as u64 + 1)).collect(), PODS as u64);
    writer.publish();
    let nowhere = ConnectArgs { server: Some("http://127.0.0.1:9".into()), ..ConnectArgs::default() };
    let client = Client::new(&rt.block_on(nowhere.resolve()).expect("credentials")).expect("a client");
    let fresh = Arc::new(Freshness::new(client, info.clone(), reader.clone(), tokio::sync::mpsc::unbounded_channel().0));
    (writer, Arc::new(CachedResource::new(info, reader, Arc::default(), fresh)), PODS as u64)
}

fn filter(query: &str) -> Filter {
    let opts = ListOptions::decode(query).expect("options");
    Filter::new(&pods(), None, &opts, opts.shard().expect("a valid shard selector"))
}

/// 100 cluster-wide watchers, unselective, label-selected or sharded: a
/// sharded watcher should cost what a label-selected one does.
const CLUSTER_WIDE: [(&str, usize, &str); 4] = [
    ("0 cluster-wide", 0, ""),
    ("100 cluster-wide", 100, ""),
    ("100 label-selected", 100, "labelSelector=app%3Dapp-1"),
    ("100 sharded", 100, "shardSelector=shardRange%28object.metadata.uid%2C%270x0000000000000000%27%2C%270x4000000000000000%27%29"),
];

fn dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
    let mut group = c.benchmark_group("dispatch");
    group.throughput(Throughput::Elements(1)).sample_size(20).measurement_time(Duration::from_secs(5));
    for nodes in [1_000, 10_000] {
        for (watchers, cluster_wide, query) in CLUSTER_WIDE {
            let (mut writer, res, mut rv) = cluster(&rt, nodes);
            let epoch = res.store().view().epoch();
            let dispatcher = rt.block_on(async { Dispatcher::start(res.clone()) });
            let mut subs: Vec<Subscription> = rt.block_on(async {
                let mut subs = Vec::new();
                for n in 0..nodes {
                    let f = filter(&format!("fieldSelector=spec.nodeName%3Dnode-{n:04}"));
                    subs.push(dispatcher.subscribe(f, JSON, epoch, 1024).await.expect("registered"));
                }
                for _ in 0..cluster_wide {
                    subs.push(dispatcher.subscribe(filter(query), JSON, epoch, 1024).await.expect("registered"));
                }
                subs
            });
            let id = BenchmarkId::new(format!("{nodes} kubelets"), watchers);
            group.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    let mut spent = Duration::ZERO;
                    // Batches of 100 events, one publish each, then every queue drained (not timed).
                    for batch in 0..iters.div_ceil(100) {
                        let n = (iters - batch * 100).min(100);
                        let objects: Vec<CachedObject> = (0..n).map(|k| pod((rv + k) as usize % PODS, nodes, rv + k + 1)).collect();
                        let started = Instant::now();
                        for o in objects {
                            rv += 1;
                            writer.apply(EventType::Modified, o, started).expect("applies");
                        }
                        writer.publish();
                        while subs[0].dispatched() < rv {
                            std::thread::yield_now();
                        }
                        spent += started.elapsed();
                        for s in &mut subs {
                            while s.frames.try_recv().is_ok() {}
                        }
                    }
                    spent
                })
            });
            drop(subs);
        }
    }
    group.finish();
}

fn select(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    // 100 pods a node, 10 a deployment.
    let (_writer, res, _) = cluster(&rt, PODS / 100);
    let mut group = c.benchmark_group("select");
    for (name, query) in [
        ("node's 100 pods (index)", "resourceVersion=0&fieldSelector=spec.nodeName%3Dnode-0007"),
        ("app=X, 10 pods (index)", "resourceVersion=0&labelSelector=app%3Dapp-77"),
        ("status.phase=Pending (scan)", "resourceVersion=0&fieldSelector=status.phase%3DPending"),
    ] {
        let opts = ListOptions::decode(query).expect("options");
        group.bench_function(name, |b| {
            b.iter(|| match rt.block_on(list::list(&res, None, &opts, Duration::ZERO, None)) {
                Ok(Answer::Memory(p)) => black_box(p.items.len()),
                other => panic!("{other:?}"),
            })
        });
    }
    let head = res.store().view().head().clone();
    let kubelet = filter("fieldSelector=spec.nodeName%3Dnode-0007");
    group.throughput(Throughput::Elements(PODS as u64));
    group.bench_function("a node's filter asked of every pod (a replay)", |b| {
        b.iter(|| head.iter().filter(|o| kubelet.matches(black_box(o))).count())
    });
    group.finish();
}

criterion_group!(benches, dispatch, select);
criterion_main!(benches);

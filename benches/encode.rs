//! Encoding micro-benchmarks on the apiserver's realistic pod
//! (`tests/reference/apiserver-1.36/pod-realistic.json`, 500 renamed
//! copies): one pod's protobuf encoding (paid once per revision), a page
//! of 500 as a JSON list, as a protobuf list of already-encoded messages,
//! and gzipped as kache gzips (level 1); and label-selector matching.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Write;

use apimachinery::list::{ListMeta, json_list};
use apimachinery::protobuf;
use apimachinery::resource::builtin;
use apimachinery::selector::LabelSelector;
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const PAGE: usize = 500;

fn pods() -> Vec<Bytes> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/apiserver-1.36/pod-realistic.json");
    let pod: serde_json::Value = serde_json::from_slice(&std::fs::read(path).expect("the realistic pod")).expect("JSON");
    (0..PAGE)
        .map(|i| {
            let mut p = pod.clone();
            p["metadata"]["name"] = format!("web-{i:05}").into();
            Bytes::from(serde_json::to_vec(&p).expect("serializes"))
        })
        .collect()
}

fn encoding(c: &mut Criterion) {
    let pods = pods();
    let bytes: usize = pods.iter().map(Bytes::len).sum();
    let res = builtin("", "v1", "pods").expect("pods").resource();
    let meta = ListMeta { resource_version: 12345, continue_token: Some("token".into()), remaining_item_count: Some(1000) };
    let mut g = c.benchmark_group("encode");
    g.throughput(Throughput::Bytes(pods[0].len() as u64));
    g.bench_function("protobuf: one pod from its JSON", |b| {
        b.iter(|| protobuf::encode("api.core.v1.Pod", black_box(&pods[0])).expect("encodes"))
    });
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("JSON list of 500 pods", |b| b.iter(|| json_list(&res, &meta, black_box(&pods)).concat()));
    let messages: Vec<Vec<Bytes>> =
        pods.iter().map(|p| vec![Bytes::from(protobuf::encode("api.core.v1.Pod", p).expect("encodes"))]).collect();
    let list_meta = protobuf::list_meta(meta.resource_version, meta.continue_token.as_deref(), meta.remaining_item_count);
    g.bench_function("protobuf list of 500 encoded pods", |b| {
        b.iter(|| protobuf::list_parts("v1", "PodList", &list_meta, black_box(messages.clone())).concat())
    });
    let page = json_list(&res, &meta, &pods).concat();
    g.bench_function("gzip (level 1) of the JSON list", |b| {
        b.iter(|| {
            let mut gz = flate2::write::GzEncoder::new(Vec::with_capacity(page.len() / 8), flate2::Compression::fast());
            gz.write_all(black_box(&page)).expect("in memory");
            gz.finish().expect("in memory")
        })
    });
    g.finish();
}

fn selectors(c: &mut Criterion) {
    let labels: Vec<BTreeMap<String, String>> = (0..10_000)
        .map(|i| {
            [
                ("app", format!("app-{}", i % 100)),
                ("tier", ["web", "db", "cache"][i % 3].to_string()),
                ("pod-template-hash", format!("{i:x}")),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
        })
        .collect();
    let selector = LabelSelector::parse("app in (app-7,app-77),tier!=db,!canary").expect("a selector");
    let mut g = c.benchmark_group("select");
    g.throughput(Throughput::Elements(labels.len() as u64));
    g.bench_function("label selector over 10k label sets", |b| b.iter(|| labels.iter().filter(|l| selector.matches(black_box(l))).count()));
    g.finish();
}

criterion_group!(benches, encoding, selectors);
criterion_main!(benches);

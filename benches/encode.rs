//! Encoding micro-benchmarks on the apiserver's realistic pod
//! (`tests/reference/apiserver-1.36/pod-realistic.json`, 500 copies, each
//! with its own name, uid, IPs, node, times and container ids, as a real
//! cluster's pods differ): one pod's protobuf encoding (paid once per
//! revision), a page of 500 as a JSON list, as a protobuf list of
//! already-encoded messages, gzipped at a few levels (kache's is
//! `GZIP_LEVEL`; each level's compressed size is printed first); and
//! label-selector matching.
//!
//! Measured beside it with Go's `compress/gzip` level 1 — the
//! apiserver's — on the same bytes: 96 MB of such pods as one JSON list, Go
//! 5.2 MB, zlib-rs level 1 8.1 MB, level 2 3.4 MB, level 4 3.4 MB; the
//! simulator's 534 MB of pods, Go 21.6 MB, zlib-rs level 1 38.1 MB,
//! level 2 25.5 MB, level 4 12.0 MB (0.47 s, level 1 0.50 s).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Write;

use apimachinery::list::{Envelope, ListMeta, json_list};
use apimachinery::protobuf;
use apimachinery::resource::builtin;
use apimachinery::selector::LabelSelector;
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const PAGE: usize = 500;

/// `n` pseudo-random hex digits (xorshift: the same pods every run).
fn hex(state: &mut u64, n: usize) -> String {
    (0..n)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            char::from_digit((*state % 16) as u32, 16).expect("a hex digit")
        })
        .collect()
}

fn pods() -> Vec<Bytes> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/apiserver-1.36/pod-realistic.json");
    let pod: serde_json::Value = serde_json::from_slice(&std::fs::read(path).expect("the realistic pod")).expect("JSON");
    let mut state = 0x9e37_79b9_7f4a_7c15;
    (0..PAGE)
        .map(|i| {
            let mut p = pod.clone();
            let s = &mut state;
            let uid = format!("{}-{}-{}-{}-{}", hex(s, 8), hex(s, 4), hex(s, 4), hex(s, 4), hex(s, 12));
            let (ip, host) = (i % 250 + 1, (i / 250) % 250 + 1);
            let at = format!("2026-11-{:02}T{:02}:{:02}:{:02}Z", i % 24 + 1, i % 23, i % 59, (i * 7) % 59);
            p["metadata"]["name"] = format!("web-{}-{}", hex(s, 10), hex(s, 5)).into();
            p["metadata"]["uid"] = uid.into();
            p["metadata"]["creationTimestamp"] = at.clone().into();
            p["spec"]["nodeName"] = format!("node-{:05}", i * 37 % 5000).into();
            p["status"]["podIP"] = format!("10.{}.{}.{ip}", i % 256, i / 256).into();
            p["status"]["hostIP"] = format!("172.16.{host}.{ip}").into();
            p["status"]["startTime"] = at.into();
            if let Some(containers) = p["status"]["containerStatuses"].as_array_mut() {
                for c in containers {
                    c["containerID"] = format!("containerd://{}", hex(s, 64)).into();
                }
            }
            Bytes::from(serde_json::to_vec(&p).expect("serializes"))
        })
        .collect()
}

/// gzip of `data` at `level`, as kache writes it.
fn gzip(data: &[u8], level: u32) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 8), flate2::Compression::new(level));
    gz.write_all(data).expect("in memory");
    gz.finish().expect("in memory")
}

fn encoding(c: &mut Criterion) {
    let pods = pods();
    let bytes: usize = pods.iter().map(Bytes::len).sum();
    let res = builtin("", "v1", "pods").expect("pods").resource();
    let meta =
        ListMeta { resource_version: 12345, continue_token: Some("token".into()), remaining_item_count: Some(1000), shard_info: None };
    let mut g = c.benchmark_group("encode");
    g.throughput(Throughput::Bytes(pods[0].len() as u64));
    g.bench_function("protobuf: one pod from its JSON", |b| {
        b.iter(|| protobuf::encode("api.core.v1.Pod", black_box(&pods[0])).expect("encodes"))
    });
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("JSON list of 500 pods", |b| b.iter(|| json_list(&res, &meta, Envelope::Typed, black_box(&pods)).concat()));
    let messages: Vec<Vec<Bytes>> =
        pods.iter().map(|p| vec![Bytes::from(protobuf::encode("api.core.v1.Pod", p).expect("encodes"))]).collect();
    let list_meta = protobuf::list_meta(&meta);
    g.bench_function("protobuf list of 500 encoded pods", |b| {
        b.iter(|| protobuf::list_parts("v1", "PodList", &list_meta, black_box(messages.clone())).concat())
    });
    let json = json_list(&res, &meta, Envelope::Typed, &pods).concat();
    let proto = protobuf::list_parts("v1", "PodList", &list_meta, messages).concat();
    g.finish();
    let mut g = c.benchmark_group("gzip");
    for (what, page) in [("JSON", &json), ("protobuf", &proto)] {
        g.throughput(Throughput::Bytes(page.len() as u64));
        for level in [1, 2, kache::api::body::GZIP_LEVEL, 6] {
            let size = gzip(page, level).len();
            println!(
                "gzip level {level} of the {what} list: {} of {} bytes ({:.2} %)",
                size,
                page.len(),
                100.0 * size as f64 / page.len() as f64
            );
            g.bench_function(format!("level {level} of the {what} list of 500 pods"), |b| b.iter(|| gzip(black_box(page), level)));
        }
    }
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

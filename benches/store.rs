//! Store micro-benchmarks at 100k objects of ~2 KiB: applying events,
//! iterating, a page of 500 from a pinned snapshot, rebuilding a snapshot
//! 1,000 and 100,000 events back, and reads while the writer applies events.
//! Memory overhead is printed once.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kache::store::{CachedObject, EventType, StoreConfig, StoreReader, StoreWriter};

const OBJECTS: usize = 100_000;
const POD_FIELDS: &[&str] = &["spec.nodeName", "status.phase"];

fn pod(i: usize, rv: u64) -> Bytes {
    let pad = "x".repeat(1500);
    Bytes::from(format!(
        r#"{{"metadata":{{"name":"pod-{i:06}","namespace":"ns-{:03}","uid":"00000000-0000-0000-0000-{i:012}","resourceVersion":"{rv}","labels":{{"app":"app-{}","tier":"{}","pod-template-hash":"7d9f8c6b5"}}}},"spec":{{"nodeName":"node-{:04}","containers":[{{"name":"c","image":"registry.example/app:1.2.3","args":["{pad}"]}}]}},"status":{{"phase":"Running","podIP":"10.0.{}.{}"}}}}"#,
        i % 100,
        i % 50,
        i % 3,
        i % 500,
        (i / 250) % 250,
        i % 250
    ))
}

fn parsed(i: usize, rv: u64) -> CachedObject {
    CachedObject::parse(pod(i, rv), POD_FIELDS).expect("a pod")
}

/// A store of 100k pods at revision 100k, with `log` modify events after it.
fn store(log: usize, config: StoreConfig) -> (StoreWriter, StoreReader, u64) {
    let (mut writer, reader) = StoreWriter::new(config);
    writer.replace((0..OBJECTS).map(|i| parsed(i, i as u64 + 1)).collect(), OBJECTS as u64);
    let mut rv = OBJECTS as u64;
    let now = Instant::now();
    for _ in 0..log {
        rv += 1;
        writer.apply(EventType::Modified, parsed(rv as usize % OBJECTS, rv), now).expect("applies");
    }
    writer.publish();
    (writer, reader, rv)
}

/// Pre-parsed modify events after `rv`.
fn events(n: usize, rv: u64) -> Vec<CachedObject> {
    (1..=n as u64).map(|k| parsed((rv + k) as usize % OBJECTS, rv + k)).collect()
}

/// Applies `objects` as modifications, publishing every 64 (a received chunk's worth).
fn apply_all(writer: &mut StoreWriter, objects: Vec<CachedObject>) {
    let now = Instant::now();
    for (n, o) in objects.into_iter().enumerate() {
        writer.apply(EventType::Modified, o, now).expect("applies");
        if n % 64 == 63 {
            writer.publish();
        }
    }
    writer.publish();
}

fn benches(c: &mut Criterion) {
    let (mut writer, reader, mut rv) = store(0, StoreConfig::default());
    let memory = {
        let (mut w, r, _) = store(0, StoreConfig::default());
        // A full 5-minute log at 100 events/s.
        apply_all(&mut w, events(30_000, OBJECTS as u64));
        r.memory()
    };
    println!(
        "memory at {} objects + {} events: object data {} MB, overhead {} MB ({:.1}%)",
        memory.objects,
        memory.events,
        memory.object_bytes / 1_000_000,
        memory.overhead_bytes / 1_000_000,
        memory.overhead_bytes as f64 / memory.object_bytes.max(1) as f64 * 100.0
    );

    let mut g = c.benchmark_group("store");
    g.measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1)).sample_size(20);

    const BATCH: usize = 10_000;
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("apply 10k events at 100k objects (pre-parsed)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let batch = events(BATCH, rv);
                rv += BATCH as u64;
                let t = Instant::now();
                apply_all(&mut writer, batch);
                total += t.elapsed();
            }
            total
        })
    });
    g.bench_function("parse + apply 10k events at 100k objects", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let raw: Vec<Bytes> = (1..=BATCH as u64).map(|k| pod((rv + k) as usize % OBJECTS, rv + k)).collect();
                let t = Instant::now();
                let now = Instant::now();
                for (n, bytes) in raw.into_iter().enumerate() {
                    rv += 1;
                    writer.apply(EventType::Modified, CachedObject::parse(bytes, POD_FIELDS).expect("a pod"), now).expect("applies");
                    if n % 64 == 63 {
                        writer.publish();
                    }
                }
                writer.publish();
                total += t.elapsed();
            }
            total
        })
    });

    g.throughput(Throughput::Elements(OBJECTS as u64));
    g.bench_function("iterate 100k", |b| b.iter(|| reader.view().head().iter().map(|o| o.bytes().len()).sum::<usize>()));

    g.throughput(Throughput::Elements(500));
    let now = Instant::now();
    reader.pin(reader.view().head().clone(), now);
    let pinned_rv = reader.view().confirmed_rv();
    let middle = reader.view().head().iter().nth(OBJECTS / 2).expect("an object").key().clone();
    g.bench_function("page of 500 from a pinned snapshot of 100k", |b| {
        b.iter(|| {
            let snap = reader.pinned(pinned_rv, now).expect("pinned");
            snap.after(&middle).take(500).map(|o| o.bytes().len()).sum::<usize>()
        })
    });
    drop((writer, reader));

    let (_w, deep, head) = store(100_000, StoreConfig { max_events: 200_000, ..StoreConfig::default() });
    g.throughput(Throughput::Elements(1));
    for back in [1_000u64, 100_000] {
        g.bench_function(format!("snapshot_at {back} events back"), |b| {
            b.iter(|| black_box(deep.view().snapshot_at(head - back).expect("in the window").len()))
        });
    }
    drop((_w, deep));

    concurrent(&mut g);
    g.finish();
}

/// The writer's rate alone and with two readers paging, and the readers' rate.
fn concurrent(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    const BATCH: usize = 50_000;
    g.throughput(Throughput::Elements(BATCH as u64));
    for readers in [0usize, 2] {
        let (mut writer, reader, mut rv) = store(0, StoreConfig::default());
        let stop = Arc::new(AtomicBool::new(false));
        // Pages read while the writer is applying (not while events are generated).
        let writing = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..readers)
            .map(|_| {
                let (reader, stop, writing, reads) = (reader.clone(), stop.clone(), writing.clone(), reads.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let view = reader.view();
                        black_box(view.head().from("ns-050/").take(500).map(|o| o.bytes().len()).sum::<usize>());
                        if writing.load(Ordering::Relaxed) {
                            reads.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        let mut writer_time = Duration::ZERO;
        g.bench_function(format!("apply 50k events with {readers} readers paging"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let batch = events(BATCH, rv);
                    rv += BATCH as u64;
                    writing.store(true, Ordering::Relaxed);
                    let t = Instant::now();
                    apply_all(&mut writer, batch);
                    total += t.elapsed();
                    writing.store(false, Ordering::Relaxed);
                }
                writer_time += total;
                total
            })
        });
        stop.store(true, Ordering::Relaxed);
        threads.into_iter().for_each(|t| t.join().expect("a reader"));
        if readers > 0 {
            let secs = writer_time.as_secs_f64().max(1e-9);
            let pages = reads.load(Ordering::Relaxed);
            println!("{readers} readers: {pages} pages of 500 in {secs:.2}s of writing = {:.0} pages/s", pages as f64 / secs);
        }
    }
}

criterion_group!(store_benches, benches);
criterion_main!(store_benches);

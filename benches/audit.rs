//! Auditing's own cost per request, one thread making events while the
//! log's thread takes them (as `audit::log` does, from a buffer of the
//! default 10,000 events, gathering for 50 ms or a quarter of it, writing
//! nowhere): a kubelet's list (`RequestReceived` and `ResponseComplete`)
//! and its watch (and `ResponseStarted`), at `Metadata` for every request,
//! from the request's arrival to its last event. What the kernel's copy of
//! the lines into a file costs, and what the allocator's lock costs when
//! workers contend for it, are `loadtest audit`'s to measure.

use std::hint::black_box;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::auth::Attributes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http::HeaderMap;
use kache::audit::Auditor;
use kache::audit::event::{Level, ResponseStatus, Stage};
use kache::audit::policy::{Policy, Rule};
use kache::audit::record::{Arrival, Record};
use kache::audit::sink::{Backend, Lines, Queue, Sink};

/// An auditor at `Metadata` for everything, its log's thread taking lines as `audit::log`'s does.
fn auditor() -> Arc<Auditor> {
    let (queue, rx, _) = Queue::new(Backend::Log, 10_000);
    std::thread::spawn(move || {
        let mut lines = Lines::default();
        while rx.take_blocking(&mut lines, Duration::from_millis(50)) {
            lines.clear();
        }
    });
    let policy = Policy { rules: vec![Rule::at(Level::Metadata)], ..Policy::default() };
    Arc::new(Auditor { policy, sink: Sink::new(vec![queue]) })
}

/// A kubelet's request headers.
fn headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("user-agent", "kubelet/v1.36.2 (linux/amd64) kubernetes/98b3519".parse().expect("a header"));
    h.insert("audit-id", "0f8b0f0e-5e8e-4c3c-9d7e-2a0b8f7c6d5e".parse().expect("a header"));
    h
}

/// One request's audit, from arrival to its last event.
fn request(auditor: &Arc<Auditor>, headers: &HeaderMap, attributes: &Arc<Attributes>, query: &str) {
    let peer: IpAddr = [127, 0, 0, 1].into();
    let arrival = Arrival::of(headers, attributes.clone(), query, Some(peer));
    let mut record = Record::start(auditor, arrival, None).expect("audited");
    record.write(Stage::RequestReceived);
    record.annotate("kache.dev/road", "memory");
    record.respond(ResponseStatus::code(200));
    if record.long_running {
        record.write(Stage::ResponseStarted);
    }
    record.write(Stage::ResponseComplete);
    black_box(record);
}

fn kubelet(c: &mut Criterion) {
    let auditor = auditor();
    let headers = headers();
    let mut group = c.benchmark_group("audit");
    group.throughput(Throughput::Elements(1));
    for (name, query) in [
        ("list", "fieldSelector=spec.nodeName%3Dnode-42&resourceVersion=0"),
        ("watch", "allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dnode-42&resourceVersion=1234&timeoutSeconds=3&watch=true"),
    ] {
        let attributes = Arc::new(Attributes::of("GET", "/api/v1/pods", query));
        group.bench_function(name, |b| b.iter(|| request(&auditor, &headers, &attributes, query)));
    }
    group.finish();
}

criterion_group!(benches, kubelet);
criterion_main!(benches);

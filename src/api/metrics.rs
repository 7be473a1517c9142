//! `/metrics` in the Prometheus text format: what kache answered and passed
//! through, and per cached resource its readiness, revision, size, memory
//! and upstream traffic.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use super::Api;
use super::watch::WatchStats;

/// The exposition text.
pub fn render(api: &Api) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: Vec<(String, u64)>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    let c = &api.counters;
    metric(
        "kache_lists_served_total",
        "counter",
        "Lists answered from memory.",
        vec![(String::new(), c.lists_served.load(Ordering::Relaxed))],
    );
    metric(
        "kache_gets_served_total",
        "counter",
        "Single-object GETs answered from memory.",
        vec![(String::new(), c.gets_served.load(Ordering::Relaxed))],
    );
    metric(
        "kache_watches_served_total",
        "counter",
        "Watches answered from memory.",
        vec![(String::new(), c.watches_served.load(Ordering::Relaxed))],
    );
    metric(
        "kache_watches_passed_through_total",
        "counter",
        "Watches of cached resources passed through (no resourceVersion: a consistent start; or a revision not reached).",
        vec![(String::new(), c.watches_passed_through.load(Ordering::Relaxed))],
    );
    metric(
        "kache_passed_through_total",
        "counter",
        "Requests passed through to the apiserver.",
        vec![(String::new(), c.passed_through.load(Ordering::Relaxed))],
    );
    let per = |f: &dyn Fn(&crate::cache::CachedResource) -> u64| -> Vec<(String, u64)> {
        api.cache.resources().iter().map(|r| (format!("{{resource=\"{}\"}}", r.info.qualified()), f(r))).collect()
    };
    let memory: Vec<_> = api.cache.resources().iter().map(|r| r.store.memory()).collect();
    let mem = |f: &dyn Fn(&crate::store::MemoryStats) -> usize| -> Vec<(String, u64)> {
        api.cache.resources().iter().zip(&memory).map(|(r, m)| (format!("{{resource=\"{}\"}}", r.info.qualified()), f(m) as u64)).collect()
    };
    metric("kache_resource_ready", "gauge", "1 once the initial list is applied.", per(&|r| u64::from(r.status.is_ready())));
    metric(
        "kache_store_confirmed_revision",
        "gauge",
        "Revision up to which every upstream event is held.",
        per(&|r| r.store.view().confirmed_rv()),
    );
    metric("kache_store_oldest_revision", "gauge", "Oldest revision still served from memory.", per(&|r| r.store.view().oldest_rv()));
    metric("kache_store_objects", "gauge", "Objects at the head revision.", mem(&|m| m.objects));
    metric("kache_store_events", "gauge", "Events in the log.", mem(&|m| m.events));
    metric("kache_store_object_bytes", "gauge", "Bytes of object data held (each revision once).", mem(&|m| m.object_bytes));
    metric("kache_store_overhead_bytes", "gauge", "Estimated bytes besides object data.", mem(&|m| m.overhead_bytes));
    metric(
        "kache_upstream_lists_total",
        "counter",
        "Upstream lists (initial and re-lists).",
        per(&|r| r.status.lists.load(Ordering::Relaxed)),
    );
    metric("kache_upstream_watches_total", "counter", "Upstream watches started.", per(&|r| r.status.watches.load(Ordering::Relaxed)));
    metric(
        "kache_upstream_probes_total",
        "counter",
        "Upstream revision probes after broken watches.",
        per(&|r| r.status.probes.load(Ordering::Relaxed)),
    );
    metric("kache_upstream_events_total", "counter", "Upstream events applied.", per(&|r| r.status.events.load(Ordering::Relaxed)));
    metric(
        "kache_upstream_watch_open",
        "gauge",
        "1 while the resource's upstream watch is open.",
        per(&|r| u64::from(r.status.is_watching())),
    );
    let watch = |f: &dyn Fn(&WatchStats) -> u64| -> Vec<(String, u64)> {
        api.cache
            .resources()
            .iter()
            .zip(&api.dispatchers)
            .map(|(r, d)| (format!("{{resource=\"{}\"}}", r.info.qualified()), f(d.stats())))
            .collect()
    };
    metric("kache_watchers", "gauge", "Watches open from memory.", watch(&|s| s.open.load(Ordering::Relaxed)));
    metric(
        "kache_watch_events_delivered_total",
        "counter",
        "Live watch frames queued to watchers.",
        watch(&|s| s.delivered.load(Ordering::Relaxed)),
    );
    metric(
        "kache_watchers_closed_slow_total",
        "counter",
        "Watchers closed because they fell a full queue behind.",
        watch(&|s| s.closed_slow.load(Ordering::Relaxed)),
    );
    out
}

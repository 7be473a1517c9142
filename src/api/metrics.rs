//! `/metrics` in the Prometheus text format: what kache answered and passed
//! through, and per cached resource its readiness, revision, size, memory
//! and upstream traffic.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use crate::upstream::freshness::{NotFresh, WAIT_BUCKETS};

use super::Api;
use super::watch::WatchStats;

/// The text being written.
struct Exposition(String);

impl Exposition {
    /// One metric family of integer samples, each with its labels (`{…}` or empty).
    fn family(&mut self, name: &str, kind: &str, help: &str, samples: Vec<(String, u64)>) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(self.0, "{name}{labels} {v}");
        }
    }

    /// One histogram family: per label set, cumulative bucket counts (the last `+Inf`), sum and count.
    fn histogram(&mut self, name: &str, help: &str, bounds: &[f64], series: Vec<(String, Vec<u64>, f64)>) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (labels, buckets, sum) in series {
            let les = bounds.iter().map(f64::to_string).chain(["+Inf".to_string()]);
            for (le, n) in les.zip(&buckets) {
                let _ = writeln!(self.0, "{name}_bucket{{{labels},le=\"{le}\"}} {n}");
            }
            let _ = writeln!(self.0, "{name}_sum{{{labels}}} {sum}");
            let _ = writeln!(self.0, "{name}_count{{{labels}}} {}", buckets.last().copied().unwrap_or(0));
        }
    }
}

/// The exposition text.
pub fn render(api: &Api) -> String {
    let mut out = Exposition(String::new());
    let mut metric = |name: &str, kind: &str, help: &str, samples: Vec<(String, u64)>| out.family(name, kind, help, samples);
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
        "Watches of cached resources passed through (a consistent start not proven fresh, a revision not reached, an indented stream, or a table stream with bookmarks).",
        vec![(String::new(), c.watches_passed_through.load(Ordering::Relaxed))],
    );
    metric(
        "kache_passed_through_total",
        "counter",
        "Requests passed through to the apiserver.",
        vec![(String::new(), c.passed_through.load(Ordering::Relaxed))],
    );
    if let Some(gate) = &api.gate {
        let s = &gate.stats;
        for (name, help, v) in [
            ("kache_token_reviews_total", "TokenReviews sent upstream (cache misses).", &s.token_reviews),
            ("kache_access_reviews_total", "SubjectAccessReviews sent upstream (cache misses).", &s.access_reviews),
            ("kache_unauthenticated_total", "Requests refused with 401.", &s.unauthenticated),
            ("kache_forbidden_total", "Requests refused with 403.", &s.forbidden),
        ] {
            metric(name, "counter", help, vec![(String::new(), v.load(Ordering::Relaxed))]);
        }
    }
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
    metric(
        "kache_consistent_reads_fresh_total",
        "counter",
        "Consistent reads proven fresh and answered from memory.",
        per(&|r| r.fresh.stats.fresh.load(Ordering::Relaxed)),
    );
    let passed: Vec<(String, u64)> = api
        .cache
        .resources()
        .iter()
        .flat_map(|r| {
            [NotFresh::Quiet, NotFresh::Probe, NotFresh::Timeout].map(|why| {
                (
                    format!("{{resource=\"{}\",reason=\"{}\"}}", r.info.qualified(), why.as_str()),
                    r.fresh.stats.passed[why as usize].load(Ordering::Relaxed),
                )
            })
        })
        .collect();
    metric("kache_consistent_reads_passed_through_total", "counter", "Consistent reads passed through, by reason.", passed);
    metric(
        "kache_freshness_probes_total",
        "counter",
        "Upstream revision probes for consistent reads.",
        per(&|r| r.fresh.stats.probes.load(Ordering::Relaxed)),
    );
    metric(
        "kache_freshness_catch_ups_total",
        "counter",
        "Catch-up watches opened to prove a quiet resource fresh.",
        per(&|r| r.fresh.stats.catch_ups.load(Ordering::Relaxed)),
    );
    metric(
        "kache_freshness_proofs_total",
        "counter",
        "Catch-up watches that proved a revision.",
        per(&|r| r.fresh.stats.proofs.load(Ordering::Relaxed)),
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
    let waits = api
        .cache
        .resources()
        .iter()
        .map(|r| {
            let s = &r.fresh.stats;
            let buckets = s.waited.iter().map(|n| n.load(Ordering::Relaxed)).collect();
            (format!("resource=\"{}\"", r.info.qualified()), buckets, s.waited_micros.load(Ordering::Relaxed) as f64 / 1e6)
        })
        .collect();
    out.histogram(
        "kache_consistent_wait_seconds",
        "How long consistent reads answered from memory waited for proof.",
        &WAIT_BUCKETS,
        waits,
    );
    out.0
}

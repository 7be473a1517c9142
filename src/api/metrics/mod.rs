//! Metrics, through the `metrics` crate, exposed at `/metrics` by its
//! Prometheus exporter (text format 0.0.4).
//!
//! Two kinds of figures, and where each is taken:
//! - **per request**, recorded as each request is answered ([`observe`]):
//!   `kache_requests_total{verb,resource,source,reason,code}` (source
//!   `memory`, `upstream` — with the reason it passed through, one of
//!   [`PassThrough::ALL`], listed in the metric's help — or `kache`
//!   for its own endpoints and refusals), `kache_request_duration_seconds`
//!   (until the response head), `kache_response_bytes_total`;
//! - **per resource and process**, read from kache's own state when
//!   scraped ([`render`]): store size and revisions, the event log's window,
//!   staleness, upstream lists/watches/events, freshness proofs, watchers,
//!   memory pressure (`crate::budget`) and the budgets.
//!   The hot paths (the store, the dispatcher) keep their plain atomic
//!   counters; a scrape copies them (`absolute`), so serving costs nothing
//!   extra.
//!
//! The recorder is process-wide: [`install`] sets it once; kache's
//! counters then start at zero with the process.

use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use metrics::{counter, gauge};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::upstream::freshness::{NotFresh, WAIT_BUCKETS};

use super::shared::Api;
use super::source::PassThrough;

mod request;

pub use request::{Request, at_zero, observe};

/// Upper bounds (seconds) of request latency buckets.
const REQUEST_BUCKETS: [f64; 14] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// When [`install`] ran: the silence of a resource whose apiserver never answered counts from it.
static INSTALLED: OnceLock<Instant> = OnceLock::new();

/// Installs the Prometheus recorder for the process (once), describing every metric.
pub fn install() {
    INSTALLED.get_or_init(Instant::now);
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full("kache_request_duration_seconds".into()), &REQUEST_BUCKETS)
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full("kache_consistent_wait_seconds".into()), &WAIT_BUCKETS))
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full("kache_freshness_proof_seconds".into()), &WAIT_BUCKETS))
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full("kache_consistent_predicted_seconds".into()), &REQUEST_BUCKETS))
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full("kache_consistent_actual_seconds".into()), &REQUEST_BUCKETS))
            .and_then(|b| {
                let wait = "kache_flowcontrol_request_wait_duration_seconds".into();
                b.set_buckets_for_metric(Matcher::Full(wait), &crate::flowcontrol::metrics::WAIT_BUCKETS)
            });
        let recorder = match builder {
            Ok(b) => b.build_recorder(),
            Err(e) => {
                tracing::warn!(error = %e, "metrics are off");
                return None;
            }
        };
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed: /metrics shows kache's figures only from it");
            return None;
        }
        describe();
        Some(handle)
    });
}

fn describe() {
    use metrics::{describe_counter as c, describe_gauge as g, describe_histogram as h};
    let reasons: Vec<&str> = PassThrough::ALL.iter().map(|r| r.as_str()).collect();
    c!(
        "kache_requests_total",
        format!(
            "Requests answered, by verb, resource, source (memory, upstream, kache), pass-through reason ({}) and status code.",
            reasons.join(", ")
        )
    );
    h!("kache_request_duration_seconds", metrics::Unit::Seconds, "Time from a request's arrival to its response head, by verb and source.");
    c!("kache_response_bytes_total", metrics::Unit::Bytes, "Response body bytes sent, by verb and source.");
    crate::flowcontrol::metrics::describe();
    c!("kache_lists_served_total", "Lists answered from memory.");
    c!("kache_gets_served_total", "Single-object GETs answered from memory.");
    c!("kache_watches_served_total", "Watches answered from memory.");
    c!("kache_watches_passed_through_total", "Watches of cached resources passed through.");
    c!("kache_passed_through_total", "Requests passed through to the apiserver.");
    c!("kache_token_reviews_total", "TokenReviews sent upstream (cache misses).");
    c!("kache_access_reviews_total", "SubjectAccessReviews sent upstream (cache misses).");
    c!("kache_unauthenticated_total", "Requests refused with 401.");
    c!("kache_forbidden_total", "Requests refused with 403.");
    g!(
        "kache_resource_ready",
        "1 while the resource is answered from memory: listed, and the apiserver heard within --max-staleness (its /readyz check)."
    );
    g!("kache_store_confirmed_revision", "Revision up to which every upstream event is held.");
    g!("kache_store_oldest_revision", "Oldest revision still served from memory.");
    g!("kache_store_objects", "Objects at the head revision.");
    g!("kache_store_events", "Events in the log.");
    g!(
        "kache_store_log_window_seconds",
        metrics::Unit::Seconds,
        "Age of the oldest event in the log: how far back exact and continue reads reach."
    );
    g!("kache_store_object_bytes", metrics::Unit::Bytes, "Bytes of object data held (each revision once).");
    g!("kache_store_overhead_bytes", metrics::Unit::Bytes, "Estimated bytes besides object data.");
    c!("kache_upstream_lists_total", "Upstream lists (initial and re-lists).");
    c!("kache_upstream_relists_total", "Re-lists by cause: compacted (410), too large revision, revision went back, protocol.");
    c!("kache_upstream_relists_unchanged_total", "Re-lists that found exactly what kache held: no watch ended.");
    c!(
        "kache_consistency_checks_total",
        "Consistency checks against the apiserver's list at one revision, by result: match, mismatch, failed (not answerable)."
    );
    c!("kache_upstream_watches_total", "Upstream watches started (the first and every reconnect).");
    c!(
        "kache_upstream_probes_total",
        "Upstream revision probes: after broken watches and restored states, and the heartbeats of silent watches."
    );
    c!("kache_upstream_events_total", "Upstream events applied.");
    g!("kache_upstream_watch_open", "1 while the resource's upstream watch is open.");
    g!(
        "kache_upstream_silence_seconds",
        metrics::Unit::Seconds,
        "Time since the apiserver last answered for the resource (a list page, a watch frame; since kache started if it never did): its staleness bound's measure."
    );
    c!("kache_consistent_reads_fresh_total", "Consistent reads proven fresh and answered from memory.");
    c!("kache_consistent_reads_passed_through_total", "Consistent reads passed through, by reason.");
    h!("kache_consistent_wait_seconds", metrics::Unit::Seconds, "How long consistent reads answered from memory waited for proof.");
    c!("kache_freshness_probes_total", "Upstream revision probes for consistent reads.");
    c!(
        "kache_consistent_hedges_total",
        "Consistent reads that chose memory and were sent upstream too: their proof late (the first answer wins) or failed."
    );
    c!("kache_freshness_catch_ups_total", "Catch-up watches opened to prove a quiet resource fresh.");
    c!("kache_freshness_proofs_total", "Catch-up watches that proved a revision.");
    h!("kache_freshness_proof_seconds", metrics::Unit::Seconds, "How long each catch-up watch took to prove a revision.");
    g!(
        "kache_freshness_hit_ratio",
        "Share of recent freshness probes that found the store already at upstream's revision (moving average)."
    );
    g!(
        "kache_freshness_proof_expected_seconds",
        metrics::Unit::Seconds,
        "Expected delay of the next proof: a catch-up's, or kept warm the apiserver's bookmark tick (moving averages of measured ones)."
    );
    g!("kache_freshness_kept_warm", "1 while collection reads keep catch-up watches going, one every half second.");
    g!(
        "kache_consistent_small_list_upstream_seconds",
        metrics::Unit::Seconds,
        "What the resource's small consistent lists (under 256 KiB of objects) took upstream beyond a round trip (moving average): the least a list is expected to cost upstream."
    );
    h!(
        "kache_consistent_predicted_seconds",
        metrics::Unit::Seconds,
        "Consistent lists and GETs: the expected time of the source the plan chose (choice: memory or upstream), from arrival to the answer's end."
    );
    h!(
        "kache_consistent_actual_seconds",
        metrics::Unit::Seconds,
        "Consistent lists and GETs: what the answer took from arrival to its end, by the plan's choice (a late proof's hedge included)."
    );
    c!(
        "kache_consistent_plans_wrong_total",
        "Consistent lists and GETs whose source (choice: memory or upstream) took longer than the other was expected to: the plan guessed wrong."
    );
    g!(
        "kache_consistent_plan_memory_seconds",
        metrics::Unit::Seconds,
        "The last consistent read's expected time from memory beyond one round trip: kache's making plus the expected wait (for the proof, or for upstream after a probe that missed)."
    );
    g!(
        "kache_consistent_plan_upstream_seconds",
        metrics::Unit::Seconds,
        "The last consistent read's expected time upstream beyond one round trip: its work before the head and its transfer, as such reads took. Memory answers when it is no more than this."
    );
    g!(
        "kache_upstream_latency_seconds",
        metrics::Unit::Seconds,
        "The apiserver's consistent-read round trip (moving average of freshness probes)."
    );
    g!(
        "kache_upstream_throughput_bytes_per_second",
        "The apiserver's throughput on documents kache reads or relays, from each one's head to its end (moving average, by bytes)."
    );
    g!(
        "kache_memory_throughput_bytes_per_second",
        "kache's throughput making lists of whole objects in JSON from memory (moving average, by the objects' bytes)."
    );
    g!("kache_watchers", "Watches open from memory.");
    g!("kache_watch_queued_frames", "Frames queued to watchers and not yet taken by their streams (all watchers of the resource).");
    c!("kache_watch_events_delivered_total", "Live watch frames queued to watchers.");
    c!("kache_watchers_closed_slow_total", "Watchers closed because they fell a full queue behind.");
    g!("kache_upstream_connections", "HTTP/2 connections to the apiserver, open or being opened.");
    g!(
        "kache_upstream_streams",
        "Requests in flight on HTTP/2 connections to the apiserver (each connection carries at most what its server allows)."
    );
    c!("kache_upstream_connections_opened_total", "HTTP/2 connections opened to the apiserver.");
    c!("kache_upstream_requests_resent_total", "Requests sent again on another connection because theirs ended before sending them.");
    g!("kache_upstream_own_lanes", "Relays of whole collections in flight on an HTTP/1.1 connection of their own (at most 4).");
    c!("kache_upstream_own_lanes_total", "Relays of whole collections that took an HTTP/1.1 connection of their own.");
    g!("kache_upstream_kept_lanes", "Small relays in flight on kept-alive HTTP/1.1 connections (at most 32).");
    c!("kache_upstream_kept_lanes_total", "Small relays that took a kept-alive HTTP/1.1 connection.");
    g!("process_resident_memory_bytes", metrics::Unit::Bytes, "Resident memory of the kache process.");
    g!(
        "kache_memory_pressure",
        "What the resource gives up for the memory budget: 0 nothing, 1 a shorter event log, 2 also new continue-token pins, 3 also lists and GETs from memory."
    );
    g!("kache_memory_budget_bytes", metrics::Unit::Bytes, "The whole cache's memory budget (--memory-budget; 0: none).");
    g!("kache_resource_memory_budget_bytes", metrics::Unit::Bytes, "Each resource's memory budget (--resource-memory-budget; 0: none).");
    g!("kache_list_bytes_in_flight", metrics::Unit::Bytes, "Memory reserved by lists from memory being written (within --memory-budget).");
    g!(
        "kache_list_room_bytes",
        metrics::Unit::Bytes,
        "What the store leaves of --memory-budget for lists being written (absent: no budget)."
    );
}

/// `GET /metrics`: the exposition text, as Prometheus reads it.
pub fn response(api: &Api) -> http::Response<super::body::ApiBody> {
    let mut resp = http::Response::new(super::body::full(render(api)));
    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; version=0.0.4"));
    resp
}

/// The exposition text: kache's state copied into the recorder, then rendered.
fn render(api: &Api) -> Bytes {
    let Some(Some(handle)) = HANDLE.get() else { return Bytes::from_static(b"# metrics are off\n") };
    let c = &api.counters;
    for (name, v) in [
        ("kache_lists_served_total", &c.lists_served),
        ("kache_gets_served_total", &c.gets_served),
        ("kache_watches_served_total", &c.watches_served),
        ("kache_watches_passed_through_total", &c.watches_passed_through),
        ("kache_passed_through_total", &c.passed_through),
    ] {
        counter!(name).absolute(v.load(Ordering::Relaxed));
    }
    if let Some(reviewer) = &api.reviewer {
        let s = &reviewer.stats;
        for (name, v) in [
            ("kache_token_reviews_total", &s.token_reviews),
            ("kache_access_reviews_total", &s.access_reviews),
            ("kache_unauthenticated_total", &s.unauthenticated),
            ("kache_forbidden_total", &s.forbidden),
        ] {
            counter!(name).absolute(v.load(Ordering::Relaxed));
        }
    }
    let now = Instant::now();
    for (r, d) in api.cache.resources().iter().zip(&api.dispatchers) {
        let name = r.info().qualified();
        let view = r.store().view();
        let m = r.store().memory();
        let set = |metric: &'static str, v: f64| gauge!(metric, "resource" => name.clone()).set(v);
        set("kache_resource_ready", f64::from(u8::from(r.status().health(api.config.max_staleness).is_fresh())));
        set("kache_store_confirmed_revision", view.confirmed_rv() as f64);
        set("kache_store_oldest_revision", view.oldest_rv() as f64);
        set("kache_store_objects", m.objects as f64);
        set("kache_store_events", m.events as f64);
        set("kache_store_log_window_seconds", view.oldest_event_at().map_or(0.0, |at| now.saturating_duration_since(at).as_secs_f64()));
        set("kache_store_object_bytes", m.object_bytes as f64);
        set("kache_store_overhead_bytes", m.overhead_bytes as f64);
        set("kache_upstream_watch_open", f64::from(u8::from(r.status().is_watching())));
        let never = || INSTALLED.get().map_or(Duration::ZERO, |at| now.saturating_duration_since(*at));
        set("kache_upstream_silence_seconds", r.status().silence().unwrap_or_else(never).as_secs_f64());
        set("kache_watchers", d.stats().open.load(Ordering::Relaxed) as f64);
        set("kache_watch_queued_frames", d.stats().queued() as f64);
        set("kache_memory_pressure", f64::from(r.pressure() as u8));
        let count = |metric: &'static str, v: u64| counter!(metric, "resource" => name.clone()).absolute(v);
        count("kache_upstream_lists_total", r.status().lists.load(Ordering::Relaxed));
        count("kache_upstream_watches_total", r.status().watches.load(Ordering::Relaxed));
        count("kache_upstream_relists_unchanged_total", r.status().relists_unchanged.load(Ordering::Relaxed));
        for (result, n) in [("match", &r.checks().matches), ("mismatch", &r.checks().mismatches), ("failed", &r.checks().failures)] {
            counter!("kache_consistency_checks_total", "resource" => name.clone(), "result" => result).absolute(n.load(Ordering::Relaxed));
        }
        for (cause, n) in r.status().relists() {
            counter!("kache_upstream_relists_total", "resource" => name.clone(), "cause" => cause.as_str()).absolute(n);
        }
        count("kache_upstream_probes_total", r.status().probes.load(Ordering::Relaxed));
        count("kache_upstream_events_total", r.status().events.load(Ordering::Relaxed));
        let f = &r.fresh().stats;
        count("kache_consistent_reads_fresh_total", f.fresh.load(Ordering::Relaxed));
        count("kache_freshness_probes_total", f.probes.load(Ordering::Relaxed));
        count("kache_freshness_catch_ups_total", f.catch_ups.load(Ordering::Relaxed));
        count("kache_freshness_proofs_total", f.proofs.load(Ordering::Relaxed));
        count("kache_consistent_hedges_total", f.hedges.load(Ordering::Relaxed));
        set("kache_freshness_hit_ratio", r.fresh().observed.lock().hit_ratio());
        let (expected, warm) = r.fresh().expected_proof();
        set("kache_freshness_proof_expected_seconds", expected.as_secs_f64());
        set("kache_freshness_kept_warm", if warm { 1.0 } else { 0.0 });
        set("kache_consistent_small_list_upstream_seconds", r.fresh().small_lists.took().as_secs_f64());
        if let Some(plan) = *f.last_plan.lock() {
            set("kache_consistent_plan_memory_seconds", plan.memory.as_secs_f64());
            set("kache_consistent_plan_upstream_seconds", plan.upstream.as_secs_f64());
        }
        for why in NotFresh::ALL {
            counter!("kache_consistent_reads_passed_through_total", "resource" => name.clone(), "reason" => why.as_str())
                .absolute(f.passed[why as usize].load(Ordering::Relaxed));
        }
        count("kache_watch_events_delivered_total", d.stats().delivered.load(Ordering::Relaxed));
        count("kache_watchers_closed_slow_total", d.stats().closed_slow.load(Ordering::Relaxed));
    }
    let costs = api.client.costs();
    if let Some(latency) = costs.latency() {
        gauge!("kache_upstream_latency_seconds").set(latency.as_secs_f64());
    }
    for (metric, rate) in [
        ("kache_upstream_throughput_bytes_per_second", costs.upstream_throughput()),
        ("kache_memory_throughput_bytes_per_second", costs.memory_throughput()),
    ] {
        if let Some(rate) = rate {
            gauge!(metric).set(rate);
        }
    }
    if let Some((pool, open)) = api.client.connections() {
        gauge!("kache_upstream_connections").set(open as f64);
        gauge!("kache_upstream_streams").set(pool.streams.load(Ordering::Relaxed) as f64);
        counter!("kache_upstream_connections_opened_total").absolute(pool.opened.load(Ordering::Relaxed));
        counter!("kache_upstream_requests_resent_total").absolute(pool.resent.load(Ordering::Relaxed));
    }
    if let Some(lanes) = api.client.lanes() {
        gauge!("kache_upstream_own_lanes").set(lanes.dedicated_in_use() as f64);
        counter!("kache_upstream_own_lanes_total").absolute(lanes.dedicated_taken());
        gauge!("kache_upstream_kept_lanes").set(lanes.kept_alive_in_use() as f64);
        counter!("kache_upstream_kept_lanes_total").absolute(lanes.kept_alive_taken());
    }
    gauge!("process_resident_memory_bytes").set(resident_bytes() as f64);
    gauge!("kache_memory_budget_bytes").set(api.config.budget.total as f64);
    gauge!("kache_resource_memory_budget_bytes").set(api.config.budget.resource as f64);
    gauge!("kache_list_bytes_in_flight").set(api.list_memory.reserved() as f64);
    if let Some(limit) = api.list_memory.limit() {
        gauge!("kache_list_room_bytes").set(limit as f64);
    }
    Bytes::from(handle.render())
}

/// This process's resident memory (`VmRSS`), 0 where `/proc` is not.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok()).unwrap_or(0) * 1024
}

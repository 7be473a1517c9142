//! kache's priority-and-fairness figures, named after the apiserver's
//! `apiserver_flowcontrol_*` (`k8s.io/apiserver/pkg/util/flowcontrol/metrics/metrics.go`)
//! under `kache_flowcontrol_`, with its labels: `priority_level` and
//! `flow_schema` (the names of the cluster's objects, as the apiserver
//! labels them), and for rejections `reason` (one of the queue set's
//! `Rejection`s, by its `as_str`).
//!
//! Invariant: every gauge moved up is moved down by the same event's end
//! (a request leaves its queue once, its seats are released once).

use metrics::{counter, gauge, histogram};

/// Upper bounds (seconds) of the queue wait buckets: the apiserver's
/// `request_wait_duration_seconds` buckets.
pub const WAIT_BUCKETS: [f64; 13] = [0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0];

/// Describes every metric (once, when the recorder is installed).
pub fn describe() {
    use metrics::{describe_counter as c, describe_gauge as g, describe_histogram as h};
    c!("kache_flowcontrol_dispatched_requests_total", "Requests kache answers itself that priority and fairness let execute.");
    c!(
        "kache_flowcontrol_rejected_requests_total",
        "Requests rejected by priority and fairness (429), by reason: queue-full, concurrency-limit, time-out."
    );
    g!("kache_flowcontrol_current_inqueue_requests", "Requests waiting in the queues of priority and fairness.");
    g!("kache_flowcontrol_current_executing_requests", "Requests executing (a watch: until its initial events are written).");
    g!("kache_flowcontrol_current_executing_seats", "Seats occupied by the requests executing.");
    h!(
        "kache_flowcontrol_request_wait_duration_seconds",
        metrics::Unit::Seconds,
        "Time a request waited in its queue, by whether it then executed."
    );
    g!("kache_flowcontrol_nominal_limit_seats", "Nominal seats of each priority level: its share of --priority-and-fairness-seats.");
    g!("kache_flowcontrol_current_limit_seats", "Seats each priority level may use now (its nominal seats, lent and borrowed).");
    g!("kache_flowcontrol_server_seats", "Seats kache shares among the priority levels (--priority-and-fairness-seats).");
}

fn labels(level: &str, schema: &str) -> [(&'static str, String); 2] {
    [("priority_level", level.to_string()), ("flow_schema", schema.to_string())]
}

/// A request executes on `seats`.
pub(crate) fn executing(level: &str, schema: &str, seats: usize) {
    counter!("kache_flowcontrol_dispatched_requests_total", &labels(level, schema)).increment(1);
    gauge!("kache_flowcontrol_current_executing_requests", &labels(level, schema)).increment(1.0);
    gauge!("kache_flowcontrol_current_executing_seats", &labels(level, schema)).increment(seats as f64);
}

/// A request that executed on `seats` is done.
pub(crate) fn finished(level: &str, schema: &str, seats: usize) {
    gauge!("kache_flowcontrol_current_executing_requests", &labels(level, schema)).decrement(1.0);
    gauge!("kache_flowcontrol_current_executing_seats", &labels(level, schema)).decrement(seats as f64);
}

/// A request joins a queue.
pub fn queued(level: &str, schema: &str) {
    gauge!("kache_flowcontrol_current_inqueue_requests", &labels(level, schema)).increment(1.0);
}

/// A request leaves its queue after `waited` seconds, to execute or not.
pub(crate) fn dequeued(level: &str, schema: &str, waited: f64, execute: bool) {
    gauge!("kache_flowcontrol_current_inqueue_requests", &labels(level, schema)).decrement(1.0);
    let [l, s] = labels(level, schema);
    histogram!("kache_flowcontrol_request_wait_duration_seconds", &[l, s, ("execute", execute.to_string())]).record(waited);
}

/// A request is rejected, for `reason`.
pub fn rejected(level: &str, schema: &str, reason: &'static str) {
    let [l, s] = labels(level, schema);
    counter!("kache_flowcontrol_rejected_requests_total", &[l, s, ("reason", reason.to_string())]).increment(1);
}

/// A level's limits, after a configuration change or a borrowing adjustment.
pub fn limits(level: &str, nominal: usize, current: usize) {
    gauge!("kache_flowcontrol_nominal_limit_seats", "priority_level" => level.to_string()).set(nominal as f64);
    gauge!("kache_flowcontrol_current_limit_seats", "priority_level" => level.to_string()).set(current as f64);
}

/// The seats kache shares.
pub(crate) fn server_seats(seats: usize) {
    gauge!("kache_flowcontrol_server_seats").set(seats as f64);
}

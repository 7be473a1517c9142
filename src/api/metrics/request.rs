//! Per-request figures, recorded as each request is answered ([`observe`]):
//! its count by verb, resource, source and status, its time to the response
//! head, its body's bytes as they go out, and for a consistent read its
//! plan held against what its answer took to its end. Metric handles are
//! kept per thread by their labels: registering one builds its key under
//! the recorder's lock, which every request would otherwise pay.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;

use bytes::Bytes;
use http::Response;
use metrics::counter;

use crate::api::body::ApiBody;
use crate::api::followed::{End, Follow, Followed};
use crate::api::source::Source;
use crate::upstream::plan::Plan;

/// What a request is, for its metrics.
#[derive(Debug, Clone)]
pub struct Request {
    verb: String,
    resource: String,
    started: Instant,
}

impl Request {
    /// The labels of a request asking for `a`, from now.
    pub fn of(a: &apimachinery::auth::Attributes) -> Request {
        let resource = if a.resource_request {
            let qualified = if a.group.is_empty() { a.resource.clone() } else { format!("{}.{}", a.resource, a.group) };
            if a.subresource.is_empty() { qualified } else { format!("{qualified}/{}", a.subresource) }
        } else {
            String::new()
        };
        Request { verb: a.verb.clone(), resource, started: Instant::now() }
    }
}

/// The handles every request's metrics are recorded with.
#[derive(Clone)]
struct Handles {
    requests: metrics::Counter,
    duration: metrics::Histogram,
    bytes: metrics::Counter,
}

/// What labels a request's [`Handles`]: verb, resource, source, reason, status code.
type Labels = (String, String, &'static str, &'static str, http::StatusCode);

thread_local! {
    /// Each thread's handles by their labels. Registering a handle builds its
    /// key (the labels' strings, sorted, hashed and looked up under the
    /// recorder's lock), about 13 µs of a relayed GET's 370, so it is done once
    /// a thread; there are as many as the series the recorder holds anyway.
    static HANDLES: RefCell<HashMap<Labels, Handles>> = RefCell::new(HashMap::new());
}

impl Handles {
    fn of(labels: Labels) -> Handles {
        HANDLES.with_borrow_mut(|handles| {
            let made = |(verb, resource, source, reason, code): &Labels| Handles {
                requests: counter!(
                    "kache_requests_total",
                    "verb" => verb.clone(),
                    "resource" => resource.clone(),
                    "source" => *source,
                    "reason" => *reason,
                    "code" => code.as_str().to_string()
                ),
                duration: metrics::histogram!("kache_request_duration_seconds", "verb" => verb.clone(), "source" => *source),
                bytes: counter!("kache_response_bytes_total", "verb" => verb.clone(), "source" => *source),
            };
            handles.entry(labels).or_insert_with_key(made).clone()
        })
    }
}

/// The handles that hold a consistent read's plan against what its answer
/// took, by resource and choice (memory, upstream); kept per thread, as [`Handles`].
#[derive(Clone)]
struct Judged {
    predicted: metrics::Histogram,
    actual: metrics::Histogram,
    wrong: metrics::Counter,
}

thread_local! {
    static JUDGED: RefCell<HashMap<String, [Judged; 2]>> = RefCell::new(HashMap::new());
}

impl Judged {
    fn of(resource: &str, plan: &Plan) -> Judged {
        let memory = plan.from_memory();
        JUDGED.with_borrow_mut(|judged| {
            if let Some(both) = judged.get(resource) {
                return both[usize::from(memory)].clone();
            }
            let made = |choice: &'static str| {
                let labels = [("resource", resource.to_string()), ("choice", choice.to_string())];
                Judged {
                    predicted: metrics::histogram!("kache_consistent_predicted_seconds", &labels),
                    actual: metrics::histogram!("kache_consistent_actual_seconds", &labels),
                    wrong: counter!("kache_consistent_plans_wrong_total", &labels),
                }
            };
            let both = [made("upstream"), made("memory")];
            let mine = both[usize::from(memory)].clone();
            judged.insert(resource.to_string(), both);
            mine
        })
    }
}

/// Registers at zero the series of `resource`'s reads from memory (`get`,
/// `list`, `watch`, answered 200), so that `/metrics` shows the per-request
/// metrics before any request is answered.
pub fn at_zero(resource: &str) {
    for verb in ["get", "list", "watch"] {
        Handles::of((verb.into(), resource.into(), Source::Memory.as_str(), Source::Memory.reason(), http::StatusCode::OK));
    }
}

/// Records `resp` as `req`'s answer and counts its body's bytes as they
/// go out; `also` follows the body too, in the same wrapper.
pub fn observe(req: Request, resp: Response<ApiBody>, also: impl Follow) -> Response<ApiBody> {
    let source = Source::of(&resp);
    // A consistent read's plan against what its answer took, to the body's end.
    let judged = resp.extensions().get::<Plan>().map(|plan| {
        let judged = Judged::of(&req.resource, plan);
        judged.predicted.record(plan.expected().as_secs_f64());
        (*plan, judged, req.started)
    });
    let handles = Handles::of((req.verb, req.resource, source.as_str(), source.reason(), resp.status()));
    handles.requests.increment(1);
    handles.duration.record(req.started.elapsed().as_secs_f64());
    resp.map(|inner| Followed::new(inner, (Counted { bytes: handles.bytes, judged }, also)).boxed())
}

/// A response body's bytes, counted as they go out; a consistent read's
/// is also held against its plan once its last frame is out.
struct Counted {
    bytes: metrics::Counter,
    judged: Option<(Plan, Judged, Instant)>,
}

impl Follow for Counted {
    fn data(&mut self, data: &Bytes) {
        self.bytes.increment(data.len() as u64);
    }

    /// What the body took, against the plan, if it ended (not failed, not dropped).
    fn end(&mut self, how: End<'_>) {
        if let (End::Complete, Some((plan, judged, started))) = (how, self.judged.take()) {
            let took = started.elapsed();
            judged.actual.record(took.as_secs_f64());
            if plan.wrong(took) {
                judged.wrong.increment(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn a_judged_body_ends_with_its_last_data_frame() {
        let plan = Plan {
            memory: Duration::ZERO,
            wait: Duration::ZERO,
            miss_wait: Duration::ZERO,
            upstream: Duration::ZERO,
            round_trip: Duration::ZERO,
            patience: 1.0,
        };
        let judged = Some((plan, Judged::of("pods", &plan), Instant::now()));
        let counted = Counted { bytes: metrics::Counter::noop(), judged };
        let mut body = Followed::new(crate::api::body::full(Bytes::from_static(b"{}")), counted);
        let frame = body.frame().await.expect("a frame").expect("data");
        assert_eq!(frame.into_data().ok(), Some(Bytes::from_static(b"{}")));
        assert!(body.follow.judged.is_none(), "held against its plan as its last frame went");
        assert!(body.frame().await.is_none());
    }
}

//! Answers while kache starts: before the apiserver has told kache what it
//! caches (it may not be reachable yet — a sidecar often starts first), the
//! listener answers anyway, so kache never crash-loops and probes can tell
//! alive from ready: `/livez` and `/healthz` pass, `/readyz` fails naming
//! the last upstream error, and every other request gets the apiserver's
//! own answer while it starts — a 503 `Status` with `Retry-After`, which
//! clients retry.

use std::sync::Arc;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use parking_lot::Mutex;

use super::body::{self, ApiBody};
use super::{Answerer, health};

/// Why kache is not serving yet.
#[derive(Debug)]
pub struct Starting {
    why: Mutex<String>,
}

impl Starting {
    /// Starting, with nothing tried yet.
    pub fn new() -> Arc<Starting> {
        Arc::new(Starting { why: Mutex::new("discovering the cached resources".into()) })
    }

    /// The last attempt failed with `why`.
    pub fn failed(&self, why: String) {
        *self.why.lock() = why;
    }

    /// The answerer of every request until kache serves.
    pub fn answerer(self: &Arc<Self>) -> Answerer {
        let me = self.clone();
        Arc::new(move |req, _| {
            let resp = me.answer(&req);
            Box::pin(async move { resp })
        })
    }

    fn answer(&self, req: &Request<Incoming>) -> Response<ApiBody> {
        let why = self.why.lock().clone();
        let health = health::answer_with(req.uri().path(), req.uri().query().unwrap_or(""), |endpoint| {
            let mut checks: Vec<health::Check> = vec![("ping".into(), None)];
            if endpoint == "readyz" {
                checks.push(("upstream".into(), Some(why.clone())));
            }
            checks
        });
        let (status, content_type, body) = match health {
            Some((status, text)) => (status, "text/plain; charset=utf-8", text.into_bytes()),
            None => {
                let status = serde_json::json!({
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": format!("kache is starting: {why}"), "reason": "ServiceUnavailable", "code": 503,
                });
                (StatusCode::SERVICE_UNAVAILABLE, "application/json", serde_json::to_vec(&status).unwrap_or_default())
            }
        };
        let mut resp = Response::new(body::full(body));
        *resp.status_mut() = status;
        let headers = resp.headers_mut();
        headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
        headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("1"));
        // A client reconnects, and meets the real server once kache serves (HTTP/2 has no such header).
        if req.version() < http::Version::HTTP_2 {
            headers.insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
        }
        resp
    }
}

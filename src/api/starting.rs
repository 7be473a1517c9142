//! Answers while kache starts: before the apiserver has told kache what it
//! caches (it may not be reachable yet — a sidecar often starts first), the
//! listener answers anyway, so kache never crash-loops and probes can tell
//! alive from ready: `/livez` and `/healthz` pass, `/readyz` fails naming
//! the last upstream error, and every other request gets the apiserver's
//! own answer while it starts — a 503 `Status` with `Retry-After`, which
//! clients retry.

use std::sync::{Arc, OnceLock};

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use parking_lot::Mutex;

use super::body::{self, ApiBody};
use super::chain::handler;
use super::health;
use super::request::RequestInfo;
use super::server::Handler;
use super::shared::Api;

/// Why kache is not serving yet.
pub struct Starting {
    why: Mutex<String>,
    /// The API's handler, once kache serves: connections opened while it
    /// started are answered by it from then on (none is closed under a
    /// request on its way).
    next: OnceLock<Handler>,
    /// The API itself, once kache serves (for the probe listener).
    api: OnceLock<Arc<Api>>,
}

impl std::fmt::Debug for Starting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Starting").field("why", &self.why).field("serving", &self.next.get().is_some()).finish()
    }
}

impl Starting {
    /// Starting, with nothing tried yet.
    pub fn new() -> Arc<Starting> {
        Arc::new(Starting { why: Mutex::new("discovering the cached resources".into()), next: OnceLock::new(), api: OnceLock::new() })
    }

    /// The last attempt failed with `why`.
    pub fn failed(&self, why: String) {
        *self.why.lock() = why;
    }

    /// kache serves: `api` answers from now on.
    pub fn hand_over(&self, api: &Arc<Api>) {
        let _ = self.next.set(handler(api));
        let _ = self.api.set(api.clone());
    }

    /// The API, once kache serves.
    pub fn api(&self) -> Option<&Arc<Api>> {
        self.api.get()
    }

    /// The answer to a health check while kache starts (`None`: not a health path).
    pub fn health(&self, info: &RequestInfo) -> Option<(StatusCode, String)> {
        let why = self.why.lock().clone();
        health::report_with(info, |endpoint| {
            let mut checks: Vec<health::Check> = vec![("ping".into(), None)];
            if endpoint == "readyz" {
                checks.push(("upstream".into(), Some(why)));
            }
            checks
        })
    }

    /// The handler of the connections opened while kache starts.
    pub fn handler(self: &Arc<Self>) -> Handler {
        let me = self.clone();
        Arc::new(move |req, certificate| match me.next.get() {
            Some(api) => api(req, certificate),
            None => {
                let resp = me.respond(&req);
                Box::pin(async move { resp })
            }
        })
    }

    fn respond(&self, req: &Request<Incoming>) -> Response<ApiBody> {
        let health = self.health(&RequestInfo::of(req.method(), req.uri()));
        let why = self.why.lock().clone();
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

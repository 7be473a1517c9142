//! `--health-listen`: a second, plain-HTTP listener for what kubelet probes
//! and Prometheus fetch without credentials — `/livez`, `/readyz`,
//! `/healthz` (as on the API listener) and `/metrics` — and nothing else
//! (404, as the apiserver's mux answers an unknown path).
//!
//! Invariant: nothing answered here acts with kache's credentials or shows
//! an object — only check results, resource names and figures — so it may
//! listen where the API listener may not: on the pod's address, for the
//! kubelet, while a sidecar's API listener stays on loopback. While kache
//! starts, [`Starting`] answers the checks and `/metrics` is 503.

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;

use super::body::ApiBody;
use super::encode::text;
use super::request::RequestInfo;
use super::server::Handler;
use super::starting::Starting;
use super::{health, metrics};

/// The probe listener's answers, from `starting` until kache serves, then from its API.
pub fn handler(starting: &Arc<Starting>) -> Handler {
    let starting = starting.clone();
    Arc::new(move |req, _certificate| {
        let resp = respond(&starting, &req);
        Box::pin(async move { resp })
    })
}

fn respond(starting: &Starting, req: &Request<Incoming>) -> Response<ApiBody> {
    if req.method() != Method::GET {
        return text(StatusCode::NOT_FOUND, "404 page not found\n");
    }
    let info = RequestInfo::of(req.method(), req.uri());
    let health = match (starting.api(), info.path()) {
        (Some(api), "/metrics") => return metrics::response(api),
        (None, "/metrics") => return text(StatusCode::SERVICE_UNAVAILABLE, "kache is starting\n"),
        (Some(api), _) => health::report(api, &info),
        (None, _) => starting.health(&info),
    };
    match health {
        Some((status, body)) => text(status, body),
        None => text(StatusCode::NOT_FOUND, "404 page not found\n"),
    }
}

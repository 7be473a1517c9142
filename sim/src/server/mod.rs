//! The HTTP front: one request's path through the apiserver's filters —
//! the stall and readiness gates, authentication, priority and fairness's
//! naming, the policy — to its route.
//!
//! Invariants: every request is answered; every refusal is a `Status` (see
//! `apimachinery::status`), encoded as the request negotiated.

mod access;
mod admin;
mod encoding;
mod process_metrics;
mod request;
mod resource;
mod review;
mod route;

use std::sync::Arc;

use http::{Request, Response};

use crate::body::Body;
use crate::request_body::Drained;
use crate::state::State;
use apimachinery::auth::Attributes;
use apimachinery::status::ApiError;
use encoding::{Writer, header};

pub use access::ClientCert;

/// Serves one request: the filters in the apiserver's order, then its route.
pub async fn handle(state: Arc<State>, req: Request<Drained>, server_address: String, client_cert: Option<ClientCert>) -> Response<Body> {
    state.wait_unstalled().await;
    let enc = Writer::of(&req, state.config.cbor);
    if let Some(done) = state.generating()
        && !matches!(req.uri().path(), "/healthz" | "/livez")
    {
        let mut e = ApiError::unavailable();
        e.message = format!("the simulated cluster is not ready: {done} of {} objects generated", state.config.workload.objects());
        return enc.error(&e);
    }
    let public = matches!(req.uri().path(), "/healthz" | "/livez" | "/readyz" | "/version");
    let verified_cert = client_cert.as_ref().is_some_and(|c| c.verified);
    if !public && !state.config.auth.allows(header(req.headers(), http::header::AUTHORIZATION.as_str()), verified_cert) {
        return enc.error(&ApiError::unauthorized());
    }
    // The `/_sim/` control paths belong to the test harness, not to the API the policy guards or flow control names.
    if req.uri().path().starts_with("/_sim/") {
        return match route::route(&state, req, enc, &server_address).await {
            Ok(r) => r,
            Err(e) => enc.error(&e),
        };
    }
    let policy = state.policy();
    // Authentication and impersonation refuse before priority and fairness, which names what follows.
    let attrs = Attributes::of(req.method().as_str(), req.uri().path(), req.uri().query().unwrap_or(""));
    let user = match crate::policy::identify(policy.as_deref(), (req.headers(), &attrs), client_cert.map(|c| c.user), public) {
        Ok(user) => user,
        Err(e) => return enc.error(&e),
    };
    let uids = state.flow_schemas.classify(&state.db.read(), &user, &attrs);
    if let Some(policy) = &policy
        && !public
        && !policy.allows(&user, &attrs)
    {
        return crate::flowcontrol::name(enc.error(&attrs.forbidden(&user.name, "")), uids);
    }
    let mut resp = match route::route(&state, req, enc, &server_address).await {
        Ok(r) => r,
        Err(e) => enc.error(&e),
    };
    // A deprecated built-in's every answer warns of it.
    if let Some(warning) =
        apimachinery::deprecation::built_in(&attrs.group, &attrs.version, &attrs.resource).filter(|_| attrs.resource_request)
        && let Ok(value) = http::HeaderValue::from_str(&apimachinery::deprecation::header(warning))
    {
        resp.headers_mut().append(http::header::WARNING, value);
    }
    crate::flowcontrol::name(resp, uids)
}

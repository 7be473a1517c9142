//! The HTTP front: one request's path through the apiserver's filters —
//! the stall and readiness gates, authentication, the policy — to its route.
//!
//! Invariants: every request is answered; every refusal is a `Status` (see
//! `apimachinery::status`), encoded as the request negotiated.

mod access;
mod admin;
mod encoding;
mod request;
mod resource;
mod review;
mod route;

use std::sync::Arc;

use http::{Request, Response};

use crate::body::Body;
use crate::request_body::Drained;
use crate::state::State;
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
    // The `/_sim/` control paths belong to the test harness, not to the API the policy guards.
    if let Some(policy) = state.policy()
        && !public
        && !req.uri().path().starts_with("/_sim/")
        && let Err(e) = access::enforce(&policy, &req, client_cert)
    {
        return enc.error(&e);
    }
    match route::route(&state, req, enc, &server_address).await {
        Ok(r) => r,
        Err(e) => enc.error(&e),
    }
}

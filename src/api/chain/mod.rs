//! The request path, one stage a module, in the order kube-apiserver's
//! `DefaultBuildHandlerChain` runs its filters. What the request asks
//! (its [`RequestInfo`]: verb, resource, namespace, name, a list's or
//! watch's options) is read once, as the apiserver's `WithRequestInfo`
//! reads it before every filter, and every stage uses that reading:
//!
//! 1. [`authenticate`]: who the client is (401 otherwise);
//! 2. [`audit`]: whether the policy audits the request, and its record to the answer;
//! 3. [`impersonate`]: whom the client acts as, by its own `Impersonate-*` headers;
//! 4. [`priority`]: for what kache answers itself, its FlowSchema and level,
//!    its seats (waited for in its queue, or 429), the `X-Kubernetes-PF-*`
//!    headers — around stages 6 and 7, once stage 5 has said who answers;
//! 5. [`route`]: who answers — kache's own figures, its memory, or the apiserver;
//! 6. [`authorize`]: for what kache answers itself, the apiserver's authorizer's verdict;
//! 7. the answer: from memory, raced against upstream where a consistent
//!    read's proof may be late (`api::race`), or passed through
//!    (`api::pass_through`) under the client's identity.
//!
//! kache routes before it authorizes, where the apiserver authorizes
//! first: what kache passes through goes upstream as the client, where the
//! apiserver authorizes (and audits and queues) it itself, so kache asks
//! the authorizer only about what it answers itself — never adding a review
//! to a relayed request — and queues only that (stage 4 runs once routing,
//! which waits for nothing, has said who answers: [`priority`]). `/livez`,
//! `/readyz` and `/healthz` are answered before authentication, as the
//! apiserver's are public (kache's own, so they name no FlowSchema).
//!
//! Invariant: each stage knows only what the stages before it found (the
//! request, the user; stage 4 also the route); a new concern is a new
//! stage, not an edit of the others.

mod audit;
mod authenticate;
mod authorize;
mod impersonate;
mod priority;
mod route;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use apimachinery::auth::Attributes;
use apimachinery::negotiate::Negotiated;
use http::{Method, Request, Response};
use hyper::body::Incoming;

use super::body::ApiBody;
use super::encode::{self, text};
use super::metrics;
use super::request::RequestInfo;
use super::server::Handler;
use super::shared::Api;
use super::source::Source;
use super::{health, pass_through, race};
use crate::access::Certificate;
use audit::Audit;
use route::Route;

/// The API's answers: every request handled and observed (metrics).
pub fn handler(api: &Arc<Api>) -> Handler {
    let api = api.clone();
    Arc::new(move |req, certificate| {
        let api = api.clone();
        Box::pin(async move {
            // What the request asks, read once for every stage (the apiserver's `WithRequestInfo`).
            let info = RequestInfo::of(req.method(), req.uri());
            let observed = metrics::Request::of(&info.attributes);
            let mut audit = Audit::arrived(api.audit.as_ref(), &req, &info);
            let resp = handle(&api, req, &info, &certificate, &mut audit).await;
            let audited = audit.answered(&resp);
            metrics::observe(observed, resp, audited)
        })
    })
}

/// One request, asking for what `info` says, through every stage.
async fn handle(api: &Api, req: Request<Incoming>, info: &RequestInfo, certificate: &Certificate, audit: &mut Audit) -> Response<ApiBody> {
    let attributes: &Attributes = &info.attributes;
    if info.method == Method::GET
        && let Some((status, body)) = health::report(api, info)
    {
        return text(status, body);
    }
    let refused = |e| encode::error(Negotiated::default(), &e);
    let reviewer = api.reviewer.as_ref();
    let user = match authenticate::authenticate(reviewer.map(AsRef::as_ref), req.headers(), certificate).await {
        Ok(user) => user,
        Err(e) => {
            audit.unauthenticated();
            return refused(e);
        }
    };
    audit.authenticated(user.as_ref());
    let user = match (reviewer, user) {
        (Some(reviewer), Some(user)) => match impersonate::impersonate(reviewer, user, req.headers(), attributes).await {
            Ok(acting) => {
                if let Some(mode) = acting.by {
                    audit.impersonated(&acting.user, mode.constraint());
                }
                Some(acting.user)
            }
            Err(e) => return refused(e),
        },
        (_, user) => user,
    };
    let flow = api.flow.as_ref();
    match route::route(api, info, req.headers()) {
        Route::Metrics => {
            let answer = async {
                match audit.authorized(authorize::authorize(reviewer, user.as_ref(), attributes.clone()).await) {
                    Ok(_) => metrics::response(api),
                    Err(e) => refused(e),
                }
            };
            priority::queued(flow, user.as_ref(), attributes, priority::Cost::one(), answer).await
        }
        Route::Memory(target, negotiated) => {
            let cost = priority::Cost::of(&target, info);
            let answer = async {
                match audit.authorized(authorize::authorize(reviewer, user.as_ref(), attributes.clone()).await) {
                    Ok(permission) => race::read(api, &target, negotiated, (req, info), user.as_ref(), permission).await,
                    Err(e) => encode::error(negotiated, &e),
                }
            };
            priority::queued(flow, user.as_ref(), attributes, cost, answer).await
        }
        Route::Upstream(why) => {
            audit.relayed();
            api.counters.passed_through.fetch_add(1, Ordering::Relaxed);
            Source::Upstream(why).mark(pass_through::forward(&api.client, req, info, user.as_ref()).await)
        }
    }
}

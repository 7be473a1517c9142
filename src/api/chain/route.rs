//! Stage 5, routing: who answers a request — kache's own `/metrics`, kache's
//! memory, or the apiserver (and why, a [`PassThrough`]). A request is
//! tried from memory only when it is a GET of a cached collection or
//! object whose resource is fresh ([`crate::upstream::reflector::Health`])
//! and whose answer kache can write ([`crate::api::negotiate`]); whether
//! memory then answers it (a consistent read's plan, a revision not yet
//! reached) is the read's own decision (`api::race`).

use apimachinery::negotiate::Negotiated;
use http::{HeaderMap, Method};

use crate::api::negotiate::negotiate;
use crate::api::request::RequestInfo;
use crate::api::shared::Api;
use crate::api::source::PassThrough;
use crate::api::target::{Target, target};
use crate::upstream::reflector::Health;

/// Who answers a request.
#[derive(Debug)]
pub enum Route<'a> {
    /// kache's own figures (`GET /metrics`).
    Metrics,
    /// A read kache tries from memory, as negotiated.
    Memory(Target<'a>, Negotiated),
    /// The apiserver, for this reason.
    Upstream(PassThrough),
}

/// Who answers the request `info` describes, with `headers`.
pub fn route<'a>(api: &'a Api, info: &'a RequestInfo, headers: &HeaderMap) -> Route<'a> {
    if info.method != Method::GET {
        return Route::Upstream(PassThrough::NotARead);
    }
    if info.path() == "/metrics" {
        return Route::Metrics;
    }
    let Some(t) = target(&api.cache, info.path()) else { return Route::Upstream(PassThrough::NotCached) };
    let why = match t.res.status().health(api.config.max_staleness) {
        Health::Listing { .. } => PassThrough::NotSynced,
        Health::Stale { .. } => PassThrough::Stale,
        Health::Inconsistent => PassThrough::Inconsistent,
        Health::Fresh => match negotiate(&api.client, t.res, headers, info.raw_query()) {
            Ok(negotiated) => return Route::Memory(t, negotiated),
            Err(why) => why,
        },
    };
    Route::Upstream(why)
}

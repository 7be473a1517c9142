//! A GET of one object from memory, as the apiserver's watch cache answers
//! it: from the head snapshot, at any revision (`resourceVersion=0`), once
//! the store has reached the one named, or once it is proven fresh (unset:
//! a consistent read). A malformed revision, or one not reached in time,
//! goes upstream, which words the answer.

use std::time::Duration;

use apimachinery::negotiate::Negotiated;
use apimachinery::status::ApiError;
use http::{Response, StatusCode};

use super::body::ApiBody;
use super::encode;
use super::road::PassThrough;
use crate::cache::CachedResource;
use crate::upstream::freshness::Decision;

/// The object `name` (in `namespace`) of `res`, or why the GET passes
/// through; `wait`: how long a revision the store has not reached is waited for.
pub async fn get(
    res: &CachedResource,
    namespace: Option<&str>,
    name: &str,
    query: &str,
    wait: Duration,
    negotiated: Negotiated,
    decision: &Decision,
) -> Result<Response<ApiBody>, PassThrough> {
    if res.pressure().passes_through() {
        return Err(PassThrough::MemoryBudget);
    }
    let rv = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "resourceVersion").map(|(_, v)| v.into_owned());
    let key = match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    match rv.as_deref() {
        None | Some("") => {
            if let Err(why) = res.consistent_get(&key, decision).await {
                return Err(PassThrough::NotFresh(why));
            }
        }
        // A malformed revision gets upstream's own error.
        Some(rv) => match apimachinery::params::parse_resource_version(rv) {
            Ok(rv) if res.reached(rv, wait).await => {}
            Ok(_) => return Err(PassThrough::RevisionNotReached),
            Err(_) => return Err(PassThrough::MalformedRevision),
        },
    }
    let view = res.store.view();
    let Some(o) = view.head().get(&key) else {
        return Ok(encode::error(negotiated, &ApiError::not_found(&res.info, name)));
    };
    let parts = encode::get_parts(res, o, negotiated).ok_or(PassThrough::Encoding)?;
    Ok(encode::respond(negotiated, StatusCode::OK, parts))
}

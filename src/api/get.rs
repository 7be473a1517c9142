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
use super::road::{PassThrough, Unanswered};
use crate::cache::CachedResource;
use crate::upstream::freshness::Proven;
use crate::upstream::plan::Read;

/// The object `name` (in `namespace`) of `res`, or why memory does not
/// answer it; `wait`: how long a revision the store has not reached is
/// waited for; `proven`: the proof a consistent GET is answered from the
/// head with (without it, it is [`Unanswered::Unproven`]).
pub async fn get(
    res: &CachedResource,
    namespace: Option<&str>,
    name: &str,
    query: &str,
    wait: Duration,
    negotiated: Negotiated,
    proven: Option<Proven>,
) -> Result<Response<ApiBody>, Unanswered> {
    if res.pressure().passes_through() {
        return Err(PassThrough::MemoryBudget.into());
    }
    let rv = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "resourceVersion").map(|(_, v)| v.into_owned());
    let key = match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    match rv.as_deref() {
        None | Some("") if proven.is_none() => {
            let bytes = res.store().view().head().get(&key).map_or(0, |o| o.bytes().len() as u64);
            return Err(Unanswered::Unproven(Read { bytes, collection: false, stream: false }));
        }
        None | Some("") => {}
        // A malformed revision gets upstream's own error.
        Some(rv) => match apimachinery::params::parse_resource_version(rv) {
            Ok(rv) if res.reached(rv, wait).await => {}
            Ok(_) => return Err(PassThrough::RevisionNotReached.into()),
            Err(_) => return Err(PassThrough::MalformedRevision.into()),
        },
    }
    let view = res.store().view();
    let Some(o) = view.head().get(&key) else {
        return Ok(encode::error(negotiated, &ApiError::not_found(res.info(), name)));
    };
    let parts = encode::get_parts(res, o, negotiated).ok_or(PassThrough::Encoding)?;
    Ok(encode::respond(negotiated, StatusCode::OK, parts))
}

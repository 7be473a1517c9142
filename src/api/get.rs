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
use super::source::{Answer, PassThrough};
use crate::cache::CachedResource;
use crate::upstream::freshness::Proven;
use crate::upstream::plan::Read;

/// The object `name` (in `namespace`) of `res` at `rv` (its
/// `resourceVersion` parameter, `None` when absent), or why memory does not
/// answer it; `wait`: how long a revision the store has not reached is
/// waited for; `proven`: the proof a consistent GET is answered from the
/// head with (without it, it is [`Answer::Unproven`]).
pub async fn get(
    res: &CachedResource,
    namespace: Option<&str>,
    name: &str,
    rv: Option<&str>,
    wait: Duration,
    negotiated: Negotiated,
    proven: Option<Proven>,
) -> Answer<Response<ApiBody>> {
    if res.pressure().passes_through() {
        return Answer::Upstream(PassThrough::MemoryBudget);
    }
    let key = match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    match rv {
        None | Some("") if proven.is_none() => {
            let bytes = res.store().view().head().get(&key).map_or(0, |o| o.bytes().len() as u64);
            return Answer::Unproven(Read { bytes, collection: false, stream: false });
        }
        None | Some("") => {}
        // A malformed revision gets upstream's own error.
        Some(rv) => match apimachinery::params::parse_resource_version(rv) {
            Ok(rv) if res.reached(rv, wait).await => {}
            Ok(_) => return Answer::Upstream(PassThrough::RevisionNotReached),
            Err(_) => return Answer::Upstream(PassThrough::MalformedRevision),
        },
    }
    let view = res.store().view();
    let Some(o) = view.head().get(&key) else {
        return Answer::Memory(encode::error(negotiated, &ApiError::not_found(res.info(), name)));
    };
    match encode::get_parts(res, o, negotiated) {
        Some(parts) => Answer::Memory(encode::respond(negotiated, StatusCode::OK, parts)),
        None => Answer::Upstream(PassThrough::Encoding),
    }
}

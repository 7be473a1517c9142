//! A read answered from memory — a list, a watch or a GET of a cached,
//! fresh resource — or the reason it goes upstream after all: a list or
//! watch form kache does not write, a large protobuf or CBOR read while the
//! resource's encodings are being made, the memory budget, or what the
//! list, watch or GET itself decides ([`super::list`], [`super::watch`],
//! [`super::get`]). Malformed requests get the apiserver's `Status` here.
//!
//! Invariant: a list from memory reserves its memory in the budget before
//! its first byte (`crate::budget::inflight`) and is metered for the
//! consistent reads' plan; none is answered when the budget has nothing free
//! within the apiserver's queueing bound (429 instead).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use apimachinery::negotiate::{Encoding, Negotiated, Shape};
use apimachinery::params::ListOptions;
use http::{Response, StatusCode};
use http_body_util::BodyExt;

use super::body::ApiBody;
use super::encode;
use super::filter::Filter;
use super::list;
use super::request::RequestInfo;
use super::shared::Api;
use super::source::{Answer, PassThrough};
use super::target::Target;
use super::{get, watch};
use crate::access::Permission;
use crate::budget::inflight;
use crate::cache::CachedResource;
use crate::upstream::costs::{Class, Measure, Meter, Metered};
use crate::upstream::freshness::Proven;

/// A GET of a cached, fresh resource answered from memory (or refused), or
/// why memory does not answer it. `permission`: the client's permission, which
/// a watch re-checks while it lives; `proven`: a consistent read's proof
/// (without it, a consistent read is [`Answer::Unproven`]).
pub async fn read(
    api: &Api,
    t: &Target<'_>,
    negotiated: Negotiated,
    info: &RequestInfo,
    permission: Option<Permission>,
    proven: Option<Proven>,
) -> Answer<Response<ApiBody>> {
    match t.name {
        None => collection(api, t, info, negotiated, permission, proven).await,
        // A GET asking for the list form gets the apiserver's 406.
        Some(_) if negotiated.shape == Shape::MetadataList => Answer::Upstream(PassThrough::Encoding),
        Some(name) => {
            let answer =
                get::get(t.res, t.namespace, name, info.query.get("resourceVersion"), api.config.revision_wait, negotiated, proven).await;
            if let Answer::Memory(_) = answer {
                api.counters.gets_served.fetch_add(1, Ordering::Relaxed);
            }
            answer
        }
    }
}

/// A protobuf or CBOR page of more objects than this passes through until
/// the resource's encodings are made ahead (`CachedResource::warm`):
/// client-go's pages (500) cost a few tens of ms to encode, as they cost
/// the apiserver; a whole list costs seconds.
const BINARY_PAGE: usize = 500;

/// Why a read of up to `limit` objects of `res` in `encoding` passes through
/// while its encodings are made: it would make more than [`BINARY_PAGE`] of
/// them in the read; asking starts making them.
fn cold(res: &Arc<CachedResource>, encoding: Encoding, limit: usize) -> Option<PassThrough> {
    let why = match encoding {
        Encoding::Json | Encoding::Yaml => return None,
        Encoding::Protobuf => PassThrough::ProtobufBeingMade,
        Encoding::Cbor => PassThrough::CborBeingMade,
    };
    (limit > BINARY_PAGE && res.store().view().head().len() > BINARY_PAGE && !res.warm(encoding)).then_some(why)
}

/// A list or watch from memory, an error `Status`, or why the request passes through.
async fn collection(
    api: &Api,
    t: &Target<'_>,
    info: &RequestInfo,
    negotiated: Negotiated,
    permission: Option<Permission>,
    proven: Option<Proven>,
) -> Answer<Response<ApiBody>> {
    let opts = match info.options() {
        Some(Ok(o)) => o,
        Some(Err(e)) => return Answer::Memory(encode::error(negotiated, e)),
        // Routing sends memory only a collection's lists and watches.
        None => return Answer::Upstream(PassThrough::NotCached),
    };
    if opts.watch {
        return watch_collection(api, t, opts, negotiated, permission, proven).await;
    }
    if negotiated.shape == Shape::Metadata {
        // A list asking for the single-object form gets the apiserver's 406.
        return Answer::Upstream(PassThrough::Encoding);
    }
    // Decided before any wait for a proof: a large protobuf or CBOR list goes upstream at once while its encodings are made.
    let limit = match usize::try_from(opts.limit) {
        Ok(n) if n > 0 && opts.resource_version != "0" => n,
        _ => usize::MAX,
    };
    // A selector naming an indexed value (a kubelet's node) bounds what the read can encode.
    let indexed = Filter::new(t.res.info(), t.namespace, opts, None).most_matches(t.res.store().view().head());
    if let Some(why) = cold(t.res, negotiated.encoding, limit.min(indexed.unwrap_or(usize::MAX))) {
        return Answer::Upstream(why);
    }
    match list::list(t.res, t.namespace, opts, api.config.revision_wait, proven).await {
        Ok(Answer::Memory(page)) => {
            let cost = inflight::cost(page.items.len(), negotiated.gzip);
            let read: u64 = page.items.iter().map(|o| o.bytes().len() as u64).sum();
            let Some(reservation) = api.list_memory.reserve(cost, inflight::WAIT).await else {
                tracing::debug!(resource = %t.res.info().qualified(), "no memory for a list in the budget: 429");
                return Answer::Memory(encode::too_many_requests());
            };
            match encode::page_parts(t.res, page, negotiated) {
                Some(parts) => {
                    api.counters.lists_served.fetch_add(1, Ordering::Relaxed);
                    // What lists from memory cost, for the choice of consistent reads' source.
                    let measure = Measure::MemoryRead(Class::of(&negotiated, false), read);
                    let meter = Meter::new(api.client.costs().clone(), measure, Instant::now());
                    let resp = encode::respond(negotiated, StatusCode::OK, inflight::Reserved::new(parts, reservation));
                    Answer::Memory(resp.map(|b| Metered::new(b, Some(meter)).boxed()))
                }
                None => {
                    tracing::debug!(resource = %t.res.info().qualified(), "list passed through: an object its printer or protobuf cannot express");
                    Answer::Upstream(PassThrough::Encoding)
                }
            }
        }
        Ok(Answer::Upstream(why)) => {
            tracing::debug!(resource = %t.res.info().qualified(), %why, "list passed through");
            Answer::Upstream(why)
        }
        Ok(Answer::Unproven(read)) => Answer::Unproven(read),
        Err(e) => Answer::Memory(encode::error(negotiated, &e)),
    }
}

/// A watch from memory, an error `Status`, or why it passes through.
async fn watch_collection(
    api: &Api,
    t: &Target<'_>,
    opts: &ListOptions,
    negotiated: Negotiated,
    permission: Option<Permission>,
    proven: Option<Proven>,
) -> Answer<Response<ApiBody>> {
    let passed = |why: PassThrough| {
        tracing::debug!(resource = %t.res.info().qualified(), %why, "watch passed through");
        api.counters.watches_passed_through.fetch_add(1, Ordering::Relaxed);
        Answer::Upstream(why)
    };
    // Indented streams, YAML (which has no stream form: the apiserver's 406),
    // table streams with bookmarks the printer cannot print, and watches
    // asking for the list form are left to the apiserver.
    let served = !negotiated.pretty
        && negotiated.encoding != Encoding::Yaml
        && match negotiated.shape {
            Shape::Objects | Shape::Metadata => true,
            // A bookmark is a row of the kind's empty object: served where the printer prints it.
            Shape::Table { .. } => {
                let bookmark = apimachinery::watch::bookmark_object(t.res.info(), 1, false);
                !opts.allow_watch_bookmarks || t.res.printer().is_some_and(|p| p.row(&bookmark, 0).is_some())
            }
            Shape::MetadataList => false,
        };
    if !served {
        return passed(PassThrough::WatchForm);
    }
    let initial = || Filter::new(t.res.info(), t.namespace, opts, None).most_matches(t.res.store().view().head()).unwrap_or(usize::MAX);
    if let Some(why) = opts.sends_initial_events().then(|| cold(t.res, negotiated.encoding, initial())).flatten() {
        return passed(why);
    }
    let ends = watch::Ends { stopping: api.stopping.subscribe(), permission };
    let answer = watch::watch(
        (t.res, &api.dispatchers[t.index]),
        t.namespace,
        (opts, proven),
        negotiated,
        (api.config.revision_wait, &api.config.watch),
        ends,
    );
    match answer.await {
        Ok(Answer::Memory(resp)) => {
            api.counters.watches_served.fetch_add(1, Ordering::Relaxed);
            Answer::Memory(resp)
        }
        Ok(Answer::Upstream(why)) => passed(why),
        Ok(Answer::Unproven(read)) => Answer::Unproven(read),
        Err(e) => Answer::Memory(encode::error(negotiated, &e)),
    }
}

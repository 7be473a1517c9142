//! Answers written as the apiserver writes them, from what content
//! negotiation chose ([`Negotiated`]): the objects, their metadata only, or
//! a Table of them; in JSON — compact and ending with a newline, or
//! indented (`?pretty=true`, curl, Wget and browsers) as `json.MarshalIndent`
//! does, while streaming — in YAML ([`yaml`]), protobuf ([`protobuf`]) or
//! CBOR ([`cbor`]); gzipped above 128 KiB when the client accepts it. Error
//! `Status` bodies are laid out as the answer they replace; watch frames
//! ([`event_frame`]) are written in the stream's encoding and shape.
//!
//! Invariant: an answer that cannot be written whole (an object its Table's
//! printer cannot read, or without an encoding in the one asked for) is
//! `None` before its first byte, so the caller passes the request through
//! (or ends the stream) — never a partial or guessed answer.

pub mod cbor;
pub mod protobuf;
mod yaml;

use std::sync::Arc;

use apimachinery::json;
use apimachinery::list::{Envelope, json_list_parts};
use apimachinery::negotiate::{Encoding, Negotiated, Shape};
use apimachinery::partial::MetaVersion;
use apimachinery::status::ApiError;
use apimachinery::table::{self, IncludeObject, unix_now};
use apimachinery::watch::{EventType, json_bookmark, json_error, json_frame};
use bytes::Bytes;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER, VARY, X_CONTENT_TYPE_OPTIONS};
use http::{HeaderValue, Response, StatusCode};

use super::body::{self, ApiBody, Parts};
use super::filter::Transition;
use super::list::Page;
use crate::cache::CachedResource;
use crate::store::{CachedObject, Event};

/// A watch frame of event `typ` carrying `o` (with `metadata.resourceVersion`
/// set to `at` when given) as the stream `frames` holds them; `None` when
/// `o` has no encoding in the stream's.
pub fn event_frame(res: &CachedResource, typ: EventType, o: &CachedObject, frames: Negotiated, at: Option<u64>) -> Option<Bytes> {
    match frames.encoding {
        Encoding::Protobuf => Some(protobuf::frame(typ, &protobuf::object(res, o, frames.shape, at)?)),
        Encoding::Cbor => cbor::frame(res, typ, o, frames.shape, at),
        Encoding::Json | Encoding::Yaml => {
            let parts = object_parts(res, o, frames.shape, at)?;
            Some(json_frame(typ, &parts.iter().map(|p| &p[..]).collect::<Vec<_>>()))
        }
    }
}

/// The frame a watcher with transition `t` gets for `e` in `frames`; `None`
/// when the object has no encoding in the stream's.
pub fn transition_frame(res: &CachedResource, e: &Event, t: Transition, frames: Negotiated) -> Option<Bytes> {
    match (t, &e.prev) {
        (Transition::Added, _) => event_frame(res, EventType::Added, &e.object, frames, None),
        (Transition::Modified, _) => event_frame(res, EventType::Modified, &e.object, frames, None),
        (Transition::Left, Some(prev)) => event_frame(res, EventType::Deleted, prev, frames, Some(e.rv())),
        (Transition::Deleted | Transition::Left, _) => event_frame(res, EventType::Deleted, &e.object, frames, None),
    }
}

/// A BOOKMARK frame at `rv` in the stream `frames`.
pub fn bookmark_frame(res: &CachedResource, rv: u64, initial_events_end: bool, frames: Negotiated) -> Option<Bytes> {
    match (frames.encoding, frames.shape) {
        (Encoding::Protobuf, shape) => protobuf::bookmark(res, rv, initial_events_end, shape),
        (Encoding::Cbor, shape) => cbor::bookmark(res, rv, initial_events_end, shape),
        (Encoding::Json | Encoding::Yaml, Shape::Objects) => Some(json_bookmark(res.info(), rv, initial_events_end)),
        (Encoding::Json | Encoding::Yaml, Shape::Metadata | Shape::MetadataList) => {
            Some(apimachinery::partial::json_bookmark(rv, initial_events_end))
        }
        (Encoding::Json | Encoding::Yaml, Shape::Table { .. }) => None,
    }
}

/// An ERROR frame carrying `e`.
pub fn error_frame(e: &ApiError, encoding: Encoding) -> Bytes {
    match encoding {
        Encoding::Json | Encoding::Yaml => json_error(e),
        Encoding::Protobuf => protobuf::error_frame(e),
        Encoding::Cbor => cbor::error_frame(e),
    }
}

/// A list page as `negotiated`; `None` when an object does not fit its
/// Table's printer or has no encoding in the one asked for — known before
/// the first byte is written. Objects and their metadata (JSON or, for
/// objects, protobuf) are made as they are written; Table rows, CBOR and
/// metadata-only protobuf, which may fail, are made first.
pub fn page_parts(res: &Arc<CachedResource>, page: Page, negotiated: Negotiated) -> Option<Parts> {
    match negotiated.encoding {
        Encoding::Protobuf => return protobuf::page(res, page, negotiated.shape),
        Encoding::Cbor => return cbor::page(res, page, negotiated.shape),
        Encoding::Json | Encoding::Yaml => {}
    }
    Some(match negotiated.shape {
        Shape::MetadataList | Shape::Metadata => {
            let res = res.clone();
            Box::new(apimachinery::partial::list(&page.meta, page.items.into_iter().map(move |o| res.metadata_bytes(&o))))
        }
        Shape::Objects => Box::new(json_list_parts(
            &res.info().list_kind(),
            &res.info().api_version(),
            &page.meta,
            if res.is_custom() { Envelope::Unstructured } else { Envelope::Typed },
            page.items.into_iter().map(|o| [o.bytes().clone()]),
        )),
        Shape::Table { version, include } => {
            let printer = res.printer()?;
            let now = unix_now();
            let mut items: Vec<&CachedObject> = page.items.iter().map(AsRef::as_ref).collect();
            printer.order_rows(&mut items, |o| o.bytes());
            let rows = items
                .into_iter()
                .map(|o| Some((printer.row(o.bytes(), now)?, row_object(res, o, include, version))))
                .collect::<Option<Vec<_>>>()?;
            Box::new(table::json_table(version, &page.meta.unsharded().json(), &printer, rows).into_iter())
        }
    })
}

/// One object (a GET) as `negotiated`; `None` when it does not fit its
/// Table's printer or has no encoding in the one asked for.
pub fn get_parts(res: &CachedResource, o: &CachedObject, negotiated: Negotiated) -> Option<Vec<Bytes>> {
    match (negotiated.encoding, negotiated.shape) {
        (Encoding::Protobuf, shape) => protobuf::object(res, o, shape, None),
        (Encoding::Cbor, shape) => cbor::object(res, o, shape),
        (Encoding::Json | Encoding::Yaml, Shape::Table { version, include }) => {
            let printer = res.printer()?;
            let meta = format!("{{\"resourceVersion\":\"{}\"}}", o.resource_version());
            let row = (printer.row(o.bytes(), unix_now())?, row_object(res, o, include, version));
            Some(table::json_table(version, &meta, &printer, [row]))
        }
        (Encoding::Json | Encoding::Yaml, shape) => object_parts(res, o, shape, None),
    }
}

/// What a Table row carries of `o`.
fn row_object(res: &CachedResource, o: &CachedObject, include: IncludeObject, version: MetaVersion) -> Option<Vec<Bytes>> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Metadata => Some(apimachinery::partial::object_in(version, res.metadata_parts(o, None))),
        IncludeObject::Object => Some(res.lone(o)),
    }
}

/// `o` as a lone JSON object (a GET, a watch event) holding `shape`, with
/// `metadata.resourceVersion` set to `at` when given; parts that
/// concatenate to it, sharing the stored bytes. `None` for a Table, which
/// is no lone object.
pub fn object_parts(res: &CachedResource, o: &CachedObject, shape: Shape, at: Option<u64>) -> Option<Vec<Bytes>> {
    match (shape, at) {
        (Shape::Objects, None) => Some(res.lone(o)),
        (Shape::Objects, Some(rv)) => Some(res.lone_at(o, rv)),
        (Shape::Metadata | Shape::MetadataList, at) => Some(apimachinery::partial::object(res.metadata_parts(o, at))),
        (Shape::Table { .. }, _) => None,
    }
}

/// Bodies above this size are gzipped when the client accepts it (the apiserver's 128 KiB).
const GZIP_THRESHOLD: usize = 128 * 1024;

/// A document written from `parts` (compact JSON, protobuf or CBOR, in
/// order) as `negotiated`, taken from the iterator as the client reads.
pub fn respond<P>(negotiated: Negotiated, status: StatusCode, parts: P) -> Response<ApiBody>
where
    P: IntoIterator<Item = Bytes>,
    P::IntoIter: Send + Sync + 'static,
{
    let mut parts: Parts = match negotiated.encoding {
        Encoding::Yaml => yaml::parts(parts.into_iter()),
        Encoding::Json if !negotiated.pretty => Box::new(parts.into_iter().chain([Bytes::from_static(json::END)])),
        _ => Box::new(parts.into_iter()),
    };
    // Whether it is over the threshold, from the parts up to it (held
    // only for gzip). Indenting only lengthens a document, so a compact
    // one over the threshold is over it indented too.
    let mut first = Vec::new();
    let mut len = 0;
    while negotiated.gzip && len <= GZIP_THRESHOLD {
        let Some(part) = parts.next() else { break };
        len += part.len();
        first.push(part);
    }
    let parts = first.into_iter().chain(parts);
    let mut resp = Response::builder().status(status).header(CONTENT_TYPE, negotiated.encoding.content_type(false));
    let body = if negotiated.gzip && len > GZIP_THRESHOLD {
        resp = resp.header(CONTENT_ENCODING, "gzip").header(VARY, "Accept-Encoding");
        body::gzip(parts, negotiated.pretty)
    } else if negotiated.pretty {
        body::indented(parts)
    } else {
        body::chunks(parts)
    };
    resp.body(body).unwrap_or_else(|_| Response::new(body::full("")))
}

/// The apiserver's `Status` for `e`, laid out as `negotiated`.
pub fn error(negotiated: Negotiated, e: &ApiError) -> Response<ApiBody> {
    let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = match negotiated.encoding {
        Encoding::Json | Encoding::Yaml => Bytes::from(e.body()),
        Encoding::Protobuf => protobuf::status(e),
        Encoding::Cbor => cbor::status(e),
    };
    let mut resp = respond(Negotiated { gzip: false, ..negotiated }, code, vec![body]);
    if let Some(s) = e.retry_after {
        resp.headers_mut().insert(RETRY_AFTER, HeaderValue::from(s));
    }
    // The refusal itself, for the audit's `responseStatus`.
    resp.extensions_mut().insert(e.clone());
    resp
}

/// A watch stream's response head around `body`, in `frames`' encoding.
pub fn stream(frames: Negotiated, body: ApiBody) -> Response<ApiBody> {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(frames.encoding.content_type(true)));
    resp
}

/// A plain-text answer of kache's own (health checks, refusals).
pub fn text(status: StatusCode, s: impl Into<Bytes>) -> Response<ApiBody> {
    let mut resp = Response::new(body::full(s));
    *resp.status_mut() = status;
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    resp
}

/// The apiserver's answer to overload (its max-in-flight and APF filters):
/// plain text, `Retry-After: 1`.
pub fn too_many_requests() -> Response<ApiBody> {
    let mut resp = text(StatusCode::TOO_MANY_REQUESTS, "Too many requests, please try again later.\n");
    resp.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("1"));
    resp.headers_mut().insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    resp
}

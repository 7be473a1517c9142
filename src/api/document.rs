//! Answers as the apiserver writes them for a request: of the objects, of
//! their metadata only ([`Form`]), or a Table of them ([`Shape`]); in JSON —
//! compact and ending with a newline, or indented (`?pretty=true`, curl,
//! Wget and browsers) as `json.MarshalIndent` does, while streaming — or in
//! protobuf ([`super::proto`]) or CBOR ([`super::cbor`]); gzipped above 128 KiB when the client
//! accepts it. Error `Status` bodies are laid out the same way as the
//! answer they replace; watch frames ([`event_frame`]) follow the stream's
//! [`Wire`].

use apimachinery::json;
use apimachinery::list::{Envelope, json_list_parts};
use apimachinery::negotiate::{self, Format};
use apimachinery::partial::MetaVersion;
use apimachinery::status::ApiError;
use std::sync::Arc;

use apimachinery::table::{self, IncludeObject, Printer, unix_now};
use apimachinery::watch::{EventType, json_bookmark, json_error, json_frame};
use bytes::Bytes;
use http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER, USER_AGENT, VARY};
use http::{HeaderMap, HeaderValue, Response, StatusCode};

use super::body::{self, ApiBody, Parts};
use super::form::{Encoding, Form, Wire};
use super::list::Page;
use super::{cbor, proto};
use crate::cache::CachedResource;
use crate::store::CachedObject;

/// What a list or GET answer holds: objects in a form, or a Table of them.
#[derive(Debug, Clone)]
pub enum Shape {
    Form(Form),
    /// In the `meta.k8s.io` version asked for.
    Table(Arc<Printer>, IncludeObject, MetaVersion),
}

/// A watch frame of event `typ` carrying `o` (with `metadata.resourceVersion`
/// set to `at` when given); `None` when `o` has no encoding in the wire's.
pub fn event_frame(res: &CachedResource, typ: EventType, o: &CachedObject, wire: Wire, at: Option<u64>) -> Option<Bytes> {
    match wire.encoding {
        Encoding::Protobuf => Some(proto::frame(typ, &proto::object(res, o, wire.form, at)?)),
        Encoding::Cbor => cbor::frame(res, typ, o, wire.form, at),
        Encoding::Json => {
            let parts = object_parts(res, o, wire.form, at);
            Some(json_frame(typ, &parts.iter().map(|p| &p[..]).collect::<Vec<_>>()))
        }
    }
}

/// A BOOKMARK frame at `rv`.
pub fn bookmark_frame(res: &CachedResource, rv: u64, initial_events_end: bool, wire: Wire) -> Option<Bytes> {
    match (wire.encoding, wire.form) {
        (Encoding::Protobuf, form) => proto::bookmark(res, rv, initial_events_end, form),
        (Encoding::Cbor, form) => cbor::bookmark(res, rv, initial_events_end, form),
        (Encoding::Json, Form::Objects) => Some(json_bookmark(&res.info, rv, initial_events_end)),
        (Encoding::Json, Form::Metadata | Form::MetadataList) => Some(apimachinery::partial::json_bookmark(rv, initial_events_end)),
    }
}

/// An ERROR frame carrying `e`.
pub fn error_frame(e: &ApiError, encoding: Encoding) -> Bytes {
    match encoding {
        Encoding::Json => json_error(e),
        Encoding::Protobuf => proto::error_frame(e),
        Encoding::Cbor => cbor::error_frame(e),
    }
}

/// A list page in `shape` (in protobuf or CBOR when asked); `None` when an
/// object does not fit its Table's printer or has no encoding in the one
/// asked for — known before the first byte is written. Objects and their
/// metadata (JSON or, for objects, protobuf) are made as they are written;
/// Table rows, CBOR and metadata-only protobuf, which may fail, are made
/// first.
pub fn page_parts(res: &Arc<CachedResource>, page: Page, shape: &Shape, encoding: Encoding) -> Option<Parts> {
    match (encoding, shape) {
        (Encoding::Protobuf, Shape::Form(form)) => return proto::page(res, page, *form),
        (Encoding::Cbor, Shape::Form(form)) => return cbor::page(res, page, *form),
        _ => {}
    }
    Some(match shape {
        Shape::Form(Form::MetadataList | Form::Metadata) => {
            let res = res.clone();
            Box::new(apimachinery::partial::list(&page.meta, page.items.into_iter().map(move |o| res.metadata_bytes(&o))))
        }
        Shape::Form(Form::Objects) => Box::new(json_list_parts(
            &res.info.list_kind(),
            &res.info.api_version(),
            &page.meta,
            if res.is_custom() { Envelope::Unstructured } else { Envelope::Typed },
            page.items.into_iter().map(|o| [o.bytes().clone()]),
        )),
        Shape::Table(printer, include, version) => {
            let now = unix_now();
            let mut items: Vec<&CachedObject> = page.items.iter().map(AsRef::as_ref).collect();
            printer.order_rows(&mut items, |o| o.bytes());
            let rows = items
                .into_iter()
                .map(|o| Some((printer.row(o.bytes(), now)?, row_object(res, o, *include, *version))))
                .collect::<Option<Vec<_>>>()?;
            Box::new(table::json_table(*version, &page.meta.unsharded().json(), printer, rows).into_iter())
        }
    })
}

/// One object (a GET) in `shape` (in protobuf or CBOR when asked); `None`
/// when it does not fit its Table's printer or has no encoding in the one asked for.
pub fn get_parts(res: &CachedResource, o: &CachedObject, shape: &Shape, encoding: Encoding) -> Option<Vec<Bytes>> {
    match (encoding, shape) {
        (Encoding::Protobuf, Shape::Form(form)) => return proto::object(res, o, *form, None),
        (Encoding::Cbor, Shape::Form(form)) => return cbor::object(res, o, *form),
        _ => {}
    }
    Some(match shape {
        Shape::Form(form) => object_parts(res, o, *form, None),
        Shape::Table(printer, include, version) => {
            let meta = format!("{{\"resourceVersion\":\"{}\"}}", o.resource_version());
            let row = (printer.row(o.bytes(), unix_now())?, row_object(res, o, *include, *version));
            table::json_table(*version, &meta, printer, [row])
        }
    })
}

/// What a Table row carries of `o`.
fn row_object(res: &CachedResource, o: &CachedObject, include: IncludeObject, version: MetaVersion) -> Option<Vec<Bytes>> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Metadata => Some(apimachinery::partial::object_in(version, res.metadata_parts(o, None))),
        IncludeObject::Object => Some(res.lone(o)),
    }
}

/// `o` as a lone object (a GET, a watch event) in `form`, with
/// `metadata.resourceVersion` set to `at` when given; parts that
/// concatenate to it, sharing the stored bytes.
pub fn object_parts(res: &CachedResource, o: &CachedObject, form: Form, at: Option<u64>) -> Vec<Bytes> {
    match (form, at) {
        (Form::Objects, None) => res.lone(o),
        (Form::Objects, Some(rv)) => res.lone_at(o, rv),
        (Form::Metadata | Form::MetadataList, at) => apimachinery::partial::object(res.metadata_parts(o, at)),
    }
}

/// Bodies above this size are gzipped when the client accepts it (the apiserver's 128 KiB).
const GZIP_THRESHOLD: usize = 128 * 1024;

/// How this request's answer is written.
#[derive(Debug, Clone, Copy, Default)]
pub struct Layout {
    /// Indented (JSON only).
    pub pretty: bool,
    /// YAML rather than JSON ([`super::yaml`]).
    pub yaml: bool,
    /// The client accepts gzip.
    pub gzip: bool,
    /// Protobuf or CBOR rather than JSON.
    pub encoding: Encoding,
}

impl Layout {
    /// The layout the apiserver would use for a request with `headers` and
    /// `query` in `format`; `pretty_media` is the negotiated media type's
    /// `pretty=1` (JSON only: the YAML serializer ignores it).
    pub fn of(headers: &HeaderMap, query: &str, pretty_media: bool, format: Format) -> Layout {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        Layout {
            pretty: format == Format::Json && (pretty_media || negotiate::pretty(query, header(USER_AGENT.as_str()))),
            yaml: format == Format::Yaml,
            gzip: negotiate::accepts_gzip(header(ACCEPT_ENCODING.as_str())),
            encoding: Encoding::of(format),
        }
    }

    /// The Content-Type of a response (`stream`: a watch's).
    pub fn content_type(self, stream: bool) -> &'static str {
        match (self.encoding, stream) {
            (Encoding::Json, _) if self.yaml => "application/yaml",
            (Encoding::Json, _) => "application/json",
            (Encoding::Protobuf, false) => apimachinery::protobuf::MEDIA_TYPE,
            (Encoding::Protobuf, true) => "application/vnd.kubernetes.protobuf;stream=watch",
            (Encoding::Cbor, false) => apimachinery::cbor::MEDIA_TYPE,
            (Encoding::Cbor, true) => apimachinery::cbor::SEQ_MEDIA_TYPE,
        }
    }

    /// A document written from `parts` (compact JSON or protobuf, in order),
    /// taken from the iterator as the client reads.
    pub fn respond<P>(self, status: StatusCode, parts: P) -> Response<ApiBody>
    where
        P: IntoIterator<Item = Bytes>,
        P::IntoIter: Send + Sync + 'static,
    {
        let mut parts: Parts = match self.yaml {
            true => super::yaml::parts(parts.into_iter()),
            false => {
                let end = (!self.pretty && self.encoding == Encoding::Json).then(|| Bytes::from_static(json::END));
                Box::new(parts.into_iter().chain(end))
            }
        };
        // Whether it is over the threshold, from the parts up to it (held
        // only for gzip). Indenting only lengthens a document, so a compact
        // one over the threshold is over it indented too.
        let mut first = Vec::new();
        let mut len = 0;
        while self.gzip && len <= GZIP_THRESHOLD {
            let Some(part) = parts.next() else { break };
            len += part.len();
            first.push(part);
        }
        let parts = first.into_iter().chain(parts);
        let mut resp = Response::builder().status(status).header(CONTENT_TYPE, self.content_type(false));
        let body = if self.gzip && len > GZIP_THRESHOLD {
            resp = resp.header(CONTENT_ENCODING, "gzip").header(VARY, "Accept-Encoding");
            body::gzip(parts, self.pretty)
        } else if self.pretty {
            body::indented(parts)
        } else {
            body::chunks(parts)
        };
        resp.body(body).unwrap_or_else(|_| Response::new(body::full("")))
    }

    /// The apiserver's `Status` for `e`.
    pub fn error(self, e: &ApiError) -> Response<ApiBody> {
        let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = match self.encoding {
            Encoding::Json => Bytes::from(e.body()),
            Encoding::Protobuf => proto::status(e),
            Encoding::Cbor => cbor::status(e),
        };
        let mut resp = Layout { gzip: false, ..self }.respond(code, vec![body]);
        if let Some(s) = e.retry_after {
            resp.headers_mut().insert(RETRY_AFTER, HeaderValue::from(s));
        }
        resp
    }
}

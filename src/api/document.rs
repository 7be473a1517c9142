//! JSON answers as the apiserver writes them for a request: of the objects,
//! of their metadata only ([`Form`]), or a Table of them ([`Shape`]); compact and
//! ending with a newline, or indented (`?pretty=true`, curl, Wget and
//! browsers) as `json.MarshalIndent` does, while streaming; gzipped above
//! 128 KiB when the client accepts it. Error `Status` bodies are laid out
//! the same way as the answer they replace.

use apimachinery::json;
use apimachinery::list::json_list;
use apimachinery::negotiate;
use apimachinery::status::ApiError;
use apimachinery::table::{self, IncludeObject, Printer, unix_now};
use bytes::Bytes;
use http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER, USER_AGENT, VARY};
use http::{HeaderMap, HeaderValue, Response, StatusCode};

use super::body::{self, ApiBody};
use super::list::Page;
use crate::cache::CachedResource;
use crate::store::CachedObject;

/// What a JSON answer holds: the objects, or their metadata only (in the
/// form for one object — also a watch's events — or the form for a list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Objects,
    Metadata,
    MetadataList,
}

/// What a list or GET answer holds: objects in a form, or a Table of them.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    Form(Form),
    Table(&'static Printer, IncludeObject),
}

/// A list page in `shape`; `None` when an object does not fit its Table's printer.
pub fn page_parts(res: &CachedResource, page: &Page, shape: Shape) -> Option<Vec<Bytes>> {
    Some(match shape {
        Shape::Form(Form::MetadataList | Form::Metadata) => {
            apimachinery::partial::list(&page.meta, page.items.iter().map(|o| o.bytes().slice(o.metadata_range())))
        }
        Shape::Form(Form::Objects) => json_list(&res.info, &page.meta, page.items.iter().map(|o| o.bytes())),
        Shape::Table(printer, include) => {
            let now = unix_now();
            let rows =
                page.items.iter().map(|o| Some((printer.row(o.bytes(), now)?, row_object(res, o, include)))).collect::<Option<Vec<_>>>()?;
            table::json_table(&page.meta.json(), printer, rows)
        }
    })
}

/// One object (a GET) in `shape`; `None` when it does not fit its Table's printer.
pub fn get_parts(res: &CachedResource, o: &CachedObject, shape: Shape) -> Option<Vec<Bytes>> {
    Some(match shape {
        Shape::Form(form) => object_parts(res, o, form, None),
        Shape::Table(printer, include) => {
            let meta = format!("{{\"resourceVersion\":\"{}\"}}", o.resource_version());
            table::json_table(&meta, printer, [(printer.row(o.bytes(), unix_now())?, row_object(res, o, include))])
        }
    })
}

/// What a Table row carries of `o`.
fn row_object(res: &CachedResource, o: &CachedObject, include: IncludeObject) -> Option<Vec<Bytes>> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Metadata => Some(object_parts(res, o, Form::Metadata, None)),
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
        (Form::Metadata | Form::MetadataList, at) => apimachinery::partial::object(o.metadata_at(at)),
    }
}

/// Bodies above this size are gzipped when the client accepts it (the apiserver's 128 KiB).
const GZIP_THRESHOLD: usize = 128 * 1024;

/// How this request's JSON answer is written.
#[derive(Debug, Clone, Copy, Default)]
pub struct Layout {
    /// Indented.
    pub pretty: bool,
    /// The client accepts gzip.
    pub gzip: bool,
}

impl Layout {
    /// The layout the apiserver would use for a request with `headers` and
    /// `query`; `pretty_media` is the negotiated media type's `pretty=1`.
    pub fn of(headers: &HeaderMap, query: &str, pretty_media: bool) -> Layout {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        Layout {
            pretty: pretty_media || negotiate::pretty(query, header(USER_AGENT.as_str())),
            gzip: negotiate::accepts_gzip(header(ACCEPT_ENCODING.as_str())),
        }
    }

    /// A document written from `parts` (compact JSON, in order).
    pub fn respond(self, status: StatusCode, mut parts: Vec<Bytes>) -> Response<ApiBody> {
        if !self.pretty {
            parts.push(Bytes::from_static(json::END));
        }
        // Indenting only lengthens a document, so a compact one over the threshold is over it indented too.
        let len: usize = parts.iter().map(Bytes::len).sum();
        let mut resp = Response::builder().status(status).header(CONTENT_TYPE, "application/json");
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
        let mut resp = Layout { gzip: false, ..self }.respond(code, vec![Bytes::from(e.body())]);
        if let Some(s) = e.retry_after {
            resp.headers_mut().insert(RETRY_AFTER, HeaderValue::from(s));
        }
        resp
    }
}

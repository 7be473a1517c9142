//! How an answer is encoded and written: the format the request negotiated
//! (JSON, indented JSON for curl, protobuf, CBOR, YAML), gzip over 128 KiB
//! when accepted, and how the body is cut on the wire.
//!
//! Invariants: every answer, refusals included, is written here; a 406 is
//! always indented JSON (no format the client asked for can carry it).

use std::io::Write;

use bytes::Bytes;
use http::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER, USER_AGENT, VARY};
use http::{HeaderMap, Request, Response, StatusCode};
use serde_json::Value;

use crate::body::{self, Body, Writes};
use crate::object::Obj;
use crate::pace::Pace;
use crate::resources::ResourceType;
use apimachinery::json;
use apimachinery::negotiate::{self, Encoding, Endpoint, Negotiated, Shape};
use apimachinery::status::ApiError;

/// Responses above this size are gzipped when the client accepts it (the apiserver's 128 KiB).
const GZIP_THRESHOLD: usize = 128 * 1024;

/// How a response is written: what content negotiation chose
/// ([`Negotiated`]: the encoding — protobuf only for built-in kinds whose
/// client asked for it, CBOR only behind the `CBORServingAndStorage` gate,
/// YAML as the JSON document through `JSONToYAML`, written whole —,
/// indentation and gzip), and how it goes on the wire.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Writer {
    /// The encoding and layout negotiated (the shape is the handler's to apply).
    pub(super) negotiated: Negotiated,
    /// The request came over HTTP/2: bodies are cut as Go's HTTP/2 server cuts them.
    http2: bool,
}

impl Writer {
    pub(super) fn of<B>(req: &Request<B>, cbor_gate: bool) -> Self {
        let headers = req.headers();
        let pretty = negotiate::pretty(req.uri().query().unwrap_or(""), header(headers, USER_AGENT.as_str()));
        let gzip = negotiate::accepts_gzip(header(headers, ACCEPT_ENCODING.as_str()));
        // Errors of a request asking protobuf first are protobuf `Status`es (a resource without protobuf negotiates it off).
        let encoding = negotiate::negotiate(header(headers, ACCEPT.as_str()), &Endpoint::BUILTIN.with_cbor(cbor_gate))
            .map_or(Encoding::Json, |m| m.encoding);
        let negotiated = Negotiated { encoding, shape: Shape::Objects, pretty: pretty && encoding == Encoding::Json, gzip };
        Self { negotiated, http2: req.version() == http::Version::HTTP_2 }
    }

    /// Whether the answer is written in `encoding`.
    pub(super) fn is(self, encoding: Encoding) -> bool {
        self.negotiated.encoding == encoding
    }

    /// A JSON or protobuf document from shared chunks, encoded whole.
    pub(super) fn respond(self, status: StatusCode, parts: Vec<Bytes>) -> Response<Body> {
        self.respond_written(status, parts, Writes::Whole, None)
    }

    /// A list written item by item by the apiserver's streaming encoders,
    /// released no faster than `pace` allows.
    pub(super) fn respond_list(self, parts: Vec<Bytes>, pace: Option<Pace>) -> Response<Body> {
        self.respond_written(StatusCode::OK, parts, Writes::EachPart, pace)
    }

    /// A JSON or protobuf response from shared chunks that its encoder writes as `writes` says.
    pub(super) fn respond_written(self, status: StatusCode, parts: Vec<Bytes>, writes: Writes, pace: Option<Pace>) -> Response<Body> {
        let (parts, writes) = match self.is(Encoding::Yaml) {
            true => (vec![Bytes::from(apimachinery::yaml::from_json(&parts.concat()).expect("the simulator writes JSON"))], Writes::Whole),
            false => (parts, writes),
        };
        let len: usize = parts.iter().map(Bytes::len).sum();
        let content_type = self.negotiated.encoding.content_type(false);
        let mut resp = Response::builder().status(status).header(CONTENT_TYPE, content_type);
        let parts = if !self.is(Encoding::Json) {
            parts
        } else if self.negotiated.pretty {
            vec![Bytes::from(json::indent(&parts.concat()))]
        } else {
            let mut parts = parts;
            parts.push(Bytes::from_static(json::END));
            parts
        };
        if self.negotiated.gzip && len > GZIP_THRESHOLD {
            let mut enc = flate2::write::GzEncoder::new(Vec::with_capacity(len / 8), flate2::Compression::fast());
            for p in &parts {
                enc.write_all(p).expect("writing to memory");
            }
            let gz = enc.finish().expect("writing to memory");
            resp = resp.header(CONTENT_ENCODING, "gzip").header(VARY, "Accept-Encoding");
            return resp.body(body::written(vec![Bytes::from(gz)], Writes::Whole, self.http2, pace)).expect("valid response");
        }
        resp.body(body::written(parts, writes, self.http2, pace)).expect("valid response")
    }

    pub(super) fn value(self, status: StatusCode, v: &Value) -> Response<Body> {
        self.respond(status, vec![Bytes::from(serde_json::to_vec(v).expect("values serialize"))])
    }

    pub(super) fn error(self, e: &ApiError) -> Response<Body> {
        // A 406 cannot be written in a type the client asked for: the
        // apiserver falls back to indented JSON (`WriteRawJSON`).
        let enc = match e.code {
            406 => Writer { negotiated: Negotiated { encoding: Encoding::Json, pretty: true, ..self.negotiated }, ..self },
            _ => self,
        };
        let body = match enc.negotiated.encoding {
            Encoding::Protobuf => crate::proto::status(e),
            Encoding::Cbor => crate::cbor::status(e),
            Encoding::Json | Encoding::Yaml => Bytes::from(e.body()),
        };
        let mut resp = enc.respond(StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), vec![body]);
        if let Some(s) = e.retry_after {
            resp.headers_mut().insert(RETRY_AFTER, s.into());
        }
        resp
    }

    /// An object, in the format negotiated.
    pub(super) fn object(self, status: StatusCode, rt: &ResourceType, o: &Obj) -> Response<Body> {
        if self.is(Encoding::Cbor) {
            return match crate::cbor::document(rt, o, false) {
                Ok(parts) => self.respond(status, parts),
                Err(e) => self.error(&e),
            };
        }
        let doc = if self.is(Encoding::Protobuf) {
            crate::proto::message(rt).map(|m| crate::proto::document(rt, &m, &o.item, false))
        } else {
            None
        };
        match doc {
            Some(Ok(parts)) => self.respond(status, parts),
            Some(Err(e)) => self.error(&e),
            None => self.respond(status, vec![Bytes::from(o.with_type(rt))]),
        }
    }
}

pub(super) fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

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
use apimachinery::negotiate::{self, Endpoint};
use apimachinery::status::ApiError;
use apimachinery::{cbor, protobuf};

/// Responses above this size are gzipped when the client accepts it (the apiserver's 128 KiB).
const GZIP_THRESHOLD: usize = 128 * 1024;

/// How a response is to be encoded, from the request's headers and query,
/// and how it goes on the wire.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Encoding {
    pretty: bool,
    gzip: bool,
    /// Protobuf rather than JSON (built-in kinds whose client asked for it).
    pub(super) protobuf: bool,
    /// CBOR rather than JSON (with the `CBORServingAndStorage` gate on).
    pub(super) cbor: bool,
    /// YAML rather than JSON: the JSON document through `JSONToYAML`, written whole.
    pub(super) yaml: bool,
    /// The request came over HTTP/2: bodies are cut as Go's HTTP/2 server cuts them.
    http2: bool,
}

impl Encoding {
    pub(super) fn of<B>(req: &Request<B>, cbor_gate: bool) -> Self {
        let headers = req.headers();
        let pretty = negotiate::pretty(req.uri().query().unwrap_or(""), header(headers, USER_AGENT.as_str()));
        let gzip = negotiate::accepts_gzip(header(headers, ACCEPT_ENCODING.as_str()));
        // Errors of a request asking protobuf first are protobuf `Status`es (a resource without protobuf negotiates it off).
        let format = negotiate::negotiate(header(headers, ACCEPT.as_str()), &Endpoint::BUILTIN.with_cbor(cbor_gate)).map(|m| m.encoding);
        let (protobuf, yaml, cbor) = (
            format == Some(negotiate::Encoding::Protobuf),
            format == Some(negotiate::Encoding::Yaml),
            format == Some(negotiate::Encoding::Cbor),
        );
        Self {
            pretty: pretty && format == Some(negotiate::Encoding::Json),
            gzip,
            protobuf,
            cbor,
            yaml,
            http2: req.version() == http::Version::HTTP_2,
        }
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
        let (parts, writes) = match self.yaml {
            true => (vec![Bytes::from(apimachinery::yaml::from_json(&parts.concat()).expect("the simulator writes JSON"))], Writes::Whole),
            false => (parts, writes),
        };
        let len: usize = parts.iter().map(Bytes::len).sum();
        let content_type = match (self.protobuf, self.cbor, self.yaml) {
            (true, _, _) => protobuf::MEDIA_TYPE,
            (_, true, _) => cbor::MEDIA_TYPE,
            (_, _, true) => "application/yaml",
            _ => "application/json",
        };
        let mut resp = Response::builder().status(status).header(CONTENT_TYPE, content_type);
        let parts = if self.protobuf || self.cbor || self.yaml {
            parts
        } else if self.pretty {
            vec![Bytes::from(json::indent(&parts.concat()))]
        } else {
            let mut parts = parts;
            parts.push(Bytes::from_static(json::END));
            parts
        };
        if self.gzip && len > GZIP_THRESHOLD {
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
        let enc = if e.code == 406 { Encoding { pretty: true, protobuf: false, cbor: false, yaml: false, ..self } } else { self };
        let body = match (enc.protobuf, enc.cbor) {
            (true, _) => crate::proto::status(e),
            (_, true) => crate::cbor::status(e),
            _ => Bytes::from(e.body()),
        };
        let mut resp = enc.respond(StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), vec![body]);
        if let Some(s) = e.retry_after {
            resp.headers_mut().insert(RETRY_AFTER, s.into());
        }
        resp
    }

    /// An object, in the format negotiated.
    pub(super) fn object(self, status: StatusCode, rt: &ResourceType, o: &Obj) -> Response<Body> {
        if self.cbor {
            return match crate::cbor::document(rt, o, false) {
                Ok(parts) => self.respond(status, parts),
                Err(e) => self.error(&e),
            };
        }
        let doc = if self.protobuf { crate::proto::message(rt).map(|m| crate::proto::document(rt, &m, &o.item, false)) } else { None };
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

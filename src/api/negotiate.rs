//! What a read of a cached resource would look like from the apiserver
//! ([`Negotiated`]), and whether kache can write exactly that from what it
//! holds: JSON and YAML always; protobuf for the built-in kinds whose
//! objects it encodes (and metadata-only protobuf for custom resources);
//! CBOR where the apiserver serves it; Tables where kache has the
//! resource's printer; metadata-only forms in `meta.k8s.io/v1`.
//!
//! Invariant: a request is negotiated as the apiserver would negotiate it
//! (its endpoint's encodings, CBOR as upstream serves it), so a request
//! kache cannot answer is passed through whole — the apiserver then gives
//! its own answer, 406 included.

use apimachinery::negotiate::{self, Encoding, Endpoint, Negotiated, Shape};
use http::HeaderMap;
use http::header::{ACCEPT, ACCEPT_ENCODING, USER_AGENT};

use super::source::PassThrough;
use crate::cache::CachedResource;
use crate::upstream::capability::Probe;
use crate::upstream::client::Client;

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// What the apiserver would write for this request for `res`, if kache can
/// write it from what it holds.
pub fn negotiate(client: &Client, res: &CachedResource, headers: &HeaderMap, query: &str) -> Result<Negotiated, PassThrough> {
    // A built-in kind kache cannot encode in protobuf (RBAC, storage…) still
    // answers protobuf upstream: such a request is negotiated as the
    // apiserver would, then passed through.
    let endpoint = if res.is_custom() { Endpoint::CUSTOM } else { Endpoint::BUILTIN };
    let accept = header(headers, ACCEPT.as_str());
    // Whether the apiserver serves CBOR matters only where it changes the
    // answer; until kache knows, such a request passes through and a probe
    // learns it (`upstream::capability`).
    let without = negotiate::negotiate(accept, &endpoint);
    let with = negotiate::negotiate(accept, &endpoint.with_cbor(true));
    let media = match with == without {
        true => with,
        false => match res.status().capabilities.learn(Probe::Cbor, client, res.info()) {
            Some(true) => with,
            Some(false) => without,
            None => return Err(PassThrough::Encoding),
        },
    };
    let media = media.ok_or(PassThrough::Encoding)?;
    let negotiated = Negotiated::of(&media, query, header(headers, USER_AGENT.as_str()), header(headers, ACCEPT_ENCODING.as_str()))
        .ok_or(PassThrough::Encoding)?;
    let speaks = match (negotiated.encoding, negotiated.shape) {
        (_, Shape::Table { .. }) => res.printer().is_some(),
        (Encoding::Cbor, Shape::Objects) => res.cbor_schema().is_some(),
        (Encoding::Json | Encoding::Yaml | Encoding::Cbor, _) => true,
        (Encoding::Protobuf, Shape::Metadata | Shape::MetadataList) => res.speaks_metadata_protobuf(),
        (Encoding::Protobuf, Shape::Objects) => res.speaks_protobuf(),
    };
    speaks.then_some(negotiated).ok_or(PassThrough::Encoding)
}

//! The simulator's protobuf answers, as the apiserver writes them for
//! built-in kinds: each object's JSON encoded afresh per request with
//! `apimachinery::protobuf` (the simulator keeps no protobuf bytes).

use apimachinery::list::ListMeta;
use apimachinery::partial;
use apimachinery::protobuf::{self, document_parts, list_parts};
use apimachinery::status::ApiError;
use apimachinery::watch::EventType;
use bytes::Bytes;

use crate::resources::ResourceType;

const META_API_VERSION: &str = "meta.k8s.io/v1";

/// The protobuf message of a resource's kind, for the built-in kinds that
/// have one (custom resources have protobuf for their metadata only).
pub fn message(rt: &ResourceType) -> Option<String> {
    apimachinery::resource::builtin(&rt.group, &rt.version, &rt.plural)?;
    protobuf::message_name(&rt.api_version(), &rt.kind)
}

fn encode(message: &str, json: &[u8]) -> Result<Bytes, ApiError> {
    protobuf::encode(message, json).map(Bytes::from).map_err(|e| ApiError::internal(format!("no protobuf encoding: {e}")))
}

/// An item: the object's message, or its `PartialObjectMetadata` (which
/// custom resources, whose `message` is empty, have too).
fn item(rt: &ResourceType, message: &str, json: &[u8], partial: bool) -> Result<Vec<Bytes>, ApiError> {
    if !partial {
        return Ok(vec![encode(message, json)?]);
    }
    let meta = apimachinery::meta::parse(json, &[]).map_err(|e| ApiError::internal(e.to_string()))?;
    let meta = encode("apimachinery.pkg.apis.meta.v1.ObjectMeta", &apimachinery::meta::served_metadata(rt, meta.metadata.as_bytes()))?;
    let mut out = Vec::with_capacity(meta.len() + 6);
    protobuf::wire::len_field(&mut out, 1, &meta);
    Ok(vec![Bytes::from(out)])
}

/// One object's document from its JSON.
pub fn document(rt: &ResourceType, message: &str, json: &[u8], partial: bool) -> Result<Vec<Bytes>, ApiError> {
    let parts = item(rt, message, json, partial)?;
    Ok(if partial { document_parts(META_API_VERSION, partial::KIND, parts) } else { document_parts(&rt.api_version(), &rt.kind, parts) })
}

/// A list document of `items` (the objects' JSON).
pub fn list<'a>(
    rt: &ResourceType,
    message: &str,
    meta: &ListMeta,
    items: impl Iterator<Item = &'a [u8]>,
    partial: bool,
) -> Result<Vec<Bytes>, ApiError> {
    let items = items.map(|json| item(rt, message, json, partial)).collect::<Result<Vec<_>, _>>()?;
    let list_meta = protobuf::list_meta(&if partial { meta.unsharded() } else { meta.clone() });
    Ok(if partial {
        list_parts(META_API_VERSION, partial::LIST_KIND, &list_meta, items)
    } else {
        list_parts(&rt.api_version(), &format!("{}List", rt.kind), &list_meta, items)
    })
}

/// A watch frame of `json`; an ERROR frame should it have no encoding.
pub fn frame(rt: &ResourceType, message: &str, typ: EventType, json: &[u8], partial: bool) -> Bytes {
    match document(rt, message, json, partial) {
        Ok(doc) => Bytes::from(protobuf::watch_frame(typ.as_str(), &doc)),
        Err(e) => error_frame(&e),
    }
}

/// The `Status` document of `e`.
pub fn status(e: &ApiError) -> Bytes {
    protobuf::status(&e.body()).map(Bytes::from).unwrap_or_else(|_| Bytes::from(e.body()))
}

/// The ERROR frame carrying `e`.
pub fn error_frame(e: &ApiError) -> Bytes {
    Bytes::from(protobuf::watch_frame(EventType::Error.as_str(), &[status(e)]))
}

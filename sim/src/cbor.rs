//! The simulator's CBOR answers (`application/cbor`, watches as
//! `application/cbor-seq`), served only with [`SimConfig::cbor`] — the
//! apiserver's `CBORServingAndStorage` gate; without it CBOR gets the
//! apiserver's 406. Each object's JSON is encoded afresh per request with
//! `apimachinery::cbor`, in the canonical order of the apiserver's
//! deterministic encoder (the real apiserver shuffles its answers' order;
//! see that module).
//!
//! Custom resources: the simulator keeps JSON, so it answers as an
//! apiserver whose custom resources were written with integers where their
//! JSON shows integers (a real one may hold a float `1.0` there). Built-in
//! kinds the protobuf schema lacks (which says which strings are `[]byte`)
//! get a 500 in CBOR: the real apiserver serves them.
//!
//! [`SimConfig::cbor`]: crate::SimConfig::cbor

use apimachinery::cbor::{self, Object, Schema};
use apimachinery::list::{Envelope, ListMeta};
use apimachinery::partial;
use apimachinery::status::ApiError;
use apimachinery::watch::EventType;
use bytes::Bytes;

use crate::object::Obj;
use crate::resources::ResourceType;

/// How the objects of `rt` are encoded: by the protobuf schema for built-in
/// kinds (which says which strings are `[]byte`), as plain values for
/// custom resources; `None` for a built-in kind the schema lacks.
fn schema(rt: &ResourceType) -> Option<Schema> {
    match apimachinery::resource::builtin(&rt.group, &rt.version, &rt.plural) {
        Some(_) => Schema::builtin(&rt.api_version(), &rt.kind),
        None => Some(Schema::Plain),
    }
}

/// One object's map, with its kind and apiVersion when `typed` (a GET, a
/// watch event, a custom resource's list item), or its `PartialObjectMetadata`.
fn map(rt: &ResourceType, o: &Obj, partial: bool, typed: bool) -> Result<Vec<Bytes>, ApiError> {
    if partial {
        let meta = Object::encode(&o.served_metadata(rt), Schema::Plain).map_err(|e| ApiError::internal(e.to_string()))?;
        return Ok(cbor::partial_object(Bytes::from(meta.map().concat())));
    }
    let schema = schema(rt).ok_or_else(|| ApiError::internal(format!("no CBOR encoding of {}", rt.kind)))?;
    let object = Object::encode(&o.item, schema).map_err(|e| ApiError::internal(format!("no CBOR encoding: {e}")))?;
    Ok(if typed { object.typed_map(&rt.api_version(), &rt.kind) } else { object.map() })
}

/// One object's document.
pub fn document(rt: &ResourceType, o: &Obj, partial: bool) -> Result<Vec<Bytes>, ApiError> {
    Ok(cbor::document(map(rt, o, partial, true)?))
}

/// A list document of `items`.
pub fn list<'a>(rt: &ResourceType, meta: &ListMeta, items: impl Iterator<Item = &'a Obj>, partial: bool) -> Result<Vec<Bytes>, ApiError> {
    // Custom resources' list items carry their type (unstructured lists), built-in kinds' do not.
    let items = items.map(|o| map(rt, o, partial, rt.is_custom())).collect::<Result<Vec<_>, _>>()?;
    let (api_version, kind) = if partial {
        (partial::API_VERSION.to_string(), partial::LIST_KIND.to_string())
    } else {
        (rt.api_version(), format!("{}List", rt.kind))
    };
    let envelope = if partial { Envelope::Metadata } else { rt.envelope() };
    cbor::list(&api_version, &kind, envelope, meta, items).map_err(|e| ApiError::internal(e.to_string()))
}

/// A watch event of `o`; an ERROR event should it have no encoding.
pub fn frame(rt: &ResourceType, typ: EventType, o: &Obj, partial: bool) -> Bytes {
    match map(rt, o, partial, true) {
        Ok(map) => Bytes::from(cbor::watch_event(typ.as_str(), map).concat()),
        Err(e) => error_frame(&e),
    }
}

/// A BOOKMARK event of `json`: the kind's zero object or a `PartialObjectMetadata`.
pub fn bookmark(rt: &ResourceType, json: &[u8], partial: bool) -> Bytes {
    let schema = if partial { Some(Schema::Plain) } else { schema(rt) };
    match schema.map(|schema| Object::encode(json, schema)) {
        Some(Ok(object)) => Bytes::from(cbor::watch_event(EventType::Bookmark.as_str(), object.map()).concat()),
        Some(Err(e)) => error_frame(&ApiError::internal(format!("no CBOR encoding: {e}"))),
        None => error_frame(&ApiError::internal(format!("no CBOR encoding of {}", rt.kind))),
    }
}

/// The `Status` document of `e`.
pub fn status(e: &ApiError) -> Bytes {
    Bytes::from(cbor::plain_document(&e.body()).expect("a Status is a plain JSON object"))
}

/// The ERROR event carrying `e`.
pub fn error_frame(e: &ApiError) -> Bytes {
    let map = Object::encode(&e.body(), Schema::Plain).expect("a Status is a plain JSON object").map();
    Bytes::from(cbor::watch_event(EventType::Error.as_str(), map).concat())
}

//! CBOR answers (`application/cbor`; watches as `application/cbor-seq`) for
//! resources whose apiserver serves CBOR (`crate::upstream::capability`): lone
//! objects, list pages and watch events of the objects or of their metadata
//! only, and `Status` errors, in the canonical order of the apiserver's
//! deterministic encoder (`apimachinery::cbor`: the apiserver's own answers
//! are shuffled, so equal to these only once re-sorted).
//!
//! Invariants: every object's map comes from [`CachedResource::cbor_map`],
//! encoded once per revision and shared by every page and event (metadata-
//! only maps, a few hundred bytes, are made afresh per answer); an object
//! without an exact encoding (a custom resource's plain integers may be
//! stored floats) makes the whole answer `None`, so the caller passes the
//! request through or ends the stream — never a partial or guessed answer.

use apimachinery::cbor::{self, Object, Schema};
use apimachinery::list::Envelope;
use apimachinery::negotiate::Shape;
use apimachinery::status::ApiError;
use apimachinery::watch::EventType;
use bytes::Bytes;

use crate::api::body::Parts;
use crate::api::list::Page;
use crate::cache::CachedResource;
use crate::store::CachedObject;

/// `o`'s map as a lone object or event carries it, in `shape`, with
/// `metadata.resourceVersion` set to `at` when given.
fn map(res: &CachedResource, o: &CachedObject, shape: Shape, at: Option<u64>) -> Option<Vec<Bytes>> {
    match shape {
        Shape::Objects => res.cbor_map(o, at, true),
        Shape::Metadata | Shape::MetadataList => metadata(res, o, at),
        Shape::Table { .. } => None,
    }
}

/// `o`'s `PartialObjectMetadata` map.
fn metadata(res: &CachedResource, o: &CachedObject, at: Option<u64>) -> Option<Vec<Bytes>> {
    let meta = Object::encode(&res.metadata_parts(o, at).concat(), Schema::Plain).ok()?;
    Some(cbor::partial_object(Bytes::from(meta.map().concat())))
}

/// `o` as a lone document in `shape`.
pub fn object(res: &CachedResource, o: &CachedObject, shape: Shape) -> Option<Vec<Bytes>> {
    Some(cbor::document(map(res, o, shape, None)?))
}

/// A list page in `shape`. Custom resources' items carry their kind and
/// apiVersion (unstructured lists), built-in kinds' do not.
pub fn page(res: &CachedResource, page: Page, shape: Shape) -> Option<Parts> {
    let items = match shape {
        Shape::Table { .. } => return None,
        Shape::Objects => page.items.iter().map(|o| res.cbor_map(o, None, res.is_custom())).collect::<Option<Vec<_>>>()?,
        Shape::Metadata | Shape::MetadataList => page.items.iter().map(|o| metadata(res, o, None)).collect::<Option<Vec<_>>>()?,
    };
    let (api_version, kind) = match shape {
        Shape::Objects | Shape::Table { .. } => (res.info().api_version(), res.info().list_kind()),
        Shape::Metadata | Shape::MetadataList => {
            (apimachinery::partial::API_VERSION.to_string(), apimachinery::partial::LIST_KIND.to_string())
        }
    };
    let envelope = match shape {
        // A custom resource's list is an UnstructuredList (`continue` always there).
        Shape::Objects if res.is_custom() => Envelope::Unstructured,
        Shape::Objects | Shape::Table { .. } => Envelope::Typed,
        // Metadata-only lists carry no shardInfo (as in JSON and protobuf).
        Shape::Metadata | Shape::MetadataList => Envelope::Metadata,
    };
    let parts = cbor::list(&api_version, &kind, envelope, &page.meta, items).ok()?;
    Some(Box::new(parts.into_iter()))
}

/// A watch event of `o` in `shape`.
pub fn frame(res: &CachedResource, typ: EventType, o: &CachedObject, shape: Shape, at: Option<u64>) -> Option<Bytes> {
    Some(Bytes::from(cbor::watch_event(typ.as_str(), map(res, o, shape, at)?).concat()))
}

/// A BOOKMARK event at `rv`: the kind's zero object (or a
/// `PartialObjectMetadata`) with only the revision and, when it ends the
/// initial events, the annotation.
pub fn bookmark(res: &CachedResource, rv: u64, initial_events_end: bool, shape: Shape) -> Option<Bytes> {
    let (json, schema) = match shape {
        Shape::Table { .. } => return None,
        Shape::Objects => (
            apimachinery::watch::bookmark_object(res.info(), rv, initial_events_end),
            if res.is_custom() { Schema::Plain } else { res.cbor_schema()? },
        ),
        Shape::Metadata | Shape::MetadataList => {
            let metadata = apimachinery::watch::bookmark_metadata(rv, initial_events_end);
            (apimachinery::partial::object([Bytes::from(metadata)]).concat(), Schema::Plain)
        }
    };
    let object = Object::encode(&json, schema).ok()?;
    Some(Bytes::from(cbor::watch_event(EventType::Bookmark.as_str(), object.map()).concat()))
}

/// The `Status` document of `e`.
pub fn status(e: &ApiError) -> Bytes {
    // A Status is a plain JSON object: it always has an encoding; its JSON is the fallback should that ever fail.
    cbor::plain_document(&e.body()).map(Bytes::from).unwrap_or_else(|_| Bytes::from(e.body()))
}

/// The ERROR event carrying `e`.
pub fn error_frame(e: &ApiError) -> Bytes {
    match Object::encode(&e.body(), Schema::Plain) {
        Ok(status) => Bytes::from(cbor::watch_event(EventType::Error.as_str(), status.map()).concat()),
        Err(_) => Bytes::from(e.body()),
    }
}

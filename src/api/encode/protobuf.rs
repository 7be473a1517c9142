//! Protobuf answers (`application/vnd.kubernetes.protobuf`) as the
//! apiserver writes them: lone objects, list pages and watch frames of the
//! objects or of their metadata only, and `Status` errors.
//!
//! Invariants: every object's message comes from
//! [`CachedResource::protobuf_of`], encoded once per revision and shared by
//! every page and frame (a page's parts point into it); an object without
//! an encoding makes the whole answer `None`, so the caller passes the
//! request through or ends the stream — never a partial answer.

use apimachinery::list::ListMeta;
use apimachinery::negotiate::Shape;
use apimachinery::protobuf::{self, document_parts, list_head, list_item, list_parts, list_tail};
use apimachinery::status::ApiError;
use apimachinery::watch::EventType;
use bytes::Bytes;

use crate::api::body::Parts;
use crate::api::list::Page;
use crate::cache::CachedResource;
use crate::store::CachedObject;

const META_API_VERSION: &str = "meta.k8s.io/v1";

/// `o` as a lone document in `shape`, with `metadata.resourceVersion` set to `at` when given.
pub fn object(res: &CachedResource, o: &CachedObject, shape: Shape, at: Option<u64>) -> Option<Vec<Bytes>> {
    Some(match shape {
        Shape::Objects => document_parts(&res.info().api_version(), &res.info().kind, vec![res.protobuf_of(o, at)?]),
        Shape::Metadata | Shape::MetadataList => {
            document_parts(META_API_VERSION, apimachinery::partial::KIND, res.metadata_protobuf(o, at)?)
        }
        Shape::Table { .. } => return None,
    })
}

/// A list page in `shape`, as parts made as they are written (the objects'
/// messages) or first (metadata-only messages, which may be made afresh).
pub fn page(res: &CachedResource, page: Page, shape: Shape) -> Option<Parts> {
    if let Shape::Table { .. } = shape {
        return None;
    }
    let meta = list_meta(&page.meta, shape);
    if let Shape::Metadata | Shape::MetadataList = shape {
        let items = page.items.iter().map(|o| res.metadata_protobuf(o, None)).collect::<Option<Vec<_>>>()?;
        return Some(Box::new(list_parts(META_API_VERSION, apimachinery::partial::LIST_KIND, &meta, items).into_iter()));
    }
    // Every item's message is made (and kept with its object) before the
    // head, which carries their lengths; the items then share them as they
    // are written. Read back by the schema's name, not through `res`: a
    // later object without an encoding turns the resource's protobuf off,
    // but never these ones'.
    let message = res.protobuf_message()?.to_string();
    let lens = page.items.iter().map(|o| Some(res.protobuf_of(o, None)?.len())).collect::<Option<Vec<_>>>()?;
    let head = list_head(&res.info().api_version(), &format!("{}List", res.info().kind), &meta, lens);
    let items = page.items.into_iter().flat_map(move |o| list_item(vec![o.protobuf(&message).cloned().unwrap_or_default()]));
    Some(Box::new(std::iter::once(head).chain(items).chain(list_tail())))
}

/// A page's `ListMeta`; a metadata-only list carries no `shardInfo`.
fn list_meta(meta: &ListMeta, shape: Shape) -> Vec<u8> {
    match shape {
        Shape::Objects | Shape::Table { .. } => protobuf::list_meta(meta),
        Shape::Metadata | Shape::MetadataList => protobuf::list_meta(&meta.unsharded()),
    }
}

/// A watch frame carrying `document`.
pub fn frame(typ: EventType, document: &[Bytes]) -> Bytes {
    Bytes::from(protobuf::watch_frame(typ.as_str(), document))
}

/// A BOOKMARK frame at `rv`: a zero-valued object (or `PartialObjectMetadata`) with only the revision and, when it ends the initial events, the annotation.
pub fn bookmark(res: &CachedResource, rv: u64, initial_events_end: bool, shape: Shape) -> Option<Bytes> {
    let document = match shape {
        Shape::Objects => {
            let object = apimachinery::watch::bookmark_object(res.info(), rv, initial_events_end);
            let message = protobuf::encode(res.protobuf_message()?, &object).ok()?;
            document_parts(&res.info().api_version(), &res.info().kind, vec![Bytes::from(message)])
        }
        Shape::Metadata | Shape::MetadataList => {
            let metadata = apimachinery::watch::bookmark_metadata(rv, initial_events_end);
            let mut message = Vec::new();
            protobuf::wire::len_field(&mut message, 1, &protobuf::encode(crate::cache::OBJECT_META, metadata.as_bytes()).ok()?);
            document_parts(META_API_VERSION, apimachinery::partial::KIND, vec![Bytes::from(message)])
        }
        Shape::Table { .. } => return None,
    };
    Some(frame(EventType::Bookmark, &document))
}

/// The `Status` document of `e`.
pub fn status(e: &ApiError) -> Bytes {
    // A Status always has an encoding; the JSON body is the fallback should the schema ever lack a field.
    protobuf::status(&e.body()).map(Bytes::from).unwrap_or_else(|_| Bytes::from(e.body()))
}

/// The ERROR frame carrying `e`.
pub fn error_frame(e: &ApiError) -> Bytes {
    frame(EventType::Error, &[status(e)])
}

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
use apimachinery::protobuf::{self, document_parts, list_parts};
use apimachinery::status::ApiError;
use apimachinery::watch::EventType;
use bytes::Bytes;

use super::form::Form;
use super::list::Page;
use crate::cache::CachedResource;
use crate::store::CachedObject;

const META_API_VERSION: &str = "meta.k8s.io/v1";

/// `o` as a lone document in `form`, with `metadata.resourceVersion` set to `at` when given.
pub fn object(res: &CachedResource, o: &CachedObject, form: Form, at: Option<u64>) -> Option<Vec<Bytes>> {
    Some(match form {
        Form::Objects => document_parts(&res.info.api_version(), &res.info.kind, vec![res.protobuf_of(o, at)?]),
        Form::Metadata | Form::MetadataList => document_parts(META_API_VERSION, apimachinery::partial::KIND, res.metadata_protobuf(o, at)?),
    })
}

/// A list page in `form`.
pub fn page(res: &CachedResource, page: &Page, form: Form) -> Option<Vec<Bytes>> {
    let items = page
        .items
        .iter()
        .map(|o| match form {
            Form::Objects => Some(vec![res.protobuf_of(o, None)?]),
            Form::Metadata | Form::MetadataList => res.metadata_protobuf(o, None),
        })
        .collect::<Option<Vec<_>>>()?;
    let meta = list_meta(&page.meta);
    Some(match form {
        Form::Objects => list_parts(&res.info.api_version(), &format!("{}List", res.info.kind), &meta, items),
        Form::Metadata | Form::MetadataList => list_parts(META_API_VERSION, apimachinery::partial::LIST_KIND, &meta, items),
    })
}

fn list_meta(meta: &ListMeta) -> Vec<u8> {
    protobuf::list_meta(meta.resource_version, meta.continue_token.as_deref(), meta.remaining_item_count)
}

/// A watch frame carrying `document`.
pub fn frame(typ: EventType, document: &[Bytes]) -> Bytes {
    Bytes::from(protobuf::watch_frame(typ.as_str(), document))
}

/// A BOOKMARK frame at `rv`: a zero-valued object (or `PartialObjectMetadata`) with only the revision and, when it ends the initial events, the annotation.
pub fn bookmark(res: &CachedResource, rv: u64, initial_events_end: bool, form: Form) -> Option<Bytes> {
    let document = match form {
        Form::Objects => {
            let object = apimachinery::watch::bookmark_object(&res.info, rv, initial_events_end);
            let message = protobuf::encode(res.protobuf_message()?, &object).ok()?;
            document_parts(&res.info.api_version(), &res.info.kind, vec![Bytes::from(message)])
        }
        Form::Metadata | Form::MetadataList => {
            let metadata = apimachinery::watch::bookmark_metadata(rv, initial_events_end);
            let mut message = Vec::new();
            protobuf::wire::len_field(&mut message, 1, &protobuf::encode(crate::cache::OBJECT_META, metadata.as_bytes()).ok()?);
            document_parts(META_API_VERSION, apimachinery::partial::KIND, vec![Bytes::from(message)])
        }
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

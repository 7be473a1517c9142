//! Metadata-only answers (`as=PartialObjectMetadata` or
//! `as=PartialObjectMetadataList`, `g=meta.k8s.io`, `v=v1`), as garbage
//! collectors, quota and metadata informers read objects.
//!
//! Invariants: an object becomes
//! `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":…}`
//! where `metadata` is the object's own `metadata` bytes, untouched
//! (managedFields included); a list becomes a `PartialObjectMetadataList`
//! of those in the [`Envelope::Metadata`] envelope. A GET must ask for the
//! single form and a list for the `List` form; the other is the
//! apiserver's 406 ([`wrong_form`]).

use bytes::Bytes;

use crate::list::{Envelope, ListMeta, json_list_parts};
use crate::resource::{Resource, builtin};
use crate::status::ApiError;
use crate::watch::{EventType, bookmark_metadata, json_frame};

/// The group and version of the metadata-only kinds.
pub const API_VERSION: &str = "meta.k8s.io/v1";
/// One object's form.
pub const KIND: &str = "PartialObjectMetadata";
/// A list's form.
pub const LIST_KIND: &str = "PartialObjectMetadataList";

/// A version of `meta.k8s.io`, whose kinds (Table, PartialObjectMetadata)
/// the apiserver writes in the version asked for: `v1`, or `v1beta1` as
/// older clients ask (the same types, another `apiVersion`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MetaVersion {
    /// `meta.k8s.io/v1`.
    #[default]
    V1,
    /// `meta.k8s.io/v1beta1`.
    V1beta1,
}

impl MetaVersion {
    /// The version named `v` (`v1`, `v1beta1`), if it is one.
    pub fn parse(v: &str) -> Option<MetaVersion> {
        match v {
            "v1" => Some(MetaVersion::V1),
            "v1beta1" => Some(MetaVersion::V1beta1),
            _ => None,
        }
    }

    /// Its `apiVersion`.
    pub fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => API_VERSION,
            MetaVersion::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

const HEAD: &[u8] = br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":"#;
const HEAD_V1BETA1: &[u8] = br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1beta1","metadata":"#;

/// One object's metadata-only form, as parts sharing its `metadata` bytes
/// (given as parts that concatenate to them).
pub fn object(metadata: impl IntoIterator<Item = Bytes>) -> Vec<Bytes> {
    object_in(MetaVersion::V1, metadata)
}

/// [`object`] in `version`.
pub fn object_in(version: MetaVersion, metadata: impl IntoIterator<Item = Bytes>) -> Vec<Bytes> {
    let head = match version {
        MetaVersion::V1 => HEAD,
        MetaVersion::V1beta1 => HEAD_V1BETA1,
    };
    std::iter::once(Bytes::from_static(head)).chain(metadata).chain([Bytes::from_static(b"}")]).collect()
}

/// A `PartialObjectMetadataList` of the objects whose `metadata` bytes are
/// given, in order, as parts made as they are reached (see [`json_list_parts`]),
/// in the [`Envelope::Metadata`] envelope.
pub fn list<T: IntoIterator<Item = Bytes>>(meta: &ListMeta, metadata: T) -> impl Iterator<Item = Bytes> + use<T> {
    json_list_parts(LIST_KIND, API_VERSION, meta, Envelope::Metadata, metadata.into_iter().map(|m| object([m])))
}

/// A metadata-only watch's BOOKMARK frame at `rv`.
pub fn json_bookmark(rv: u64, initial_events_end: bool) -> Bytes {
    let parts = object([Bytes::from(bookmark_metadata(rv, initial_events_end))]);
    json_frame(EventType::Bookmark, &parts.iter().map(|b| &b[..]).collect::<Vec<_>>())
}

/// The apiserver's 406 when a request asks for the form that does not fit
/// it (`asked`, for a list when `list`, else for one object of `res`).
pub fn wrong_form(asked: &str, res: &Resource, list: bool) -> ApiError {
    // The Go type the apiserver names: its internal API package, or unstructured for custom resources.
    let go_type = match builtin(&res.group, &res.version, &res.plural) {
        Some(_) => {
            // events.k8s.io's Events are the core group's internal Event.
            let package = match res.group.as_str() {
                "" | "events.k8s.io" => "core",
                group => group.split('.').next().unwrap_or(group),
            };
            format!("*{package}.{}{}", res.kind, if list { "List" } else { "" })
        }
        None => format!("*unstructured.Unstructured{}", if list { "List" } else { "" }),
    };
    let message = if list {
        format!("you requested {asked}, but the requested object is a list ({go_type})")
    } else {
        format!("you requested {asked}, but the requested object is not a list ({go_type})")
    };
    ApiError::not_acceptable_because(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(path: &str) -> Vec<u8> {
        std::fs::read(format!("{}/../tests/reference/apiserver-1.36/encodings/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn the_captured_metadata_get_wraps_the_objects_own_metadata() {
        let full = capture("pods/get.json");
        let parsed = crate::meta::parse(&full, &[]).unwrap();
        let got: Vec<u8> = object([Bytes::copy_from_slice(parsed.metadata.as_bytes())]).concat();
        assert_eq!([&got[..], b"\n"].concat(), capture("pods/get-metadata.json"));
    }

    #[test]
    fn the_captured_metadata_list_wraps_every_item() {
        let full = crate::list::ListPage::parse(&Bytes::from(capture("pods/list.json"))).unwrap();
        let meta = ListMeta { resource_version: full.resource_version, continue_token: None, remaining_item_count: None, shard_info: None };
        let metadata = full.items.iter().map(|item| Bytes::copy_from_slice(crate::meta::parse(item, &[]).unwrap().metadata.as_bytes()));
        let got = list(&meta, metadata).collect::<Vec<_>>().concat();
        assert_eq!([&got[..], b"\n"].concat(), capture("pods/list-metadata.json"));
    }

    #[test]
    fn a_bookmark_carries_only_the_revision_and_the_initial_events_end() {
        assert_eq!(
            &json_bookmark(9, true)[..],
            &b"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"9\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n"[..]
        );
    }

    #[test]
    fn the_wrong_form_is_refused_in_the_apiservers_words() {
        let pods = Resource::new("", "v1", "pods", "Pod", true);
        assert!(wrong_form(KIND, &pods, true).message.ends_with("is a list (*core.PodList)"));
        assert!(wrong_form(LIST_KIND, &pods, false).message.ends_with("is not a list (*core.Pod)"));
        let deployments = Resource::new("apps", "v1", "deployments", "Deployment", true);
        assert!(wrong_form(KIND, &deployments, true).message.ends_with("(*apps.DeploymentList)"));
    }
}

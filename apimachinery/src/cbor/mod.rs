//! CBOR (`application/cbor`, watch streams `application/cbor-seq`), served
//! by kube-apiserver behind its `CBORServingAndStorage` feature gate:
//! objects, lists, metadata-only forms, watch events and `Status` errors
//! encoded from the objects' JSON ([`Object::encode`], as [`Schema`] says).
//!
//! Invariants: every map is written in the one canonical order, the
//! apiserver's deterministic encoder's (entries sorted by their encoded
//! keys), so an answer of the apiserver, every map re-sorted so, equals
//! ours byte for byte (the tests check exactly that); an [`Object`] is
//! encoded once and shared by every document, list and event that carries
//! it; a JSON object the CBOR encoding cannot express exactly is an
//! [`EncodeError`], never a guess.
//!
//! The wire format (read in `k8s.io/apimachinery/pkg/runtime/serializer/cbor`
//! of Kubernetes 1.36 and checked against a real apiserver 1.36.2, captures
//! in `tests/reference/cbor/`): a document is the self-described CBOR tag
//! 55799 (`d9 d9 f7`) and one map; a list is a map of `kind`, `apiVersion`,
//! `metadata` and `items` (an array of the items' maps, without kind and
//! apiVersion for built-in kinds); a watch stream is a CBOR sequence of
//! such documents, each a `WatchEvent` map `{type, object}` whose `object`
//! is itself a full document (tag included). Tables are not served in CBOR
//! (406). Every text is a CBOR *byte* string.
//!
//! Order: the apiserver writes its answers with the *nondeterministic*
//! encoder (`runtime.UseNondeterministicEncoding`, fxamacker's
//! `SortFastShuffle`): a struct's fields start at a random one of them and
//! wrap around, a Go map's entries come in Go's random map order — six GETs
//! of one object gave six different byte strings. No byte-exact copy of an
//! answer exists; what is exact is its content. kache writes the canonical
//! form, the deterministic encoder's (`modes.Encode`, what the apiserver
//! stores in etcd).

#[cfg(test)]
mod canonical;
mod encode;
#[cfg(test)]
mod tests;
pub mod wire;

use bytes::Bytes;

use crate::list::{Envelope, ListMeta};

pub use encode::{EncodeError, Schema};

/// The CBOR media type.
pub const MEDIA_TYPE: &str = "application/cbor";

/// The media type of a CBOR watch stream (asked for as [`MEDIA_TYPE`]).
pub const SEQ_MEDIA_TYPE: &str = "application/cbor-seq";

/// The self-described CBOR tag (55799) that starts every document.
pub const SELF_DESCRIBED: &[u8] = &[0xd9, 0xd9, 0xf7];

/// An object's CBOR map: its entries (encoded key, encoded value), in
/// canonical order, in one shared buffer.
#[derive(Debug, Clone)]
pub struct Object {
    entries: Bytes,
    starts: Vec<u32>,
}

impl Object {
    /// The object whose JSON is `json`, written as `schema` says.
    pub fn encode(json: &[u8], schema: Schema) -> Result<Object, EncodeError> {
        let (entries, starts) = encode::entries(json, schema)?;
        Ok(Object { entries: Bytes::from(entries), starts })
    }

    /// The bytes this object holds.
    pub fn memory(&self) -> usize {
        self.entries.len() + self.starts.len() * 4
    }

    /// The object's map, as it is (a list item), in parts sharing its bytes.
    pub fn map(&self) -> Vec<Bytes> {
        vec![map_head(self.starts.len()), self.entries.clone()]
    }

    /// The object's map with `kind` and `apiVersion` set (a GET's or a
    /// watch event's object), in parts sharing its bytes.
    pub fn typed_map(&self, api_version: &str, kind: &str) -> Vec<Bytes> {
        // An entry starts with its key, and no encoded key is a prefix of
        // another (the head holds the length): an entry is found by its
        // key's prefix, and entries sort by their bytes.
        let keys = [string("kind"), string("apiVersion")];
        let mut entries: Vec<Bytes> =
            (0..self.starts.len()).map(|i| self.entry(i)).filter(|e| !keys.iter().any(|k| e.starts_with(k))).collect();
        entries.extend([entry("kind", &string(kind)), entry("apiVersion", &string(api_version))].map(Bytes::from));
        entries.sort_unstable();
        std::iter::once(map_head(entries.len())).chain(entries).collect()
    }

    /// Entry `i`: its key and value.
    fn entry(&self, i: usize) -> Bytes {
        let start = self.starts[i] as usize;
        let end = self.starts.get(i + 1).map_or(self.entries.len(), |&e| e as usize);
        self.entries.slice(start..end)
    }
}

/// A map head for `n` entries.
fn map_head(n: usize) -> Bytes {
    let mut out = Vec::with_capacity(9);
    wire::head(&mut out, wire::MAP, n as u64);
    Bytes::from(out)
}

/// A string's encoding.
fn string(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    wire::string(&mut out, s.as_bytes());
    out
}

/// One encoded entry.
fn entry(key: &str, value: &[u8]) -> Vec<u8> {
    let mut out = string(key);
    out.extend_from_slice(value);
    out
}

/// A map of the given entries (key, value in parts), in canonical order.
fn map_of(mut entries: Vec<(&str, Vec<Bytes>)>) -> Vec<Bytes> {
    entries.sort_by_cached_key(|(k, _)| string(k));
    let mut parts = vec![map_head(entries.len())];
    for (k, value) in entries {
        parts.push(Bytes::from(string(k)));
        parts.extend(value);
    }
    parts
}

/// `parts` as a document: the self-described tag, then the parts.
pub fn document(parts: Vec<Bytes>) -> Vec<Bytes> {
    std::iter::once(Bytes::from_static(SELF_DESCRIBED)).chain(parts).collect()
}

/// A `PartialObjectMetadata` map (`meta.k8s.io/v1`) of an object's
/// encoded `metadata`.
pub fn partial_object(metadata: Bytes) -> Vec<Bytes> {
    map_of(vec![
        ("kind", vec![Bytes::from(string("PartialObjectMetadata"))]),
        ("apiVersion", vec![Bytes::from(string("meta.k8s.io/v1"))]),
        ("metadata", vec![metadata]),
    ])
}

/// A list document in parts, its `metadata` and its items written as
/// `envelope` says (as in JSON: [`crate::list::json_list_parts`]), each
/// item the parts of one item's map (shared, not copied).
pub fn list(api_version: &str, kind: &str, envelope: Envelope, meta: &ListMeta, items: Vec<Vec<Bytes>>) -> Result<Vec<Bytes>, EncodeError> {
    let meta = Object::encode(envelope.metadata_json(meta).as_bytes(), Schema::Plain)?;
    let mut array = Vec::with_capacity(9);
    if items.is_empty() && envelope.empty_items_are_null() {
        array.push(wire::NULL);
    } else {
        wire::head(&mut array, wire::ARRAY, items.len() as u64);
    }
    let items = std::iter::once(Bytes::from(array)).chain(items.into_iter().flatten()).collect();
    Ok(document(map_of(vec![
        ("kind", vec![Bytes::from(string(kind))]),
        ("apiVersion", vec![Bytes::from(string(api_version))]),
        ("metadata", meta.map()),
        ("items", items),
    ])))
}

/// One watch event of a `application/cbor-seq` stream: `event_type`
/// (`ADDED`, `BOOKMARK`, …) and the object's map, in parts.
pub fn watch_event(event_type: &str, object: Vec<Bytes>) -> Vec<Bytes> {
    document(map_of(vec![("type", vec![Bytes::from(string(event_type))]), ("object", document(object))]))
}

/// The document of a `metav1.Status` (or any plain object) given as JSON.
pub fn plain_document(json: &[u8]) -> Result<Vec<u8>, EncodeError> {
    Ok(document(Object::encode(json, Schema::Plain)?.map()).concat())
}

//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`): objects,
//! lists and watch frames encoded from the objects' JSON byte for byte as
//! the apiserver writes them ([`encode`], over the [`schema`] of the
//! built-in kinds), and the protobuf request bodies kubectl sends ([`decode_json`]).
//!
//! The wire shapes (measured on a real apiserver 1.36): a document is
//! `k8s\0` followed by a `runtime.Unknown` {typeMeta {apiVersion, kind},
//! raw, contentEncoding, contentType} whose `raw` is the message; a list's
//! items are the objects' messages without envelope; a watch frame is a
//! 4-byte big-endian length and a `WatchEvent` {type, object {raw}} whose
//! `raw` is the object's full document.
//!
//! Guarantees: [`message_name`] knows exactly the kinds [`schema`] holds;
//! encoding a JSON object the schema cannot express is an error, never a
//! guess.

mod body;
mod encode;
pub mod schema;
pub mod wire;

use bytes::Bytes;

use crate::list::ListMeta;

pub use body::{DecodeError, decode_json};
pub use encode::{EncodeError, encode};

/// The protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// What starts every Kubernetes protobuf document.
pub const MAGIC: &[u8] = b"k8s\0";

/// The schema name of a built-in kind's message (`v1`, `Pod` →
/// `api.core.v1.Pod`; `apiregistration.k8s.io/v1`, `APIService` →
/// `kube_aggregator.pkg.apis.apiregistration.v1.APIService`), if the schema
/// has it. The packages are those of the `.proto` files (`k8s.io.` dropped);
/// the kind is compared without case, as prost renamed some messages.
pub fn message_name(api_version: &str, kind: &str) -> Option<String> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let package = match group {
        "" => "api.core".to_string(),
        "apiextensions.k8s.io" => "apiextensions_apiserver.pkg.apis.apiextensions".to_string(),
        "apiregistration.k8s.io" => "kube_aggregator.pkg.apis.apiregistration".to_string(),
        "rbac.authorization.k8s.io" => "api.rbac".to_string(),
        "flowcontrol.apiserver.k8s.io" => "api.flowcontrol".to_string(),
        // apps, autoscaling, batch, policy
        _ if !group.contains('.') => format!("api.{group}"),
        _ => format!("api.{}", group.strip_suffix(".k8s.io")?),
    };
    let s = schema::schema();
    s.message_ignoring_case(&format!("{package}.{version}.{kind}")).map(|m| s.messages[m].name.to_string())
}

/// The `k8s\0` document of `raw`, a message of kind `kind`.
pub fn document(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    document_parts(api_version, kind, vec![Bytes::copy_from_slice(raw)]).concat()
}

/// The `k8s\0` document of the message `raw` (parts that concatenate to
/// it), as parts that concatenate to the document, sharing `raw`'s bytes.
pub fn document_parts(api_version: &str, kind: &str, raw: Vec<Bytes>) -> Vec<Bytes> {
    let raw_len: usize = raw.iter().map(Bytes::len).sum();
    let mut head = Vec::with_capacity(api_version.len() + kind.len() + 24);
    head.extend_from_slice(MAGIC);
    wire::len_field(&mut head, 1, &type_meta(api_version, kind));
    wire::key(&mut head, 2, wire::LEN);
    wire::varint(&mut head, raw_len as u64);
    let mut parts = Vec::with_capacity(raw.len() + 2);
    parts.push(Bytes::from(head));
    parts.extend(raw);
    parts.push(Bytes::from_static(EMPTY_CONTENT_FIELDS));
    parts
}

/// `Unknown.contentEncoding` and `contentType`, written empty.
const EMPTY_CONTENT_FIELDS: &[u8] = &[0x1a, 0x00, 0x22, 0x00];

fn type_meta(api_version: &str, kind: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(api_version.len() + kind.len() + 4);
    wire::len_field(&mut out, 1, api_version.as_bytes());
    wire::len_field(&mut out, 2, kind.as_bytes());
    out
}

/// The protobuf document of a `metav1.Status` given as JSON.
pub fn status(json: &[u8]) -> Result<Vec<u8>, EncodeError> {
    Ok(document("v1", "Status", &encode("apimachinery.pkg.apis.meta.v1.Status", json)?))
}

/// A `PartialObjectMetadata` message from an object's message (whose
/// `metadata` is field 1), as parts sharing the object's bytes; `None` if
/// the message does not start with its metadata.
pub fn partial_object(object: &Bytes) -> Option<Vec<Bytes>> {
    let meta = wire::leading_field(object, 1)?;
    let mut head = Vec::with_capacity(6);
    wire::key(&mut head, 1, wire::LEN);
    wire::varint(&mut head, meta.len() as u64);
    Some(vec![Bytes::from(head), object.slice_ref(meta)])
}

/// A list document in parts: its head, then each item's key and length
/// followed by the item's own parts (shared, not copied), then its tail.
/// Each item is the parts that concatenate to one item message.
pub fn list_parts(api_version: &str, kind: &str, list_meta: &[u8], items: Vec<Vec<Bytes>>) -> Vec<Bytes> {
    let lens = items.iter().map(|item| item.iter().map(Bytes::len).sum());
    let head = list_head(api_version, kind, list_meta, lens);
    std::iter::once(head).chain(items.into_iter().flat_map(list_item)).chain(list_tail()).collect()
}

/// A list document's head, for items of lengths `item_lens` (the head
/// carries the length of everything after it). Followed by [`list_item`] of
/// each item, in the same order, then [`list_tail`]: so a list can be
/// written as it is read, one item at a time.
pub fn list_head(api_version: &str, kind: &str, list_meta: &[u8], item_lens: impl IntoIterator<Item = usize>) -> Bytes {
    let field_len = |len: usize| 1 + varint_len(len) + len;
    let raw_len = field_len(list_meta.len()) + item_lens.into_iter().map(field_len).sum::<usize>();
    let mut head = Vec::with_capacity(64 + list_meta.len());
    head.extend_from_slice(MAGIC);
    wire::len_field(&mut head, 1, &type_meta(api_version, kind));
    wire::key(&mut head, 2, wire::LEN);
    wire::varint(&mut head, raw_len as u64);
    wire::len_field(&mut head, 1, list_meta);
    Bytes::from(head)
}

/// One list item: its key and length, then its own parts (shared).
pub fn list_item(parts: Vec<Bytes>) -> impl Iterator<Item = Bytes> {
    let mut key = Vec::with_capacity(6);
    wire::key(&mut key, 2, wire::LEN);
    wire::varint(&mut key, parts.iter().map(Bytes::len).sum::<usize>() as u64);
    std::iter::once(Bytes::from(key)).chain(parts)
}

/// A list document's tail.
pub fn list_tail() -> [Bytes; 1] {
    [Bytes::from_static(EMPTY_CONTENT_FIELDS)]
}

fn varint_len(len: usize) -> usize {
    let mut n = 1;
    let mut v = len >> 7;
    while v > 0 {
        n += 1;
        v >>= 7;
    }
    n
}

/// The encoded `ListMeta` of a page (`shardInfo` is field 5, a `ShardInfo` whose field 1 is the selector).
pub fn list_meta(meta: &ListMeta) -> Vec<u8> {
    let mut out = Vec::new();
    wire::len_field(&mut out, 1, b"");
    wire::len_field(&mut out, 2, meta.resource_version.to_string().as_bytes());
    wire::len_field(&mut out, 3, meta.continue_token.as_deref().unwrap_or("").as_bytes());
    if let Some(n) = meta.remaining_item_count {
        wire::varint_field(&mut out, 4, n);
    }
    if let Some(selector) = &meta.shard_info {
        let mut info = Vec::new();
        wire::len_field(&mut info, 1, selector.as_bytes());
        wire::len_field(&mut out, 5, &info);
    }
    out
}

/// A watch frame: the length prefix and `WatchEvent {type, object {raw}}`
/// around `document` (parts of an object's full `k8s\0` document).
pub fn watch_frame(event_type: &str, document: &[Bytes]) -> Vec<u8> {
    let doc_len: usize = document.iter().map(Bytes::len).sum();
    let object_len = 1 + varint_len(doc_len) + doc_len;
    let event_len = 1 + varint_len(event_type.len()) + event_type.len() + 1 + varint_len(object_len) + object_len;
    let mut out = Vec::with_capacity(event_len + 4);
    out.extend_from_slice(&(event_len as u32).to_be_bytes());
    wire::len_field(&mut out, 1, event_type.as_bytes());
    wire::key(&mut out, 2, wire::LEN);
    wire::varint(&mut out, object_len as u64);
    wire::key(&mut out, 1, wire::LEN);
    wire::varint(&mut out, doc_len as u64);
    for part in document {
        out.extend_from_slice(part);
    }
    out
}

#[cfg(test)]
mod tests;

//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`): objects,
//! lists and watch frames encoded from the objects' JSON byte for byte as
//! the apiserver writes them ([`encode`], over the [`schema`] of the
//! built-in kinds), and the protobuf request bodies kubectl sends ([`body`]).
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

pub use body::{DecodeError, decode_json};
pub use encode::{EncodeError, encode};

/// The protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// What starts every Kubernetes protobuf document.
pub const MAGIC: &[u8] = b"k8s\0";

/// The schema name of a built-in kind's message (`v1`, `Pod` →
/// `api.core.v1.Pod`), if the schema has it.
pub fn message_name(api_version: &str, kind: &str) -> Option<String> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let package = match group {
        "" => "core",
        "apps" | "batch" => group,
        _ => group.strip_suffix(".k8s.io")?,
    };
    let name = format!("api.{package}.{version}.{kind}");
    schema::schema().message(&name).map(|_| name)
}

/// The `k8s\0` document of `raw`, a message of kind `kind`.
pub fn document(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::with_capacity(api_version.len() + kind.len() + 4);
    wire::len_field(&mut type_meta, 1, api_version.as_bytes());
    wire::len_field(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(raw.len() + type_meta.len() + 16);
    out.extend_from_slice(MAGIC);
    wire::len_field(&mut out, 1, &type_meta);
    wire::len_field(&mut out, 2, raw);
    wire::len_field(&mut out, 3, b"");
    wire::len_field(&mut out, 4, b"");
    out
}

/// A list document in parts: its head, then each item's key and length
/// followed by the item's own bytes (shared, not copied), then its tail.
pub fn list_parts(api_version: &str, kind: &str, list_meta: &[u8], items: &[Bytes]) -> Vec<Bytes> {
    let field_len = |len: usize| 1 + varint_len(len) + len;
    let raw_len = field_len(list_meta.len()) + items.iter().map(|i| field_len(i.len())).sum::<usize>();
    let mut type_meta = Vec::new();
    wire::len_field(&mut type_meta, 1, api_version.as_bytes());
    wire::len_field(&mut type_meta, 2, kind.as_bytes());
    let mut head = Vec::with_capacity(64 + list_meta.len());
    head.extend_from_slice(MAGIC);
    wire::len_field(&mut head, 1, &type_meta);
    wire::key(&mut head, 2, wire::LEN);
    wire::varint(&mut head, raw_len as u64);
    wire::len_field(&mut head, 1, list_meta);
    let mut parts = Vec::with_capacity(2 * items.len() + 2);
    parts.push(Bytes::from(head));
    for item in items {
        let mut key = Vec::with_capacity(6);
        wire::key(&mut key, 2, wire::LEN);
        wire::varint(&mut key, item.len() as u64);
        parts.push(Bytes::from(key));
        parts.push(item.clone());
    }
    parts.push(Bytes::from_static(&[0x1a, 0x00, 0x22, 0x00]));
    parts
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

/// The encoded `ListMeta` of a page.
pub fn list_meta(resource_version: u64, continue_token: Option<&str>, remaining_item_count: Option<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    wire::len_field(&mut out, 1, b"");
    wire::len_field(&mut out, 2, resource_version.to_string().as_bytes());
    wire::len_field(&mut out, 3, continue_token.unwrap_or("").as_bytes());
    if let Some(n) = remaining_item_count {
        wire::varint_field(&mut out, 4, n);
    }
    out
}

/// A watch frame: the length prefix and `WatchEvent {type, object {raw}}`
/// around `document`, an object's full `k8s\0` document.
pub fn watch_frame(event_type: &str, document: &[u8]) -> Vec<u8> {
    let mut object = Vec::with_capacity(document.len() + 6);
    wire::len_field(&mut object, 1, document);
    let mut event = Vec::with_capacity(object.len() + event_type.len() + 8);
    wire::len_field(&mut event, 1, event_type.as_bytes());
    wire::len_field(&mut event, 2, &object);
    let mut out = Vec::with_capacity(event.len() + 4);
    out.extend_from_slice(&(event.len() as u32).to_be_bytes());
    out.extend_from_slice(&event);
    out
}

#[cfg(test)]
mod tests;

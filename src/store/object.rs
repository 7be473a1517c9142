//! [`CachedObject`]: one object revision exactly as upstream encoded it,
//! plus the few parsed parts that lists, selectors and watches need.
//!
//! Invariants: `bytes` is never modified or re-encoded (ARCHITECTURE.md, invariant 2);
//! every parsed string is a span of `bytes` (no copy) unless JSON escapes
//! forced unescaping, in which case it lives in the small `extra` buffer.
//! The key is etcd's order key: `namespace/name`, or `name` when the object
//! has no namespace.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use apimachinery::meta;
use bytes::Bytes;

use super::StoreError;

/// A string inside an object: a range of its bytes, or of its `extra` buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    /// Start; the top bit selects the `extra` buffer.
    start: u32,
    len: u32,
}

const EXTRA: u32 = 1 << 31;

/// One revision of one object.
#[derive(Debug)]
pub struct CachedObject {
    bytes: Bytes,
    extra: Box<str>,
    key: Arc<str>,
    namespace_len: u32,
    rv: u64,
    /// `metadata.resourceVersion`'s text (a watch re-stamps it on a selector transition).
    rv_text: Span,
    uid: Span,
    metadata: Span,
    labels: Box<[(Span, Span)]>,
    fields: Box<[Span]>,
    /// Its protobuf message, encoded on first use (`None`: it has none).
    protobuf: OnceLock<Option<Bytes>>,
    /// Its CBOR map, encoded on first use (`None`: it has no exact one).
    cbor: OnceLock<Option<apimachinery::cbor::Object>>,
}

/// Collects spans while parsing.
struct Builder<'b> {
    bytes: &'b [u8],
    extra: String,
}

impl Builder<'_> {
    /// The span of `s`: a string inside the bytes is pointed at, any other is appended to `extra`.
    fn span(&mut self, s: &str) -> Span {
        let len = s.len() as u32;
        let base = self.bytes.as_ptr() as usize;
        let at = s.as_ptr() as usize;
        if at >= base && at + s.len() <= base + self.bytes.len() {
            return Span { start: (at - base) as u32, len };
        }
        let start = self.extra.len() as u32 | EXTRA;
        self.extra.push_str(s);
        Span { start, len }
    }
}

impl CachedObject {
    /// Parses the parts kache needs from `bytes` (a JSON object with
    /// `metadata`); `fields` are the selectable field paths (e.g.
    /// `spec.nodeName`) whose values [`CachedObject::field`] returns by index.
    pub fn parse(bytes: Bytes, fields: &[&str]) -> Result<CachedObject, StoreError> {
        if bytes.len() >= EXTRA as usize {
            return Err(StoreError::BadObject("an object over 2 GiB".into()));
        }
        let m = meta::parse(&bytes, fields).map_err(|e| StoreError::BadObject(e.to_string()))?;
        let mut b = Builder { bytes: &bytes, extra: String::new() };
        let metadata = b.span(m.metadata);
        let rv_text = b.span(&m.resource_version_text);
        let uid = b.span(&m.uid);
        let labels = m.labels.iter().map(|(k, v)| (b.span(k), b.span(v))).collect();
        let fields = m.fields.iter().map(|v| v.as_deref().map(|v| b.span(v)).unwrap_or_default()).collect();
        let key: Arc<str> = if m.namespace.is_empty() { m.name.as_ref().into() } else { format!("{}/{}", m.namespace, m.name).into() };
        let namespace_len = m.namespace.len() as u32;
        let rv = m.resource_version;
        let extra = b.extra.into_boxed_str();
        Ok(CachedObject {
            bytes,
            extra,
            key,
            namespace_len,
            rv,
            rv_text,
            uid,
            metadata,
            labels,
            fields,
            protobuf: OnceLock::new(),
            cbor: OnceLock::new(),
        })
    }

    fn text(&self, s: Span) -> &str {
        std::str::from_utf8(self.raw(s)).unwrap_or_default()
    }

    /// A span's bytes: text the parser read, so always UTF-8 ([`CachedObject::text`] checks).
    fn raw(&self, s: Span) -> &[u8] {
        let (buf, start) = match s.start & EXTRA {
            0 => (&self.bytes[..], s.start as usize),
            _ => (self.extra.as_bytes(), (s.start & !EXTRA) as usize),
        };
        buf.get(start..start + s.len as usize).unwrap_or_default()
    }

    /// The bytes exactly as upstream sent them.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The etcd-order key: `namespace/name` or `name`.
    pub fn key(&self) -> &Arc<str> {
        &self.key
    }

    /// The namespace; empty for cluster-scoped objects.
    pub fn namespace(&self) -> &str {
        &self.key[..self.namespace_len as usize]
    }

    /// The name.
    pub fn name(&self) -> &str {
        if self.namespace_len == 0 { &self.key } else { &self.key[self.namespace_len as usize + 1..] }
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// `metadata.uid`, empty if unset.
    pub fn uid(&self) -> &str {
        self.text(self.uid)
    }

    /// The labels, in key order.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.labels.iter().map(|(k, v)| (self.text(*k), self.text(*v)))
    }

    /// The value of a label.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The value of the `i`-th selectable field given to [`CachedObject::parse`]
    /// (a string's text, a number's or boolean's literal; empty when absent).
    pub fn field(&self, i: usize) -> &str {
        self.fields.get(i).map_or("", |s| self.text(*s))
    }

    /// [`CachedObject::field`]'s bytes, not checked again for UTF-8: what a
    /// selector compares for every event a watch replays.
    pub(crate) fn field_bytes(&self, i: usize) -> &[u8] {
        self.fields.get(i).map_or(b"", |s| self.raw(*s))
    }

    /// Where `metadata`'s JSON value lies in [`CachedObject::bytes`].
    pub(crate) fn metadata_range(&self) -> Range<usize> {
        self.metadata.start as usize..(self.metadata.start + self.metadata.len) as usize
    }

    /// The object's bytes with `metadata.resourceVersion` set to `rv`, as
    /// parts that concatenate to it (what a DELETED event carries when the
    /// object stops matching a watch's selectors: the previous object at the
    /// event's revision).
    pub(crate) fn at_revision(&self, rv: u64) -> [Bytes; 3] {
        // A revision's digits need no escapes, so the span lies in `bytes`.
        let (start, end) = (self.rv_text.start as usize, (self.rv_text.start + self.rv_text.len) as usize);
        [self.bytes.slice(..start), Bytes::from(rv.to_string()), self.bytes.slice(end..)]
    }

    /// Its `metadata` bytes, as parts that concatenate to them, with
    /// `metadata.resourceVersion` set to `rv` when given (see [`CachedObject::at_revision`]).
    pub(crate) fn metadata_at(&self, rv: Option<u64>) -> Vec<Bytes> {
        let m = self.metadata_range();
        match rv {
            None => vec![self.bytes.slice(m)],
            Some(rv) => {
                let (start, end) = (self.rv_text.start as usize, (self.rv_text.start + self.rv_text.len) as usize);
                vec![self.bytes.slice(m.start..start), Bytes::from(rv.to_string()), self.bytes.slice(end..m.end)]
            }
        }
    }

    /// Its protobuf message (schema name `message`), encoded once from its
    /// JSON on first use and kept with it; `None` when the schema cannot
    /// express it.
    pub fn protobuf(&self, message: &str) -> Option<&Bytes> {
        self.protobuf
            .get_or_init(|| {
                let mut message = apimachinery::protobuf::encode(message, &self.bytes).ok()?;
                // Kept as long as the revision: no spare capacity.
                message.shrink_to_fit();
                Some(Bytes::from(message))
            })
            .as_ref()
    }

    /// Its protobuf message with `metadata.resourceVersion` set to `rv`
    /// (see [`CachedObject::at_revision`]), encoded afresh.
    pub(crate) fn protobuf_at(&self, message: &str, rv: u64) -> Option<Bytes> {
        apimachinery::protobuf::encode(message, &self.at_revision(rv).concat()).ok().map(Bytes::from)
    }

    /// Its CBOR map (written from a Go value of `shape`), encoded once from
    /// its JSON on first use and kept with it; `None` when it has no exact
    /// CBOR encoding (see `apimachinery::cbor`).
    pub fn cbor(&self, shape: apimachinery::cbor::Schema) -> Option<&apimachinery::cbor::Object> {
        self.cbor.get_or_init(|| apimachinery::cbor::Object::encode(&self.bytes, shape).ok()).as_ref()
    }

    /// Its CBOR map with `metadata.resourceVersion` set to `rv`, encoded afresh.
    pub(crate) fn cbor_at(&self, shape: apimachinery::cbor::Schema, rv: u64) -> Option<apimachinery::cbor::Object> {
        apimachinery::cbor::Object::encode(&self.at_revision(rv).concat(), shape).ok()
    }

    /// Heap and inline bytes this object costs beyond its `bytes`.
    pub fn overhead_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.protobuf.get().and_then(Option::as_ref).map_or(0, Bytes::len)
            + self.cbor.get().and_then(Option::as_ref).map_or(0, apimachinery::cbor::Object::memory)
            + self.extra.len()
            + self.key.len()
            + 2 * std::mem::size_of::<usize>() // the key's Arc counts
            + self.labels.len() * std::mem::size_of::<(Span, Span)>()
            + self.fields.len() * std::mem::size_of::<Span>()
    }
}

/// Two revisions are the same when upstream sent the same bytes.
impl PartialEq for CachedObject {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for CachedObject {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_spans_of_the_bytes() {
        let json = r#"{"kind":"Pod","metadata":{"name":"web-1","namespace":"prod","uid":"u-1","resourceVersion":"42","labels":{"b":"2","a":"x\"y"}},"spec":{"nodeName":"n1","hostNetwork":true},"status":{"phase":"Running"}}"#;
        let o =
            CachedObject::parse(Bytes::from(json), &["spec.nodeName", "status.phase", "spec.hostNetwork", "spec.missing", "metadata.name"])
                .unwrap();
        assert_eq!((&*o.key().clone(), o.namespace(), o.name(), o.uid(), o.resource_version()), ("prod/web-1", "prod", "web-1", "u-1", 42));
        assert_eq!(o.labels().collect::<Vec<_>>(), [("a", "x\"y"), ("b", "2")]);
        assert_eq!(o.label("b"), Some("2"));
        assert_eq!((o.field(0), o.field(1), o.field(2), o.field(3), o.field(4)), ("n1", "Running", "true", "", "web-1"));
        assert!(json[o.metadata_range()].starts_with(r#"{"name":"web-1""#) && json[o.metadata_range()].ends_with(r#"}}"#));
        let restamped = o.at_revision(1234).concat();
        assert_eq!(String::from_utf8(restamped).unwrap(), json.replace(r#""resourceVersion":"42""#, r#""resourceVersion":"1234""#));
        assert_eq!(&*o.extra, "x\"y", "only the escaped value was copied");
    }

    #[test]
    fn cluster_scoped_and_bad_objects() {
        let o = CachedObject::parse(Bytes::from_static(br#"{"metadata":{"name":"n1","resourceVersion":"7"}}"#), &[]).unwrap();
        assert_eq!((o.namespace(), o.name(), &*o.key().clone()), ("", "n1", "n1"));
        for bad in
            [&b"{}"[..], b"[]", b"{\"metadata\":{\"name\":\"a\"}}", b"{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"x\"}}", b"nope"]
        {
            assert!(CachedObject::parse(Bytes::copy_from_slice(bad), &[]).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}

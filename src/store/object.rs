//! [`CachedObject`]: one object revision exactly as upstream encoded it,
//! plus the few parsed parts that lists, selectors and watches need.
//!
//! Invariants: `bytes` is never modified or re-encoded (DESIGN invariant 2);
//! every parsed string is a span of `bytes` (no copy) unless JSON escapes
//! forced unescaping, in which case it lives in the small `extra` buffer.
//! The key is etcd's order key: `namespace/name`, or `name` when the object
//! has no namespace.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;

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
    uid: Span,
    metadata: Span,
    labels: Box<[(Span, Span)]>,
    fields: Box<[Span]>,
}

/// The top level of an object: each member unparsed.
type Top<'a> = BTreeMap<Cow<'a, str>, &'a RawValue>;

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(borrow, default)]
    namespace: Option<Text<'a>>,
    #[serde(rename = "resourceVersion", borrow)]
    resource_version: Text<'a>,
    #[serde(borrow, default)]
    uid: Option<Text<'a>>,
    #[serde(borrow, default)]
    labels: Option<BTreeMap<Text<'a>, Text<'a>>>,
}

/// A JSON string, borrowed from the input unless it had escapes (serde's
/// own `Cow<str>` always copies when nested in an `Option` or a map).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
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

    fn raw_span(&self, raw: &RawValue) -> Span {
        let at = raw.get().as_ptr() as usize - self.bytes.as_ptr() as usize;
        Span { start: at as u32, len: raw.get().len() as u32 }
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
        let bad = |e: serde_json::Error| StoreError::BadObject(e.to_string());
        let top: Top<'_> = serde_json::from_slice(&bytes).map_err(bad)?;
        let raw_meta = *top.get("metadata").ok_or_else(|| StoreError::BadObject("no metadata".into()))?;
        let meta: Meta<'_> = serde_json::from_str(raw_meta.get()).map_err(bad)?;
        let rv =
            meta.resource_version.parse().map_err(|_| StoreError::BadObject(format!("resourceVersion {:?}", &*meta.resource_version)))?;
        let mut b = Builder { bytes: &bytes, extra: String::new() };
        let metadata = b.raw_span(raw_meta);
        let uid = meta.uid.as_ref().map(|u| b.span(&u.0)).unwrap_or_default();
        let labels = meta.labels.iter().flatten().map(|(k, v)| (b.span(&k.0), b.span(&v.0))).collect();
        let fields = fields
            .iter()
            .map(|path| field_value(&top, path).map(|v| v.map(|v| b.span(&v)).unwrap_or_default()))
            .collect::<Result<_, _>>()?;
        let namespace = meta.namespace.as_deref().filter(|ns| !ns.is_empty());
        let name: &str = &meta.name;
        let key: Arc<str> = match namespace {
            Some(ns) => format!("{ns}/{name}").into(),
            None => name.into(),
        };
        let namespace_len = namespace.map_or(0, str::len) as u32;
        let extra = b.extra.into_boxed_str();
        Ok(CachedObject { bytes, extra, key, namespace_len, rv, uid, metadata, labels, fields })
    }

    fn text(&self, s: Span) -> &str {
        if s.start & EXTRA != 0 {
            let start = (s.start & !EXTRA) as usize;
            return self.extra.get(start..start + s.len as usize).unwrap_or_default();
        }
        let range = s.start as usize..(s.start + s.len) as usize;
        self.bytes.get(range).and_then(|b| std::str::from_utf8(b).ok()).unwrap_or_default()
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

    /// Where `metadata`'s JSON value lies in [`CachedObject::bytes`].
    pub fn metadata_range(&self) -> Range<usize> {
        self.metadata.start as usize..(self.metadata.start + self.metadata.len) as usize
    }

    /// Heap and inline bytes this object costs beyond its `bytes`.
    pub fn overhead_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
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

/// The value at a dotted path: a string's text, or a scalar's literal.
fn field_value<'a>(top: &Top<'a>, path: &str) -> Result<Option<Cow<'a, str>>, StoreError> {
    let bad = |e: serde_json::Error| StoreError::BadObject(format!("{path}: {e}"));
    let mut parts = path.split('.');
    let Some(mut raw) = parts.next().and_then(|first| top.get(first).copied()) else { return Ok(None) };
    for part in parts {
        if !raw.get().starts_with('{') {
            return Ok(None);
        }
        let map: Top<'a> = serde_json::from_str(raw.get()).map_err(bad)?;
        match map.get(part) {
            Some(v) => raw = v,
            None => return Ok(None),
        }
    }
    let text = raw.get();
    if text.starts_with('"') {
        let s: Text<'a> = serde_json::from_str(text).map_err(bad)?;
        Ok(Some(s.0))
    } else if text == "null" || text.starts_with(['{', '[']) {
        Ok(None)
    } else {
        Ok(Some(Cow::Borrowed(text)))
    }
}

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

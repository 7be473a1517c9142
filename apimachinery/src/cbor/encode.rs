//! JSON objects transcoded to CBOR as the apiserver's deterministic encoder
//! writes the same Go value.
//!
//! Invariants: every map — Go struct or Go map alike — has its entries
//! sorted by their encoded keys (`SortBytewiseLexical`); strings and keys
//! are byte strings, `[]byte` fields tag 22 around the decoded bytes,
//! integers integers, floats in their shortest exact form; what cannot be
//! written exactly is an [`EncodeError`].
//!
//! What JSON does not say is taken from the protobuf [`schema`] of the
//! built-in kinds: which strings are `[]byte` (`bytes` fields, map values)
//! and which numbers are Go `float64`s (`double` fields: a CRD schema's
//! `maximum`, `minimum`, `multipleOf`), written as floats even when JSON
//! shows them without a fraction (`100`).
//! `Time`, `Quantity`, `IntOrString`, `FieldsV1` and `RawExtension` write
//! in CBOR what they write in JSON (their `MarshalCBOR`), so they are read
//! as plain JSON values; Go omits from CBOR exactly the fields it omits from
//! JSON (`OmitEmptyGoValue`, and the same `omitzero`).
//!
//! A custom resource is a Go map decoded from its stored form: with
//! `CBORServingAndStorage` on the apiserver stores it in CBOR, so a float
//! with an integral value stays a float there while its JSON shows a plain
//! integer (`1.0` is written `1`). A plain integer outside `metadata` is
//! therefore ambiguous and an error; so are a key the schema does not know
//! and a value of the wrong JSON type — the caller then does not serve CBOR
//! rather than serve it wrong.

use base64::Engine;
use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

use super::wire;
use crate::protobuf::schema::{self as proto, Field, Kind};

/// Why a JSON object has no exact CBOR encoding here.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// Not JSON.
    #[error("{0}")]
    Json(#[source] serde_json::Error),
    /// JSON, but not an object.
    #[error("not a JSON object")]
    NotAnObject,
    /// A key twice in one object: no one encoding.
    #[error("{0:?} twice in one object")]
    KeyTwice(String),
    /// A key the built-in kind's message does not have.
    #[error("{message} has no field {key:?}")]
    NoField {
        /// The protobuf message's name.
        message: &'static str,
        /// The key.
        key: String,
    },
    /// An object where the schema says `[]byte`.
    #[error("an object where bytes were expected")]
    ObjectForBytes,
    /// An object where the schema says `float64`.
    #[error("an object where a float was expected")]
    ObjectForFloat,
    /// A `[]byte` field's string that is not base64.
    #[error("bad base64: {0}")]
    Base64(#[source] base64::DecodeError),
    /// A number where the schema says `[]byte`, an object or a map.
    #[error("unexpected number {0}")]
    UnexpectedNumber(Number),
    /// A custom resource's plain integer outside `metadata`: stored in CBOR,
    /// it may be an integer or a float with an integral value.
    #[error("{0} may be an integer or a float stored as CBOR")]
    AmbiguousNumber(Number),
    /// A number beyond `i64` that is no `f64` either.
    #[error("bad number {0}")]
    BadNumber(Number),
    /// The value of `key` has no encoding (why: the source, itself perhaps
    /// inside a member of that value).
    #[error("{key}: {source}")]
    In {
        /// The member's key.
        key: String,
        /// Why its value has no encoding.
        #[source]
        source: Box<EncodeError>,
    },
}

/// How a kind's objects are written in CBOR: what Go type their JSON was
/// written from, which says which strings are `[]byte` and which integers
/// may be floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// A built-in kind, by its protobuf message's index in the protobuf
    /// schema, whose `bytes` fields are its `[]byte` fields
    /// ([`Schema::builtin`]).
    Builtin(usize),
    /// A custom resource (`unstructured.Unstructured`).
    Custom,
    /// A value with no `[]byte` fields and no floats stored as integers:
    /// `Status`, `ListMeta`, `ObjectMeta`.
    Plain,
}

impl Schema {
    /// The schema of a built-in kind the protobuf schema holds.
    pub fn builtin(api_version: &str, kind: &str) -> Option<Schema> {
        let name = crate::protobuf::message_name(api_version, kind)?;
        proto::schema().message(&name).map(Schema::Builtin)
    }
}

/// How a JSON value is written.
#[derive(Clone, Copy)]
enum Ty {
    Message(usize),
    Map(&'static Kind),
    Bytes,
    Float,
    Any,
    Custom,
}

/// The entries of the JSON object `json` (a map), each its encoded key
/// followed by its encoded value, in canonical order; with the offset of
/// each entry's start in the returned bytes.
pub fn entries(json: &[u8], schema: Schema) -> Result<(Vec<u8>, Vec<u32>), EncodeError> {
    let value: Json<'_> = serde_json::from_slice(json).map_err(EncodeError::Json)?;
    let Json::Object(map) = &value else { return Err(EncodeError::NotAnObject) };
    let s = proto::schema();
    let root = match schema {
        Schema::Builtin(message) => Ty::Message(message),
        Schema::Custom => Ty::Custom,
        Schema::Plain => Ty::Any,
    };
    let mut out = Vec::with_capacity(json.len());
    let mut starts = Vec::with_capacity(map.len());
    for (k, v) in canonical(map)? {
        let ty = match (schema, root) {
            (Schema::Custom, _) if k == "metadata" => Ty::Any,
            _ => child(s, root, k)?,
        };
        starts.push(out.len() as u32);
        entry(s, k, v, ty, &mut out)?;
    }
    Ok((out, starts))
}

/// A map's entries in canonical order: sorted by their encoded keys, which
/// for byte strings is by length, then bytes (the length is in the head).
/// A key twice has no one encoding.
fn canonical<'j, 'a>(map: &'j [(Cow<'a, str>, Json<'a>)]) -> Result<Vec<(&'j str, &'j Json<'a>)>, EncodeError> {
    let mut entries: Vec<_> = map.iter().map(|(k, v)| (k.as_ref(), v)).collect();
    entries.sort_unstable_by(|a, b| (a.0.len(), a.0).cmp(&(b.0.len(), b.0)));
    match entries.windows(2).find(|w| w[0].0 == w[1].0) {
        Some(twice) => Err(EncodeError::KeyTwice(twice[0].0.to_string())),
        None => Ok(entries),
    }
}

/// Writes one entry: key `k`, value `v` of type `ty`.
fn entry(s: &'static proto::Schema, k: &str, v: &Json<'_>, ty: Ty, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    wire::string(out, k.as_bytes());
    write(s, v, ty, out).map_err(|e| EncodeError::In { key: k.to_string(), source: Box::new(e) })
}

/// The type of key `k`'s value in an object of type `ty`.
fn child(s: &'static proto::Schema, ty: Ty, k: &str) -> Result<Ty, EncodeError> {
    Ok(match ty {
        Ty::Message(m) => match field(s, m, k) {
            Some(f) => field_ty(s, &f.kind),
            None if k == "kind" || k == "apiVersion" => Ty::Any,
            None => return Err(EncodeError::NoField { message: s.messages[m].name, key: k.to_string() }),
        },
        Ty::Map(kind) => field_ty(s, kind),
        Ty::Any | Ty::Custom => ty,
        Ty::Bytes => return Err(EncodeError::ObjectForBytes),
        Ty::Float => return Err(EncodeError::ObjectForFloat),
    })
}

/// The field JSON key `k` names in message `m`, looking into inlined structs.
fn field(s: &'static proto::Schema, m: usize, k: &str) -> Option<&'static Field> {
    let message = &s.messages[m];
    if let Some(f) = message.field(k).filter(|f| !f.inline) {
        return Some(f);
    }
    message.fields.iter().filter(|f| f.inline).find_map(|f| match f.kind {
        Kind::Message(inner) => field(s, inner, k),
        _ => None,
    })
}

fn field_ty(s: &proto::Schema, kind: &'static Kind) -> Ty {
    match kind {
        Kind::Bytes => Ty::Bytes,
        Kind::Double => Ty::Float,
        Kind::Map(_, value) => Ty::Map(value),
        Kind::Message(m) if !is_special(s.messages[*m].name) => Ty::Message(*m),
        _ => Ty::Any,
    }
}

/// Types whose `MarshalCBOR` writes what their `MarshalJSON` writes.
fn is_special(name: &str) -> bool {
    matches!(
        name,
        "apimachinery.pkg.apis.meta.v1.Time"
            | "apimachinery.pkg.apis.meta.v1.MicroTime"
            | "apimachinery.pkg.api.resource.Quantity"
            | "apimachinery.pkg.util.intstr.IntOrString"
            | "apimachinery.pkg.apis.meta.v1.FieldsV1"
            | "apimachinery.pkg.runtime.RawExtension"
    )
}

fn write(s: &'static proto::Schema, v: &Json<'_>, ty: Ty, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    match v {
        Json::Null => out.push(wire::NULL),
        Json::Bool(b) => out.push(if *b { wire::TRUE } else { wire::FALSE }),
        Json::Number(n) => number(n, ty, out)?,
        Json::String(text) => {
            if let Ty::Bytes = ty {
                let raw = base64::engine::general_purpose::STANDARD.decode(text.as_bytes()).map_err(EncodeError::Base64)?;
                wire::head(out, wire::TAG, wire::TAG_BASE64);
                wire::string(out, &raw);
            } else {
                wire::string(out, text.as_bytes());
            }
        }
        Json::Array(items) => {
            wire::head(out, wire::ARRAY, items.len() as u64);
            for item in items {
                write(s, item, ty, out)?;
            }
        }
        Json::Object(map) => {
            wire::head(out, wire::MAP, map.len() as u64);
            for (k, v) in canonical(map)? {
                entry(s, k, v, child(s, ty, k)?, out)?;
            }
        }
    }
    Ok(())
}

fn number(n: &Number, ty: Ty, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    match ty {
        Ty::Bytes | Ty::Message(_) | Ty::Map(_) => return Err(EncodeError::UnexpectedNumber(n.clone())),
        Ty::Custom if !n.is_f64() => return Err(EncodeError::AmbiguousNumber(n.clone())),
        Ty::Float => {
            wire::float(out, n.as_f64().ok_or_else(|| EncodeError::BadNumber(n.clone()))?);
            return Ok(());
        }
        Ty::Any | Ty::Custom => {}
    }
    match n.as_i64() {
        Some(i) => wire::int(out, i),
        // Beyond int64 Go decodes a JSON number into a float64.
        None => wire::float(out, n.as_f64().ok_or_else(|| EncodeError::BadNumber(n.clone()))?),
    }
    Ok(())
}

/// A JSON value as read for encoding: an object's members in a vector (no
/// hashing: parsing into `serde_json::Value`'s ordered maps was two thirds
/// of encoding a pod), strings borrowed from the input when unescaped.
enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Json<'de>, E> {
        Number::from_f64(n).map(Json::Number).ok_or_else(|| E::custom("a number out of range"))
    }
    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(text)))
    }
    fn visit_str<E>(self, text: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(text.to_owned())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some((Key(k), v)) = map.next_entry()? {
            members.push((k, v));
        }
        Ok(Json::Object(members))
    }
}

/// An object's key, borrowed when unescaped (serde's `Cow<str>` always copies).
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(text.to_owned())))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

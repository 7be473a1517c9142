//! JSON objects encoded to protobuf as the apiserver's Go code writes them,
//! driven by the [`schema`](super::schema) and read straight from the JSON
//! text (no document tree).
//!
//! Guarantees: fields are written in field-number order, repeated fields in
//! JSON order, map entries by key (Go sorts them), with both key and value;
//! present JSON values are written even when zero (Go writes non-pointer
//! fields and set pointers alike), `null` is absent except a `Time` or
//! `MicroTime` (Go's zero time) and a `RawExtension` (no bytes), written as
//! an empty message, and absent fields are
//! written as zero only where [`Field::always`] says Go does. The special
//! types follow their Go marshallers: `Time`/`MicroTime` as
//! `{seconds, nanos}`, `Quantity` as its string, `IntOrString` as
//! `{type, intVal, strVal}`, `FieldsV1`/`RawExtension` and apiextensions'
//! `JSON` as the raw JSON text (none for `null`), certificates' `ExtraValue`
//! (a Go `[]string`) from its JSON array, and the JSONSchemaPropsOr{Array,
//! Bool,StringArray} unions from the JSON value of the field its JSON type
//! picks. A key is found in a struct inlined in a struct inlined in the
//! message too.
//! A key the schema does not know, or a value of the wrong JSON type, is an
//! error: the caller then does not serve protobuf rather than serve it wrong.
//! Where JSON cannot tell, the encoding is that of Go clients' writes: a
//! `RawExtension` holds the bytes its writer sent, which JSON shows compacted
//! and HTML-escaped (`<` as `\u003c`), as Go writers send them; bytes sent
//! otherwise (a dry-run DeviceClass whose parameters held a literal `<`,
//! which its protobuf kept) are encoded wrong. apiextensions' `JSON` is
//! re-marshalled by the apiserver (checked the same way): always right. An
//! empty `[]byte` is the other such case (go.txt).

use std::borrow::Cow;
use std::fmt;

use base64::Engine;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::schema::{Field, Kind, Schema, schema};
use super::wire;

/// Why a JSON object has no protobuf encoding here.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// A message name the schema does not hold.
    #[error("no protobuf schema for {0}")]
    NoSchema(String),
    /// JSON the message cannot hold: not JSON, a key the schema does not
    /// know, a value of the wrong JSON type (`serde_json`'s error, with
    /// where it stands).
    #[error("{0}")]
    Json(#[source] serde_json::Error),
}

/// The protobuf bytes of the JSON object `json` as message `message` (a
/// full schema name such as `api.core.v1.Pod`), without any envelope.
pub fn encode(message: &str, json: &[u8]) -> Result<Vec<u8>, EncodeError> {
    let s = schema();
    let m = s.message(message).ok_or_else(|| EncodeError::NoSchema(message.to_string()))?;
    let mut de = serde_json::Deserializer::from_slice(json);
    let out = MessageSeed { s, m }.deserialize(&mut de).map_err(EncodeError::Json)?;
    de.end().map_err(EncodeError::Json)?;
    Ok(out)
}

/// How a message with a Go marshaller of its own is written.
#[derive(Clone, Copy)]
enum Special {
    Time,
    Quantity,
    IntOrString,
    /// Raw JSON text as field 1 (`null`: no bytes, as Go's `UnmarshalJSON` keeps none).
    Raw,
    /// A Go `[]string` (certificates' `ExtraValue`): a JSON array, each item field 1.
    Strings,
    /// JSONSchemaPropsOrArray, OrBool, OrStringArray: the JSON value of one of
    /// the message's fields, which its JSON type says: an object is the
    /// (single) schema field, then the bool field (`allows`) is true; an array
    /// the repeated field; a bool the bool field; `null` none.
    Union,
}

fn special(name: &str) -> Option<Special> {
    const APIEXTENSIONS: &str = "apiextensions_apiserver.pkg.apis.apiextensions.v1.";
    Some(match name {
        "apimachinery.pkg.apis.meta.v1.Time" | "apimachinery.pkg.apis.meta.v1.MicroTime" => Special::Time,
        "apimachinery.pkg.api.resource.Quantity" => Special::Quantity,
        "apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
        "apimachinery.pkg.apis.meta.v1.FieldsV1" | "apimachinery.pkg.runtime.RawExtension" => Special::Raw,
        "api.certificates.v1.ExtraValue" => Special::Strings,
        _ => match name.strip_prefix(APIEXTENSIONS) {
            Some("Json") => Special::Raw,
            Some("JsonSchemaPropsOrArray" | "JsonSchemaPropsOrBool" | "JsonSchemaPropsOrStringArray") => Special::Union,
            _ => return None,
        },
    })
}

/// One message's bytes.
struct MessageSeed<'s> {
    s: &'s Schema,
    m: usize,
}

impl<'de> DeserializeSeed<'de> for MessageSeed<'_> {
    type Value = Vec<u8>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<u8>, D::Error> {
        let mut out = Vec::new();
        match special(self.s.messages[self.m].name) {
            None => return d.deserialize_map(self),
            Some(Special::Time) => {
                let text = <Cow<'de, str>>::deserialize(d)?;
                let (seconds, nanos) = crate::time::parse_timestamp(&text).ok_or_else(|| D::Error::custom(format!("bad time {text:?}")))?;
                wire::varint_field(&mut out, 1, seconds as u64);
                wire::varint_field(&mut out, 2, u64::from(nanos));
            }
            Some(Special::Quantity) => wire::len_field(&mut out, 1, <Cow<'de, str>>::deserialize(d)?.as_bytes()),
            Some(Special::IntOrString) => match IntOrString::deserialize(d)? {
                IntOrString::Int(i) => {
                    wire::varint_field(&mut out, 1, 0);
                    wire::varint_field(&mut out, 2, i as u64);
                    wire::len_field(&mut out, 3, b"");
                }
                IntOrString::Str(s) => {
                    wire::varint_field(&mut out, 1, 1);
                    wire::varint_field(&mut out, 2, 0);
                    wire::len_field(&mut out, 3, s.as_bytes());
                }
            },
            Some(Special::Raw) => match <&'de RawValue>::deserialize(d)?.get() {
                "null" => {}
                raw => wire::len_field(&mut out, 1, raw.as_bytes()),
            },
            Some(Special::Strings) => {
                let field = &self.s.messages[self.m].fields[0];
                if let Some(items) = <Option<Vec<Cow<'de, str>>>>::deserialize(d)? {
                    for item in items {
                        wire::len_field(&mut out, field.tag, item.as_bytes());
                    }
                }
            }
            Some(Special::Union) => return d.deserialize_any(Union { s: self.s, m: self.m }),
        }
        Ok(out)
    }
}

/// A [`Special::Union`] message, from the JSON value of one of its fields.
struct Union<'s> {
    s: &'s Schema,
    m: usize,
}

impl Union<'_> {
    fn field(&self, want: impl Fn(&Field) -> bool) -> Option<&Field> {
        self.s.messages[self.m].fields.iter().find(|f| want(f))
    }

    fn bool_field(&self, value: bool) -> Result<Vec<u8>, String> {
        let field = self.field(|f| f.kind == Kind::Bool).ok_or("no bool here")?;
        let mut out = Vec::new();
        wire::varint_field(&mut out, field.tag, u64::from(value));
        Ok(out)
    }
}

impl<'de> Visitor<'de> for Union<'_> {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a value of {}", self.s.messages[self.m].name)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Vec<u8>, E> {
        Ok(Vec::new())
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Vec<u8>, E> {
        self.bool_field(v).map_err(E::custom)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Vec<u8>, A::Error> {
        let schema = self.s.messages[self.m].fields.iter().find_map(|f| match f.kind {
            Kind::Message(m) if !f.repeated => Some((f.tag, m)),
            _ => None,
        });
        let (tag, inner) = schema.ok_or_else(|| A::Error::custom("no schema here"))?;
        // Go sets `allows` along with the schema (JSONSchemaPropsOrBool), and writes it first.
        let mut out = self.bool_field(true).unwrap_or_default();
        wire::len_field(&mut out, tag, &MessageSeed { s: self.s, m: inner }.visit_map(map)?);
        Ok(out)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let field = self.field(|f| f.repeated).ok_or_else(|| A::Error::custom("no list here"))?;
        let mut out = Vec::new();
        while seq.next_element_seed(ValueSeed { s: self.s, kind: &field.kind, tag: field.tag, out: &mut out })?.is_some() {}
        Ok(out)
    }
}

impl<'de> Visitor<'de> for MessageSeed<'_> {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} object", self.s.messages[self.m].name)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<u8>, A::Error> {
        let mut message = Builder::new(self.s, self.m);
        while let Some(Key(key)) = map.next_key()? {
            message.member(&key, &mut map)?;
        }
        Ok(message.finish())
    }
}

/// One message being written: its fields in JSON order, then put in order.
struct Builder<'s> {
    s: &'s Schema,
    m: usize,
    out: Vec<u8>,
    /// (field number, byte range in `out`) of each field written.
    parts: Vec<(u32, usize, usize)>,
    /// The embedded structs whose members JSON writes among this one's.
    inline: Vec<(usize, Builder<'s>)>,
}

impl<'s> Builder<'s> {
    fn new(s: &'s Schema, m: usize) -> Self {
        Builder { s, m, out: Vec::new(), parts: Vec::new(), inline: Vec::new() }
    }

    /// Writes the member `key`, whose value `map` holds next.
    fn member<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let msg = &self.s.messages[self.m];
        if let Some(field) = msg.field(key) {
            let start = self.out.len();
            map.next_value_seed(FieldSeed { s: self.s, field, out: &mut self.out })?;
            if self.out.len() > start {
                self.parts.push((field.tag, start, self.out.len()));
            }
            return Ok(());
        }
        let holder = msg.fields.iter().enumerate().find_map(|(pos, f)| match f.kind {
            Kind::Message(inner) if f.inline && holds(self.s, inner, key) => Some((pos, inner)),
            _ => None,
        });
        if let Some((pos, inner)) = holder {
            let at = match self.inline.iter().position(|(p, _)| *p == pos) {
                Some(at) => at,
                None => {
                    self.inline.push((pos, Builder::new(self.s, inner)));
                    self.inline.len() - 1
                }
            };
            return self.inline[at].1.member(key, map);
        }
        if key == "kind" || key == "apiVersion" {
            // TypeMeta, which protobuf carries in the envelope only.
            map.next_value::<serde::de::IgnoredAny>()?;
            return Ok(());
        }
        Err(A::Error::custom(format!("{} has no field {key:?}", msg.name)))
    }

    /// The message's bytes, fields in number order.
    fn finish(mut self) -> Vec<u8> {
        let msg = &self.s.messages[self.m];
        for (pos, field) in msg.fields.iter().enumerate() {
            if let (true, Kind::Message(inner)) = (field.inline, &field.kind)
                && !self.inline.iter().any(|(p, _)| *p == pos)
            {
                self.inline.push((pos, Builder::new(self.s, *inner)));
            }
        }
        for (pos, inner) in std::mem::take(&mut self.inline) {
            let bytes = inner.finish();
            let start = self.out.len();
            wire::len_field(&mut self.out, msg.fields[pos].tag, &bytes);
            self.parts.push((msg.fields[pos].tag, start, self.out.len()));
        }
        for field in msg.fields.iter().filter(|f| f.always) {
            if !self.parts.iter().any(|p| p.0 == field.tag) {
                let start = self.out.len();
                write_zero(&mut self.out, field);
                self.parts.push((field.tag, start, self.out.len()));
            }
        }
        if self.parts.windows(2).all(|w| w[0].0 <= w[1].0) {
            return self.out;
        }
        self.parts.sort_by_key(|p| p.0);
        self.parts.iter().flat_map(|&(_, a, b)| &self.out[a..b]).copied().collect()
    }
}

/// Whether message `m` has the JSON key `key`, itself or in a struct it
/// inlines (admissionregistration's NamedRuleWithOperations inlines
/// RuleWithOperations, which inlines Rule).
fn holds(s: &Schema, m: usize, key: &str) -> bool {
    let msg = &s.messages[m];
    msg.field(key).is_some() || msg.fields.iter().any(|f| matches!(f.kind, Kind::Message(inner) if f.inline && holds(s, inner, key)))
}

/// The zero value of a field Go always writes.
fn write_zero(out: &mut Vec<u8>, field: &Field) {
    match field.kind {
        Kind::Int32 | Kind::Int64 | Kind::Bool => wire::varint_field(out, field.tag, 0),
        Kind::Double => {
            wire::key(out, field.tag, wire::FIXED64);
            out.extend_from_slice(&[0; 8]);
        }
        _ => wire::len_field(out, field.tag, b""),
    }
}

/// A JSON object key, borrowed when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <Cow<'de, str>>::deserialize(d).map(Key)
    }
}

/// An `IntOrString` as JSON writes it: a number or a string.
enum IntOrString<'de> {
    Int(i64),
    Str(Cow<'de, str>),
}

impl<'de> serde::Deserialize<'de> for IntOrString<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IntOrString<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or a string")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(IntOrString::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
                i64::try_from(v).map(IntOrString::Int).map_err(E::custom)
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(IntOrString::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(IntOrString::Str(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_any(V)
    }
}

/// Writes one JSON member as field `field` (all its occurrences).
struct FieldSeed<'s, 'o> {
    s: &'s Schema,
    field: &'s Field,
    out: &'o mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "field {}", self.field.tag)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        // Go's zero `Time` writes `null` to JSON and an empty message to protobuf; so does a
        // `RawExtension` without bytes (a ControllerRevision's `data`, not a pointer: a bookmark's).
        if let (Kind::Message(m), false) = (&self.field.kind, self.field.repeated)
            && (matches!(special(self.s.messages[*m].name), Some(Special::Time))
                || self.s.messages[*m].name == "apimachinery.pkg.runtime.RawExtension")
        {
            wire::len_field(self.out, self.field.tag, b"");
        }
        Ok(())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.visit_none()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let (s, field, out) = (self.s, self.field, self.out);
        if field.repeated {
            return d.deserialize_seq(Repeated { s, field, out });
        }
        if let Kind::Map(k, v) = &field.kind {
            return d.deserialize_map(Entries { s, tag: field.tag, key: k, value: v, out });
        }
        write_value(s, &field.kind, field.tag, d, out)
    }
}

/// Writes one value of `kind` as field `tag`.
fn write_value<'de, D: Deserializer<'de>>(s: &Schema, kind: &Kind, tag: u32, d: D, out: &mut Vec<u8>) -> Result<(), D::Error> {
    match kind {
        Kind::String => wire::len_field(out, tag, <Cow<'de, str>>::deserialize(d)?.as_bytes()),
        Kind::Bytes => {
            let text = <Cow<'de, str>>::deserialize(d)?;
            let bytes = base64::engine::general_purpose::STANDARD.decode(text.as_bytes()).map_err(D::Error::custom)?;
            wire::len_field(out, tag, &bytes);
        }
        Kind::Int32 | Kind::Int64 => wire::varint_field(out, tag, i64::deserialize(d)? as u64),
        Kind::Bool => wire::varint_field(out, tag, u64::from(bool::deserialize(d)?)),
        Kind::Double => {
            wire::key(out, tag, wire::FIXED64);
            out.extend_from_slice(&f64::deserialize(d)?.to_le_bytes());
        }
        Kind::Message(m) => {
            let inner = MessageSeed { s, m: *m }.deserialize(d)?;
            wire::len_field(out, tag, &inner);
        }
        Kind::Map(..) => return Err(D::Error::custom("a map inside a map")),
    }
    Ok(())
}

/// A JSON array written as one occurrence of the field per element.
struct Repeated<'s, 'o> {
    s: &'s Schema,
    field: &'s Field,
    out: &'o mut Vec<u8>,
}

impl<'de> Visitor<'de> for Repeated<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an array for field {}", self.field.tag)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(ValueSeed { s: self.s, kind: &self.field.kind, tag: self.field.tag, out: self.out })?.is_some() {}
        Ok(())
    }
}

/// One value of `kind` written as field `tag`.
struct ValueSeed<'s, 'o> {
    s: &'s Schema,
    kind: &'s Kind,
    tag: u32,
    out: &'o mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        write_value(self.s, self.kind, self.tag, d, self.out)
    }
}

/// A JSON object written as map entries `{1: key, 2: value}`, by key.
struct Entries<'s, 'o> {
    s: &'s Schema,
    tag: u32,
    key: &'s Kind,
    value: &'s Kind,
    out: &'o mut Vec<u8>,
}

impl<'de> Visitor<'de> for Entries<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an object for map field {}", self.tag)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if *self.key != Kind::String {
            return Err(A::Error::custom("map keys other than strings"));
        }
        let mut entries: Vec<(Cow<'de, str>, Vec<u8>)> = Vec::new();
        while let Some(Key(key)) = map.next_key()? {
            let mut entry = Vec::new();
            wire::len_field(&mut entry, 1, key.as_bytes());
            map.next_value_seed(ValueSeed { s: self.s, kind: self.value, tag: 2, out: &mut entry })?;
            entries.push((key, entry));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, entry) in entries {
            wire::len_field(self.out, self.tag, &entry);
        }
        Ok(())
    }
}

//! JSON objects transcoded to CBOR as the apiserver's deterministic encoder
//! writes the same Go value: every map — Go struct or Go map alike —
//! with its entries sorted by their encoded keys (`SortBytewiseLexical`),
//! strings and keys as byte strings, `[]byte` fields as tag 22 around the
//! decoded bytes, integers as integers, floats in their shortest exact form.
//!
//! What JSON does not say is taken from the protobuf [`schema`] of the
//! built-in kinds: which strings are `[]byte` (`bytes` fields, map values).
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
use serde_json::{Number, Value};

use super::wire;
use crate::protobuf::schema::{Field, Kind, Schema, schema};

/// Why a JSON object has no exact CBOR encoding here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EncodeError(pub String);

/// What Go type a JSON object was written from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A built-in kind, by its protobuf message's index in the schema
    /// ([`Shape::builtin`]).
    Builtin(usize),
    /// A custom resource (`unstructured.Unstructured`).
    Custom,
    /// A value with no `[]byte` fields and no floats stored as integers:
    /// `Status`, `ListMeta`, `ObjectMeta`.
    Plain,
}

impl Shape {
    /// The shape of a built-in kind the protobuf schema holds.
    pub fn builtin(api_version: &str, kind: &str) -> Option<Shape> {
        let name = crate::protobuf::message_name(api_version, kind)?;
        schema().message(&name).map(Shape::Builtin)
    }
}

/// How a JSON value is written.
#[derive(Clone, Copy)]
enum Ty {
    Message(usize),
    Map(&'static Kind),
    Bytes,
    Any,
    Custom,
}

/// The entries of the JSON object `json` (a map), each its encoded key
/// followed by its encoded value, in canonical order; with the offset of
/// each entry's start in the returned bytes.
pub fn entries(json: &[u8], shape: Shape) -> Result<(Vec<u8>, Vec<u32>), EncodeError> {
    let value: Value = serde_json::from_slice(json).map_err(|e| EncodeError(e.to_string()))?;
    let Value::Object(map) = &value else { return Err(EncodeError("not a JSON object".into())) };
    let s = schema();
    let root = match shape {
        Shape::Builtin(message) => Ty::Message(message),
        Shape::Custom => Ty::Custom,
        Shape::Plain => Ty::Any,
    };
    let mut pairs = Vec::with_capacity(map.len());
    for (k, v) in map {
        let ty = match (shape, root) {
            (Shape::Custom, _) if k == "metadata" => Ty::Any,
            _ => child(s, root, k)?,
        };
        pairs.push(pair(s, k, v, ty)?);
    }
    pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::with_capacity(json.len());
    let mut starts = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        starts.push(out.len() as u32);
        out.extend_from_slice(&key);
        out.extend_from_slice(&value);
    }
    Ok((out, starts))
}

fn pair(s: &'static Schema, k: &str, v: &Value, ty: Ty) -> Result<(Vec<u8>, Vec<u8>), EncodeError> {
    let mut key = Vec::with_capacity(k.len() + 2);
    wire::string(&mut key, k.as_bytes());
    let mut value = Vec::new();
    write(s, v, ty, &mut value).map_err(|e| EncodeError(format!("{k}: {}", e.0)))?;
    Ok((key, value))
}

/// The type of key `k`'s value in an object of type `ty`.
fn child(s: &'static Schema, ty: Ty, k: &str) -> Result<Ty, EncodeError> {
    Ok(match ty {
        Ty::Message(m) => match field(s, m, k) {
            Some(f) => field_ty(s, &f.kind),
            None if k == "kind" || k == "apiVersion" => Ty::Any,
            None => return Err(EncodeError(format!("{} has no field {k:?}", s.messages[m].name))),
        },
        Ty::Map(kind) => field_ty(s, kind),
        Ty::Any | Ty::Custom => ty,
        Ty::Bytes => return Err(EncodeError("an object where bytes were expected".into())),
    })
}

/// The field JSON key `k` names in message `m`, looking into inlined structs.
fn field(s: &'static Schema, m: usize, k: &str) -> Option<&'static Field> {
    let message = &s.messages[m];
    if let Some(f) = message.field(k).filter(|f| !f.inline) {
        return Some(f);
    }
    message.fields.iter().filter(|f| f.inline).find_map(|f| match f.kind {
        Kind::Message(inner) => field(s, inner, k),
        _ => None,
    })
}

fn field_ty(s: &Schema, kind: &'static Kind) -> Ty {
    match kind {
        Kind::Bytes => Ty::Bytes,
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

fn write(s: &'static Schema, v: &Value, ty: Ty, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    match v {
        Value::Null => out.push(wire::NULL),
        Value::Bool(b) => out.push(if *b { wire::TRUE } else { wire::FALSE }),
        Value::Number(n) => number(n, ty, out)?,
        Value::String(text) => {
            if let Ty::Bytes = ty {
                let raw = base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| EncodeError(format!("bad base64: {e}")))?;
                wire::head(out, wire::TAG, wire::TAG_BASE64);
                wire::string(out, &raw);
            } else {
                wire::string(out, text.as_bytes());
            }
        }
        Value::Array(items) => {
            wire::head(out, wire::ARRAY, items.len() as u64);
            for item in items {
                write(s, item, ty, out)?;
            }
        }
        Value::Object(map) => {
            let mut pairs = Vec::with_capacity(map.len());
            for (k, v) in map {
                pairs.push(pair(s, k, v, child(s, ty, k)?)?);
            }
            pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            wire::head(out, wire::MAP, pairs.len() as u64);
            for (key, value) in pairs {
                out.extend_from_slice(&key);
                out.extend_from_slice(&value);
            }
        }
    }
    Ok(())
}

fn number(n: &Number, ty: Ty, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    match ty {
        Ty::Bytes | Ty::Message(_) | Ty::Map(_) => return Err(EncodeError(format!("unexpected number {n}"))),
        Ty::Custom if !n.is_f64() => return Err(EncodeError(format!("{n} may be an integer or a float stored as CBOR"))),
        Ty::Any | Ty::Custom => {}
    }
    match n.as_i64() {
        Some(i) => wire::int(out, i),
        // Beyond int64 Go decodes a JSON number into a float64.
        None => wire::float(out, n.as_f64().ok_or_else(|| EncodeError(format!("bad number {n}")))?),
    }
    Ok(())
}

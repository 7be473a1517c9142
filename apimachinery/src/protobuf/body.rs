//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), as
//! kubectl's typed generators send them (`kubectl create configmap`,
//! `create secret generic`, `create namespace`): the `k8s\0` envelope
//! around a `runtime.Unknown` naming the type, whose `raw` is the object.
//!
//! Guarantees: [`decode_json`] turns the kinds it knows (ConfigMap, Secret,
//! Namespace) into the JSON object the apiserver would have read, with only
//! the fields the body sets (Go writes non-pointer fields even when empty;
//! empty strings, maps and lists read as absent); any other kind is
//! `None`, a malformed body an error. Fields these kinds carry that a creating client does
//! not send (status, managedFields, timestamps) are ignored.

use std::collections::BTreeMap;

use base64::Engine;
use prost::Message;
use serde_json::{Map, Value, json};

use super::MAGIC;

/// Why a protobuf body could not be read; its `Display` is the apiserver's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A body that does not start with `k8s\0`.
    #[error("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")]
    NoMagic,
    /// A `runtime.Unknown` envelope that does not decode.
    #[error("unable to decode the protobuf envelope: {0}")]
    Envelope(#[source] prost::DecodeError),
    /// An object of a kind read here that does not decode.
    #[error("unable to decode {kind}: {source}")]
    Object {
        /// The kind the envelope names.
        kind: String,
        /// What `prost` saw.
        #[source]
        source: prost::DecodeError,
    },
}

#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ObjectMeta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    generate_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    annotations: BTreeMap<String, String>,
    #[prost(string, repeated, tag = "14")]
    finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ConfigMap {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, string", tag = "2")]
    data: BTreeMap<String, String>,
    #[prost(btree_map = "string, bytes", tag = "3")]
    binary_data: BTreeMap<String, Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct Secret {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, bytes", tag = "2")]
    data: BTreeMap<String, Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    typ: Option<String>,
    #[prost(btree_map = "string, string", tag = "4")]
    string_data: BTreeMap<String, String>,
    #[prost(bool, optional, tag = "5")]
    immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct Namespace {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<NamespaceSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct NamespaceSpec {
    #[prost(string, repeated, tag = "1")]
    finalizers: Vec<String>,
}

/// Sets `key` in `out` unless `value` is empty.
fn set(out: &mut Map<String, Value>, key: &str, value: Value) {
    let empty = match &value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    if !empty {
        out.insert(key.into(), value);
    }
}

fn strings(m: &BTreeMap<String, String>) -> Value {
    Value::Object(m.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect())
}

fn base64(m: &BTreeMap<String, Vec<u8>>) -> Value {
    Value::Object(m.iter().map(|(k, v)| (k.clone(), base64::engine::general_purpose::STANDARD.encode(v).into())).collect())
}

fn metadata(m: Option<ObjectMeta>) -> Value {
    let m = m.unwrap_or_default();
    let mut out = Map::new();
    set(&mut out, "name", m.name.unwrap_or_default().into());
    set(&mut out, "generateName", m.generate_name.unwrap_or_default().into());
    set(&mut out, "namespace", m.namespace.unwrap_or_default().into());
    set(&mut out, "labels", strings(&m.labels));
    set(&mut out, "annotations", strings(&m.annotations));
    set(&mut out, "finalizers", m.finalizers.into());
    Value::Object(out)
}

/// The JSON object a protobuf request body holds; `None` for a kind this module does not read.
pub fn decode_json(body: &[u8]) -> Result<Option<Value>, DecodeError> {
    let envelope = body.strip_prefix(MAGIC).ok_or(DecodeError::NoMagic)?;
    let unknown = Unknown::decode(envelope).map_err(DecodeError::Envelope)?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let (api_version, kind) = (type_meta.api_version.unwrap_or_default(), type_meta.kind.unwrap_or_default());
    let raw = unknown.raw.unwrap_or_default();
    let bad = |source| DecodeError::Object { kind: kind.clone(), source };
    let mut out = Map::new();
    out.insert("kind".into(), kind.clone().into());
    out.insert("apiVersion".into(), api_version.into());
    match kind.as_str() {
        "ConfigMap" => {
            let c = ConfigMap::decode(&raw[..]).map_err(bad)?;
            out.insert("metadata".into(), metadata(c.metadata));
            set(&mut out, "data", strings(&c.data));
            set(&mut out, "binaryData", base64(&c.binary_data));
            if let Some(i) = c.immutable {
                out.insert("immutable".into(), i.into());
            }
        }
        "Secret" => {
            let s = Secret::decode(&raw[..]).map_err(bad)?;
            out.insert("metadata".into(), metadata(s.metadata));
            set(&mut out, "data", base64(&s.data));
            set(&mut out, "stringData", strings(&s.string_data));
            set(&mut out, "type", s.typ.unwrap_or_default().into());
            if let Some(i) = s.immutable {
                out.insert("immutable".into(), i.into());
            }
        }
        "Namespace" => {
            let n = Namespace::decode(&raw[..]).map_err(bad)?;
            out.insert("metadata".into(), metadata(n.metadata));
            let finalizers = n.spec.map(|s| s.finalizers).unwrap_or_default();
            if !finalizers.is_empty() {
                out.insert("spec".into(), json!({ "finalizers": finalizers }));
            }
        }
        _ => return Ok(None),
    }
    Ok(Some(Value::Object(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown { type_meta: Some(TypeMeta { api_version: Some("v1".into()), kind: Some(kind.into()) }), raw: Some(raw) };
        [MAGIC, &unknown.encode_to_vec()].concat()
    }

    #[test]
    fn a_configmap_reads_as_its_json() {
        let meta = ObjectMeta { name: Some("cm".into()), namespace: Some(String::new()), ..Default::default() };
        let cm = ConfigMap {
            metadata: Some(meta),
            data: BTreeMap::from([("a".into(), "b".into())]),
            binary_data: BTreeMap::from([("bin".into(), vec![0, 1, 2])]),
            immutable: None,
        };
        let v = decode_json(&envelope("ConfigMap", cm.encode_to_vec())).unwrap();
        assert_eq!(
            v.unwrap(),
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "cm"}, "data": {"a": "b"}, "binaryData": {"bin": "AAEC"}})
        );
    }

    #[test]
    fn a_namespace_and_a_secret_read_as_their_json() {
        let ns = Namespace {
            metadata: Some(ObjectMeta { name: Some("team".into()), ..Default::default() }),
            spec: Some(NamespaceSpec::default()),
        };
        assert_eq!(
            decode_json(&envelope("Namespace", ns.encode_to_vec())).unwrap().unwrap(),
            json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "team"}})
        );
        let secret = Secret {
            metadata: Some(ObjectMeta { name: Some("s".into()), ..Default::default() }),
            data: BTreeMap::from([("k".into(), b"v".to_vec())]),
            typ: Some("Opaque".into()),
            ..Default::default()
        };
        assert_eq!(
            decode_json(&envelope("Secret", secret.encode_to_vec())).unwrap().unwrap(),
            json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"}, "data": {"k": "dg=="}, "type": "Opaque"})
        );
    }

    #[test]
    fn other_kinds_and_bad_bodies_are_errors() {
        assert_eq!(decode_json(&envelope("Pod", vec![])), Ok(None));
        assert!(decode_json(b"{}").is_err());
        assert!(decode_json(b"k8s\0\xff\xff").is_err());
    }
}

//! Stored objects: the JSON bytes the simulator serves plus the few parsed
//! parts (name, namespace, labels, selectable fields) that lists and watches
//! filter on.
//!
//! An [`Obj`] is immutable once built; a write makes a new one. Its `item`
//! bytes are the list-item form (no `kind`/`apiVersion`, as the apiserver
//! writes list items); [`Obj::with_type`] splices the type in front for
//! watch events and single gets.

use std::collections::BTreeMap;

use apimachinery::meta;
use bytes::Bytes;
use serde_json::{Map, Value};

use crate::resources::ResourceType;

/// One revision of one object.
#[derive(Debug, Clone, PartialEq)]
pub struct Obj {
    /// Compact JSON without `kind`/`apiVersion`, `metadata` first.
    pub item: Bytes,
    /// `metadata.namespace` (`""` when cluster-scoped).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.resourceVersion`.
    pub rv: u64,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// Its field labels' values, in the order of `ResourceType::fields.labels`.
    pub fields: Vec<String>,
    /// Whether `metadata.finalizers` is non-empty.
    pub has_finalizers: bool,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

impl Obj {
    /// Builds the stored form of `v`: drops `kind`/`apiVersion`, puts
    /// `metadata` first with its fields in the apiserver's order.
    pub fn from_value(rt: &ResourceType, v: Value) -> Obj {
        let Value::Object(mut top) = v else { unreachable!("callers check that objects are JSON objects") };
        top.shift_remove("kind");
        top.shift_remove("apiVersion");
        let meta = match top.shift_remove("metadata") {
            Some(Value::Object(m)) => order_metadata(m),
            _ => Map::new(),
        };
        let str_of = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let labels = meta
            .get("labels")
            .and_then(Value::as_object)
            .map(|l| l.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
            .unwrap_or_default();
        let mut obj = Map::new();
        let namespace = str_of("namespace");
        let name = str_of("name");
        let uid = str_of("uid");
        let rv = str_of("resourceVersion").parse().unwrap_or(0);
        let has_finalizers = meta.get("finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
        let deleting = meta.get("deletionTimestamp").is_some_and(|t| !t.is_null());
        obj.insert("metadata".into(), Value::Object(meta));
        obj.extend(top);
        let item = Bytes::from(serde_json::to_vec(&Value::Object(obj)).expect("JSON values serialize"));
        // Each field label's value, in the order of the kind's labels.
        let read = meta::field_values(&item, &rt.field_paths()).unwrap_or_default();
        let at = |i: usize| read.get(i).and_then(Option::as_deref).unwrap_or_default();
        let fields = rt.fields.labels.iter().map(|l| l.value(rt.fields.indexes(l).into_iter().map(at)).to_string()).collect();
        Obj { item, namespace, name, uid, rv, labels, fields, has_finalizers, deleting }
    }

    /// The object as a JSON value (without `kind`/`apiVersion`).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.item).expect("stored objects are valid JSON")
    }

    /// Its `metadata` member's bytes.
    pub fn metadata(&self) -> Bytes {
        match meta::parse(&self.item, &[]) {
            Ok(m) => self.item.slice_ref(m.metadata.as_bytes()),
            Err(_) => Bytes::from_static(b"{}"),
        }
    }

    /// Its metadata as metadata-only answers carry it (`meta::served_metadata`).
    pub fn served_metadata(&self, rt: &ResourceType) -> Bytes {
        let stored = self.metadata();
        match meta::served_metadata(rt, &stored) {
            std::borrow::Cow::Owned(served) => Bytes::from(served),
            std::borrow::Cow::Borrowed(_) => stored,
        }
    }

    /// The object with its type first: `{"kind":…,"apiVersion":…,"metadata":…}`.
    pub fn with_type(&self, rt: &ResourceType) -> Vec<u8> {
        let prefix = rt.type_prefix();
        let mut out = Vec::with_capacity(prefix.len() + self.item.len());
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(&self.item[1..]);
        out
    }

    /// The value of a field selector's field for this object.
    pub fn field(&self, rt: &ResourceType, field: &str) -> String {
        match field {
            "metadata.name" => self.name.clone(),
            "metadata.namespace" => self.namespace.clone(),
            _ => rt.fields.labels.iter().position(|l| l.name == field).map(|i| self.fields[i].clone()).unwrap_or_default(),
        }
    }

    /// A copy of this object whose `metadata.resourceVersion` is `rv` (what a
    /// DELETED event carries).
    pub fn at_revision(&self, rt: &ResourceType, rv: u64) -> Obj {
        let mut v = self.to_value();
        v["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        Obj::from_value(rt, v)
    }
}

fn order_metadata(mut m: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    // The apiserver's (Go struct) order; unknown keys follow.
    for k in apimachinery::meta::OBJECT_META_FIELDS {
        if let Some(v) = m.shift_remove(*k) {
            out.insert((*k).to_string(), v);
        }
    }
    out.extend(m);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;
    use serde_json::json;

    #[test]
    fn stored_form_drops_type_and_orders_metadata_like_the_apiserver() {
        let reg = Registry::new(&[]).unwrap();
        let pods = reg.get(reg.builtin("", "pods"));
        let v = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"nodeName": "n1", "hostNetwork": true},
                       "metadata": {"labels": {"a": "b"}, "namespace": "ns", "name": "p", "resourceVersion": "7"}});
        let o = Obj::from_value(pods, v);
        assert_eq!(
            std::str::from_utf8(&o.item).unwrap(),
            r#"{"metadata":{"name":"p","namespace":"ns","resourceVersion":"7","labels":{"a":"b"}},"spec":{"nodeName":"n1","hostNetwork":true}}"#
        );
        assert_eq!(o.rv, 7);
        assert_eq!(o.field(pods, "spec.nodeName"), "n1");
        assert_eq!(o.field(pods, "spec.hostNetwork"), "true");
        assert_eq!(o.field(pods, "status.phase"), "");
        assert!(std::str::from_utf8(&o.with_type(pods)).unwrap().starts_with(r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p""#));
    }

    #[test]
    fn boolean_fields_default_to_false() {
        let reg = Registry::new(&[]).unwrap();
        let pods = reg.get(reg.builtin("", "pods"));
        let o = Obj::from_value(pods, json!({"metadata": {"name": "p"}}));
        assert_eq!(o.field(pods, "spec.hostNetwork"), "false");
    }
}

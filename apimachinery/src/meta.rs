//! `ObjectMeta` read from an object's raw JSON bytes: the parts lists,
//! selectors and watches need, and the values of selectable fields.
//!
//! Invariants: no document is built; every string borrows from the input
//! unless JSON escapes forced unescaping; a field value is a string's text
//! or a number's or boolean's literal, and absent (`None`) when the path is
//! missing, `null`, or not a scalar; malformed input is a [`MetaError`],
//! never a panic.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

/// Why bytes are not an object with metadata.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    /// Not a JSON object.
    #[error("{0}")]
    Json(#[source] serde_json::Error),
    /// An object without `metadata`.
    #[error("no metadata")]
    NoMetadata,
    /// A `metadata` without a string `name` and `resourceVersion`, or not an object.
    #[error("{0}")]
    Metadata(#[source] serde_json::Error),
    /// A `metadata.resourceVersion` that is not a revision.
    #[error("resourceVersion {0:?}")]
    Revision(String),
    /// A field on the way to a selectable field's value that is not JSON it can read.
    #[error("{path}: {source}")]
    Field {
        /// The field's dotted path.
        path: String,
        /// What `serde_json` saw.
        #[source]
        source: serde_json::Error,
    },
    /// A custom resource's `metadata` that cannot be put in `ObjectMeta` order.
    #[error("bad metadata: {0}")]
    Unordered(#[source] serde_json::Error),
}

/// The metadata of one object, borrowed from its bytes.
#[derive(Debug)]
pub struct ObjectMeta<'a> {
    /// `metadata.name`.
    pub name: Cow<'a, str>,
    /// `metadata.namespace`; empty when unset.
    pub namespace: Cow<'a, str>,
    /// `metadata.resourceVersion` as written.
    pub resource_version_text: Cow<'a, str>,
    /// `metadata.resourceVersion` as a revision.
    pub resource_version: u64,
    /// `metadata.uid`; empty when unset.
    pub uid: Cow<'a, str>,
    /// `metadata.labels`, in key order.
    pub labels: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// The `metadata` member's JSON text.
    pub metadata: &'a str,
    /// The values of the requested field paths, in the order asked.
    pub fields: Vec<Option<Cow<'a, str>>>,
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

/// Reads the metadata of the JSON object `bytes` and the values of `fields`
/// (dotted paths such as `spec.nodeName`).
pub fn parse<'a>(bytes: &'a [u8], fields: &[&str]) -> Result<ObjectMeta<'a>, MetaError> {
    let top: Top<'a> = serde_json::from_slice(bytes).map_err(MetaError::Json)?;
    let raw_meta = *top.get("metadata").ok_or(MetaError::NoMetadata)?;
    let meta: Meta<'a> = serde_json::from_str(raw_meta.get()).map_err(MetaError::Metadata)?;
    let resource_version = meta.resource_version.0.parse().map_err(|_| MetaError::Revision(meta.resource_version.0.to_string()))?;
    let fields = values_at(&top, fields)?;
    Ok(ObjectMeta {
        name: meta.name.0,
        namespace: meta.namespace.map_or(Cow::Borrowed(""), |t| t.0),
        resource_version_text: meta.resource_version.0,
        resource_version,
        uid: meta.uid.map_or(Cow::Borrowed(""), |t| t.0),
        labels: meta.labels.into_iter().flatten().map(|(k, v)| (k.0, v.0)).collect(),
        metadata: raw_meta.get(),
        fields,
    })
}

/// The values of `paths` in the JSON object `bytes`, as [`parse`] reads them.
pub fn field_values<'a>(bytes: &'a [u8], paths: &[&str]) -> Result<Vec<Option<Cow<'a, str>>>, MetaError> {
    let top: Top<'a> = serde_json::from_slice(bytes).map_err(MetaError::Json)?;
    values_at(&top, paths)
}

fn values_at<'a>(top: &Top<'a>, paths: &[&str]) -> Result<Vec<Option<Cow<'a, str>>>, MetaError> {
    paths.iter().map(|path| field_value(top, path)).collect()
}

/// The value at a dotted path: a string's text, or a scalar's literal.
fn field_value<'a>(top: &Top<'a>, path: &str) -> Result<Option<Cow<'a, str>>, MetaError> {
    let bad = |source| MetaError::Field { path: path.to_string(), source };
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

/// The annotation apps/v1 DaemonSets carry that the apiserver's internal
/// DaemonSet holds as `spec.templateGeneration` instead.
const DAEMONSET_TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// The annotation an apps/v1 Deployment may carry that the apiserver's
/// internal Deployment holds as `spec.rollbackTo` instead (when not empty).
const DEPLOYMENT_ROLLBACK_TO: &str = "deprecated.deployment.rollback.to";

/// The annotations autoscaling/v1 HorizontalPodAutoscalers carry for what
/// only autoscaling/v2 has fields for; the internal object drops them.
const HPA_ROUND_TRIP: &[&str] = &[
    "autoscaling.alpha.kubernetes.io/metrics",
    "autoscaling.alpha.kubernetes.io/current-metrics",
    "autoscaling.alpha.kubernetes.io/behavior",
    "autoscaling.alpha.kubernetes.io/conditions",
];

/// The `metadata` the apiserver writes in metadata-only answers
/// (`PartialObjectMetadata`, Table rows) of an object of `res` stored with
/// `metadata`: it serializes the metadata of its internal object, so a
/// custom resource's comes in `ObjectMeta` order ([`typed_metadata`]), a
/// DaemonSet's without `deprecated.daemonset.template.generation`, a
/// Deployment's without a non-empty `deprecated.deployment.rollback.to`, and an
/// autoscaling/v1 HorizontalPodAutoscaler's without the v2 round-trip
/// annotations (an `annotations` left empty disappears); any other as
/// stored. Checked against the captures (`daemonsets/get-metadata.json`,
/// `watch-metadata.pb`, `tables/horizontalpodautoscalers.autoscaling.v1`,
/// `deployment-rollback/`).
pub fn served_metadata<'a>(res: &crate::resource::Resource, metadata: &'a [u8]) -> Cow<'a, [u8]> {
    if res.group == "autoscaling" && res.version == "v1" && res.plural == "horizontalpodautoscalers" {
        return without_annotations(metadata, HPA_ROUND_TRIP).map_or(Cow::Borrowed(metadata), Cow::Owned);
    }
    if crate::resource::builtin(&res.group, &res.version, &res.plural).is_none() {
        return typed_metadata(metadata).map_or(Cow::Borrowed(metadata), Cow::Owned);
    }
    if res.group == "apps" && res.plural == "daemonsets" {
        return without_annotations(metadata, &[DAEMONSET_TEMPLATE_GENERATION]).map_or(Cow::Borrowed(metadata), Cow::Owned);
    }
    if res.group == "apps" && res.plural == "deployments" && annotation(metadata, DEPLOYMENT_ROLLBACK_TO).is_some_and(|v| !v.is_empty()) {
        return without_annotations(metadata, &[DEPLOYMENT_ROLLBACK_TO]).map_or(Cow::Borrowed(metadata), Cow::Owned);
    }
    Cow::Borrowed(metadata)
}

/// The value of annotation `key` in `metadata`, if it has one.
fn annotation(metadata: &[u8], key: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Annotated {
        #[serde(default)]
        annotations: BTreeMap<String, String>,
    }
    serde_json::from_slice::<Annotated>(metadata).ok()?.annotations.remove(key)
}

/// `metadata` without the annotations `keys` (an `annotations` left empty
/// dropped), fields in `ObjectMeta` order, other bytes kept; `None` when it
/// has none of them.
fn without_annotations(metadata: &[u8], keys: &[&str]) -> Option<Vec<u8>> {
    let map: BTreeMap<&str, &RawValue> = serde_json::from_slice(metadata).ok()?;
    let annotations: BTreeMap<String, &RawValue> = serde_json::from_str(map.get("annotations")?.get()).ok()?;
    if !keys.iter().any(|k| annotations.contains_key(*k)) {
        return None;
    }
    let mut rest = String::from("{");
    for (k, v) in annotations.iter().filter(|(k, _)| !keys.contains(&k.as_str())) {
        if rest.len() > 1 {
            rest.push(',');
        }
        crate::json::write_go_string(&mut rest, k);
        rest.push(':');
        rest.push_str(v.get());
    }
    rest.push('}');
    let annotations = (rest.len() > 2).then_some(rest.as_str());
    ordered(&map, Some(annotations)).ok()
}

/// `ObjectMeta`'s JSON fields in Go's struct order (the order the apiserver writes them).
pub const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];
const OWNER_REFERENCE: &[&str] = &["apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"];
const MANAGED_FIELDS_ENTRY: &[&str] = &["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"];

/// A custom resource's `metadata` (stored unstructured, its keys sorted)
/// as the apiserver writes it once converted to a typed `ObjectMeta`, as
/// in metadata-only answers and Table rows: fields in Go's struct order,
/// owner references and managed-fields entries too; every value's bytes
/// kept as they are (Go's escaping included).
pub fn typed_metadata(metadata: &[u8]) -> Result<Vec<u8>, MetaError> {
    let map: BTreeMap<&str, &RawValue> = serde_json::from_slice(metadata).map_err(MetaError::Unordered)?;
    ordered(&map, None).map_err(MetaError::Unordered)
}

/// The fields of `map` in `ObjectMeta` order; `annotations`, when given,
/// replaces the annotations (`None`: none).
fn ordered(map: &BTreeMap<&str, &RawValue>, annotations: Option<Option<&str>>) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::new();
    out.push(b'{');
    for key in OBJECT_META_FIELDS {
        let value = match (*key, annotations) {
            ("annotations", Some(replacement)) => replacement,
            _ => map.get(key).map(|v| v.get()),
        };
        let Some(value) = value else { continue };
        if out.len() > 1 {
            out.push(b',');
        }
        write_key(&mut out, key);
        match *key {
            "ownerReferences" => write_entries(&mut out, value, OWNER_REFERENCE)?,
            "managedFields" => write_entries(&mut out, value, MANAGED_FIELDS_ENTRY)?,
            _ => out.extend_from_slice(value.as_bytes()),
        }
    }
    out.push(b'}');
    Ok(out)
}

fn write_key(out: &mut Vec<u8>, key: &str) {
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// An array of objects with each object's fields in `order`.
fn write_entries(out: &mut Vec<u8>, value: &str, order: &[&str]) -> Result<(), serde_json::Error> {
    let Some(entries): Option<Vec<BTreeMap<&str, &RawValue>>> = serde_json::from_str(value)? else {
        out.extend_from_slice(b"null");
        return Ok(());
    };
    out.push(b'[');
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'{');
        let mut first = true;
        for key in order {
            if let Some(v) = entry.get(key) {
                if !first {
                    out.push(b',');
                }
                first = false;
                write_key(out, key);
                out.extend_from_slice(v.get().as_bytes());
            }
        }
        out.push(b'}');
    }
    out.push(b']');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_resources_metadata_is_written_in_object_meta_order() {
        let read = |f: &str| {
            std::fs::read(format!("{}/../tests/reference/apiserver-1.36/encodings/widgets/{f}", env!("CARGO_MANIFEST_DIR"))).unwrap()
        };
        let (list, metadata_list) = (read("list.json"), read("list-metadata.json"));
        let stored: Vec<Vec<u8>> = crate::list::ListPage::parse(&bytes::Bytes::from(list))
            .unwrap()
            .items
            .iter()
            .map(|item| typed_metadata(parse(item, &[]).unwrap().metadata.as_bytes()).unwrap())
            .collect();
        let served: Vec<Vec<u8>> = crate::list::ListPage::parse(&bytes::Bytes::from(metadata_list))
            .unwrap()
            .items
            .iter()
            .map(|item| parse(item, &[]).unwrap().metadata.as_bytes().to_vec())
            .collect();
        assert_eq!(stored.len(), 3);
        for (a, b) in stored.iter().zip(&served) {
            assert_eq!(String::from_utf8_lossy(a), String::from_utf8_lossy(b));
        }
    }

    #[test]
    fn a_deployments_rollback_annotation_is_not_in_its_metadata_only_form() {
        let read = |f: &str| -> serde_json::Value {
            let path = format!("{}/../tests/reference/apiserver-1.36/deployment-rollback/{f}", env!("CARGO_MANIFEST_DIR"));
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
        };
        let deployments = crate::resource::builtin("apps", "v1", "deployments").unwrap().resource();
        let stored = serde_json::to_vec(&read("get.json")["metadata"]).unwrap();
        let served: serde_json::Value = serde_json::from_slice(&served_metadata(&deployments, &stored)).unwrap();
        assert_eq!(served, read("get-metadata.json")["metadata"]);
        let empty = br#"{"name":"d","annotations":{"deprecated.deployment.rollback.to":""}}"#;
        assert!(matches!(served_metadata(&deployments, empty), Cow::Borrowed(_)), "an empty revision stays");
    }

    #[test]
    fn metadata_and_fields_borrow_from_the_bytes() {
        let json = r#"{"kind":"Pod","metadata":{"name":"web-1","namespace":"prod","uid":"u-1","resourceVersion":"42","labels":{"b":"2","a":"x\"y"}},"spec":{"nodeName":"n1","hostNetwork":true},"status":{"phase":"Running"}}"#;
        let m = parse(json.as_bytes(), &["spec.nodeName", "status.phase", "spec.hostNetwork", "spec.missing", "metadata.name"]).unwrap();
        assert_eq!((&*m.name, &*m.namespace, &*m.uid, m.resource_version), ("web-1", "prod", "u-1", 42));
        let labels: Vec<(&str, &str)> = m.labels.iter().map(|(k, v)| (&**k, &**v)).collect();
        assert_eq!(labels, [("a", "x\"y"), ("b", "2")]);
        assert!(matches!(m.labels[1].1, Cow::Borrowed(_)) && matches!(m.labels[0].1, Cow::Owned(_)), "only escaped text is copied");
        let fields: Vec<Option<&str>> = m.fields.iter().map(Option::as_deref).collect();
        assert_eq!(fields, [Some("n1"), Some("Running"), Some("true"), None, Some("web-1")]);
        assert!(m.metadata.starts_with(r#"{"name":"web-1""#) && m.metadata.ends_with(r#"}}"#));
    }

    #[test]
    fn objects_without_usable_metadata_are_errors() {
        let cluster = parse(br#"{"metadata":{"name":"n1","resourceVersion":"7"}}"#, &[]).unwrap();
        assert_eq!((&*cluster.namespace, &*cluster.name), ("", "n1"));
        for bad in
            [&b"{}"[..], b"[]", b"{\"metadata\":{\"name\":\"a\"}}", b"{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"x\"}}", b"nope"]
        {
            assert!(parse(bad, &[]).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}

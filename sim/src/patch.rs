//! PATCH bodies: JSON patch (RFC 6902), JSON merge patch (RFC 7386), and the
//! strategic merge patch kubectl sends for built-in kinds.
//!
//! Strategic merge here is JSON merge patch plus what kubectl relies on:
//! lists of objects merged by their merge key (`containers` by `name`,
//! `ownerReferences` by `uid`, …), `$patch: delete|replace` on list items and
//! maps, `$deleteFromPrimitiveList/`, and the ordering directives
//! (`$setElementOrder/`, `$retainKeys`) accepted and dropped.

use serde_json::{Map, Value};

use apimachinery::status::ApiError;

/// A supported patch media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
}

impl PatchType {
    /// The patch type of a `Content-Type`, or 415.
    pub fn from_content_type(ct: &str) -> Result<Self, ApiError> {
        match ct.split(';').next().unwrap_or("").trim() {
            "application/json-patch+json" => Ok(Self::Json),
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            other => Err(ApiError::unsupported_media_type(other)),
        }
    }
}

/// Applies `patch` to `doc`.
pub fn apply(kind: PatchType, doc: &mut Value, patch: &[u8]) -> Result<(), ApiError> {
    let bad = |e: String| ApiError::bad_request(e);
    match kind {
        PatchType::Json => {
            let p: json_patch::Patch = serde_json::from_slice(patch).map_err(|e| bad(e.to_string()))?;
            json_patch::patch(doc, &p).map_err(|e| {
                let mut err = ApiError::bad_request(format!("the server rejected our request due to an error in our request: {e}"));
                err.code = 422;
                err.reason = "Invalid";
                err
            })
        }
        PatchType::Merge => {
            let p: Value = serde_json::from_slice(patch).map_err(|e| bad(e.to_string()))?;
            json_patch::merge(doc, &p);
            Ok(())
        }
        PatchType::Strategic => {
            let p: Value = serde_json::from_slice(patch).map_err(|e| bad(e.to_string()))?;
            strategic(doc, p, None);
            Ok(())
        }
    }
}

/// The merge key of a list field, as the Kubernetes types declare it.
fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    let has = |k: &str| items.iter().all(|i| i.get(k).is_some());
    match field {
        "containers" | "initContainers" | "ephemeralContainers" | "volumes" | "env" | "imagePullSecrets" | "volumeDevices" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "ownerReferences" => Some("uid"),
        "conditions" => Some("type"),
        "hostAliases" => Some("ip"),
        "ports" if has("containerPort") => Some("containerPort"),
        "ports" if has("port") => Some("port"),
        _ => None,
    }
}

fn strategic(doc: &mut Value, patch: Value, _field: Option<&str>) {
    let Value::Object(patch) = patch else {
        *doc = patch;
        return;
    };
    if patch.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut p = patch;
        p.shift_remove("$patch");
        *doc = Value::Object(p);
        return;
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let target = doc.as_object_mut().expect("just made an object");
    for (k, v) in patch {
        if k == "$retainKeys" || k == "$patch" || k.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(remove)) = (target.get_mut(field), &v) {
                list.retain(|x| !remove.contains(x));
            }
            continue;
        }
        match v {
            Value::Null => {
                target.shift_remove(&k);
            }
            Value::Array(items) => {
                let merged = match (target.get_mut(&k).map(Value::take), merge_key(&k, &items)) {
                    (Some(Value::Array(existing)), Some(key)) => Value::Array(merge_list(existing, items, key)),
                    (Some(Value::Array(existing)), None) if k == "finalizers" => {
                        let mut out = existing;
                        for i in items {
                            if !out.contains(&i) {
                                out.push(i);
                            }
                        }
                        Value::Array(out)
                    }
                    _ => Value::Array(items.into_iter().filter(|i| i.get("$patch").is_none()).collect()),
                };
                target.insert(k, merged);
            }
            Value::Object(_) => {
                let entry = target.entry(k.clone()).or_insert(Value::Null);
                if v.get("$patch").and_then(Value::as_str) == Some("delete") {
                    target.shift_remove(&k);
                } else {
                    strategic(entry, v, Some(&k));
                }
            }
            other => {
                target.insert(k, other);
            }
        }
    }
}

fn merge_list(mut existing: Vec<Value>, patch: Vec<Value>, key: &str) -> Vec<Value> {
    for item in patch {
        let id = item.get(key).cloned();
        let pos = existing.iter().position(|e| e.get(key) == id.as_ref());
        let directive = item.get("$patch").and_then(Value::as_str).map(str::to_string);
        match (pos, directive.as_deref()) {
            (Some(i), Some("delete")) => {
                existing.remove(i);
            }
            (None, Some("delete")) => {}
            (Some(i), _) => strategic(&mut existing[i], item, None),
            (None, _) => {
                let mut fresh = Value::Object(Map::new());
                strategic(&mut fresh, item, None);
                existing.push(fresh);
            }
        }
    }
    existing
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_merge_merges_containers_by_name_and_drops_directives() {
        let mut doc = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}, "metadata": {"labels": {"x": "1", "y": "2"}}});
        let patch = json!({"$setElementOrder/containers": [{"name": "a"}], "spec": {"containers": [{"name": "b", "image": "2"}, {"name": "a", "$patch": "delete"}]}, "metadata": {"labels": {"y": null, "z": "3"}}});
        apply(PatchType::Strategic, &mut doc, patch.to_string().as_bytes()).unwrap();
        assert_eq!(doc, json!({"spec": {"containers": [{"name": "b", "image": "2"}]}, "metadata": {"labels": {"x": "1", "z": "3"}}}));
    }

    #[test]
    fn merge_and_json_patches_apply() {
        let mut doc = json!({"a": {"b": 1}, "c": [1, 2]});
        apply(PatchType::Merge, &mut doc, br#"{"a":{"b":null,"d":2},"c":[3]}"#).unwrap();
        assert_eq!(doc, json!({"a": {"d": 2}, "c": [3]}));
        apply(PatchType::Json, &mut doc, br#"[{"op":"add","path":"/e","value":true}]"#).unwrap();
        assert_eq!(doc["e"], json!(true));
        let err = apply(PatchType::Json, &mut doc, br#"[{"op":"test","path":"/e","value":false}]"#).unwrap_err();
        assert_eq!(err.code, 422);
    }

    #[test]
    fn unknown_patch_types_are_unsupported_media() {
        assert_eq!(PatchType::from_content_type("text/plain").unwrap_err().code, 415);
        assert_eq!(PatchType::from_content_type("application/merge-patch+json; charset=utf-8").unwrap(), PatchType::Merge);
    }
}

//! The apiserver's write rules, between a request's body and what is stored:
//! what a create names and stamps, what an update keeps of the stored object,
//! when a delete's preconditions fail and how a finalized object is marked.
//! They read and return JSON values only: which revision a write gets, and
//! whether the object exists, are the store's.
//!
//! Invariants: the server owns `uid`, `resourceVersion`, `creationTimestamp`,
//! `deletionTimestamp`, `deletionGracePeriodSeconds` and `generation` — a
//! create sets them, an update keeps them from the stored object; a body
//! that is not a JSON object is refused before any rule reads it.

use serde_json::{Map, Value};

use crate::object::Obj;
use crate::resources::ResourceType;
use apimachinery::status::{ApiError, FieldError};

/// Preconditions of a delete (`DeleteOptions.preconditions`).
#[derive(Debug, Clone, Default)]
pub struct Preconditions {
    /// Required `metadata.uid`.
    pub uid: Option<String>,
    /// Required `metadata.resourceVersion`.
    pub resource_version: Option<String>,
}

/// The body of a create or an update, if it is a JSON object.
pub fn require_object(rt: &ResourceType, body: Value) -> Result<Value, ApiError> {
    match body {
        Value::Object(_) => Ok(body),
        _ => Err(ApiError::bad_request(format!("the body of the request was not a valid {} object", rt.kind))),
    }
}

/// What a create in `namespace` asks for, before the store looks: its name
/// (`generateName` completed), its namespace as the request's, and none of
/// the metadata the server owns. Returns the name and the object.
pub fn before_create(rt: &ResourceType, namespace: &str, body: Value) -> Result<(String, Value), ApiError> {
    let mut v = require_object(rt, body)?;
    let meta = metadata_mut(&mut v);
    let name = match meta.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None => match meta.get("generateName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            Some(prefix) => format!("{prefix}{}", random_suffix()),
            None => {
                return Err(ApiError::invalid(
                    &rt.group,
                    &rt.kind,
                    "",
                    &[FieldError::required("metadata.name", "name or generateName is required")],
                ));
            }
        },
    };
    if rt.namespaced {
        if let Some(ns) = meta.get("namespace").and_then(Value::as_str).filter(|ns| !ns.is_empty() && *ns != namespace) {
            return Err(ApiError::bad_request(format!(
                "the namespace of the provided object ({ns}) does not match the namespace sent on the request ({namespace})"
            )));
        }
        meta.insert("namespace".into(), namespace.into());
    } else {
        meta.shift_remove("namespace");
    }
    meta.insert("name".into(), name.clone().into());
    for k in ["uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generation"] {
        meta.shift_remove(k);
    }
    Ok((name, v))
}

/// A new object as stored at revision `rv`: a fresh uid, its
/// `resourceVersion`, `generation` 1 where it counts, its creation time
/// `now` (RFC 3339), and the defaults of namespaces and secrets.
pub fn created(rt: &ResourceType, mut v: Value, rv: u64, now: &str) -> Value {
    let meta = metadata_mut(&mut v);
    meta.insert("uid".into(), new_uid().into());
    meta.insert("resourceVersion".into(), rv.to_string().into());
    if v.get("spec").is_some() || !is_builtin_group(&rt.group) {
        metadata_mut(&mut v).insert("generation".into(), 1.into());
    }
    metadata_mut(&mut v).insert("creationTimestamp".into(), now.into());
    if rt.group.is_empty() && rt.plural == "namespaces" {
        // The namespace strategy: active, and finalized by the namespace controller.
        let finalizers = v.pointer_mut("/spec/finalizers").and_then(Value::as_array_mut);
        match finalizers {
            Some(f) if f.iter().any(|f| f == "kubernetes") => {}
            Some(f) => f.push("kubernetes".into()),
            None => {
                v["spec"] = serde_json::json!({"finalizers": ["kubernetes"]});
            }
        }
        v["status"] = serde_json::json!({"phase": "Active"});
    }
    if rt.group.is_empty() && rt.plural == "secrets" && v.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
        // `SetDefaults_Secret`.
        v["type"] = "Opaque".into();
    }
    v
}

/// The object an update of `existing` (PUT, or the last step of PATCH) to
/// `v` stores: refused if it renames the object or names another revision;
/// with `status_only` only its `status` changes, else everything but its
/// `status` (for resources with a status subresource); the metadata the
/// server owns as stored, `generation` bumped when `spec` changed; and
/// `existing`'s `resourceVersion`, so that a no-op is the stored item.
pub fn before_update(
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    mut v: Value,
    existing: &Obj,
    status_only: bool,
) -> Result<Value, ApiError> {
    let meta = metadata_mut(&mut v);
    match meta.get("name").and_then(Value::as_str) {
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!("the name of the object ({n}) does not match the name on the URL ({name})")));
        }
        _ => {}
    }
    if let Some(rv) = meta.get("resourceVersion").and_then(Value::as_str).filter(|rv| !rv.is_empty())
        && rv != existing.rv.to_string()
    {
        return Err(ApiError::stale(rt, name));
    }
    let old = existing.to_value();
    if rt.status_subresource {
        let keep_from = if status_only { &v } else { &old };
        let status = keep_from.get("status").cloned();
        let mut base = if status_only { old.clone() } else { v.clone() };
        match status {
            Some(s) => {
                base["status"] = s;
            }
            None => {
                if let Some(m) = base.as_object_mut() {
                    m.shift_remove("status");
                }
            }
        }
        v = base;
    }
    // Server-owned metadata comes from the stored object.
    let old_meta = old.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    let meta = metadata_mut(&mut v);
    meta.insert("name".into(), name.into());
    if rt.namespaced {
        meta.insert("namespace".into(), namespace.into());
    }
    for k in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"] {
        match old_meta.get(k) {
            Some(val) => meta.insert(k.into(), val.clone()),
            None => meta.shift_remove(k),
        };
    }
    meta.insert("resourceVersion".into(), existing.rv.to_string().into());
    if old.get("spec") != v.get("spec")
        && let Some(g) = old_meta.get("generation").and_then(Value::as_i64)
    {
        metadata_mut(&mut v).insert("generation".into(), (g + 1).into());
    }
    Ok(v)
}

/// The 409 of a delete whose preconditions `existing` does not meet.
pub fn check_preconditions(rt: &ResourceType, name: &str, pre: &Preconditions, existing: &Obj) -> Result<(), ApiError> {
    if let Some(uid) = pre.uid.as_deref().filter(|u| *u != existing.uid) {
        let why = format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", existing.uid);
        return Err(ApiError::conflict(rt, name, &why));
    }
    if let Some(rv) = pre.resource_version.as_deref().filter(|rv| *rv != existing.rv.to_string()) {
        let why = format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}", existing.rv);
        return Err(ApiError::conflict(rt, name, &why));
    }
    Ok(())
}

/// `existing`, with finalizers, marked for deletion at `now` as stored at revision `rv`.
pub fn marked_for_deletion(existing: &Obj, rv: u64, now: &str) -> Value {
    let mut v = existing.to_value();
    let meta = metadata_mut(&mut v);
    meta.insert("resourceVersion".into(), rv.to_string().into());
    meta.insert("deletionTimestamp".into(), now.into());
    meta.insert("deletionGracePeriodSeconds".into(), 0.into());
    v
}

/// Sets the `resourceVersion` of an object `v` (a JSON object).
pub fn set_resource_version(v: &mut Value, rv: u64) {
    metadata_mut(v).insert("resourceVersion".into(), rv.to_string().into());
}

fn metadata_mut(v: &mut Value) -> &mut Map<String, Value> {
    let top = v.as_object_mut().expect("checked by require_object");
    let meta = top.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().expect("just made an object")
}

/// Built-in groups are the core group and the `*.k8s.io`-less ones the table serves.
fn is_builtin_group(group: &str) -> bool {
    matches!(group, "" | "apps" | "batch") || group.ends_with(".k8s.io")
}

/// A random RFC 4122 version-4 UID.
fn new_uid() -> String {
    let b: [u8; 16] = rand::random();
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        u16::from_be_bytes([b[4], b[5]]),
        u16::from_be_bytes([b[6], b[7]]) & 0x0fff,
        (u16::from_be_bytes([b[8], b[9]]) & 0x3fff) | 0x8000,
        u64::from_be_bytes([0, 0, b[10], b[11], b[12], b[13], b[14], b[15]])
    )
}

/// The apiserver's `generateName` suffix: five characters from its alphabet.
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char).collect()
}

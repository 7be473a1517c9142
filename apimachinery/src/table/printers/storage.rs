//! Printers of the storage kinds: persistent volumes and claims, storage
//! and volume attributes classes, volume attachments, CSI drivers and nodes.

use serde_json::Value;

use super::super::{Cell, Row};
use super::{age, flag, items, name, row, str_at, text};

/// `helper.GetAccessModesAsString`: the short names in a fixed order, comma-joined.
fn access_modes(modes: &[Value]) -> String {
    let modes: Vec<&str> = modes.iter().filter_map(Value::as_str).collect();
    [("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP")]
        .iter()
        .filter(|(mode, _)| modes.contains(mode))
        .map(|(_, s)| *s)
        .collect::<Vec<_>>()
        .join(",")
}

/// `GetPersistentVolumeClass` / `GetPersistentVolumeClaimClass`: the beta annotation, else `spec.storageClassName`.
fn storage_class(o: &Value) -> &str {
    match str_at(o, &["metadata", "annotations", "volume.beta.kubernetes.io/storage-class"]) {
        "" => str_at(o, &["spec", "storageClassName"]),
        beta => beta,
    }
}

fn deleting(o: &Value) -> bool {
    o.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null())
}

fn or_unset(s: &str) -> String {
    if s.is_empty() { "<unset>".to_string() } else { s.to_string() }
}

/// A quantity as `Quantity.String()` writes it: the stored text (the
/// apiserver stores and writes canonical forms), `0` when absent.
fn quantity(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("0").to_string()
}

/// `printPersistentVolume`.
pub(super) fn persistentvolume(o: &Value, now: i64) -> Row {
    let claim = match o.pointer("/spec/claimRef").filter(|c| c.is_object()) {
        Some(c) => format!("{}/{}", str_at(c, &["namespace"]), str_at(c, &["name"])),
        None => String::new(),
    };
    let phase = if deleting(o) { "Terminating" } else { str_at(o, &["status", "phase"]) };
    row(vec![
        name(o),
        text(quantity(o.pointer("/spec/capacity/storage"))),
        text(access_modes(items(o, &["spec", "accessModes"]))),
        text(str_at(o, &["spec", "persistentVolumeReclaimPolicy"])),
        text(phase),
        text(claim),
        text(storage_class(o)),
        text(or_unset(str_at(o, &["spec", "volumeAttributesClassName"]))),
        text(str_at(o, &["status", "reason"])),
        age(o, now),
        text(or_unset(str_at(o, &["spec", "volumeMode"]))),
    ])
}

/// `printPersistentVolumeClaim`.
pub(super) fn persistentvolumeclaim(o: &Value, now: i64) -> Row {
    let phase = if deleting(o) { "Terminating" } else { str_at(o, &["status", "phase"]) };
    let volume = str_at(o, &["spec", "volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (str_at(o, &["status", "capacity", "storage"]).to_string(), access_modes(items(o, &["status", "accessModes"])))
    };
    row(vec![
        name(o),
        text(phase),
        text(volume),
        text(capacity),
        text(modes),
        text(storage_class(o)),
        text(or_unset(str_at(o, &["spec", "volumeAttributesClassName"]))),
        age(o, now),
        text(or_unset(str_at(o, &["spec", "volumeMode"]))),
    ])
}

/// `storageutil.IsDefaultAnnotation`.
fn default_class(o: &Value) -> bool {
    ["storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"]
        .iter()
        .any(|k| str_at(o, &["metadata", "annotations", k]) == "true")
}

/// `printStorageClass`.
pub(super) fn storageclass(o: &Value, now: i64) -> Row {
    let mut class = str_at(o, &["metadata", "name"]).to_string();
    if default_class(o) {
        class.push_str(" (default)");
    }
    let or = |key: &str, default: &str| match str_at(o, &[key]) {
        "" => default.to_string(),
        v => v.to_string(),
    };
    row(vec![
        text(class),
        text(str_at(o, &["provisioner"])),
        text(or("reclaimPolicy", "Delete")),
        text(or("volumeBindingMode", "Immediate")),
        flag(o, &["allowVolumeExpansion"], false),
        age(o, now),
    ])
}

/// `printVolumeAttributesClass`.
pub(super) fn volumeattributesclass(o: &Value, now: i64) -> Row {
    row(vec![name(o), text(str_at(o, &["driverName"])), age(o, now)])
}

/// `printVolumeAttachment`.
pub(super) fn volumeattachment(o: &Value, now: i64) -> Row {
    row(vec![
        name(o),
        text(str_at(o, &["spec", "attacher"])),
        text(str_at(o, &["spec", "source", "persistentVolumeName"])),
        text(str_at(o, &["spec", "nodeName"])),
        flag(o, &["status", "attached"], false),
        age(o, now),
    ])
}

/// `printCSIDriver`.
pub(super) fn csidriver(o: &Value, now: i64) -> Row {
    let tokens = match o.pointer("/spec/tokenRequests").and_then(Value::as_array) {
        Some(t) => t.iter().map(|t| str_at(t, &["audience"])).collect::<Vec<_>>().join(","),
        None => "<unset>".to_string(),
    };
    let modes = items(o, &["spec", "volumeLifecycleModes"]).iter().filter_map(Value::as_str).collect::<Vec<_>>().join(",");
    row(vec![
        name(o),
        flag(o, &["spec", "attachRequired"], true),
        flag(o, &["spec", "podInfoOnMount"], false),
        flag(o, &["spec", "storageCapacity"], false),
        text(tokens),
        flag(o, &["spec", "requiresRepublish"], false),
        text(if modes.is_empty() { "<none>".to_string() } else { modes }),
        age(o, now),
    ])
}

/// `printCSINode`.
pub(super) fn csinode(o: &Value, now: i64) -> Row {
    row(vec![name(o), Cell::Int(items(o, &["spec", "drivers"]).len() as i64), age(o, now)])
}

//! Printers of dynamic resource allocation (`resource.k8s.io`): resource
//! claims and resource slices (device classes and claim templates print
//! Name and Age).

use serde_json::Value;

use super::super::Row;
use super::{age, items, name, row, str_at, text};

/// `printResourceClaim` with `resourceClaimState`.
pub(super) fn resourceclaim(o: &Value, now: i64) -> Row {
    let deleted = o.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
    let mut states = Vec::new();
    if deleted {
        states.push("deleted");
    }
    match o.pointer("/status/allocation").filter(|a| !a.is_null()) {
        None if !deleted => states.push("pending"),
        None => {}
        Some(_) => {
            states.push("allocated");
            if !items(o, &["status", "reservedFor"]).is_empty() {
                states.push("reserved");
            }
        }
    }
    row(vec![name(o), text(states.join(",")), age(o, now)])
}

/// `printResourceSlice`.
pub(super) fn resourceslice(o: &Value, now: i64) -> Row {
    row(vec![
        name(o),
        text(str_at(o, &["spec", "nodeName"])),
        text(str_at(o, &["spec", "driver"])),
        text(str_at(o, &["spec", "pool", "name"])),
        age(o, now),
    ])
}

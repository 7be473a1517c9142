//! Printers of role bindings and cluster role bindings (`printRoleBinding`,
//! `printClusterRoleBinding`); roles and cluster roles get the default table.

use serde_json::Value;

use super::super::Row;
use super::{age, items, name, row, str_at, text};

/// Both bindings: the role, then (wide) the subjects by kind as `rbac.SubjectsStrings` lists them.
pub(super) fn binding(o: &Value, now: i64) -> Row {
    let (mut users, mut groups, mut accounts) = (Vec::new(), Vec::new(), Vec::new());
    for s in items(o, &["subjects"]) {
        let subject = str_at(s, &["name"]);
        match str_at(s, &["kind"]) {
            "ServiceAccount" => accounts.push(format!("{}/{subject}", str_at(s, &["namespace"]))),
            "User" => users.push(subject.to_string()),
            "Group" => groups.push(subject.to_string()),
            _ => {}
        }
    }
    row(vec![
        name(o),
        text(format!("{}/{}", str_at(o, &["roleRef", "kind"]), str_at(o, &["roleRef", "name"]))),
        age(o, now),
        text(users.join(", ")),
        text(groups.join(", ")),
        text(accounts.join(", ")),
    ])
}

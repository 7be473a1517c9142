//! Column definitions of the built-in printers, byte for byte as kube-apiserver 1.36 writes them
//! (taken from `tests/reference/apiserver-1.36/encodings/*/table.json` and
//! `tests/reference/apiserver-1.36/tables/*/table.json`), one file per API group or groups.
//!
//! Invariants: each constant is the JSON text of a Table's `columnDefinitions` (an array;
//! [`NAME`] and [`CUSTOM_AGE`] one definition), members in Go's order (`name`, `type`, `format`,
//! `description`, `priority`), each description the apiserver's, escaped as Go escapes it (`\n`,
//! `\"`, `\u003c`). They are written with `column!` at compile time, long descriptions in pieces
//! that concatenate to them.

/// One column definition's JSON text: `name`, `type`, `format`, `priority`, then the
/// description's JSON-escaped text in pieces that concatenate to it.
macro_rules! column {
    ($name:literal, $type:literal, $format:literal, $priority:literal, $($description:expr),+ $(,)?) => {
        concat!(
            r#"{"name":""#,
            $name,
            r#"","type":""#,
            $type,
            r#"","format":""#,
            $format,
            r#"","description":""#,
            $($description,)+
            r#"","priority":"#,
            $priority,
            "}"
        )
    };
}

/// A `columnDefinitions` array of the given definitions.
macro_rules! columns {
    ($first:expr $(, $rest:expr)* $(,)?) => {
        concat!("[", $first, $(",", $rest,)* "]")
    };
}

/// `ObjectMeta.name`'s description: the `Name` column's.
macro_rules! name_description {
    () => {
        concat!(
            r"Name must be unique within a namespace. Is required when creating resources, although some resources may allow a ",
            r"client to request the generation of an appropriate name automatically. Name is primarily intended for creation ",
            r"idempotence and configuration definition. Cannot be updated. More info: ",
            r"https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
        )
    };
}

/// `ObjectMeta.creationTimestamp`'s description: the `Age` and `Created At` columns'.
macro_rules! creation_timestamp_description {
    () => {
        concat!(
            r"CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to ",
            r"be set in happens-before order across separate operations. Clients may not set this value. It is represented in ",
            r"RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: ",
            r"https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
        )
    };
}

/// The `Name` column every table starts with.
macro_rules! name_column {
    () => {
        column!("Name", "string", "name", 0, name_description!())
    };
}

/// The `Age` column of the built-in printers.
macro_rules! age_column {
    () => {
        column!("Age", "string", "", 0, creation_timestamp_description!())
    };
}

mod apps;
mod cluster;
mod core_group;
mod networking;
mod storage;

pub use apps::*;
pub use cluster::*;
pub use core_group::*;
pub use networking::*;
pub use storage::*;

/// The `Name` column every table starts with.
pub const NAME: &str = name_column!();

/// The default table (`rest.NewDefaultTableConvertor`): `customresourcedefinitions` and other resources without a printer.
pub const CREATED_AT: &str = columns![name_column!(), column!("Created At", "date", "", 0, creation_timestamp_description!())];

/// The `Age` column of a custom resource whose CRD declares no printer columns
/// (`serveDefaultColumnsIfEmpty`): the creation timestamp, as a date.
pub const CUSTOM_AGE: &str = column!("Age", "date", "", 0, creation_timestamp_description!());

//! Tables (`as=Table`, `g=meta.k8s.io`, `v=v1` or `v1beta1`), what every
//! `kubectl get` asks for, as kube-apiserver's printers write them.
//!
//! Guarantees: a resource has a [`Printer`] only where its columns and cells
//! are the apiserver's, checked against the captures of a real 1.36
//! (`tests/reference/apiserver-1.36/encodings/*/table*.json`, and every
//! resource of `tests/reference/apiserver-1.36/tables/`): the built-in
//! printers ([`printer`]), a custom resource's from its CRD's
//! `additionalPrinterColumns` ([`crd_printer`]), and the default table
//! (Name, Created At) of the built-in kinds the apiserver registers no
//! printer for (CRDs, roles, cluster roles, limit ranges, CSI storage
//! capacities); every other resource has none, and its tables are left to
//! the apiserver. Rows keep the list's order, but where the apiserver's
//! printer sorts each page (flow schemas: by matching precedence, then
//! name; [`Printer::order_rows`]). Cells are
//! computed as the apiserver computes them at the moment of the request
//! (ages are relative to the `now` given); the server always prints the
//! wide columns (kubectl hides those of priority 1). Rows carry the object
//! as `includeObject` asks: its metadata only (`PartialObjectMetadata`, the
//! default), the whole object, or `null`. JSON strings are escaped as Go's
//! encoder escapes them (`<` is `\u003c`).

pub mod columns;
mod custom;
mod printers;

use std::borrow::Cow;
use std::sync::Arc;

use crate::partial::MetaVersion;
use bytes::Bytes;

pub use custom::crd_printer;

pub use crate::json::write_go_string;
pub use crate::time::{human_duration, parse_time, unix_now};

/// What each row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    /// `null`.
    None,
    /// The object's metadata as `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// The `includeObject` query parameter; `None` when its value is not one the apiserver knows.
    pub fn from_query(query: &str) -> Option<IncludeObject> {
        match form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "includeObject").map(|(_, v)| v.into_owned()).as_deref() {
            None | Some("") | Some("Metadata") => Some(IncludeObject::Metadata),
            Some("None") => Some(IncludeObject::None),
            Some("Object") => Some(IncludeObject::Object),
            Some(_) => None,
        }
    }
}

/// One cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    Str(String),
    Int(i64),
    /// JSON written as is: a number, `true`/`false` or `null`.
    Raw(String),
}

/// One row's cells, and the conditions some printers add (a finished pod's `Completed`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub cells: Vec<Cell>,
    pub conditions: Option<&'static str>,
}

/// A resource's printer: its column definitions and how an object becomes a row.
pub struct Printer {
    /// The `columnDefinitions` JSON array, as the apiserver writes it.
    pub columns: Cow<'static, str>,
    cells: Cells,
    /// The order the apiserver's printer gives a list's rows, when it is
    /// not the list's (flow schemas): a key per object (JSON).
    order: Option<OrderFn>,
    /// A table watch's every event carries the columns, not only its first.
    columns_on_every_event: bool,
}

/// A row's place among a list's rows, from its object (JSON).
type OrderFn = fn(&[u8]) -> RowOrder;

/// A key the rows of a list are sorted by: a number, then a name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowOrder(pub i64, pub String);

/// A built-in printer's row of an object (JSON) at a time (Unix seconds).
type RowFn = fn(&[u8], i64) -> Option<Row>;

/// How an object becomes a row.
enum Cells {
    /// A built-in printer.
    Builtin(RowFn),
    /// A custom resource's columns.
    Custom(Vec<custom::Column>),
}

impl std::fmt::Debug for Printer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer").finish_non_exhaustive()
    }
}

impl Printer {
    /// The row of the object `bytes` (JSON) at `now` (Unix seconds); `None`
    /// when the object does not read as the printer expects (a field of an
    /// unexpected type): its table is then the apiserver's to write.
    pub fn row(&self, bytes: &[u8], now: i64) -> Option<Row> {
        match &self.cells {
            Cells::Builtin(f) => f(bytes, now),
            Cells::Custom(cols) => custom::row(cols, bytes, now),
        }
    }

    /// Puts a list's `rows` in the order the apiserver's printer writes
    /// them (`object` gives each row's object, JSON); most keep the list's
    /// order, as given. The apiserver orders each page on its own.
    pub fn order_rows<T>(&self, rows: &mut [T], object: impl Fn(&T) -> &[u8]) {
        if let Some(order) = self.order {
            rows.sort_by_cached_key(|r| order(object(r)));
        }
    }

    fn builtin(columns: &'static str, cells: RowFn) -> Printer {
        Printer { columns: Cow::Borrowed(columns), cells: Cells::Builtin(cells), order: None, columns_on_every_event: false }
    }

    fn ordered(mut self, order: OrderFn) -> Printer {
        self.order = Some(order);
        self
    }

    fn with_columns_on_every_event(mut self) -> Printer {
        self.columns_on_every_event = true;
        self
    }

    fn custom(columns: String, cols: Vec<custom::Column>) -> Printer {
        Printer { columns: Cow::Owned(columns), cells: Cells::Custom(cols), order: None, columns_on_every_event: false }
    }
}

/// The printer of built-in resource `plural` of `group`, where kache has the apiserver's.
pub fn printer(group: &str, plural: &str) -> Option<Arc<Printer>> {
    printers::of(group, plural)
}

/// A Table as parts: `metadata` is its JSON `ListMeta` (a list's, or the
/// object's revision for a GET); each row's object is given as parts that
/// concatenate to it, or `None` for `null`.
pub fn json_table(
    version: MetaVersion,
    metadata: &str,
    printer: &Printer,
    rows: impl IntoIterator<Item = (Row, Option<Vec<Bytes>>)>,
) -> Vec<Bytes> {
    table_parts(version, metadata, &printer.columns, rows)
}

/// A watch event's object (`object`, a lone object's JSON) as the Table of
/// one row a table watch sends (an object of `res`, its metadata as
/// metadata-only answers carry it); `columns`: the stream's first event carries
/// the column definitions, every later one `null` (but for printers that
/// ignore `NoHeaders`). A bookmark's object is
/// printed as any other (the kind's empty object: a row of empty cells), and
/// the one ending the initial events carries its metadata even with
/// `includeObject=None`. `None` when the object does not read as the
/// printer expects.
pub fn json_watch_table(
    version: MetaVersion,
    printer: &Printer,
    include: IncludeObject,
    object: &Bytes,
    res: &crate::resource::Resource,
    columns: bool,
    now: i64,
) -> Option<Vec<Bytes>> {
    // Read here rather than with `meta::parse`: a bookmark's object has no name.
    #[derive(serde::Deserialize)]
    struct Object<'a> {
        #[serde(borrow)]
        metadata: &'a serde_json::value::RawValue,
    }
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "resourceVersion", borrow)]
        resource_version: Cow<'a, str>,
    }
    let raw = serde_json::from_slice::<Object>(object).ok()?.metadata.get();
    let revision = serde_json::from_str::<Meta>(raw).ok()?.resource_version;
    let row = printer.row(object, now)?;
    let metadata = match crate::meta::served_metadata(res, raw.as_bytes()) {
        Cow::Owned(served) => Bytes::from(served),
        Cow::Borrowed(_) => object.slice_ref(raw.as_bytes()),
    };
    let row_object = match include {
        IncludeObject::Object => Some(vec![object.clone()]),
        // The bookmark ending the initial events carries its metadata even when nothing was asked for (`asTable`).
        IncludeObject::None if !ends_initial_events(raw) => None,
        IncludeObject::Metadata | IncludeObject::None => Some(crate::partial::object_in(version, [metadata])),
    };
    let metadata = format!("{{\"resourceVersion\":\"{revision}\"}}");
    let columns = if columns || printer.columns_on_every_event { &printer.columns } else { "null" };
    Some(table_parts(version, &metadata, columns, [(row, row_object)]))
}

/// Whether `metadata` (an object's, as JSON) has the annotation
/// `k8s.io/initial-events-end: "true"` (`HasInitialEventsEndBookmarkAnnotation`).
fn ends_initial_events(metadata: &str) -> bool {
    const ANNOTATION: &str = "k8s.io/initial-events-end";
    metadata.contains(ANNOTATION)
        && serde_json::from_str::<serde_json::Value>(metadata)
            .is_ok_and(|m| m.pointer("/annotations").and_then(|a| a.get(ANNOTATION)).and_then(serde_json::Value::as_str) == Some("true"))
}

fn table_parts(
    version: MetaVersion,
    metadata: &str,
    columns: &str,
    rows: impl IntoIterator<Item = (Row, Option<Vec<Bytes>>)>,
) -> Vec<Bytes> {
    let api_version = version.api_version();
    let mut parts = vec![Bytes::from(format!(
        "{{\"kind\":\"Table\",\"apiVersion\":\"{api_version}\",\"metadata\":{metadata},\"columnDefinitions\":{columns},\"rows\":["
    ))];
    for (i, (row, object)) in rows.into_iter().enumerate() {
        let mut head = String::with_capacity(128);
        head.push_str(if i == 0 { "{\"cells\":[" } else { ",{\"cells\":[" });
        for (j, cell) in row.cells.iter().enumerate() {
            if j > 0 {
                head.push(',');
            }
            match cell {
                Cell::Str(s) => write_go_string(&mut head, s),
                Cell::Int(n) => head.push_str(&n.to_string()),
                Cell::Raw(json) => head.push_str(json),
            }
        }
        head.push(']');
        if let Some(c) = row.conditions {
            head.push_str(",\"conditions\":");
            head.push_str(c);
        }
        head.push_str(",\"object\":");
        match object {
            Some(object) => {
                parts.push(Bytes::from(head));
                parts.extend(object);
                parts.push(Bytes::from_static(b"}"));
            }
            None => {
                head.push_str("null}");
                parts.push(Bytes::from(head));
            }
        }
    }
    parts.push(Bytes::from_static(b"]}"));
    parts
}

#[cfg(test)]
mod captures;
#[cfg(test)]
mod tests;

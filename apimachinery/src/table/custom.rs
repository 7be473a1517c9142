//! Tables of custom resources as apiextensions-apiserver writes them (its
//! `tableconvertor`): `Name`, then the served version's
//! `additionalPrinterColumns` (or `Age` when it declares none), each cell
//! read with the column's JSONPath and typed as `cellForJSONValue` types it;
//! and the default table (`Name`, `Created At`) of resources that have no
//! printer of their own, such as `customresourcedefinitions`.
//!
//! Guarantees: only simple JSONPaths are read (`.a.b`, `.a[0].b`, as CRD
//! validation allows in practice); a CRD with any other path, or a value
//! this module would have to format differently from Go (a float outside
//! the range Go writes without an exponent, an object in a string column),
//! has no printer or no row, and its table is left to the apiserver.

use serde_json::Value;

use super::{Cell, Printer, Row, columns, write_go_string};
use crate::time::{parse_time, since};

/// How a column's value becomes a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    String,
    Integer,
    Number,
    Boolean,
    Date,
}

/// One step of a simple JSONPath.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// One custom column: where its value is and how it is typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    path: Vec<Step>,
    typ: Option<Type>,
}

/// `.a.b[0].c` as steps; `None` for anything else (filters, wildcards, quotes).
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    for segment in path.strip_prefix('.')?.split('.') {
        let (key, mut rest) = segment.split_once('[').map_or((segment, ""), |(k, r)| (k, r));
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return None;
        }
        steps.push(Step::Key(key.to_string()));
        while !rest.is_empty() {
            let (index, after) = rest.split_once(']')?;
            steps.push(Step::Index(index.parse().ok()?));
            rest = match after {
                "" => "",
                a => a.strip_prefix('[')?,
            };
        }
    }
    Some(steps)
}

fn lookup<'a>(v: &'a Value, path: &[Step]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, step| match step {
        Step::Key(k) => v.get(k),
        Step::Index(i) => v.get(i),
    })
}

/// A float as Go's `encoding/json` writes it, where that is also Rust's
/// shortest form (no exponent: 1e-6 <= |x| < 1e21, or zero).
fn go_json_float(f: f64) -> Option<String> {
    let a = f.abs();
    (f.is_finite() && (a == 0.0 || (1e-6..1e21).contains(&a))).then(|| format!("{f}"))
}

/// A value as the JSONPath printer prints it into a string column.
fn go_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        // fmt's %v of a float64: %g with the shortest precision, an exponent below 1e-4 or from 1e21.
        Value::Number(n) => n.as_f64().filter(|f| f.abs() == 0.0 || (1e-4..1e21).contains(&f.abs())).map(|f| format!("{f}")),
        _ => None,
    }
}

impl Column {
    /// The cell of `object` at `now`; `None` when it cannot be written as the apiserver would.
    fn cell(&self, object: &Value, now: i64) -> Option<Cell> {
        let Some(v) = lookup(object, &self.path).filter(|v| !v.is_null()) else { return Some(Cell::Raw("null".into())) };
        let null = || Some(Cell::Raw("null".into()));
        match self.typ {
            Some(Type::String) => go_text(v).map(Cell::Str),
            Some(Type::Integer) => match v {
                Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).map(Cell::Int),
                _ => null(),
            },
            Some(Type::Number) => match v {
                Value::Number(n) if n.is_i64() => Some(Cell::Raw(n.to_string())),
                Value::Number(n) => n.as_f64().and_then(go_json_float).map(Cell::Raw),
                _ => null(),
            },
            Some(Type::Boolean) => match v {
                Value::Bool(b) => Some(Cell::Raw(b.to_string())),
                _ => null(),
            },
            Some(Type::Date) => match v {
                Value::String(s) if parse_time(s).is_some() => Some(Cell::Str(since(Some(s), now))),
                Value::String(_) => Some(Cell::Str("<invalid>".into())),
                _ => null(),
            },
            None => null(),
        }
    }
}

/// The printer of a custom resource's `version` from its CRD (JSON); `None`
/// when the CRD does not serve that version or a column is beyond this module.
pub fn crd_printer(crd: &[u8], version: &str) -> Option<Printer> {
    let crd: Value = serde_json::from_slice(crd).ok()?;
    let v = crd.pointer("/spec/versions")?.as_array()?.iter().find(|v| v.get("name").and_then(Value::as_str) == Some(version))?;
    let declared = v.get("additionalPrinterColumns").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mut defs = String::from("[");
    defs.push_str(columns::NAME);
    let mut cols = Vec::new();
    if declared.is_empty() {
        // `serveDefaultColumnsIfEmpty`: Age, from the creation timestamp.
        defs.push(',');
        defs.push_str(columns::CUSTOM_AGE);
        cols.push(Column { path: parse_path(".metadata.creationTimestamp")?, typ: Some(Type::Date) });
    }
    for c in declared {
        let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
        let (name, typ, path) = (text("name"), text("type"), text("jsonPath"));
        let description = match text("description") {
            "" => format!("Custom resource definition column (in JSONPath format): {path}"),
            d => d.to_string(),
        };
        defs.push_str(",{\"name\":");
        write_go_string(&mut defs, name);
        defs.push_str(",\"type\":");
        write_go_string(&mut defs, typ);
        defs.push_str(",\"format\":");
        write_go_string(&mut defs, text("format"));
        defs.push_str(",\"description\":");
        write_go_string(&mut defs, &description);
        defs.push_str(&format!(",\"priority\":{}}}", c.get("priority").and_then(Value::as_i64).unwrap_or(0)));
        let typ = match typ {
            "string" => Some(Type::String),
            "integer" => Some(Type::Integer),
            "number" => Some(Type::Number),
            "boolean" => Some(Type::Boolean),
            "date" => Some(Type::Date),
            _ => None,
        };
        cols.push(Column { path: parse_path(path)?, typ });
    }
    defs.push(']');
    Some(Printer::custom(defs, cols))
}

/// The row of a custom resource.
pub(super) fn row(cols: &[Column], bytes: &[u8], now: i64) -> Option<Row> {
    let o: Value = serde_json::from_slice(bytes).ok()?;
    let name = o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let mut cells = vec![Cell::Str(name.to_string())];
    for c in cols {
        cells.push(c.cell(&o, now)?);
    }
    Some(Row { cells, conditions: None })
}

/// The default table's row: the name and the creation timestamp as written.
pub(super) fn created_at_row(bytes: &[u8], _now: i64) -> Option<Row> {
    #[derive(serde::Deserialize, Default)]
    #[serde(default, rename_all = "camelCase")]
    struct Meta {
        name: String,
        creation_timestamp: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Top {
        #[serde(default)]
        metadata: Meta,
    }
    let Top { metadata } = serde_json::from_slice(bytes).ok()?;
    // `Time.UTC().Format(time.RFC3339)`: the zero time for a kind's empty object (a bookmark's).
    let created = metadata.creation_timestamp.unwrap_or_else(|| "0001-01-01T00:00:00Z".to_string());
    Some(Row { cells: vec![Cell::Str(metadata.name), Cell::Str(created)], conditions: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_paths_parse_and_others_do_not() {
        assert_eq!(parse_path(".spec.size"), Some(vec![Step::Key("spec".into()), Step::Key("size".into())]));
        assert_eq!(parse_path(".a[2][0].b"), Some(vec![Step::Key("a".into()), Step::Index(2), Step::Index(0), Step::Key("b".into())]));
        for bad in ["spec", ".a[?(@.x==1)].b", ".a[*]", ".a..b", ".a['b']"] {
            assert_eq!(parse_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn values_are_typed_as_the_tableconvertor_types_them() {
        let o: Value = serde_json::json!({"s": "x", "i": 3, "f": 2.75, "b": true, "t": "1970-01-01T00:00:00Z", "obj": {}});
        let col = |path: &str, typ| Column { path: parse_path(path).unwrap(), typ: Some(typ) };
        assert_eq!(col(".i", Type::String).cell(&o, 0), Some(Cell::Str("3".into())));
        assert_eq!(col(".f", Type::Integer).cell(&o, 0), Some(Cell::Int(2)));
        assert_eq!(col(".i", Type::Number).cell(&o, 0), Some(Cell::Raw("3".into())));
        assert_eq!(col(".f", Type::Number).cell(&o, 0), Some(Cell::Raw("2.75".into())));
        assert_eq!(col(".s", Type::Boolean).cell(&o, 0), Some(Cell::Raw("null".into())));
        assert_eq!(col(".t", Type::Date).cell(&o, 120), Some(Cell::Str("2m".into())));
        assert_eq!(col(".s", Type::Date).cell(&o, 0), Some(Cell::Str("<invalid>".into())));
        assert_eq!(col(".missing", Type::String).cell(&o, 0), Some(Cell::Raw("null".into())));
        assert_eq!(col(".obj", Type::String).cell(&o, 0), None, "Go's map printing is left to the apiserver");
    }
}

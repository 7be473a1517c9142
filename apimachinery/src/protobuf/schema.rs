//! The protobuf schema of the built-in kinds kache serves: field numbers
//! and types read from `schema.txt` (generated from the Kubernetes `.proto`
//! files by `apimachinery/tools/proto-schema.py`), and what only the Go
//! types tell (`go.txt`): which fields Go writes even when they hold their
//! zero value, and which are embedded structs inlined in JSON.
//!
//! Guarantees: the tables are parsed once; every message a field names is
//! in the table (checked by a test); JSON keys find their field by name
//! compared without case and underscores (`podIPs` ~ `pod_i_ps`); `go.txt`
//! names a message by its name or a dotted suffix of it (`Event`,
//! `events.v1.Event`), and a test checks every name it holds resolves.

use std::collections::HashMap;
use std::sync::OnceLock;

/// A field's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `string`.
    String,
    /// `bytes` (base64 in JSON).
    Bytes,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `bool`.
    Bool,
    /// `double`.
    Double,
    /// A message, by index into [`Schema::messages`].
    Message(usize),
    /// `map<key, value>`.
    Map(Box<Kind>, Box<Kind>),
}

/// One field of a message.
#[derive(Debug)]
pub struct Field {
    /// Its name as prost writes it (`pod_i_ps`).
    pub name: &'static str,
    /// Its number.
    pub tag: u32,
    /// Its type.
    pub kind: Kind,
    /// `repeated`.
    pub repeated: bool,
    /// Go writes it even when it holds the zero value (a non-pointer
    /// scalar with `omitempty`, absent from JSON when zero).
    pub always: bool,
    /// An embedded struct whose fields JSON writes into the parent object.
    pub inline: bool,
}

/// One message.
#[derive(Debug)]
pub struct Message {
    /// Its full name, e.g. `api.core.v1.Pod`.
    pub name: &'static str,
    /// Its fields by number.
    pub fields: Vec<Field>,
    by_key: HashMap<String, usize>,
}

impl Message {
    /// The field a JSON key names.
    pub fn field(&self, json_key: &str) -> Option<&Field> {
        self.by_key.get(&normalize(json_key)).map(|&i| &self.fields[i])
    }
}

/// Every message of the table.
#[derive(Debug)]
pub struct Schema {
    /// The messages, in table order.
    pub messages: Vec<Message>,
    by_name: HashMap<&'static str, usize>,
    by_folded_name: HashMap<String, usize>,
}

impl Schema {
    /// The message with this full name.
    pub fn message(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The message with this full name compared without case: prost
    /// renamed some Kubernetes messages (`JSONSchemaProps` is
    /// `JsonSchemaProps`, `HTTPIngressPath` `HttpIngressPath`) and kept
    /// others (`APIService`, `IPAddress`). No two names of the table differ
    /// only in case (a test checks).
    pub fn message_ignoring_case(&self, name: &str) -> Option<usize> {
        self.message(name).or_else(|| self.by_folded_name.get(&name.to_ascii_lowercase()).copied())
    }
}

/// A name compared without case, `_`, `-` and `$`: JSON's `x-kubernetes-list-type` and
/// `$ref` (JSONSchemaProps) are prost's `x_kubernetes_list_type` and `ref`.
fn normalize(key: &str) -> String {
    key.chars().filter(|c| !matches!(c, '_' | '-' | '$')).map(|c| c.to_ascii_lowercase()).collect()
}

/// The schema, parsed on first use.
pub fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| parse(include_str!("schema.txt"), include_str!("go.txt")))
}

/// A message of the table as written: its name and (number, name, type) of each field.
type RawMessage = (&'static str, Vec<(u32, &'static str, &'static str)>);

fn parse(table: &'static str, go: &'static str) -> Schema {
    let mut raw: Vec<RawMessage> = Vec::new();
    for line in table.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        if let Some(name) = line.strip_prefix("M ") {
            raw.push((name, Vec::new()));
        } else if let (Some(last), [tag, name, kind]) = (raw.last_mut(), &line.split(' ').collect::<Vec<_>>()[..]) {
            last.1.push((tag.parse().expect("schema.txt: field number"), name, kind));
        }
    }
    let by_name: HashMap<&'static str, usize> = raw.iter().enumerate().map(|(i, (n, _))| (*n, i)).collect();
    // (what, message) -> JSON field names
    // (what, message name or dotted suffix of it) -> JSON field names
    let mut facts: Vec<(&str, String, Vec<&str>)> = Vec::new();
    for line in go.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let (Some(what), Some(message)) = (words.next(), words.next()) else { continue };
        facts.push((what, normalize(message), words.collect()));
    }
    let has = |what: &str, message: &str, field: &str| {
        let message = normalize(message);
        facts.iter().any(|(w, m, fs)| {
            *w == what && (message == *m || message.ends_with(&format!(".{m}"))) && fs.iter().any(|f| normalize(f) == normalize(field))
        })
    };
    let kind = |k: &str| -> Kind {
        match k {
            "string" => Kind::String,
            "bytes" => Kind::Bytes,
            "int32" => Kind::Int32,
            "int64" => Kind::Int64,
            "bool" => Kind::Bool,
            "double" => Kind::Double,
            m => Kind::Message(*by_name.get(m).unwrap_or_else(|| panic!("schema.txt: unknown message {m}"))),
        }
    };
    let messages = raw
        .iter()
        .map(|(name, raw_fields)| {
            let fields: Vec<Field> = raw_fields
                .iter()
                .map(|&(tag, fname, k)| {
                    let repeated = k.ends_with('*');
                    let k = k.trim_end_matches('*');
                    let kind = match k.strip_prefix("map:").and_then(|m| m.split_once(':')) {
                        Some((key, value)) => Kind::Map(Box::new(kind(key)), Box::new(kind(value))),
                        None => kind(k),
                    };
                    let (always, inline) = (has("always", name, fname), has("inline", name, fname));
                    Field { name: fname, tag, kind, repeated, always, inline }
                })
                .collect();
            let by_key = raw_fields.iter().enumerate().map(|(i, f)| (normalize(f.1), i)).collect();
            Message { name, fields, by_key }
        })
        .collect();
    let by_folded_name = raw.iter().enumerate().map(|(i, (n, _))| (n.to_ascii_lowercase(), i)).collect();
    Schema { messages, by_name, by_folded_name }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_names_resolve() {
        let s = schema();
        let pod = &s.messages[s.message("api.core.v1.Pod").unwrap()];
        let meta = pod.field("metadata").unwrap();
        assert_eq!(meta.tag, 1);
        let Kind::Message(m) = meta.kind else { panic!("metadata is a message") };
        let om = &s.messages[m];
        assert_eq!(om.name, "apimachinery.pkg.apis.meta.v1.ObjectMeta");
        assert_eq!(om.field("generateName").map(|f| (f.tag, f.always)), Some((2, true)));
        assert_eq!(om.field("deletionTimestamp").map(|f| f.always), Some(false));
        let status = &s.messages[s.message("api.core.v1.PodStatus").unwrap()];
        assert!(status.field("podIPs").is_some_and(|f| f.repeated), "podIPs ~ pod_i_ps");
        assert!(om.field("nope").is_none());
    }

    #[test]
    fn no_two_message_names_differ_only_in_case() {
        let s = schema();
        assert_eq!(s.by_folded_name.len(), s.messages.len());
        let props = s.message("apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaProps").expect("prost's name");
        let kubernetes = s.message_ignoring_case("apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps");
        assert_eq!(kubernetes, Some(props), "Kubernetes' name finds prost's");
    }

    #[test]
    fn every_fact_of_go_txt_names_a_field() {
        let s = schema();
        for line in include_str!("go.txt").lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
            let mut words = line.split_whitespace();
            let (what, message) = (words.next().unwrap(), normalize(words.next().unwrap()));
            let matching: Vec<&Message> =
                s.messages.iter().filter(|m| normalize(m.name) == message || normalize(m.name).ends_with(&format!(".{message}"))).collect();
            assert!(!matching.is_empty(), "go.txt: no message {message}");
            for field in words {
                for m in &matching {
                    let f = m.field(field).unwrap_or_else(|| panic!("go.txt: {} has no field {field}", m.name));
                    assert!(if what == "inline" { f.inline } else { f.always }, "{line}");
                }
            }
        }
    }
}

//! YAML as kube-apiserver writes it for `Accept: application/yaml`.
//!
//! The apiserver encodes an object to JSON, then converts that JSON with
//! `sigs.k8s.io/yaml.JSONToYAML` (v1.6.0): `yaml.Unmarshal` into an
//! `interface{}`, then `yaml.Marshal`, both from go.yaml.in/yaml/v2 v2.4.3
//! (gopkg.in/yaml.v2 v2.4.0, whose emitter is a Go port of libyaml). This
//! module is a port of that round trip for JSON input, and its output is the
//! same bytes.
//!
//! What it guarantees, for JSON that serde_json accepts:
//!
//! - values are typed as go-yaml types them when it reads the JSON: numbers
//!   from their text (`1.0` and `1e3` become the floats 1 and 1000, written
//!   `1` and `1000`; `0.000001` is written `1e-06`; integers beyond 64 bits
//!   become floats; `-0` is the integer 0), strings as YAML double-quoted
//!   scalars (see [`read_json`]);
//! - mapping keys in go-yaml's "natural" order, [`key_less`];
//! - strings plain unless YAML 1.1 would read them back as something else
//!   (`"yes"`, `"0755"`, `"1_000"`, `"2024-01-01T00:00:00Z"`, `"12:30"`,
//!   `""` ...), literal (`|`, `|-`, `|+`) when they contain `\n`, and then
//!   downgraded by libyaml's scalar analysis to single- or double-quoted
//!   (with its escapes; characters beyond the BMP are escaped as
//!   `\U0001F600`, and a string starting with U+FEFF is escaped entirely);
//! - plain, single- and double-quoted scalars folded at width 80, keys
//!   never; keys over 128 bytes or with line breaks written as `? key`;
//! - empty mappings and sequences as `{}` and `[]`; block sequences that
//!   are mapping values not indented; no `---`; a final line break.
//!
//! What it assumes, or where it differs:
//!
//! - [`write_document`] and [`write_entry`] take values as they are: a
//!   `serde_json::Value` parsed by serde_json has lost the text go-yaml would
//!   type (serde_json reads `-0` as the float -0, written `-0` where the
//!   apiserver writes `0`; it may round long floats differently). Read JSON
//!   with [`read_json`] for the apiserver's exact reading.
//! - Strings are valid UTF-8, so go-yaml's `!!binary` fallback for invalid
//!   UTF-8 never applies.
//! - Where [`key_less`] is not transitive (keys such as `x0a`, `x1`, `x01`),
//!   go-yaml's order depends on Go's random map iteration order; here it is
//!   one order among those go-yaml may produce.
//! - Errors: besides invalid JSON, [`from_json`] and [`read_json`] refuse
//!   what go-yaml refuses in JSON (see [`read_json`]); JSON nested deeper
//!   than 128 levels is refused (serde_json's limit) where go-yaml allows
//!   10,000.
//!
//! Streaming a list: with `items` non-empty and the other keys split into
//! those ordered before and after `items`, the document is
//! `write_document(before)`, then `items:\n`, then [`write_entry`] of each
//! item, then `write_document(after)`.

mod emitter;
mod read;
mod resolve;
mod scalar;
mod sort;
#[cfg(test)]
mod tests;

use serde_json::Value;

/// JSONToYAML of one JSON document (what the apiserver writes for
/// `Accept: application/yaml`).
pub fn from_json(json: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    let value = read_json(json)?;
    let mut out = Vec::with_capacity(json.len());
    write_document(&value, &mut out);
    Ok(out)
}

/// One JSON document as go-yaml v2 reads it when it parses the JSON text as
/// YAML: numbers typed from their text, strings read as YAML double-quoted
/// scalars (raw U+0085, U+2028 and U+2029 are line breaks and fold), and an
/// error wherever go-yaml fails: the escape `\/`, escaped surrogates, raw
/// U+007F to U+009F but U+0085, U+FFFE or U+FFFF in a string, a key longer
/// than about 1024 characters or spanning lines, a tab before the root value.
pub fn read_json(json: &[u8]) -> Result<Value, serde_json::Error> {
    read::read(json)
}

/// The YAML of `v` as a whole document, appended to `out`.
pub fn write_document(v: &Value, out: &mut Vec<u8>) {
    emitter::Emitter::new(out).document(v);
}

/// The YAML of `v` as one entry of a block sequence that is the value of a
/// top-level mapping key (so written at column 0: "- " then the value,
/// continuation lines indented by 2), appended to `out`. A list document
/// `{k1: .., items: [a, b], k2: ..}` is then streamed as
/// `write_document({k1:..}) + "items:\n" + write_entry(a) + write_entry(b) + write_document({k2:..})`
/// when `items` is non-empty (keys in [`key_less`] order).
pub fn write_entry(v: &Value, out: &mut Vec<u8>) {
    emitter::Emitter::new(out).entry(v);
}

/// go-yaml v2's map key order (`sorter.go` `keyList.Less` for string keys).
pub fn key_less(a: &str, b: &str) -> bool {
    sort::key_less(a, b)
}

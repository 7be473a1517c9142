//! JSON as Go's `encoding/json` writes what an audit event embeds: a
//! decoded body re-encoded (`go_json`), or a body kept as it came, as a raw
//! message (`compact`).
//!
//! Invariant: strings are escaped as Go escapes them (`<`, `>`, `&`,
//! U+2028 and U+2029 too), and objects keep their keys' order.

use apimachinery::json::write_go_string;
use serde_json::Value;

/// `v` as Go's `encoding/json` writes it (objects in their order).
pub fn go_json(s: &mut String, v: &Value) {
    match v {
        Value::Null => s.push_str("null"),
        Value::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => s.push_str(&n.to_string()),
        Value::String(t) => write_go_string(s, t),
        Value::Array(items) => {
            s.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                go_json(s, item);
            }
            s.push(']');
        }
        Value::Object(m) => {
            s.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                write_go_string(s, k);
                s.push(':');
                go_json(s, item);
            }
            s.push('}');
        }
    }
}

/// A JSON document as Go's `encoding/json` embeds a raw message: whitespace
/// outside strings dropped, `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub fn compact(src: &[u8]) -> String {
    let mut out = Vec::with_capacity(src.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                b'<' | b'>' | b'&' => {
                    out.extend_from_slice(format!("\\u{:04x}", c).as_bytes());
                    i += 1;
                    continue;
                }
                0xE2 if src.get(i + 1) == Some(&0x80) && matches!(src.get(i + 2), Some(0xA8 | 0xA9)) => {
                    out.extend_from_slice(if src[i + 2] == 0xA8 { b"\\u2028" } else { b"\\u2029" });
                    i += 3;
                    continue;
                }
                _ => {}
            }
            out.push(c);
        } else if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            in_string = c == b'"';
            out.push(c);
        }
        i += 1;
    }
    // Only ASCII was added or dropped, and only outside multi-byte sequences: UTF-8 in, UTF-8 out.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_compacted_and_escaped_as_go_embeds_them() {
        let body = "{\n  \"a\": \"x <b> & \u{2028} \\\" y é\",\n  \"n\": [1, 2]\n}\n";
        assert_eq!(compact(body.as_bytes()), r#"{"a":"x \u003cb\u003e \u0026 \u2028 \" y é","n":[1,2]}"#);
    }
}

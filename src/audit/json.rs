//! JSON as Go's `encoding/json` writes what an audit event embeds: a
//! decoded body re-encoded (`go_json`), or a body kept as it came, as a raw
//! message (`compact`); and the event's own addresses and times, written
//! without the formatting machinery (they are in every event).
//!
//! Invariant: strings are escaped as Go escapes them (`<`, `>`, `&`,
//! U+2028 and U+2029 too), and objects keep their keys' order.

use std::cell::RefCell;
use std::fmt::Write;
use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use apimachinery::json::write_go_string;
use serde_json::Value;

/// `v` as Go's `encoding/json` writes it (objects in their order).
pub(crate) fn go_json(s: &mut String, v: &Value) {
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

/// `ips` as strings, each quoted and after a comma but the first.
pub(crate) fn ip_strings(s: &mut String, ips: &[IpAddr]) {
    for (i, ip) in ips.iter().enumerate() {
        s.push_str(if i == 0 { "\"" } else { ",\"" });
        match ip {
            IpAddr::V4(v4) => {
                for (j, octet) in v4.octets().into_iter().enumerate() {
                    if j > 0 {
                        s.push('.');
                    }
                    push_u8(s, octet);
                }
            }
            IpAddr::V6(v6) => drop(write!(s, "{v6}")),
        }
        s.push('"');
    }
}

/// `n` in decimal.
fn push_u8(s: &mut String, n: u8) {
    if n >= 100 {
        s.push(char::from(b'0' + n / 100));
    }
    if n >= 10 {
        s.push(char::from(b'0' + n / 10 % 10));
    }
    s.push(char::from(b'0' + n % 10));
}

/// `t` as `metav1.MicroTime` writes it, quoted: `"2006-01-02T15:04:05.000000Z"`.
pub(crate) fn micro_time(s: &mut String, t: SystemTime) {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    SECOND.with_borrow_mut(|(secs, text)| {
        // Events come many a second: the date and time of day are written once for each.
        if *secs != since.as_secs() || text.is_empty() {
            *secs = since.as_secs();
            text.clear();
            let _ = write!(text, "{}", humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(*secs)));
            text.pop(); // Its `Z`.
        }
        s.push('"');
        s.push_str(text);
        let micros = since.subsec_micros();
        s.push('.');
        for digit in (0..6).rev().map(|i| micros / 10u32.pow(i) % 10) {
            s.push(char::from(b'0' + digit as u8));
        }
        s.push_str("Z\"");
    });
}

thread_local! {
    /// The second last written by [`micro_time`] on this thread, and its text up to the fraction.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((0, String::new())) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_compacted_and_escaped_as_go_embeds_them() {
        let body = "{\n  \"a\": \"x <b> & \u{2028} \\\" y é\",\n  \"n\": [1, 2]\n}\n";
        assert_eq!(compact(body.as_bytes()), r#"{"a":"x \u003cb\u003e \u0026 \u2028 \" y é","n":[1,2]}"#);
    }

    #[test]
    fn addresses_are_written_as_go_writes_them() {
        let mut s = String::new();
        let ips: [IpAddr; 4] =
            ["10.0.0.9".parse().unwrap(), "0.1.20.255".parse().unwrap(), "2001:db8::1".parse().unwrap(), "127.0.0.1".parse().unwrap()];
        ip_strings(&mut s, &ips);
        assert_eq!(s, r#""10.0.0.9","0.1.20.255","2001:db8::1","127.0.0.1""#);
    }
}

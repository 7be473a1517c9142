//! JSON documents as the apiserver writes them. A compact body is Go's
//! `json.Encoder` output: the value, then a newline ([`END`]). An indented
//! one (`pretty`) is `json.MarshalIndent(v, "", "  ")`: the compact bytes
//! re-spaced by `json.Indent`, with no newline after.
//!
//! Guarantees: [`Indenter`] is `json.Indent`'s algorithm byte for byte —
//! string contents (escapes included) are copied untouched, whitespace
//! outside strings is dropped, `: ` after keys, one element per line, two
//! spaces per level, and empty objects and arrays stay `{}` and `[]`. It
//! works on a document fed in any pieces, so a large list is indented as
//! it streams.

/// What ends a compact JSON body.
pub const END: &[u8] = b"\n";

/// Go's `json.Indent` over a document fed in pieces.
#[derive(Debug, Clone, Default)]
pub struct Indenter {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// An object or array was opened; its first element decides whether it
    /// is empty (`{}`) or gets a new line.
    need_indent: bool,
}

impl Indenter {
    /// Appends the indented form of `src`, the next piece of the document, to `dst`.
    pub fn feed(&mut self, src: &[u8], dst: &mut Vec<u8>) {
        dst.reserve(src.len() + src.len() / 2);
        for &c in src {
            if self.in_string {
                dst.push(c);
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                continue;
            }
            if self.need_indent && c != b'}' && c != b']' {
                self.need_indent = false;
                self.depth += 1;
                self.newline(dst);
            }
            match c {
                b'"' => {
                    self.in_string = true;
                    dst.push(c);
                }
                b'{' | b'[' => {
                    self.need_indent = true;
                    dst.push(c);
                }
                b',' => {
                    dst.push(c);
                    self.newline(dst);
                }
                b':' => dst.extend_from_slice(b": "),
                b'}' | b']' => {
                    if self.need_indent {
                        self.need_indent = false;
                    } else {
                        self.depth = self.depth.saturating_sub(1);
                        self.newline(dst);
                    }
                    dst.push(c);
                }
                _ => dst.push(c),
            }
        }
    }

    fn newline(&self, dst: &mut Vec<u8>) {
        dst.push(b'\n');
        for _ in 0..self.depth {
            dst.extend_from_slice(b"  ");
        }
    }
}

/// The indented form of one whole compact document.
pub fn indent(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len() * 3 / 2);
    Indenter::default().feed(src, &mut out);
    out
}

/// The bytes [`write_go_string`] stops at: controls, `"`, `\`, `<`, `>`, `&`, and 0xE2 (which begins U+2028 and U+2029).
const GO_ESCAPES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    let others = [b'"', b'\\', b'<', b'>', b'&', 0xE2];
    let mut i = 0;
    while i < others.len() {
        table[others[i] as usize] = true;
        i += 1;
    }
    table
};

/// Appends `s` as a JSON string the way Go's `encoding/json` writes it.
pub fn write_go_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    write_go_escaped(out, s);
    out.push('"');
}

/// Appends `s` as the inside of a JSON string the way Go's `encoding/json`
/// writes it (its escapes, no quotes): a string written in pieces.
pub fn write_go_escaped(out: &mut String, s: &str) {
    // Runs of characters written as they are, copied whole; only what Go escapes is written one by one
    // (U+2028 and U+2029 are the only escaped characters that are not ASCII, and start with 0xE2).
    let mut rest = s;
    while let Some(at) = rest.bytes().position(|b| GO_ESCAPES[usize::from(b)]) {
        out.push_str(&rest[..at]);
        let c = rest[at..].chars().next().unwrap_or_default();
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // As Go 1.22 and later write them (kube-apiserver 1.36.2 is built with Go 1.26).
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => write_u_escape(out, c),
            c if (c as u32) < 0x20 => write_u_escape(out, c),
            c => out.push(c),
        }
        rest = &rest[at + c.len_utf8()..];
    }
    out.push_str(rest);
}

/// `\uXXXX` for `c` (a character of the Basic Multilingual Plane), as Go writes it: lower-case hex.
fn write_u_escape(out: &mut String, c: char) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let v = c as u32;
    out.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        out.push(char::from(HEX[((v >> shift) & 0xf) as usize]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_go_escapes_them() {
        let mut s = String::new();
        write_go_string(&mut s, "plain é € \u{2029} <a&b> \"\\\u{7}\u{8}\u{c}\u{1f}\n");
        assert_eq!(s, r#""plain é € \u2029 \u003ca\u0026b\u003e \"\\\u0007\b\f\u001f\n""#);
    }

    #[test]
    fn indents_as_go_does() {
        let src = br#"{"a":[],"b":{},"c":[1,{"d":"x, y: {z}","e":null}],"f":"q\"{,"}"#;
        let want = "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": \"x, y: {z}\",\n      \"e\": null\n    }\n  ],\n  \"f\": \"q\\\"{,\"\n}";
        assert_eq!(String::from_utf8(indent(src)).unwrap(), want);
    }

    #[test]
    fn pieces_indent_like_the_whole() {
        let src = br#"{"kind":"List","items":[{"s":"a\\\"b"},{"t":[true,false]}],"m":{"k":"v"}}"#;
        let whole = indent(src);
        for cut in 0..src.len() {
            let mut ind = Indenter::default();
            let mut out = Vec::new();
            ind.feed(&src[..cut], &mut out);
            ind.feed(&src[cut..], &mut out);
            assert_eq!(out, whole, "cut at {cut}");
        }
    }

    #[test]
    fn the_captured_pretty_pod_is_its_compact_form_indented() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/reference/apiserver-1.36/encodings");
        let compact = std::fs::read(format!("{dir}/pods/get.json")).unwrap();
        let pretty = std::fs::read(format!("{dir}/negotiation/pods-get-pretty.json")).unwrap();
        assert_eq!(compact.last(), Some(&b'\n'), "compact bodies end with a newline");
        assert_eq!(indent(&compact[..compact.len() - 1]), pretty);
    }
}

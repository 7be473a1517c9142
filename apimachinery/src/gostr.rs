//! Strings as the apiserver's Go code prints them, for error messages that
//! must match kube-apiserver byte for byte.
//!
//! - [`quote`] is `strconv.Quote`, i.e. `fmt`'s `%q` of a string: printable
//!   characters as they are, `"` and `\` escaped, `\a \b \f \n \r \t \v`,
//!   other bytes below 0x20 and 0x7f as `\xNN`, other non-printable
//!   characters as `\uNNNN` or `\UNNNNNNNN`.
//! - [`quote_byte`] is `encoding/json`'s `quoteChar`: how a JSON syntax error
//!   names the offending byte (`'x'`, `'\''`, `'"'`, `'\u0081'`).
//!
//! Go's `unicode.IsPrint` is approximated: controls, separators other than
//! the ASCII space, format characters, private-use characters and
//! noncharacters are not printable; unassigned code points are not known
//! here and print as themselves.

/// Go's `strconv.Quote(s)` (`%q`).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        push_escaped(&mut out, c, '"');
    }
    out.push('"');
    out
}

/// `encoding/json`'s `quoteChar(c)`: a byte of the input as a quoted rune.
pub fn quote_byte(b: u8) -> String {
    match b {
        b'\'' => "'\\''".into(),
        b'"' => "'\"'".into(),
        _ => {
            let mut out = String::from("'");
            // Go converts the byte to the rune with the same value.
            push_escaped(&mut out, char::from(b), '"');
            out.push('\'');
            out
        }
    }
}

fn push_escaped(out: &mut String, c: char, quote: char) {
    match c {
        _ if c == quote || c == '\\' => {
            out.push('\\');
            out.push(c);
        }
        _ if is_print(c) => out.push(c),
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        _ if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
        _ if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        _ => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

/// An approximation of Go's `unicode.IsPrint` (see the module documentation).
fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    const FORMAT: &[(u32, u32)] = &[
        (0xad, 0xad),
        (0x600, 0x605),
        (0x61c, 0x61c),
        (0x6dd, 0x6dd),
        (0x70f, 0x70f),
        (0x890, 0x891),
        (0x8e2, 0x8e2),
        (0x180e, 0x180e),
        (0x200b, 0x200f),
        (0x202a, 0x202e),
        (0x2060, 0x2064),
        (0x2066, 0x206f),
        (0xfeff, 0xfeff),
        (0xfff9, 0xfffb),
        (0x110bd, 0x110bd),
        (0x110cd, 0x110cd),
        (0x13430, 0x1343f),
        (0x1bca0, 0x1bca3),
        (0x1d173, 0x1d17a),
        (0xe0001, 0xe0001),
        (0xe0020, 0xe007f),
    ];
    let private_use = (0xe000..=0xf8ff).contains(&u) || u >= 0xf0000;
    let noncharacter = (0xfdd0..=0xfdef).contains(&u) || (u & 0xfffe) == 0xfffe;
    !(private_use || noncharacter || FORMAT.iter().any(|&(lo, hi)| (lo..=hi).contains(&u)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_quoted_as_strconv_quote_does() {
        assert_eq!(quote(""), "\"\"");
        assert_eq!(quote("a b"), "\"a b\"");
        assert_eq!(quote("\u{7}\u{8}\u{c}\n\r\t\u{b}"), "\"\\a\\b\\f\\n\\r\\t\\v\"");
        assert_eq!(quote("x\u{1}\u{7f}"), "\"x\\x01\\x7f\"");
        assert_eq!(quote("日本\u{a0}"), "\"日本\\u00a0\"");
        assert_eq!(quote("\u{e000}\u{feff}\u{10ffff}"), "\"\\ue000\\ufeff\\U0010ffff\"");
        assert_eq!(quote("\"\\"), "\"\\\"\\\\\"");
    }

    #[test]
    fn bytes_are_quoted_as_json_quote_char_does() {
        assert_eq!(quote_byte(b'x'), "'x'");
        assert_eq!(quote_byte(b'\''), "'\\''");
        assert_eq!(quote_byte(b'"'), "'\"'");
        assert_eq!(quote_byte(b'\\'), "'\\\\'");
        assert_eq!(quote_byte(0x81), "'\\u0081'");
        assert_eq!(quote_byte(0x01), "'\\x01'");
        assert_eq!(quote_byte(0xe9), "'é'");
    }
}

//! JSON read the way `JSONToYAML` reads it: go-yaml v2 parses the JSON text
//! as YAML flow content (`readerc.go`, `scannerc.go`) and types its scalars
//! by YAML 1.1 resolution (`resolve.go`, `decode.go`).
//!
//! serde_json first checks that the input is JSON (so errors name the line
//! and column, and nesting deeper than 128 levels is refused), then the text
//! is read again here as go-yaml reads it:
//!
//! - numbers are typed from their text by [`resolve::json_number`];
//! - strings are YAML double-quoted scalars: the escape `\/` and escapes of
//!   surrogates (`\ud83d\ude00`) are errors; raw U+0085, U+2028 and U+2029
//!   are line breaks, folded with the spaces around them as YAML folds a
//!   multi-line quoted scalar (a lone U+0085 becomes a space); `---` or
//!   `...` and a blank right after such a break end the document (an error);
//!   raw U+007F, U+0080 to U+009F (but U+0085), U+FFFE and U+FFFF are
//!   "control characters" go-yaml refuses;
//! - an object key is a YAML simple key, so it must be on one line and its
//!   `:` at most 1024 characters after its opening quote;
//! - a tab before the root value, or after a line break that follows it, is
//!   not whitespace in block context;
//! - of duplicate keys the last wins.

use serde::de::{Error as _, IgnoredAny};
use serde_json::{Error, Map, Value};

use super::resolve;

pub(super) fn read(json: &[u8]) -> Result<Value, Error> {
    serde_json::from_slice::<IgnoredAny>(json)?;
    let text = std::str::from_utf8(json).map_err(|e| Error::custom(format_args!("invalid UTF-8 at byte {}", e.valid_up_to())))?;
    let mut reader = Reader { s: text, pos: 0, line: 0 };
    reader.skip_space();
    let start = reader.pos;
    let value = reader.value()?;
    let end = reader.pos;
    let tab_after_break = text[end..].find(['\n', '\r']).and_then(|b| text[end + b..].find('\t').map(|t| end + b + t));
    match text[..start].find('\t').or(tab_after_break) {
        Some(at) => Err(yaml_error("found character that cannot start any token (a tab in block context)", at)),
        None => Ok(value),
    }
}

fn yaml_error(problem: &str, pos: usize) -> Error {
    Error::custom(format_args!("yaml: {problem} (at byte {pos})"))
}

struct Reader<'a> {
    s: &'a str,
    pos: usize,
    /// Line breaks seen, as go-yaml's scanner counts lines.
    line: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> u8 {
        self.s.as_bytes().get(self.pos).copied().unwrap_or(0)
    }

    fn peek_char(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }

    fn malformed(&self) -> Error {
        Error::custom(format_args!("invalid JSON at byte {}", self.pos))
    }

    fn expect(&mut self, b: u8) -> Result<(), Error> {
        if self.peek() != b {
            return Err(self.malformed());
        }
        self.pos += 1;
        Ok(())
    }

    fn skip_space(&mut self) {
        while let Some(&b) = self.s.as_bytes().get(self.pos) {
            match b {
                b' ' | b'\t' => {}
                b'\n' | b'\r' => self.line += 1,
                _ => break,
            }
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Result<Value, Error> {
        match self.peek() {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string().map(Value::String),
            b't' => self.word("true", Value::Bool(true)),
            b'f' => self.word("false", Value::Bool(false)),
            b'n' => self.word("null", Value::Null),
            _ => Ok(self.number()),
        }
    }

    fn word(&mut self, word: &str, value: Value) -> Result<Value, Error> {
        if !self.s[self.pos..].starts_with(word) {
            return Err(self.malformed());
        }
        self.pos += word.len();
        Ok(value)
    }

    fn number(&mut self) -> Value {
        let start = self.pos;
        while matches!(self.peek(), b'-' | b'+' | b'.' | b'0'..=b'9' | b'e' | b'E') {
            self.pos += 1;
        }
        resolve::json_number(&self.s[start..self.pos])
    }

    fn array(&mut self) -> Result<Value, Error> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.peek() == b']' {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_space();
            match self.peek() {
                b',' => self.pos += 1,
                b']' => break,
                _ => return Err(self.malformed()),
            }
            self.skip_space();
        }
        self.pos += 1;
        Ok(Value::Array(items))
    }

    fn object(&mut self) -> Result<Value, Error> {
        self.pos += 1;
        let mut map = Map::new();
        self.skip_space();
        if self.peek() == b'}' {
            self.pos += 1;
            return Ok(Value::Object(map));
        }
        loop {
            let (start, line) = (self.pos, self.line);
            let key = self.string()?;
            self.skip_space();
            // The scanner's `yaml_simple_key_is_valid` when it meets the `:`.
            if self.line != line || self.s[start..self.pos].chars().count() > 1024 {
                return Err(yaml_error(
                    "did not find expected ',' or '}' (a key must be on one line, its ':' at most 1024 characters on)",
                    start,
                ));
            }
            self.expect(b':')?;
            self.skip_space();
            let value = self.value()?;
            map.insert(key, value);
            self.skip_space();
            match self.peek() {
                b',' => self.pos += 1,
                b'}' => break,
                _ => return Err(self.malformed()),
            }
            self.skip_space();
        }
        self.pos += 1;
        Ok(Value::Object(map))
    }

    /// A string as `yaml_parser_scan_flow_scalar` reads a double-quoted
    /// scalar.
    fn string(&mut self) -> Result<String, Error> {
        self.expect(b'"')?;
        if let Some(text) = self.verbatim() {
            self.pos += text.len() + 1;
            return Ok(text.to_owned());
        }
        let mut s = String::new();
        let mut leading_break = "";
        let mut trailing_breaks = String::new();
        let mut at_line_start = false;
        loop {
            if at_line_start && self.at_document_indicator() {
                return Err(yaml_error("found unexpected document indicator", self.pos));
            }
            self.non_blanks(&mut s)?;
            if self.peek() == b'"' {
                break;
            }
            let mut whitespaces = 0;
            let mut leading_blanks = false;
            while let Some(c) = self.peek_char() {
                if c == ' ' {
                    whitespaces += usize::from(!leading_blanks);
                    at_line_start = false;
                } else if let Some(folded) = line_break(c) {
                    if leading_blanks {
                        trailing_breaks.push_str(folded);
                    } else {
                        (whitespaces, leading_break, leading_blanks) = (0, folded, true);
                    }
                    self.line += 1;
                    at_line_start = true;
                } else {
                    break;
                }
                self.pos += c.len_utf8();
            }
            if !leading_blanks {
                s.extend(std::iter::repeat_n(' ', whitespaces));
            } else if leading_break == "\n" && trailing_breaks.is_empty() {
                s.push(' ');
            } else {
                if leading_break != "\n" {
                    s.push_str(leading_break);
                }
                s.push_str(&trailing_breaks);
                trailing_breaks.clear();
            }
        }
        self.pos += 1;
        Ok(s)
    }

    /// The string's content up to its closing quote when it reads as it is
    /// written: no escapes, no line breaks, no refused characters.
    fn verbatim(&self) -> Option<&'a str> {
        let rest = &self.s[self.pos..];
        let mut i = 0;
        loop {
            match *rest.as_bytes().get(i)? {
                b'"' => return Some(&rest[..i]),
                b'\\' | 0x7f => return None,
                0..=0x7e => i += 1,
                _ => {
                    let c = rest[i..].chars().next()?;
                    if line_break(c).is_some() || !yaml_readable(c) {
                        return None;
                    }
                    i += c.len_utf8();
                }
            }
        }
    }

    /// Characters up to a space, a line break or the closing quote.
    fn non_blanks(&mut self, s: &mut String) -> Result<(), Error> {
        loop {
            let c = self.peek_char().ok_or_else(|| self.malformed())?;
            if c == '"' || c == ' ' || line_break(c).is_some() {
                return Ok(());
            }
            if c == '\\' {
                s.push(self.escape()?);
            } else if yaml_readable(c) {
                s.push(c);
                self.pos += c.len_utf8();
            } else {
                return Err(yaml_error("control characters are not allowed", self.pos));
            }
        }
    }

    /// JSON's escapes as YAML reads them: all but `\/`, and no surrogates.
    fn escape(&mut self) -> Result<char, Error> {
        let at = self.pos;
        let code = self.s.as_bytes().get(at + 1).copied();
        self.pos += 2;
        Ok(match code {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let hex = self.s.get(self.pos..self.pos + 4).ok_or_else(|| self.malformed())?;
                let code = u32::from_str_radix(hex, 16).map_err(|_| self.malformed())?;
                self.pos += 4;
                char::from_u32(code).ok_or_else(|| yaml_error("found invalid Unicode character escape code", at))?
            }
            _ => return Err(yaml_error("found unknown escape character", at)),
        })
    }

    /// `---` or `...` then a blank or a break, at the start of a line.
    fn at_document_indicator(&self) -> bool {
        let rest = &self.s[self.pos..];
        (rest.starts_with("---") || rest.starts_with("..."))
            && rest[3..].chars().next().is_some_and(|c| matches!(c, ' ' | '\t' | '\0') || line_break(c).is_some())
    }
}

/// A raw line break a JSON string may hold, and what go-yaml's `read_line`
/// makes of it.
fn line_break(c: char) -> Option<&'static str> {
    match c {
        '\u{85}' => Some("\n"),
        '\u{2028}' => Some("\u{2028}"),
        '\u{2029}' => Some("\u{2029}"),
        _ => None,
    }
}

/// The characters go-yaml's reader accepts in its input.
fn yaml_readable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
}

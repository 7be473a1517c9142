//! The part of go-yaml v2's emitter (`emitterc.go`, a port of libyaml) that
//! `yaml.Marshal` of JSON values drives: an implicit document holding block
//! mappings and sequences, flow `{}` and `[]` for empty ones, and plain,
//! single-quoted, double-quoted and literal scalars (go-yaml never asks for
//! folded ones).
//!
//! Invariants: the bytes written are go-yaml's for the same events (the
//! yaml tests compare them with the apiserver's and go-yaml's own);
//! mapping keys come in go-yaml's order (`sort`).
//!
//! Functions are named after the libyaml ones they port; its event queue
//! and state stack are replaced by recursion over the value, which is what
//! they amount to for this subset of events (so this is no line-for-line
//! port). Which style a scalar takes is chosen in `scalar`; this module
//! writes it. Settings are go-yaml's: indentation 2, width 80, Unicode output, `\n`
//! breaks, not canonical. Since flow style is only used for empty
//! collections, no scalar is ever written in flow context (libyaml's
//! `flow_level` is always 0 when a scalar is written).

use serde_json::{Map, Number, Value};

use super::resolve::{self, Text};
use super::scalar::{Analysis, Style, is_break, is_printable, select_scalar_style, string_style};
use super::sort::sort_keys;

const BEST_INDENT: isize = 2;
const BEST_WIDTH: usize = 80;

/// Where a node is emitted (libyaml's `mapping_context` and
/// `simple_key_context`; its root and sequence contexts change nothing here).
#[derive(Clone, Copy)]
struct Context {
    mapping: bool,
    simple_key: bool,
}

/// The root, or a sequence item.
const OTHER: Context = Context { mapping: false, simple_key: false };
/// A mapping's value, or a key written after `?`.
const IN_MAPPING: Context = Context { mapping: true, simple_key: false };
const SIMPLE_KEY: Context = Context { mapping: true, simple_key: true };

pub(super) struct Emitter<'a> {
    out: &'a mut Vec<u8>,
    indent: isize,
    indents: Vec<isize>,
    column: usize,
    whitespace: bool,
    indention: bool,
}

impl<'a> Emitter<'a> {
    /// An emitter at the start of a stream (`yaml_emitter_emit_stream_start`),
    /// writing at column 0.
    pub(super) fn new(out: &'a mut Vec<u8>) -> Emitter<'a> {
        Emitter { out, indent: -1, indents: Vec::new(), column: 0, whitespace: true, indention: true }
    }

    /// An implicit document: its root node, then the document end's line
    /// break.
    pub(super) fn document(mut self, v: &Value) {
        self.node(v, OTHER);
        self.write_indent();
    }

    /// One item of an indentless block sequence at indentation 0, up to the
    /// line break the next item, key or document end writes.
    pub(super) fn entry(mut self, v: &Value) {
        self.indent = 0;
        self.block_sequence_item(v);
        self.write_indent();
    }

    /// `yaml_emitter_emit_node`, with `yaml_emitter_emit_mapping_start` and
    /// `yaml_emitter_emit_sequence_start` choosing flow style for empty
    /// collections only (`yaml_emitter_check_empty_mapping`).
    fn node(&mut self, v: &Value, context: Context) {
        match v {
            Value::Object(m) if m.is_empty() => self.empty_flow_collection(b"{", b"}"),
            Value::Array(a) if a.is_empty() => self.empty_flow_collection(b"[", b"]"),
            Value::Object(m) => self.block_mapping(m),
            Value::Array(a) => self.block_sequence(a, context),
            Value::String(s) => self.scalar(s, string_style(s), &Analysis::of(s), context),
            Value::Number(n) => self.number(n, context),
            Value::Bool(b) => self.plain_word(if *b { "true" } else { "false" }, context),
            Value::Null => self.plain_word("null", context),
        }
    }

    /// `yaml_emitter_emit_flow_mapping_key` (or `_sequence_item`) with
    /// `first` set, meeting the end event at once.
    fn empty_flow_collection(&mut self, open: &[u8], close: &[u8]) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    /// `yaml_emitter_emit_block_mapping_key` and `_value`, keys in go-yaml's
    /// order.
    fn block_mapping(&mut self, m: &Map<String, Value>) {
        self.increase_indent(false, false);
        let mut entries: Vec<(&String, &Value)> = m.iter().collect();
        sort_keys(&mut entries);
        for (key, value) in entries {
            self.write_indent();
            let analysis = Analysis::of(key);
            // `yaml_emitter_check_simple_key`: one line, at most 128 bytes.
            if !analysis.multiline && key.len() <= 128 {
                self.scalar(key, string_style(key), &analysis, SIMPLE_KEY);
                self.write_indicator(b":", false, false, false);
            } else {
                self.write_indicator(b"?", true, false, true);
                self.scalar(key, string_style(key), &analysis, IN_MAPPING);
                self.write_indent();
                self.write_indicator(b":", true, false, true);
            }
            self.node(value, IN_MAPPING);
        }
        self.pop_indent();
    }

    /// `yaml_emitter_emit_block_sequence_item` over all items; a sequence
    /// that is a mapping's value right after its `:` is not indented.
    fn block_sequence(&mut self, items: &[Value], context: Context) {
        self.increase_indent(false, context.mapping && !self.indention);
        for item in items {
            self.block_sequence_item(item);
        }
        self.pop_indent();
    }

    fn block_sequence_item(&mut self, item: &Value) {
        self.write_indent();
        self.write_indicator(b"-", true, false, true);
        self.node(item, OTHER);
    }

    /// `encode.go`'s `intv`, `uintv` and `floatv`: plain decimal integers,
    /// floats as `FormatFloat(f, 'g', -1, 64)`.
    fn number(&mut self, n: &Number, context: Context) {
        let text = if let Some(u) = n.as_u64() {
            decimal(u)
        } else if let Some(i) = n.as_i64() {
            decimal(i)
        } else {
            resolve::format_float(n.as_f64().unwrap_or_default())
        };
        self.plain_word(text.as_str(), context);
    }

    fn plain_word(&mut self, word: &str, context: Context) {
        self.scalar(word, Style::Plain, &Analysis::of(word), context);
    }

    /// `yaml_emitter_emit_scalar`: choose the style, then write the scalar
    /// one indentation level deeper (where its continuation lines go).
    fn scalar(&mut self, value: &str, requested: Style, analysis: &Analysis, context: Context) {
        let style = select_scalar_style(value, requested, analysis, context.simple_key);
        self.increase_indent(true, false);
        let allow_breaks = !context.simple_key;
        match style {
            Style::Plain => self.write_plain_scalar(value, allow_breaks),
            Style::SingleQuoted => self.write_single_quoted_scalar(value, allow_breaks),
            Style::DoubleQuoted => self.write_double_quoted_scalar(value, allow_breaks),
            Style::Literal => self.write_literal_scalar(value),
        }
        self.pop_indent();
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn put(&mut self, b: u8) {
        self.out.push(b);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push(b'\n');
        self.column = 0;
    }

    /// `write`: one character, one column.
    fn write(&mut self, c: char) {
        if c.is_ascii() {
            self.out.push(c as u8);
        } else {
            self.out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
        self.column += 1;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.write(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0).unsigned_abs();
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(b' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, indicator: &[u8], need_whitespace: bool, is_whitespace: bool, is_indention: bool) {
        if need_whitespace && !self.whitespace {
            self.put(b' ');
        }
        indicator.iter().for_each(|&b| self.put(b));
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    /// Plain scalars never contain line breaks (the analysis forbids them),
    /// so libyaml's break handling is left out; words are written whole.
    fn write_plain_scalar(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(b' ');
        }
        let mut spaces = false;
        let mut rest = value;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix(' ') {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !after.starts_with(' ') {
                    self.write_indent();
                } else {
                    self.put(b' ');
                }
                spaces = true;
                rest = after;
            } else {
                let (word, after) = rest.split_at(rest.find(' ').unwrap_or(rest.len()));
                self.out.extend_from_slice(word.as_bytes());
                self.column += word.bytes().filter(|&b| b & 0xc0 != 0x80).count();
                self.indention = false;
                spaces = false;
                rest = after;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted_scalar(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator(b"'", true, false, false);
        let mut spaces = false;
        let mut breaks = false;
        let mut chars = value.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == ' ' {
                let next = chars.peek().map(|&(_, c)| c);
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i != 0 && next.is_some_and(|c| c != ' ') {
                    self.write_indent();
                } else {
                    self.write(c);
                }
                spaces = true;
            } else if is_break(c) {
                // U+2028 or U+2029: text with `\n` asks for literal style,
                // which falls back to double quotes, never to single ones.
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put(b'\'');
                }
                self.write(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator(b"'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted_scalar(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator(b"\"", true, false, false);
        // libyaml's `is_bom(value, i)` looks at the start of the value, not
        // at `i`: a value starting with U+FEFF is escaped entirely.
        let escape_all = value.starts_with('\u{feff}');
        let mut spaces = false;
        let mut chars = value.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if escape_all || !is_printable(c) || is_break(c) || c == '"' || c == '\\' {
                self.write_escape(c);
                spaces = false;
            } else if c == ' ' {
                let next = chars.peek().map(|&(_, c)| c);
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i != 0 && next.is_some() {
                    self.write_indent();
                    if next == Some(' ') {
                        self.put(b'\\');
                    }
                } else {
                    self.write(c);
                }
                spaces = true;
            } else {
                self.write(c);
                spaces = false;
            }
        }
        self.write_indicator(b"\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_escape(&mut self, c: char) {
        self.put(b'\\');
        let short = match c {
            '\0' => b'0',
            '\u{7}' => b'a',
            '\u{8}' => b'b',
            '\t' => b't',
            '\n' => b'n',
            '\u{b}' => b'v',
            '\u{c}' => b'f',
            '\r' => b'r',
            '\u{1b}' => b'e',
            '"' => b'"',
            '\\' => b'\\',
            '\u{85}' => b'N',
            '\u{a0}' => b'_',
            '\u{2028}' => b'L',
            '\u{2029}' => b'P',
            _ => {
                let (letter, width) = match u32::from(c) {
                    0..=0xff => (b'x', 2),
                    0x100..=0xffff => (b'u', 4),
                    _ => (b'U', 8),
                };
                self.put(letter);
                for k in (0..width).rev() {
                    let digit = (u32::from(c) >> (4 * k)) & 0xf;
                    self.put(b"0123456789ABCDEF"[digit as usize]);
                }
                return;
            }
        };
        self.put(short);
    }

    fn write_literal_scalar(&mut self, value: &str) {
        self.write_indicator(b"|", true, false, false);
        self.write_block_scalar_hints(value);
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in value.chars() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(c);
                self.indention = false;
                breaks = false;
            }
        }
    }

    /// The indentation indicator when the text starts with a space or a
    /// break, then the chomping indicator: `-` without a final break, `+`
    /// with more than one (or when the text is a single break).
    fn write_block_scalar_hints(&mut self, value: &str) {
        if value.starts_with(|c| c == ' ' || is_break(c)) {
            // The indentation, best_indent.
            self.write_indicator(b"2", false, false, false);
        }
        let mut rev = value.chars().rev();
        let chomp = match (rev.next(), rev.next()) {
            (Some(last), before) if is_break(last) => before.is_none_or(is_break).then_some(b'+'),
            _ => Some(b'-'),
        };
        if let Some(chomp) = chomp {
            self.write_indicator(&[chomp], false, false, false);
        }
    }
}

fn decimal(n: impl std::fmt::Display) -> Text {
    use std::fmt::Write as _;
    let mut text = Text::new();
    let _ = write!(text, "{n}");
    text
}

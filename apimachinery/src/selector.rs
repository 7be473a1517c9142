//! Label and field selectors, parsed and matched exactly as apimachinery does
//! (`k8s.io/apimachinery/pkg/labels/selector.go` and `pkg/fields/selector.go`),
//! with the apiserver's error texts byte for byte.
//!
//! Label selectors (`labels.Parse`): a byte-level port of the Go lexer and
//! recursive-descent parser, operators `=`, `==`, `!=`, `in (…)`, `notin (…)`,
//! `key` (exists), `!key` (does not exist), `>` and `<` (integers), with the
//! key and value validation of `labels.NewRequirement` (`content.IsLabelKey`,
//! `content.IsLabelValue`) and its `field.Error` / aggregate formatting, e.g.
//! `unable to parse requirement: values[0][app]: Invalid value: "-x": …`.
//!
//! Field selectors (`fields.ParseSelector`): terms split on unescaped commas and
//! sorted, each term split at its first `!=`, `==` or `=`, the value unescaped
//! (`\\`, `\,`, `\=`); a term with an empty field and an empty value is dropped,
//! as the Go parser's identity `Transform` does.
//!
//! Invariants:
//! - `parse` never panics, whatever the input (NUL bytes, multi-byte UTF-8, …);
//!   its `Err` is the complete message of the apiserver's 400 `Status`.
//! - A parsed label selector holds its requirements sorted by key (stable), each
//!   requirement's values sorted and deduplicated (Go's `sets.String`), and every
//!   key and value valid; its `Display` is Go's `Selector.String()`.
//! - A parsed field selector holds its requirements in the order of the sorted raw
//!   terms; its `Display` is Go's `Selector.String()` (values re-escaped).
//! - Matching follows `Requirement.Matches`: `!=` and `notin` match an absent key,
//!   `>` / `<` match only a present label whose value parses as an `i64`; a field
//!   term compares the field's value (`""` when absent) with its value.
//!
//! Validation texts follow the `content` package of apimachinery 1.35+ (lengths in
//! "bytes"); values in messages are quoted as Go's `%q` quotes them ([`crate::gostr`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::gostr::quote;

// ---------------------------------------------------------------------------
// Label selectors: public API
// ---------------------------------------------------------------------------

/// A parsed label selector: the conjunction of its requirements.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
}

/// One requirement: a key, an operator and (sorted, deduplicated) values.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LabelRequirement {
    key: String,
    op: LabelOp,
    values: Vec<String>,
}

/// `selection.Operator` as the label parser produces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LabelOp {
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

impl LabelSelector {
    /// `labels.Parse`: the selector, or the apiserver's error message.
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut requirements = Parser::new(s).parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements })
    }

    /// Whether the selector has no requirement (selects everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The `key=value` pairs every match must have (`=`, `==`, or `in` with one value).
    pub fn equalities(&self) -> impl Iterator<Item = (&str, &str)> {
        self.requirements.iter().filter_map(|r| match (r.op, r.values.as_slice()) {
            (LabelOp::Equals | LabelOp::DoubleEquals | LabelOp::In, [v]) => Some((r.key.as_str(), v.as_str())),
            _ => None,
        })
    }

    /// Whether `labels` satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }

    /// Whether the labels `label_of` looks up satisfy every requirement.
    pub fn matches_with<'a>(&self, label_of: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(label_of(&r.key)))
    }
}

impl LabelRequirement {
    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    fn matches(&self, val: Option<&str>) -> bool {
        match self.op {
            LabelOp::In | LabelOp::Equals | LabelOp::DoubleEquals => val.is_some_and(|v| self.has_value(v)),
            LabelOp::NotIn | LabelOp::NotEquals => val.is_none_or(|v| !self.has_value(v)),
            LabelOp::Exists => val.is_some(),
            LabelOp::DoesNotExist => val.is_none(),
            LabelOp::GreaterThan | LabelOp::LessThan => val.is_some_and(|v| self.compare_int(v)),
        }
    }

    /// `>` / `<`: both sides must parse as `i64` (`strconv.ParseInt(v, 10, 64)`).
    fn compare_int(&self, label: &str) -> bool {
        let (Ok(have), [want]) = (label.parse::<i64>(), self.values.as_slice()) else { return false };
        let Ok(want) = want.parse::<i64>() else { return false };
        if self.op == LabelOp::GreaterThan { have > want } else { have < want }
    }
}

impl fmt::Display for LabelRequirement {
    /// `Requirement.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == LabelOp::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.op {
            LabelOp::Exists | LabelOp::DoesNotExist => return Ok(()),
            LabelOp::Equals => "=",
            LabelOp::DoubleEquals => "==",
            LabelOp::NotEquals => "!=",
            LabelOp::In => " in ",
            LabelOp::NotIn => " notin ",
            LabelOp::GreaterThan => ">",
            LabelOp::LessThan => "<",
        };
        let set = matches!(self.op, LabelOp::In | LabelOp::NotIn);
        let (open, close) = if set { ("(", ")") } else { ("", "") };
        write!(f, "{op}{open}{}{close}", self.values.join(","))
    }
}

impl fmt::Display for LabelSelector {
    /// `internalSelector.String()`: requirements joined by `,`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Label selectors: lexer
// ---------------------------------------------------------------------------

/// The Go lexer's tokens (`ErrorToken` included for fidelity; unreachable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// `string2token` for symbol literals.
fn symbol_token(s: &str) -> Option<Tok> {
    Some(match s {
        ")" => Tok::ClosedPar,
        "," => Tok::Comma,
        "!" => Tok::DoesNotExist,
        "==" => Tok::DoubleEquals,
        "=" => Tok::Equals,
        ">" => Tok::GreaterThan,
        "<" => Tok::LessThan,
        "!=" => Tok::NotEquals,
        "(" => Tok::OpenPar,
        _ => return None,
    })
}

/// Byte-level port of the Go `Lexer`: a NUL byte reads as end of input.
struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn read(&mut self) -> u8 {
        match self.s.as_bytes().get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// The literal between two byte offsets; they always fall on ASCII bytes.
    fn slice(&self, start: usize, end: usize) -> &'a str {
        self.s.get(start..end).unwrap_or("")
    }

    fn scan_id_or_keyword(&mut self) -> (Tok, &'a str) {
        let start = self.pos;
        let mut end = start;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special_symbol(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            end = self.pos;
        }
        let lit = self.slice(start, end);
        let tok = match lit {
            "in" => Tok::In,
            "notin" => Tok::NotIn,
            _ => Tok::Identifier,
        };
        (tok, lit)
    }

    /// Longest symbol token (`!=` over `!`, `==` over `=`).
    fn scan_special_symbol(&mut self) -> (Tok, &'a str) {
        let start = self.pos;
        let mut last: Option<(Tok, usize)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special_symbol(ch) {
                self.unread();
                break;
            }
            if let Some(tok) = symbol_token(self.slice(start, self.pos)) {
                last = Some((tok, self.pos));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        match last {
            Some((tok, end)) => (tok, self.slice(start, end)),
            // Unreachable: every single special symbol is a token.
            None => (Tok::Error, "error expected: keyword found"),
        }
    }

    fn skip_whitespaces(&mut self, mut ch: u8) -> u8 {
        while is_whitespace(ch) {
            ch = self.read();
        }
        ch
    }

    fn lex(&mut self) -> (Tok, &'a str) {
        let first = self.read();
        match self.skip_whitespaces(first) {
            0 => (Tok::EndOfString, ""),
            ch if is_special_symbol(ch) => {
                self.unread();
                self.scan_special_symbol()
            }
            _ => {
                self.unread();
                self.scan_id_or_keyword()
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Label selectors: parser
// ---------------------------------------------------------------------------

/// `ParserContext`: in `Values`, `in` and `notin` are identifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    KeyAndOperator,
    Values,
}

struct Parser<'a> {
    items: Vec<(Tok, &'a str)>,
    position: usize,
}

impl<'a> Parser<'a> {
    /// Scans the whole input, ending with one `EndOfString` item.
    fn new(s: &'a str) -> Self {
        let mut lexer = Lexer { s, pos: 0 };
        let mut items = Vec::new();
        loop {
            let item = lexer.lex();
            items.push(item);
            if item.0 == Tok::EndOfString {
                break;
            }
        }
        Self { items, position: 0 }
    }

    fn item(&self, at: usize, ctx: Ctx) -> (Tok, &'a str) {
        let last = self.items.len().saturating_sub(1);
        let (tok, lit) = self.items.get(at.min(last)).copied().unwrap_or((Tok::EndOfString, ""));
        match tok {
            Tok::In | Tok::NotIn if ctx == Ctx::Values => (Tok::Identifier, lit),
            _ => (tok, lit),
        }
    }

    fn lookahead(&self, ctx: Ctx) -> (Tok, &'a str) {
        self.item(self.position, ctx)
    }

    fn consume(&mut self, ctx: Ctx) -> (Tok, &'a str) {
        let item = self.item(self.position, ctx);
        self.position = (self.position + 1).min(self.items.len().saturating_sub(1));
        item
    }

    fn parse(&mut self) -> Result<Vec<LabelRequirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Ctx::Values);
            match tok {
                Tok::Identifier | Tok::DoesNotExist => {
                    let r = self.parse_requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    if self.after_requirement()? {
                        return Ok(requirements);
                    }
                }
                Tok::EndOfString => return Ok(requirements),
                _ => return Err(format!("found '{lit}', expected: !, identifier, or 'end of string'")),
            }
        }
    }

    /// Consumes the separator after a requirement; `true` at the end of input.
    fn after_requirement(&mut self) -> Result<bool, String> {
        let (tok, lit) = self.consume(Ctx::Values);
        match tok {
            Tok::EndOfString => Ok(true),
            Tok::Comma => match self.lookahead(Ctx::Values) {
                (Tok::Identifier | Tok::DoesNotExist, _) => Ok(false),
                (_, next) => Err(format!("found '{next}', expected: identifier after ','")),
            },
            _ => Err(format!("found '{lit}', expected: ',' or 'end of string'")),
        }
    }

    fn parse_requirement(&mut self) -> Result<LabelRequirement, String> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op) = inferred {
            return new_requirement(key, op, BTreeSet::new());
        }
        let op = self.parse_operator()?;
        let values = match op {
            LabelOp::In | LabelOp::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(key, op, values)
    }

    /// The key, and `Exists` / `DoesNotExist` when the operator is implied.
    fn parse_key_and_infer_operator(&mut self) -> Result<(&'a str, Option<LabelOp>), String> {
        let (mut tok, mut lit) = self.consume(Ctx::Values);
        let negated = tok == Tok::DoesNotExist;
        if negated {
            (tok, lit) = self.consume(Ctx::Values);
        }
        if tok != Tok::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        validate_label_key(lit)?;
        if negated {
            return Ok((lit, Some(LabelOp::DoesNotExist)));
        }
        let at_end = matches!(self.lookahead(Ctx::Values).0, Tok::EndOfString | Tok::Comma);
        Ok((lit, at_end.then_some(LabelOp::Exists)))
    }

    fn parse_operator(&mut self) -> Result<LabelOp, String> {
        let (tok, lit) = self.consume(Ctx::KeyAndOperator);
        Ok(match tok {
            Tok::In => LabelOp::In,
            Tok::Equals => LabelOp::Equals,
            Tok::DoubleEquals => LabelOp::DoubleEquals,
            Tok::GreaterThan => LabelOp::GreaterThan,
            Tok::LessThan => LabelOp::LessThan,
            Tok::NotIn => LabelOp::NotIn,
            Tok::NotEquals => LabelOp::NotEquals,
            _ => return Err(format!("found '{lit}', expected: in, notin, =, ==, !=, gt, lt")),
        })
    }

    /// `(a,b,…)` for `in` / `notin`; `()` is the set `{""}`.
    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, lit) = self.consume(Ctx::Values);
        if tok != Tok::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Ctx::Values);
        match tok {
            Tok::Identifier | Tok::Comma => {
                let set = self.parse_identifiers_list()?;
                match self.consume(Ctx::Values).0 {
                    Tok::ClosedPar => Ok(set),
                    _ => Err(format!("found '{lit}', expected: ')'")),
                }
            }
            Tok::ClosedPar => {
                self.consume(Ctx::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    /// A comma-separated list of possibly empty identifiers, up to (not including) `)`.
    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Ctx::Values);
            match tok {
                Tok::Identifier => {
                    set.insert(lit.to_string());
                    match self.lookahead(Ctx::Values) {
                        (Tok::Comma, _) => continue,
                        (Tok::ClosedPar, _) => return Ok(set),
                        (_, next) => return Err(format!("found '{next}', expected: ',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    match self.lookahead(Ctx::Values).0 {
                        Tok::ClosedPar => {
                            set.insert(String::new());
                            return Ok(set);
                        }
                        Tok::Comma => {
                            set.insert(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    /// The single value of `=`, `==`, `!=`, `>`, `<` (empty when absent).
    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        if matches!(self.lookahead(Ctx::Values).0, Tok::EndOfString | Tok::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        match self.consume(Ctx::Values) {
            (Tok::Identifier, lit) => Ok(BTreeSet::from([lit.to_string()])),
            (_, lit) => Err(format!("found '{lit}', expected: identifier")),
        }
    }
}

/// `NewRequirement` as reached from the parser: the key is already valid and
/// the value count right, so only the values are checked.
fn new_requirement(key: &str, op: LabelOp, values: BTreeSet<String>) -> Result<LabelRequirement, String> {
    let values: Vec<String> = values.into_iter().collect();
    let mut errs = Vec::new();
    if matches!(op, LabelOp::GreaterThan | LabelOp::LessThan) {
        for (i, v) in values.iter().enumerate() {
            if v.parse::<i64>().is_err() {
                errs.push(invalid(&format!("values[{i}]"), v, "for 'Gt', 'Lt' operators, the value must be an integer"));
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let problems = label_value_errors(v);
        if !problems.is_empty() {
            errs.push(invalid(&format!("values[{i}][{key}]"), v, &problems.join("; ")));
        }
    }
    match aggregate(errs) {
        Some(e) => Err(e),
        None => Ok(LabelRequirement { key: key.to_string(), op, values }),
    }
}

/// `validateLabelKey` with the parser's nil path (`<nil>`).
fn validate_label_key(key: &str) -> Result<(), String> {
    let problems = label_key_errors(key);
    if problems.is_empty() { Ok(()) } else { Err(invalid("<nil>", key, &problems.join("; "))) }
}

// ---------------------------------------------------------------------------
// Validation texts (apimachinery `content` package, `field.Error`, aggregates)
// ---------------------------------------------------------------------------

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_KEY_EXAMPLES: &[&str] = &["MyName", "my.name", "123-abc"];
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', \
     and must start and end with an alphanumeric character";
const LABEL_VALUE_EXAMPLES: &[&str] = &["MyValue", "my_value", "12345"];
const LABEL_MAX_LENGTH: usize = 63;
const DNS1123_SUBDOMAIN_FMT: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', \
     and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
const EMPTY_ERROR: &str = "must be non-empty";

/// `content.MaxLenError`.
fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

/// `content.RegexError` (note the doubled space before each " or ").
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{re}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{re}')"));
    out
}

/// `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`.
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric() && b.iter().all(inner),
        _ => false,
    }
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`.
fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => edge(f) && edge(l) && b.iter().all(|c| edge(c) || *c == b'-'),
        _ => false,
    }
}

/// `content.IsDNS1123Subdomain`.
fn dns1123_subdomain_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !v.split('.').all(is_dns1123_label) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR_MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// `content.IsLabelKey`.
fn label_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {EMPTY_ERROR}"));
            } else {
                errs.extend(dns1123_subdomain_errors(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            let re = regex_error(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, LABEL_KEY_EXAMPLES);
            return vec![format!("a valid label key {re} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")];
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {EMPTY_ERROR}"));
    } else if name.len() > LABEL_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_error(LABEL_MAX_LENGTH)));
    }
    if !is_label_name(name) {
        errs.push(format!("name part {}", regex_error(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, LABEL_KEY_EXAMPLES)));
    }
    errs
}

/// `content.IsLabelValue`.
fn label_value_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > LABEL_MAX_LENGTH {
        errs.push(max_len_error(LABEL_MAX_LENGTH));
    }
    if !(v.is_empty() || is_label_name(v)) {
        errs.push(regex_error(LABEL_VALUE_ERR_MSG, LABEL_VALUE_FMT, LABEL_VALUE_EXAMPLES));
    }
    errs
}

/// `field.Invalid(path, value, detail).Error()` for a string value.
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", quote(value))
}

/// `ErrorList.ToAggregate().Error()`: duplicates dropped, several in `[a, b]`.
fn aggregate(errs: Vec<String>) -> Option<String> {
    let mut unique: Vec<String> = Vec::new();
    for e in errs {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.len() {
        0 => None,
        1 => unique.pop(),
        _ => Some(format!("[{}]", unique.join(", "))),
    }
}

// ---------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------

/// A parsed field selector: the conjunction of its requirements.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSelector {
    /// In the order of the sorted raw terms, as Go builds them.
    pub requirements: Vec<FieldRequirement>,
}

/// One `field op value` term, the value unescaped.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldRequirement {
    /// The field path as written (never unescaped), e.g. `spec.nodeName`.
    pub field: String,
    /// The comparison.
    pub op: FieldOp,
    /// The unescaped value.
    pub value: String,
}

/// `=` / `==` (both `Equals`) and `!=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    Equals,
    NotEquals,
}

impl FieldSelector {
    /// `fields.ParseSelector`: the selector, or the apiserver's error message.
    pub fn parse(s: &str) -> Result<FieldSelector, String> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut requirements = Vec::new();
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let Some((field, op, raw)) = split_term(part) else {
                return Err(format!("invalid selector: '{s}'; can't understand '{part}'"));
            };
            let value = unescape_value(raw)?;
            // The identity Transform drops a term whose field and value are both empty.
            if !(field.is_empty() && value.is_empty()) {
                requirements.push(FieldRequirement { field: field.to_string(), op, value });
            }
        }
        Ok(Self { requirements })
    }

    /// Whether the selector has no requirement (selects everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether every term holds, `value_of` giving a field's value (`""` when absent).
    pub fn matches<S: AsRef<str>>(&self, value_of: impl Fn(&str) -> S) -> bool {
        self.requirements.iter().all(|r| (value_of(&r.field).as_ref() == r.value) == (r.op == FieldOp::Equals))
    }
}

impl fmt::Display for FieldSelector {
    /// `andTerm.String()`: `field=value` / `field!=value`, values escaped, joined by `,`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            let sep = if i > 0 { "," } else { "" };
            let op = if r.op == FieldOp::Equals { "=" } else { "!=" };
            write!(f, "{sep}{}{op}{}", r.field, escape_value(&r.value))?;
        }
        Ok(())
    }
}

/// `fields.EscapeValue`.
fn escape_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `splitTerms`: split on commas not preceded by an escaping backslash.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let (mut start, mut in_slash) = (0, false);
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// `splitTerm`: split at the first `!=`, `==` or `=` (checked in that order at each position).
fn split_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    const OPERATORS: [(&str, FieldOp); 3] = [("!=", FieldOp::NotEquals), ("==", FieldOp::Equals), ("=", FieldOp::Equals)];
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        OPERATORS.iter().find(|(op, _)| rest.starts_with(op)).map(|&(op, kind)| (&term[..i], kind, &rest[op.len()..]))
    })
}

/// `UnescapeValue`: `\\`, `\,` and `\=` are the only escapes; bare `,` and `=` are errors.
fn unescape_value(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!("invalid field selector: invalid escape sequence: \\{c}"));
            }
            out.push(c);
            in_slash = false;
        } else {
            match c {
                '\\' => in_slash = true,
                // Go prints the rune with %v: its code point in decimal.
                ',' | '=' => return Err(format!("invalid field selector: unescaped character in value: {}", c as u32)),
                _ => out.push(c),
            }
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    const VALUE_REGEX_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', \
        and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', \
        regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    const NAME_REGEX_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
        alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
        '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const PREFIX_REGEX_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or \
        '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is \
        '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
    }

    fn label_err(s: &str) -> String {
        match LabelSelector::parse(s) {
            Ok(v) => panic!("{s:?} should fail, got {v}"),
            Err(e) => e,
        }
    }

    fn matches(s: &str, pairs: &[(&str, &str)]) -> bool {
        sel(s).matches(&labels(pairs))
    }

    fn field(s: &str) -> FieldSelector {
        FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
    }

    fn field_err(s: &str) -> String {
        match FieldSelector::parse(s) {
            Ok(v) => panic!("{s:?} should fail, got {v}"),
            Err(e) => e,
        }
    }

    fn field_matches(s: &str, pairs: &[(&str, &str)]) -> bool {
        let m = labels(pairs);
        field(s).matches(|f| m.get(f).cloned().unwrap_or_default())
    }

    fn req(key: &str, op: LabelOp, values: &[&str]) -> LabelRequirement {
        LabelRequirement { key: key.into(), op, values: values.iter().map(|v| v.to_string()).collect() }
    }

    // --- label selectors: parsing ---------------------------------------------

    #[test]
    fn go_good_strings_round_trip() {
        // TestSelectorParse: String() equals the input without spaces.
        for s in ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"] {
            assert_eq!(sel(s).to_string(), s.replace(' ', ""), "{s:?}");
        }
    }

    #[test]
    fn every_operator_parses() {
        let cases: &[(&str, LabelRequirement)] = &[
            ("a=b", req("a", LabelOp::Equals, &["b"])),
            ("a==b", req("a", LabelOp::DoubleEquals, &["b"])),
            ("a!=b", req("a", LabelOp::NotEquals, &["b"])),
            ("a in (b,c)", req("a", LabelOp::In, &["b", "c"])),
            ("a notin (c,b)", req("a", LabelOp::NotIn, &["b", "c"])),
            ("a", req("a", LabelOp::Exists, &[])),
            ("!a", req("a", LabelOp::DoesNotExist, &[])),
            ("a>5", req("a", LabelOp::GreaterThan, &["5"])),
            ("a<5", req("a", LabelOp::LessThan, &["5"])),
        ];
        for (s, want) in cases {
            assert_eq!(sel(s).requirements, vec![want.clone()], "{s:?}");
        }
    }

    #[test]
    fn set_values_empty_and_deduplicated() {
        assert_eq!(sel("x in ()").requirements, vec![req("x", LabelOp::In, &[""])]);
        assert_eq!(sel("x in (abc,)").requirements, vec![req("x", LabelOp::In, &["", "abc"])]);
        assert_eq!(sel("x in (,abc)").requirements, vec![req("x", LabelOp::In, &["", "abc"])]);
        assert_eq!(sel("x in (a,,b)").requirements, vec![req("x", LabelOp::In, &["", "a", "b"])]);
        assert_eq!(sel("x in (,)").requirements, vec![req("x", LabelOp::In, &[""])]);
        assert_eq!(sel("x in (b,a,b)").requirements, vec![req("x", LabelOp::In, &["a", "b"])]);
        assert_eq!(sel("x notin (abc,def),bar,z in (),w").to_string(), "bar,w,x notin (abc,def),z in ()");
    }

    #[test]
    fn empty_exact_values() {
        assert_eq!(sel("a=").requirements, vec![req("a", LabelOp::Equals, &[""])]);
        assert_eq!(sel("a==,b!=").requirements, vec![req("a", LabelOp::DoubleEquals, &[""]), req("b", LabelOp::NotEquals, &[""])]);
    }

    #[test]
    fn whitespace_variants() {
        assert_eq!(sel("\rx").requirements, vec![req("x", LabelOp::Exists, &[])]);
        assert_eq!(sel("foo  in\t (abc)").requirements, vec![req("foo", LabelOp::In, &["abc"])]);
        assert_eq!(sel("x notin\n (abc)").requirements, vec![req("x", LabelOp::NotIn, &["abc"])]);
        assert_eq!(sel("x  notin\t\t\t(abc,def)").requirements, vec![req("x", LabelOp::NotIn, &["abc", "def"])]);
        assert_eq!(sel("  a = b ,\tc != d\n").to_string(), "a=b,c!=d");
        assert_eq!(sel(" x in ( a , b ) ").to_string(), "x in (a,b)");
        assert_eq!(sel(" ! x ").to_string(), "!x");
        assert!(sel(" \t\r\n ").is_empty());
    }

    #[test]
    fn keywords_are_identifiers_in_value_position() {
        assert_eq!(sel("in in (in)").requirements, vec![req("in", LabelOp::In, &["in"])]);
        assert_eq!(sel("notin=in").requirements, vec![req("notin", LabelOp::Equals, &["in"])]);
        assert_eq!(sel("x in (notin,in)").requirements, vec![req("x", LabelOp::In, &["in", "notin"])]);
        assert!(matches("notin=in", &[("notin", "in")]));
    }

    #[test]
    fn prefixed_keys() {
        let s = "this-is-another-dns.domain.com/key-with-dash in (so,what)";
        assert_eq!(sel(s).requirements, vec![req("this-is-another-dns.domain.com/key-with-dash", LabelOp::In, &["so", "what"])]);
        let s = "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)";
        assert_eq!(sel(s).requirements, vec![req("0.1.2.domain/99", LabelOp::NotIn, &["10.10.100.1", "tick.tack.clock"])]);
        assert!(LabelSelector::parse(&format!("{}/{}", "a".repeat(253), "b".repeat(63))).is_ok());
    }

    #[test]
    fn requirements_sorted_by_key() {
        assert_eq!(sel("x=a,a=x").to_string(), "a=x,x=a");
        assert_eq!(sel("x=a,a=x"), sel("a=x,x=a"));
        assert_eq!(sel("z,y in (a),!b").to_string(), "!b,y in (a),z");
        // Same key: the input order is kept.
        assert_eq!(sel("z!=a,z").to_string(), "z!=a,z");
    }

    #[test]
    fn display_of_every_operator() {
        assert_eq!(sel("x in (def,abc),y notin (jkl),z").to_string(), "x in (abc,def),y notin (jkl),z");
        assert_eq!(sel("x=abc,y==jkl,z!=a").to_string(), "x=abc,y==jkl,z!=a");
        assert_eq!(sel("x>2,y<8,!z").to_string(), "x>2,y<8,!z");
        assert_eq!(sel("z notin ()").to_string(), "z notin ()");
    }

    // --- label selectors: errors ----------------------------------------------

    #[test]
    fn reference_capture_error() {
        // tests/reference/apiserver-1.36/err-label.txt: labelSelector=a%3D%3D%3Db
        assert_eq!(label_err("a===b"), "unable to parse requirement: found '=', expected: identifier");
    }

    #[test]
    fn go_bad_strings() {
        assert_eq!(label_err("x=a||y=b"), format!("unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {VALUE_REGEX_MSG}"));
        assert_eq!(label_err("x==a==b"), "found '==', expected: ',' or 'end of string'");
        assert_eq!(label_err("!x=a"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(
            label_err("x<a"),
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    #[test]
    fn structural_errors() {
        let cases: &[(&str, &str)] = &[
            (",", "found ',', expected: !, identifier, or 'end of string'"),
            ("=a", "found '=', expected: !, identifier, or 'end of string'"),
            ("(a)", "found '(', expected: !, identifier, or 'end of string'"),
            ("a,", "found '', expected: identifier after ','"),
            ("a,,b", "found ',', expected: identifier after ','"),
            ("a,=b", "found '=', expected: identifier after ','"),
            ("a=b c", "found 'c', expected: ',' or 'end of string'"),
            ("a in (b) c", "found 'c', expected: ',' or 'end of string'"),
            ("!a b", "found 'b', expected: ',' or 'end of string'"),
            ("!", "unable to parse requirement: found '', expected: identifier"),
            ("!!a", "unable to parse requirement: found '!', expected: identifier"),
            ("!=a", "found '!=', expected: !, identifier, or 'end of string'"),
            ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
            ("a (b)", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
            ("a !b", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
            ("a in b", "unable to parse requirement: found 'b' expected: '('"),
            ("a in", "unable to parse requirement: found '' expected: '('"),
            ("a in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
            ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
            ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
            ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
            ("a in (b,", "unable to parse requirement: found '', expected: ',', or identifier"),
            ("a in (,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
            ("a=(b)", "unable to parse requirement: found '(', expected: identifier"),
            ("a!=!", "unable to parse requirement: found '!', expected: identifier"),
            ("a>=1", "unable to parse requirement: found '=', expected: identifier"),
            ("a===b", "unable to parse requirement: found '=', expected: identifier"),
        ];
        for (s, want) in cases {
            assert_eq!(label_err(s), *want, "{s:?}");
        }
    }

    #[test]
    fn nul_byte_ends_a_token_or_the_input() {
        assert_eq!(label_err("a\0b"), "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
        // After a symbol the NUL is swallowed; after whitespace it ends the input.
        assert_eq!(label_err("a,\0,b"), "found ',', expected: identifier after ','");
        assert_eq!(label_err("a, \0,b"), "found '', expected: identifier after ','");
        assert_eq!(sel("a=b \0 garbage((").to_string(), "a=b");
        assert_eq!(sel("a=\0b").to_string(), "a=b");
    }

    #[test]
    fn invalid_keys() {
        let nil = "unable to parse requirement: <nil>: Invalid value:";
        assert_eq!(label_err("-bad"), format!("{nil} \"-bad\": name part {NAME_REGEX_MSG}"));
        assert_eq!(label_err("bad-=x"), format!("{nil} \"bad-\": name part {NAME_REGEX_MSG}"));
        assert_eq!(label_err("!a%b"), format!("{nil} \"a%b\": name part {NAME_REGEX_MSG}"));
        let long = "k".repeat(64);
        assert_eq!(label_err(&long), format!("{nil} \"{long}\": name part must be no more than 63 bytes"));
        let long_bad = format!("{}-", "k".repeat(63));
        assert_eq!(
            label_err(&long_bad),
            format!("{nil} \"{long_bad}\": name part must be no more than 63 bytes; name part {NAME_REGEX_MSG}")
        );
        assert_eq!(label_err("/a"), format!("{nil} \"/a\": prefix part must be non-empty"));
        assert_eq!(label_err("a/"), format!("{nil} \"a/\": name part must be non-empty; name part {NAME_REGEX_MSG}"));
        assert_eq!(
            label_err("/"),
            format!("{nil} \"/\": prefix part must be non-empty; name part must be non-empty; name part {NAME_REGEX_MSG}")
        );
        assert_eq!(label_err("Example.com/a"), format!("{nil} \"Example.com/a\": prefix part {PREFIX_REGEX_MSG}"));
        let prefix = "a".repeat(254);
        assert_eq!(label_err(&format!("{prefix}/a")), format!("{nil} \"{prefix}/a\": prefix part must be no more than 253 bytes"));
        let three = format!(
            "{nil} \"a/b/c\": a valid label key {NAME_REGEX_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
        assert_eq!(label_err("a/b/c"), three);
    }

    #[test]
    fn invalid_values() {
        let long = "v".repeat(64);
        assert_eq!(
            label_err(&format!("app={long}")),
            format!("unable to parse requirement: values[0][app]: Invalid value: \"{long}\": must be no more than 63 bytes")
        );
        let long_bad = format!("{}.", "v".repeat(63));
        let prefix = "unable to parse requirement: values[0][app]: Invalid value:";
        assert_eq!(
            label_err(&format!("app!={long_bad}")),
            format!("{prefix} \"{long_bad}\": must be no more than 63 bytes; {VALUE_REGEX_MSG}")
        );
        assert_eq!(label_err("a=-x"), format!("unable to parse requirement: values[0][a]: Invalid value: \"-x\": {VALUE_REGEX_MSG}"));
        assert!(LabelSelector::parse(&format!("a={}", "v".repeat(63))).is_ok());
    }

    #[test]
    fn several_invalid_values_aggregate_in_sorted_order() {
        let want = format!(
            "unable to parse requirement: [values[0][a]: Invalid value: \"-x\": {VALUE_REGEX_MSG}, \
             values[2][a]: Invalid value: \"z-\": {VALUE_REGEX_MSG}]"
        );
        assert_eq!(label_err("a in (z-,ok,-x)"), want);
    }

    #[test]
    fn gt_lt_errors() {
        let not_int = "for 'Gt', 'Lt' operators, the value must be an integer";
        assert_eq!(label_err("a>"), format!("unable to parse requirement: values[0]: Invalid value: \"\": {not_int}"));
        assert_eq!(label_err("a<1.5"), format!("unable to parse requirement: values[0]: Invalid value: \"1.5\": {not_int}"));
        assert_eq!(
            label_err("a>x."),
            format!(
                "unable to parse requirement: [values[0]: Invalid value: \"x.\": {not_int}, \
                 values[0][a]: Invalid value: \"x.\": {VALUE_REGEX_MSG}]"
            )
        );
        // An integer that is not a valid label value.
        assert_eq!(label_err("a>-1"), format!("unable to parse requirement: values[0][a]: Invalid value: \"-1\": {VALUE_REGEX_MSG}"));
        assert_eq!(
            label_err("a>99999999999999999999"),
            format!("unable to parse requirement: values[0]: Invalid value: \"99999999999999999999\": {not_int}")
        );
    }

    #[test]
    fn error_values_use_go_quoting() {
        let prefix = "unable to parse requirement: values[0][a]: Invalid value:";
        assert_eq!(label_err("a=ü"), format!("{prefix} \"ü\": {VALUE_REGEX_MSG}"));
        assert_eq!(label_err("a=x\u{1}"), format!("{prefix} \"x\\x01\": {VALUE_REGEX_MSG}"));
        assert_eq!(label_err("a=x\u{a0}"), format!("{prefix} \"x\\u00a0\": {VALUE_REGEX_MSG}"));
        assert_eq!(label_err("a=x\"\\"), format!("{prefix} \"x\\\"\\\\\": {VALUE_REGEX_MSG}"));
        assert_eq!(label_err("a=x\u{7f}\u{b}"), format!("{prefix} \"x\\x7f\\v\": {VALUE_REGEX_MSG}"));
        assert_eq!(label_err("a=\u{10ffff}"), format!("{prefix} \"\\U0010ffff\": {VALUE_REGEX_MSG}"));
        assert_eq!(label_err("a=\u{feff}"), format!("{prefix} \"\\ufeff\": {VALUE_REGEX_MSG}"));
    }

    // --- label selectors: matching --------------------------------------------

    #[test]
    fn go_selector_matches() {
        assert!(matches("", &[("x", "y")]));
        assert!(matches("x=y", &[("x", "y")]));
        assert!(matches("x=y,z=w", &[("x", "y"), ("z", "w")]));
        assert!(matches("x!=y,z!=w", &[("x", "z"), ("z", "a")]));
        assert!(matches("x", &[("x", "z")]));
        assert!(matches("!x", &[("y", "z")]));
        assert!(matches("x>1", &[("x", "2")]));
        assert!(matches("x<1", &[("x", "0")]));
        assert!(!matches("x=z", &[]));
        assert!(!matches("x=y", &[("x", "z")]));
        assert!(!matches("x=y,z=w", &[("x", "w"), ("z", "w")]));
        assert!(!matches("x!=y,z!=w", &[("x", "z"), ("z", "w")]));
        assert!(!matches("x", &[("y", "z")]));
        assert!(!matches("!x", &[("x", "z")]));
        assert!(!matches("x>1", &[("x", "0")]));
        assert!(!matches("x<1", &[("x", "2")]));
        let set = [("foo", "bar"), ("baz", "blah")];
        assert!(matches("foo=bar,baz=blah", &set));
        assert!(!matches("foo=bar,foobar=bar,baz=blah", &set));
    }

    #[test]
    fn absent_keys() {
        assert!(matches("x!=a", &[]));
        assert!(matches("x notin (a)", &[]));
        assert!(matches("x notin ()", &[("y", "")]));
        assert!(!matches("x in (a)", &[]));
        assert!(!matches("x=a", &[]));
        assert!(!matches("x==a", &[]));
        assert!(!matches("x", &[]));
        assert!(matches("!x", &[]));
        assert!(!matches("x>0", &[]));
        assert!(!matches("x<0", &[]));
        assert!(!matches("x=", &[]));
    }

    #[test]
    fn set_and_empty_value_matching() {
        assert!(matches("x in (a,b)", &[("x", "b")]));
        assert!(!matches("x in (a,b)", &[("x", "c")]));
        assert!(matches("x notin (a,b)", &[("x", "c")]));
        assert!(!matches("x notin (a,b)", &[("x", "a")]));
        assert!(matches("x in ()", &[("x", "")]));
        assert!(!matches("x in ()", &[("x", "a")]));
        assert!(!matches("x notin ()", &[("x", "")]));
        assert!(matches("x=", &[("x", "")]));
        assert!(matches("x!=", &[("x", "a")]));
        assert!(!matches("x!=", &[("x", "")]));
    }

    #[test]
    fn gt_lt_matching() {
        assert!(matches("x>5", &[("x", "6")]));
        assert!(!matches("x>5", &[("x", "5")]));
        assert!(matches("x<5", &[("x", "-7")]));
        assert!(!matches("x<5", &[("x", "5")]));
        assert!(matches("x>5", &[("x", "+6")]));
        assert!(matches("x>0", &[("x", "9223372036854775807")]));
        // Non-integer label values never match.
        assert!(!matches("x>1", &[("x", "v2")]));
        assert!(!matches("x<1", &[("x", "")]));
        assert!(!matches("x<1", &[("x", "0.5")]));
        assert!(!matches("x>1", &[("x", "99999999999999999999")]));
        assert!(matches("x>1,x<3", &[("x", "2")]));
        assert!(!matches("x>1,x<3", &[("x", "3")]));
    }

    #[test]
    fn reference_capture_set_selector() {
        // tests/reference/apiserver-1.36/list-label-set.txt: tier in (0,2),app!=db
        let s = sel("tier in (0,2),app!=db");
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "0")])));
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "2")])));
        assert!(!s.matches(&labels(&[("app", "db"), ("tier", "2")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "1")])));
    }

    // --- field selectors ----------------------------------------------------------

    fn freq(field: &str, op: FieldOp, value: &str) -> FieldRequirement {
        FieldRequirement { field: field.into(), op, value: value.into() }
    }

    #[test]
    fn field_operators() {
        assert_eq!(field("a=b").requirements, vec![freq("a", FieldOp::Equals, "b")]);
        assert_eq!(field("a==b").requirements, vec![freq("a", FieldOp::Equals, "b")]);
        assert_eq!(field("a!=b").requirements, vec![freq("a", FieldOp::NotEquals, "b")]);
        assert_eq!(field("a=").requirements, vec![freq("a", FieldOp::Equals, "")]);
        assert_eq!(field("a!=").requirements, vec![freq("a", FieldOp::NotEquals, "")]);
        assert_eq!(field("=x").requirements, vec![freq("", FieldOp::Equals, "x")]);
        assert_eq!(field(" a = b ").requirements, vec![freq(" a ", FieldOp::Equals, " b ")]);
        assert_eq!(field("a!b=c").requirements, vec![freq("a!b", FieldOp::Equals, "c")]);
    }

    #[test]
    fn field_terms_sorted_and_empty_ones_skipped() {
        let f = field("spec.nodeName=node-1,metadata.namespace=cap-1795339857");
        assert_eq!(
            f.requirements,
            vec![freq("metadata.namespace", FieldOp::Equals, "cap-1795339857"), freq("spec.nodeName", FieldOp::Equals, "node-1")]
        );
        assert_eq!(field(",,a=b,,").requirements, vec![freq("a", FieldOp::Equals, "b")]);
        assert!(field("").is_empty());
        assert!(field(",").is_empty());
        assert!(field("=").is_empty());
        assert!(field("==,!=").is_empty());
        assert_eq!(field("z=1,a==2,m!=3").to_string(), "a=2,m!=3,z=1");
    }

    #[test]
    fn field_escapes() {
        assert_eq!(field(r"a=x\,y").requirements, vec![freq("a", FieldOp::Equals, "x,y")]);
        assert_eq!(field(r"a=x\=y").requirements, vec![freq("a", FieldOp::Equals, "x=y")]);
        assert_eq!(field(r"a=x\\y").requirements, vec![freq("a", FieldOp::Equals, r"x\y")]);
        assert_eq!(field(r"a=x\\,b=c").requirements, vec![freq("a", FieldOp::Equals, r"x\"), freq("b", FieldOp::Equals, "c")]);
        assert_eq!(field(r"a=\,\=\\").to_string(), r"a=\,\=\\");
        // The field itself is not unescaped; its first operator splits the term.
        assert_eq!(field(r"a\=b").requirements, vec![freq(r"a\", FieldOp::Equals, "b")]);
        assert_eq!(field(r"a\,b=c").requirements, vec![freq(r"a\,b", FieldOp::Equals, "c")]);
    }

    #[test]
    fn field_errors() {
        let cases: &[(&str, &str)] = &[
            ("abc", "invalid selector: 'abc'; can't understand 'abc'"),
            ("x=1,abc", "invalid selector: 'x=1,abc'; can't understand 'abc'"),
            ("zzz,aaa", "invalid selector: 'zzz,aaa'; can't understand 'aaa'"),
            ("a!b", "invalid selector: 'a!b'; can't understand 'a!b'"),
            (r"a\,b", r"invalid selector: 'a\,b'; can't understand 'a\,b'"),
            ("a=b=c", "invalid field selector: unescaped character in value: 61"),
            ("a===b", "invalid field selector: unescaped character in value: 61"),
            ("a!==b", "invalid field selector: unescaped character in value: 61"),
            (r"a=x\y", r"invalid field selector: invalid escape sequence: \y"),
            (r"a=x\ü", r"invalid field selector: invalid escape sequence: \ü"),
            ("a=x\\", r"invalid field selector: invalid escape sequence: \"),
            // Sorted terms: "a=\q" is checked before "b=c=d".
            (r"b=c=d,a=\q", r"invalid field selector: invalid escape sequence: \q"),
        ];
        for (s, want) in cases {
            assert_eq!(field_err(s), *want, "{s:?}");
        }
    }

    #[test]
    fn field_matching() {
        assert!(field_matches("a=b", &[("a", "b")]));
        assert!(!field_matches("a=b", &[("a", "c")]));
        assert!(!field_matches("a=b", &[]));
        assert!(field_matches("a=", &[]));
        assert!(field_matches("a!=b", &[]));
        assert!(field_matches("a!=b", &[("a", "c")]));
        assert!(!field_matches("a!=b", &[("a", "b")]));
        assert!(field_matches(r"a=x\,y,b!=z", &[("a", "x,y"), ("b", "w")]));
        assert!(!field_matches(r"a=x\,y,b!=z", &[("a", "x,y"), ("b", "z")]));
        assert!(field_matches("", &[]));
    }

    #[test]
    fn field_escape_value_round_trip() {
        for v in ["", "plain", r"a\b", "a,b", "a=b", r"\,=\\"] {
            let parsed = field(&format!("f={}", escape_value(v)));
            assert_eq!(parsed.requirements, vec![freq("f", FieldOp::Equals, v)], "{v:?}");
        }
    }

    // --- robustness -----------------------------------------------------------

    /// A small deterministic generator (xorshift64*).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[rustfmt::skip]
    const PIECES: &[&str] = &[
        "a", "b", "x", "in", "notin", "=", "==", "!=", "!", "(", ")", ",", ">", "<", " ", "\t", "\n", "\r", "\0", "\\", "-", ".", "_", "/",
        "1", "-1", "9", "ü", "日", "\u{feff}", "\u{10ffff}", "\"", "app", "example.com/", "||", "%", "é",
    ];

    fn garbage(rng: &mut Rng) -> String {
        let n = rng.below(12);
        (0..n).map(|_| PIECES[rng.below(PIECES.len())]).collect()
    }

    fn sorted_fields(f: &FieldSelector) -> Vec<(String, bool, String)> {
        let mut v: Vec<_> = f.requirements.iter().map(|r| (r.field.clone(), r.op == FieldOp::Equals, r.value.clone())).collect();
        v.sort();
        v
    }

    #[test]
    fn garbage_never_panics_and_round_trips() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let pool = labels(&[("a", "1"), ("b", "x"), ("in", ""), ("x", "-1")]);
        let (mut label_ok, mut field_ok) = (0, 0);
        for _ in 0..50_000 {
            let s = garbage(&mut rng);
            if let Ok(l) = LabelSelector::parse(&s) {
                label_ok += 1;
                let _ = l.matches(&pool);
                let again = LabelSelector::parse(&l.to_string()).unwrap_or_else(|e| panic!("{s:?} -> {l} -> {e}"));
                assert_eq!(again, l, "{s:?}");
            }
            if let Ok(f) = FieldSelector::parse(&s) {
                field_ok += 1;
                let _ = f.matches(|k| pool.get(k).cloned().unwrap_or_default());
                let again = FieldSelector::parse(&f.to_string()).unwrap_or_else(|e| panic!("{s:?} -> {f} -> {e}"));
                assert_eq!(sorted_fields(&again), sorted_fields(&f), "{s:?}");
            }
        }
        assert!(label_ok > 1_000 && field_ok > 1_000, "{label_ok} {field_ok}");
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = Rng(42);
        for _ in 0..20_000 {
            let bytes: Vec<u8> = (0..rng.below(24)).map(|_| rng.below(128) as u8).collect();
            let s = String::from_utf8_lossy(&bytes);
            let _ = LabelSelector::parse(&s);
            let _ = FieldSelector::parse(&s);
        }
        let _ = LabelSelector::parse(&"(".repeat(10_000));
        let _ = LabelSelector::parse(&"a,".repeat(10_000));
        let _ = FieldSelector::parse(&"\\".repeat(10_001));
    }
}

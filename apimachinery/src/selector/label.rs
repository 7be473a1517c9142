//! Label selectors (`labels.Parse`): operators `=`, `==`, `!=`, `in (…)`,
//! `notin (…)`, `key` (exists), `!key` (does not exist), `>` and `<`
//! (integers), parsed by a port of the Go recursive-descent parser over the
//! [`lexer`](super::lexer)'s tokens, with the key and value validation of
//! `labels.NewRequirement` and its `field.Error` / aggregate formatting, e.g.
//! `unable to parse requirement: values[0][app]: Invalid value: "-x": …`.
//!
//! Invariants: requirements are sorted by key (stable), each one's values
//! sorted and deduplicated, every key and value valid.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::content::{InvalidValue, aggregate, aggregate_text, label_key_errors, label_value_errors};
use super::lexer::{Lexer, Tok};

/// A parsed label selector: the conjunction of its requirements.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
}

/// Why `labels.Parse` refuses a selector; its `Display` is the apiserver's
/// 400 message, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelSelectorError {
    /// Where a requirement may start, or after one (where a `,` or the end
    /// is due), another token: the literal found, and what Go expected
    /// there in its words.
    #[error("found '{found}', expected: {expected}")]
    Unexpected {
        /// The literal found (empty at the end of input).
        found: String,
        /// What Go's parser expected, in its words.
        expected: &'static str,
    },
    /// A requirement that does not parse, or whose key or values are invalid.
    #[error("unable to parse requirement: {0}")]
    Requirement(#[source] RequirementError),
}

/// Why one requirement of a label selector is refused (Go's `parseRequirement`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequirementError {
    /// A token where the requirement's grammar wants another: the literal
    /// found, and what Go expected there in its words.
    #[error("found '{found}', expected: {expected}")]
    Unexpected {
        /// The literal found (empty at the end of input).
        found: String,
        /// What Go's parser expected, in its words.
        expected: &'static str,
    },
    /// No `(` after `in` or `notin` (Go's message has no comma here).
    #[error("found '{found}' expected: '('")]
    NoOpenParen {
        /// The literal found instead.
        found: String,
    },
    /// A key that is not a valid label key (the parser's path is `<nil>`).
    #[error("{0}")]
    InvalidKey(InvalidValue),
    /// Values invalid for the operator (`>` and `<` want integers) or as
    /// label values, without duplicates, in Go's aggregate form.
    #[error("{}", aggregate_text(.0))]
    InvalidValues(Vec<InvalidValue>),
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
    /// `labels.Parse`: the selector, or why the apiserver refuses it.
    pub fn parse(s: &str) -> Result<LabelSelector, LabelSelectorError> {
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
        let mut lexer = Lexer::new(s);
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

    fn parse(&mut self) -> Result<Vec<LabelRequirement>, LabelSelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Ctx::Values);
            match tok {
                Tok::Identifier | Tok::DoesNotExist => {
                    let r = self.parse_requirement().map_err(LabelSelectorError::Requirement)?;
                    requirements.push(r);
                    if self.after_requirement()? {
                        return Ok(requirements);
                    }
                }
                Tok::EndOfString => return Ok(requirements),
                _ => return Err(unexpected(lit, "!, identifier, or 'end of string'")),
            }
        }
    }

    /// Consumes the separator after a requirement; `true` at the end of input.
    fn after_requirement(&mut self) -> Result<bool, LabelSelectorError> {
        let (tok, lit) = self.consume(Ctx::Values);
        match tok {
            Tok::EndOfString => Ok(true),
            Tok::Comma => match self.lookahead(Ctx::Values) {
                (Tok::Identifier | Tok::DoesNotExist, _) => Ok(false),
                (_, next) => Err(unexpected(next, "identifier after ','")),
            },
            _ => Err(unexpected(lit, "',' or 'end of string'")),
        }
    }

    fn parse_requirement(&mut self) -> Result<LabelRequirement, RequirementError> {
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
    fn parse_key_and_infer_operator(&mut self) -> Result<(&'a str, Option<LabelOp>), RequirementError> {
        let (mut tok, mut lit) = self.consume(Ctx::Values);
        let negated = tok == Tok::DoesNotExist;
        if negated {
            (tok, lit) = self.consume(Ctx::Values);
        }
        if tok != Tok::Identifier {
            return Err(unexpected_in_requirement(lit, "identifier"));
        }
        validate_label_key(lit)?;
        if negated {
            return Ok((lit, Some(LabelOp::DoesNotExist)));
        }
        let at_end = matches!(self.lookahead(Ctx::Values).0, Tok::EndOfString | Tok::Comma);
        Ok((lit, at_end.then_some(LabelOp::Exists)))
    }

    fn parse_operator(&mut self) -> Result<LabelOp, RequirementError> {
        let (tok, lit) = self.consume(Ctx::KeyAndOperator);
        Ok(match tok {
            Tok::In => LabelOp::In,
            Tok::Equals => LabelOp::Equals,
            Tok::DoubleEquals => LabelOp::DoubleEquals,
            Tok::GreaterThan => LabelOp::GreaterThan,
            Tok::LessThan => LabelOp::LessThan,
            Tok::NotIn => LabelOp::NotIn,
            Tok::NotEquals => LabelOp::NotEquals,
            _ => return Err(unexpected_in_requirement(lit, "in, notin, =, ==, !=, gt, lt")),
        })
    }

    /// `(a,b,…)` for `in` / `notin`; `()` is the set `{""}`.
    fn parse_values(&mut self) -> Result<BTreeSet<String>, RequirementError> {
        let (tok, lit) = self.consume(Ctx::Values);
        if tok != Tok::OpenPar {
            return Err(RequirementError::NoOpenParen { found: lit.to_string() });
        }
        let (tok, lit) = self.lookahead(Ctx::Values);
        match tok {
            Tok::Identifier | Tok::Comma => {
                let set = self.parse_identifiers_list()?;
                match self.consume(Ctx::Values).0 {
                    Tok::ClosedPar => Ok(set),
                    _ => Err(unexpected_in_requirement(lit, "')'")),
                }
            }
            Tok::ClosedPar => {
                self.consume(Ctx::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(unexpected_in_requirement(lit, "',', ')' or identifier")),
        }
    }

    /// A comma-separated list of possibly empty identifiers, up to (not including) `)`.
    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, RequirementError> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Ctx::Values);
            match tok {
                Tok::Identifier => {
                    set.insert(lit.to_string());
                    match self.lookahead(Ctx::Values) {
                        (Tok::Comma, _) => continue,
                        (Tok::ClosedPar, _) => return Ok(set),
                        (_, next) => return Err(unexpected_in_requirement(next, "',' or ')'")),
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
                _ => return Err(unexpected_in_requirement(lit, "',', or identifier")),
            }
        }
    }

    /// The single value of `=`, `==`, `!=`, `>`, `<` (empty when absent).
    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, RequirementError> {
        if matches!(self.lookahead(Ctx::Values).0, Tok::EndOfString | Tok::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        match self.consume(Ctx::Values) {
            (Tok::Identifier, lit) => Ok(BTreeSet::from([lit.to_string()])),
            (_, lit) => Err(unexpected_in_requirement(lit, "identifier")),
        }
    }
}

/// `NewRequirement` as reached from the parser: the key is already valid and
/// the value count right, so only the values are checked.
fn new_requirement(key: &str, op: LabelOp, values: BTreeSet<String>) -> Result<LabelRequirement, RequirementError> {
    let values: Vec<String> = values.into_iter().collect();
    let mut errs = Vec::new();
    if matches!(op, LabelOp::GreaterThan | LabelOp::LessThan) {
        for (i, v) in values.iter().enumerate() {
            if v.parse::<i64>().is_err() {
                errs.push(InvalidValue::new(format!("values[{i}]"), v, "for 'Gt', 'Lt' operators, the value must be an integer"));
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let problems = label_value_errors(v);
        if !problems.is_empty() {
            errs.push(InvalidValue::new(format!("values[{i}][{key}]"), v, problems.join("; ")));
        }
    }
    match aggregate(errs) {
        Some(errs) => Err(RequirementError::InvalidValues(errs)),
        None => Ok(LabelRequirement { key: key.to_string(), op, values }),
    }
}

/// `validateLabelKey` with the parser's nil path (`<nil>`).
fn validate_label_key(key: &str) -> Result<(), RequirementError> {
    let problems = label_key_errors(key);
    if problems.is_empty() { Ok(()) } else { Err(RequirementError::InvalidKey(InvalidValue::new("<nil>", key, problems.join("; ")))) }
}

fn unexpected(found: &str, expected: &'static str) -> LabelSelectorError {
    LabelSelectorError::Unexpected { found: found.to_string(), expected }
}

fn unexpected_in_requirement(found: &str, expected: &'static str) -> RequirementError {
    RequirementError::Unexpected { found: found.to_string(), expected }
}

#[cfg(test)]
mod tests;

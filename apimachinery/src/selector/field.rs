//! Field selectors (`fields.ParseSelector`): terms split on unescaped
//! commas and sorted, each term split at its first `!=`, `==` or `=`, the
//! value unescaped (`\\`, `\,`, `\=`); a term with an empty field and an
//! empty value is dropped, as the Go parser's identity `Transform` does.
//!
//! Invariants: requirements come in the order of the sorted raw terms; the
//! field is never unescaped, the value always is.

use std::fmt;

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

/// Why `fields.ParseSelector` refuses a selector; its `Display` is the
/// apiserver's 400 message, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSelectorError {
    /// A term with no `!=`, `==` or `=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    NoOperator {
        /// The whole selector, as given.
        selector: String,
        /// The term.
        term: String,
    },
    /// A backslash in a value before anything but `\`, `,` or `=`, or at
    /// its end: the sequence as written (`\y`, or `\` alone).
    #[error("invalid field selector: invalid escape sequence: {0}")]
    InvalidEscape(String),
    /// A `,` or `=` in a value without its backslash (Go prints the
    /// character with `%v`: its code point, in decimal).
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    Unescaped(char),
}

/// `=` / `==` (both `Equals`) and `!=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    Equals,
    NotEquals,
}

impl FieldSelector {
    /// `fields.ParseSelector`: the selector, or why the apiserver refuses it.
    pub fn parse(s: &str) -> Result<FieldSelector, FieldSelectorError> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut requirements = Vec::new();
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let Some((field, op, raw)) = split_term(part) else {
                return Err(FieldSelectorError::NoOperator { selector: s.to_string(), term: part.to_string() });
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
        self.requirements.iter().all(|r| r.holds(value_of(&r.field).as_ref().as_bytes()))
    }
}

impl FieldRequirement {
    /// Whether a field whose value is `value` (`""` when absent) satisfies the term.
    pub fn holds(&self, value: &[u8]) -> bool {
        (value == self.value.as_bytes()) == (self.op == FieldOp::Equals)
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
fn unescape_value(s: &str) -> Result<String, FieldSelectorError> {
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(FieldSelectorError::InvalidEscape(format!("\\{c}")));
            }
            out.push(c);
            in_slash = false;
        } else {
            match c {
                '\\' => in_slash = true,
                ',' | '=' => return Err(FieldSelectorError::Unescaped(c)),
                _ => out.push(c),
            }
        }
    }
    if in_slash {
        return Err(FieldSelectorError::InvalidEscape("\\".to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;

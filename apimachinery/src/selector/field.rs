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

#[cfg(test)]
mod tests;

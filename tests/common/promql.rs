//! What PromQL expressions name, and what a `/metrics` page exports: a
//! tokenizer enough for metric and label names, shared by the tests of the
//! alert rules and the dashboard against a real kache.

use std::collections::{BTreeMap, BTreeSet};

/// Every series name a kache's `/metrics` shows, with the label names it carries.
pub fn exported(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let series = line.rsplit_once(' ').map_or(line, |(s, _)| s);
        let (name, labels) = series.split_once('{').unwrap_or((series, ""));
        let labels = labels.trim_end_matches('}').split(',').filter_map(|kv| kv.split_once('=')).map(|(k, _)| k.trim().to_string());
        out.entry(name.to_string()).or_default().extend(labels);
    }
    out
}

/// A PromQL token, as much as names need.
#[derive(Debug, PartialEq)]
pub enum Token {
    Ident(String),
    Str,
    Number,
    Punct(char),
    Op(String),
}

/// `expr` as tokens, or what stops it.
pub fn tokens(expr: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            _ if c.is_whitespace() => i += 1,
            '#' => i = chars[i..].iter().position(|&c| c == '\n').map_or(chars.len(), |n| i + n),
            '"' | '\'' | '`' => {
                i += 1;
                while i < chars.len() && chars[i] != c {
                    i += if chars[i] == '\\' && c != '`' { 2 } else { 1 };
                }
                if i >= chars.len() {
                    return Err(format!("an unterminated string in {expr:?}"));
                }
                i += 1;
                out.push(Token::Str);
            }
            _ if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
                    i += 1;
                }
                out.push(Token::Ident(chars[start..i].iter().collect()));
            }
            // Numbers and durations (`0.05`, `5m`, `1h30m`, `1e3`).
            _ if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                out.push(Token::Number);
            }
            '{' | '}' | '(' | ')' | '[' | ']' | ',' => {
                out.push(Token::Punct(c));
                i += 1;
            }
            _ => {
                let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
                let op = ["=~", "!~", "!=", "==", ">=", "<="].into_iter().find(|o| two == *o).map_or_else(|| c.to_string(), str::to_string);
                if !"=~!<>+-*/%^@".contains(c) {
                    return Err(format!("unexpected {c:?} in {expr:?}"));
                }
                i += op.chars().count();
                out.push(Token::Op(op));
            }
        }
    }
    Ok(out)
}

pub const AGGREGATIONS: &[&str] =
    &["sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile"];
pub const GROUPINGS: &[&str] = &["by", "without", "on", "ignoring", "group_left", "group_right"];
pub const KEYWORDS: &[&str] = &["and", "or", "unless", "bool", "offset"];
pub const FUNCTIONS: &[&str] = &[
    "abs",
    "absent",
    "absent_over_time",
    "avg_over_time",
    "ceil",
    "changes",
    "clamp",
    "clamp_max",
    "clamp_min",
    "count_over_time",
    "day_of_month",
    "day_of_week",
    "days_in_month",
    "delta",
    "deriv",
    "exp",
    "floor",
    "histogram_quantile",
    "hour",
    "idelta",
    "increase",
    "irate",
    "label_join",
    "label_replace",
    "last_over_time",
    "ln",
    "log10",
    "log2",
    "max_over_time",
    "min_over_time",
    "minute",
    "month",
    "predict_linear",
    "present_over_time",
    "quantile_over_time",
    "rate",
    "resets",
    "round",
    "scalar",
    "sgn",
    "sort",
    "sort_desc",
    "sqrt",
    "stddev_over_time",
    "stdvar_over_time",
    "sum_over_time",
    "time",
    "timestamp",
    "vector",
    "year",
];

/// What `expr` names.
#[derive(Debug, Default)]
pub struct Names {
    /// Each metric selector: the metric and the label names of its matchers.
    pub selectors: Vec<(String, Vec<String>)>,
    /// Label names of `by`, `without`, `on`, `ignoring` and `group_*` clauses.
    pub grouping: Vec<String>,
}

pub fn names(expr: &str) -> Result<Names, String> {
    let t = tokens(expr)?;
    let mut out = Names::default();
    let ident = |i: usize| match t.get(i) {
        Some(Token::Ident(w)) => Some(w.as_str()),
        _ => None,
    };
    let mut i = 0;
    while i < t.len() {
        let next_is = |c: char| t.get(i + 1) == Some(&Token::Punct(c));
        match ident(i) {
            Some(w) if GROUPINGS.contains(&w) => {
                i += 1;
                if t.get(i) == Some(&Token::Punct('(')) {
                    i += 1;
                    while t.get(i).is_some_and(|x| *x != Token::Punct(')')) {
                        out.grouping.extend(ident(i).map(str::to_string));
                        i += 1;
                    }
                }
            }
            Some(w) if KEYWORDS.contains(&w) || AGGREGATIONS.contains(&w) => i += 1,
            Some(w) if next_is('(') => {
                if !FUNCTIONS.contains(&w) {
                    return Err(format!("{w}: not a PromQL function"));
                }
                i += 1;
            }
            Some(metric) => {
                let mut labels = Vec::new();
                i += 1;
                if t.get(i) == Some(&Token::Punct('{')) {
                    while t.get(i).is_some_and(|x| *x != Token::Punct('}')) {
                        if let (Some(label), Some(Token::Op(op))) = (ident(i), t.get(i + 1))
                            && ["=", "!=", "=~", "!~"].contains(&op.as_str())
                        {
                            labels.push(label.to_string());
                        }
                        i += 1;
                    }
                }
                out.selectors.push((metric.to_string(), labels));
            }
            None if t[i] == Token::Punct('{') => return Err(format!("a selector without a metric name in {expr:?}")),
            // Ranges and subqueries: `[5m]`, `[1h:1m]`.
            None if t[i] == Token::Punct('[') => {
                while t.get(i).is_some_and(|x| *x != Token::Punct(']')) {
                    i += 1;
                }
            }
            None => i += 1,
        }
    }
    Ok(out)
}

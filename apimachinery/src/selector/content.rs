//! Validation texts of label keys and values as `labels.NewRequirement`
//! words them: the `content` package of apimachinery 1.35+ (lengths in
//! "bytes"), `field.Error` and `ErrorList` aggregates.
//!
//! Invariants: every text is byte for byte Go's; values in messages are
//! quoted as Go's `%q` quotes them ([`crate::gostr`]).

use std::fmt;

use crate::gostr::quote;

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
pub(crate) fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
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
pub(crate) fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => edge(f) && edge(l) && b.iter().all(|c| edge(c) || *c == b'-'),
        _ => false,
    }
}

/// `content.IsDNS1123Subdomain`.
pub(crate) fn dns1123_subdomain_errors(v: &str) -> Vec<String> {
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
pub(super) fn label_key_errors(key: &str) -> Vec<String> {
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
pub(super) fn label_value_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > LABEL_MAX_LENGTH {
        errs.push(max_len_error(LABEL_MAX_LENGTH));
    }
    if !(v.is_empty() || is_label_name(v)) {
        errs.push(regex_error(LABEL_VALUE_ERR_MSG, LABEL_VALUE_FMT, LABEL_VALUE_EXAMPLES));
    }
    errs
}

/// One `field.Error` of type `Invalid` for a string value
/// (`field.Invalid(path, value, detail)`); its `Display` is Go's `Error()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidValue {
    /// The field path (`values[0][app]`, or `<nil>` for a key).
    pub path: String,
    /// The value refused.
    pub value: String,
    /// What is wrong with it.
    pub detail: String,
}

impl InvalidValue {
    pub(crate) fn new(path: impl Into<String>, value: &str, detail: impl Into<String>) -> InvalidValue {
        InvalidValue { path: path.into(), value: value.to_string(), detail: detail.into() }
    }
}

impl fmt::Display for InvalidValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: Invalid value: {}: {}", self.path, quote(&self.value), self.detail)
    }
}

/// `ErrorList.ToAggregate()`: duplicates dropped, `None` when none is left.
pub(crate) fn aggregate(errs: Vec<InvalidValue>) -> Option<Vec<InvalidValue>> {
    let mut unique: Vec<InvalidValue> = Vec::new();
    for e in errs {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    (!unique.is_empty()).then_some(unique)
}

/// `Aggregate.Error()`: one error as itself, several in `[a, b]`.
pub(crate) fn aggregate_text(errs: &[InvalidValue]) -> String {
    match errs {
        [one] => one.to_string(),
        _ => format!("[{}]", errs.iter().map(InvalidValue::to_string).collect::<Vec<_>>().join(", ")),
    }
}

//! Query parameters of list and watch requests (`metav1.ListOptions`).
//!
//! Invariants: decoded and validated in the apiserver's order, with its
//! bodies: decoding errors (400), then `ValidateListOptions` (422); a
//! selector's refusal is its parser's message, byte for byte; values in
//! messages are quoted as Go's `%q` quotes them. The storage-level checks
//! (resource version syntax, continue tokens) are in [`crate::list`].

use crate::gostr::quote;
use crate::selector::{FieldSelector, LabelSelector};
use crate::shard::{ShardError, ShardSelector};
use crate::status::{ApiError, FieldError};

/// Decoded `ListOptions`.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: Option<LabelSelector>,
    /// `fieldSelector`.
    pub field_selector: Option<FieldSelector>,
    /// `watch`.
    pub watch: bool,
    /// `allowWatchBookmarks`.
    pub allow_watch_bookmarks: bool,
    /// `resourceVersion` (`""` when unset).
    pub resource_version: String,
    /// `resourceVersionMatch` (`""` when unset).
    pub resource_version_match: String,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u64>,
    /// `limit` (`<= 0` means no limit).
    pub limit: i64,
    /// `continue` (`""` when unset).
    pub continue_token: String,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// `shardSelector` as sent (`""` when unset or empty, which the apiserver
    /// ignores). Parsed by storage, after validation: see [`ListOptions::shard`].
    pub shard_selector: String,
}

/// The conversion `[]string → bool` of apimachinery: only `false` and `0` are false.
pub fn parse_bool(v: &str) -> bool {
    !(v.eq_ignore_ascii_case("false") || v == "0")
}

/// The parameters a [`Query`] keeps: [`ListOptions`]' and `follow` (a followed log streams).
const PARAMETERS: [&str; 12] = [
    "labelSelector",
    "fieldSelector",
    "watch",
    "allowWatchBookmarks",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "limit",
    "continue",
    "sendInitialEvents",
    "shardSelector",
    "follow",
];

/// A request's query decoded once: each parameter the API reads
/// ([`ListOptions`]' and `follow`) with its first value (Go's
/// `url.Values.Get`); others are not kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    values: [Option<String>; PARAMETERS.len()],
}

impl Query {
    /// A query with no parameters.
    pub const EMPTY: Query = Query { values: [const { None }; PARAMETERS.len()] };

    /// `query` (after the `?`) decoded, each parameter's first value kept.
    pub fn parse(query: &str) -> Query {
        let mut values = [const { None }; PARAMETERS.len()];
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            if let Some(i) = PARAMETERS.iter().position(|p| *p == k)
                && values[i].is_none()
            {
                values[i] = Some(v.into_owned());
            }
        }
        Query { values }
    }

    /// The first value of `name`, one of the parameters kept (`None`: absent).
    pub fn get(&self, name: &str) -> Option<&str> {
        let i = PARAMETERS.iter().position(|p| *p == name);
        debug_assert!(i.is_some(), "{name} is not a parameter a query keeps");
        i.and_then(|i| self.values[i].as_deref())
    }

    /// Whether `name` is set and true (apimachinery's `[]string → bool`).
    pub fn on(&self, name: &str) -> bool {
        self.get(name).is_some_and(parse_bool)
    }

    /// Whether the apiserver answers a request for `path` with this query as
    /// an open-ended stream it flushes as it goes (a watch, by parameter or
    /// by the legacy `/watch/` path, or a followed log) rather than as one
    /// document.
    pub fn streams(&self, path: &str) -> bool {
        path.contains("/watch/") || self.on("watch") || self.on("follow")
    }
}

fn parse_int(v: &str) -> Result<i64, ApiError> {
    v.parse().map_err(|_| {
        let why = if !v.is_empty() && v.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit()) {
            "value out of range"
        } else {
            "invalid syntax"
        };
        ApiError::bad_request(format!("strconv.ParseInt: parsing {}: {why}", quote(v)))
    })
}

impl ListOptions {
    /// Decodes a query string. Only the first value of a repeated parameter counts.
    pub fn decode(query: &str) -> Result<Self, ApiError> {
        Self::of(&Query::parse(query))
    }

    /// The options `query` gives, decoded.
    pub fn of(query: &Query) -> Result<Self, ApiError> {
        let value = |name| query.get(name);
        let mut o = ListOptions::default();
        if let Some(s) = value("labelSelector") {
            o.label_selector = Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?);
        }
        if let Some(s) = value("fieldSelector") {
            o.field_selector = Some(FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?);
        }
        o.watch = query.on("watch");
        o.allow_watch_bookmarks = query.on("allowWatchBookmarks");
        o.resource_version = value("resourceVersion").unwrap_or_default().to_string();
        o.resource_version_match = value("resourceVersionMatch").unwrap_or_default().to_string();
        if let Some(t) = value("timeoutSeconds").filter(|t| !t.is_empty()) {
            o.timeout_seconds = Some(parse_int(t)?.max(0) as u64);
        }
        if let Some(l) = value("limit") {
            o.limit = parse_int(l)?;
        }
        o.continue_token = value("continue").unwrap_or_default().to_string();
        o.send_initial_events = value("sendInitialEvents").filter(|v| !v.is_empty()).map(parse_bool);
        o.shard_selector = value("shardSelector").unwrap_or_default().to_string();
        Ok(o)
    }

    /// Decodes `query` as a watch: the `/watch/` path prefix sets `watch`.
    pub fn decode_watch(query: &str) -> Result<Self, ApiError> {
        let mut o = Self::decode(query)?;
        o.watch = true;
        Ok(o)
    }

    /// `ValidateListOptions`, after the 1.34 defaulting of watches to
    /// streaming (`SetListOptionsDefaults`).
    pub fn validate(&mut self) -> Result<(), ApiError> {
        let errs = if self.watch { self.watch_errors() } else { self.list_errors() };
        if errs.is_empty() { Ok(()) } else { Err(ApiError::invalid_list_options(&errs)) }
    }

    fn list_errors(&self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let m = self.resource_version_match.as_str();
        if !m.is_empty() {
            if self.resource_version.is_empty() {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if !self.continue_token.is_empty() {
                errs.push(FieldError::forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"));
            }
            if m != "Exact" && m != "NotOlderThan" {
                errs.push(FieldError::not_supported("resourceVersionMatch", m, &["Exact", "NotOlderThan", ""]));
            }
            if m == "Exact" && self.resource_version == "0" {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if self.send_initial_events.is_some() {
            errs.push(FieldError::forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
        }
        errs
    }

    fn watch_errors(&self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let m = self.resource_version_match.as_str();
        if self.send_initial_events.is_some() && m != "NotOlderThan" {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !m.is_empty() {
            if self.send_initial_events.is_none() {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                errs.push(FieldError::not_supported("resourceVersionMatch", m, &["NotOlderThan"]));
            }
        }
        errs
    }

    /// The shard selector, when one is set, as an apiserver with
    /// `ShardedListAndWatch` on reads it (an empty parameter is none).
    pub fn shard(&self) -> Result<Option<ShardSelector>, ShardError> {
        if self.shard_selector.is_empty() { Ok(None) } else { ShardSelector::parse(&self.shard_selector).map(Some) }
    }

    /// Whether this watch starts with the state as ADDED events: explicitly
    /// (`sendInitialEvents=true`) or by the 1.34 default for an unset or `0`
    /// revision.
    pub fn sends_initial_events(&self) -> bool {
        match self.send_initial_events {
            Some(v) => v,
            None => self.resource_version_match.is_empty() && (self.resource_version.is_empty() || self.resource_version == "0"),
        }
    }
}

/// Whether the apiserver answers `path?query` as an open-ended stream ([`Query::streams`]).
pub fn is_stream(path: &str, query: &str) -> bool {
    Query::parse(query).streams(path)
}

/// `resourceVersion` syntax as `ParseResourceVersion` checks it: `""` and `0` are 0.
pub fn parse_resource_version(rv: &str) -> Result<u64, ApiError> {
    if rv.is_empty() {
        return Ok(0);
    }
    rv.parse::<u64>().map_err(|_| {
        let why = if rv.bytes().all(|b| b.is_ascii_digit()) { "value out of range" } else { "invalid syntax" };
        let q = quote(rv);
        ApiError::bad_request(format!(
            "invalid resource version: resourceVersion: Invalid value: {q}: strconv.ParseUint: parsing {q}: {why}"
        ))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn streams_are_watches_and_followed_logs() {
        assert!(super::is_stream("/api/v1/pods", "watch=1"));
        assert!(super::is_stream("/api/v1/pods", "watch=true&resourceVersion=5"));
        assert!(super::is_stream("/api/v1/watch/pods", ""));
        assert!(super::is_stream("/api/v1/namespaces/a/pods/p/log", "follow=true"));
        assert!(!super::is_stream("/api/v1/pods", "watch=false"));
        assert!(!super::is_stream("/api/v1/pods", "limit=500"));
        assert!(!super::is_stream("/api/v1/namespaces/a/pods/p/log", "follow=0"));
    }

    use super::*;

    fn validate(q: &str) -> Result<ListOptions, ApiError> {
        let mut o = ListOptions::decode(q)?;
        o.validate().map(|_| o)
    }

    #[test]
    fn several_validation_errors_are_joined_in_brackets() {
        let e = validate("resourceVersionMatch=Newest&continue=x").unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message.starts_with(
                "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless"
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn watches_default_to_initial_events_only_for_unset_or_zero_revisions() {
        assert!(ListOptions::decode("watch=1").unwrap().sends_initial_events());
        assert!(ListOptions::decode("watch=1&resourceVersion=0").unwrap().sends_initial_events());
        assert!(!ListOptions::decode("watch=1&resourceVersion=5").unwrap().sends_initial_events());
        assert!(!ListOptions::decode("watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan").unwrap().sends_initial_events());
    }

    #[test]
    fn the_first_value_of_each_parameter_counts_unescaped() {
        let o = ListOptions::decode(
            "limit=5&limit=x&fieldSelector=spec.nodeName%3Dnode-1&resource%56ersion=7&resourceVersion=9&watch=FALSE&allowWatchBookmarks=&timeoutSeconds=",
        )
        .unwrap();
        assert_eq!(o.limit, 5);
        assert_eq!(o.field_selector.unwrap().to_string(), "spec.nodeName=node-1");
        assert_eq!(o.resource_version, "7", "a key is unescaped before it is named");
        assert!(!o.watch, "FALSE is false, as apimachinery reads it");
        assert!(o.allow_watch_bookmarks, "an empty value is true");
        assert_eq!(o.timeout_seconds, None, "an empty timeout is none");
        assert!(!ListOptions::decode("watch=0&watch=1").unwrap().watch, "the second value is not read");
    }

    #[test]
    fn bad_numbers_are_bad_requests() {
        assert_eq!(ListOptions::decode("limit=abc").unwrap_err().message, "strconv.ParseInt: parsing \"abc\": invalid syntax");
        assert_eq!(
            parse_resource_version("abc").unwrap_err().message,
            "invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
        );
    }
}

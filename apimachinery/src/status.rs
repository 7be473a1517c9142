//! `metav1.Status` error bodies, byte-compatible with kube-apiserver.
//!
//! Every refusal kache or the simulator makes is an [`ApiError`];
//! [`ApiError::body`] renders it with the apiserver's field order
//! (`kind, apiVersion, metadata, status, message, reason, details, code`) and
//! its exact messages, values quoted as Go's `%q` quotes them (the captures
//! in `tests/reference/` are the ground truth).

use serde_json::{Map, Value, json};

use crate::gostr::quote;
use crate::resource::Resource;

/// One Kubernetes error: an HTTP code, a `reason` and a message, plus the
/// optional parts of a `Status` body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code, repeated as `code` in the body.
    pub code: u16,
    /// `metav1.StatusReason`, e.g. `NotFound`.
    pub reason: &'static str,
    /// Human-readable message, exactly as the apiserver words it.
    pub message: String,
    /// `details`, already in the apiserver's field order; `None` omits it.
    pub details: Option<Box<Value>>,
    /// `metadata.continue` (only the expired-continue error sets it).
    pub continue_token: Option<String>,
    /// `details.retryAfterSeconds`, also sent as a `Retry-After` header.
    pub retry_after: Option<u32>,
}

/// One `field.Error` of a 422 Invalid: (cause reason, field, message after the field).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// Cause reason, e.g. `FieldValueForbidden`.
    pub reason: &'static str,
    /// The field path, e.g. `resourceVersionMatch`.
    pub field: String,
    /// The error without the field, e.g. `Forbidden: resourceVersionMatch is forbidden …`.
    pub detail: String,
}

impl FieldError {
    /// `field.Forbidden(field, msg)`.
    pub fn forbidden(field: &str, msg: &str) -> Self {
        Self { reason: "FieldValueForbidden", field: field.into(), detail: format!("Forbidden: {msg}") }
    }

    /// `field.NotSupported(field, value, supported)`.
    pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        Self {
            reason: "FieldValueNotSupported",
            field: field.into(),
            detail: format!("Unsupported value: {}: supported values: {}", quote(value), list.join(", ")),
        }
    }

    /// `field.Required(field, msg)`.
    pub fn required(field: &str, msg: &str) -> Self {
        Self { reason: "FieldValueRequired", field: field.into(), detail: format!("Required value: {msg}") }
    }
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self { code, reason, message: message.into(), details: None, continue_token: None, retry_after: None }
    }

    /// 400 BadRequest with a bare message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401 for a request that presents neither the token nor a client certificate.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 404 NotFound for a missing object of `res`.
    pub fn not_found(res: &Resource, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{} {} not found", res.qualified(), quote(name))).with_details(res, name)
    }

    /// 404 for a path the server has no handler for.
    pub fn no_such_path() -> Self {
        Self::new(404, "NotFound", "the server could not find the requested resource").with_empty_details()
    }

    /// 404 for a create into a namespace that does not exist.
    pub fn namespace_not_found(ns: &str) -> Self {
        Self::new(404, "NotFound", format!("namespaces {} not found", quote(ns)))
            .with_raw_details(json!({"name": ns, "kind": "namespaces"}))
    }

    /// 405 for a verb the resource does not support.
    pub fn method_not_allowed() -> Self {
        Self::new(405, "MethodNotAllowed", "the server does not allow this method on the requested resource").with_empty_details()
    }

    /// 409 AlreadyExists.
    pub fn already_exists(res: &Resource, name: &str) -> Self {
        Self::new(409, "AlreadyExists", format!("{} {} already exists", res.qualified(), quote(name))).with_details(res, name)
    }

    /// 409 Conflict for a stale `resourceVersion` or a failed precondition.
    pub fn conflict(res: &Resource, name: &str, why: &str) -> Self {
        Self::new(409, "Conflict", format!("Operation cannot be fulfilled on {} {}: {why}", res.qualified(), quote(name)))
            .with_details(res, name)
    }

    /// 409 Conflict for an update whose `resourceVersion` is not the stored one.
    pub fn stale(res: &Resource, name: &str) -> Self {
        Self::conflict(res, name, "the object has been modified; please apply your changes to the latest version and try again")
    }

    /// 410 Expired for a list at a compacted revision.
    pub fn list_too_old() -> Self {
        Self::new(410, "Expired", "The resourceVersion for the provided list is too old.")
    }

    /// 410 Expired for a continue token at a compacted revision; `token` lets
    /// the client continue at the latest revision.
    pub fn continue_too_old(token: String) -> Self {
        let mut e = Self::new(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        );
        e.continue_token = Some(token);
        e
    }

    /// The 410 a watch sends as an ERROR event when its revision is compacted.
    pub fn watch_too_old(requested: u64, oldest: u64) -> Self {
        Self::new(410, "Expired", format!("too old resource version: {requested} ({oldest})"))
    }

    /// 504 after waiting for a revision the server has not reached.
    pub fn too_large_rv(requested: u64, current: u64) -> Self {
        let mut e = Self::new(504, "Timeout", format!("Timeout: Too large resource version: {requested}, current: {current}"));
        e.details = Some(Box::new(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1
        })));
        e.retry_after = Some(1);
        e
    }

    /// 429 for a watch while the watch cache (re)initializes after a restart.
    pub fn initializing() -> Self {
        let mut e = Self::new(429, "TooManyRequests", "storage is (re)initializing");
        e.details = Some(Box::new(json!({"retryAfterSeconds": 1})));
        e.retry_after = Some(1);
        e
    }

    /// 422 Invalid of the list options (group `meta.k8s.io`, kind `ListOptions`).
    pub fn invalid_list_options(errs: &[FieldError]) -> Self {
        Self::invalid("meta.k8s.io", "ListOptions", "", errs)
    }

    /// 422 Invalid, as `errors.NewInvalid(GroupKind, name, errs)` words it.
    pub fn invalid(group: &str, kind: &str, name: &str, errs: &[FieldError]) -> Self {
        let qualified = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
        let lines: Vec<String> = errs.iter().map(|e| format!("{}: {}", e.field, e.detail)).collect();
        let joined = if lines.len() == 1 { lines[0].clone() } else { format!("[{}]", lines.join(", ")) };
        let causes: Vec<Value> = errs.iter().map(|e| json!({"reason": e.reason, "message": e.detail, "field": e.field})).collect();
        let mut details = Map::new();
        if !name.is_empty() {
            details.insert("name".into(), name.into());
        }
        if !group.is_empty() {
            details.insert("group".into(), group.into());
        }
        details.insert("kind".into(), kind.into());
        details.insert("causes".into(), causes.into());
        let mut e = Self::new(422, "Invalid", format!("{qualified} {} is invalid: {joined}", quote(name)));
        e.details = Some(Box::new(Value::Object(details)));
        e
    }

    /// 406 when no requested media type can be served, by an apiserver
    /// with its `CBORServingAndStorage` gate on (`cbor`, whose
    /// representations then include CBOR, as kube-apiserver 1.36.2 lists
    /// them) or off.
    pub fn not_acceptable_gated(cbor: bool) -> Self {
        let representations = if cbor {
            "application/json, application/yaml, application/vnd.kubernetes.protobuf, application/cbor, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch, application/cbor-seq"
        } else {
            "application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        };
        Self::new(406, "NotAcceptable", format!("406: Not Acceptable\n\nAvailable representations: {representations}")).with_empty_details()
    }

    /// 406 for a representation the object cannot take, with the apiserver's reason.
    pub fn not_acceptable_because(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    /// 415 for a request body of a type the verb cannot take.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {})",
                quote(content_type)
            ),
        )
    }

    /// 403 Forbidden with the apiserver's message and details (see `auth::Attributes::forbidden`).
    pub fn forbidden_with(message: String, details: Value) -> Self {
        Self::new(403, "Forbidden", message).with_raw_details(details)
    }

    /// 500: the server failed to answer (e.g. an object it cannot encode).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// An error the apiserver's storage returns as a plain Go error: its code, no reason.
    pub fn without_reason(code: u16, message: impl Into<String>) -> Self {
        Self::new(code, "", message)
    }

    /// 503 while the simulated apiserver is "restarting".
    pub fn unavailable() -> Self {
        Self::new(503, "ServiceUnavailable", "the server is currently unable to handle the request")
    }

    fn with_details(self, res: &Resource, name: &str) -> Self {
        let mut d = Map::new();
        d.insert("name".into(), name.into());
        if !res.group.is_empty() {
            d.insert("group".into(), res.group.clone().into());
        }
        d.insert("kind".into(), res.plural.clone().into());
        self.with_raw_details(Value::Object(d))
    }

    fn with_empty_details(self) -> Self {
        self.with_raw_details(json!({}))
    }

    fn with_raw_details(mut self, details: Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// The `Status` object, fields in the apiserver's order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), "Status".into());
        m.insert("apiVersion".into(), "v1".into());
        let mut meta = Map::new();
        if let Some(c) = &self.continue_token {
            meta.insert("continue".into(), c.clone().into());
        }
        m.insert("metadata".into(), Value::Object(meta));
        m.insert("status".into(), "Failure".into());
        m.insert("message".into(), self.message.clone().into());
        if !self.reason.is_empty() {
            m.insert("reason".into(), self.reason.into());
        }
        if let Some(d) = &self.details {
            m.insert("details".into(), (**d).clone());
        }
        m.insert("code".into(), self.code.into());
        Value::Object(m)
    }

    /// The compact JSON body.
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_value()).expect("a Status always serializes")
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

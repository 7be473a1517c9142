//! An `audit.k8s.io/v1` `Event`, written as kube-apiserver writes it: the
//! struct's fields in their Go order, empty optional fields left out
//! (`omitempty`), strings escaped as Go's `encoding/json` escapes them
//! (`<`, `>`, `&`, U+2028 and U+2029 too), timestamps as `metav1.MicroTime`
//! (RFC 3339 in UTC with microseconds), annotations in key order.
//!
//! Invariant: [`Event::fields`] is the event's JSON object without its
//! braces and type; a log line and a webhook batch wrap those same bytes.

use std::collections::BTreeMap;
use std::time::SystemTime;

use apimachinery::auth::UserInfo;
use apimachinery::json::write_go_string;
use apimachinery::status::ApiError;
use serde_json::Value;

/// How much of a request is recorded (`audit.Level`), in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Nothing.
    None,
    /// Who, what, when, the answer's status: no bodies.
    Metadata,
    /// Also the request's body (kache's reads have none).
    Request,
    /// Also the response's body.
    RequestResponse,
}

impl Level {
    /// Every level, in the apiserver's order (its validation lists them so).
    pub const ALL: [Level; 4] = [Level::None, Level::Metadata, Level::Request, Level::RequestResponse];

    /// The level's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }

    /// The level named `s`.
    pub fn parse(s: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

/// When in a request's life an event is written (`audit.Stage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// As soon as the request is received, before any answer.
    RequestReceived,
    /// Once the response head is sent, for long-running requests (watches).
    ResponseStarted,
    /// Once the response body has ended.
    ResponseComplete,
    /// When the handler panicked.
    Panic,
}

impl Stage {
    /// Every stage, in the apiserver's order.
    pub const ALL: [Stage; 4] = [Stage::RequestReceived, Stage::ResponseStarted, Stage::ResponseComplete, Stage::Panic];

    /// The stage's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    /// The stage named `s`.
    pub fn parse(s: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// A set of stages (a rule's `omitStages`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stages(u8);

impl Stages {
    /// `self` with `stage`.
    pub fn with(self, stage: Stage) -> Stages {
        Stages(self.0 | 1 << stage as u8)
    }

    /// Both sets' stages.
    pub fn union(self, other: Stages) -> Stages {
        Stages(self.0 | other.0)
    }

    /// Whether `stage` is in the set.
    pub fn has(self, stage: Stage) -> bool {
        self.0 & 1 << stage as u8 != 0
    }
}

impl FromIterator<Stage> for Stages {
    fn from_iter<I: IntoIterator<Item = Stage>>(iter: I) -> Stages {
        iter.into_iter().fold(Stages::default(), Stages::with)
    }
}

/// The object a request names (`audit.ObjectReference`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectRef {
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub api_group: String,
    pub api_version: String,
    pub subresource: String,
}

/// The answer's `metav1.Status` as the event holds it: the code, and for a
/// refusal its status, message, reason and details (never its metadata).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponseStatus {
    pub code: u16,
    pub status: &'static str,
    pub message: String,
    pub reason: String,
    pub details: Option<Value>,
}

impl ResponseStatus {
    /// The status of an answer with `code` and no `Status` body.
    pub fn code(code: u16) -> ResponseStatus {
        ResponseStatus { code, ..ResponseStatus::default() }
    }

    /// The status of a refusal.
    pub fn refusal(e: &ApiError) -> ResponseStatus {
        ResponseStatus {
            code: e.code,
            status: "Failure",
            message: e.message.clone(),
            reason: e.reason.to_string(),
            details: e.details.as_deref().cloned(),
        }
    }
}

/// One audit event.
#[derive(Debug, Clone)]
pub struct Event {
    pub level: Level,
    pub audit_id: String,
    pub stage: Stage,
    pub request_uri: String,
    pub verb: String,
    /// The authenticated user (`None`: not authenticated, written `{}`).
    pub user: Option<UserInfo>,
    pub impersonated_user: Option<UserInfo>,
    pub source_ips: Vec<String>,
    pub user_agent: String,
    pub object_ref: Option<ObjectRef>,
    pub response_status: Option<ResponseStatus>,
    /// The response body as compact JSON, Go-escaped (at `RequestResponse`).
    pub response_object: Option<Vec<u8>>,
    pub request_received: SystemTime,
    pub stage_timestamp: SystemTime,
    pub annotations: BTreeMap<&'static str, String>,
}

/// The `kind` and `apiVersion` a log line starts with.
pub const TYPE: &[u8] = br#""kind":"Event","apiVersion":"audit.k8s.io/v1""#;

impl Event {
    /// The event's fields, comma-separated, without braces or type.
    pub fn fields(&self) -> Vec<u8> {
        let mut s = String::with_capacity(768);
        s.push_str(r#""level":"#);
        write_go_string(&mut s, self.level.as_str());
        s.push_str(r#","auditID":"#);
        write_go_string(&mut s, &self.audit_id);
        s.push_str(r#","stage":"#);
        write_go_string(&mut s, self.stage.as_str());
        s.push_str(r#","requestURI":"#);
        write_go_string(&mut s, &self.request_uri);
        s.push_str(r#","verb":"#);
        write_go_string(&mut s, &self.verb);
        s.push_str(r#","user":"#);
        user(&mut s, self.user.as_ref());
        if let Some(u) = &self.impersonated_user {
            s.push_str(r#","impersonatedUser":"#);
            user(&mut s, Some(u));
        }
        if !self.source_ips.is_empty() {
            s.push_str(r#","sourceIPs":"#);
            strings(&mut s, &self.source_ips);
        }
        if !self.user_agent.is_empty() {
            s.push_str(r#","userAgent":"#);
            write_go_string(&mut s, &self.user_agent);
        }
        if let Some(o) = &self.object_ref {
            s.push_str(r#","objectRef":{"#);
            let mut first = true;
            for (key, value) in [
                ("resource", &o.resource),
                ("namespace", &o.namespace),
                ("name", &o.name),
                ("apiGroup", &o.api_group),
                ("apiVersion", &o.api_version),
                ("subresource", &o.subresource),
            ] {
                if !value.is_empty() {
                    field(&mut s, &mut first, key);
                    write_go_string(&mut s, value);
                }
            }
            s.push('}');
        }
        if let Some(r) = &self.response_status {
            s.push_str(r#","responseStatus":{"metadata":{}"#);
            let mut first = false;
            for (key, value) in [("status", r.status), ("message", &r.message), ("reason", &r.reason)] {
                if !value.is_empty() {
                    field(&mut s, &mut first, key);
                    write_go_string(&mut s, value);
                }
            }
            if let Some(d) = &r.details {
                field(&mut s, &mut first, "details");
                go_json(&mut s, d);
            }
            if r.code != 0 {
                field(&mut s, &mut first, "code");
                s.push_str(&r.code.to_string());
            }
            s.push('}');
        }
        let mut out = s.into_bytes();
        if let Some(body) = &self.response_object {
            out.extend_from_slice(br#","responseObject":"#);
            out.extend_from_slice(body);
        }
        let mut s = String::with_capacity(160);
        s.push_str(r#","requestReceivedTimestamp":"#);
        write_go_string(&mut s, &micro_time(self.request_received));
        s.push_str(r#","stageTimestamp":"#);
        write_go_string(&mut s, &micro_time(self.stage_timestamp));
        if !self.annotations.is_empty() {
            s.push_str(r#","annotations":{"#);
            let mut first = true;
            for (k, v) in &self.annotations {
                if !first {
                    s.push(',');
                }
                first = false;
                write_go_string(&mut s, k);
                s.push(':');
                write_go_string(&mut s, v);
            }
            s.push('}');
        }
        out.extend_from_slice(s.as_bytes());
        out
    }
}

/// `key` of an object being written, after a comma unless it is the first.
fn field(s: &mut String, first: &mut bool, key: &str) {
    if !*first {
        s.push(',');
    }
    *first = false;
    write_go_string(s, key);
    s.push(':');
}

fn strings(s: &mut String, items: &[String]) {
    s.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_go_string(s, item);
    }
    s.push(']');
}

/// `authenticationv1.UserInfo`: every field `omitempty`.
fn user(s: &mut String, u: Option<&UserInfo>) {
    s.push('{');
    if let Some(u) = u {
        let mut first = true;
        if !u.name.is_empty() {
            field(s, &mut first, "username");
            write_go_string(s, &u.name);
        }
        if !u.uid.is_empty() {
            field(s, &mut first, "uid");
            write_go_string(s, &u.uid);
        }
        if !u.groups.is_empty() {
            field(s, &mut first, "groups");
            strings(s, &u.groups);
        }
        if !u.extra.is_empty() {
            field(s, &mut first, "extra");
            s.push('{');
            for (i, (k, vs)) in u.extra.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                write_go_string(s, k);
                s.push(':');
                strings(s, vs);
            }
            s.push('}');
        }
    }
    s.push('}');
}

/// `v` as Go's `encoding/json` writes it (objects in their order).
pub fn go_json(s: &mut String, v: &Value) {
    match v {
        Value::Null => s.push_str("null"),
        Value::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => s.push_str(&n.to_string()),
        Value::String(t) => write_go_string(s, t),
        Value::Array(items) => {
            s.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                go_json(s, item);
            }
            s.push(']');
        }
        Value::Object(m) => {
            s.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                write_go_string(s, k);
                s.push(':');
                go_json(s, item);
            }
            s.push('}');
        }
    }
}

/// A JSON document as Go's `encoding/json` embeds a raw message: whitespace
/// outside strings dropped, `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub fn compact(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                b'<' | b'>' | b'&' => {
                    out.extend_from_slice(format!("\\u{:04x}", c).as_bytes());
                    i += 1;
                    continue;
                }
                0xE2 if src.get(i + 1) == Some(&0x80) && matches!(src.get(i + 2), Some(0xA8 | 0xA9)) => {
                    out.extend_from_slice(if src[i + 2] == 0xA8 { b"\\u2028" } else { b"\\u2029" });
                    i += 3;
                    continue;
                }
                _ => {}
            }
            out.push(c);
        } else if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            in_string = c == b'"';
            out.push(c);
        }
        i += 1;
    }
    out
}

/// `t` as `metav1.MicroTime` writes it: `2006-01-02T15:04:05.000000Z`.
pub fn micro_time(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// A fresh audit ID, as the apiserver's `uuid.New()` makes it.
pub fn new_id() -> String {
    apimachinery::audit::fresh(rand::random())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn event() -> Event {
        let at = UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
        Event {
            level: Level::Metadata,
            audit_id: "0f8b0f0e-5e8e-4c3c-9d7e-2a0b8f7c6d5e".into(),
            stage: Stage::ResponseComplete,
            request_uri: "/api/v1/pods?limit=500".into(),
            verb: "list".into(),
            user: Some(UserInfo { name: "alice".into(), groups: vec!["dev".into(), "system:authenticated".into()], ..UserInfo::default() }),
            impersonated_user: None,
            source_ips: vec!["127.0.0.1".into()],
            user_agent: "kubectl/v1.36.2 (linux/amd64) kubernetes/98b3519".into(),
            object_ref: Some(ObjectRef { resource: "pods".into(), api_version: "v1".into(), ..ObjectRef::default() }),
            response_status: Some(ResponseStatus::code(200)),
            response_object: None,
            request_received: at,
            stage_timestamp: at + Duration::from_millis(2),
            annotations: [("authorization.k8s.io/decision", "allow".to_string()), ("authorization.k8s.io/reason", "<&>".to_string())]
                .into(),
        }
    }

    #[test]
    fn an_event_is_written_in_the_apiservers_field_order() {
        let line = String::from_utf8(event().fields()).unwrap();
        assert_eq!(
            line,
            concat!(
                r#""level":"Metadata","auditID":"0f8b0f0e-5e8e-4c3c-9d7e-2a0b8f7c6d5e","stage":"ResponseComplete","#,
                r#""requestURI":"/api/v1/pods?limit=500","verb":"list","user":{"username":"alice","groups":["dev","system:authenticated"]},"#,
                r#""sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.36.2 (linux/amd64) kubernetes/98b3519","#,
                r#""objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"#,
                r#""requestReceivedTimestamp":"2023-11-14T22:13:20.123456Z","stageTimestamp":"2023-11-14T22:13:20.125456Z","#,
                r#""annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"\u003c\u0026\u003e"}"#
            )
        );
    }

    #[test]
    fn a_refusal_keeps_its_status_but_not_its_metadata() {
        let e = ApiError::forbidden_with("pods is forbidden: User \"bob\" cannot list".into(), serde_json::json!({"kind": "pods"}));
        let mut ev = event();
        ev.response_status = Some(ResponseStatus::refusal(&e));
        ev.user = None;
        let line = String::from_utf8(ev.fields()).unwrap();
        assert!(line.contains(r#""user":{},"#), "{line}");
        assert!(
            line.contains(r#""responseStatus":{"metadata":{},"status":"Failure","message":"pods is forbidden: User \"bob\" cannot list","reason":"Forbidden","details":{"kind":"pods"},"code":403}"#),
            "{line}"
        );
    }

    #[test]
    fn bodies_are_compacted_and_escaped_as_go_embeds_them() {
        let body = "{\n  \"a\": \"x <b> & \u{2028} \\\" y\",\n  \"n\": [1, 2]\n}\n";
        assert_eq!(String::from_utf8(compact(body.as_bytes())).unwrap(), r#"{"a":"x \u003cb\u003e \u0026 \u2028 \" y","n":[1,2]}"#);
    }

    #[test]
    fn stages_form_sets() {
        let s: Stages = [Stage::RequestReceived, Stage::Panic].into_iter().collect();
        assert!(s.has(Stage::RequestReceived) && s.has(Stage::Panic) && !s.has(Stage::ResponseComplete));
        assert!(s.union(Stages::default().with(Stage::ResponseComplete)).has(Stage::ResponseComplete));
    }
}

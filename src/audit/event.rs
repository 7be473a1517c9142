//! An `audit.k8s.io/v1` `Event`, written as kube-apiserver writes it: the
//! struct's fields in their Go order, empty optional fields left out
//! (`omitempty`), strings escaped as Go's `encoding/json` escapes them
//! (`<`, `>`, `&`, U+2028 and U+2029 too), timestamps as `metav1.MicroTime`
//! (RFC 3339 in UTC with microseconds), annotations in key order.
//!
//! Invariant: [`Event::line`] is the log line (the object and a newline);
//! a webhook batch holds the same bytes without the type ([`LINE_START`]).

use std::borrow::Cow;
use std::fmt::Write;
use std::net::IpAddr;
use std::time::SystemTime;

use apimachinery::auth::UserInfo;
use apimachinery::json::{write_go_escaped, write_go_string};
use apimachinery::status::ApiError;
use serde_json::Value;
use smallvec::SmallVec;

use super::json::{go_json, ip_strings, micro_time};

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
    pub(crate) fn union(self, other: Stages) -> Stages {
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObjectRef<'a> {
    pub resource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub api_group: &'a str,
    pub api_version: &'a str,
    pub subresource: &'a str,
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

/// What every event of a request says of the request itself, known as it arrives.
#[derive(Debug, Clone, Copy)]
pub struct Requested<'a> {
    pub audit_id: &'a str,
    /// The request URI (`req.URL.RequestURI()`): its path and, after a `?` unless empty, its query.
    pub request_uri: (&'a str, &'a str),
    pub verb: &'a str,
    pub source_ips: &'a [IpAddr],
    pub user_agent: &'a str,
    pub object_ref: Option<ObjectRef<'a>>,
    pub received: SystemTime,
}

/// Where each part of an [`Event`]'s fixed buffer ends (byte offsets into it).
#[derive(Debug, Clone, Copy)]
struct Ends {
    /// `,"auditID":…`
    audit_id: usize,
    /// `,"requestURI":…,"verb":…`
    request: usize,
    /// `,"sourceIPs":…,"userAgent":…,"objectRef":{…}`
    origin: usize,
    /// `,"requestReceivedTimestamp":…`
    received: usize,
    /// `,"user":{…}` (equal to `received` until the user is known); the impersonated user follows to the end.
    user: usize,
}

/// One request's audit event, stage after stage. What does not change between stages is written once, as JSON,
/// into one buffer, in the order it becomes known (requests are many, and each writes two or three events):
/// as the request arrives, `,"auditID":…` up to [`Ends::audit_id`], `,"requestURI":…,"verb":…` up to
/// [`Ends::request`], `,"sourceIPs":…,"userAgent":…,"objectRef":{…}` (those given) up to [`Ends::origin`],
/// `,"requestReceivedTimestamp":…` up to [`Ends::received`]; then `,"user":{…}` up to [`Ends::user`] once
/// authentication has said who sent it, and
/// `,"impersonatedUser":{…}` (and `,"authenticationMetadata":{…}` when a constrained mode allowed it) to the end
/// once impersonation has said whom it acts as. [`Event::write_line`] puts
/// them in the apiserver's order. The buffer is the only allocation an audited request makes until it is answered.
#[derive(Debug, Clone)]
pub struct Event {
    fixed: String,
    ends: Ends,
    received_at: SystemTime,
    /// How much of the request is recorded (the policy's answer; `Metadata` until it is asked).
    pub level: Level,
    /// The answer's status (none before the answer).
    pub response_status: Option<ResponseStatus>,
    /// The response body as compact JSON, Go-escaped (at `RequestResponse`).
    pub response_object: Option<String>,
    /// In key order, each key once.
    annotations: SmallVec<[(&'static str, Cow<'static, str>); 4]>,
}

/// What every log line begins with: the event's braces and type.
pub(crate) const LINE_START: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","#;

impl Event {
    /// The event of the request `r`, sent by no one yet (`"user":{}` until [`Event::user`]).
    pub fn new(r: &Requested<'_>) -> Event {
        let mut s = String::with_capacity(640);
        s.push_str(r#","auditID":"#);
        write_go_string(&mut s, r.audit_id);
        let request = s.len();
        s.push_str(r#","requestURI":"#);
        let (path, query) = r.request_uri;
        s.push('"');
        write_go_escaped(&mut s, path);
        if !query.is_empty() {
            s.push('?');
            write_go_escaped(&mut s, query);
        }
        s.push('"');
        s.push_str(r#","verb":"#);
        write_go_string(&mut s, r.verb);
        let origin = s.len();
        if !r.source_ips.is_empty() {
            s.push_str(r#","sourceIPs":["#);
            ip_strings(&mut s, r.source_ips);
            s.push(']');
        }
        if !r.user_agent.is_empty() {
            s.push_str(r#","userAgent":"#);
            write_go_string(&mut s, r.user_agent);
        }
        if let Some(o) = &r.object_ref {
            s.push_str(r#","objectRef":{"#);
            let mut first = true;
            for (key, value) in [
                ("resource", o.resource),
                ("namespace", o.namespace),
                ("name", o.name),
                ("apiGroup", o.api_group),
                ("apiVersion", o.api_version),
                ("subresource", o.subresource),
            ] {
                if !value.is_empty() {
                    field(&mut s, &mut first, key);
                    write_go_string(&mut s, value);
                }
            }
            s.push('}');
        }
        let received = s.len();
        s.push_str(r#","requestReceivedTimestamp":"#);
        micro_time(&mut s, r.received);
        let end = s.len();
        Event {
            fixed: s,
            ends: Ends { audit_id: request, request: origin, origin: received, received: end, user: end },
            received_at: r.received,
            level: Level::Metadata,
            response_status: None,
            response_object: None,
            annotations: SmallVec::new(),
        }
    }

    /// The user who sent the request (`None`: not authenticated, written `{}`); no impersonation yet.
    pub fn user(&mut self, u: Option<&UserInfo>) {
        self.fixed.truncate(self.ends.received);
        self.fixed.push_str(r#","user":"#);
        user(&mut self.fixed, u);
        self.ends.user = self.fixed.len();
    }

    /// The user the request acts as, and the constrained impersonation mode's verb that allowed it.
    pub fn impersonate(&mut self, u: &UserInfo, constraint: Option<&str>) {
        if self.ends.user == self.ends.received {
            self.user(None);
        }
        self.fixed.truncate(self.ends.user);
        self.fixed.push_str(r#","impersonatedUser":"#);
        user(&mut self.fixed, Some(u));
        if let Some(c) = constraint {
            self.fixed.push_str(r#","authenticationMetadata":{"impersonationConstraint":"#);
            write_go_string(&mut self.fixed, c);
            self.fixed.push('}');
        }
    }

    /// The annotation `key`, unless it has one already (the first value set stays, as `addAuditAnnotationLocked`).
    pub fn annotate(&mut self, key: &'static str, value: impl Into<Cow<'static, str>>) {
        if let Err(at) = self.annotations.binary_search_by(|(k, _)| k.cmp(&key)) {
            self.annotations.insert(at, (key, value.into()));
        }
    }

    /// Appends the event at `stage` as a log line (`{"kind":"Event",…}` and
    /// a newline) to `s`, stamped `at` (`RequestReceived`: when the request arrived).
    pub(crate) fn write_line(&self, stage: Stage, at: SystemTime, s: &mut String) {
        let at = if stage == Stage::RequestReceived { self.received_at } else { at };
        s.push_str(LINE_START);
        let e = self.ends;
        for part in [r#""level":""#, self.level.as_str(), "\""] {
            s.push_str(part);
        }
        s.push_str(&self.fixed[..e.audit_id]);
        for part in [r#","stage":""#, stage.as_str(), "\""] {
            s.push_str(part);
        }
        s.push_str(&self.fixed[e.audit_id..e.request]);
        match e.received < self.fixed.len() {
            true => s.push_str(&self.fixed[e.received..]),
            false => s.push_str(r#","user":{}"#),
        }
        s.push_str(&self.fixed[e.request..e.origin]);
        if let Some(r) = &self.response_status {
            s.push_str(r#","responseStatus":{"metadata":{}"#);
            let mut first = false;
            for (key, value) in [("status", r.status), ("message", &r.message), ("reason", &r.reason)] {
                if !value.is_empty() {
                    field(s, &mut first, key);
                    write_go_string(s, value);
                }
            }
            if let Some(d) = &r.details {
                field(s, &mut first, "details");
                go_json(s, d);
            }
            if r.code != 0 {
                field(s, &mut first, "code");
                let _ = write!(s, "{}", r.code);
            }
            s.push('}');
        }
        if let Some(body) = &self.response_object {
            s.push_str(r#","responseObject":"#);
            s.push_str(body);
        }
        s.push_str(&self.fixed[e.origin..e.received]);
        s.push_str(r#","stageTimestamp":"#);
        micro_time(s, at);
        if !self.annotations.is_empty() {
            s.push_str(r#","annotations":{"#);
            let mut first = true;
            for (k, v) in &self.annotations {
                field(s, &mut first, k);
                write_go_string(s, v);
            }
            s.push('}');
        }
        s.push_str("}\n");
    }

    /// The event at `stage` as a log line ([`Event::write_line`]).
    #[cfg(test)]
    pub fn line(&self, stage: Stage, at: SystemTime) -> Vec<u8> {
        let mut s = String::new();
        self.write_line(stage, at, &mut s);
        s.into_bytes()
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

/// A fresh audit ID, as the apiserver's `uuid.New()` makes it.
pub(crate) fn new_id() -> apimachinery::audit::Id {
    apimachinery::audit::fresh(rand::random())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn event(user: Option<&UserInfo>) -> Event {
        let at = UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
        let mut e = Event::new(&Requested {
            audit_id: "0f8b0f0e-5e8e-4c3c-9d7e-2a0b8f7c6d5e",
            request_uri: ("/api/v1/pods", "limit=500"),
            verb: "list",
            source_ips: &[IpAddr::from([127, 0, 0, 1])],
            user_agent: "kubectl/v1.36.2 (linux/amd64) kubernetes/98b3519",
            object_ref: Some(ObjectRef { resource: "pods", api_version: "v1", ..ObjectRef::default() }),
            received: at,
        });
        e.user(user);
        e
    }

    fn alice() -> UserInfo {
        UserInfo { name: "alice".into(), groups: vec!["dev".into(), "system:authenticated".into()], ..UserInfo::default() }
    }

    #[test]
    fn an_event_is_written_in_the_apiservers_field_order() {
        let mut e = event(Some(&alice()));
        let at = UNIX_EPOCH + Duration::from_micros(1_700_000_000_125_456);
        let received = String::from_utf8(e.line(Stage::RequestReceived, at)).unwrap();
        assert!(received.ends_with("\"stageTimestamp\":\"2023-11-14T22:13:20.123456Z\"}\n"), "{received}");
        e.response_status = Some(ResponseStatus::code(200));
        e.annotate("authorization.k8s.io/reason", "<&>");
        e.annotate("authorization.k8s.io/decision", "allow");
        e.annotate("authorization.k8s.io/reason", "kept first");
        let line = String::from_utf8(e.line(Stage::ResponseComplete, at)).unwrap();
        assert_eq!(
            line,
            concat!(
                r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0f8b0f0e-5e8e-4c3c-9d7e-2a0b8f7c6d5e","stage":"ResponseComplete","#,
                r#""requestURI":"/api/v1/pods?limit=500","verb":"list","user":{"username":"alice","groups":["dev","system:authenticated"]},"#,
                r#""sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.36.2 (linux/amd64) kubernetes/98b3519","#,
                r#""objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"#,
                r#""requestReceivedTimestamp":"2023-11-14T22:13:20.123456Z","stageTimestamp":"2023-11-14T22:13:20.125456Z","#,
                r#""annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"\u003c\u0026\u003e"}}"#,
                "\n"
            )
        );
    }

    #[test]
    fn a_refusal_keeps_its_status_but_not_its_metadata() {
        let e = ApiError::forbidden_with("pods is forbidden: User \"bob\" cannot list".into(), serde_json::json!({"kind": "pods"}));
        let mut ev = event(None);
        ev.response_status = Some(ResponseStatus::refusal(&e));
        ev.impersonate(&alice(), None);
        let line = String::from_utf8(ev.line(Stage::ResponseComplete, SystemTime::now())).unwrap();
        assert!(line.contains(r#""user":{},"impersonatedUser":{"username":"alice","#), "{line}");
        assert!(
            line.contains(r#""responseStatus":{"metadata":{},"status":"Failure","message":"pods is forbidden: User \"bob\" cannot list","reason":"Forbidden","details":{"kind":"pods"},"code":403}"#),
            "{line}"
        );
        ev.impersonate(&alice(), Some("impersonate:user-info"));
        let line = String::from_utf8(ev.line(Stage::ResponseComplete, SystemTime::now())).unwrap();
        let constrained = line.find(r#"},"authenticationMetadata":{"impersonationConstraint":"impersonate:user-info"},"#);
        assert!(constrained > line.find("impersonatedUser"), "the mode after the user it allowed, as Go orders the fields: {line}");
    }

    #[test]
    fn micro_times_are_written_as_rfc_3339_with_microseconds_whatever_second_came_before() {
        for micros in [1_700_000_000_123_456u64, 1_700_000_000_999_999, 1_700_000_001_000_000, 1_600_000_000_000_007, 1_700_000_000_000_010]
        {
            let t = UNIX_EPOCH + Duration::from_micros(micros);
            let mut s = String::new();
            micro_time(&mut s, t);
            assert_eq!(s, format!("\"{}\"", humantime::format_rfc3339_micros(t)));
        }
    }

    #[test]
    fn stages_form_sets() {
        let s: Stages = [Stage::RequestReceived, Stage::Panic].into_iter().collect();
        assert!(s.has(Stage::RequestReceived) && s.has(Stage::Panic) && !s.has(Stage::ResponseComplete));
        assert!(s.union(Stages::default().with(Stage::ResponseComplete)).has(Stage::ResponseComplete));
    }
}

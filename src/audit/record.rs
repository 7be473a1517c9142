//! One request's audit record, as the apiserver's `AuditContext` keeps it:
//! what was known when it arrived ([`Arrival`]: `WithAuditInit`,
//! `WithRequestReceivedTimestamp` and the inputs of `LogRequestMetadata`),
//! then — once the policy said it is audited — the event each stage writes
//! ([`Record`]).
//!
//! Invariants: a record writes each stage at most once, never a stage its
//! policy omits, and every event of one request carries the same ID,
//! arrival time, user and request fields; writing an event never blocks
//! (`Sink::send`).

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use apimachinery::audit::HEADER as AUDIT_ID;
use apimachinery::auth::{Attributes, UserInfo};
use http::{HeaderMap, HeaderName};
use serde_json::Value;
use smallvec::SmallVec;

use super::Auditor;
use super::event::{Event, Level, ObjectRef, Requested, ResponseStatus, Stage, Stages, new_id};
use super::json::{compact, go_json};
use super::policy::AuditConfig;

/// The longest user agent kept whole (`maxUserAgentLength`).
const MAX_USER_AGENT: usize = 1024;

/// The headers every arrival reads, named once (a name given as text is parsed at each lookup).
const AUDIT_ID_HEADER: HeaderName = HeaderName::from_static(AUDIT_ID);
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
const IMPERSONATE_USER: HeaderName = HeaderName::from_static("impersonate-user");

/// What is known of a request when it arrives: its event's request
/// fields, written then (one allocation a request, which becomes its
/// event's if the policy audits it), and what the policy asks about.
#[derive(Debug, Clone)]
pub struct Arrival {
    event: Event,
    /// What it asks to do, as the authorizer and the policy see it (`RequestInfoFactory`'s reading).
    pub attributes: Arc<Attributes>,
    /// Whether it asks to act as another user (`Impersonate-User`).
    pub impersonating: bool,
}

impl Arrival {
    /// A request with `headers` asking for `attributes` with `query`, from `peer`, arriving now: its
    /// audit ID the client's own `Audit-ID` as sent, else a fresh one; its `User-Agent` cut at 1,024 bytes.
    pub fn of(headers: &HeaderMap, attributes: Arc<Attributes>, query: &str, peer: Option<IpAddr>) -> Arrival {
        let fresh;
        let audit_id = match headers.get(AUDIT_ID_HEADER).filter(|v| !v.is_empty()) {
            Some(id) => text(id.as_bytes()),
            None => {
                fresh = new_id();
                Cow::Borrowed(fresh.as_str())
            }
        };
        let ua = headers.get(http::header::USER_AGENT).map(|v| v.as_bytes()).unwrap_or_default();
        let user_agent = match ua.len() > MAX_USER_AGENT {
            true => Cow::Owned(format!("{}...TRUNCATED", String::from_utf8_lossy(&ua[..MAX_USER_AGENT]))),
            false => text(ua),
        };
        let attrs = &attributes;
        let event = Event::new(&Requested {
            audit_id: &audit_id,
            request_uri: (&attrs.path, query),
            verb: &attrs.verb,
            source_ips: &source_ips(headers, peer),
            user_agent: &user_agent,
            object_ref: attrs.resource_request.then_some(ObjectRef {
                resource: &attrs.resource,
                namespace: &attrs.namespace,
                name: &attrs.name,
                api_group: &attrs.group,
                api_version: &attrs.version,
                subresource: &attrs.subresource,
            }),
            received: SystemTime::now(),
        });
        Arrival { event, attributes, impersonating: headers.contains_key(IMPERSONATE_USER) }
    }
}

/// `bytes` as text, anything not UTF-8 replaced (as Go's JSON writes a string of such bytes).
fn text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// A request's source addresses: most have one or two.
pub(crate) type SourceIps = SmallVec<[IpAddr; 2]>;

/// `utilnet.SourceIPs`: every valid address of `X-Forwarded-For`, then
/// `X-Real-Ip` unless already there, then the peer unless it is the last.
pub(crate) fn source_ips(headers: &HeaderMap, peer: Option<IpAddr>) -> SourceIps {
    let header = |name: HeaderName| headers.get(name).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty());
    let mut ips: SourceIps = header(X_FORWARDED_FOR).into_iter().flat_map(|h| h.split(',')).filter_map(|p| parse_ip(p.trim())).collect();
    if let Some(ip) = header(X_REAL_IP).and_then(parse_ip).filter(|ip| !ips.contains(ip)) {
        ips.push(ip);
    }
    if let Some(peer) = peer.map(|p| p.to_canonical()).filter(|p| ips.last() != Some(p)) {
        ips.push(peer);
    }
    ips
}

/// `netutils.ParseIPSloppy`: IPv4 octets may have leading zeros (read as decimal).
fn parse_ip(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    let octets: Vec<u8> = s
        .split('.')
        .map(|o| if o.len() <= 3 && o.bytes().all(|b| b.is_ascii_digit()) { o.parse().ok() } else { None })
        .collect::<Option<_>>()?;
    <[u8; 4]>::try_from(octets).ok().map(IpAddr::from)
}

/// An audited request's event, written stage by stage.
#[derive(Debug)]
pub struct Record {
    auditor: Arc<Auditor>,
    config: AuditConfig,
    event: Event,
    /// A watch: `ResponseStarted` is written once its head is sent.
    pub long_running: bool,
    written: Stages,
}

/// Verbs and subresources whose requests are long-running (`BasicLongRunningRequestCheck` as kube-apiserver sets it up).
const LONG_RUNNING_VERBS: &[&str] = &["watch", "proxy"];
const LONG_RUNNING_SUBRESOURCES: &[&str] = &["attach", "exec", "proxy", "log", "portforward"];

impl Record {
    /// The record of `arrival` by `user` (`None`: unauthenticated), if the policy audits it.
    pub fn start(auditor: &Arc<Auditor>, arrival: Arrival, user: Option<&UserInfo>) -> Option<Record> {
        let attrs = &arrival.attributes;
        let config = auditor.policy.evaluate(attrs, user);
        if config.level == Level::None {
            return None;
        }
        let long_running = LONG_RUNNING_VERBS.contains(&attrs.verb.as_str())
            || (attrs.resource_request && LONG_RUNNING_SUBRESOURCES.contains(&attrs.subresource.as_str()));
        let mut event = arrival.event;
        event.level = config.level;
        event.user(user);
        Some(Record { auditor: auditor.clone(), config, event, long_running, written: Stages::default() })
    }

    /// The user the request acts as, and the constrained impersonation mode that allowed it (`LogImpersonatedUser`).
    pub fn impersonated(&mut self, user: &UserInfo, constraint: Option<&str>) {
        self.event.impersonate(user, constraint);
    }

    /// An annotation; the first value set for a key stays (`addAuditAnnotationLocked`).
    pub fn annotate(&mut self, key: &'static str, value: impl Into<Cow<'static, str>>) {
        self.event.annotate(key, value);
    }

    /// The answer's status, as the response writer and `LogResponseObject` set it.
    pub fn respond(&mut self, status: ResponseStatus) {
        self.event.response_status = Some(status);
    }

    /// Whether the response body is recorded (`RequestResponse`; never a watch's).
    pub(crate) fn wants_body(&self) -> bool {
        self.config.level >= Level::RequestResponse && !self.long_running
    }

    /// `body`, a JSON document, as the event's `responseObject` (without
    /// managed fields when the policy says so).
    pub(crate) fn response_object(&mut self, body: &[u8]) {
        if !self.wants_body() {
            return;
        }
        self.event.response_object = Some(match self.config.omit_managed_fields {
            false => compact(body),
            true => match serde_json::from_slice::<Value>(body) {
                Ok(mut v) => {
                    without_managed_fields(&mut v);
                    let mut s = String::with_capacity(body.len());
                    go_json(&mut s, &v);
                    s
                }
                Err(_) => compact(body),
            },
        });
    }

    /// Writes the event at `stage` (stamped now, or at arrival for
    /// `RequestReceived`) unless the policy omits it or it was written.
    pub fn write(&mut self, stage: Stage) {
        if self.config.omit_stages.has(stage) || self.written.has(stage) {
            return;
        }
        self.written = self.written.with(stage);
        let now = SystemTime::now();
        self.auditor.sink.send(|line| self.event.write_line(stage, now, line));
    }

    /// Whether `stage` was written.
    pub fn wrote(&self, stage: Stage) -> bool {
        self.written.has(stage)
    }
}

/// `copyWithoutManagedFields`: an object's, a list's items' and a Table's rows' objects' `metadata.managedFields` removed.
fn without_managed_fields(v: &mut Value) {
    let strip = |o: &mut Value| {
        if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.shift_remove("managedFields");
        }
    };
    strip(v);
    for key in ["items", "rows"] {
        for item in v.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
            match key {
                "rows" => item.get_mut("object").into_iter().for_each(strip),
                _ => strip(item),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap())).collect()
    }

    #[test]
    fn source_ips_are_read_as_the_apiserver_reads_them() {
        let peer: IpAddr = "10.0.0.9".parse().unwrap();
        let ips = |pairs: &[(&str, &str)], peer: Option<IpAddr>| -> Vec<String> {
            source_ips(&headers(pairs), peer).iter().map(ToString::to_string).collect()
        };
        assert_eq!(ips(&[], Some(peer)), ["10.0.0.9"]);
        assert_eq!(ips(&[("x-forwarded-for", "1.2.3.4, bogus, 010.0.0.1")], Some(peer)), ["1.2.3.4", "10.0.0.1", "10.0.0.9"]);
        assert_eq!(ips(&[("x-forwarded-for", "1.2.3.4"), ("x-real-ip", "1.2.3.4")], Some(peer)), ["1.2.3.4", "10.0.0.9"]);
        assert_eq!(ips(&[("x-real-ip", "5.6.7.8")], Some(peer)), ["5.6.7.8", "10.0.0.9"]);
        assert_eq!(ips(&[("x-forwarded-for", "10.0.0.9")], Some(peer)), ["10.0.0.9"]);
        assert_eq!(ips(&[], Some("::ffff:127.0.0.1".parse().unwrap())), ["127.0.0.1"]);
        assert_eq!(ips(&[("x-forwarded-for", "2001:db8::1")], None), ["2001:db8::1"]);
    }

    /// The line `RequestReceived` of a request with `pairs` as its headers.
    fn received(pairs: &[(&str, &str)], path: &str, query: &str) -> String {
        let a = Arrival::of(&headers(pairs), Arc::new(Attributes::of("GET", path, query)), query, None);
        String::from_utf8(a.event.line(Stage::RequestReceived, SystemTime::now())).unwrap()
    }

    #[test]
    fn a_clients_audit_id_is_kept_and_a_missing_one_made() {
        let kept = received(&[("audit-id", "my-id"), ("user-agent", "kubectl/v1.36.2")], "/api/v1/pods", "limit=5");
        assert!(kept.contains(r#""auditID":"my-id","stage":"RequestReceived","requestURI":"/api/v1/pods?limit=5","verb":"list","user":{},"userAgent":"kubectl/v1.36.2","objectRef""#), "{kept}");
        let made = received(&[("audit-id", "")], "/api/v1/pods", "limit=5");
        let id = made.split(r#""auditID":""#).nth(1).and_then(|rest| rest.split('"').next()).unwrap();
        assert_eq!(id.len(), 36, "{made}");
        assert!(!made.contains("userAgent"), "{made}");
    }

    #[test]
    fn long_user_agents_are_cut_as_the_apiserver_cuts_them() {
        let long = "a".repeat(2000);
        let line = received(&[("user-agent", &long)], "/api", "");
        assert!(line.contains(&format!(r#""userAgent":"{}...TRUNCATED""#, "a".repeat(1024))), "{line}");
    }

    #[test]
    fn managed_fields_leave_objects_lists_and_tables() {
        let mut v: Value = serde_json::from_str(
            r#"{"metadata":{"name":"a","managedFields":[1]},"items":[{"metadata":{"managedFields":[2],"uid":"u"}}],"rows":[{"cells":[],"object":{"metadata":{"managedFields":[3]}}}]}"#,
        )
        .unwrap();
        without_managed_fields(&mut v);
        assert_eq!(
            v.to_string(),
            r#"{"metadata":{"name":"a"},"items":[{"metadata":{"uid":"u"}}],"rows":[{"cells":[],"object":{"metadata":{}}}]}"#
        );
    }
}

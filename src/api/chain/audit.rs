//! Stage 2, audit (the apiserver's `WithAudit`, and
//! `WithFailedAuthenticationAudit` for a 401): what the request was and
//! who sent it are kept to its answer; if kache answers it itself, the
//! policy is asked then (about the authenticated user) and, when it audits
//! the request, its record ([`crate::audit::record`]) is written:
//! `RequestReceived` (stamped with the arrival, as the apiserver stamps
//! it), `ResponseStarted` once a watch's head goes out, `ResponseComplete`
//! once the body ends — a watch's when its stream ends, whoever ends it
//! ([`Audited`] follows the body, in the one wrapper the request's metrics
//! follow it in: `api::followed`). A 401 writes `ResponseStarted` only, as
//! the apiserver's. The request's `Audit-ID` was set by the listener
//! (`api::server`), so one ID names the request everywhere; what the
//! request was is written into its event as it arrives (one buffer, the
//! event's own if the policy audits it).
//!
//! Invariants: an answer that came from upstream is not written (the
//! apiserver audits it under the same ID), unless it never reached
//! upstream; a request dropped before its answer (the client went away) is
//! written with the apiserver's `Connection closed early`, one that
//! panicked as `Panic`; a body that fails or is dropped before its end is
//! `ResponseComplete` with `kache.dev/response-incomplete` saying why.

use std::io::Read;
use std::sync::Arc;

use apimachinery::auth::UserInfo;
use apimachinery::status::ApiError;
use bytes::Bytes;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE};
use http::{Request, Response};
use hyper::body::Incoming;

use crate::access::Verdict;
use crate::api::body::ApiBody;
use crate::api::followed::{End, Follow};
use crate::api::pass_through::Unreached;
use crate::api::request::RequestInfo;
use crate::api::server::Peer;
use crate::api::source::Source;
use crate::audit::Auditor;
use crate::audit::event::{ResponseStatus, Stage};
use crate::audit::json::go_json;
use crate::audit::record::{Arrival, Record};

/// A request's audit, from its arrival to its answer.
#[derive(Debug)]
pub struct Audit(State);

#[derive(Debug)]
enum State {
    /// Nothing is audited.
    Off,
    /// Arrived; the policy not asked yet (what kache answers before authentication).
    Arrived(Arc<Auditor>, Arrival),
    /// Its credentials were refused.
    Unauthenticated(Arc<Auditor>, Arrival),
    /// Authenticated: the policy is asked once kache knows it answers (what it relays costs nothing here).
    Authenticated {
        auditor: Arc<Auditor>,
        arrival: Arrival,
        /// Who authentication found (`None`: kache authenticates no one).
        user: Option<UserInfo>,
        /// What later stages found, recorded after `RequestReceived` (written before them in the apiserver).
        later: Later,
        /// It goes to the apiserver, which audits it.
        relayed: bool,
    },
}

/// Annotations of kache's own facts.
const SOURCE: &str = "kache.dev/road";
const REASON: &str = "kache.dev/pass-through-reason";
const INCOMPLETE: &str = "kache.dev/response-incomplete";
const NOT_RECORDED: &str = "kache.dev/response-object";

impl Audit {
    /// A request asking for what `info` says, as it arrives (`None`: kache audits nothing).
    pub fn arrived(auditor: Option<&Arc<Auditor>>, req: &Request<Incoming>, info: &RequestInfo) -> Audit {
        let Some(auditor) = auditor else { return Audit(State::Off) };
        let peer = req.extensions().get::<Peer>().map(|p| p.0.ip());
        let arrival = Arrival::of(req.headers(), info.attributes.clone(), info.raw_query(), peer);
        Audit(State::Arrived(auditor.clone(), arrival))
    }

    /// Authentication refused the request.
    pub fn unauthenticated(&mut self) {
        if let State::Arrived(a, arrival) = std::mem::replace(&mut self.0, State::Off) {
            self.0 = State::Unauthenticated(a, arrival);
        }
    }

    /// Authentication found `user` (`None`: kache authenticates no one), whom the policy asks about.
    pub fn authenticated(&mut self, user: Option<&UserInfo>) {
        if let State::Arrived(auditor, arrival) = std::mem::replace(&mut self.0, State::Off) {
            let user = user.cloned();
            self.0 = State::Authenticated { auditor, arrival, user, later: Later::default(), relayed: false };
        }
    }

    /// The request acts as `user` by its own `Impersonate-*` headers, allowed by the constrained mode `constraint`
    /// (`None`: the legacy verb).
    pub fn impersonated(&mut self, user: &UserInfo, constraint: Option<String>) {
        if let State::Authenticated { arrival, later, .. } = &mut self.0
            && arrival.impersonating
        {
            later.impersonated = Some(Box::new((user.clone(), constraint)));
        }
    }

    /// The request goes to the apiserver, which audits it.
    pub fn relayed(&mut self) {
        if let State::Authenticated { relayed, .. } = &mut self.0 {
            *relayed = true;
        }
    }

    /// The authorizer's verdict, kept for the apiserver's annotations; `result` as it was.
    pub fn authorized<T>(&mut self, (result, verdict): (Result<T, ApiError>, Option<Verdict>)) -> Result<T, ApiError> {
        if let State::Authenticated { later, .. } = &mut self.0 {
            later.verdict = verdict;
        }
        result
    }

    /// `resp` is the request's answer: its events are written as it goes
    /// out, by what follows its body (`None`: nothing is audited).
    pub fn answered(mut self, resp: &Response<ApiBody>) -> Option<Audited> {
        let source = Source::of(resp);
        let reached_upstream = matches!(source, Source::Upstream(_)) && resp.extensions().get::<Unreached>().is_none();
        let refusal = resp.extensions().get::<ApiError>();
        let status = refusal.map_or_else(|| ResponseStatus::code(resp.status().as_u16()), ResponseStatus::refusal);
        let (mut record, later) = match std::mem::replace(&mut self.0, State::Off) {
            State::Off => return None,
            State::Authenticated { .. } if reached_upstream => return None,
            State::Authenticated { auditor, arrival, user, later, .. } => (Record::start(&auditor, arrival, user.as_ref())?, later),
            State::Arrived(a, arrival) => (Record::start(&a, arrival, None)?, Later::default()),
            State::Unauthenticated(a, arrival) => {
                let mut r = Record::start(&a, arrival, None)?;
                r.annotate(SOURCE, source.as_str());
                r.respond(status);
                if let Some(e) = refusal {
                    r.response_object(&status_object(e));
                }
                r.write(Stage::ResponseStarted);
                return None;
            }
        };
        // As the apiserver's, `RequestReceived` holds what was known at arrival: no impersonation, verdict or status.
        record.write(Stage::RequestReceived);
        later.record(&mut record, source);
        record.respond(status);
        if record.long_running {
            record.write(Stage::ResponseStarted);
        }
        let mut capture = None;
        if record.wants_body() {
            match refusal {
                Some(e) => record.response_object(&status_object(e)),
                None => capture = Capture::of(&mut record, resp),
            }
        }
        Some(Audited { record: Some(record), capture })
    }
}

impl Drop for Audit {
    /// Dropped before an answer: the client went away, or kache panicked.
    fn drop(&mut self) {
        let State::Authenticated { auditor, arrival, user, later, relayed: false } = std::mem::replace(&mut self.0, State::Off) else {
            return;
        };
        let Some(mut r) = Record::start(&auditor, arrival, user.as_ref()) else { return };
        let r = &mut r;
        let panicked = std::thread::panicking();
        r.write(Stage::RequestReceived);
        later.record(r, Source::Kache);
        r.respond(match panicked {
            true => ResponseStatus {
                code: 500,
                status: "Failure",
                reason: "InternalError".into(),
                message: "kache panicked while answering".into(),
                details: None,
            },
            false => {
                ResponseStatus { code: 200, status: "Success", message: "Connection closed early".into(), ..ResponseStatus::default() }
            }
        });
        r.write(if panicked { Stage::Panic } else { Stage::ResponseComplete });
    }
}

/// What the stages after arrival found (kept in the request's own future:
/// no allocation unless it impersonates, which is rare).
#[derive(Debug, Default)]
struct Later {
    /// The user the request acts as by its `Impersonate-*` headers, and the constrained mode that allowed it.
    impersonated: Option<Box<(UserInfo, Option<String>)>>,
    /// The authorizer's verdict.
    verdict: Option<Verdict>,
}

impl Later {
    /// Into `record`, as the apiserver records them (`impersonatedUser`, the
    /// authorization annotations), with who answered.
    fn record(self, record: &mut Record, source: Source) {
        if let Some(acting) = &self.impersonated {
            record.impersonated(&acting.0, acting.1.as_deref());
        }
        if let Some(v) = self.verdict {
            record.annotate("authorization.k8s.io/decision", if v.allowed { "allow" } else { "forbid" });
            record.annotate("authorization.k8s.io/reason", v.reason);
        }
        record.annotate(SOURCE, source.as_str());
        if let Source::Upstream(why) = source {
            record.annotate(REASON, why.as_str());
        }
    }
}

/// `e` as the `Status` object the apiserver records as a refusal's `responseObject`.
fn status_object(e: &ApiError) -> Vec<u8> {
    let mut s = String::new();
    go_json(&mut s, &e.to_value());
    s.into_bytes()
}

/// A response body kept for `responseObject`, and how to read it.
#[derive(Debug)]
struct Capture {
    bytes: Vec<u8>,
    gzip: bool,
    yaml: bool,
}

impl Capture {
    /// What to keep of `resp`'s body: JSON or YAML (gzipped or not); other
    /// encodings are noted as not recorded, plain text (health) is not an object.
    fn of(record: &mut Record, resp: &Response<ApiBody>) -> Option<Capture> {
        let content_type = resp.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let gzip = resp.headers().get(CONTENT_ENCODING).is_some_and(|v| v == "gzip");
        let media = content_type.split(';').next().unwrap_or("").trim();
        match media {
            "application/json" => Some(Capture { bytes: Vec::new(), gzip, yaml: false }),
            "application/yaml" => Some(Capture { bytes: Vec::new(), gzip, yaml: true }),
            "" | "text/plain" => None,
            other => {
                record.annotate(NOT_RECORDED, format!("not recorded: {other}"));
                None
            }
        }
    }

    /// The body as JSON.
    fn json(self) -> Option<Vec<u8>> {
        let bytes = match self.gzip {
            true => {
                let mut out = Vec::with_capacity(self.bytes.len() * 8);
                flate2::read::MultiGzDecoder::new(&self.bytes[..]).read_to_end(&mut out).ok()?;
                out
            }
            false => self.bytes,
        };
        match self.yaml {
            false => Some(bytes),
            true => serde_saphyr::from_slice::<serde_json::Value>(&bytes).ok().map(|v| {
                let mut s = String::with_capacity(bytes.len());
                go_json(&mut s, &v);
                s.into_bytes()
            }),
        }
    }
}

/// What follows an audited answer's body: its end (or failure, or drop) writes `ResponseComplete`.
#[derive(Debug)]
pub struct Audited {
    record: Option<Record>,
    capture: Option<Capture>,
}

impl Follow for Audited {
    fn data(&mut self, data: &Bytes) {
        if let Some(c) = &mut self.capture {
            c.bytes.extend_from_slice(data);
        }
    }

    fn end(&mut self, how: End<'_>) {
        let Some(mut record) = self.record.take() else { return };
        let incomplete = match how {
            End::Complete => None,
            End::Failed(e) => Some(format!("the body failed: {e}")),
            End::Dropped => Some("the client went away".to_string()),
        };
        match incomplete {
            Some(why) if !record.long_running => record.annotate(INCOMPLETE, why),
            Some(_) => {}
            None => {
                if let Some(body) = self.capture.take().and_then(Capture::json) {
                    record.response_object(&body);
                }
            }
        }
        record.write(Stage::ResponseComplete);
    }
}

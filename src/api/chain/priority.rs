//! Stage 4, priority and fairness (the apiserver's `WithPriorityAndFairness`,
//! `server/filters/priority-and-fairness.go`), for what kache answers
//! itself: the request is classified by the cluster's FlowSchemas
//! (`crate::flowcontrol`), waits for its seats in its level's queues (or
//! gets the apiserver's 429 with `Retry-After`), and holds them while its
//! answer is written — a watch until its initial events are; its answer
//! names the FlowSchema and level in `X-Kubernetes-PF-FlowSchema-UID` and
//! `X-Kubernetes-PF-PriorityLevel-UID`, as every answer past the
//! apiserver's filter does.
//!
//! Where it runs. In the apiserver this filter wraps everything after it:
//! authorization and the handler. kache queues only what it answers
//! itself — a request passed through is queued by the apiserver, as the
//! client it impersonates, and queuing it here too would charge it twice —
//! and who answers is known only at stage 5 (routing). Routing is pure
//! arithmetic on the request and kache's state (no I/O, no wait), so the
//! chain routes first and this stage then wraps the same things it wraps
//! in the apiserver: authorization and the answer. A read routed to memory
//! that memory then hands upstream (a consistent read upstream answers
//! sooner, a revision not reached in time, the memory budget's last level)
//! gives its seats back as upstream's answer arrives, and carries
//! upstream's own headers: kache cannot know before trying.
//!
//! Without client authentication (loopback only) there is no one to
//! classify: every client acts as kache's own credentials, one user and one
//! flow — fairness between them would have to invent flows the apiserver
//! has none of (a connection is not a tenant: client-go sends a process's
//! every request on one), so it is off, as with
//! `--enable-priority-and-fairness=false`.
//!
//! Invariant: a request kache answers under flow control executes only on
//! seats its level gave it, and gives them back once.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use apimachinery::auth::{Attributes, UserInfo};
use apimachinery::flowcontrol::{FLOW_SCHEMA_UID, PRIORITY_LEVEL_UID};
use bytes::Bytes;
use http::header::RETRY_AFTER;
use http::{HeaderValue, Response};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};

use crate::api::body::{ApiBody, BoxError};
use crate::api::encode;
use crate::api::road::Road;
use crate::api::target::Target;
use crate::flowcontrol::width::{self, Stats};
use crate::flowcontrol::{Admission, Classified, FlowControl, Seat, WAIT_LIMIT};

/// What a request costs in seats, before its level caps it.
#[derive(Debug, Clone, Copy)]
pub struct Cost<'a> {
    request: width::Request<'a>,
    stats: Stats,
}

impl<'a> Cost<'a> {
    /// A request of kache's own (`/metrics`): one seat.
    pub fn one() -> Cost<'static> {
        Cost { request: width::Request { verb: "get", single: true, query: "" }, stats: Stats::default() }
    }

    /// A read of `target` with `query`, as `attributes` describe it.
    pub fn of(target: &Target<'_>, attributes: &'a Attributes, query: &'a str) -> Cost<'a> {
        let head = target.res.store().view().head().clone();
        let stats = Stats { count: head.len() as u64, bytes: head.bytes() as u64 };
        Cost { request: width::Request { verb: &attributes.verb, single: !attributes.name.is_empty(), query }, stats }
    }
}

/// `answer` under priority and fairness for `user`'s `request` (as is,
/// without flow control or a user to classify).
pub async fn queued(
    flow: Option<&Arc<FlowControl>>,
    user: Option<&UserInfo>,
    request: &Attributes,
    cost: Cost<'_>,
    answer: impl Future<Output = Response<ApiBody>>,
) -> Response<ApiBody> {
    let Some((flow, class)) = flow.zip(user).and_then(|(flow, user)| Some((flow, flow.classify(user, request)?))) else {
        return answer.await;
    };
    let level = &class.level.state;
    let seats = width::seats(cost.request, cost.stats, level.max_seats());
    let seat = match level.queues.start(seats, class.hash, &class.schema.name) {
        Admission::Executing(seat) => seat,
        Admission::Waiting(waiter) => match waiter.wait(WAIT_LIMIT).await {
            Ok(seat) => seat,
            Err(_) => return too_many_requests(flow, &class),
        },
        Admission::Rejected(_) => return too_many_requests(flow, &class),
    };
    let resp = answer.await;
    if matches!(resp.extensions().get::<Road>(), Some(Road::Upstream(_))) {
        // Answered upstream after all: its seats go back now, its headers are upstream's.
        return resp;
    }
    let watch = request.verb == "watch";
    let mut resp = resp.map(|body| Holding { inner: body, seat: Some(seat), until_idle: watch }.boxed());
    name(&mut resp, &class);
    resp
}

/// The apiserver's answer to a rejection: 429, plain text, `Retry-After`.
fn too_many_requests(flow: &FlowControl, class: &Classified) -> Response<ApiBody> {
    let mut resp = encode::too_many_requests();
    resp.headers_mut().insert(RETRY_AFTER, HeaderValue::from(flow.rejected(&class.level.state.name)));
    name(&mut resp, class);
    resp
}

/// The `X-Kubernetes-PF-*` headers: the UIDs of the schema and level matched.
fn name(resp: &mut Response<ApiBody>, class: &Classified) {
    // In Go's order: its HTTP servers write header names sorted.
    for (header, uid) in [(FLOW_SCHEMA_UID, &class.schema.uid), (PRIORITY_LEVEL_UID, &class.level.object.metadata.uid)] {
        if let Ok(v) = HeaderValue::from_str(uid) {
            resp.headers_mut().insert(header, v);
        }
    }
}

/// A body holding its request's seats until it ends — a watch's only until
/// it first has nothing to send: its initial events written, it waits for
/// live ones (the apiserver's watch initialization signal).
struct Holding {
    inner: ApiBody,
    seat: Option<Seat>,
    until_idle: bool,
}

impl Body for Holding {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None | Some(Err(_))) => self.seat = None,
            Poll::Pending if self.until_idle => self.seat = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

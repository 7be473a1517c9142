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
use std::task::{Context, Poll, ready};

use apimachinery::auth::{Attributes, UserInfo};
use apimachinery::flowcontrol::{FLOW_SCHEMA_UID, PRIORITY_LEVEL_UID};
use apimachinery::params::Query;
use bytes::Bytes;
use futures_util::FutureExt;
use futures_util::future::Either;
use http::header::RETRY_AFTER;
use http::{HeaderValue, Response};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};

use crate::api::body::{ApiBody, BoxError};
use crate::api::encode;
use crate::api::filter::Filter;
use crate::api::request::RequestInfo;
use crate::api::source::Source;
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
        Cost { request: width::Request { verb: "get", single: true, query: &Query::EMPTY }, stats: Stats::default() }
    }

    /// A read of `target`, as `info` describes it: the
    /// objects it may return are the collection's, as the apiserver counts
    /// them — or, where a selector names a value kache indexes (a pod's
    /// node, a label), that index's objects, which is all kache reads (the
    /// apiserver's estimator leaves this to caches with indexes, its TODO).
    pub fn of(target: &Target<'_>, info: &'a RequestInfo) -> Cost<'a> {
        let head = target.res.store().view().head().clone();
        let (count, bytes) = (head.len() as u64, head.bytes() as u64);
        let selected = info.decoded().filter(|opts| opts.label_selector.is_some() || opts.field_selector.is_some());
        let indexed = selected.and_then(|opts| {
            let filter = Filter::new(target.res.info(), target.namespace, opts, None);
            filter.has_selectors().then(|| filter.most_matches(&head)).flatten()
        });
        let stats = match indexed.map(|n| n as u64) {
            // As many objects of the collection's average size.
            Some(n) if n < count => Stats { count: n, bytes: bytes.checked_div(count).unwrap_or(0) * n },
            _ => Stats { count, bytes },
        };
        let attributes = &info.attributes;
        Cost { request: width::Request { verb: &attributes.verb, single: !attributes.name.is_empty(), query: &info.query }, stats }
    }
}

/// `answer` under priority and fairness for `user`'s `request` (as is,
/// without flow control or a user to classify).
///
/// Built of combinators, not as an `async fn`: the answer is most of a
/// request's future (kilobytes), and an `async fn` awaiting its argument
/// keeps it twice — the argument and the awaited copy, which rustc does not
/// overlap — in a future every request allocates and copies.
pub fn queued<'a>(
    flow: Option<&'a Arc<FlowControl>>,
    user: Option<&'a UserInfo>,
    request: &'a Attributes,
    cost: Cost<'a>,
    answer: impl Future<Output = Response<ApiBody>> + 'a,
) -> impl Future<Output = Response<ApiBody>> + 'a {
    admit(flow, user, request, cost).then(move |admitted| match admitted {
        Err(refused) => Either::Left(std::future::ready(refused)),
        Ok(granted) => Either::Right(answer.map(move |resp| hold(granted, request, resp))),
    })
}

/// Seats in the level `user`'s `request` is classified to, once its queue
/// gives them, or the apiserver's 429; `Ok(None)`: not under flow control.
async fn admit(
    flow: Option<&Arc<FlowControl>>,
    user: Option<&UserInfo>,
    request: &Attributes,
    cost: Cost<'_>,
) -> Result<Option<(Seat, Classified)>, Response<ApiBody>> {
    let Some((flow, class)) = flow.zip(user).and_then(|(flow, user)| Some((flow, flow.classify(user, request)?))) else {
        return Ok(None);
    };
    let level = &class.level.state;
    let seats = width::seats(cost.request, cost.stats, level.max_seats());
    let seat = match level.queues.start(seats, class.hash, &class.schema.name) {
        Admission::Executing(seat) => seat,
        Admission::Waiting(waiter) => match waiter.wait(WAIT_LIMIT).await {
            Ok(seat) => seat,
            Err(_) => return Err(too_many_requests(flow, &class)),
        },
        Admission::Rejected(_) => return Err(too_many_requests(flow, &class)),
    };
    Ok(Some((seat, class)))
}

/// `resp`, answered on `granted` seats: held by its body until it ends (a
/// watch's until its initial events are written), and naming its schema and
/// level.
fn hold(granted: Option<(Seat, Classified)>, request: &Attributes, resp: Response<ApiBody>) -> Response<ApiBody> {
    let Some((seat, class)) = granted else { return resp };
    if matches!(Source::of(&resp), Source::Upstream(_)) {
        // Answered upstream after all: its seats go back now, its headers are upstream's.
        return resp;
    }
    let watch = request.verb == "watch";
    let mut resp = resp.map(|body| Holding { inner: body, seat: Some(seat), until_idle: watch, sent: 0, turn: None }.boxed());
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
///
/// Past [`BULK`] bytes it gives its thread up between frames: a full list
/// from memory is written as fast as the socket takes it, a whole frame a
/// turn, and otherwise holds a worker for as many frames as the socket
/// takes at once (megabytes on loopback) while a small read waits behind
/// it. Seats share who may run; this shares the threads between what runs.
struct Holding {
    inner: ApiBody,
    seat: Option<Seat>,
    until_idle: bool,
    /// Bytes sent so far.
    sent: usize,
    /// The turn given up before the next frame.
    turn: Option<Pin<Box<dyn Future<Output = ()> + Send + Sync>>>,
}

/// A body that has sent this many bytes yields between frames.
const BULK: usize = 256 * 1024;

impl Body for Holding {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(turn) = &mut self.turn {
            ready!(turn.as_mut().poll(cx));
            self.turn = None;
        }
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None | Some(Err(_))) => self.seat = None,
            Poll::Pending if self.until_idle => self.seat = None,
            Poll::Ready(Some(Ok(frame))) => {
                self.sent += frame.data_ref().map_or(0, Bytes::len);
                if self.sent >= BULK && !self.inner.is_end_stream() {
                    self.turn = Some(Box::pin(tokio::task::yield_now()));
                }
            }
            Poll::Pending => {}
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

#[cfg(test)]
mod tests {
    use apimachinery::resource::Resource;

    use super::*;
    use crate::api::body::chunks;
    use crate::cache::CachedResource;
    use crate::store::{CachedObject, StoreConfig, StoreWriter};
    use crate::upstream::client::Client;
    use crate::upstream::connect::ConnectArgs;
    use crate::upstream::freshness::Freshness;

    /// 300 pods of about 4 kB, 100 on each of three nodes.
    async fn pods() -> (StoreWriter, Arc<CachedResource>) {
        let info = Resource::new("", "v1", "pods", "Pod", true);
        let config = CachedResource::store_config(&info, &StoreConfig::default());
        let (mut writer, reader) = StoreWriter::new(config);
        let pod = |i: usize| {
            let json = format!(
                r#"{{"metadata":{{"name":"p{i}","namespace":"ns","resourceVersion":"{i}"}},"spec":{{"nodeName":"n{}"}},"pad":"{}"}}"#,
                i % 3,
                "x".repeat(4000)
            );
            CachedObject::parse(Bytes::from(json), &info.field_paths()).expect("a pod")
        };
        writer.replace((1..=300).map(pod).collect(), 300);
        writer.publish();
        let nowhere = ConnectArgs { server: Some("http://127.0.0.1:9".into()), ..ConnectArgs::default() };
        let client = Client::new(&nowhere.resolve().await.expect("credentials")).expect("a client");
        let fresh = Arc::new(Freshness::new(client, info.clone(), reader.clone(), tokio::sync::mpsc::unbounded_channel().0));
        (writer, Arc::new(CachedResource::new(info, reader, Arc::default(), fresh)))
    }

    #[tokio::test]
    async fn a_list_by_an_indexed_value_costs_the_seats_of_the_objects_it_reads() {
        let (_writer, res) = pods().await;
        let target = Target { index: 0, res: &res, namespace: None, name: None };
        let seats = |query: &str| {
            let info = RequestInfo::of(&http::Method::GET, &format!("/api/v1/pods?{query}").parse().expect("a URI"));
            let cost = Cost::of(&target, &info);
            width::seats(cost.request, cost.stats, 0)
        };
        // The whole collection: 1.2 MB, held at most 1 MB at once.
        assert_eq!(seats("resourceVersion=0"), 10);
        // One node's 100 pods: 400 kB; a node with none: one seat.
        assert_eq!(seats("resourceVersion=0&fieldSelector=spec.nodeName%3Dn1"), 5);
        assert_eq!(seats("resourceVersion=0&fieldSelector=spec.nodeName%3Dnowhere"), 1);
        // A selector no index narrows reads every object, as the apiserver counts it.
        assert_eq!(seats("resourceVersion=0&fieldSelector=spec.nodeName%21%3Dn1"), 10);
    }

    #[tokio::test]
    async fn a_bulk_answer_gives_its_thread_up_between_frames() {
        let frames = (0..10).map(|_| Bytes::from(vec![b'x'; 64 * 1024]));
        let mut body = Holding { inner: chunks(frames), seat: None, until_idle: false, sent: 0, turn: None };
        let (mut sent, mut turns) = (0, 0);
        loop {
            match std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut body).poll_frame(cx))).await {
                Poll::Pending => {
                    turns += 1;
                    tokio::task::yield_now().await;
                }
                Poll::Ready(Some(Ok(frame))) => sent += frame.data_ref().map_or(0, Bytes::len),
                Poll::Ready(None) => break,
                Poll::Ready(Some(Err(e))) => panic!("{e}"),
            }
        }
        assert_eq!(sent, 10 * 64 * 1024);
        // The first 256 kB in a row; then a turn given up after each frame.
        assert_eq!(turns, 7);
    }
}

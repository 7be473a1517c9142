//! A read kache tries from memory — and, for a consistent read, the choice
//! between memory and upstream and the race between them.
//!
//! Memory answers a read that names a revision (or refuses it, or says why
//! upstream must) on its own. A consistent read it answers only once
//! proven fresh, so memory first says what such a read would read
//! ([`Answer::Unproven`]); the resource's freshness then plans it
//! (`upstream::plan`): a read memory would not answer sooner goes upstream
//! at once, and one that chose memory is proven while upstream waits to be
//! asked as well should the proof be late (`upstream::freshness::Proving`);
//! the first answer's head wins and the other is dropped. The plan
//! travels with the response to the metrics, which compare it with what
//! the answer took.

use std::sync::atomic::Ordering;
use std::time::Instant;

use apimachinery::auth::UserInfo;
use apimachinery::negotiate::Negotiated;
use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::body::ApiBody;
use super::request::RequestInfo;
use super::shared::Api;
use super::source::{Answer, PassThrough, Source};
use super::target::Target;
use super::{memory, pass_through};
use crate::access::Permission;
use crate::cache::CachedResource;
use crate::upstream::costs::{Class, Measure, Meter, Metered};
use crate::upstream::freshness::NotFresh;
use crate::upstream::plan::Plan;

/// A read of a cached, fresh resource: from memory, or upstream when memory
/// will not answer it (or would answer later than upstream).
pub async fn read(
    api: &Api,
    t: &Target<'_>,
    negotiated: Negotiated,
    (req, info): (Request<Incoming>, &RequestInfo),
    user: Option<&UserInfo>,
    permission: Option<Permission>,
) -> Response<ApiBody> {
    let stream = info.stream;
    let (source, resp, plan) = match memory::read(api, t, negotiated, info, permission.clone(), None).await {
        Answer::Memory(resp) => (Source::Memory, resp, None),
        Answer::Upstream(why) => {
            // The warm-up that made this read pass through yields the CPU to it while its bytes flow.
            let warming = matches!(why, PassThrough::ProtobufBeingMade | PassThrough::CborBeingMade).then(|| t.res.clone());
            if let Some(res) = &warming {
                res.relaying(negotiated.encoding);
            }
            let resp = relay(api, req, info, user).await;
            let resp = match warming {
                Some(res) => resp.map(|body| {
                    body.map_frame(move |frame| {
                        res.relaying(negotiated.encoding);
                        frame
                    })
                    .boxed()
                }),
                None => resp,
            };
            (Source::Upstream(why), resp, None)
        }
        // Nothing proves a resource the apiserver does not watch-cache fresh: its consistent reads are the apiserver's.
        Answer::Unproven(_) if !t.res.info().watch_cached => {
            (Source::Upstream(PassThrough::UncachedUpstream), relay(api, req, info, user).await, None)
        }
        Answer::Unproven(read) => {
            let class = Class::of(&negotiated, read.stream);
            let plan = t.res.plan(read, class, api.config.consistent_reads);
            let measure = Measure::UpstreamRead(class, read.bytes);
            let list_of = read.collection.then_some(&**t.res);
            let upstream = Upstream { api, req, info, user, measure, list_of };
            let (source, resp) = match plan.from_memory() {
                true => consistent(api, t, (negotiated, info, permission), plan, upstream).await,
                false => {
                    let why = PassThrough::NotFresh(t.res.go_upstream());
                    (Source::Upstream(why), upstream.ask().await)
                }
            };
            if stream && matches!(source, Source::Upstream(PassThrough::NotFresh(_))) {
                api.counters.watches_passed_through.fetch_add(1, Ordering::Relaxed);
            }
            (source, resp, Some(plan))
        }
    };
    match source {
        Source::Memory if t.name.is_none() => t.res.served_collection(),
        Source::Upstream(_) => drop(api.counters.passed_through.fetch_add(1, Ordering::Relaxed)),
        _ => {}
    }
    let mut resp = source.mark(resp);
    // What the apiserver warns of on every answer of a deprecated resource (upstream's answers carry their own).
    if source == Source::Memory
        && let Some(warning) = t.res.warning()
        && let Ok(value) = http::HeaderValue::from_str(&warning)
    {
        resp.headers_mut().append(http::header::WARNING, value);
    }
    if let Some(plan) = plan.filter(|_| !stream) {
        resp.extensions_mut().insert(plan);
    }
    resp
}

/// `req` relayed upstream. Its future (kilobytes: a request through the
/// pool) is boxed, made only when a read goes upstream, so the futures of
/// the reads that memory answers — every request's own, allocated and
/// copied once each — do not carry it.
async fn relay(api: &Api, req: Request<Incoming>, info: &RequestInfo, user: Option<&UserInfo>) -> Response<ApiBody> {
    Box::pin(pass_through::forward(&api.client, req, info, user)).await
}

/// A consistent read sent upstream, measured for the plans of the reads
/// that follow: what it took beyond a round trip, by class and bytes read.
struct Upstream<'a> {
    api: &'a Api,
    req: Request<Incoming>,
    info: &'a RequestInfo,
    user: Option<&'a UserInfo>,
    measure: Measure,
    /// A list's resource, whose small lists it measures too.
    list_of: Option<&'a CachedResource>,
}

impl Upstream<'_> {
    async fn ask(self) -> Response<ApiBody> {
        let sent = Instant::now();
        let resp = relay(self.api, self.req, self.info, self.user).await;
        let meter = Meter::new(self.api.client.costs().clone(), self.measure, sent);
        let meter = match self.list_of {
            Some(res) => res.measuring_lists(meter),
            None => meter,
        };
        resp.map(|body| Metered::new(body, Some(meter)).boxed())
    }
}

/// A consistent read whose plan chose memory: proven, then answered from
/// memory — or upstream, asked once the proof is late or failed, whichever
/// answers first.
async fn consistent(
    api: &Api,
    t: &Target<'_>,
    (negotiated, info, permission): (Negotiated, &RequestInfo, Option<Permission>),
    plan: Plan,
    upstream: Upstream<'_>,
) -> (Source, Response<ApiBody>) {
    let proving = t.res.proving(plan);
    let memory = async {
        let proven = proving.proven().await.map_err(PassThrough::NotFresh)?;
        match memory::read(api, t, negotiated, info, permission, Some(proven)).await {
            Answer::Memory(resp) => Ok(resp),
            Answer::Upstream(why) => Err(why),
            // A proven read is never unproven; should one be, memory does not answer it.
            Answer::Unproven(_) => Err(PassThrough::NotFresh(NotFresh::Probe)),
        }
    };
    let upstream = async {
        proving.upstream_due().await;
        t.res.count_hedge();
        upstream.ask().await
    };
    tokio::pin!(memory, upstream);
    tokio::select! {
        biased;
        answered = &mut memory => match answered {
            Ok(resp) => (Source::Memory, resp),
            Err(why) => {
                proving.go_upstream();
                (Source::Upstream(why), upstream.await)
            }
        },
        resp = &mut upstream => {
            t.res.count_late();
            (Source::Upstream(PassThrough::NotFresh(NotFresh::Late)), resp)
        }
    }
}

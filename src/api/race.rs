//! A read kache tries from memory, raced against upstream where that pays:
//! a consistent read whose proof is late goes both ways and the first
//! answer's head wins, the other road dropped (`upstream::freshness`'s
//! hedge); a read memory will not answer goes upstream, marked with why.
//! Lists and GETs carry their plan to the metrics, which compare it with
//! what the answer took.

use std::sync::atomic::Ordering;

use apimachinery::auth::UserInfo;
use apimachinery::negotiate::Negotiated;
use http::{Request, Response};
use hyper::body::Incoming;

use super::body::ApiBody;
use super::road::{PassThrough, Road};
use super::shared::Api;
use super::target::Target;
use super::{memory, metrics, pass_through};
use crate::access::Access;
use crate::upstream::freshness::{Decision, NotFresh};

/// A read of a cached, fresh resource: from memory, or upstream when memory
/// will not answer it (or answers later than upstream).
pub async fn read(
    api: &Api,
    t: &Target<'_>,
    negotiated: Negotiated,
    req: Request<Incoming>,
    user: Option<&UserInfo>,
    access: Option<Access>,
) -> Response<ApiBody> {
    let (path, query) = (req.uri().path().to_string(), req.uri().query().unwrap_or("").to_string());
    let decision = Decision::default();
    let memory = memory::answer(api, t, negotiated, &query, access, &decision);
    let upstream = async {
        decision.upstream_due().await;
        if decision.plan().is_some_and(|p| p.from_memory()) {
            t.res.fresh.stats.hedges.fetch_add(1, Ordering::Relaxed);
        }
        pass_through::forward(&api.client, req, user).await
    };
    tokio::pin!(memory, upstream);
    let (road, resp) = tokio::select! {
        biased;
        answered = &mut memory => match answered {
            Ok(resp) => {
                if t.name.is_none() {
                    t.res.collections_from_memory.fetch_add(1, Ordering::Relaxed);
                }
                (Road::Memory, resp)
            }
            Err(why) => {
                decision.go_upstream();
                (Road::Upstream(why), upstream.await)
            }
        },
        resp = &mut upstream => {
            t.res.fresh.stats.record(Err(NotFresh::Late));
            (Road::Upstream(PassThrough::NotFresh(NotFresh::Late)), resp)
        }
    };
    if matches!(road, Road::Upstream(_)) {
        api.counters.passed_through.fetch_add(1, Ordering::Relaxed);
    }
    let mut resp = metrics::from(road, resp);
    if let Some(plan) = decision.plan().filter(|_| !apimachinery::params::is_stream(&path, &query)) {
        resp.extensions_mut().insert(plan);
    }
    resp
}

//! The test harness's control paths, `/_sim/OP`: faults (compact, expire,
//! unannounce, drop watches, stall, restart), churn, slowness, the policy,
//! and stats. They sit outside the API: the policy does not guard them.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use serde_json::json;

use super::encoding::Writer;
use super::request::read_body;
use crate::body::Body;
use crate::policy::Policy;
use crate::request_body::Drained;
use crate::resources::ResourceId;
use crate::state::State;
use apimachinery::status::ApiError;

/// The resource `PLURAL[.GROUP]` names.
fn named_resource(state: &State, resource: &str) -> Result<ResourceId, ApiError> {
    let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
    state
        .registry()
        .iter()
        .find(|(_, rt)| rt.resource.plural == plural && rt.resource.group == group)
        .map(|(id, _)| id)
        .ok_or_else(|| ApiError::bad_request(format!("no resource {resource:?}")))
}

/// Does what `/_sim/OP` asks.
pub(super) async fn admin(state: &Arc<State>, req: Request<Drained>, op: &str, enc: Writer) -> Result<Response<Body>, ApiError> {
    let query = req.uri().query().unwrap_or("").to_string();
    let param = |name: &str| form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    match op {
        "policy" if req.method() == Method::POST => {
            let (_, body) = read_body(req).await?;
            let policy: Policy = serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("a bad policy: {e}")))?;
            state.set_policy(policy);
            Ok(enc.value(StatusCode::OK, &json!({"policy": "replaced"})))
        }
        "compact" => {
            let rev = crate::faults::compact_now(state);
            Ok(enc.value(StatusCode::OK, &json!({"compacted": rev})))
        }
        "expire" => {
            let (Some(resource), Some(namespace)) = (param("resource"), param("namespace")) else {
                return Err(ApiError::bad_request("expire needs ?resource=PLURAL[.GROUP]&namespace=NS"));
            };
            let res = named_resource(state, &resource)?;
            let (revision, deleted) = state.db.write().expire(res, &namespace);
            Ok(enc.value(StatusCode::OK, &json!({"revision": revision, "deleted": deleted})))
        }
        "unannounce" => {
            let resource =
                param("resource").ok_or_else(|| ApiError::bad_request("unannounce needs ?resource=PLURAL[.GROUP][&events=N]"))?;
            let events: u64 =
                param("events").map_or(Ok(1), |n| n.parse()).map_err(|_| ApiError::bad_request("events: not a whole number"))?;
            state.db.read().unannounce(named_resource(state, &resource)?, events);
            Ok(enc.value(StatusCode::OK, &json!({"unannounced": events})))
        }
        "drop-watches" => {
            state.drop_watches();
            Ok(enc.value(StatusCode::OK, &json!({"dropped": true})))
        }
        "stall" => {
            let secs: f64 = param("seconds").and_then(|s| s.parse().ok()).ok_or_else(|| ApiError::bad_request("stall needs ?seconds=N"))?;
            state.stall(Duration::from_secs_f64(secs.clamp(0.0, 3600.0)));
            Ok(enc.value(StatusCode::OK, &json!({"stalled_seconds": secs})))
        }
        "restart" => {
            let reset = param("reset").is_some_and(|v| v == "true" || v == "1");
            let reinit: f64 = param("reinit-seconds").and_then(|s| s.parse().ok()).unwrap_or(0.0);
            let cache_kept = param("cache").is_some_and(|v| v == "kept");
            let rev = crate::faults::restart(state, reset, Duration::from_secs_f64(reinit.clamp(0.0, 600.0)), cache_kept);
            Ok(enc.value(StatusCode::OK, &json!({"restarted": true, "revision": rev})))
        }
        "churn" => {
            let rate: f64 = param("rate")
                .and_then(|s| s.parse().ok())
                .filter(|r: &f64| r.is_finite() && *r >= 0.0)
                .ok_or_else(|| ApiError::bad_request("churn needs ?rate=R (changes per second, >= 0)"))?;
            state.set_churn_rate(rate);
            Ok(enc.value(StatusCode::OK, &json!({"churn": rate})))
        }
        "slow" => {
            let mut slow = state.slowness();
            if let Some(rate) = param("list-mb-per-second") {
                slow.list_mb_per_second =
                    rate.parse().map_err(|_| ApiError::bad_request(format!("list-mb-per-second: not a number: {rate:?}")))?;
            }
            if let Some(ms) = param("consistent-read-latency-ms") {
                let ms: u64 =
                    ms.parse().map_err(|_| ApiError::bad_request(format!("consistent-read-latency-ms: not a whole number: {ms:?}")))?;
                slow.consistent_read_latency = Duration::from_millis(ms);
            }
            slow.validate().map_err(|e| ApiError::bad_request(e.to_string()))?;
            state.set_slowness(slow);
            let latency_ms = slow.consistent_read_latency.as_millis() as u64;
            Ok(enc.value(StatusCode::OK, &json!({"listMBPerSecond": slow.list_mb_per_second, "consistentReadLatencyMs": latency_ms})))
        }
        "stats" => Ok(enc.value(StatusCode::OK, &crate::faults::stats(state))),
        "audit" => Ok(enc.value(StatusCode::OK, &json!({"requests": state.audit_records()}))),
        _ => Err(ApiError::no_such_path()),
    }
}

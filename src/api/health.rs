//! `/healthz`, `/livez` and `/readyz`, as the apiserver answers them: `ok`
//! when every check passes; otherwise (or with `?verbose`) one line per
//! check (`[+]name ok`, `[-]name failed: reason`) and a last line
//! `readyz check passed|failed`. `?exclude=NAME` skips a check, and
//! `/readyz/NAME` runs one.
//!
//! Checks: `ping` (the server answers — the only liveness check: a live
//! kache whose upstream is gone keeps serving what it holds, so a restart
//! would only lose it); for readiness also `shutdown` (fails once kache is
//! draining) and one `resource:NAME` per cached resource (fails until its
//! initial list is in, naming the last upstream error meanwhile, until its
//! objects' protobuf messages are made (a resource kache speaks protobuf
//! for: `CachedResource::protobuf_ready`), and while
//! upstream has been silent past `--max-staleness`: the resource's
//! [`Health`], the same verdict the metrics, the routing of reads and the
//! log of its changes ([`log_changes`]) read).
//!
//! A failing check answers 503 (Service Unavailable), which probes read as
//! a failure.

use http::StatusCode;

use super::request::RequestInfo;
use super::shared::Api;
use crate::upstream::reflector::Health;

/// One check's outcome: its name and the reason it failed, if it did.
pub type Check = (String, Option<String>);

/// The checks of `endpoint` (`healthz`, `livez` or `readyz`).
fn checks(api: &Api, endpoint: &str) -> Vec<Check> {
    let mut out = vec![("ping".to_string(), None)];
    if endpoint != "readyz" {
        return out;
    }
    out.push(("shutdown".into(), (*api.stopping.borrow()).then(|| "kache is shutting down".to_string())));
    let bound = api.config.max_staleness;
    for r in api.cache.resources() {
        let s = &r.status();
        let failure = verdict(s.health(bound), bound, s.last_error())
            .or_else(|| (!r.protobuf_ready()).then(|| "its objects' protobuf messages are being made".to_string()));
        out.push((format!("resource:{}", r.info().qualified()), failure));
    }
    out
}

/// Why a resource with `health` fails its check (`None`: it passes): the
/// reason `/readyz` shows and the log line of the change says.
pub fn verdict(health: Health, bound: std::time::Duration, last_error: Option<String>) -> Option<String> {
    let error = |e: Option<String>| e.map_or(String::new(), |e| format!("; last upstream error: {e}"));
    match health {
        Health::Fresh => None,
        Health::Listing { again } => {
            let listing = if again { "re-listing" } else { "initial list not in yet" };
            Some(format!("{listing}{}", error(last_error)))
        }
        Health::Inconsistent => Some("the consistency check found the cache unlike the apiserver; re-listing".to_string()),
        Health::Stale { silence } => {
            let silence = silence.map_or("ever".to_string(), |d| format!("{}s", d.as_secs()));
            Some(format!("no answer from the apiserver for {silence} (max staleness {}s){}", bound.as_secs(), error(last_error)))
        }
    }
}

/// How often [`log_changes`] looks.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Logs, within [`LOOK_EVERY`], each resource turning stale (the apiserver
/// silent past the staleness bound: not ready, reads pass through) and
/// fresh again, with the reason `/readyz` gives; the reflector logs its own
/// steps (listed, re-listing, failures). Runs until `api` is dropped.
pub fn log_changes(api: &std::sync::Arc<Api>) {
    let api = std::sync::Arc::downgrade(api);
    tokio::spawn(async move {
        let mut stale: Vec<bool> = Vec::new();
        loop {
            tokio::time::sleep(LOOK_EVERY).await;
            let Some(api) = api.upgrade() else { return };
            let bound = api.config.max_staleness;
            let resources = api.cache.resources();
            stale.resize(resources.len(), false);
            for (r, was) in resources.iter().zip(stale.iter_mut()) {
                let health = r.status().health(bound);
                let now = matches!(health, Health::Stale { .. });
                if now && !*was {
                    let reason = verdict(health, bound, r.status().last_error()).unwrap_or_default();
                    tracing::warn!(resource = %r.info().qualified(), %reason, "stale: not ready; reads pass through");
                } else if *was && !now {
                    tracing::info!(resource = %r.info().qualified(), "the apiserver answers again: ready");
                }
                *was = now;
            }
        }
    });
}

/// The answer to `GET /{endpoint}[/{check}]?{query}`, or `None` when the request `info` describes is not a health check.
pub fn report(api: &Api, info: &RequestInfo) -> Option<(StatusCode, String)> {
    report_with(info, |endpoint| checks(api, endpoint))
}

/// [`report`] with the checks `checks(endpoint)` makes.
pub fn report_with(info: &RequestInfo, checks: impl FnOnce(&str) -> Vec<Check>) -> Option<(StatusCode, String)> {
    let mut parts = info.path().trim_start_matches('/').splitn(2, '/');
    let endpoint = parts.next()?;
    if !matches!(endpoint, "healthz" | "livez" | "readyz") {
        return None;
    }
    let only = parts.next();
    // A check's own parameters (`verbose`, every `exclude`), read only for a health path.
    let params: Vec<(String, String)> = form_urlencoded::parse(info.raw_query().as_bytes()).into_owned().collect();
    let verbose = params.iter().any(|(k, v)| k == "verbose" && v != "false");
    let excluded = |name: &str| params.iter().any(|(k, v)| k == "exclude" && v == name);
    let mut checks = checks(endpoint);
    if let Some(name) = only {
        checks.retain(|(n, _)| n == name);
        if checks.is_empty() {
            return Some((StatusCode::NOT_FOUND, format!("{endpoint} check {name:?} not found\n")));
        }
    }
    let unmatched: Vec<&str> =
        params.iter().filter(|(k, v)| k == "exclude" && !checks.iter().any(|(n, _)| n == v)).map(|(_, v)| v.as_str()).collect();
    checks.retain(|(n, _)| !excluded(n));
    let failed = checks.iter().any(|(_, f)| f.is_some());
    if !failed && !verbose {
        return Some((StatusCode::OK, "ok".into()));
    }
    let mut body = String::new();
    for (name, failure) in &checks {
        match failure {
            None => body += &format!("[+]{name} ok\n"),
            Some(reason) => body += &format!("[-]{name} failed: {reason}\n"),
        }
    }
    for name in unmatched {
        body += &format!("warn: some health checks cannot be excluded: no matches for \"{name}\"\n");
    }
    let status = if failed { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
    body += &format!("{endpoint} check {}\n", if failed { "failed" } else { "passed" });
    Some((status, body))
}

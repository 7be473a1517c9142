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
//! initial list is in, naming the last upstream error meanwhile).
//!
//! A failing check answers 503 (Service Unavailable), which probes read as
//! a failure.

use http::StatusCode;

use super::Api;

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
        let s = &r.status;
        let failure = if !s.is_ready() {
            let listing = if s.lists.load(std::sync::atomic::Ordering::Relaxed) > 1 { "re-listing" } else { "initial list not in yet" };
            Some(match s.last_error() {
                Some(e) => format!("{listing}; last upstream error: {e}"),
                None => listing.to_string(),
            })
        } else if !s.synced(bound) {
            let silence = s.silence().map_or("ever".to_string(), |d| format!("{}s", d.as_secs()));
            Some(format!(
                "no answer from the apiserver for {silence} (max staleness {}s); last error: {}",
                bound.as_secs(),
                s.last_error().unwrap_or_default()
            ))
        } else {
            None
        };
        out.push((format!("resource:{}", r.info.qualified()), failure));
    }
    out
}

/// The answer to `GET /{endpoint}[/{check}]?{query}`, or `None` when `path` is not a health path.
pub fn answer(api: &Api, path: &str, query: &str) -> Option<(StatusCode, String)> {
    answer_with(path, query, |endpoint| checks(api, endpoint))
}

/// [`answer`] with the checks `checks(endpoint)` makes.
pub fn answer_with(path: &str, query: &str, checks: impl FnOnce(&str) -> Vec<Check>) -> Option<(StatusCode, String)> {
    let mut parts = path.trim_start_matches('/').splitn(2, '/');
    let endpoint = parts.next()?;
    if !matches!(endpoint, "healthz" | "livez" | "readyz") {
        return None;
    }
    let only = parts.next();
    let params: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
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

//! Lists from memory, row by row of the semantics table (SEMANTICS.md):
//!
//! | request | answer |
//! |---|---|
//! | `resourceVersion` unset (Most Recent) | passed through: only a quorum read proves freshness |
//! | `0` (Any) | the head snapshot, whole (`limit` ignored, as the apiserver does) |
//! | `N`, NotOlderThan | the head once `confirmed_rv >= N` (waiting briefly), else passed through |
//! | `N`, Exact (or legacy `N` with `limit`) | the snapshot at `N` if in the window; below it or not reached in time, passed through |
//! | `continue` at `N` | the pinned or rebuilt snapshot at `N`, else passed through (upstream answers or gives its 410) |
//!
//! Invariant 4: nothing is served for a revision the store has not
//! confirmed. A page that has more after it pins its snapshot so the next
//! page reads the same revision without a rebuild; its continue token is in
//! the apiserver's format, so tokens cross between kache and the apiserver.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sim::continue_token;
use sim::params::{ListOptions, parse_resource_version};
use sim::status::ApiError;

use crate::cache::CachedResource;
use crate::store::{CachedObject, Snapshot, StoreError};

/// A page read from memory.
#[derive(Debug)]
pub struct Page {
    /// The revision it was read at.
    pub rv: u64,
    /// The matching objects, in key order.
    pub items: Vec<Arc<CachedObject>>,
    /// The token for the next page.
    pub continue_token: Option<String>,
    /// Objects after this page, when no selector is set.
    pub remaining: Option<u64>,
}

/// How a list is answered.
#[derive(Debug)]
pub enum Answer {
    /// From memory.
    Page(Page),
    /// By the apiserver, with the reason (for metrics and logs).
    Upstream(&'static str),
}

/// What a request reads.
enum Plan {
    Any,
    NotOlderThan(u64),
    Exact(u64),
}

/// Answers a validated list request for `res` in `namespace` (or all).
pub async fn list(res: &CachedResource, namespace: Option<&str>, opts: &ListOptions, wait: Duration) -> Result<Answer, ApiError> {
    for r in opts.field_selector.iter().flat_map(|s| s.requirements.iter()) {
        if !res.supports_field(&r.field) {
            return Err(ApiError::bad_request(format!("field label not supported: {}", r.field)));
        }
    }
    let prefix = match namespace {
        Some(ns) if res.info.namespaced => format!("{ns}/"),
        _ => String::new(),
    };
    let mut start = prefix.clone();
    let plan = if !opts.continue_token.is_empty() {
        let c = continue_token::decode(&opts.continue_token, &prefix)
            .map_err(|e| ApiError::bad_request(format!("invalid continue token: {e}")))?;
        if !opts.resource_version.is_empty() && opts.resource_version != "0" {
            return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
        }
        if c.rv <= 0 {
            return Ok(Answer::Upstream("continue at the latest revision"));
        }
        start = c.key;
        Plan::Exact(c.rv as u64)
    } else if opts.resource_version.is_empty() {
        return Ok(Answer::Upstream("most recent"));
    } else {
        match (parse_resource_version(&opts.resource_version)?, opts.resource_version_match.as_str()) {
            (0, _) => Plan::Any,
            (rv, "Exact") => Plan::Exact(rv),
            (rv, "") if opts.limit > 0 => Plan::Exact(rv),
            (rv, _) => Plan::NotOlderThan(rv),
        }
    };
    let (snapshot, limit) = match plan {
        Plan::Any => (res.store.view().head().clone(), usize::MAX),
        Plan::NotOlderThan(rv) => {
            if !wait_for(res, rv, wait).await {
                return Ok(Answer::Upstream("revision not reached"));
            }
            (res.store.view().head().clone(), limit(opts))
        }
        Plan::Exact(rv) => match exact(res, rv, wait).await {
            Some(s) => (s, limit(opts)),
            None => return Ok(Answer::Upstream("revision outside the window")),
        },
    };
    Ok(Answer::Page(page(res, &snapshot, &prefix, &start, opts, limit)))
}

fn limit(opts: &ListOptions) -> usize {
    if opts.limit > 0 { opts.limit as usize } else { usize::MAX }
}

/// Waits up to `wait` for the store to confirm `rv`.
async fn wait_for(res: &CachedResource, rv: u64, wait: Duration) -> bool {
    let mut rx = res.store.subscribe();
    let reached = tokio::time::timeout(wait, rx.wait_for(|confirmed| *confirmed >= rv)).await;
    matches!(reached, Ok(Ok(_))) || res.store.view().confirmed_rv() >= rv
}

/// The snapshot at exactly `rv`, pinned or rebuilt; `None` when it is out of reach.
async fn exact(res: &CachedResource, rv: u64, wait: Duration) -> Option<Arc<Snapshot>> {
    match res.store.snapshot_at(rv, Instant::now()) {
        Ok(s) => Some(s),
        Err(StoreError::TooNew { .. }) if wait_for(res, rv, wait).await => res.store.snapshot_at(rv, Instant::now()).ok(),
        Err(_) => None,
    }
}

/// Whether `o` passes the request's selectors.
fn matches(res: &CachedResource, o: &CachedObject, opts: &ListOptions) -> bool {
    opts.label_selector.as_ref().is_none_or(|s| s.matches_with(|k| o.label(k)))
        && opts.field_selector.as_ref().is_none_or(|s| s.matches(|f| field(res, o, f)))
}

fn field<'a>(res: &CachedResource, o: &'a CachedObject, f: &str) -> &'a str {
    match f {
        "metadata.name" => o.name(),
        "metadata.namespace" => o.namespace(),
        _ => {
            let fields = res.info.selectable_fields();
            match fields.iter().position(|(name, _)| *name == f) {
                Some(i) if o.field(i).is_empty() => fields[i].1,
                Some(i) => o.field(i),
                None => "",
            }
        }
    }
}

fn page(res: &CachedResource, snapshot: &Arc<Snapshot>, prefix: &str, start: &str, opts: &ListOptions, limit: usize) -> Page {
    let mut scope = snapshot.from(start).take_while(|o| o.key().starts_with(prefix));
    let mut items = Vec::new();
    let mut scanned = 0u64;
    let mut last = None;
    for o in scope.by_ref() {
        scanned += 1;
        if matches(res, o, opts) {
            items.push(o.clone());
            if items.len() == limit {
                last = Some(o.key().clone());
                break;
            }
        }
    }
    let rv = snapshot.rv();
    let done = Page { rv, items: Vec::new(), continue_token: None, remaining: None };
    let Some(last) = last else { return Page { items, ..done } };
    let selectors =
        opts.label_selector.as_ref().is_some_and(|s| !s.is_empty()) || opts.field_selector.as_ref().is_some_and(|s| !s.is_empty());
    // Without selectors the apiserver reports how many objects remain; with
    // them it only says whether keys remain.
    let remaining = if selectors {
        if scope.next().is_none() {
            return Page { items, ..done };
        }
        None
    } else {
        let before = position(res, snapshot, prefix, start);
        let after = scope_len(res, snapshot, prefix).saturating_sub(before + scanned);
        if after == 0 {
            return Page { items, ..done };
        }
        Some((after, before + scanned))
    };
    let now = Instant::now();
    res.store.pin(snapshot.clone(), now);
    let next = format!("{last}\u{0}");
    if let Some((_, position)) = remaining {
        res.store.set_cursor(rv, &next, position);
    }
    let continue_token = Some(continue_token::encode_after(&last, prefix, rv as i64));
    Page { rv, items, continue_token, remaining: remaining.map(|(after, _)| after) }
}

/// How many keys of the list's scope come before `start` (remembered by the pin when kache issued the token).
fn position(res: &CachedResource, snapshot: &Snapshot, prefix: &str, start: &str) -> u64 {
    if start == prefix {
        return 0;
    }
    res.store.cursor(snapshot.rv(), start).unwrap_or_else(|| snapshot.from(prefix).take_while(|o| &**o.key() < start).count() as u64)
}

/// How many keys the list's scope holds.
fn scope_len(res: &CachedResource, snapshot: &Snapshot, prefix: &str) -> u64 {
    if prefix.is_empty() {
        return snapshot.len() as u64;
    }
    let key = format!("\u{1}len:{prefix}");
    res.store.cursor(snapshot.rv(), &key).unwrap_or_else(|| {
        let n = snapshot.from(prefix).take_while(|o| o.key().starts_with(prefix)).count() as u64;
        res.store.set_cursor(snapshot.rv(), &key, n);
        n
    })
}

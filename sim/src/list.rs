//! Lists: which revision a request reads at (the seed's table in
//! `shared/SEMANTICS.md`), paging with continue tokens, selectors, and the
//! list envelope.
//!
//! The simulator answers like kube-apiserver over etcd with its watch cache:
//! `resourceVersion=0` ignores `limit`; NotOlderThan waits up to 3 s for a
//! future revision, then 504; Exact and continue read the simulator's own
//! history and get 410 below the compaction revision.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::json;

use crate::continue_token;
use crate::object::Obj;
use crate::params::{ListOptions, parse_resource_version};
use crate::resources::{ResourceId, ResourceType};
use crate::state::State;
use crate::status::ApiError;

/// How long a read for a future revision waits (the apiserver's cacher waits 3 s).
const FUTURE_RV_WAIT: Duration = Duration::from_secs(3);

/// One page of a list.
#[derive(Debug, Clone)]
pub struct Page {
    /// The revision the page was read at.
    pub rv: u64,
    /// Matching objects in key order.
    pub items: Vec<Arc<Obj>>,
    /// Token for the next page, when keys remain.
    pub continue_token: Option<String>,
    /// Number of objects after this page (only without selectors).
    pub remaining: Option<u64>,
}

/// What a list request reads.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Plan {
    /// `resourceVersion` unset: the latest revision (a quorum read).
    MostRecent,
    /// `resourceVersion=0`: any revision; the whole list, `limit` ignored.
    Any,
    /// The latest revision once it is at least this one.
    NotOlderThan(u64),
    /// Exactly this revision.
    Exact(u64),
}

/// The selectors of a request, checked against an object.
#[derive(Debug, Clone, Copy)]
pub struct Filter<'a> {
    rt: &'a ResourceType,
    opts: &'a ListOptions,
}

impl<'a> Filter<'a> {
    /// The request's selectors for objects of `rt`.
    pub fn new(rt: &'a ResourceType, opts: &'a ListOptions) -> Self {
        Self { rt, opts }
    }

    /// Whether no selector is set.
    pub fn is_empty(&self) -> bool {
        self.opts.label_selector.as_ref().is_none_or(|s| s.is_empty()) && self.opts.field_selector.as_ref().is_none_or(|s| s.is_empty())
    }

    /// Whether `o` passes every selector.
    pub fn matches(&self, o: &Obj) -> bool {
        self.opts.label_selector.as_ref().is_none_or(|s| s.matches(&o.labels))
            && self.opts.field_selector.as_ref().is_none_or(|s| s.matches(|f| o.field(self.rt, f)))
    }
}

/// Checks that every field of the field selector is one `rt` supports.
pub fn check_fields(rt: &ResourceType, opts: &ListOptions) -> Result<(), ApiError> {
    for r in opts.field_selector.iter().flat_map(|s| s.requirements.iter()) {
        if !rt.supports_field(&r.field) {
            return Err(ApiError::bad_request(format!("field label not supported: {}", r.field)));
        }
    }
    Ok(())
}

/// The key prefix of a list: `ns/` in a namespace, `""` across all.
pub fn prefix(rt: &ResourceType, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) if rt.namespaced => format!("{ns}/"),
        _ => String::new(),
    }
}

/// Serves a list request (options already validated).
pub async fn list(state: &State, res: ResourceId, namespace: Option<&str>, opts: &ListOptions) -> Result<Page, ApiError> {
    let registry = state.registry();
    let rt = registry.get(res);
    check_fields(rt, opts)?;
    let prefix = prefix(rt, namespace);
    let mut start = prefix.clone();
    let plan = if !opts.continue_token.is_empty() {
        let c = continue_token::decode(&opts.continue_token, &prefix)
            .map_err(|e| ApiError::bad_request(format!("invalid continue token: {e}")))?;
        if !opts.resource_version.is_empty() && opts.resource_version != "0" {
            return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
        }
        start = c.key;
        if c.rv > 0 {
            let rv = c.rv as u64;
            if rv < state.db.read().oldest() {
                return Err(ApiError::continue_too_old(continue_token::encode_start(&c.start, -1)));
            }
            Plan::Exact(rv)
        } else {
            Plan::MostRecent
        }
    } else if opts.resource_version.is_empty() {
        Plan::MostRecent
    } else {
        let rv = parse_resource_version(&opts.resource_version)?;
        match (rv, opts.resource_version_match.as_str()) {
            (0, _) => Plan::Any,
            (rv, "Exact") => Plan::Exact(rv),
            (rv, "") if opts.limit > 0 => Plan::Exact(rv),
            (rv, _) => Plan::NotOlderThan(rv),
        }
    };
    let limit = if plan == Plan::Any || opts.limit <= 0 { usize::MAX } else { opts.limit as usize };
    let at = match plan {
        Plan::MostRecent | Plan::Any => None,
        Plan::NotOlderThan(rv) | Plan::Exact(rv) => {
            state.wait_for_revision(rv, FUTURE_RV_WAIT).await?;
            Some(rv).filter(|_| matches!(plan, Plan::Exact(_)))
        }
    };
    let db = state.db.read();
    let at = at.unwrap_or(db.rev());
    if at < db.oldest() {
        return Err(ApiError::list_too_old());
    }
    let filter = Filter::new(rt, opts);
    let mut items = Vec::new();
    let mut last_key = None;
    let mut rest = db.range(res, &prefix, &start, at);
    for (key, obj) in rest.by_ref() {
        if filter.matches(obj) {
            items.push(obj.clone());
            if items.len() == limit {
                last_key = Some(key.clone());
                break;
            }
        }
    }
    let (continue_token, remaining) = match last_key {
        Some(last) => {
            let after = rest.count() as u64;
            if after == 0 {
                (None, None)
            } else {
                let token = continue_token::encode_after(&last, &prefix, at as i64);
                (Some(token), filter.is_empty().then_some(after))
            }
        }
        None => (None, None),
    };
    Ok(Page { rv: at, items, continue_token, remaining })
}

/// The list envelope and items as chunks that share the objects' bytes.
pub fn encode(rt: &ResourceType, page: &Page) -> Vec<Bytes> {
    let mut meta = serde_json::Map::new();
    meta.insert("resourceVersion".into(), page.rv.to_string().into());
    if let Some(c) = &page.continue_token {
        meta.insert("continue".into(), c.clone().into());
    }
    if let Some(r) = page.remaining {
        meta.insert("remainingItemCount".into(), r.into());
    }
    let head = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
        json!(rt.list_kind()),
        json!(rt.api_version()),
        serde_json::Value::Object(meta)
    );
    let mut out = Vec::with_capacity(page.items.len() * 2 + 2);
    out.push(Bytes::from(head));
    for (i, o) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(Bytes::from_static(b","));
        }
        out.push(o.item.clone());
    }
    out.push(Bytes::from_static(b"]}"));
    out
}

//! Lists from memory, row by row of the semantics table (SEMANTICS.md):
//!
//! | request | answer |
//! |---|---|
//! | `resourceVersion` unset (Most Recent), or a continue token at `-1` | the head once proven fresh (`upstream::freshness`), else passed through |
//! | `0` (Any) | the head snapshot, whole (`limit` ignored, as the apiserver does) |
//! | `N`, NotOlderThan | the head once `confirmed_rv >= N` (waiting briefly), else passed through |
//! | `N`, Exact (or legacy `N` with `limit`) | the snapshot at `N` if in the window; below it or not reached in time, passed through |
//! | a field selector naming one object (`named_key`) | its key alone: no `continue`, legacy `N` with `limit` read as NotOlderThan |
//! | `continue` at `N` | the pinned or rebuilt snapshot at `N`, else passed through (upstream answers or gives its 410) |
//!
//! Invariant 4: nothing is served for a revision the store has not
//! confirmed. A page that has more after it pins its snapshot so the next
//! page reads the same revision without a rebuild; its continue token is in
//! the apiserver's format, so tokens cross between kache and the apiserver.
//!
//! A `shardSelector` is answered here only when upstream honours it
//! ([`Shard::of`], `CachedResource::honours_shards`); the page then holds the shard,
//! says so in `shardInfo` (built-in kinds), and counts `remainingItemCount`
//! as the apiserver's cacher does.
//!
//! Under memory pressure (`crate::budget`) a page that would make a new pin
//! is passed through instead (pages of existing pins are still answered),
//! and at the last level every list of the resource is.

use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apimachinery::list::{Labels, ListMeta, ListPlan, Read, check_fields, named_key};
use apimachinery::params::ListOptions;
use apimachinery::shard::ShardSelector;
use apimachinery::status::ApiError;

use super::filter::{Filter, Shard};
use super::source::{Answer, PassThrough};
use crate::cache::CachedResource;
use crate::store::{CachedObject, Snapshot, StoreError};
use crate::upstream::freshness::Proven;
use crate::upstream::plan::Read as Consistent;

/// A page read from memory.
#[derive(Debug)]
pub struct Page {
    /// Its `ListMeta`.
    pub meta: ListMeta,
    /// The matching objects, in key order.
    pub items: Vec<Arc<CachedObject>>,
}

/// Answers a validated list request for `res` in `namespace` (or all);
/// `wait`: how long a revision the store has not reached is waited for;
/// `proven`: the proof a consistent read is answered from the head with
/// (without it, a consistent read is [`Answer::Unproven`]).
pub async fn list(
    res: &CachedResource,
    namespace: Option<&str>,
    opts: &ListOptions,
    wait: Duration,
    proven: Option<Proven>,
) -> Result<Answer<Page>, ApiError> {
    if res.pressure().passes_through() {
        return Ok(Answer::Upstream(PassThrough::MemoryBudget));
    }
    if let Labels::Unknown(_) = check_fields(res.info(), opts)? {
        return Ok(Answer::Upstream(PassThrough::CustomFieldLabel));
    }
    let shard = match Shard::of(res, opts).admitted()? {
        Ok(shard) => shard,
        Err(why) => return Ok(Answer::Upstream(why)),
    };
    let prefix = res.info().prefix(namespace);
    let plan = ListPlan::of(res.info(), opts, &prefix, named_key(res.info(), namespace, opts))?;
    let prefix = plan.scope(&prefix);
    let snapshot = match plan.read {
        // A consistent read (or a continue token at the latest revision): the head once proven fresh.
        Read::MostRecent => match proven {
            Some(_) => res.store().view().head().clone(),
            None => {
                let bytes = res.read_bytes(prefix, &plan.start, plan.limit);
                return Ok(Answer::Unproven(Consistent { bytes, collection: true, stream: false }));
            }
        },
        Read::Any => res.store().view().head().clone(),
        Read::NotOlderThan(rv) => {
            if !res.reached(rv, wait).await {
                return Ok(Answer::Upstream(PassThrough::RevisionNotReached));
            }
            res.store().view().head().clone()
        }
        Read::Exact(rv) => match exact(res, rv, wait).await {
            Some(s) => s,
            None => return Ok(Answer::Upstream(PassThrough::RevisionOutsideWindow)),
        },
    };
    let filter = Filter::new(res.info(), namespace, opts, shard);
    Ok(page(res, &snapshot, prefix, &plan.start, &filter, plan.limit).map_or(Answer::Upstream(PassThrough::MemoryBudget), Answer::Memory))
}

/// The snapshot at exactly `rv`, pinned or rebuilt; `None` when it is out of reach.
async fn exact(res: &CachedResource, rv: u64, wait: Duration) -> Option<Arc<Snapshot>> {
    match res.store().snapshot_at(rv, Instant::now()) {
        Ok(s) => Some(s),
        Err(StoreError::TooNew { .. }) if res.reached(rv, wait).await => res.store().snapshot_at(rv, Instant::now()).ok(),
        Err(_) => None,
    }
}

/// The page from `start`; `None` when it would need a pin the memory budget refuses.
fn page(res: &CachedResource, snapshot: &Arc<Snapshot>, prefix: &str, start: &str, filter: &Filter, limit: usize) -> Option<Page> {
    let mut items = Vec::new();
    // Without selectors every object in scope is a candidate: `scanned` counts the scope.
    let mut scanned = 0u64;
    let mut last = None;
    for o in filter.candidates(snapshot, prefix, Bound::Included(start)) {
        scanned += 1;
        if filter.selects(o) {
            items.push(o.clone());
            if items.len() == limit {
                last = Some(o.key().clone());
                break;
            }
        }
    }
    let rv = snapshot.rv();
    let selectors = filter.has_selectors();
    // Lists of built-in kinds in their own form say which shard they are
    // (the caller drops it from forms that do not carry it); custom resources' never do.
    let shard_info = filter.shard().filter(|_| !res.is_custom()).map(ShardSelector::info);
    let Some(last) = last else {
        return Some(Page {
            meta: ListMeta { shard_info, ..ListMeta::for_page(rv, prefix, None, 0, selectors, res.info().watch_cached) },
            items,
        });
    };
    // Without selectors the apiserver reports how many objects remain; with
    // them it only says whether keys remain.
    let (after, cursor) = if selectors {
        (u64::from(snapshot.after(&last).next().is_some_and(|o| o.key().starts_with(prefix))), None)
    } else {
        let before = position(res, snapshot, prefix, start);
        let after = scope_len(res, snapshot, prefix).saturating_sub(before + scanned);
        // The count is the cacher's: the scope's keys from the page's start
        // less the page, which a shard selector makes more than the keys after it.
        let count = if after > 0 { after + scanned - items.len() as u64 } else { 0 };
        (count, Some(before + scanned))
    };
    let meta = ListMeta { shard_info, ..ListMeta::for_page(rv, prefix, Some(&last), after, selectors, res.info().watch_cached) };
    if meta.continue_token.is_some() {
        let now = Instant::now();
        if res.pressure().refuses_pins() {
            // Only a pin made before the pressure lives on (its TTL restarts).
            res.store().pinned(rv, now)?;
        } else {
            res.store().pin(snapshot.clone(), now);
        }
        if let Some(cursor) = cursor {
            res.store().set_cursor(rv, &format!("{last}\u{0}"), cursor);
        }
    }
    Some(Page { meta, items })
}

/// How many keys of the list's scope come before `start` (remembered by the pin when kache issued the token).
fn position(res: &CachedResource, snapshot: &Snapshot, prefix: &str, start: &str) -> u64 {
    if start == prefix {
        return 0;
    }
    res.store().cursor(snapshot.rv(), start).unwrap_or_else(|| snapshot.from(prefix).take_while(|o| &**o.key() < start).count() as u64)
}

/// How many keys the list's scope holds.
fn scope_len(res: &CachedResource, snapshot: &Snapshot, prefix: &str) -> u64 {
    if prefix.is_empty() {
        return snapshot.len() as u64;
    }
    let key = format!("\u{1}len:{prefix}");
    res.store().cursor(snapshot.rv(), &key).unwrap_or_else(|| {
        let n = snapshot.from(prefix).take_while(|o| o.key().starts_with(prefix)).count() as u64;
        res.store().set_cursor(snapshot.rv(), &key, n);
        n
    })
}

#[cfg(test)]
mod tests {
    use apimachinery::resource::Resource;
    use bytes::Bytes;

    use super::*;
    use crate::cache::Pressure;
    use crate::store::{StoreConfig, StoreWriter};
    use crate::upstream::client::Client;
    use crate::upstream::connect::ConnectArgs;
    use crate::upstream::freshness::Freshness;

    /// Pod `p{i}` at revision `rv`.
    fn pod(info: &Resource, i: u64, rv: u64) -> CachedObject {
        let json = format!(r#"{{"metadata":{{"name":"p{i}","namespace":"ns","resourceVersion":"{rv}"}}}}"#);
        CachedObject::parse(Bytes::from(json), &info.field_paths()).expect("a pod")
    }

    /// Ten pods listed at revision 10, one changed at 11, with no upstream (these lists need none).
    async fn pods() -> (StoreWriter, CachedResource) {
        let info = Resource::new("", "v1", "pods", "Pod", true);
        let (mut writer, reader) = StoreWriter::new(CachedResource::store_config(&info, &StoreConfig::default()));
        writer.replace((1..=10).map(|i| pod(&info, i, i)).collect(), 10);
        writer.apply(crate::store::EventType::Modified, pod(&info, 1, 11), std::time::Instant::now()).expect("a change");
        writer.publish();
        let nowhere = ConnectArgs { server: Some("http://127.0.0.1:9".into()), ..ConnectArgs::default() };
        let client = Client::new(&nowhere.resolve().await.expect("credentials")).expect("a client");
        let fresh = Arc::new(Freshness::new(client, info.clone(), reader.clone(), tokio::sync::mpsc::unbounded_channel().0));
        (writer, CachedResource::new(info, reader, Arc::default(), fresh))
    }

    async fn ask(res: &CachedResource, query: &str) -> Answer<Page> {
        let mut opts = ListOptions::decode(query).expect("a list query");
        opts.validate().expect("a valid list query");
        list(res, None, &opts, Duration::from_secs(3), None).await.expect("an answer")
    }

    #[tokio::test]
    async fn under_memory_pressure_pages_that_would_pin_then_all_lists_pass_through() {
        let (_writer, res) = pods().await;
        let paged = "resourceVersion=10&resourceVersionMatch=Exact&limit=4";
        // A pin made before the pressure still serves its pages.
        let Answer::Memory(first) = ask(&res, paged).await else { panic!("the first page from memory") };
        let token = first.meta.continue_token.expect("more pages");
        res.set_pressure(Pressure::NoPins);
        let Answer::Memory(second) = ask(&res, &format!("limit=4&continue={token}")).await else { panic!("a pinned page from memory") };
        assert_eq!(second.items.len(), 4);
        // A page that would make a new pin passes through; a whole list pins nothing and is served.
        assert!(matches!(
            ask(&res, "resourceVersion=11&resourceVersionMatch=Exact&limit=4").await,
            Answer::Upstream(PassThrough::MemoryBudget)
        ));
        assert!(matches!(ask(&res, "resourceVersion=0").await, Answer::Memory(p) if p.items.len() == 10));
        res.set_pressure(Pressure::PassThrough);
        assert!(matches!(ask(&res, "resourceVersion=0").await, Answer::Upstream(PassThrough::MemoryBudget)));
    }
}

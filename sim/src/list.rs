//! Lists: which revision a request reads at (`apimachinery::list::ListPlan`; the rows in
//! `docs/simulator.md`), paging with continue tokens, selectors, and the
//! list envelope.
//!
//! The simulator answers like kube-apiserver over etcd with its watch cache:
//! `resourceVersion=0` ignores `limit`; NotOlderThan waits up to 3 s for a
//! future revision, then 504; Exact and continue read the simulator's own
//! history and get 410 below the compaction revision.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::list::{Envelope, Labels, ListMeta, ListPlan, Read, check_fields, json_list, json_list_parts, named_key};
use apimachinery::params::ListOptions;
use apimachinery::partial;
use apimachinery::selector::FieldOp;
use apimachinery::shard::{ShardError, ShardSelector};
use apimachinery::status::ApiError;
use bytes::Bytes;

use crate::object::Obj;
use crate::resources::{ResourceId, ResourceType};
use crate::state::State;

/// How long a read for a future revision waits (the apiserver's cacher waits 3 s).
const FUTURE_RV_WAIT: Duration = Duration::from_secs(3);

/// One page of a list.
#[derive(Debug, Clone)]
pub struct Page {
    /// `ListMeta`: the revision read at, the continue token, the remaining count.
    pub meta: ListMeta,
    /// Matching objects in key order.
    pub items: Vec<Arc<Obj>>,
}

/// The selectors of a request, checked against an object.
#[derive(Debug, Clone)]
pub struct Filter<'a> {
    rt: &'a ResourceType,
    opts: &'a ListOptions,
    shard: Option<ShardSelector>,
}

impl<'a> Filter<'a> {
    /// The request's selectors for objects of `rt`, with its [`shard`] selector.
    pub fn new(rt: &'a ResourceType, opts: &'a ListOptions, shard: Option<ShardSelector>) -> Self {
        Self { rt, opts, shard }
    }

    /// `shardInfo.selector` of a list through this filter: built-in kinds
    /// only (a custom resource's list is unstructured, which has no `shardInfo`).
    fn shard_info(&self) -> Option<String> {
        let typed = apimachinery::resource::builtin(&self.rt.group, &self.rt.version, &self.rt.plural).is_some();
        self.shard.as_ref().filter(|_| typed).map(ShardSelector::info)
    }

    /// Whether no label or field selector is set (a shard selector does not count: the apiserver's `Predicate.Empty()`).
    pub fn is_empty(&self) -> bool {
        self.opts.label_selector.as_ref().is_none_or(|s| s.is_empty()) && self.opts.field_selector.as_ref().is_none_or(|s| s.is_empty())
    }

    /// Whether `o` passes every selector.
    pub fn matches(&self, o: &Obj) -> bool {
        self.shard.as_ref().is_none_or(|s| s.selects(&o.uid, &o.namespace))
            && self.opts.label_selector.as_ref().is_none_or(|s| s.matches(&o.labels))
            && self.opts.field_selector.as_ref().is_none_or(|s| s.matches(|f| o.field(self.rt, f)))
    }
}

/// A request's shard selector, read only when `sharding` (the
/// `ShardedListAndWatch` gate) is on, as the apiserver's storage reads it:
/// a malformed one is its 500.
pub fn shard(opts: &ListOptions, sharding: bool) -> Result<Option<ShardSelector>, ApiError> {
    if sharding { opts.shard().map_err(shard_error) } else { Ok(None) }
}

/// The simulator's answer to a refused shard selector. Text beyond the CEL
/// subset `apimachinery::shard` reads gets a message of the same shape that
/// says so: the simulator has no CEL parser to word it as cel-go does.
fn shard_error(e: ShardError) -> ApiError {
    e.status()
        .unwrap_or_else(|| ApiError::without_reason(500, "invalid shard selector: CEL parse error: beyond the simulator's CEL subset"))
}

/// The apiserver's field label conversion of a request for `rt`. The
/// simulator's custom resources declare no `selectableFields`, so a label
/// its table does not know is refused, as a CRD without them refuses it.
pub fn field_labels(rt: &ResourceType, opts: &ListOptions) -> Result<(), ApiError> {
    match check_fields(rt, opts)? {
        Labels::Known => Ok(()),
        Labels::Unknown(label) => Err(ApiError::bad_request(rt.fields.refusal.message(&label))),
    }
}

/// Serves a list request (options already validated).
pub async fn list(state: &State, res: ResourceId, namespace: Option<&str>, opts: &ListOptions) -> Result<Page, ApiError> {
    let registry = state.registry();
    let rt = registry.get(res);
    field_labels(rt, opts)?;
    let prefix = rt.prefix(namespace);
    // A list naming one object reads its key alone (the registry's `MatchesSingle`).
    let plan = ListPlan::of(rt, opts, &prefix, named_key(rt, namespace, opts))?;
    let prefix = plan.scope(&prefix);
    let at = match plan.read {
        Read::Exact(rv) if plan.continued.is_some() && rv < state.db.read().oldest() => return Err(plan.continue_expired()),
        Read::MostRecent => {
            // The apiserver learns the latest revision from etcd, a quorum read.
            state.consistent_read().await;
            None
        }
        Read::Any => None,
        Read::NotOlderThan(rv) => {
            state.wait_for_revision(rv, FUTURE_RV_WAIT).await?;
            None
        }
        Read::Exact(rv) => {
            state.wait_for_revision(rv, FUTURE_RV_WAIT).await?;
            Some(rv)
        }
    };
    let db = state.db.read();
    if plan.read == Read::MostRecent {
        // A consistent read makes the watch cache catch up with etcd.
        db.progress(res);
    }
    let at = at.unwrap_or(db.rev());
    if at < db.oldest() {
        return Err(ApiError::list_too_old());
    }
    let filter = Filter::new(rt, opts, shard(opts, state.config.sharded_list_and_watch)?);
    let mut items = Vec::new();
    let mut last_key = None;
    let mut scanned = 0;
    // A kubelet's list (pods of one node) reads its node's pods through the index.
    let candidates: Box<dyn Iterator<Item = (&String, &Arc<Obj>)>> = match node(rt, opts) {
        Some(node) => Box::new(db.range_on_node(node, prefix, &plan.start, at)),
        None => Box::new(db.range(res, prefix, &plan.start, at)),
    };
    for (key, obj) in candidates {
        scanned += 1;
        if filter.matches(obj) {
            items.push(obj.clone());
            if items.len() == plan.limit {
                last_key = Some(key.clone());
                break;
            }
        }
    }
    // What the page leaves of the scope's keys: every key after its last.
    let mut after = last_key.as_ref().map_or(0, |last| db.range(res, prefix, &format!("{last}\u{0}"), at).count() as u64);
    if filter.is_empty() && after > 0 {
        // The cacher's count: the scope's keys from the page's start, less
        // the page — which a shard selector makes more than the keys after it.
        after += scanned - items.len() as u64;
    }
    let meta = ListMeta {
        shard_info: filter.shard_info(),
        ..ListMeta::for_page(at, prefix, last_key.as_deref(), after, !filter.is_empty(), rt.watch_cached)
    };
    Ok(Page { meta, items })
}

/// The node a pods list's field selector names with `spec.nodeName=`, if
/// any (not an empty one: the index holds only pods bound to a node).
fn node<'a>(rt: &ResourceType, opts: &'a ListOptions) -> Option<&'a str> {
    let pods = rt.group.is_empty() && rt.plural == "pods";
    let requirements = opts.field_selector.as_ref().filter(|_| pods)?.requirements.iter();
    requirements.filter(|r| r.field == "spec.nodeName" && r.op == FieldOp::Equals && !r.value.is_empty()).map(|r| r.value.as_str()).next()
}

/// The list envelope and items as chunks that share the objects' bytes,
/// each item one chunk (one write of the apiserver's streaming encoder).
pub fn encode(rt: &ResourceType, page: &Page) -> Vec<Bytes> {
    json_list(rt, &page.meta, rt.envelope(), page.items.iter().map(|o| &o.item))
}

/// The `PartialObjectMetadataList` of a page, each item one chunk: the
/// apiserver's streaming encoder writes an item as one marshalled
/// `PartialObjectMetadata`, so its parts are joined here.
pub fn encode_partial(rt: &ResourceType, page: &Page) -> Vec<Bytes> {
    let items = page.items.iter().map(|o| [Bytes::from(partial::object([o.served_metadata(rt)]).concat())]);
    json_list_parts(partial::LIST_KIND, partial::API_VERSION, &page.meta, Envelope::Metadata, items).collect()
}

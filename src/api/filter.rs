//! [`Filter`]: a list's or watch's scope (namespace) and selectors, checked
//! against cached objects, and how a watch event looks through it.
//!
//! Field values are read from what the store parsed once per revision, as
//! the resource's field labels say (`apimachinery::field_labels`: the first
//! of a label's paths with a value, else its zero value). The objects a
//! request may match are found through a snapshot index when a selector
//! names an indexed value (a label `key=value`, a pod's node): the smallest
//! such set is walked in key order instead of the whole scope, so a
//! selective list or initial-events watch costs O(matches). A watch sees
//! an event through the filter as the apiserver's cacher renders it
//! ([`Filter::transition`]): the new object matching decides ADDED or
//! MODIFIED, the previous one matching while the new does not gives
//! DELETED; a deletion is judged by the previous object alone.
//!
//! A shard selector is one more test of the object (the FNV-1a hash of its
//! uid or namespace), like a label selector's: a sharded watcher sits in
//! the same dispatch bucket and costs the same per event.

use std::ops::Bound;
use std::sync::Arc;

use apimachinery::field_labels::Check;
use apimachinery::params::ListOptions;
use apimachinery::resource::Resource;
use apimachinery::selector::{FieldOp, FieldSelector, LabelSelector};
use apimachinery::shard::ShardSelector;
use apimachinery::status::ApiError;
use imbl::OrdSet;

use super::source::PassThrough;
use crate::cache::CachedResource;
use crate::store::{CachedObject, Event, EventType, IndexKey, Snapshot};

/// A request's scope and selectors.
#[derive(Debug, Clone)]
pub struct Filter {
    namespace: Option<String>,
    label: Option<LabelSelector>,
    field: Option<FieldSelector>,
    /// Where each of `field`'s terms reads its value, found once: a watch
    /// checks them for every event it replays.
    field_at: Box<[FieldAt]>,
    shard: Option<ShardSelector>,
}

/// Where a field selector's term reads the object's value.
#[derive(Debug, Clone, Copy)]
enum FieldAt {
    Name,
    Namespace,
    /// The first of these stored fields (indexes into the resource's field
    /// paths) that is not empty, else `zero`.
    Paths {
        first: usize,
        then: Option<usize>,
        zero: &'static str,
    },
    /// A label the apiserver accepts but never sets, or one kache does not
    /// know (never asked of memory: `check_fields` sends it upstream): empty.
    Empty,
}

/// How a request's `shardSelector` is answered, from what kache learnt of
/// upstream (`upstream::capability`): from memory only when upstream
/// honours selectors and kache reads this one as upstream does.
#[derive(Debug)]
pub enum Shard {
    /// No shard selector (or an empty one, which the apiserver ignores).
    Whole,
    /// Only this shard of the collection.
    Range(ShardSelector),
    /// Only upstream can answer: it ignores shard selectors, is not known
    /// to honour them now, or words this selector's refusal itself (CEL
    /// that `apimachinery::shard` does not read).
    Upstream(PassThrough),
    /// The apiserver's refusal of a malformed selector.
    Invalid(ApiError),
}

impl Shard {
    /// The shard `opts` asks of `res`, given whether upstream honours
    /// selectors on it (asked only of a sharded request).
    pub fn of(res: &CachedResource, opts: &ListOptions) -> Shard {
        if opts.shard_selector.is_empty() {
            return Shard::Whole;
        }
        match res.honours_shards() {
            Some(true) => {}
            Some(false) => return Shard::Upstream(PassThrough::ShardsIgnored),
            None => return Shard::Upstream(PassThrough::ShardsUnknown),
        }
        match opts.shard() {
            Ok(Some(s)) => Shard::Range(s),
            Ok(None) => Shard::Whole,
            Err(e) => e.status().map_or(Shard::Upstream(PassThrough::ShardBeyondCel), Shard::Invalid),
        }
    }

    /// As a list or watch from memory takes it: the shard it reads (`None`:
    /// the whole collection), or why upstream answers, or the refusal.
    pub fn admitted(self) -> Result<Result<Option<ShardSelector>, PassThrough>, ApiError> {
        match self {
            Shard::Whole => Ok(Ok(None)),
            Shard::Range(s) => Ok(Ok(Some(s))),
            Shard::Upstream(why) => Ok(Err(why)),
            Shard::Invalid(e) => Err(e),
        }
    }
}

/// How an event reaches a watcher through its filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// The object (now) matches and did not before: ADDED with the new object.
    Added,
    /// It matched and still does: MODIFIED with the new object.
    Modified,
    /// An upstream deletion of a matching object: DELETED with the deleted object.
    Deleted,
    /// It matched and no longer does: DELETED with the previous object at the event's revision.
    Left,
}

impl Filter {
    /// The filter of a request for `res` in `namespace` (all when `None`),
    /// with the request's shard selector when upstream honours it.
    pub fn new(res: &Resource, namespace: Option<&str>, opts: &ListOptions, shard: Option<ShardSelector>) -> Filter {
        let field = opts.field_selector.clone().filter(|s| !s.is_empty());
        let field_at = field
            .iter()
            .flat_map(|s| &s.requirements)
            .map(|r| match res.fields.check(&r.field) {
                Check::Name => FieldAt::Name,
                Check::Namespace => FieldAt::Namespace,
                Check::Label(label) => match res.fields.indexes(label)[..] {
                    [first] => FieldAt::Paths { first, then: None, zero: label.zero },
                    [first, then] => FieldAt::Paths { first, then: Some(then), zero: label.zero },
                    _ => FieldAt::Empty,
                },
                Check::Unknown | Check::Refused(_) => FieldAt::Empty,
            })
            .collect();
        Filter {
            namespace: namespace.filter(|_| res.namespaced).map(str::to_owned),
            label: opts.label_selector.clone().filter(|s| !s.is_empty()),
            field,
            field_at,
            shard,
        }
    }

    /// The shard selector, if any.
    pub fn shard(&self) -> Option<&ShardSelector> {
        self.shard.as_ref()
    }

    /// Whether a label or field selector is set (a shard selector does not
    /// count: the apiserver's `SelectionPredicate::Empty` ignores it).
    pub fn has_selectors(&self) -> bool {
        self.label.is_some() || self.field.is_some()
    }

    /// The namespace the request is scoped to, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The value a field selector must equal (`field=value` or `field==value`), if it has such a term.
    pub fn equality(&self, field: &str) -> Option<&str> {
        self.field.as_ref()?.requirements.iter().find(|r| r.field == field && r.op == FieldOp::Equals).map(|r| r.value.as_str())
    }

    /// Whether `o` passes the selectors (its scope is the caller's to check).
    pub fn selects(&self, o: &CachedObject) -> bool {
        self.shard.as_ref().is_none_or(|s| s.selects(o.uid(), o.namespace()))
            && self.label.as_ref().is_none_or(|s| s.matches_with(|k| o.label(k)))
            && self.field.as_ref().is_none_or(|s| s.requirements.iter().zip(&self.field_at).all(|(r, at)| r.holds(self.value_at(o, *at))))
    }

    /// Whether `o` is in scope and passes the selectors.
    pub fn matches(&self, o: &CachedObject) -> bool {
        self.namespace.as_deref().is_none_or(|ns| o.namespace() == ns) && self.selects(o)
    }

    /// The objects of `snapshot` under `prefix` from `start` on, in key
    /// order, that may pass the selectors: through the smallest index set a
    /// selector names, else every object in scope. Callers still check
    /// [`Filter::selects`].
    pub fn candidates<'a>(
        &self,
        snapshot: &'a Snapshot,
        prefix: &'a str,
        start: Bound<&'a str>,
    ) -> Box<dyn Iterator<Item = &'a Arc<CachedObject>> + 'a> {
        let smallest = self.smallest_index(snapshot);
        let in_scope = move |k: &str| k.starts_with(prefix);
        match smallest {
            None => Box::new(
                snapshot.objects().range::<_, str>((start, Bound::Unbounded)).map(|(_, o)| o).take_while(move |o| in_scope(o.key())),
            ),
            // A selector names a value no object has.
            Some(None) => Box::new(std::iter::empty()),
            Some(Some(keys)) => {
                Box::new(keys.range::<_, str>((start, Bound::Unbounded)).take_while(move |k| in_scope(k)).filter_map(|k| snapshot.get(k)))
            }
        }
    }

    /// The most objects the request can match, when a selector names an
    /// indexed value: the smallest such index set's size (`None`: no index
    /// narrows it, every object in scope is a candidate).
    pub fn most_matches(&self, snapshot: &Snapshot) -> Option<usize> {
        self.smallest_index(snapshot).map(|set| set.map_or(0, |s| s.len()))
    }

    /// The smallest index set a selector names (`Some(None)`: a value no object has; `None`: no index applies).
    fn smallest_index<'a>(&self, snapshot: &'a Snapshot) -> Option<Option<&'a OrdSet<Arc<str>>>> {
        let labels = self.label.iter().flat_map(|s| s.equalities()).map(|(k, v)| IndexKey::Label(k.into(), v.into()));
        let terms = self.field.iter().flat_map(|s| &s.requirements).zip(&self.field_at);
        // A term reading one stored field whose absence is empty reads exactly what the index holds.
        let fields = terms.filter(|(r, _)| r.op == FieldOp::Equals).filter_map(|(r, at)| match *at {
            FieldAt::Paths { first, then: None, zero: "" } => {
                Some(IndexKey::Field(snapshot.indexed_field(first)?, r.value.as_str().into()))
            }
            _ => None,
        });
        labels.chain(fields).map(|k| snapshot.indexed(&k)).min_by_key(|set| set.map_or(0, |s| s.len()))
    }

    /// How `e` reaches a watcher with this filter, if it does.
    pub fn transition(&self, e: &Event) -> Option<Transition> {
        let now = e.typ != EventType::Deleted && self.matches(&e.object);
        let before = e.prev.as_ref().is_some_and(|p| self.matches(p));
        match (now, before) {
            (true, false) => Some(Transition::Added),
            (true, true) => Some(Transition::Modified),
            (false, true) if e.typ == EventType::Deleted => Some(Transition::Deleted),
            (false, true) => Some(Transition::Left),
            (false, false) => None,
        }
    }

    fn value_at<'a>(&self, o: &'a CachedObject, at: FieldAt) -> &'a [u8] {
        match at {
            FieldAt::Name => o.name().as_bytes(),
            FieldAt::Namespace => o.namespace().as_bytes(),
            // The store keeps an absent field as empty text.
            FieldAt::Paths { first, then, zero } => match (o.field_bytes(first), then) {
                (b"", Some(then)) if !o.field_bytes(then).is_empty() => o.field_bytes(then),
                (b"", _) => zero.as_bytes(),
                (v, _) => v,
            },
            FieldAt::Empty => b"",
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn field_selectors_read_names_namespaces_fields_and_zero_values() {
        let pods = Resource::new("", "v1", "pods", "Pod", true);
        let json = br#"{"metadata":{"name":"p1","namespace":"ns","resourceVersion":"5"},"spec":{"nodeName":"n1"}}"#;
        let pod = CachedObject::parse(Bytes::from_static(json), &pods.field_paths()).expect("a pod");
        let selects = |selector: &str| {
            let opts = ListOptions::decode(&format!("fieldSelector={}", selector.replace('=', "%3D"))).expect("a query");
            Filter::new(&pods, None, &opts, None).matches(&pod)
        };
        assert!(selects("spec.nodeName=n1") && selects("spec.nodeName==n1") && selects("spec.nodeName!=n2"));
        assert!(!selects("spec.nodeName=n2") && !selects("spec.nodeName!=n1"));
        assert!(selects("metadata.name=p1,metadata.namespace=ns") && !selects("metadata.name=p1,metadata.namespace!=ns"));
        assert!(selects("spec.hostNetwork=false") && !selects("spec.hostNetwork=true"), "an absent field has its zero value");
        assert!(selects("status.podIPs=") && !selects("status.podIPs=x"), "a label the apiserver never sets is empty");
        assert!(selects("spec.host=n1") && !selects("spec.host=n2"), "`spec.host` reads `spec.nodeName`");
        let events = Resource::new("", "v1", "events", "Event", true);
        let json = br#"{"metadata":{"name":"e","namespace":"ns","resourceVersion":"5"},"source":{},"reportingComponent":"ctrl"}"#;
        let event = CachedObject::parse(Bytes::from_static(json), &events.field_paths()).expect("an event");
        let opts = ListOptions::decode("fieldSelector=source%3Dctrl").expect("a query");
        assert!(Filter::new(&events, None, &opts, None).matches(&event), "`source` falls back to the reporting controller");
    }
}

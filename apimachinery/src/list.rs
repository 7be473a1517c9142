//! Lists: which revision a list request reads, how a page's `ListMeta` is
//! completed, and the list envelope around the items.
//!
//! Invariants: [`ListPlan::of`] refuses exactly what the apiserver refuses,
//! with its `Status`, in its order (bad continue token, then a revision
//! given with a continue token, then a bad revision); [`ListMeta::for_page`]
//! sets `continue` only when the limit was reached and keys remain in
//! scope, and `remainingItemCount` only when, in addition, no selector is
//! set; [`Envelope`] alone decides a list's `metadata` form and whether no
//! items are `null`, for JSON ([`json_list_parts`]) and CBOR (`cbor::list`)
//! alike; a JSON list is written around the items' own bytes and read back
//! ([`ListPage`]) without copying them.
//!
//! [`ListPlan`] is the table of `resourceVersion` × `resourceVersionMatch` ×
//! `limit` × `continue` in the apiserver's storage layer.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::continue_token::{self, Continue};
use crate::decode::{DecodeError, parse_revision};
use crate::field_labels::Check;
use crate::params::{ListOptions, parse_resource_version};
use crate::resource::Resource;
use crate::selector::FieldOp;
use crate::selector::content::is_dns1123_label;
use crate::status::ApiError;

/// Which revision a list reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// `resourceVersion` unset, or a continue token at `-1`: the latest
    /// revision, as a quorum read.
    MostRecent,
    /// `resourceVersion=0`: any revision; the whole list (`limit` is ignored).
    Any,
    /// The latest revision once it is at least this one.
    NotOlderThan(u64),
    /// Exactly this revision (an Exact match, a legacy revision with a
    /// limit, or a continue token).
    Exact(u64),
}

/// What a list request reads, decoded from its options.
#[derive(Debug, Clone)]
pub struct ListPlan {
    /// The revision.
    pub read: Read,
    /// The key to start at (inclusive): the prefix, or where a continue token points.
    pub start: String,
    /// The most items to return (`usize::MAX`: all).
    pub limit: usize,
    /// The continue token, when the request carried one.
    pub continued: Option<Continue>,
    /// The list names one object, whose key `start` is: read as the
    /// apiserver reads one key ([`named_key`]).
    pub one: bool,
}

/// The key of the one object a list names, if it names one — the
/// registry's `MatchesSingle`: without a continue token, a field selector
/// requiring `metadata.name` (a valid path segment) exactly, and the list in
/// a namespace (the path's, else a valid one `metadata.namespace` requires)
/// or of a cluster-scoped resource. kube-apiserver then reads that key alone
/// (its watch cache's `WaitUntilFreshAndGet`, or etcd at one key): the page
/// has no `continue` and no `remainingItemCount` whatever the `limit`, and
/// a revision with a `limit` but no match reads "not older than" it (only
/// `resourceVersionMatch=Exact` reads the revision itself).
pub fn named_key(res: &Resource, namespace: Option<&str>, opts: &ListOptions) -> Option<String> {
    let selector = opts.field_selector.as_ref().filter(|_| opts.continue_token.is_empty())?;
    let exact = |field: &str| selector.requirements.iter().find(|r| r.field == field && r.op == FieldOp::Equals).map(|r| r.value.as_str());
    let name = exact("metadata.name").filter(|n| !n.is_empty() && !matches!(*n, "." | "..") && !n.contains(['/', '%']))?;
    if !res.namespaced {
        return Some(name.to_string());
    }
    let namespace = namespace.or_else(|| exact("metadata.namespace").filter(|ns| ns.len() <= 63 && is_dns1123_label(ns)))?;
    Some(format!("{namespace}/{name}"))
}

impl ListPlan {
    /// Decodes the plan of a validated list request of `res` whose keys
    /// start with `prefix`, and which names the object at `one`, if it names
    /// one ([`named_key`]).
    pub fn of(res: &Resource, opts: &ListOptions, prefix: &str, one: Option<String>) -> Result<ListPlan, ApiError> {
        let mut plan = ListPlan::scanning(opts, prefix, res.watch_cached)?;
        if let Some(key) = one {
            if let (Read::Exact(rv), "") = (plan.read, opts.resource_version_match.as_str()) {
                plan.read = Read::NotOlderThan(rv);
            }
            plan = ListPlan { start: key, limit: usize::MAX, one: true, ..plan };
        }
        Ok(plan)
    }

    /// The keys the list reads begin with this: `prefix`, the list's scope,
    /// or the key of the one object it names.
    pub fn scope<'a>(&'a self, prefix: &'a str) -> &'a str {
        if self.one { &self.start } else { prefix }
    }

    /// The plan of a list that reads its scope's keys in order; at any
    /// revision, whole from the watch cache (`cached`), else paged as etcd pages it.
    fn scanning(opts: &ListOptions, prefix: &str, cached: bool) -> Result<ListPlan, ApiError> {
        let limit = if opts.limit > 0 { usize::try_from(opts.limit).unwrap_or(usize::MAX) } else { usize::MAX };
        if !opts.continue_token.is_empty() {
            let c = continue_token::decode(&opts.continue_token, prefix)
                .map_err(|e| ApiError::bad_request(format!("invalid continue token: {e}")))?;
            if !opts.resource_version.is_empty() && opts.resource_version != "0" {
                return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
            }
            let read = if c.rv > 0 { Read::Exact(c.rv as u64) } else { Read::MostRecent };
            return Ok(ListPlan { read, start: c.key.clone(), limit, continued: Some(c), one: false });
        }
        let read = if opts.resource_version.is_empty() {
            Read::MostRecent
        } else {
            match (parse_resource_version(&opts.resource_version)?, opts.resource_version_match.as_str()) {
                (0, _) => Read::Any,
                (rv, "Exact") => Read::Exact(rv),
                (rv, "") if opts.limit > 0 => Read::Exact(rv),
                (rv, _) => Read::NotOlderThan(rv),
            }
        };
        let limit = if read == Read::Any && cached { usize::MAX } else { limit };
        Ok(ListPlan { read, start: prefix.to_string(), limit, continued: None, one: false })
    }

    /// The 410 for a continue token whose revision is gone: its successor
    /// continues at the latest revision.
    pub fn continue_expired(&self) -> ApiError {
        let start = self.continued.as_ref().map_or("", |c| c.start.as_str());
        ApiError::continue_too_old(continue_token::encode_start(start, -1))
    }
}

/// Whether every label of a request's field selector is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Labels {
    /// Every label is one `res` accepts, read as its table says.
    Known,
    /// This label, the first in the apiserver's order that the table does
    /// not know: a custom resource's, which its CRD's `selectableFields`
    /// may declare — only the apiserver can answer.
    Unknown(String),
}

/// The apiserver's field label conversion of a request for `res`: its 400
/// for the first label (in the selector's sorted order) it does not accept.
pub fn check_fields(res: &Resource, opts: &ListOptions) -> Result<Labels, ApiError> {
    for r in opts.field_selector.iter().flat_map(|s| s.requirements.iter()) {
        match res.fields.check(&r.field) {
            Check::Refused(message) => return Err(ApiError::bad_request(message)),
            Check::Unknown => return Ok(Labels::Unknown(r.field.clone())),
            Check::Name | Check::Namespace | Check::Label(_) => {}
        }
    }
    Ok(Labels::Known)
}

/// `metav1.ListMeta` of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListMeta {
    /// The revision the page was read at.
    pub resource_version: u64,
    /// The token for the next page.
    pub continue_token: Option<String>,
    /// How many objects follow this page (only without selectors).
    pub remaining_item_count: Option<u64>,
    /// `shardInfo.selector`: the shard selector the page was filtered by,
    /// as [`crate::shard::ShardSelector::info`] writes it. kube-apiserver
    /// 1.36 writes it only on the lists of built-in kinds in their own
    /// form (JSON or protobuf): metadata-only lists, Tables and custom
    /// resources' lists are filtered but carry none ([`ListMeta::unsharded`]).
    pub shard_info: Option<String>,
}

impl ListMeta {
    /// The meta of a page read at `rv` under `prefix`. `last` is the key of
    /// the last item when the page stopped at its limit (`None` when the
    /// scan ran to the end); `keys_after` is how many keys of the scope
    /// follow it — exact when `selectors` is false, otherwise only whether
    /// it is zero matters; `cached`: the resource is in the apiserver's watch
    /// cache (its token's form, [`continue_token::encode_after`]).
    pub fn for_page(rv: u64, prefix: &str, last: Option<&str>, keys_after: u64, selectors: bool, cached: bool) -> ListMeta {
        let done = ListMeta { resource_version: rv, continue_token: None, remaining_item_count: None, shard_info: None };
        match last {
            Some(last) if keys_after > 0 => ListMeta {
                continue_token: Some(continue_token::encode_after(last, prefix, rv as i64, cached)),
                remaining_item_count: (!selectors).then_some(keys_after),
                ..done
            },
            _ => done,
        }
    }

    /// The JSON `metadata` object of an `UnstructuredList`: members sorted,
    /// `continue` always (see [`Envelope::Unstructured`]), no `shardInfo`.
    pub fn unstructured_json(&self) -> String {
        let mut meta = serde_json::Map::new();
        meta.insert("continue".into(), self.continue_token.clone().unwrap_or_default().into());
        if let Some(r) = self.remaining_item_count {
            meta.insert("remainingItemCount".into(), r.into());
        }
        meta.insert("resourceVersion".into(), self.resource_version.to_string().into());
        serde_json::Value::Object(meta).to_string()
    }

    /// This meta without `shardInfo`, for the forms that do not carry it.
    pub fn unsharded(&self) -> ListMeta {
        ListMeta { shard_info: None, ..self.clone() }
    }

    /// The JSON `metadata` object, members in the apiserver's order.
    pub fn json(&self) -> String {
        let mut meta = serde_json::Map::new();
        meta.insert("resourceVersion".into(), self.resource_version.to_string().into());
        if let Some(c) = &self.continue_token {
            meta.insert("continue".into(), c.clone().into());
        }
        if let Some(r) = self.remaining_item_count {
            meta.insert("remainingItemCount".into(), r.into());
        }
        if let Some(selector) = &self.shard_info {
            meta.insert("shardInfo".into(), serde_json::json!({ "selector": selector }));
        }
        serde_json::Value::Object(meta).to_string()
    }
}

/// How the apiserver writes a list's envelope around its items, in every
/// encoding: the one place that says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// A built-in kind's list (a Go struct): `kind`, `apiVersion`,
    /// `metadata`, `items`, and `metadata` as [`ListMeta::json`] writes it.
    Typed,
    /// A custom resource's list (`UnstructuredList`, a Go map): keys in
    /// sorted order — `apiVersion`, `items`, `kind`, `metadata` — and
    /// `metadata`'s too, with `continue` always there, empty on the last
    /// page (kube-apiserver 1.36.2, every `resourceVersion` and `limit`).
    Unstructured,
    /// A metadata-only list (`PartialObjectMetadataList`): written as
    /// [`Envelope::Typed`], but its `metadata` carries no `shardInfo` (the
    /// apiserver's conversion drops it), and no items are `null`, not `[]`:
    /// the apiserver makes its items by appending to a nil slice
    /// (kube-apiserver 1.36.2, any `resourceVersion`, JSON and CBOR alike).
    Metadata,
}

impl Envelope {
    /// Whether a list of no items writes `items` as `null` (a Go nil slice)
    /// rather than `[]`.
    pub fn empty_items_are_null(self) -> bool {
        self == Envelope::Metadata
    }

    /// The list's `metadata` object as JSON, as this envelope writes it.
    pub fn metadata_json(self, meta: &ListMeta) -> String {
        match self {
            Envelope::Typed => meta.json(),
            Envelope::Unstructured => meta.unstructured_json(),
            Envelope::Metadata => meta.unsharded().json(),
        }
    }
}

/// A JSON list as parts that share the items' bytes: the envelope's head,
/// the items separated by commas, the tail.
pub fn json_list<'a>(res: &Resource, meta: &ListMeta, envelope: Envelope, items: impl IntoIterator<Item = &'a Bytes>) -> Vec<Bytes> {
    json_list_parts(&res.list_kind(), &res.api_version(), meta, envelope, items.into_iter().map(|item| [item.clone()])).collect()
}

/// A JSON list of kind `kind` in `envelope` as parts in order, each item
/// written from its parts; an item's parts are made only when the iterator
/// reaches it, so a list written as it is read holds one item's parts at a
/// time.
pub fn json_list_parts<I: IntoIterator<Item = Bytes>, T: IntoIterator<Item = I>>(
    kind: &str,
    api_version: &str,
    meta: &ListMeta,
    envelope: Envelope,
    items: T,
) -> impl Iterator<Item = Bytes> + use<I, T> {
    let mut items = items.into_iter().peekable();
    let null = envelope.empty_items_are_null() && items.peek().is_none();
    let (kind, api_version) = (serde_json::Value::from(kind), serde_json::Value::from(api_version));
    let metadata = envelope.metadata_json(meta);
    let (head, tail) = match envelope {
        Envelope::Typed | Envelope::Metadata => {
            (format!("{{\"kind\":{kind},\"apiVersion\":{api_version},\"metadata\":{metadata},\"items\":"), "}".to_string())
        }
        Envelope::Unstructured => {
            (format!("{{\"apiVersion\":{api_version},\"items\":"), format!(",\"kind\":{kind},\"metadata\":{metadata}}}"))
        }
    };
    let (open, close) = if null { ("null", "") } else { ("[", "]") };
    let items = items.enumerate().flat_map(|(i, item)| (i > 0).then(|| Bytes::from_static(b",")).into_iter().chain(item));
    std::iter::once(Bytes::from(head + open)).chain(items).chain([Bytes::from(close.to_string() + &tail)])
}

/// One page of a JSON list response, as a client reads it.
#[derive(Debug)]
pub struct ListPage {
    /// `metadata.resourceVersion` of the list.
    pub resource_version: u64,
    /// `metadata.continue`, when more pages follow.
    pub continue_token: Option<String>,
    /// The items, each a slice of the response body.
    pub items: Vec<Bytes>,
}

#[derive(Deserialize)]
struct RawList<'a> {
    #[serde(borrow)]
    metadata: RawListMeta<'a>,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct RawListMeta<'a> {
    #[serde(rename = "resourceVersion", borrow)]
    resource_version: &'a str,
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
}

impl ListPage {
    /// Reads a JSON list page; items stay slices of `body`.
    pub fn parse(body: &Bytes) -> Result<ListPage, DecodeError> {
        let raw: RawList<'_> = serde_json::from_slice(body).map_err(DecodeError::List)?;
        let resource_version = parse_revision(raw.metadata.resource_version)?;
        let items = raw.items.unwrap_or_default().into_iter().map(|item| body.slice_ref(item.get().as_bytes())).collect();
        Ok(ListPage { resource_version, continue_token: raw.metadata.continue_token.filter(|c| !c.is_empty()), items })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(q: &str) -> Result<ListPlan, ApiError> {
        let mut o = ListOptions::decode(q)?;
        o.validate()?;
        let pods = crate::resource::builtin("", "v1", "pods").unwrap().resource();
        ListPlan::of(&pods, &o, "ns/", None)
    }

    #[test]
    fn a_list_naming_one_object_reads_its_key_as_the_registry_does() {
        let pods = crate::resource::builtin("", "v1", "pods").unwrap().resource();
        let nodes = crate::resource::builtin("", "v1", "nodes").unwrap().resource();
        let key = |res: &Resource, ns: Option<&str>, q: &str| named_key(res, ns, &ListOptions::decode(q).unwrap());
        assert_eq!(key(&pods, Some("ns"), "fieldSelector=metadata.name%3Da"), Some("ns/a".into()));
        assert_eq!(key(&pods, Some("ns"), "fieldSelector=metadata.name%3D%3Da,status.phase%3DRunning"), Some("ns/a".into()), "`==` too");
        assert_eq!(key(&pods, None, "fieldSelector=metadata.namespace%3Dns,metadata.name%3Da"), Some("ns/a".into()));
        assert_eq!(key(&pods, None, "fieldSelector=metadata.name%3Da"), None, "no namespace: no key");
        assert_eq!(key(&pods, None, "fieldSelector=metadata.namespace%3DNS,metadata.name%3Da"), None, "not a namespace name");
        assert_eq!(key(&nodes, None, "fieldSelector=metadata.name%3Dn1"), Some("n1".into()));
        for q in
            ["fieldSelector=metadata.name!%3Da", "fieldSelector=metadata.name%3D", "fieldSelector=metadata.name%3D..", "labelSelector=a"]
        {
            assert_eq!(key(&pods, Some("ns"), q), None, "{q}");
        }
        let token = continue_token::encode_after("ns/a", "ns/", 9, true);
        assert_eq!(key(&pods, Some("ns"), &format!("fieldSelector=metadata.name%3Da&continue={token}")), None, "a continue token reads on");

        let one = |q: &str| {
            let o = ListOptions::decode(q).unwrap();
            ListPlan::of(&pods, &o, "ns/", named_key(&pods, Some("ns"), &o)).unwrap()
        };
        let p = one("fieldSelector=metadata.name%3Da&limit=1");
        assert_eq!(
            (p.read, p.start.as_str(), p.limit, p.one),
            (Read::MostRecent, "ns/a", usize::MAX, true),
            "no continue whatever the limit"
        );
        assert_eq!(one("fieldSelector=metadata.name%3Da&limit=1&resourceVersion=7").read, Read::NotOlderThan(7), "legacy: not older than");
        assert_eq!(one("fieldSelector=metadata.name%3Da&resourceVersion=7&resourceVersionMatch=Exact").read, Read::Exact(7));
        assert_eq!(
            plan("fieldSelector=metadata.name%3Da&limit=1&resourceVersion=7").unwrap().read,
            Read::Exact(7),
            "a scan is legacy exact"
        );
    }

    #[test]
    fn every_row_of_the_revision_table_reads_what_the_apiserver_reads() {
        let read = |q: &str| plan(q).unwrap().read;
        assert_eq!(read(""), Read::MostRecent);
        assert_eq!(read("limit=5"), Read::MostRecent);
        assert_eq!(read("resourceVersion=0&limit=5"), Read::Any);
        assert_eq!(plan("resourceVersion=0&limit=5").unwrap().limit, usize::MAX, "Any ignores the limit");
        // Unless the apiserver does not cache the resource: etcd pages it (`events-uncached/`).
        let events = crate::resource::builtin("", "v1", "events").unwrap().resource();
        let o = ListOptions::decode("resourceVersion=0&limit=5").unwrap();
        assert_eq!((ListPlan::of(&events, &o, "ns/", None).unwrap().limit, events.watch_cached), (5, false));
        assert_eq!(read("resourceVersion=0&resourceVersionMatch=NotOlderThan"), Read::Any);
        assert_eq!(read("resourceVersion=7"), Read::NotOlderThan(7));
        assert_eq!(read("resourceVersion=7&limit=5"), Read::Exact(7));
        assert_eq!(read("resourceVersion=7&resourceVersionMatch=NotOlderThan&limit=5"), Read::NotOlderThan(7));
        assert_eq!(read("resourceVersion=7&resourceVersionMatch=Exact"), Read::Exact(7));
        let token = continue_token::encode_after("ns/b", "ns/", 9, true);
        let p = plan(&format!("limit=2&continue={token}")).unwrap();
        assert_eq!((p.read, p.start.as_str(), p.limit), (Read::Exact(9), "ns/b\u{0}", 2));
        let latest = continue_token::encode_after("ns/b", "ns/", -1, true);
        assert_eq!(read(&format!("limit=2&continue={latest}")), Read::MostRecent);
        assert_eq!(plan(&format!("resourceVersion=3&continue={token}")).unwrap_err().code, 400);
        assert_eq!(
            plan("continue=%25").unwrap_err().message,
            "invalid continue token: continue key is not valid: illegal base64 data at input byte 0"
        );
    }

    #[test]
    fn page_meta_follows_the_apiservers_rules() {
        let full = ListMeta::for_page(5, "ns/", Some("ns/b"), 3, false, true);
        assert_eq!(full.remaining_item_count, Some(3));
        assert_eq!(continue_token::decode(full.continue_token.as_deref().unwrap(), "ns/").unwrap().key, "ns/b\u{0}");
        let selected = ListMeta::for_page(5, "ns/", Some("ns/b"), 1, true, true);
        assert!(selected.continue_token.is_some() && selected.remaining_item_count.is_none());
        assert_eq!(ListMeta::for_page(5, "ns/", Some("ns/b"), 0, false, true).continue_token, None);
        assert_eq!(ListMeta::for_page(5, "ns/", None, 9, false, true).json(), r#"{"resourceVersion":"5"}"#);
    }

    #[test]
    fn lists_are_written_around_the_items_and_read_back_without_copies() {
        let res = Resource::new("", "v1", "pods", "Pod", true);
        let items = [Bytes::from_static(br#"{"metadata":{"name":"a"}}"#), Bytes::from_static(br#"{"metadata":{"name":"b"}}"#)];
        let body = Bytes::from(json_list(&res, &ListMeta::for_page(42, "", None, 0, false, true), Envelope::Typed, &items).concat());
        assert_eq!(&body[..], br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#);
        let page = ListPage::parse(&body).unwrap();
        assert_eq!((page.resource_version, page.items.len()), (42, 2));
        assert_eq!(page.items[1], items[1]);
        let at = body.windows(6).position(|w| w == b"[{\"met").unwrap() + 1;
        assert_eq!(page.items[0].as_ptr(), body[at..].as_ptr(), "not copied");
        assert!(ListPage::parse(&Bytes::from_static(br#"{"metadata":{"resourceVersion":"x"}}"#)).is_err());
    }

    #[test]
    fn no_items_are_an_empty_array_except_in_a_metadata_only_list() {
        let meta = ListMeta::for_page(7, "", None, 0, false, true);
        let none = std::iter::empty::<[Bytes; 1]>;
        let list = |kind, api_version, envelope| {
            String::from_utf8(json_list_parts(kind, api_version, &meta, envelope, none()).collect::<Vec<_>>().concat()).unwrap()
        };
        assert_eq!(
            list("ConfigMapList", "v1", Envelope::Typed),
            r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}"#
        );
        // As kube-apiserver 1.36.2 answers an empty namespace's configmaps, metadata only.
        let (kind, api_version) = ("PartialObjectMetadataList", "meta.k8s.io/v1");
        assert_eq!(
            list(kind, api_version, Envelope::Metadata),
            r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"items":null}"#
        );
        let one = json_list_parts(kind, api_version, &meta, Envelope::Metadata, [[Bytes::from_static(b"{}")]]);
        assert!(one.collect::<Vec<_>>().concat().ends_with(br#""items":[{}]}"#));
    }

    #[test]
    fn a_custom_resources_list_is_written_as_a_map() {
        let items = [Bytes::from_static(br#"{"apiVersion":"x.io/v1","kind":"W","metadata":{"name":"a"}}"#)];
        let res = Resource::new("x.io", "v1", "ws", "W", true);
        let list =
            |meta: &ListMeta, items: &[Bytes]| String::from_utf8(json_list(&res, meta, Envelope::Unstructured, items).concat()).unwrap();
        // As kube-apiserver 1.36.2 wrote a CRD's lists: whole, a first page, empty.
        assert_eq!(
            list(&ListMeta::for_page(171176, "", None, 0, false, true), &items),
            r#"{"apiVersion":"x.io/v1","items":[{"apiVersion":"x.io/v1","kind":"W","metadata":{"name":"a"}}],"kind":"WList","metadata":{"continue":"","resourceVersion":"171176"}}"#
        );
        let page = ListMeta::for_page(171176, "", Some("ns/a"), 2, false, true);
        let token = page.continue_token.clone().unwrap();
        assert!(list(&page, &items).ends_with(&format!(
            r#"],"kind":"WList","metadata":{{"continue":"{token}","remainingItemCount":2,"resourceVersion":"171176"}}}}"#
        )));
        assert_eq!(
            list(&ListMeta::for_page(171176, "", None, 0, true, true), &[]),
            r#"{"apiVersion":"x.io/v1","items":[],"kind":"WList","metadata":{"continue":"","resourceVersion":"171176"}}"#
        );
    }
}

//! A consistency check like kube-apiserver's own (`DetectCacheInconsistency`,
//! on by default since 1.34): now and then, the store's state at a revision
//! R is compared with upstream's list at exactly R, by each object's
//! namespace, name and resourceVersion.
//!
//! - **What is compared.** R is the store's confirmed revision when the
//!   check starts. Upstream is asked for R exactly
//!   (`resourceVersion=R&resourceVersionMatch=Exact`), metadata only
//!   (`as=PartialObjectMetadataList`), in pages of [`PAGE`]: what kache
//!   needs of each object and nothing more. The store's side is its
//!   snapshot at R, rebuilt from the log if the store has moved on.
//! - **When.** Every `interval` (with a tenth of jitter), for a resource
//!   that is ready and answered at least one list or watch from memory
//!   since its last check. A check costs upstream about half a list (the
//!   50,000 pods of kube-apiserver 1.36: 137 MB of metadata against 243 MB
//!   of objects, 4.3 s against 6.1 s), so it is paid only by a cache that
//!   saved upstream at least a list meanwhile; GETs of one object do not
//!   count. An unanswerable R (compacted, say) skips the round.
//! - **On a mismatch** (confirmed once against a fresh view, so a revision
//!   whose events were still arriving is not taken for one): one log line
//!   naming the resource and the first keys that differ, a count
//!   (`kache_consistency_checks_total{result="mismatch"}`), and the
//!   resource turns inconsistent — its reads pass through with reason
//!   `inconsistent` — and re-lists. The next check that passes makes it
//!   fresh again.
//!
//! Invariant: a resource whose last finished check found a mismatch is
//! never answered from memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use apimachinery::list::ListPage;
use apimachinery::resource::Resource;
use rand::Rng;
use serde::Deserialize;

use super::UpstreamError;
use super::client::Client;
use super::reflector::ReflectorStatus;
use crate::store::StoreReader;

/// Objects per page of a check's list.
const PAGE: usize = 500;

/// What a check asks upstream for: metadata only, JSON as a fallback.
const METADATA: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// Differing keys a mismatch's log line names.
const NAMED: usize = 3;

/// The counts of one resource's checks.
#[derive(Debug, Default)]
pub struct CheckStats {
    /// Checks that found the store equal to upstream.
    pub matches: AtomicU64,
    /// Checks that found it unlike upstream.
    pub mismatches: AtomicU64,
    /// Checks upstream could not answer (the revision compacted, an error).
    pub failures: AtomicU64,
}

/// One object as a check compares it: its key and revision.
type Entry = (String, u64);

#[derive(Deserialize)]
struct Item {
    metadata: Meta,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(default)]
    namespace: String,
    name: String,
    #[serde(rename = "resourceVersion")]
    resource_version: String,
}

/// Checks one resource every `interval` until the task is dropped; `served`
/// counts its lists and watches answered from memory.
pub async fn run(
    client: Client,
    resource: Resource,
    store: StoreReader,
    status: Arc<ReflectorStatus>,
    served: impl Fn() -> u64 + Send,
    stats: Arc<CheckStats>,
    interval: Duration,
) {
    let mut last_served = served();
    loop {
        let jittered = interval.mul_f64(rand::rng().random_range(0.9..1.1));
        tokio::time::sleep(jittered).await;
        let now_served = served();
        let inconsistent = status.health(Duration::MAX) == super::reflector::Health::Inconsistent;
        if !status.is_ready() || (now_served == last_served && !inconsistent) {
            continue;
        }
        last_served = now_served;
        let rv = store.view().confirmed_rv();
        let theirs = match upstream_at(&client, &resource, rv).await {
            Ok(entries) => entries,
            Err(e) => {
                stats.failures.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(resource = %resource.qualified(), rv, error = %e, "consistency check skipped: upstream did not answer");
                continue;
            }
        };
        // Twice, each time from a fresh view: a revision's events may have been arriving.
        let differences = match differences(&store, rv, &theirs) {
            Some(d) if !d.is_empty() => differences(&store, rv, &theirs),
            d => d,
        };
        match differences {
            // The store has been re-listed past `rv` meanwhile: the next check decides.
            None => {}
            Some(d) if d.is_empty() => {
                stats.matches.fetch_add(1, Ordering::Relaxed);
                if inconsistent {
                    tracing::info!(resource = %resource.qualified(), rv, "consistency check passed: reads from memory again");
                }
                status.set_inconsistent(false);
            }
            Some(d) => {
                stats.mismatches.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(resource = %resource.qualified(), rv, differing = d.len(), first = %d.iter().take(NAMED).cloned().collect::<Vec<_>>().join(", "),
                    "consistency check: the cache is unlike the apiserver at this revision; reads pass through while it re-lists");
                status.set_inconsistent(true);
            }
        }
    }
}

/// Upstream's objects at exactly `rv`, sorted by key.
async fn upstream_at(client: &Client, resource: &Resource, rv: u64) -> Result<Vec<Entry>, UpstreamError> {
    let collection = resource.collection_path();
    // Later pages carry only their continue token, which names the revision (the apiserver forbids both).
    let mut path = format!("{collection}?resourceVersion={rv}&resourceVersionMatch=Exact&limit={PAGE}");
    let mut entries = Vec::new();
    loop {
        let body = client.get_bytes_as(&path, METADATA).await?;
        let page = ListPage::parse(&body).map_err(|e| UpstreamError::Decode(Box::new(e)))?;
        for item in &page.items {
            let Item { metadata: m } =
                serde_json::from_slice(item).map_err(|e| UpstreamError::Decode(format!("a list item: {e}").into()))?;
            let rv = m
                .resource_version
                .parse()
                .map_err(|_| UpstreamError::Decode(format!("resourceVersion {:?}", m.resource_version).into()))?;
            let key = if m.namespace.is_empty() { m.name } else { format!("{}/{}", m.namespace, m.name) };
            entries.push((key, rv));
        }
        match page.continue_token {
            Some(token) => {
                path =
                    format!("{collection}?limit={PAGE}&continue={}", form_urlencoded::byte_serialize(token.as_bytes()).collect::<String>())
            }
            None => break,
        }
    }
    entries.sort_unstable();
    Ok(entries)
}

/// The keys whose revision differs between the store at `rv` and `theirs`
/// (`None`: the store no longer holds `rv`).
fn differences(store: &StoreReader, rv: u64, theirs: &[Entry]) -> Option<Vec<String>> {
    let snapshot = store.view().snapshot_at(rv).ok()?;
    let mut ours: Vec<Entry> = snapshot.iter().map(|o| (o.key().to_string(), o.resource_version())).collect();
    ours.sort_unstable();
    Some(diff(&ours, theirs))
}

/// The keys in only one of two sorted lists, or in both at different revisions, in key order.
fn diff(ours: &[Entry], theirs: &[Entry]) -> Vec<String> {
    let (mut a, mut b) = (ours.iter().peekable(), theirs.iter().peekable());
    let mut out = Vec::new();
    loop {
        match (a.peek(), b.peek()) {
            (None, None) => return out,
            (Some(x), Some(y)) if x.0 == y.0 => {
                if x.1 != y.1 {
                    out.push(format!("{} (kache {}, upstream {})", x.0, x.1, y.1));
                }
                a.next();
                b.next();
            }
            (Some(x), y) if y.is_none_or(|y| x.0 < y.0) => {
                out.push(format!("{} (only in kache)", x.0));
                a.next();
            }
            (_, Some(y)) => {
                out.push(format!("{} (only upstream)", y.0));
                b.next();
            }
            (Some(_), None) => unreachable!("matched above"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(e: &[(&str, u64)]) -> Vec<Entry> {
        e.iter().map(|(k, rv)| ((*k).to_string(), *rv)).collect()
    }

    #[test]
    fn the_differences_name_missing_extra_and_changed_keys_in_order() {
        let ours = entries(&[("a/x", 1), ("a/y", 2), ("b/z", 3)]);
        assert!(diff(&ours, &ours).is_empty());
        let theirs = entries(&[("a/x", 1), ("a/y", 5), ("c/w", 4)]);
        assert_eq!(diff(&ours, &theirs), ["a/y (kache 2, upstream 5)", "b/z (only in kache)", "c/w (only upstream)"]);
        assert_eq!(diff(&[], &theirs[..1]), ["a/x (only upstream)"]);
    }
}

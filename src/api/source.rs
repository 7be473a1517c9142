//! Who answered a request ([`Source`]: kache's memory, the apiserver and
//! why, or kache itself) as a closed set of values: every reason a request
//! goes upstream is one [`PassThrough`], named once by
//! [`PassThrough::as_str`], which is the `reason` label of
//! `kache_requests_total` and the reason in logs. No free string becomes a
//! label.

use http::Response;

use crate::upstream::freshness::NotFresh;
use crate::upstream::plan::Read;

/// Why a request is passed through to the apiserver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassThrough {
    /// Not a GET: writes, deletes, upgrades.
    NotARead,
    /// A path under no cached resource (another resource, a subresource, discovery).
    NotCached,
    /// The resource's initial list (or re-list) is not in yet.
    NotSynced,
    /// Upstream has been silent past `--max-staleness`.
    Stale,
    /// The consistency check found the store unlike upstream.
    Inconsistent,
    /// An answer kache does not write: a conversion, printer or encoding it
    /// lacks, an object without an exact encoding, or CBOR before kache
    /// knows whether upstream serves it.
    Encoding,
    /// A watch in a form kache does not stream (indented, YAML, a list form,
    /// a Table with bookmarks its printer cannot print).
    WatchForm,
    /// A large protobuf read while the resource's messages are being made.
    ProtobufBeingMade,
    /// A large CBOR read while the resource's maps are being made.
    CborBeingMade,
    /// The store did not reach the revision asked for in time.
    RevisionNotReached,
    /// An exact revision below the store's window (upstream answers or gives its 410).
    RevisionOutsideWindow,
    /// A `resourceVersion` that does not parse: upstream words the error.
    MalformedRevision,
    /// The memory budget's last level (or a page that would pin a snapshot under it).
    MemoryBudget,
    /// A watch whose start was re-listed under it three times.
    Relisting,
    /// Upstream ignores shard selectors.
    ShardsIgnored,
    /// Whether upstream honours shard selectors is not known (being learnt).
    ShardsUnknown,
    /// A shard selector beyond the CEL subset kache reads (only cel-go words its error).
    ShardBeyondCel,
    /// A consistent read of a resource the apiserver serves from etcd, not
    /// its watch cache (events): its watch has no bookmarks to prove kache fresh by.
    UncachedUpstream,
    /// A field label kache does not know: a custom resource's, which its
    /// CRD's `selectableFields` may declare (only the apiserver can say).
    CustomFieldLabel,
    /// A consistent read memory does not answer (`upstream::freshness`).
    NotFresh(NotFresh),
}

impl PassThrough {
    /// Every reason, in the order the metrics list them.
    pub const ALL: [PassThrough; 23] = [
        PassThrough::NotARead,
        PassThrough::NotCached,
        PassThrough::NotSynced,
        PassThrough::Stale,
        PassThrough::Inconsistent,
        PassThrough::Encoding,
        PassThrough::WatchForm,
        PassThrough::ProtobufBeingMade,
        PassThrough::CborBeingMade,
        PassThrough::RevisionNotReached,
        PassThrough::RevisionOutsideWindow,
        PassThrough::MalformedRevision,
        PassThrough::MemoryBudget,
        PassThrough::Relisting,
        PassThrough::ShardsIgnored,
        PassThrough::ShardsUnknown,
        PassThrough::ShardBeyondCel,
        PassThrough::UncachedUpstream,
        PassThrough::CustomFieldLabel,
        PassThrough::NotFresh(NotFresh::Sooner),
        PassThrough::NotFresh(NotFresh::Probe),
        PassThrough::NotFresh(NotFresh::Timeout),
        PassThrough::NotFresh(NotFresh::Late),
    ];

    /// The reason, as the `reason` label and the logs name it.
    pub fn as_str(self) -> &'static str {
        match self {
            PassThrough::NotARead => "not a read",
            PassThrough::NotCached => "not cached",
            PassThrough::NotSynced => "not synced",
            PassThrough::Stale => "stale",
            PassThrough::Inconsistent => "inconsistent",
            PassThrough::Encoding => "encoding",
            PassThrough::WatchForm => "watch form",
            PassThrough::ProtobufBeingMade => "protobuf being made",
            PassThrough::CborBeingMade => "cbor being made",
            PassThrough::RevisionNotReached => "revision not reached",
            PassThrough::RevisionOutsideWindow => "revision outside the window",
            PassThrough::MalformedRevision => "malformed revision",
            PassThrough::MemoryBudget => "memory budget",
            PassThrough::Relisting => "the cache is re-listing",
            PassThrough::ShardsIgnored => "shard selectors ignored upstream",
            PassThrough::ShardsUnknown => "shard selectors not known upstream",
            PassThrough::ShardBeyondCel => "shard selector beyond kache's CEL",
            PassThrough::UncachedUpstream => "not watch-cached upstream",
            PassThrough::CustomFieldLabel => "custom field label",
            PassThrough::NotFresh(why) => why.as_str(),
        }
    }
}

impl std::fmt::Display for PassThrough {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What memory made of a read: its answer, or why it does not answer (yet).
#[derive(Debug)]
pub enum Answer<T> {
    /// Answered from memory (an error `Status` included).
    Memory(T),
    /// It goes upstream, for this reason.
    Upstream(PassThrough),
    /// A consistent read, which memory answers only once proven fresh: what
    /// it would read, for the plan that decides whether to prove it.
    Unproven(Read),
}

/// Who produced an answer (the `source` label); carried by the response as
/// an extension ([`Source::mark`]), read by the metrics, the audit and
/// priority and fairness ([`Source::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// kache's memory.
    Memory,
    /// The apiserver, for this reason.
    Upstream(PassThrough),
    /// kache itself: health, metrics, refusals before any resource is read.
    Kache,
}

impl Source {
    /// `resp`, marked as answered by this source.
    pub fn mark<B>(self, mut resp: Response<B>) -> Response<B> {
        resp.extensions_mut().insert(self);
        resp
    }

    /// Who answered `resp`: its mark, or kache itself when unmarked.
    pub fn of<B>(resp: &Response<B>) -> Source {
        resp.extensions().get::<Source>().copied().unwrap_or(Source::Kache)
    }

    /// The `source` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Memory => "memory",
            Source::Upstream(_) => "upstream",
            Source::Kache => "kache",
        }
    }

    /// The `reason` label: why it went upstream, empty otherwise.
    pub fn reason(self) -> &'static str {
        match self {
            Source::Upstream(why) => why.as_str(),
            _ => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_listed_once_with_a_label_of_its_own() {
        let labels: std::collections::BTreeSet<&str> = PassThrough::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(labels.len(), PassThrough::ALL.len());
        assert!(PassThrough::ALL.iter().all(|r| !r.as_str().is_empty()));
    }
}

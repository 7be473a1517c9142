//! What a reflector has done and knows, shared with readers: readiness and
//! [`Health`] (the one verdict `/readyz`, the metrics, the routing of reads
//! and the log all read), counters, re-lists by [`Relist`] cause, the
//! resource's confirmed revision, when upstream last answered, and what
//! kache learnt of upstream by asking ([`Capabilities`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::upstream::UpstreamError;
use crate::upstream::capability::Capabilities;

/// What a reflector has done, for readiness and metrics.
#[derive(Debug, Default)]
pub struct ReflectorStatus {
    pub(super) ready: AtomicBool,
    pub(super) watching: AtomicBool,
    /// Lists started (initial and re-lists, not probes).
    pub lists: AtomicU64,
    /// Re-lists by cause ([`Relist::ALL`]'s order).
    relists: [AtomicU64; Relist::ALL.len()],
    /// Re-lists that found exactly what the store held (and ended nothing).
    pub relists_unchanged: AtomicU64,
    /// The consistency check found the store unlike upstream, and none has passed since.
    inconsistent: AtomicBool,
    /// Asks the reflector to re-list (the consistency check's finding).
    pub(super) relist: tokio::sync::Notify,
    /// Watches started.
    pub watches: AtomicU64,
    /// Probes of upstream's revision.
    pub probes: AtomicU64,
    /// Events applied.
    pub events: AtomicU64,
    /// What kache learnt of upstream by asking: forgotten at every list and broken watch.
    pub capabilities: Arc<Capabilities>,
    /// The last revision the sink confirmed.
    pub confirmed_rv: AtomicU64,
    /// Milliseconds from [`contact_epoch`] to upstream's last answer (a list
    /// page, a watch opened, a watch frame), plus one; 0: none yet.
    contact: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// The origin of [`ReflectorStatus`] contact times.
fn contact_epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl ReflectorStatus {
    /// Whether the first list (or a saved state) has been applied.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Whether the upstream watch is open.
    pub fn is_watching(&self) -> bool {
        self.watching.load(Ordering::Relaxed)
    }

    /// Marks the store unlike upstream (reads pass through) and has it
    /// re-listed; or, `false`, like it again.
    pub fn set_inconsistent(&self, inconsistent: bool) {
        if inconsistent {
            self.relist.notify_one();
        }
        self.inconsistent.store(inconsistent, Ordering::Release);
    }

    /// Re-lists so far, by cause (every cause, 0 included).
    pub fn relists(&self) -> impl Iterator<Item = (Relist, u64)> + '_ {
        Relist::ALL.into_iter().zip(&self.relists).map(|(c, n)| (c, n.load(Ordering::Relaxed)))
    }

    pub(super) fn relisted(&self, cause: Relist) {
        self.relists[cause as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The last failure, if any.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().clone()
    }

    /// The resource's health with staleness bound `bound`; only a
    /// [`Health::Fresh`] one is answered from memory. Past the bound
    /// (upstream gone), reads pass through and fail as the apiserver's would.
    pub fn health(&self, bound: Duration) -> Health {
        if !self.is_ready() {
            return Health::Listing { again: self.lists.load(Ordering::Relaxed) > 1 };
        }
        match self.silence() {
            Some(s) if s > bound => Health::Stale { silence: Some(s) },
            None => Health::Stale { silence: None },
            Some(_) if self.inconsistent.load(Ordering::Acquire) => Health::Inconsistent,
            Some(_) => Health::Fresh,
        }
    }

    /// How long since upstream last answered; `None` before it ever did.
    pub fn silence(&self) -> Option<Duration> {
        match self.contact.load(Ordering::Relaxed) {
            0 => None,
            at => Some(contact_epoch().elapsed().saturating_sub(Duration::from_millis(at - 1))),
        }
    }

    /// Upstream answered now.
    pub(super) fn touch(&self) {
        self.contact.store(contact_epoch().elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
    }

    pub(super) fn failed(&self, e: &UpstreamError) {
        *self.last_error.lock() = Some(e.to_string());
    }
}

/// Whether kache may answer a resource from memory, and if not why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// No list applied yet (`again`: re-listing after one was).
    Listing {
        /// A list was applied before: this is a re-list.
        again: bool,
    },
    /// Listed, and upstream answered within the staleness bound.
    Fresh,
    /// Listed, but upstream has not answered within the bound (`None`: never).
    Stale {
        /// How long since it last answered.
        silence: Option<Duration>,
    },
    /// The consistency check found the store unlike upstream; re-listed,
    /// it is fresh again once a check passes.
    Inconsistent,
}

impl Health {
    /// Whether reads may be answered from memory.
    pub fn is_fresh(self) -> bool {
        self == Health::Fresh
    }
}

/// Why a resource is re-listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Relist {
    /// Upstream compacted past the watch's revision (410 Gone).
    Compacted,
    /// Upstream refused the revision as too large (etcd restored behind it).
    TooLarge,
    /// Upstream's revision went below the store's.
    WentBack,
    /// Upstream sent what does not follow: an event out of order, one that
    /// does not fit the state, or a frame that does not decode.
    Protocol,
    /// The consistency check found the store unlike upstream.
    Inconsistent,
}

impl Relist {
    /// Whether the store keeps answering reads while the re-list runs: after
    /// a compaction (upstream's 410: its cache no longer reaches back to the
    /// store's revision, as after an apiserver restart) what the store holds
    /// is still a state upstream had; after any other cause it may not be.
    pub fn keeps_serving(self) -> bool {
        self == Relist::Compacted
    }

    /// Every cause.
    pub const ALL: [Relist; 5] = [Relist::Compacted, Relist::TooLarge, Relist::WentBack, Relist::Protocol, Relist::Inconsistent];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Relist::Compacted => "compacted",
            Relist::TooLarge => "too large revision",
            Relist::WentBack => "revision went back",
            Relist::Protocol => "protocol",
            Relist::Inconsistent => "inconsistent",
        }
    }
}

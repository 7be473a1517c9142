//! The watch cache core: every retained revision of one resource, in memory,
//! with one writer and any number of readers that never wait (ARCHITECTURE.md,
//! invariants 1–4 and 6). No I/O.
//!
//! - [`CachedObject`]: an object's bytes as upstream sent them, plus the
//!   parsed parts lists and watches need.
//! - [`Snapshot`]: the objects at one revision, a persistent ordered map in
//!   etcd key order with structural sharing.
//! - [`StoreWriter`] applies events, bookmarks and re-lists to a working
//!   [`View`] and publishes it atomically; [`StoreReader`]s load the
//!   published view, rebuild any revision in `[oldest_rv, confirmed_rv]`,
//!   read the log after a revision, pin snapshots for continue tokens, and
//!   subscribe to publishes.
//! - The log is bounded by count and by age ([`StoreConfig`]); pins by TTL
//!   and count; [`MemoryStats`] accounts for it all. The count bound can be
//!   lowered at run time ([`StoreReader::set_event_limit`], the memory
//!   budget's first step, `crate::budget`): a knob, not a change to the
//!   store — the writer trims to it at its next event or publish, exactly
//!   as it trims to `max_events`, so `oldest_rv` only moves up and what
//!   falls out is refused as too old (never skipped).

mod event;
mod memory;
#[cfg(test)]
mod model_tests;
mod object;
mod reader;
mod snapshot;
mod view;
mod writer;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

pub use event::{Event, EventType};
pub use memory::MemoryStats;
pub use object::CachedObject;
pub use reader::StoreReader;
pub use snapshot::{IndexKey, Objects, Snapshot};
pub use view::View;
pub use writer::StoreWriter;

/// Bounds of a store.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Most events kept in the log.
    pub max_events: usize,
    /// Oldest event kept in the log (by the time it was applied).
    pub max_age: Duration,
    /// A checkpoint snapshot every this many events, bounding a rebuild.
    pub checkpoint_every: usize,
    /// How long a pinned snapshot lives after its last use.
    pub pin_ttl: Duration,
    /// Most pinned snapshots.
    pub max_pins: usize,
    /// Positions (among the fields given to [`CachedObject::parse`]) of
    /// the fields snapshots index, besides labels (a pod's `spec.nodeName`).
    pub indexed_fields: Arc<[usize]>,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            max_events: 100_000,
            // Continue tokens and resumed watches work for the 5 minutes
            // etcd keeps history (the apiserver's compaction interval).
            max_age: Duration::from_secs(300),
            checkpoint_every: 10_000,
            pin_ttl: Duration::from_secs(300),
            max_pins: 1_024,
            indexed_fields: Arc::from([]),
        }
    }
}

/// Why the store refused a request or an update.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The revision is older than the window.
    #[error("revision {requested} is older than the oldest held, {oldest}")]
    TooOld {
        /// The revision asked for.
        requested: u64,
        /// The oldest revision held.
        oldest: u64,
    },
    /// The revision is newer than what upstream has confirmed.
    #[error("revision {requested} is newer than the confirmed {confirmed}")]
    TooNew {
        /// The revision asked for.
        requested: u64,
        /// The confirmed revision.
        confirmed: u64,
    },
    /// An event or bookmark at or below what is already confirmed.
    #[error("revision {rv} does not follow the confirmed {confirmed}")]
    OutOfOrder {
        /// The event's revision.
        rv: u64,
        /// The confirmed revision.
        confirmed: u64,
    },
    /// An event that does not fit the state (a duplicate add, a change to a missing object).
    #[error("{typ:?} of {key} does not fit the cached state")]
    Inconsistent {
        /// The event type.
        typ: EventType,
        /// The object's key.
        key: String,
    },
    /// Bytes that are not an object kache can cache.
    #[error("not a cacheable object: {0}")]
    BadObject(String),
}

/// What the writer and readers share.
#[derive(Debug)]
struct Shared {
    config: StoreConfig,
    view: ArcSwap<View>,
    published: tokio::sync::watch::Sender<u64>,
    pins: Mutex<reader::Pins>,
    /// The run-time bound on the log, read by the writer (see [`Shared::event_limit`]).
    event_limit: AtomicUsize,
}

impl Shared {
    fn new(config: StoreConfig) -> Shared {
        Shared {
            event_limit: AtomicUsize::new(config.max_events),
            config,
            view: ArcSwap::from_pointee(View::default()),
            published: tokio::sync::watch::Sender::new(0),
            pins: Mutex::default(),
        }
    }

    /// The most events the log keeps now: `max_events`, or less while a
    /// reader has lowered the bound.
    fn event_limit(&self) -> usize {
        self.event_limit.load(Ordering::Relaxed).min(self.config.max_events)
    }
}

//! [`StoreReader`]: any number of readers of a store. Loading the view is
//! one atomic pointer load; a reader then works on its own `Arc<View>` for
//! as long as it likes. Pins keep snapshots alive for continue tokens (a
//! TTL refreshed on use, like the apiserver's 5-minute token lifetime, and a
//! bounded count); only readers touch the pin table, never the writer. A pin
//! also remembers cursors: how many keys precede a continue key, so the next
//! page can report `remainingItemCount` without counting what came before.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use super::memory::MemoryStats;
use super::snapshot::Snapshot;
use super::view::View;
use super::{Shared, StoreError};

/// A reader of one store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct StoreReader {
    pub(super) shared: Arc<Shared>,
}

/// Most cursors a pin remembers (a paged list of 5M objects in pages of 500).
const MAX_CURSORS: usize = 10_000;

/// A pinned snapshot, its expiry, and cursors into it.
#[derive(Debug)]
pub(super) struct Pin {
    snapshot: Arc<Snapshot>,
    expires: Instant,
    cursors: HashMap<Box<str>, u64>,
}

/// Pinned snapshots by revision.
pub(super) type Pins = BTreeMap<u64, Pin>;

impl StoreReader {
    /// The latest published view.
    pub fn view(&self) -> Arc<View> {
        self.shared.view.load_full()
    }

    /// A receiver woken with the confirmed revision at every publish. It
    /// holds only the latest value: a slow receiver skips, never blocks.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.published.subscribe()
    }

    /// The snapshot at `rv`: a pinned one if there is one (refreshing its
    /// TTL), else rebuilt from the current view.
    pub fn snapshot_at(&self, rv: u64, now: Instant) -> Result<Arc<Snapshot>, StoreError> {
        if let Some(s) = self.pinned(rv, now) {
            return Ok(s);
        }
        self.view().snapshot_at(rv)
    }

    /// Keeps `snapshot` for continue tokens at its revision. Expired pins go
    /// first; past the bound, the pin closest to expiry is dropped.
    pub fn pin(&self, snapshot: Arc<Snapshot>, now: Instant) {
        let config = &self.shared.config;
        let mut pins = self.shared.pins.lock();
        pins.retain(|_, p| p.expires > now);
        let expires = self.expiry(now);
        pins.entry(snapshot.rv()).or_insert_with(|| Pin { snapshot, expires, cursors: HashMap::new() }).expires = expires;
        while pins.len() > config.max_pins {
            let Some(soonest) = pins.iter().min_by_key(|(_, p)| p.expires).map(|(rv, _)| *rv) else { break };
            pins.remove(&soonest);
        }
    }

    fn expiry(&self, now: Instant) -> Instant {
        now.checked_add(self.shared.config.pin_ttl).unwrap_or(now)
    }

    /// The pinned snapshot at `rv`, if still alive; its TTL restarts.
    pub fn pinned(&self, rv: u64, now: Instant) -> Option<Arc<Snapshot>> {
        let mut pins = self.shared.pins.lock();
        let pin = pins.get_mut(&rv)?;
        if pin.expires <= now {
            pins.remove(&rv);
            return None;
        }
        pin.expires = self.expiry(now);
        Some(pin.snapshot.clone())
    }

    /// Remembers that `position` keys precede `key` in the snapshot pinned at `rv`.
    pub(crate) fn set_cursor(&self, rv: u64, key: &str, position: u64) {
        if let Some(pin) = self.shared.pins.lock().get_mut(&rv) {
            if pin.cursors.len() >= MAX_CURSORS {
                pin.cursors.clear();
            }
            pin.cursors.insert(key.into(), position);
        }
    }

    /// How many keys precede `key` in the snapshot pinned at `rv`, if remembered.
    pub(crate) fn cursor(&self, rv: u64, key: &str) -> Option<u64> {
        self.shared.pins.lock().get(&rv)?.cursors.get(key).copied()
    }

    /// Lowers (or raises again, up to the configured `max_events`) the
    /// most events the log keeps. The writer trims to it at its next event
    /// or publish, as it trims to `max_events`: `oldest_rv` moves up, so
    /// exact and continue reads below it pass through and watches from
    /// below it get 410 Expired.
    pub(crate) fn set_event_limit(&self, max: usize) {
        self.shared.event_limit.store(max, std::sync::atomic::Ordering::Relaxed);
    }

    /// The most events the log keeps now (see [`StoreReader::set_event_limit`]).
    pub(crate) fn event_limit(&self) -> usize {
        self.shared.event_limit()
    }

    /// The configured bound on the log (`StoreConfig::max_events`).
    pub fn max_events(&self) -> usize {
        self.shared.config.max_events
    }

    /// Memory held by the store: object bytes and everything around them.
    pub fn memory(&self) -> MemoryStats {
        let view = self.view();
        let pins: Vec<u64> = self.shared.pins.lock().keys().copied().collect();
        MemoryStats::of(&view, &pins)
    }
}

//! [`StoreReader`]: any number of readers of a store. Loading the view is
//! one atomic pointer load; a reader then works on its own `Arc<View>` for
//! as long as it likes. Pins keep snapshots alive for continue tokens (a
//! TTL refreshed on use, like the apiserver's 5-minute token lifetime, and a
//! bounded count); only readers touch the pin table, never the writer.

use std::collections::BTreeMap;
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

/// Pinned snapshots by revision, with their expiry.
pub(super) type Pins = BTreeMap<u64, (Arc<Snapshot>, Instant)>;

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
        pins.retain(|_, (_, expires)| *expires > now);
        pins.insert(snapshot.rv(), (snapshot, now + config.pin_ttl));
        while pins.len() > config.max_pins {
            let Some(soonest) = pins.iter().min_by_key(|(_, (_, e))| *e).map(|(rv, _)| *rv) else { break };
            pins.remove(&soonest);
        }
    }

    /// The pinned snapshot at `rv`, if still alive; its TTL restarts.
    pub fn pinned(&self, rv: u64, now: Instant) -> Option<Arc<Snapshot>> {
        let mut pins = self.shared.pins.lock();
        let (snapshot, expires) = pins.get_mut(&rv)?;
        if *expires <= now {
            pins.remove(&rv);
            return None;
        }
        *expires = now + self.shared.config.pin_ttl;
        Some(snapshot.clone())
    }

    /// Memory held by the store: object bytes and everything around them.
    pub fn memory(&self) -> MemoryStats {
        let view = self.view();
        let pins: Vec<u64> = self.shared.pins.lock().keys().copied().collect();
        MemoryStats::of(&view, &pins)
    }
}

//! Memory accounting, ready to export as metrics: the bytes of object data
//! (every distinct object revision the store holds, as upstream sent it)
//! and an estimate of everything else (parsed parts, map nodes, the log,
//! checkpoints and pins).
//!
//! The persistent map shares nodes between snapshots; a checkpoint or pin
//! costs the nodes that differ from the head, estimated here as one
//! root-to-leaf path per later event, capped at a full copy of the map.

use std::collections::HashSet;
use std::sync::Arc;

use super::event::Event;
use super::object::CachedObject;
use super::view::View;

/// Bytes per map entry: the key and value pointers, plus node slack.
const MAP_ENTRY: usize = (std::mem::size_of::<Arc<str>>() + std::mem::size_of::<Arc<CachedObject>>()) * 5 / 4;
/// Bytes per entry of an index's key set: the key pointer, plus node slack.
const SET_ENTRY: usize = std::mem::size_of::<Arc<str>>() * 5 / 4;
/// Bytes per node on a root-to-leaf path, and the path length.
const PATH_BYTES: usize = 64 * MAP_ENTRY * 3;
/// The reference counts in front of every `Arc` allocation.
const ARC_HEADER: usize = 2 * std::mem::size_of::<usize>();

/// A store's memory, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Objects in the head snapshot.
    pub objects: usize,
    /// Events in the log.
    pub events: usize,
    /// Bytes of object data, each distinct revision once.
    pub object_bytes: usize,
    /// Bytes of everything else (estimate).
    pub overhead_bytes: usize,
}

impl MemoryStats {
    /// Accounts for `view` and snapshots pinned at the revisions `pins`.
    pub fn of(view: &View, pins: &[u64]) -> MemoryStats {
        let mut seen: HashSet<*const CachedObject> = HashSet::new();
        let mut object_bytes = 0;
        let mut overhead = 0;
        let mut count = |o: &Arc<CachedObject>| {
            if seen.insert(Arc::as_ptr(o)) {
                object_bytes += o.bytes().len();
                overhead += o.overhead_bytes() + ARC_HEADER;
            }
        };
        view.head().iter().for_each(&mut count);
        for e in &view.log {
            count(&e.object);
            e.prev.iter().for_each(&mut count);
        }
        let full_map = view.head().len() * MAP_ENTRY;
        let diverged = |events_after: usize| (events_after * PATH_BYTES).min(full_map);
        let log_len = view.log.len();
        let events_after = |rv: u64| log_len - view.log.binary_search_by(|e| e.rv().cmp(&rv)).map_or_else(|i| i, |i| i + 1);
        let snapshots: usize =
            view.checkpoints.iter().map(|c| c.rv()).chain(pins.iter().copied()).map(|rv| diverged(events_after(rv))).sum();
        let index = view.head().index_entries() * SET_ENTRY;
        overhead += full_map + index + log_len * (std::mem::size_of::<Event>() + ARC_HEADER + std::mem::size_of::<usize>()) + snapshots;
        MemoryStats { objects: view.head().len(), events: log_len, object_bytes, overhead_bytes: overhead }
    }
}

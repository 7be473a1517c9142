//! Where a reflector puts what it learns ([`Sink`]: the store's writer,
//! `crate::upstream::store_sink`) and what an earlier run saved ([`Saved`]).

use apimachinery::watch::EventType;
use bytes::Bytes;

/// Where a reflector puts what it learns: the store's writer.
pub trait Sink: Send {
    /// Why the sink refuses what upstream sent (an object it cannot hold,
    /// an event that does not follow); the reflector re-lists.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Replaces the whole state with a list taken at `rv`; `Ok(false)`: the
    /// list held exactly what the sink did (same keys, same bytes), which
    /// then only moves to `rv`, as a bookmark would, and ends no watch.
    fn replace(&mut self, items: Vec<Bytes>, rv: u64) -> Result<bool, Self::Error>;
    /// Replaces the whole state with a saved one at `rv`, whose items each
    /// own their allocation (no page body behind them).
    fn restore(&mut self, items: Vec<Bytes>, rv: u64) -> Result<(), Self::Error> {
        self.replace(items, rv).map(|_| ())
    }
    /// Applies one watch event; its revision is the object's.
    fn apply(&mut self, typ: EventType, object: Bytes) -> Result<u64, Self::Error>;
    /// Every event up to `rv` has been applied.
    fn bookmark(&mut self, rv: u64);
    /// Makes what was applied visible (called after each received chunk).
    fn flush(&mut self);
    /// Changes with every [`Sink::replace`]: a freshness proof holds only in the epoch it was measured in.
    fn epoch(&self) -> u64;
}

/// A resource's state saved by an earlier run: the objects at `rv`, in
/// list-item form, as the sink held them.
#[derive(Debug)]
pub struct Saved {
    /// The objects, as a list's items.
    pub items: Vec<Bytes>,
    /// The revision they are the state at.
    pub rv: u64,
}

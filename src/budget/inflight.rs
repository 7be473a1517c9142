//! Memory reserved for lists being written ([`ListMemory`]). A list
//! answered from memory holds, while it is written, memory the store does
//! not count: a pointer per object (its
//! page), a 64 KiB frame and hyper's write queue, and — gzipped — the
//! deflate state and its pieces. Under a whole-cache budget
//! (`--memory-budget`) those bytes come out of what the store leaves of the
//! budget: a list reserves its [`cost`] before its first byte is written
//! and gives it back when its body is done or dropped. A list that does not
//! fit waits for lists in flight to finish, up to [`WAIT`] (the apiserver's
//! own queueing bound, APF's `requestWaitLimit`), and then gets the
//! apiserver's answer to overload: 429 with `Retry-After`, which client-go
//! retries. So a list storm costs memory within the budget and time, never
//! an out-of-memory kill and never a load upstream.
//!
//! Invariants: the bytes reserved never exceed the limit, except that a
//! list is always admitted when no other is in flight (one list larger than
//! the limit is still answered, alone); every reservation is given back
//! exactly once, when its [`Reservation`] drops. Without a whole-cache
//! budget the limit is unbounded and lists are only counted.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// The longest a list waits for its memory (APF's default `requestWaitLimit`).
pub(crate) const WAIT: Duration = Duration::from_secs(15);

/// What a list in flight holds beyond its objects' pointers, at most: the
/// 64 KiB frame being gathered and hyper's write queue (about 408 KiB) when
/// the client reads slower than kache writes (measured with a fast client:
/// about 26 KiB).
const PER_LIST: u64 = 512 << 10;
/// And gzipped, besides: the deflate state (about 256 KiB), the 128 KiB
/// piece being filled and the one queued (measured with a fast client:
/// about 670 KiB in all).
const PER_GZIP_LIST: u64 = PER_LIST + (448 << 10);
/// Per object: its pointer in the page.
const PER_OBJECT: u64 = 8;

/// What a list of `objects` costs while it is written (`gzip`: when the client accepts gzip).
pub fn cost(objects: usize, gzip: bool) -> u64 {
    (if gzip { PER_GZIP_LIST } else { PER_LIST }) + PER_OBJECT * objects as u64
}

/// The memory lists being written share, within what the stores leave of the budget.
#[derive(Debug, Default)]
pub struct ListMemory {
    state: Mutex<State>,
    freed: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// Bytes lists in flight may hold (`None`: unbounded).
    limit: Option<u64>,
    reserved: u64,
    lists: usize,
}

impl State {
    fn fits(&self, cost: u64) -> bool {
        self.lists == 0 || self.limit.is_none_or(|limit| self.reserved + cost <= limit)
    }
}

impl ListMemory {
    /// Sets the bytes lists in flight may hold: what the store leaves of the
    /// budget at the last check. Lists already in flight keep theirs.
    pub fn set_limit(&self, bytes: u64) {
        self.state.lock().limit = Some(bytes);
        self.freed.notify_waiters();
    }

    /// The bytes lists in flight may hold (`None`: unbounded).
    pub fn limit(&self) -> Option<u64> {
        self.state.lock().limit
    }

    /// Bytes reserved by lists in flight.
    pub(crate) fn reserved(&self) -> u64 {
        self.state.lock().reserved
    }

    /// Reserves `cost` bytes, waiting up to `wait` for them; `None`: not free in time.
    pub(crate) async fn reserve(self: &Arc<Self>, cost: u64, wait: Duration) -> Option<Reservation> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            // Registered before the check, so a release between the two is not missed.
            freed.as_mut().enable();
            {
                let mut s = self.state.lock();
                if s.fits(cost) {
                    s.reserved += cost;
                    s.lists += 1;
                    return Some(Reservation { memory: self.clone(), cost });
                }
            }
            tokio::time::timeout_at(deadline, freed).await.ok()?;
        }
    }
}

/// Bytes a list in flight holds of the [`ListMemory`], given back on drop.
#[derive(Debug)]
pub(crate) struct Reservation {
    memory: Arc<ListMemory>,
    cost: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        {
            let mut s = self.memory.state.lock();
            s.reserved -= self.cost;
            s.lists -= 1;
        }
        self.memory.freed.notify_waiters();
    }
}

/// An iterator that holds a [`Reservation`] as long as it lives: a list's
/// parts, whose body drops them when it is done or the client goes away.
pub(crate) struct Reserved<I> {
    inner: I,
    _reservation: Reservation,
}

impl<I> std::fmt::Debug for Reserved<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reserved").field("reservation", &self._reservation).finish_non_exhaustive()
    }
}

impl<I> Reserved<I> {
    /// `inner`, holding `reservation`.
    pub fn new(inner: I, reservation: Reservation) -> Reserved<I> {
        Reserved { inner, _reservation: reservation }
    }
}

impl<I: Iterator> Iterator for Reserved<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        self.inner.next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_list_waits_for_its_memory_and_gets_it_when_another_finishes() {
        let memory = Arc::new(ListMemory::default());
        memory.set_limit(1000);
        let first = memory.reserve(600, WAIT).await.expect("memory");
        // 600 + 600 > 1000: the second waits.
        let waiting = tokio::spawn({
            let memory = memory.clone();
            async move { memory.reserve(600, WAIT).await.map(|r| r.cost) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        assert_eq!(memory.reserved(), 600);
        drop(first);
        assert_eq!(waiting.await.expect("the waiter"), Some(600));
        // The waiter's reservation was dropped with its task's result.
        assert_eq!(memory.reserved(), 0);
    }

    #[tokio::test]
    async fn without_memory_in_time_a_list_is_refused_and_a_lone_list_always_fits() {
        let memory = Arc::new(ListMemory::default());
        memory.set_limit(100);
        // Larger than the limit, but nothing else is in flight.
        let big = memory.reserve(500, Duration::ZERO).await.expect("a lone list");
        assert!(memory.reserve(10, Duration::from_millis(20)).await.is_none(), "nothing free while the big one is in flight");
        drop(big);
        assert!(memory.reserve(10, Duration::ZERO).await.is_some());
    }

    #[tokio::test]
    async fn without_a_limit_every_list_is_admitted_and_counted() {
        let memory = Arc::new(ListMemory::default());
        let held: Vec<_> = futures_util::future::join_all((0..3).map(|_| memory.reserve(cost(1000, true), Duration::ZERO))).await;
        assert!(held.iter().all(Option::is_some));
        assert_eq!(memory.reserved(), 3 * cost(1000, true));
        drop(held);
        assert_eq!(memory.reserved(), 0);
    }

    #[test]
    fn a_reserved_iterator_gives_its_memory_back_when_dropped() {
        let memory = Arc::new(ListMemory::default());
        let reservation = futures_util::FutureExt::now_or_never(memory.reserve(100, Duration::ZERO)).flatten().expect("memory");
        let parts = Reserved::new([1, 2, 3].into_iter(), reservation);
        assert_eq!(memory.reserved(), 100);
        assert_eq!(parts.sum::<i32>(), 6);
        assert_eq!(memory.reserved(), 0);
    }
}

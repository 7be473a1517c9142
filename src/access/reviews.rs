//! A cache of review outcomes (a `TokenReview`'s user, a
//! `SubjectAccessReview`'s decision) that coalesces identical reviews.
//!
//! Invariants: while a review of a key is under way every other request
//! for that key awaits the same review (one upstream call); an outcome is
//! served until its own time to live ends (a failed review lives 0 s, so
//! it is retried at once); the cache holds at most `capacity` keys, expired
//! ones evicted first, then the oldest.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::OnceCell;

/// One key's review: done once, read by every waiter.
#[derive(Debug)]
struct Slot<V> {
    created: Instant,
    outcome: OnceCell<(V, Instant)>,
}

/// Review outcomes by key.
#[derive(Debug)]
pub(crate) struct Reviews<K, V> {
    slots: Mutex<HashMap<K, Arc<Slot<V>>>>,
    capacity: usize,
}

impl<K: Eq + Hash + Clone, V: Clone> Reviews<K, V> {
    pub fn new(capacity: usize) -> Self {
        Reviews { slots: Mutex::new(HashMap::new()), capacity: capacity.max(1) }
    }

    /// The outcome for `key`: cached, awaited from a review under way, or
    /// reviewed now by the future `review` makes, which returns the outcome
    /// and how long it holds. That future (a request to the apiserver, kilobytes
    /// of state) is made and boxed only when it runs, so a cached outcome costs
    /// its caller's future nothing of it.
    pub async fn get<R, F>(&self, key: &K, review: R) -> V
    where
        R: FnOnce() -> F,
        F: Future<Output = (V, Duration)>,
    {
        let now = Instant::now();
        let slot = {
            let mut slots = self.slots.lock();
            match slots.get(key) {
                Some(s) if s.outcome.get().is_none_or(|(_, until)| *until > now) => s.clone(),
                _ => {
                    if slots.len() >= self.capacity {
                        slots.retain(|_, s| s.outcome.get().is_none_or(|(_, until)| *until > now));
                    }
                    if slots.len() >= self.capacity
                        && let Some(oldest) = slots.iter().min_by_key(|(_, s)| s.created).map(|(k, _)| k.clone())
                    {
                        slots.remove(&oldest);
                    }
                    let s = Arc::new(Slot { created: now, outcome: OnceCell::new() });
                    slots.insert(key.clone(), s.clone());
                    s
                }
            }
        };
        let (outcome, _) = slot
            .outcome
            .get_or_init(|| async {
                let (outcome, ttl) = Box::pin(review()).await;
                (outcome, Instant::now() + ttl)
            })
            .await;
        outcome.clone()
    }

    /// How many keys are held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.slots.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn identical_reviews_are_coalesced_and_cached_for_their_ttl() {
        let reviews: Arc<Reviews<String, bool>> = Arc::new(Reviews::new(10));
        let calls = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let (reviews, calls) = (reviews.clone(), calls.clone());
            tasks.push(tokio::spawn(async move {
                reviews
                    .get(&"k".to_string(), || async {
                        calls.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        (true, Duration::from_millis(200))
                    })
                    .await
            }));
        }
        for t in tasks {
            assert!(t.await.unwrap());
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1, "one review for fifty requests");
        tokio::time::sleep(Duration::from_millis(250)).await;
        reviews
            .get(&"k".to_string(), || async {
                calls.fetch_add(1, Ordering::SeqCst);
                (false, Duration::ZERO)
            })
            .await;
        assert_eq!(calls.load(Ordering::SeqCst), 2, "reviewed again once expired");
    }

    #[tokio::test]
    async fn the_cache_is_bounded() {
        let reviews: Reviews<u32, u32> = Reviews::new(3);
        for k in 0..10 {
            reviews.get(&k, || async move { (k, Duration::from_secs(60)) }).await;
        }
        assert_eq!(reviews.len(), 3);
    }
}

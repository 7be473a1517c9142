//! Whether the apiserver serves CBOR for a resource — kube-apiserver does
//! only behind its `CBORServingAndStorage` feature gate (off by default in
//! 1.36), and an aggregated API server may not at all — so that kache
//! answers CBOR from memory only where the apiserver would, and otherwise
//! passes the request through for the apiserver's own answer (its 406).
//!
//! How it is learned: the first request whose answer depends on it (its
//! `Accept` negotiates differently with and without CBOR) passes through
//! and starts a probe: `GET <collection>?limit=1` with
//! `Accept: application/cbor`, one object read once. A CBOR answer means
//! served; 406 means not; anything else (an error, a timeout) learns
//! nothing and the next such request probes again.
//!
//! When it is re-learned: what was learned holds while the resource's
//! reflector keeps the watch it had then, and at most [`RELEARN`]; after
//! that the next request that depends on it passes through and probes
//! again. An apiserver restarted — upgraded, or its gate flipped — behind a
//! kache that keeps running ends that watch, so it is followed as soon as
//! the reflector watches again (and within [`RELEARN`] should a restart
//! behind a load balancer keep the watch); a resource nobody asks CBOR of
//! costs no probes at all.
//!
//! Invariant: [`CborSupport::known`] is `Some` only with an answer of the
//! apiserver younger than [`RELEARN`], given since the reflector's current
//! watch started.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http::StatusCode;
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt;

use super::client::Client;

/// How long a learned answer holds.
pub const RELEARN: Duration = Duration::from_secs(300);

const UNKNOWN: u8 = 0;
const SERVED: u8 = 1;
const REFUSED: u8 = 2;

/// What kache knows of one resource's CBOR upstream.
#[derive(Debug)]
pub struct CborSupport {
    state: AtomicU8,
    /// The reflector's watch count (`ReflectorStatus::watches`) when it was learned.
    watch: AtomicU64,
    /// When it was learned, in milliseconds since `epoch`.
    learned_ms: AtomicU64,
    epoch: Instant,
    probing: AtomicBool,
}

impl Default for CborSupport {
    fn default() -> Self {
        CborSupport {
            state: AtomicU8::new(UNKNOWN),
            watch: AtomicU64::new(0),
            learned_ms: AtomicU64::new(0),
            epoch: Instant::now(),
            probing: AtomicBool::new(false),
        }
    }
}

impl CborSupport {
    /// Whether the apiserver serves CBOR for the resource, if learned within
    /// [`RELEARN`] and during the reflector's watch number `watch`.
    pub fn known(&self, watch: u64) -> Option<bool> {
        let age = self.epoch.elapsed().saturating_sub(Duration::from_millis(self.learned_ms.load(Ordering::Acquire)));
        match self.state.load(Ordering::Acquire) {
            _ if age > RELEARN || self.watch.load(Ordering::Acquire) != watch => None,
            SERVED => Some(true),
            REFUSED => Some(false),
            _ => None,
        }
    }

    fn set(&self, served: bool, watch: u64) {
        self.watch.store(watch, Ordering::Release);
        self.learned_ms.store(self.epoch.elapsed().as_millis() as u64, Ordering::Release);
        self.state.store(if served { SERVED } else { REFUSED }, Ordering::Release);
    }

    /// Starts a probe of `collection` (the resource's list path) unless one
    /// is under way; its answer counts for the reflector's watch number `watch`.
    pub fn learn(self: &Arc<Self>, client: &Client, collection: &str, watch: u64) {
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (me, client, path) = (self.clone(), client.clone(), format!("{collection}?limit=1"));
        tokio::spawn(async move {
            let answer = tokio::time::timeout(Duration::from_secs(10), client.get_as(&path, apimachinery::cbor::MEDIA_TYPE)).await;
            if let Ok(Ok(resp)) = answer {
                let cbor = resp
                    .headers()
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|t| t.starts_with(apimachinery::cbor::MEDIA_TYPE));
                let served = match resp.status() {
                    StatusCode::OK if cbor => Some(true),
                    StatusCode::NOT_ACCEPTABLE => Some(false),
                    _ => None,
                };
                let _ = resp.into_body().collect().await;
                if let Some(served) = served {
                    tracing::info!(%path, served, "learned whether the apiserver serves CBOR");
                    me.set(served, watch);
                }
            }
            me.probing.store(false, Ordering::Release);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_holds_for_its_watch_and_relearn_only() {
        let s = CborSupport::default();
        assert_eq!(s.known(1), None);
        s.set(true, 1);
        assert_eq!(s.known(1), Some(true));
        assert_eq!(s.known(2), None, "learned during another watch");
        s.set(false, 2);
        assert_eq!(s.known(2), Some(false));
        let old = CborSupport { epoch: Instant::now() - RELEARN - Duration::from_secs(1), ..CborSupport::default() };
        old.state.store(SERVED, Ordering::Release);
        assert_eq!(old.known(0), None, "learned at the epoch, longer ago than RELEARN");
    }
}

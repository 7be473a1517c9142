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
//! When it is re-learned: what was learned holds for [`RELEARN`]; after
//! that the next request that depends on it passes through and probes
//! again — so an apiserver upgraded (or its gate flipped) behind a kache
//! that keeps running is followed within [`RELEARN`] plus one probe, and a
//! resource nobody asks CBOR of costs no probes at all.
//!
//! Invariant: [`CborSupport::known`] is `Some` only with an answer of the
//! apiserver younger than [`RELEARN`].

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
    /// When it was learned, in milliseconds since `epoch`.
    learned_ms: AtomicU64,
    epoch: Instant,
    probing: AtomicBool,
}

impl Default for CborSupport {
    fn default() -> Self {
        CborSupport { state: AtomicU8::new(UNKNOWN), learned_ms: AtomicU64::new(0), epoch: Instant::now(), probing: AtomicBool::new(false) }
    }
}

impl CborSupport {
    /// Whether the apiserver serves CBOR for the resource, if learned within [`RELEARN`].
    pub fn known(&self) -> Option<bool> {
        let age = self.epoch.elapsed().saturating_sub(Duration::from_millis(self.learned_ms.load(Ordering::Acquire)));
        match self.state.load(Ordering::Acquire) {
            _ if age > RELEARN => None,
            SERVED => Some(true),
            REFUSED => Some(false),
            _ => None,
        }
    }

    fn set(&self, served: bool) {
        self.learned_ms.store(self.epoch.elapsed().as_millis() as u64, Ordering::Release);
        self.state.store(if served { SERVED } else { REFUSED }, Ordering::Release);
    }

    /// Starts a probe of `collection` (the resource's list path) unless one
    /// is under way.
    pub fn learn(self: &Arc<Self>, client: &Client, collection: &str) {
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
                    me.set(served);
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
    fn an_answer_holds_for_relearn_only() {
        let s = CborSupport::default();
        assert_eq!(s.known(), None);
        s.set(true);
        assert_eq!(s.known(), Some(true));
        s.set(false);
        assert_eq!(s.known(), Some(false));
        let old = CborSupport { epoch: Instant::now() - RELEARN - Duration::from_secs(1), ..CborSupport::default() };
        old.state.store(SERVED, Ordering::Release);
        assert_eq!(old.known(), None, "learned at the epoch, longer ago than RELEARN");
    }
}

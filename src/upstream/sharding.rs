//! Whether upstream honours `shardSelector` (KEP-5866, the alpha feature
//! gate `ShardedListAndWatch` of kube-apiserver 1.36) for a resource.
//!
//! kache answers a sharded list or watch from memory only when the
//! apiserver would filter it; an apiserver with the gate off ignores the
//! parameter whole (the full collection, no `shardInfo`, no error for a
//! malformed selector), and kache must show a client exactly that, so every
//! sharded request passes through unless [`Sharding::Honoured`].
//!
//! How it is learnt: on demand, by the first sharded request for the
//! resource while nothing is known. That request passes through, and one
//! probe goes upstream: `limit=1` with a selector every honouring apiserver
//! refuses (a bound of one hex digit). The apiserver parses the selector
//! before it reads storage, so the probe costs a round trip: 500 `invalid
//! shard selector: …` means honoured, 200 (a page of one) means ignored;
//! anything else (a failure) teaches nothing and the next sharded request
//! asks again. The probe works for custom resources too, whose lists carry
//! no `shardInfo` even when filtered (a probe looking for `shardInfo` would
//! call them ignored). A kache whose clients never shard never probes.
//!
//! When it is re-learnt: the reflector forgets it ([`Sharding::Unknown`])
//! whenever it has been out of touch with upstream — when it lists (the
//! first time and every re-list) and when its watch breaks. An apiserver is
//! upgraded or reconfigured by restarting it, which breaks every watch kache
//! holds, so a kache that keeps running forgets before the new apiserver
//! answers anything, and its next sharded request learns the new answer. A
//! probe that was under way when the knowledge was forgotten is discarded.
//!
//! Not covered: a sharded watch already streaming from memory when the
//! knowledge is forgotten goes on (unless a re-list that changed the state
//! ends it, as it ends every stream); if the restarted apiserver ignores
//! shard selectors, that stream stays filtered until its client re-watches
//! (at most its lifetime, 30–60 minutes), when the new answer applies.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use apimachinery::resource::Resource;

use super::UpstreamError;
use super::client::Client;

/// A selector refused by any apiserver that reads shard selectors: a bound must have 16 hex digits.
const REFUSED: &str = "shardRange(object.metadata.uid,'0x0','0x1')";

/// What kache knows of upstream's handling of `shardSelector` for one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharding {
    /// Not learnt since kache last lost touch with upstream (or being learnt): pass through.
    Unknown,
    /// Upstream filters by it: kache may answer sharded requests from memory.
    Honoured,
    /// Upstream ignores it (gate off, or a server without it): pass through.
    Ignored,
}

const UNKNOWN: u64 = 0;
const HONOURED: u64 = 1;
const IGNORED: u64 = 2;
const PROBING: u64 = 3;

/// The latest [`Sharding`] of a resource: forgotten by its reflector, learnt by requests.
///
/// One word: what is known (two bits) and how many times it was forgotten
/// (the rest), so a probe's answer lands only if nothing was forgotten
/// since it began — not even when another probe began after the forgetting.
#[derive(Debug, Default, Clone)]
pub struct ShardingState(Arc<AtomicU64>);

impl ShardingState {
    /// What is known now; when nothing is, starts learning it (one probe at
    /// a time) and answers [`Sharding::Unknown`].
    pub fn learn(&self, client: &Client, resource: &Resource) -> Sharding {
        let known = self.known();
        if known == Sharding::Unknown
            && let Some(probing) = self.begin()
        {
            let (state, client, resource) = (self.clone(), client.clone(), resource.clone());
            tokio::spawn(async move {
                let learnt = probe(&client, &resource).await;
                state.finish(probing, learnt);
                tracing::debug!(resource = %resource.qualified(), ?learnt, "probed how upstream treats shard selectors");
            });
        }
        known
    }

    fn known(&self) -> Sharding {
        match self.0.load(Ordering::Acquire) & 3 {
            HONOURED => Sharding::Honoured,
            IGNORED => Sharding::Ignored,
            _ => Sharding::Unknown,
        }
    }

    /// Marks a probe under way, unless one is or something is known: the word to finish it with.
    fn begin(&self) -> Option<u64> {
        let now = self.0.load(Ordering::Acquire);
        let probing = now - (now & 3) + PROBING;
        (now & 3 == UNKNOWN && self.0.compare_exchange(now, probing, Ordering::AcqRel, Ordering::Acquire).is_ok()).then_some(probing)
    }

    /// The probe begun as `probing` learnt `learnt`: kept only if nothing was forgotten meanwhile.
    fn finish(&self, probing: u64, learnt: Sharding) {
        let state = match learnt {
            Sharding::Honoured => HONOURED,
            Sharding::Ignored => IGNORED,
            Sharding::Unknown => UNKNOWN,
        };
        // Forgotten meanwhile (upstream lost): this answer may be the old apiserver's.
        let _ = self.0.compare_exchange(probing, probing - PROBING + state, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Forgets what was learnt: upstream may have changed.
    pub fn forget(&self) {
        let _ = self.0.fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| Some((now | 3) + 1));
    }
}

/// Asks upstream how it treats a shard selector on `resource`.
async fn probe(client: &Client, resource: &Resource) -> Sharding {
    let query: String =
        form_urlencoded::Serializer::new(String::new()).append_pair("limit", "1").append_pair("shardSelector", REFUSED).finish();
    match client.get_bytes(&format!("{}?{query}", resource.collection_path())).await {
        Ok(_) => Sharding::Ignored,
        Err(UpstreamError::Status { code: 500, message }) if message.starts_with("invalid shard selector: ") => Sharding::Honoured,
        Err(_) => Sharding::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_begun_before_upstream_was_lost_teaches_nothing() {
        let state = ShardingState::default();
        let old = state.begin().expect("nothing known: a probe begins");
        assert_eq!(state.begin(), None, "one probe at a time");
        state.forget();
        let new = state.begin().expect("forgotten: a new probe begins");
        state.finish(old, Sharding::Honoured);
        assert_eq!(state.known(), Sharding::Unknown, "the old apiserver's answer is dropped");
        state.finish(new, Sharding::Ignored);
        assert_eq!(state.known(), Sharding::Ignored);
        assert_eq!(state.begin(), None, "known: no probe");
        state.forget();
        assert_eq!(state.known(), Sharding::Unknown);
        let failed = state.begin().unwrap();
        state.finish(failed, Sharding::Unknown);
        assert!(state.begin().is_some(), "a probe that failed lets the next request probe again");
    }
}

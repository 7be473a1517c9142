//! What kache learns about upstream by asking it, per resource — whether
//! the apiserver serves CBOR ([`Probe::Cbor`]; kube-apiserver 1.36 does only
//! behind its `CBORServingAndStorage` gate), whether it honours shard
//! selectors ([`Probe::Shards`]; the `ShardedListAndWatch` gate) — so that
//! kache answers such requests from memory only where the apiserver would
//! answer them the same way, and passes them through otherwise. Every such
//! fact is one slot of a resource's [`Capabilities`], learnt the same way.
//!
//! How a fact is learnt: on demand, by the first request whose answer
//! depends on it while nothing is known. That request passes through, and
//! one probe goes upstream (one at a time, given [`PROBE_TIMEOUT`]); its
//! yes or no is kept, and a probe that fails teaches nothing (the next such
//! request asks again). A resource nobody asks such a request of costs no
//! probe at all.
//!
//! When it is forgotten: its reflector bumps the resource's generation
//! whenever it loses touch with upstream — when it lists (the first time and
//! every re-list) and when its watch breaks. An apiserver is upgraded or
//! re-gated by restarting it, which breaks every watch kache holds, so a
//! running kache forgets before the new apiserver answers anything. And a
//! fact holds at most [`RELEARN`], for an apiserver restarted behind a load
//! balancer that kept kache's watch on another one.
//!
//! Invariant: [`Capabilities::learn`] answers `Some` only with what upstream
//! said during the current generation, less than [`RELEARN`] ago; a probe
//! begun in an earlier generation teaches nothing, even when another began
//! after the loss.
//!
//! Not covered: a stream already answered from memory when its fact is
//! forgotten (a sharded watch, a CBOR watch) goes on until its client
//! re-watches (at most its lifetime, 30–60 minutes), when the new answer applies.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use apimachinery::resource::Resource;
use http::StatusCode;
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt;
use parking_lot::Mutex;

use super::UpstreamError;
use super::client::Client;

/// How long a learnt fact holds at most.
pub(crate) const RELEARN: Duration = Duration::from_secs(300);

/// How long a probe may take before it counts as failed.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// A shard selector any apiserver that reads them refuses: a bound must have 16 hex digits.
const REFUSED_SHARD: &str = "shardRange(object.metadata.uid,'0x0','0x1')";

/// A fact about upstream, and how to ask for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Whether the apiserver serves CBOR: `GET <collection>?limit=1` with
    /// `Accept: application/cbor` — a CBOR answer is yes, 406 is no.
    Cbor,
    /// Whether it filters by `shardSelector`: `limit=1` with a selector every
    /// honouring apiserver refuses — its 500 `invalid shard selector: …` is
    /// yes, a page (the selector ignored) is no. The apiserver parses the
    /// selector before it reads storage, so the probe costs a round trip;
    /// it works for custom resources too, whose lists carry no `shardInfo`.
    Shards,
}

impl Probe {
    /// Every fact, in slot order.
    const ALL: [Probe; 2] = [Probe::Cbor, Probe::Shards];

    /// Asks upstream about `resource`; `None` when the answer tells nothing.
    async fn ask(self, client: &Client, resource: &Resource) -> Option<bool> {
        let collection = resource.collection_path();
        match self {
            Probe::Cbor => {
                let resp = client.get_as(&format!("{collection}?limit=1"), apimachinery::cbor::MEDIA_TYPE).await.ok()?;
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
                served
            }
            Probe::Shards => {
                let query = form_urlencoded::Serializer::new(String::new())
                    .append_pair("limit", "1")
                    .append_pair("shardSelector", REFUSED_SHARD)
                    .finish();
                match client.get_bytes(&format!("{collection}?{query}")).await {
                    Ok(_) => Some(false),
                    Err(UpstreamError::Status { code: 500, message }) if message.starts_with("invalid shard selector: ") => Some(true),
                    Err(_) => None,
                }
            }
        }
    }
}

/// One fact's slot.
#[derive(Debug, Default)]
struct Slot {
    /// The answer, the generation it was given in, and when.
    learnt: Option<(bool, u64, Instant)>,
    /// The generation the probe under way began in.
    probing: Option<u64>,
}

/// Everything kache learnt about upstream for one resource, and the
/// generation its reflector bumps when it loses touch.
#[derive(Debug, Default)]
pub struct Capabilities {
    generation: AtomicU64,
    slots: [Mutex<Slot>; Probe::ALL.len()],
}

impl Capabilities {
    /// What upstream said of `probe` for `resource`, if it is known now;
    /// when it is not, starts learning it (one probe at a time) and answers `None`.
    pub fn learn(self: &Arc<Self>, probe: Probe, client: &Client, resource: &Resource) -> Option<bool> {
        let generation = self.generation.load(Ordering::Acquire);
        let began = {
            let mut slot = self.slot(probe).lock();
            if let Some(known) = slot.known(generation, Instant::now()) {
                return Some(known);
            }
            slot.begin(generation)
        };
        if began {
            let (me, client, resource) = (self.clone(), client.clone(), resource.clone());
            tokio::spawn(async move {
                let answer = tokio::time::timeout(PROBE_TIMEOUT, probe.ask(&client, &resource)).await.ok().flatten();
                let kept = me.finish(probe, generation, answer);
                tracing::info!(resource = %resource.qualified(), ?probe, ?answer, kept, "asked upstream");
            });
        }
        None
    }

    /// kache lost touch with upstream (a list, a broken watch): everything
    /// learnt is forgotten, and probes under way will teach nothing.
    pub(crate) fn lost_touch(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    fn slot(&self, probe: Probe) -> &Mutex<Slot> {
        &self.slots[probe as usize]
    }

    /// The probe of `probe` begun in `generation` answered `answer`; whether it was kept.
    fn finish(&self, probe: Probe, generation: u64, answer: Option<bool>) -> bool {
        let mut slot = self.slot(probe).lock();
        if slot.probing == Some(generation) {
            slot.probing = None;
        }
        // Lost touch meanwhile: the answer may be the old apiserver's.
        let kept = answer.is_some() && self.generation.load(Ordering::Acquire) == generation;
        if let (true, Some(answer)) = (kept, answer) {
            slot.learnt = Some((answer, generation, Instant::now()));
        }
        kept
    }
}

impl Slot {
    /// The answer, if given in `generation` less than [`RELEARN`] before `now`.
    fn known(&self, generation: u64, now: Instant) -> Option<bool> {
        let (answer, given_in, at) = self.learnt?;
        (given_in == generation && now.saturating_duration_since(at) <= RELEARN).then_some(answer)
    }

    /// Marks a probe under way in `generation`, unless one already is; whether it began.
    fn begin(&mut self, generation: u64) -> bool {
        let began = self.probing != Some(generation);
        if began {
            self.probing = Some(generation);
        }
        began
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(c: &Capabilities, probe: Probe) -> Option<bool> {
        c.slot(probe).lock().known(c.generation.load(Ordering::Acquire), Instant::now())
    }

    fn begin(c: &Capabilities, probe: Probe) -> Option<u64> {
        let generation = c.generation.load(Ordering::Acquire);
        c.slot(probe).lock().begin(generation).then_some(generation)
    }

    #[test]
    fn a_probe_begun_before_upstream_was_lost_teaches_nothing() {
        let c = Capabilities::default();
        let old = begin(&c, Probe::Shards).expect("nothing known: a probe begins");
        assert_eq!(begin(&c, Probe::Shards), None, "one probe at a time");
        assert!(begin(&c, Probe::Cbor).is_some(), "each fact has its own probe");
        c.lost_touch();
        let new = begin(&c, Probe::Shards).expect("lost touch: a new probe begins");
        assert!(!c.finish(Probe::Shards, old, Some(true)), "the old apiserver's answer is dropped");
        assert_eq!(known(&c, Probe::Shards), None);
        assert!(c.finish(Probe::Shards, new, Some(false)));
        assert_eq!(known(&c, Probe::Shards), Some(false));
        assert_eq!(known(&c, Probe::Cbor), None, "facts are learnt apart");
        c.lost_touch();
        assert_eq!(known(&c, Probe::Shards), None, "forgotten with the generation");
        let failed = begin(&c, Probe::Shards).expect("a probe");
        assert!(!c.finish(Probe::Shards, failed, None));
        assert!(begin(&c, Probe::Shards).is_some(), "a probe that failed lets the next request probe again");
    }

    #[test]
    fn an_answer_holds_for_its_generation_and_relearn_only() {
        let at = Instant::now();
        let slot = Slot { learnt: Some((true, 1, at)), probing: None };
        assert_eq!(slot.known(1, at), Some(true));
        assert_eq!(slot.known(1, at + RELEARN), Some(true));
        assert_eq!(slot.known(1, at + RELEARN + Duration::from_millis(1)), None, "older than RELEARN");
        assert_eq!(slot.known(2, at), None, "learnt before upstream was lost");
    }
}

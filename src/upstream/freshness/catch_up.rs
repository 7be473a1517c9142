//! Catch-up watches: how a quiet resource's store is proven fresh (step 3
//! of the argument in [`super`]).
//!
//! A catch-up is a watch from the store's confirmed revision with
//! [`CATCH_UP`]'s timeout, ended at its first bookmark. The apiserver
//! schedules that bookmark 2 s before the timeout — 1 s in — in buckets of
//! one second, and sends every due bookmark on the next tick of the
//! resource's cacher (every 1–1.25 s, one timer shared by all its watches:
//! `cacher.go` `dispatchEvents`, `watcherBookmarkTimeBuckets`). So one
//! catch-up proves 0.7–2.25 s after it opens. Catch-ups run two ways:
//!
//! - *On demand* ([`Freshness::catch_up`]): a read waiting for its proof
//!   starts one, unless one is under way, which it joins.
//! - *Kept warm* ([`Freshness::keep_warm`]): while collection reads keep
//!   coming (each within [`KEEP_WARM`] of the one before), a keeper opens one every
//!   [`STAGGER`], so every one-second bucket holds a catch-up and every
//!   tick of the cacher sends one of them its bookmark. A read whose probe
//!   found the store behind then waits for the next tick, not for a whole
//!   catch-up: 0.56 s on average and 1.13 s at most on kube-apiserver
//!   1.36.2 (2 watches a second), against 0.7–2.25 s (one at a time, and at
//!   one a second a tick was now and then missed: 1.73 s). Each costs the
//!   apiserver one watch of what changed since the store's revision; at
//!   most [`MAX_CATCH_UPS`] are open at once.
//!
//! Invariant: a proof is only what its own stream showed — every event of
//! the resource in `(through, to]` came on it, in order — so catch-ups in
//! flight together are each sound, whichever proves first; the reflector
//! applies the highest proof it can ([`Proof`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use apimachinery::watch::{EventType, WatchDecoder, object_revision};
use http_body_util::BodyExt;
use parking_lot::Mutex;

use super::{Freshness, Proof, UPSTREAM_TIMEOUT};
use crate::upstream::plan::CATCH_UP;

/// While kept warm, a catch-up opens this often: twice in every one-second
/// bucket of the apiserver's bookmark timer.
pub(crate) const STAGGER: Duration = Duration::from_millis(500);

/// A resource is kept warm until no collection read came for this long.
pub(crate) const KEEP_WARM: Duration = Duration::from_secs(5);

/// Most catch-ups of one resource open at once (kept warm: about four).
const MAX_CATCH_UPS: usize = 8;

/// Pause after a catch-up that proved nothing, so a failing upstream is not hammered.
const RETRY_AFTER: Duration = Duration::from_millis(250);

/// Largest watch frame a catch-up accepts.
const MAX_FRAME: usize = 64 << 20;

/// Proofs closer together than this came on one tick of the apiserver's timer.
const SAME_TICK: Duration = Duration::from_millis(100);

/// Whether a resource is kept warm, and when its last collection read came.
#[derive(Debug, Default)]
pub(super) struct Warmth {
    keeping: AtomicBool,
    last_read: Mutex<Option<Instant>>,
}

impl Warmth {
    /// A keeper is opening catch-ups.
    pub(super) fn is_warm(&self) -> bool {
        self.keeping.load(Ordering::Acquire)
    }

    fn wanted(&self) -> bool {
        self.last_read.lock().is_some_and(|at| at.elapsed() < KEEP_WARM)
    }
}

impl Freshness {
    /// A collection read came: a catch-up starts for the reads at its
    /// revision likely to follow it (continue pages, an informer's watch);
    /// and once another came within [`KEEP_WARM`] before it, catch-ups are
    /// kept going until none has come for as long.
    pub(crate) fn keep_warm(self: &Arc<Self>) {
        let again = self.warmth.last_read.lock().replace(Instant::now()).is_some_and(|at| at.elapsed() < KEEP_WARM);
        if !again {
            self.catch_up();
        } else if !self.warmth.keeping.swap(true, Ordering::AcqRel) {
            tokio::spawn(self.clone().keeper());
        }
    }

    async fn keeper(self: Arc<Self>) {
        loop {
            while self.warmth.wanted() {
                self.start_catch_up(MAX_CATCH_UPS);
                tokio::time::sleep(STAGGER).await;
            }
            self.warmth.keeping.store(false, Ordering::Release);
            // A read that came as this keeper stopped saw it running: keep on for it.
            if !self.warmth.wanted() || self.warmth.keeping.swap(true, Ordering::AcqRel) {
                return;
            }
        }
    }

    /// Starts a catch-up watch unless one is under way.
    pub(super) fn catch_up(self: &Arc<Self>) {
        self.start_catch_up(1);
    }

    /// Starts a catch-up watch unless `limit` are under way.
    fn start_catch_up(self: &Arc<Self>, limit: usize) {
        let started = Instant::now();
        {
            let mut o = self.observed.lock();
            if o.catch_ups >= limit {
                return;
            }
            o.catch_ups += 1;
            o.catching_up_since.get_or_insert(started);
        }
        let me = self.clone();
        tokio::spawn(async move {
            me.stats.catch_ups.fetch_add(1, Ordering::Relaxed);
            match tokio::time::timeout(UPSTREAM_TIMEOUT, me.catch_up_once()).await {
                Ok(Some(proof)) => {
                    let took = started.elapsed();
                    me.stats.proof_delay.record(took.as_secs_f64());
                    me.stats.proofs.fetch_add(1, Ordering::Relaxed);
                    me.observed.lock().proved(took, Instant::now(), SAME_TICK);
                    // The reflector may be gone (kache is stopping): nothing to prove then.
                    let _ = me.proofs.send(proof);
                }
                _ => tokio::time::sleep(RETRY_AFTER).await,
            }
            {
                let mut o = me.observed.lock();
                o.catch_ups -= 1;
                if o.catch_ups == 0 {
                    o.catching_up_since = None;
                }
            }
            me.caught_up.send_modify(|n| *n += 1);
        });
    }

    /// One catch-up watch from the store's confirmed revision, until its first bookmark.
    async fn catch_up_once(&self) -> Option<Proof> {
        let view = self.store.view();
        let (epoch, from) = (view.epoch(), view.confirmed_rv());
        let path = format!(
            "{}?watch=1&allowWatchBookmarks=true&resourceVersion={from}&timeoutSeconds={}",
            self.resource.collection_path(),
            CATCH_UP.as_secs()
        );
        let resp = self.client.get(&path).await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let mut body = resp.into_body();
        let mut decoder = WatchDecoder::new(MAX_FRAME);
        let mut through = from;
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.ok()?.into_data() else { continue };
            decoder.push(&data);
            while let Some(f) = decoder.next_frame().ok()? {
                let rv = match f.typ {
                    EventType::Error => return None,
                    _ => object_revision(&f.object).ok()?,
                };
                if f.typ == EventType::Bookmark {
                    return (rv > through).then_some(Proof { epoch, through, to: rv });
                }
                through = through.max(rv);
            }
        }
        None
    }
}

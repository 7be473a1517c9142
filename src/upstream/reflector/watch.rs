//! The reflector's watch: one upstream watch from the confirmed revision,
//! its events and bookmarks applied to the sink in order, the heartbeat of
//! a silent watch, freshness proofs applied once the sink has caught up,
//! and how the watch ended ([`WatchEnd`]) — which decides the next phase.

use std::sync::atomic::Ordering;
use std::time::Duration;

use apimachinery::watch::{EventType, WatchDecoder, object_revision};
use bytes::Bytes;
use http_body_util::BodyExt;
use rand::Rng;
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{Held, Phase, Reflector, Relist, Sink};
use crate::upstream::UpstreamError;
use crate::upstream::freshness::Proof;

/// How long a watch resumed from a saved state may stay silent before a
/// probe checks upstream's revision instead (see the module docs).
pub(super) const PROOF_WAIT: Duration = Duration::from_millis(500);

/// How long a heartbeat may take before the watch counts as broken.
const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(30);

/// The timeout a watch that gets no bookmarks asks for. kube-apiserver
/// serves Events without a watch cache, so their watches carry no bookmark
/// and their revision moves only with their own events: each time such a
/// watch is resumed after a compaction passed it, the resource re-lists
/// (ending nothing when nothing changed). Watches that long re-list an
/// hour apart, not every five to ten minutes; a dead connection still ends
/// them at once (HTTP/2 pings, heartbeats).
pub(super) const BOOKMARKLESS_WATCH: Duration = Duration::from_secs(3600);

/// Most proofs kept waiting for the sink to catch up.
const MAX_PENDING_PROOFS: usize = 16;

/// How a watch ended.
#[derive(Debug)]
pub(super) enum WatchEnd {
    /// Upstream closed it after its timeout: resume at once.
    Timeout,
    /// It broke early (connection, EOF, an error event to retry).
    Broken(UpstreamError),
    /// The revision is gone from upstream's watch cache (410): re-list —
    /// at `at`, the oldest revision it still watches from, when its 410 says.
    Expired {
        /// The revision the 410 names as the oldest a watch may start from.
        at: Option<u64>,
        /// The 410's words.
        why: String,
    },
    /// The revision is unusable: re-list.
    Relist(Relist, String),
    /// Resumed from a saved state, it brought nothing in [`PROOF_WAIT`]: probe.
    Quiet,
}

impl<S: Sink> Reflector<S> {
    /// One upstream watch from the store's `held` revision, which it moves
    /// on; how it ended.
    pub(super) async fn watch(&mut self, held: &mut Held) -> WatchEnd {
        self.status.watches.fetch_add(1, Ordering::Relaxed);
        self.status.watching.store(true, Ordering::Relaxed);
        let started = Instant::now();
        let (end, bookmarked) = self.follow(held).await;
        self.status.watching.store(false, Ordering::Relaxed);
        // A watch that lasted two heartbeats without a bookmark shows the resource gets none: a
        // cached one gets a bookmark a minute once a heartbeat moved upstream's cache past its start.
        if started.elapsed() >= self.config.heartbeat * 2 && bookmarked == self.bookmarkless {
            self.bookmarkless = !bookmarked;
            let why = if self.bookmarkless {
                "upstream's watches of the resource carry no bookmarks (no watch cache): the next ask for an hour or two"
            } else {
                "upstream's watches of the resource carry bookmarks again"
            };
            tracing::info!(resource = %self.resource.qualified(), "{why}");
        }
        end
    }

    /// One upstream watch from the store's `held` revision, until it ends;
    /// whether a bookmark came on it.
    async fn follow(&mut self, held: &mut Held) -> (WatchEnd, bool) {
        let mut bookmarked = false;
        let end = self.frames(held, &mut bookmarked).await;
        (end, bookmarked)
    }

    /// The watch's frames applied to the sink until it ends; `bookmarked`
    /// set when a bookmark comes.
    async fn frames(&mut self, held: &mut Held, bookmarked: &mut bool) -> WatchEnd {
        let shortest = if self.bookmarkless { BOOKMARKLESS_WATCH } else { self.config.watch_timeout };
        let timeout = shortest.mul_f64(rand::rng().random_range(1.0..2.0));
        let path = format!(
            "{}?watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}",
            self.resource.collection_path(),
            held.rv,
            timeout.as_secs().max(1)
        );
        let started = Instant::now();
        let resp = match self.client.get(&path).await {
            Ok(r) => r,
            Err(e) => return WatchEnd::Broken(e),
        };
        let status = resp.status();
        let mut body = resp.into_body();
        if !status.is_success() {
            let bytes = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
            return classify(UpstreamError::status(status, &bytes));
        }
        self.status.touch();
        let mut decoder = WatchDecoder::new(self.config.max_frame);
        // Without a byte for this long past its deadline, the watch is dead.
        let idle = timeout + Duration::from_secs(30);
        let proof_by = started + PROOF_WAIT;
        let mut heard = Instant::now();
        // When the confirmed revision last moved (or a heartbeat asked upstream to move it).
        let mut progressed = Instant::now();
        loop {
            let next = tokio::select! {
                frame = tokio::time::timeout(idle, body.frame()) => frame,
                _ = tokio::time::sleep_until(proof_by), if !held.shown => return WatchEnd::Quiet,
                _ = tokio::time::sleep_until(heard.min(progressed) + self.config.heartbeat), if held.shown => {
                    match tokio::time::timeout(HEARTBEAT_TIMEOUT, self.upstream_revision(held.rv)).await {
                        Ok(Ok(rv)) if rv < held.rv => return WatchEnd::Relist(Relist::WentBack, format!("upstream's revision {rv} is below {}", held.rv)),
                        Ok(Ok(_)) => (heard, progressed) = (Instant::now(), Instant::now()),
                        Ok(Err(e)) => return WatchEnd::Broken(e),
                        Err(_) => return WatchEnd::Broken(UpstreamError::Transport("the heartbeat got no answer".into())),
                    }
                    continue;
                }
                () = self.status.relist.notified() => {
                    return WatchEnd::Relist(Relist::Inconsistent, "the consistency check found the store unlike upstream".into());
                }
                Some(proof) = next_proof(&mut self.proofs.rx) => {
                    self.proofs.pending.push(proof);
                    let before = held.rv;
                    self.apply_proofs(held);
                    if held.rv > before {
                        progressed = Instant::now();
                    }
                    continue;
                }
            };
            let frame = match next {
                Err(_) => return WatchEnd::Broken(UpstreamError::Transport("the watch went silent".into())),
                Ok(None) if decoder.has_partial() => return WatchEnd::Broken(UpstreamError::Transport("the watch ended mid-frame".into())),
                Ok(None) if started.elapsed() + Duration::from_secs(1) >= timeout => return WatchEnd::Timeout,
                Ok(None) => return WatchEnd::Broken(UpstreamError::Transport("the watch ended early".into())),
                Ok(Some(Err(e))) => return WatchEnd::Broken(UpstreamError::Transport(Box::new(e))),
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else { continue };
            self.status.touch();
            heard = Instant::now();
            decoder.push(&data);
            let before = held.rv;
            loop {
                match decoder.next_frame() {
                    Ok(Some(f)) => {
                        *bookmarked |= f.typ == EventType::Bookmark;
                        if let Some(end) = self.handle(held, f.typ, f.object) {
                            self.sink.flush();
                            return end;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => return WatchEnd::Relist(Relist::Protocol, e.to_string()),
                }
            }
            self.sink.flush();
            self.apply_proofs(held);
            if held.rv > before {
                progressed = Instant::now();
            }
        }
    }

    /// Confirms the newest proven revision the sink has caught up for; drops
    /// proofs of another epoch or already overtaken.
    fn apply_proofs(&mut self, held: &mut Held) {
        let epoch = self.sink.epoch();
        let rv = held.rv;
        let pending = &mut self.proofs.pending;
        pending.retain(|p| p.epoch == epoch && p.to > rv);
        if let Some(to) = pending.iter().filter(|p| p.through <= rv).map(|p| p.to).max() {
            pending.retain(|p| p.to > to);
            self.sink.bookmark(to);
            self.sink.flush();
            self.confirm(to);
            held.rv = to;
        }
        let pending = &mut self.proofs.pending;
        if pending.len() > MAX_PENDING_PROOFS {
            pending.drain(..pending.len() - MAX_PENDING_PROOFS);
        }
    }

    /// Applies one frame to the store at `held`; `Some` ends the watch.
    fn handle(&mut self, held: &mut Held, typ: EventType, object: Bytes) -> Option<WatchEnd> {
        match typ {
            EventType::Error => Some(classify(status_error(&object))),
            EventType::Bookmark => match object_revision(&object) {
                Ok(rv) if rv >= held.rv => {
                    self.sink.bookmark(rv);
                    self.moved(held, rv);
                    None
                }
                // Older than a proven revision: nothing new.
                Ok(_) => None,
                Err(e) => Some(WatchEnd::Relist(Relist::Protocol, e.to_string())),
            },
            // The store refuses what does not follow; one revision may carry several events (a multi-key transaction).
            _ => match self.sink.apply(typ, object) {
                Ok(rv) if rv >= held.rv => {
                    self.status.events.fetch_add(1, Ordering::Relaxed);
                    self.moved(held, rv);
                    None
                }
                Ok(rv) => Some(WatchEnd::Relist(Relist::Protocol, format!("an event at {rv} after {}", held.rv))),
                Err(e) => Some(WatchEnd::Relist(Relist::Protocol, e.to_string())),
            },
        }
    }

    /// Upstream sent `rv`, at or above the store's `held` revision: the sink
    /// holds it, and a restored state is shown ([`Phase::ready`]).
    fn moved(&self, held: &mut Held, rv: u64) {
        self.confirm(rv);
        held.rv = rv;
        if !held.shown {
            held.shown = true;
            self.enter(&Phase::Watch(*held));
            tracing::info!(resource = %self.resource.qualified(), rv, "the resumed watch reached the saved state; ready");
        }
    }
}

/// The next proof, when there is a proof channel (never otherwise).
async fn next_proof(proofs: &mut Option<mpsc::UnboundedReceiver<Proof>>) -> Option<Proof> {
    match proofs {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The revision a 410 from the apiserver's watch cache names as the oldest a
/// watch may start from: `too old resource version: X (Y)` (`watch_cache.go`).
fn oldest_watchable(message: &str) -> Option<u64> {
    let (_, rest) = message.split_once("too old resource version: ")?;
    let (_, y) = rest.split_once(" (")?;
    y.strip_suffix(')')?.parse().ok()
}

/// 410 Gone and "too large resource version" need a re-list; anything else a retry.
fn classify(e: UpstreamError) -> WatchEnd {
    match &e {
        UpstreamError::Status { code: 410, message } => WatchEnd::Expired { at: oldest_watchable(message), why: e.to_string() },
        UpstreamError::Status { code: 504, message } if message.contains("Too large resource version") => {
            WatchEnd::Relist(Relist::TooLarge, e.to_string())
        }
        _ => WatchEnd::Broken(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_410_names_the_oldest_revision_a_watch_may_start_from() {
        assert_eq!(oldest_watchable("too old resource version: 120 (4521)"), Some(4521));
        assert_eq!(oldest_watchable("The resourceVersion for the provided watch is too old."), None);
        assert_eq!(oldest_watchable("too old resource version: 120"), None);
    }
}

#[derive(Deserialize)]
struct StatusBody {
    #[serde(default)]
    code: u16,
    #[serde(default)]
    message: String,
}

fn status_error(object: &[u8]) -> UpstreamError {
    match serde_json::from_slice::<StatusBody>(object) {
        Ok(s) => UpstreamError::Status { code: s.code, message: s.message },
        Err(e) => UpstreamError::Decode(format!("an ERROR event without a Status: {e}").into()),
    }
}

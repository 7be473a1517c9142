//! Fault switches and housekeeping: compaction (on demand and periodic, like
//! the apiserver's etcd compactor), dropping watches, restarts that keep or
//! reset revisions, and the request counters tests read.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::db::Db;
use crate::state::State;

/// Compacts history up to the current revision; returns it.
pub fn compact_now(state: &State) -> u64 {
    let mut db = state.db.write();
    let rev = db.rev();
    db.compact(rev);
    rev
}

/// Simulates an apiserver restart: every watch ends; while the watch
/// cache re-initializes (`reinit`), new watches get 429; then its watch
/// caches start at the current revision, so a watch resumed from before it
/// gets 410 (kube-apiserver 1.36 restarted: its cache reaches back no
/// further than its initial list). With `reset`, etcd comes back
/// renumbered (as after a restore from a snapshot): the same objects, all
/// at revision 2, and no history before it. With `cache_kept`, the watch
/// caches reach back as far as before (another apiserver of a highly
/// available pair answers). Returns the revision.
pub fn restart(state: &State, reset: bool, reinit: Duration, cache_kept: bool) -> u64 {
    state.reinitialize(reinit);
    state.drop_watches();
    let rev = {
        let mut db = state.db.write();
        if reset {
            let mut fresh = Db::new(state.registry().clone(), 1, state.config.watch_buffer);
            fresh.restore(db.live_objects());
            // Dropping the old store closes its broadcast: watches still on it end.
            *db = fresh;
        }
        if !cache_kept {
            db.restart_watch_caches();
        }
        db.rev()
    };
    state.publish_revision();
    rev
}

/// Compacts every `interval` to the revision seen one interval earlier, as
/// kube-apiserver's compactor does (default 5 minutes).
pub async fn compact_periodically(state: Arc<State>, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    ticker.tick().await;
    let mut previous = state.db.read().rev();
    loop {
        ticker.tick().await;
        let mut db = state.db.write();
        db.compact(previous);
        previous = db.rev();
    }
}

/// Revision, compaction revision, what the store holds and request counts, as `/_sim/stats` shows them.
pub fn stats(state: &State) -> Value {
    let (rev, oldest, held) = {
        let db = state.db.read();
        (db.rev(), db.oldest(), db.held())
    };
    let requests: Vec<Value> =
        state.counts().into_iter().map(|((resource, verb), count)| json!({"resource": resource, "verb": verb, "count": count})).collect();
    let held = json!({"versions": held.versions, "jsonBytes": held.json_bytes, "historyEvents": held.events});
    json!({"revision": rev, "oldest": oldest, "held": held, "requests": requests})
}

//! Watches: initial events, replay from a revision, live events with selector
//! transitions, bookmarks, timeouts, and the fault switch that drops them.
//! Each frame is one body chunk, as the apiserver flushes each event; initial
//! events go out no faster than a list body when lists are paced.
//!
//! A watch subscribes to the store's broadcast while holding the read lock it
//! reads its starting state (or replay) under, so its stream is gap-free and
//! duplicate-free. A watcher that falls behind the broadcast buffer is closed,
//! as the apiserver closes watchers that cannot keep up.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::params::{ListOptions, parse_resource_version};
use apimachinery::partial;
use apimachinery::shard::ShardSelector;
use apimachinery::status::ApiError;
use apimachinery::watch::{self as frames, EventType};
use bytes::Bytes;
use rand::Rng;
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use crate::db::Event;
use crate::list::Filter;
use crate::object::Obj;
use crate::resources::{ResourceId, ResourceType};
use crate::state::State;

/// How long a watch with `sendInitialEvents` waits for its revision (as a list does).
const INITIAL_RV_WAIT: Duration = Duration::from_secs(3);

/// The apiserver sends the last bookmark this long before `timeoutSeconds` ends a watch.
const BOOKMARK_BEFORE_TIMEOUT: Duration = Duration::from_secs(2);

/// The apiserver dispatches due bookmarks on a tick of 1–1.25 s: a bookmark
/// due at T goes out up to this long after T.
const BOOKMARK_TICK: Duration = Duration::from_millis(1250);

/// Frames buffered per watcher before the watch task waits on the client.
const FRAME_BUFFER: usize = 256;

/// A watch's frame renderer: the resource and the request's filters.
#[derive(Debug)]
struct Renderer<'a> {
    rt: &'a ResourceType,
    filter: Filter<'a>,
    namespace: Option<&'a str>,
    res: ResourceId,
    /// Metadata-only (`as=PartialObjectMetadata`).
    partial: bool,
    /// The stream's encoding.
    encoding: &'a Frames,
}

impl<'a> Renderer<'a> {
    fn new(rt: &'a ResourceType, filter: Filter<'a>, namespace: Option<&'a str>, res: ResourceId, wire: &'a Wire) -> Self {
        Renderer { rt, filter, namespace, res, partial: wire.partial, encoding: &wire.encoding }
    }

    fn frame(&self, typ: EventType, obj: &Obj) -> Bytes {
        match self.encoding {
            Frames::Protobuf(m) => return crate::proto::frame(self.rt, m, typ, &obj.item, self.partial),
            Frames::Cbor => return crate::cbor::frame(self.rt, typ, obj, self.partial),
            Frames::Json => {}
        }
        if self.partial {
            let parts = partial::object([obj.served_metadata(self.rt)]);
            return frames::json_frame(typ, &parts.iter().map(|b| &b[..]).collect::<Vec<_>>());
        }
        frames::json_frame(typ, &[&obj.with_type(self.rt)])
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        match self.encoding {
            Frames::Protobuf(m) => {
                let object = frames::bookmark_object(self.rt, rv, initial_end);
                return crate::proto::frame(self.rt, m, EventType::Bookmark, &object, self.partial);
            }
            Frames::Cbor if self.partial => {
                let object = partial::object([Bytes::from(frames::bookmark_metadata(rv, initial_end))]).concat();
                return crate::cbor::bookmark(self.rt, &object, true);
            }
            Frames::Cbor => return crate::cbor::bookmark(self.rt, &frames::bookmark_object(self.rt, rv, initial_end), false),
            Frames::Json => {}
        }
        if self.partial {
            return partial::json_bookmark(rv, initial_end);
        }
        frames::json_bookmark(self.rt, rv, initial_end)
    }

    fn in_scope(&self, o: &Obj) -> bool {
        self.namespace.is_none_or(|ns| !self.rt.namespaced || o.namespace == ns)
    }

    /// The frame a client of this watch sees for `e`, with selector
    /// transitions rendered the apiserver's way.
    fn event(&self, e: &Event) -> Option<Bytes> {
        if e.res != self.res || !self.in_scope(&e.obj) {
            return None;
        }
        let cur = e.typ != EventType::Deleted && self.filter.matches(&e.obj);
        let prev = e.prev.as_ref().is_some_and(|p| self.filter.matches(p));
        match (cur, prev) {
            (true, true) => Some(self.frame(EventType::Modified, &e.obj)),
            (true, false) => Some(self.frame(EventType::Added, &e.obj)),
            (false, true) => {
                let gone = if e.typ == EventType::Deleted { e.obj.clone() } else { Arc::new(e.prev.as_ref()?.at_revision(self.rt, e.rv)) };
                Some(self.frame(EventType::Deleted, &gone))
            }
            (false, false) => None,
        }
    }
}

/// What a watch's frames hold: the objects or their metadata only, in JSON
/// protobuf or CBOR.
#[derive(Debug, Clone)]
pub struct Wire {
    pub partial: bool,
    pub encoding: Frames,
}

/// A watch stream's encoding.
#[derive(Debug, Clone)]
pub enum Frames {
    /// JSON lines.
    Json,
    /// Protobuf frames of the kind's message (its schema name).
    Protobuf(String),
    /// A CBOR sequence.
    Cbor,
}

impl Frames {
    /// The ERROR event carrying `err`.
    fn error(&self, err: &ApiError) -> Bytes {
        match self {
            Frames::Json => frames::json_error(err),
            Frames::Protobuf(_) => crate::proto::error_frame(err),
            Frames::Cbor => crate::cbor::error_frame(err),
        }
    }
}

/// Where a watch starts, decided under the read lock.
struct Start {
    frames: Vec<Bytes>,
    rx: broadcast::Receiver<Arc<Event>>,
    /// Events at or before this revision are not sent.
    rev: u64,
    /// The revision when `rx` subscribed: every later event arrives on it.
    seen: u64,
}

/// Validates a watch and returns the channel its frames arrive on. Errors
/// before the stream starts are returned; a too-old revision becomes the
/// stream's one ERROR event, as the apiserver does.
pub async fn watch(
    state: Arc<State>,
    res: ResourceId,
    namespace: Option<String>,
    opts: ListOptions,
    wire: Wire,
) -> Result<mpsc::Receiver<Bytes>, ApiError> {
    let registry = state.registry().clone();
    let rt = registry.get(res);
    crate::list::field_labels(rt, &opts)?;
    let shard = crate::list::shard(&opts, state.config.sharded_list_and_watch)?;
    let requested = parse_resource_version(&opts.resource_version)?;
    let initial = opts.sends_initial_events();
    // A watch asking for initial events without a revision learns the latest
    // one from etcd, a quorum read (the cacher's `getWatchCacheResourceVersion`);
    // one that asks for neither starts from the watch cache as it is.
    if opts.resource_version.is_empty() && opts.send_initial_events.is_some() {
        state.consistent_read().await;
    }
    let (tx, frames_rx) = mpsc::channel(FRAME_BUFFER);
    // Once a watch is accepted, the apiserver reports failures as the
    // stream's one ERROR event (`newErrWatcher`), after its 200.
    let fail = |err: ApiError, frames_rx| {
        // The channel is new and empty: this send cannot fail.
        let _ = tx.try_send(wire.encoding.error(&err));
        Ok(frames_rx)
    };
    if initial
        && requested > 0
        && let Err(e) = state.wait_for_revision(requested, INITIAL_RV_WAIT).await
    {
        return fail(e, frames_rx);
    }
    let start = {
        let r = Renderer::new(rt, Filter::new(rt, &opts, shard.clone()), namespace.as_deref(), res, &wire);
        let db = state.db.read();
        let rx = db.subscribe();
        if initial {
            let prefix = rt.prefix(namespace.as_deref());
            // Revision 0 takes the cache as it is; otherwise (unset: a
            // consistent start; or a revision waited for) the cache catches up first.
            if requested != 0 || opts.resource_version.is_empty() {
                db.progress(res);
            }
            let rev = if opts.resource_version == "0" { db.cache_rv(res) } else { db.rev() };
            // The resource has no event after its cache revision: its state there is its state now.
            let mut frames: Vec<Bytes> = db
                .range(res, &prefix, &prefix, db.rev())
                .filter(|(_, o)| r.filter.matches(o))
                .map(|(_, o)| r.frame(EventType::Added, o))
                .collect();
            if opts.allow_watch_bookmarks {
                frames.push(r.bookmark(rev, true));
            }
            Start { frames, rx, rev, seen: db.rev() }
        } else {
            // Unset or `0` without initial events: changes from now on.
            let from = if requested == 0 { db.rev() } else { requested };
            // A start above the cache's revision: the apiserver's cache asks
            // etcd for progress and catches up before the watch begins.
            if from > db.cache_rv(res) {
                db.progress(res);
            }
            match db.events_after(res, from).filter(|_| from >= db.watch_oldest(res)) {
                Some(events) => {
                    Start { frames: events.iter().filter_map(|e| r.event(e)).collect(), rx, rev: from.max(db.oldest()), seen: db.rev() }
                }
                None => {
                    let err = ApiError::watch_too_old(from, db.watch_oldest(res));
                    drop(db);
                    return fail(err, frames_rx);
                }
            }
        }
    };
    tokio::spawn(stream(state, res, namespace, (opts, shard), wire, start, tx));
    Ok(frames_rx)
}

async fn stream(
    state: Arc<State>,
    res: ResourceId,
    namespace: Option<String>,
    (opts, shard): (ListOptions, Option<ShardSelector>),
    wire: Wire,
    start: Start,
    tx: mpsc::Sender<Bytes>,
) {
    let registry = state.registry().clone();
    let rt = registry.get(res);
    let r = Renderer::new(rt, Filter::new(rt, &opts, shard), namespace.as_deref(), res, &wire);
    let mut drop_rx = state.drop_signal();
    let Start { frames, mut rx, rev, seen } = start;
    // Initial events are a list's worth of objects: paced as a list body is.
    let mut pace = if opts.sends_initial_events() { state.slowness().list_pace() } else { None };
    for f in frames {
        if let Some(due) = pace.as_mut().map(|p| p.due(f.len())) {
            tokio::time::sleep_until(due).await;
        }
        if tx.send(f).await.is_err() {
            return;
        }
    }
    let lifetime = match opts.timeout_seconds {
        Some(t) => Duration::from_secs(t),
        // The apiserver picks a random lifetime between minRequestTimeout (30 min) and twice that.
        None => Duration::from_secs(rand::rng().random_range(1800..3600)),
    };
    let deadline = Instant::now() + lifetime;
    let tick_delay = BOOKMARK_TICK.mul_f64(rand::rng().random_range(0.0..1.0));
    let last_bookmark_at = deadline.checked_sub(BOOKMARK_BEFORE_TIMEOUT).filter(|t| *t > Instant::now()).map(|t| t + tick_delay);
    let mut sent_last_bookmark = false;
    let mut ticker = tokio::time::interval_at(Instant::now() + state.config.bookmark_interval, state.config.bookmark_interval);
    // Every event up to here has been passed on (or skipped as not this watch's).
    let mut delivered = seen;
    // A bookmark carries the resource's watch-cache revision, but never one
    // whose events this stream has not passed yet. The apiserver's cache
    // watcher sends it whenever it is above the watch's start, even when it
    // is the same as the last one (a quiet resource's watch gets the same
    // bookmark every minute: kube-apiserver 1.36, `cacheWatcher.process`).
    let bookmark_rv = |delivered: u64| state.db.read().cache_rv(res).min(delivered);
    // A resource served from etcd (events) gets none: its watch makes no progress notifications.
    let bookmarks = opts.allow_watch_bookmarks && rt.watch_cached;
    loop {
        tokio::select! {
            ev = rx.recv() => match ev {
                // A watch from a future revision skips what comes before it.
                Ok(e) if e.rv <= rev => {}
                Ok(e) => {
                    delivered = e.rv;
                    if let Some(frame) = r.event(&e) {
                        state.wait_unstalled().await;
                        if tx.send(frame).await.is_err() {
                            return;
                        }
                    }
                }
                // Lagged: this watcher fell too far behind; closed: the store was replaced.
                Err(_) => return,
            },
            _ = ticker.tick(), if bookmarks => {
                let at = bookmark_rv(delivered);
                if at > rev && tx.send(r.bookmark(at, false)).await.is_err() {
                    return;
                }
            }
            _ = tokio::time::sleep_until(last_bookmark_at.unwrap_or(deadline)), if bookmarks && !sent_last_bookmark && last_bookmark_at.is_some() => {
                sent_last_bookmark = true;
                let at = bookmark_rv(delivered);
                if at > rev && tx.send(r.bookmark(at, false)).await.is_err() {
                    return;
                }
            }
            _ = tokio::time::sleep_until(deadline) => return,
            _ = drop_rx.changed() => return,
            _ = tx.closed() => return,
        }
    }
}

//! One watcher's stream from memory: the initial state as ADDED in key
//! order, the `k8s.io/initial-events-end` bookmark, the logged events after
//! the start replayed from the store, then the live frames the dispatcher
//! queues, with bookmarks on the apiserver's schedule (see the module doc
//! of [`super`]). Every event appears once, in revision order (invariant 5).

use std::ops::Bound;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::negotiate::Negotiated;
use apimachinery::status::ApiError;
use apimachinery::watch::EventType;
use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame as BodyFrame;
use imbl::Vector;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::time::{Instant, Sleep};

use super::dispatcher::{Frame, Subscription};
use super::table::TableFrames;
use crate::api::body::{ApiBody, BoxError};
use crate::api::encode::{bookmark_frame, error_frame, event_frame, transition_frame};
use crate::api::filter::Filter;
use crate::cache::CachedResource;
use crate::store::{Event, Snapshot};

/// The apiserver sends its last bookmark this long before a watch's deadline.
const BOOKMARK_BEFORE_DEADLINE: Duration = Duration::from_secs(2);

/// Frames gathered into one write up to about this size.
const CHUNK: usize = 64 * 1024;

/// Where a stream is.
pub(super) enum Phase {
    /// Writing the state at `start` as ADDED, after the key `after`.
    Initial { snapshot: Arc<Snapshot>, prefix: String, after: Option<Arc<str>> },
    /// The `k8s.io/initial-events-end` bookmark is next (if bookmarks are allowed).
    InitialEnd,
    /// The logged events after `start` up to the registration are next.
    Replay,
    /// Replaying `events[next..]`.
    Replaying { events: Vector<Arc<Event>>, next: usize },
    /// Live frames from the dispatcher.
    Live,
    /// Nothing more.
    Done,
}

/// The bookmark schedule of one watcher.
pub(super) struct Bookmarks {
    interval: Duration,
    deadline: Instant,
    timer: Option<Pin<Box<Sleep>>>,
    /// The timer fired; the bookmark waits for the queue to hold nothing older.
    due: bool,
}

impl Bookmarks {
    pub(super) fn new(interval: Duration, deadline: Instant) -> Bookmarks {
        let mut b = Bookmarks { interval, deadline, timer: None, due: false };
        b.schedule();
        b
    }

    /// Only the `k8s.io/initial-events-end` bookmark: what a watch of a
    /// resource the apiserver serves from etcd gets (etcd's watch makes no
    /// progress notifications for it).
    pub(super) fn initial_only(deadline: Instant) -> Bookmarks {
        Bookmarks { interval: Duration::MAX, deadline, timer: None, due: false }
    }

    /// The next bookmark: an interval from now, or 2 s before the deadline if sooner; none once that has passed.
    fn schedule(&mut self) {
        let now = Instant::now();
        let next = (now + self.interval).min(self.deadline.checked_sub(BOOKMARK_BEFORE_DEADLINE).unwrap_or(now));
        self.timer = (next > now).then(|| Box::pin(tokio::time::sleep_until(next)));
    }

    /// The bookmark due found nothing newer to tell: the next one at its
    /// time — but the last one, due before the deadline, looks again every
    /// [`BOOKMARK_RETRY`] until the deadline, so a client (a catch-up watch
    /// of a second-tier kache) learns of a revision reached just before.
    fn retry(&mut self) {
        self.schedule();
        let now = Instant::now();
        if self.timer.is_none() && now + BOOKMARK_RETRY < self.deadline {
            self.timer = Some(Box::pin(tokio::time::sleep_until(now + BOOKMARK_RETRY)));
        }
    }
}

/// How often the last bookmark before a watch's deadline looks for a newer revision.
const BOOKMARK_RETRY: Duration = Duration::from_millis(100);

/// One watcher's stream.
pub(super) struct Stream {
    pub(super) res: Arc<CachedResource>,
    pub(super) filter: Filter,
    /// The objects or their metadata only, in JSON, protobuf or CBOR.
    pub(super) frames: Negotiated,
    pub(super) epoch: u64,
    /// Events at or before this revision are never sent.
    pub(super) start: u64,
    /// The newest revision the client has (an event's or a bookmark's).
    pub(super) last: u64,
    pub(super) phase: Phase,
    pub(super) bookmarks: Option<Bookmarks>,
    pub(super) deadline: Pin<Box<Sleep>>,
    pub(super) stopping: tokio::sync::watch::Receiver<bool>,
    /// The client's permission and when it is next re-checked.
    pub(super) permission: Option<crate::access::Permission>,
    pub(super) recheck: Option<Instant>,
    pub(super) sub: Subscription,
    /// Set for a table watch.
    pub(super) table: Option<TableFrames>,
}

impl Stream {
    pub(super) fn into_body(self) -> ApiBody {
        let frames = futures_util::stream::unfold(self, |mut s| async move {
            let chunk = s.next_chunk().await?;
            let chunk = match &mut s.table {
                Some(t) => t.convert(&chunk)?,
                None => chunk,
            };
            Some((Ok::<_, BoxError>(BodyFrame::data(chunk)), s))
        });
        StreamBody::new(frames).boxed()
    }

    /// Whether the client has lost its permission (re-checked once its interval has passed).
    async fn access_lost(&mut self) -> bool {
        let (Some(permission), Some(at)) = (&self.permission, self.recheck) else { return false };
        if Instant::now() < at {
            return false;
        }
        if !permission.still_allowed().await {
            return true;
        }
        self.recheck = Some(Instant::now() + permission.interval());
        false
    }

    /// The next bytes for the client; `None` ends the stream.
    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            if self.access_lost().await {
                // As the apiserver ends a watch whose user lost access: the client re-watches and is refused.
                return None;
            }
            match &mut self.phase {
                Phase::Initial { snapshot, prefix, after } => {
                    let mut out = BytesMut::new();
                    let start = after.as_deref().map_or(Bound::Included(prefix.as_str()), Bound::Excluded);
                    let mut scope = self.filter.candidates(snapshot, prefix, start);
                    let mut last_key = None;
                    let mut exhausted = true;
                    let mut unencodable = false;
                    for o in scope.by_ref() {
                        last_key = Some(o.key().clone());
                        if self.filter.selects(o) {
                            let Some(frame) = event_frame(&self.res, EventType::Added, o, self.frames, None) else {
                                unencodable = true;
                                break;
                            };
                            out.extend_from_slice(&frame);
                            if out.len() >= CHUNK {
                                exhausted = false;
                                break;
                            }
                        }
                    }
                    drop(scope);
                    if unencodable {
                        // No protobuf for an object: end the stream; the client's next watch passes through.
                        self.phase = Phase::Done;
                        return Some(out.freeze());
                    }
                    if exhausted {
                        self.phase = Phase::InitialEnd;
                    } else {
                        *after = last_key;
                    }
                    if !out.is_empty() {
                        return Some(out.freeze());
                    }
                }
                Phase::InitialEnd => {
                    self.phase = Phase::Replay;
                    if self.bookmarks.is_some() {
                        return self.bookmark(self.start, true);
                    }
                }
                Phase::Replay => {
                    let view = self.res.store().view();
                    if view.epoch() != self.epoch {
                        // Re-listed since the start was read: end as the apiserver does.
                        self.phase = Phase::Done;
                        continue;
                    }
                    if self.start >= self.sub.registered_at {
                        self.phase = Phase::Live;
                        continue;
                    }
                    match view.position_after(self.start).ok().and_then(|from| Some((from, view.events_from(from)?))) {
                        Some((from, events)) => {
                            // Replayed: the events before the dispatcher's position at registration.
                            let until = usize::try_from(self.sub.registered_pos.saturating_sub(from)).unwrap_or(usize::MAX);
                            self.phase = Phase::Replaying { events: events.take(until.min(events.len())), next: 0 };
                        }
                        None => {
                            // The log moved past the start while the watch was set up.
                            self.phase = Phase::Done;
                            return Some(error_frame(&ApiError::watch_too_old(self.start, view.oldest_rv()), self.frames.encoding));
                        }
                    }
                }
                Phase::Replaying { events, next } => {
                    let mut out = BytesMut::new();
                    while let Some(e) = events.get(*next) {
                        *next += 1;
                        if let Some(t) = self.filter.transition(e) {
                            let Some(frame) = transition_frame(&self.res, e, t, self.frames) else {
                                self.phase = Phase::Done;
                                return Some(out.freeze());
                            };
                            out.extend_from_slice(&frame);
                            self.last = e.rv();
                        }
                        if out.len() >= CHUNK {
                            break;
                        }
                    }
                    if *next >= events.len() {
                        self.phase = Phase::Live;
                    }
                    if !out.is_empty() {
                        return Some(out.freeze());
                    }
                }
                Phase::Live => return self.live().await,
                Phase::Done => return None,
            }
        }
    }

    /// A BOOKMARK frame at `rv` in this stream's wire form.
    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Option<Bytes> {
        bookmark_frame(&self.res, rv, initial_events_end, self.frames)
    }

    /// The next live frames or bookmark.
    async fn live(&mut self) -> Option<Bytes> {
        loop {
            if self.access_lost().await {
                return None;
            }
            if self.bookmarks.as_ref().is_some_and(|b| b.due) {
                // Load the position first: frames up to it are queued by now.
                let dispatched = self.sub.dispatched();
                match self.sub.frames.try_recv() {
                    Ok(f) => match self.gather(f) {
                        Some(chunk) => return Some(chunk),
                        None => continue,
                    },
                    Err(TryRecvError::Disconnected) => return None,
                    Err(TryRecvError::Empty) => {
                        let newer = dispatched > self.last;
                        if let Some(b) = self.bookmarks.as_mut() {
                            b.due = false;
                            if newer { b.schedule() } else { b.retry() }
                        }
                        if newer {
                            self.last = dispatched;
                            return self.bookmark(dispatched, false);
                        }
                    }
                }
            }
            let bookmark = async {
                match self.bookmarks.as_mut().and_then(|b| b.timer.as_mut()) {
                    Some(t) => t.await,
                    None => std::future::pending().await,
                }
            };
            let recheck = self.recheck;
            let recheck = async move {
                match recheck {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let stopping = &mut self.stopping;
            let stop = async move {
                let _ = stopping.wait_for(|stop| *stop).await;
            };
            tokio::select! {
                () = recheck => continue,
                f = self.sub.frames.recv() => match f {
                    Some(f) => if let Some(chunk) = self.gather(f) {
                        return Some(chunk);
                    },
                    None => return None,
                },
                () = bookmark => {
                    if let Some(b) = self.bookmarks.as_mut() {
                        b.timer = None;
                        b.due = true;
                    }
                }
                () = &mut self.deadline => return None,
                () = stop => return None,
            }
        }
    }

    /// `first` and whatever else is queued, up to a chunk, skipping events
    /// at or before the start (a watch from a revision the dispatcher had
    /// not reached when it registered).
    fn gather(&mut self, first: Frame) -> Option<Bytes> {
        let mut frames = vec![first];
        let mut len = frames[0].bytes.len();
        while len < CHUNK {
            match self.sub.frames.try_recv() {
                Ok(f) => {
                    len += f.bytes.len();
                    frames.push(f);
                }
                Err(_) => break,
            }
        }
        self.sub.took(frames.len());
        frames.retain(|f| f.rv > self.start);
        self.last = self.last.max(frames.last()?.rv);
        if frames.len() == 1 {
            return frames.pop().map(|f| f.bytes);
        }
        let mut out = BytesMut::with_capacity(len);
        frames.iter().for_each(|f| out.extend_from_slice(&f.bytes));
        Some(out.freeze())
    }
}

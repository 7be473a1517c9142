//! The watch dispatcher of one cached resource: a single task that follows
//! the store's event log and offers every event to the watchers it concerns.
//!
//! Algorithm. The task owns the watcher table; nothing else touches it, so
//! it needs no lock. It wakes on every publish of the store, reads the
//! events after the last one it dispatched from the published view (a
//! lock-free load), and for each event visits only the watchers whose
//! bucket the event can concern — watchers are bucketed by the most
//! selective thing they name: an object name (`metadata.name=`), a node
//! (pods' `spec.nodeName=`, old and new node both visited, so a pod that
//! moves away reaches its old node's watchers as DELETED), a namespace (the
//! path or `metadata.namespace=`), or nothing (visited for every event).
//! An event costs O(watchers it can concern), not O(watchers).
//!
//! Each frame an event produces (ADDED, MODIFIED, DELETED, or DELETED of the
//! previous object at the event's revision for a watcher it stopped
//! matching) is encoded once and the same `Bytes` is queued to every
//! watcher that gets it. Queues are bounded and offered without blocking: a
//! watcher whose queue is full is closed (its stream ends after the frames
//! already queued, and the client resumes from its last revision, as it
//! does when the apiserver closes a slow watcher), so no watcher and never
//! the store's writer waits for another.
//!
//! Invariants:
//! - `dispatched` (published in [`Shared`]) is the revision up to which
//!   every event has been offered to every registered watcher; it is stored
//!   after the offers (release), so a watcher that loads it (acquire) and
//!   then finds its queue empty has received every frame up to it — the
//!   condition for a bookmark at that revision.
//! - The dispatcher follows the log by position, not revision: one
//!   revision's events (a multi-key transaction) may be published in parts.
//!   A watcher registered when the dispatcher had reached position `P`
//!   (revision `D`) is offered exactly the events from `P` on, in order; the
//!   events before `P` it needs are its own to replay from the log.
//! - A re-list (a new store epoch) ends every watcher, as the apiserver ends
//!   its watchers when its cache re-lists; a registration made against
//!   another epoch is refused so the caller retries on the new state.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use apimachinery::negotiate::{Encoding, Negotiated, Shape};
use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::api::encode::transition_frame;
use crate::api::filter::{Filter, Transition};
use crate::cache::CachedResource;
use crate::store::{Event, View};

/// A frame queued to a watcher: its event's revision and its bytes.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The revision of the event.
    pub rv: u64,
    /// `{"type":…,"object":…}\n`, shared by every watcher that gets it.
    pub bytes: Bytes,
}

/// Counters of one resource's watchers.
#[derive(Debug, Default)]
pub struct WatchStats {
    /// Watchers registered now.
    pub open: AtomicU64,
    /// Frames queued to watchers.
    pub delivered: AtomicU64,
    /// Watchers closed because their queue was full.
    pub closed_slow: AtomicU64,
    /// Frames watchers took from their queues.
    pub taken: AtomicU64,
    /// Frames left in the queues of watchers that went away.
    pub discarded: AtomicU64,
}

impl WatchStats {
    /// Frames queued to watchers and not yet taken: every delivered frame is
    /// taken or discarded in the end (the three counters are read one after
    /// another, so a figure taken under load is approximate).
    pub fn queued(&self) -> u64 {
        let delivered = self.delivered.load(Ordering::Relaxed);
        delivered.saturating_sub(self.taken.load(Ordering::Relaxed) + self.discarded.load(Ordering::Relaxed))
    }
}

/// What watchers read without asking the dispatcher.
#[derive(Debug, Default)]
pub struct Shared {
    dispatched: AtomicU64,
    /// Counters.
    pub stats: WatchStats,
}

/// The handle of a resource's dispatcher; dropping it stops the task.
#[derive(Debug)]
pub struct Dispatcher {
    control: mpsc::UnboundedSender<Control>,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

/// The registration was made against a store state that was since replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stale;

/// A registered watcher: its queue, and its place in the dispatcher.
#[derive(Debug)]
pub struct Subscription {
    id: u64,
    /// Frames of events after [`Subscription::registered_at`], in order; ends when the watcher is closed.
    pub frames: mpsc::Receiver<Frame>,
    /// `dispatched` when the watcher was registered.
    pub registered_at: u64,
    /// The log position the dispatcher had reached then: the first event offered to this watcher.
    pub registered_pos: u64,
    control: mpsc::UnboundedSender<Control>,
    shared: Arc<Shared>,
}

impl Subscription {
    /// The watcher took `n` frames from its queue.
    pub fn took(&self, n: usize) {
        self.shared.stats.taken.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The revision up to which every event has been offered to this
    /// watcher's queue (see the module invariants).
    pub fn dispatched(&self) -> u64 {
        self.shared.dispatched.load(Ordering::Acquire)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.shared.stats.discarded.fetch_add(self.frames.len() as u64, Ordering::Relaxed);
        // The dispatcher may be gone already; then there is nothing to forget.
        let _ = self.control.send(Control::Unregister(self.id));
    }
}

#[derive(Debug)]
enum Control {
    Register { filter: Filter, stream: Negotiated, epoch: u64, queue: usize, reply: oneshot::Sender<Result<Subscription, Stale>> },
    Unregister(u64),
}

impl Dispatcher {
    /// Starts the dispatcher of `res`.
    pub fn start(res: Arc<CachedResource>) -> Dispatcher {
        let (control, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::default());
        let task = tokio::spawn(run(res, rx, control.clone(), shared.clone()));
        Dispatcher { control, shared, task }
    }

    /// Registers a watcher with `filter` whose start was read from a view of
    /// store epoch `epoch`, with a queue of `queue` frames.
    pub async fn subscribe(&self, filter: Filter, stream: Negotiated, epoch: u64, queue: usize) -> Result<Subscription, Stale> {
        let (reply, answer) = oneshot::channel();
        self.control.send(Control::Register { filter, stream, epoch, queue, reply }).map_err(|_| Stale)?;
        answer.await.map_err(|_| Stale)?
    }

    /// The counters.
    pub fn stats(&self) -> &WatchStats {
        &self.shared.stats
    }
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where a watcher is kept: the most selective thing its request names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Bucket {
    All,
    Namespace(Box<str>),
    Name(Box<str>),
    Node(Box<str>),
}

/// Watchers by bucket; keyed lookups by `&str` allocate nothing.
#[derive(Debug, Default)]
struct Buckets {
    all: Watchers,
    namespace: HashMap<Box<str>, Watchers>,
    name: HashMap<Box<str>, Watchers>,
    node: HashMap<Box<str>, Watchers>,
}

impl Buckets {
    fn get_mut(&mut self, b: &Bucket) -> Option<&mut Watchers> {
        match b {
            Bucket::All => Some(&mut self.all),
            Bucket::Namespace(k) => self.namespace.get_mut(k),
            Bucket::Name(k) => self.name.get_mut(k),
            Bucket::Node(k) => self.node.get_mut(k),
        }
    }

    fn insert(&mut self, b: Bucket, id: u64, w: Watcher) {
        match b {
            Bucket::All => self.all.insert(id, w),
            Bucket::Namespace(k) => self.namespace.entry(k).or_default().insert(id, w),
            Bucket::Name(k) => self.name.entry(k).or_default().insert(id, w),
            Bucket::Node(k) => self.node.entry(k).or_default().insert(id, w),
        };
    }

    fn remove(&mut self, b: &Bucket, id: u64) {
        let Some(watchers) = self.get_mut(b) else { return };
        watchers.remove(&id);
        if watchers.is_empty() {
            match b {
                Bucket::All => {}
                Bucket::Namespace(k) => drop(self.namespace.remove(k)),
                Bucket::Name(k) => drop(self.name.remove(k)),
                Bucket::Node(k) => drop(self.node.remove(k)),
            }
        }
    }
}

#[derive(Debug)]
struct Watcher {
    filter: Filter,
    /// What its frames hold and their encoding.
    stream: Negotiated,
    tx: mpsc::Sender<Frame>,
}

type Watchers = HashMap<u64, Watcher>;

/// The dispatcher task's state.
struct State {
    res: Arc<CachedResource>,
    shared: Arc<Shared>,
    control: mpsc::UnboundedSender<Control>,
    epoch: u64,
    dispatched: u64,
    /// The log position after the last event dispatched.
    position: u64,
    next_id: u64,
    /// Where each watcher is.
    buckets_of: HashMap<u64, Bucket>,
    buckets: Buckets,
    /// Index of pods' `spec.nodeName` among the paths the store reads.
    node_field: Option<usize>,
}

async fn run(
    res: Arc<CachedResource>,
    mut rx: mpsc::UnboundedReceiver<Control>,
    control: mpsc::UnboundedSender<Control>,
    shared: Arc<Shared>,
) {
    let mut published = res.store().subscribe();
    let node_field = res.info().field_paths().iter().position(|p| *p == "spec.nodeName");
    let mut state = State {
        res,
        shared,
        control,
        epoch: u64::MAX,
        dispatched: 0,
        position: 0,
        next_id: 0,
        buckets_of: HashMap::new(),
        buckets: Buckets::default(),
        node_field,
    };
    state.catch_up();
    loop {
        tokio::select! {
            // Registrations see every event published before they were sent.
            biased;
            msg = rx.recv() => match msg {
                Some(Control::Register { filter, stream, epoch, queue, reply }) => {
                    state.catch_up();
                    let _ = reply.send(state.register(filter, stream, epoch, queue));
                }
                Some(Control::Unregister(id)) => state.remove(id),
                None => return,
            },
            changed = published.changed() => {
                if changed.is_err() {
                    return;
                }
                state.catch_up();
            }
        }
    }
}

impl State {
    /// Offers every published event after `dispatched`.
    fn catch_up(&mut self) {
        let view = self.res.store().view();
        if view.epoch() != self.epoch || view.events_from(self.position).is_none() {
            // A re-list (or, never expected, events trimmed before they were
            // dispatched): every stream ends; clients resume from their revision.
            self.close_all();
            self.epoch = view.epoch();
        } else {
            self.dispatch_after(&view);
        }
        self.dispatched = view.confirmed_rv();
        self.position = view.end();
        self.shared.dispatched.store(self.dispatched, Ordering::Release);
    }

    fn dispatch_after(&mut self, view: &View) {
        let Some(events) = view.events_from(self.position) else { return };
        for e in &events {
            self.dispatch(e);
        }
    }

    fn register(&mut self, filter: Filter, stream: Negotiated, epoch: u64, queue: usize) -> Result<Subscription, Stale> {
        if epoch != self.epoch {
            return Err(Stale);
        }
        let id = self.next_id;
        self.next_id += 1;
        let bucket = self.bucket(&filter);
        let (tx, frames) = mpsc::channel(queue.max(1));
        self.buckets.insert(bucket.clone(), id, Watcher { filter, stream, tx });
        self.buckets_of.insert(id, bucket);
        self.shared.stats.open.fetch_add(1, Ordering::Relaxed);
        Ok(Subscription {
            id,
            frames,
            registered_at: self.dispatched,
            registered_pos: self.position,
            control: self.control.clone(),
            shared: self.shared.clone(),
        })
    }

    /// The most selective bucket for a watcher with `filter`.
    fn bucket(&self, filter: &Filter) -> Bucket {
        if let Some(name) = filter.equality("metadata.name") {
            return Bucket::Name(name.into());
        }
        if self.node_field.is_some()
            && let Some(node) = filter.equality("spec.nodeName")
        {
            return Bucket::Node(node.into());
        }
        match filter.namespace().or_else(|| filter.equality("metadata.namespace").filter(|_| self.res.info().namespaced)) {
            Some(ns) => Bucket::Namespace(ns.into()),
            None => Bucket::All,
        }
    }

    fn remove(&mut self, id: u64) {
        let Some(bucket) = self.buckets_of.remove(&id) else { return };
        self.buckets.remove(&bucket, id);
        self.shared.stats.open.fetch_sub(1, Ordering::Relaxed);
    }

    fn close_all(&mut self) {
        self.shared.stats.open.fetch_sub(self.buckets_of.len() as u64, Ordering::Relaxed);
        self.buckets = Buckets::default();
        self.buckets_of.clear();
    }

    /// The watchers `e` can concern, each bucket at most once.
    fn watchers_for<'a>(&'a self, e: &'a Event) -> impl Iterator<Item = (&'a u64, &'a Watcher)> {
        let b = &self.buckets;
        let o = &e.object;
        let node = self.node_field.map(|i| (o.field(i), e.prev.as_ref().map(|p| p.field(i)).filter(|before| *before != o.field(i))));
        let namespace = Some(o.namespace()).filter(|ns| !ns.is_empty()).and_then(|ns| b.namespace.get(ns));
        let nodes = node.into_iter().flat_map(|(now, before)| [b.node.get(now), before.and_then(|n| b.node.get(n))]).flatten();
        [Some(&b.all), b.name.get(o.name()), namespace].into_iter().flatten().chain(nodes).flatten()
    }

    fn dispatch(&mut self, e: &Event) {
        if self.buckets_of.is_empty() {
            return;
        }
        let mut built = Frames { res: &self.res, event: e, built: Default::default() };
        let mut closed = Vec::new();
        let mut delivered = 0;
        {
            for (id, w) in self.watchers_for(e) {
                let Some(t) = w.filter.transition(e) else { continue };
                let Some(bytes) = built.get(t, w.stream) else {
                    // No protobuf for this object: end the stream; the client's next watch passes through.
                    closed.push(*id);
                    continue;
                };
                match w.tx.try_send(Frame { rv: e.rv(), bytes }) {
                    Ok(()) => delivered += 1,
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        self.shared.stats.closed_slow.fetch_add(1, Ordering::Relaxed);
                        closed.push(*id);
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => closed.push(*id),
                }
            }
        }
        self.shared.stats.delivered.fetch_add(delivered, Ordering::Relaxed);
        // Dropping a closed watcher's sender ends its stream after what it has queued.
        for id in closed {
            self.remove(id);
        }
    }
}

/// The streams a watcher may hold: the objects or their metadata only
/// (`Shape::Objects`, `Shape::Metadata`; a Table watch holds the objects,
/// rewritten as they leave) in JSON, protobuf or CBOR.
const STREAMS: usize = 6;

/// `stream`'s index among the [`STREAMS`].
fn stream_index(stream: Negotiated) -> usize {
    let encoding = match stream.encoding {
        Encoding::Json | Encoding::Yaml => 0,
        Encoding::Protobuf => 1,
        Encoding::Cbor => 2,
    };
    3 * usize::from(stream.shape != Shape::Objects) + encoding
}

/// The frames of one event, each (transition, stream) encoded at most once.
struct Frames<'a> {
    res: &'a CachedResource,
    event: &'a Event,
    built: [[Option<Option<Bytes>>; 4]; STREAMS],
}

impl Frames<'_> {
    fn get(&mut self, t: Transition, frames: Negotiated) -> Option<Bytes> {
        let slot = match t {
            Transition::Added => 0,
            Transition::Modified => 1,
            Transition::Deleted => 2,
            Transition::Left => 3,
        };
        let (res, e) = (self.res, self.event);
        self.built[stream_index(frames)][slot].get_or_insert_with(|| transition_frame(res, e, t, frames)).clone()
    }
}

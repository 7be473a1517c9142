//! Watches from memory: every watch of a cached resource that names a
//! revision (`resourceVersion=0` or `N`, with or without
//! `sendInitialEvents`) is answered by kache; upstream sees only the
//! reflector's one watch per resource. A watch without `resourceVersion`
//! asks for a consistent start: it is answered once the resource is proven
//! fresh (`upstream/freshness/`), and passed through otherwise.
//!
//! A stream is, in order: the initial state as ADDED in key order (when the
//! request asks for initial events, explicitly or by the 1.34 default for
//! revision `0`) and, with bookmarks allowed, the `k8s.io/initial-events-end`
//! BOOKMARK at the state's revision; the logged events after the start
//! revision up to the dispatcher's position at registration, replayed from
//! the store; then the live frames the [`Dispatcher`] queues. Every event
//! appears once, in revision order, filtered by the request's scope and
//! selectors with the apiserver's transitions (invariant 5). A revision
//! older than the store's window gets the apiserver's HTTP 200 and one
//! ERROR 410 `Expired` event; a future one waits for upstream (with initial
//! events: up to the wait bound, then it is passed through).
//!
//! Bookmarks (`allowWatchBookmarks`) follow the apiserver's schedule — one
//! every bookmark interval (a minute) and one 2 s before the deadline — and
//! carry the revision the dispatcher has reached, sent only once the queue
//! holds nothing older and only when it is newer than what the client last
//! got. The stream ends at `timeoutSeconds` (default: a random 30–60
//! minutes, as the apiserver picks), when kache shuts down, when the
//! dispatcher closes the watcher (slow client, re-list), or when the client
//! goes away. A resource the apiserver serves from etcd instead of its watch
//! cache (events: `Resource::watch_cached`) gets no periodic bookmarks, and
//! a watch from before kache's window goes to the apiserver (etcd may
//! still hold the revision) instead of getting the 410.
//!
//! A metadata-only watch (`as=PartialObjectMetadata`) gets the same stream
//! with every object, bookmarks included, as `PartialObjectMetadata`; the
//! dispatcher encodes each event at most once per form and encoding.

mod dispatcher;
mod stream;
mod table;

use std::sync::Arc;
use std::time::Duration;

use apimachinery::list::{Labels, check_fields};
use apimachinery::negotiate::{Negotiated, Shape};
use apimachinery::params::{ListOptions, parse_resource_version};
use apimachinery::status::ApiError;
use http::Response;
use rand::Rng;
use tokio::time::Instant;

pub use dispatcher::{Dispatcher, Frame, Stale, Subscription, WatchStats};
use stream::{Bookmarks, Phase, Stream};
use table::TableFrames;

use super::body::{self, ApiBody};
use super::encode::{self, error_frame};
use super::filter::{Filter, Shard};
use super::source::{Answer, PassThrough};
use crate::cache::CachedResource;
use crate::upstream::freshness::Proven;
use crate::upstream::plan::Read as Consistent;

/// Watch settings.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// Frames queued per watcher before it is closed as too slow.
    pub queue: usize,
    /// How often a watcher that allows bookmarks gets one (the apiserver: a minute).
    pub bookmark_interval: Duration,
}

impl Default for WatchConfig {
    fn default() -> Self {
        // 1,024 frames: a watcher a second behind 1,000 events/s is still served.
        WatchConfig { queue: 1024, bookmark_interval: Duration::from_secs(60) }
    }
}

/// Answers a validated watch request of `res` (in `namespace`, or all), as
/// `negotiated`; `wait`: how long a revision the store has not reached is
/// waited for; `proven`: the proof a consistent start is answered from the
/// head with (without it, the watch is [`Answer::Unproven`]). Errors before
/// the stream starts are the apiserver's `Status` responses.
pub async fn watch(
    (res, dispatcher): (&Arc<CachedResource>, &Dispatcher),
    namespace: Option<&str>,
    (opts, proven): (&ListOptions, Option<Proven>),
    negotiated: Negotiated,
    (wait, config): (Duration, &WatchConfig),
    ends: Ends,
) -> Result<Answer<Response<ApiBody>>, ApiError> {
    if let Labels::Unknown(_) = check_fields(res.info(), opts)? {
        return Ok(Answer::Upstream(PassThrough::CustomFieldLabel));
    }
    let shard = match Shard::of(res, opts).admitted()? {
        Ok(shard) => shard,
        Err(why) => return Ok(Answer::Upstream(why)),
    };
    // A table watch is the objects' stream, rewritten as it leaves.
    let (shape, table) = match negotiated.shape {
        Shape::Table { version, include } => {
            let Some(printer) = res.printer() else { return Ok(Answer::Upstream(PassThrough::Encoding)) };
            (Shape::Objects, Some(TableFrames::new(printer, include, version, res.info().clone())))
        }
        shape => (shape, None),
    };
    let frames = Negotiated { encoding: negotiated.encoding, shape, pretty: false, gzip: false };
    let requested = parse_resource_version(&opts.resource_version)?;
    let initial = opts.sends_initial_events();
    let consistent = opts.resource_version.is_empty();
    if consistent {
        // A consistent start: from a snapshot proven fresh, or upstream.
        if proven.is_none() {
            let prefix = res.info().prefix(namespace);
            let bytes = res.read_bytes(&prefix, &prefix, usize::MAX);
            return Ok(Answer::Unproven(Consistent { bytes, collection: true, stream: initial }));
        }
    } else if initial && !res.reached(requested, wait).await {
        return Ok(Answer::Upstream(PassThrough::RevisionNotReached));
    }
    let filter = Filter::new(res.info(), namespace, opts, shard);
    // A re-list between reading the start and registering makes the
    // registration stale: start again on the new state (twice at most).
    for _ in 0..3 {
        let view = res.store().view();
        let (start, phase) = if initial {
            let snapshot = view.head().clone();
            (snapshot.rv(), Phase::Initial { prefix: res.info().prefix(namespace), after: None, snapshot })
        } else if requested == 0 || consistent {
            (view.confirmed_rv(), Phase::Replay)
        } else if requested < view.oldest_rv() && !res.info().watch_cached {
            // The apiserver watches such a resource in etcd, which may still hold the revision.
            return Ok(Answer::Upstream(PassThrough::RevisionOutsideWindow));
        } else if requested < view.oldest_rv() {
            let frame = error_frame(&ApiError::watch_too_old(requested, view.oldest_rv()), frames.encoding);
            // A stream of one frame, of no length known ahead: chunked on HTTP/1.1, as the apiserver's.
            return Ok(Answer::Memory(encode::stream(frames, body::chunks(std::iter::once(frame)))));
        } else {
            (requested, Phase::Replay)
        };
        let Ok(sub) = dispatcher.subscribe(filter.clone(), frames, view.epoch(), config.queue).await else { continue };
        let deadline = Instant::now() + lifetime(opts.timeout_seconds);
        let stream = Stream {
            res: res.clone(),
            filter,
            frames,
            epoch: view.epoch(),
            start,
            last: start,
            phase,
            bookmarks: opts.allow_watch_bookmarks.then(|| match res.info().watch_cached {
                true => Bookmarks::new(config.bookmark_interval, deadline),
                false => Bookmarks::initial_only(deadline),
            }),
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            recheck: ends.permission.as_ref().map(|a| Instant::now() + a.interval()),
            permission: ends.permission.clone(),
            stopping: ends.stopping.clone(),
            sub,
            table,
        };
        return Ok(Answer::Memory(encode::stream(frames, stream.into_body())));
    }
    Ok(Answer::Upstream(PassThrough::Relisting))
}

/// How long a watch lives: `timeoutSeconds`, or (unset or 0) a random time
/// between the apiserver's `--min-request-timeout` (30 minutes) and twice that.
fn lifetime(timeout_seconds: Option<u64>) -> Duration {
    match timeout_seconds.filter(|t| *t > 0) {
        Some(t) => Duration::from_secs(t),
        None => Duration::from_secs(rand::rng().random_range(1800..3600)),
    }
}

/// What ends a stream besides its lifetime: kache stopping, and the
/// client losing its permission (re-checked as its cached allow expires).
#[derive(Debug)]
pub struct Ends {
    pub stopping: tokio::sync::watch::Receiver<bool>,
    pub permission: Option<crate::access::Permission>,
}

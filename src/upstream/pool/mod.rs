//! HTTP/2 connections to the apiserver, kept as Go's transport keeps them:
//! never more streams on a connection than its server allows
//! (`SETTINGS_MAX_CONCURRENT_STREAMS`; kube-apiserver advertises 100), so
//! no request waits for another to end — when every connection is full,
//! another is opened. (hyper's own pool puts every request on one
//! connection, where h2 queues each stream past the server's limit until
//! an earlier one ends: the 101st watch hangs.)
//!
//! How:
//! - A connection's *slots* count the streams it carries. A request takes
//!   one before it is handed to the connection and gives it back exactly
//!   once: when its response body ends or fails, when the response is
//!   dropped (hyper then resets the stream), or when the request fails.
//! - A request takes a slot on the first connection with one free under
//!   its server's limit: the one its preface announced ([`frames`]; a
//!   connection is used only once that is known) or a later SETTINGS frame
//!   changed it to. A connection still being dialled is assumed to allow
//!   what the last connection heard (100 before any did: Go's
//!   `initialMaxConcurrentStreams`), so requests arriving at once dial
//!   connections concurrently, each reserved by the requests it will
//!   carry: 1,000 at once open 10, not 1,000 and not one after another.
//! - A request that reserved a slot the server's limit then did not allow
//!   (a server allowing fewer than assumed) gives it back and takes
//!   another, rather than let h2 queue its stream.
//! - A connection that ends (GOAWAY, a broken socket, keep-alive pings
//!   unanswered) is forgotten; a request it had not sent is sent on
//!   another. One idle for [`IDLE`] is closed.
//!
//! - Reads from a connection's socket are gathered while it streams
//!   ([`gather`]): the apiserver writes a record and a system call per
//!   4 KiB frame, and waking for each cost more than the bytes. What TLS
//!   decrypts is handed to h2 a frame at a time ([`frames`]), so h2 copies
//!   no bytes read past a frame's end.
//!
//! Invariant: streams sent on a connection ≤ its server's limit (a server
//! that lowers it on an open connection is obeyed for new streams); a
//! slot is given back exactly once.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, Uri, Version};
use hyper::body::Incoming;
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::client::TlsStream;

pub use super::BoxError;
use super::UpstreamError;
pub(crate) use gather::Gathered;

mod dialer;
mod frames;
mod gather;
mod lease;

pub(crate) use dialer::{DIAL_TIMEOUT, Dialer};

pub use lease::{Dedicated, Lease, LeasedBody};

/// The body type the client sends.
pub type UpBody = http_body_util::combinators::BoxBody<Bytes, BoxError>;

/// The limit assumed before any server said: Go's
/// `initialMaxConcurrentStreams`, the HTTP/2 RFC's recommended minimum and
/// kube-apiserver's default.
const ASSUMED_LIMIT: usize = 100;

/// A connection idle this long is closed: client-go's `IdleConnTimeout`,
/// and the apiserver's own HTTP/2 idle timeout.
pub const IDLE: Duration = Duration::from_secs(90);

/// Pings on a quiet connection, and how long an answer may take before the
/// connection counts as dead (client-go: `ReadIdleTimeout` 30 s, `PingTimeout` 15 s).
const PING_EVERY: Duration = Duration::from_secs(30);
const PING_TIMEOUT: Duration = Duration::from_secs(15);

/// Receive windows as Go's transport (client-go's) opens them: 4 MiB a
/// stream (`transportDefaultStreamFlow`); the connection's large enough
/// that streams never wait for each other (`transportDefaultConnFlow` is
/// 1 GiB; 64 MiB covers 16 streams at full window).
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 64 << 20;

/// Streams kache reset (a client that went away, a watch it ended) that
/// are remembered, so frames the server had already sent on them are
/// dropped rather than taken for protocol errors. h2 remembers 10 by
/// default, after which each such frame counts as the server's error and
/// the 1,024th closes the connection — every watch on it with it — when a
/// thousand watchers go at once. Go's transport forgets no reset stream
/// before the server has seen the reset. An entry is a few dozen bytes.
const RESET_STREAMS: usize = 1 << 16;

/// Why a request did not get a response.
#[derive(Debug)]
pub(crate) enum PoolError {
    /// The server does not speak HTTP/2 (ALPN chose HTTP/1.1): the request, unsent.
    NotHttp2(Box<Request<UpBody>>),
    /// No connection could be made.
    Connect(Arc<DialError>),
    /// The request failed on its connection.
    Request(hyper::Error),
}

/// Counters of the pool, read at scrape time.
#[derive(Debug, Default)]
pub struct PoolStats {
    /// Connections opened (dials that completed a handshake).
    pub opened: AtomicU64,
    /// Streams in flight (slots taken), all connections.
    pub streams: AtomicUsize,
    /// Requests sent again on another connection because theirs ended first.
    pub resent: AtomicU64,
}

/// The pool: cheap to clone, shared by every request kache sends upstream.
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// How its connections are made.
    dialer: Dialer,
    conns: Mutex<Vec<Arc<Conn>>>,
    /// The limit the last connection heard; what a new one is assumed to allow.
    assumed: Arc<AtomicUsize>,
    reaper: std::sync::Once,
    stats: PoolStats,
}

/// A dial's outcome, shared by every request waiting on it.
#[derive(Debug, Clone)]
enum Dial {
    Pending,
    Ready(http2::SendRequest<UpBody>),
    NotHttp2,
    Failed(Arc<DialError>),
}

/// Why no connection was made to the apiserver (each cause kept).
#[derive(Debug, thiserror::Error)]
pub(crate) enum DialError {
    /// The TCP connection failed.
    #[error("connecting to {authority}: {source}")]
    Connect {
        /// The apiserver's host and port.
        authority: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The TLS handshake failed.
    #[error("TLS handshake with {authority}: {source}")]
    Tls {
        /// The apiserver's host and port.
        authority: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Neither happened within [`DIAL_TIMEOUT`].
    #[error("connecting to {0} timed out after {DIAL_TIMEOUT:?}")]
    Timeout(String),
    /// The HTTP/2 handshake failed.
    #[error("HTTP/2 handshake with {authority}: {source}")]
    Http2 {
        /// The apiserver's host and port.
        authority: String,
        /// Why.
        #[source]
        source: hyper::Error,
    },
    /// The server's preface carried no SETTINGS in time.
    #[error("{0} sent no HTTP/2 SETTINGS")]
    NoSettings(String),
    /// The dial was dropped before it ended.
    #[error("the dial was abandoned")]
    Abandoned,
}

#[derive(Debug)]
struct Conn {
    dial: watch::Sender<Dial>,
    /// Slots taken.
    used: AtomicUsize,
    /// The server's limit as h2 last heard it (0: not connected yet).
    limit: Arc<AtomicUsize>,
    /// Set once the connection has ended: it takes no more requests.
    closed: Arc<AtomicBool>,
    /// When its last slot was given back.
    idle_since: Mutex<Instant>,
}

impl Conn {
    fn limit(&self, assumed: usize) -> usize {
        match self.limit.load(Ordering::Acquire) {
            0 => assumed,
            n => n,
        }
    }

    fn usable(&self) -> bool {
        !self.closed.load(Ordering::Acquire) && !matches!(&*self.dial.borrow(), Dial::NotHttp2 | Dial::Failed(_))
    }

    /// Takes a slot if one is free under `limit`.
    fn take(&self, limit: usize) -> bool {
        self.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| (u < limit).then_some(u + 1)).is_ok()
    }

    fn idle_for(&self, now: Instant) -> Option<Duration> {
        (self.used.load(Ordering::Acquire) == 0).then(|| now.saturating_duration_since(*self.idle_since.lock()))
    }
}

/// A stream's place on its connection, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    conn: Arc<Conn>,
    pool: Arc<Inner>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        // The idle clock starts before the count reaches zero, so a reaper
        // that sees zero never reads a stale start.
        if self.conn.used.load(Ordering::Acquire) == 1 {
            *self.conn.idle_since.lock() = Instant::now();
        }
        let used = self.conn.used.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(used > 0, "a slot is given back once");
        self.pool.stats.streams.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Pool {
    /// A pool for the HTTPS server at `uri`, with `tls` (whose ALPN is set here).
    pub fn new(uri: &Uri, tls: rustls::ClientConfig) -> Result<Pool, UpstreamError> {
        let inner = Inner {
            dialer: Dialer::new(uri, tls, &[b"h2", b"http/1.1"])?,
            conns: Mutex::new(Vec::new()),
            assumed: Arc::new(AtomicUsize::new(ASSUMED_LIMIT)),
            reaper: std::sync::Once::new(),
            stats: PoolStats::default(),
        };
        Ok(Pool { inner: Arc::new(inner) })
    }

    /// The pool's counters.
    pub fn stats(&self) -> &PoolStats {
        &self.inner.stats
    }

    /// Connections open or being opened.
    pub fn connections(&self) -> usize {
        self.inner.conns.lock().len()
    }

    /// Sends `req` (an absolute URI) on a connection with a free slot; the
    /// response's body holds the slot.
    pub async fn send(&self, mut req: Request<UpBody>) -> Result<(Response<Incoming>, Option<Slot>), PoolError> {
        *req.version_mut() = Version::HTTP_2;
        loop {
            let slot = self.take();
            let conn = slot.conn.clone();
            let mut dial = conn.dial.subscribe();
            // The slot holds the connection, so its dial cannot be dropped meanwhile.
            let outcome = dial.wait_for(|d| !matches!(d, Dial::Pending)).await.map_or(Dial::Pending, |d| d.clone());
            let mut sender = match outcome {
                Dial::Ready(sender) => sender,
                Dial::NotHttp2 => return Err(PoolError::NotHttp2(Box::new(req))),
                Dial::Failed(e) => return Err(PoolError::Connect(e)),
                Dial::Pending => return Err(PoolError::Connect(Arc::new(DialError::Abandoned))),
            };
            // Reserved before the server's limit was known, and over it: try elsewhere.
            if conn.used.load(Ordering::Acquire) > conn.limit(usize::MAX) {
                drop(slot);
                continue;
            }
            match sender.try_send_request(req).await {
                Ok(resp) => {
                    // An answer without a body holds nothing.
                    let slot = (!hyper::body::Body::is_end_stream(resp.body())).then_some(slot);
                    return Ok((resp, slot));
                }
                Err(mut e) => match e.take_message() {
                    // Never sent: the connection ended first. Another one takes it.
                    Some(unsent) => {
                        conn.closed.store(true, Ordering::Release);
                        self.inner.stats.resent.fetch_add(1, Ordering::Relaxed);
                        req = unsent;
                    }
                    None => return Err(PoolError::Request(e.into_error())),
                },
            }
        }
    }

    /// A slot on the first connection with one free, or on a new one being dialled.
    fn take(&self) -> Slot {
        let inner = &self.inner;
        let assumed = inner.assumed.load(Ordering::Acquire);
        let mut conns = inner.conns.lock();
        conns.retain(|c| c.usable());
        let conn = match conns.iter().find(|c| c.take(c.limit(assumed))) {
            Some(c) => c.clone(),
            None => {
                let conn = Arc::new(Conn {
                    dial: watch::Sender::new(Dial::Pending),
                    used: AtomicUsize::new(1),
                    limit: Arc::new(AtomicUsize::new(0)),
                    closed: Arc::new(AtomicBool::new(false)),
                    idle_since: Mutex::new(Instant::now()),
                });
                conns.push(conn.clone());
                // Dialled apart from the request, so a request that goes away leaves the dial to the others.
                tokio::spawn(dial(inner.clone(), conn.clone(), assumed));
                inner.reaper.call_once(|| {
                    tokio::spawn(reap(Arc::downgrade(inner)));
                });
                conn
            }
        };
        inner.stats.streams.fetch_add(1, Ordering::Relaxed);
        Slot { conn, pool: inner.clone() }
    }
}

/// Opens `conn`'s connection, drives it in a task of its own until it
/// ends, and offers it to requests once its server's stream limit is known
/// (its preface). That task holds neither the pool nor the connection's
/// entry, so dropping the entry (idle, or the pool gone) drops the last
/// sender and ends the connection.
async fn dial(pool: Arc<Inner>, conn: Arc<Conn>, assumed: usize) {
    let tls = match tokio::time::timeout(DIAL_TIMEOUT, pool.dialer.connect()).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => return fail(&conn, e),
        Err(_) => return fail(&conn, DialError::Timeout(pool.dialer.authority.clone())),
    };
    if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
        conn.dial.send_replace(Dial::NotHttp2);
        return;
    }
    let (io, preface) = frames::Frames::new(tls);
    let mut builder = http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .initial_max_send_streams(assumed)
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .keep_alive_interval(PING_EVERY)
        .keep_alive_timeout(PING_TIMEOUT)
        .keep_alive_while_idle(true)
        .max_concurrent_reset_streams(RESET_STREAMS)
        // The apiserver is trusted, as Go's transport trusts it: no count of its "errors" ends the connection.
        .max_local_error_reset_streams(None);
    let (sender, connection) = match builder.handshake(TokioIo::new(io)).await {
        Ok(pair) => pair,
        Err(source) => return fail(&conn, DialError::Http2 { authority: pool.dialer.authority.clone(), source }),
    };
    let driven = Driven { connection, heard: assumed, limit: conn.limit.clone(), assumed: pool.assumed.clone() };
    let (closed, authority) = (conn.closed.clone(), pool.dialer.authority.clone());
    tokio::spawn(async move {
        if let Err(e) = driven.await {
            tracing::debug!(upstream = %authority, error = %e, "upstream connection ended");
        }
        closed.store(true, Ordering::Release);
    });
    match tokio::time::timeout(DIAL_TIMEOUT, preface).await {
        Ok(Ok(p)) if frames::publish(p, &conn.limit, assumed) => {
            pool.assumed.store(conn.limit.load(Ordering::Acquire), Ordering::Release);
            pool.stats.opened.fetch_add(1, Ordering::Relaxed);
            conn.dial.send_replace(Dial::Ready(sender));
        }
        _ => {
            conn.closed.store(true, Ordering::Release);
            fail(&conn, DialError::NoSettings(pool.dialer.authority.clone()));
        }
    }
}

fn fail(conn: &Conn, why: DialError) {
    tracing::debug!(error = %why, "upstream dial failed");
    conn.dial.send_replace(Dial::Failed(Arc::new(why)));
}

type H2Connection = http2::Connection<TokioIo<frames::Frames<TlsStream<Gathered<TcpStream>>>>, UpBody, TokioExecutor>;

/// The connection's task: drives it, and publishes each new stream limit
/// h2 applies from its server's SETTINGS after the first (which the
/// preface gave).
struct Driven {
    connection: H2Connection,
    /// The limit h2 applied last.
    heard: usize,
    limit: Arc<AtomicUsize>,
    assumed: Arc<AtomicUsize>,
}

impl Future for Driven {
    type Output = hyper::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<hyper::Result<()>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.connection).poll(cx);
        let now = this.connection.current_max_send_streams().max(1);
        if now != this.heard {
            this.heard = now;
            this.limit.store(now, Ordering::Release);
            this.assumed.store(now, Ordering::Release);
        }
        polled
    }
}

/// Closes connections idle for [`IDLE`], until the pool is gone.
async fn reap(pool: Weak<Inner>) {
    loop {
        tokio::time::sleep(IDLE / 3).await;
        let Some(pool) = pool.upgrade() else { return };
        let now = Instant::now();
        // Dropping the last sender of a connection ends it.
        pool.conns.lock().retain(|c| c.usable() && c.idle_for(now).is_none_or(|idle| idle < IDLE));
    }
}

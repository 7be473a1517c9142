//! How relays travel to the apiserver ([`Lane`]): a small request (an
//! answer that ends: a GET, a page, a write) on a kept-alive HTTP/1.1
//! connection while one of [`KEPT_ALIVE_LANES`] is free; a whole collection
//! on a dedicated HTTP/1.1 connection, driven by the body that reads it,
//! while one of [`DEDICATED_LANES`] is free; the rest (watches, and whatever
//! finds no lane free) as streams of the shared HTTP/2 connections.
//!
//! Why kept-alive lanes. A relayed GET costs kache about 320 µs of CPU over
//! HTTP/2 and 200 µs over HTTP/1.1 (the h2 connection task's framing and
//! wake-ups), and over HTTP/1.1 it comes within a few tenths of a
//! millisecond of direct (`docs/performance.md`, "Small requests and relays").
//!
//! Why dedicated lanes. The apiserver streams a large answer faster over HTTP/1.1 than
//! over HTTP/2 (Go's HTTP/2 server hands each 4 KiB frame from the handler
//! to the connection's writer; 172 MB of protobuf pods, medians of 5:
//! 1.39 s against 1.71 s). And a relayed body read through a connection
//! driven in a task of its own crosses tasks once per chunk the apiserver
//! writes (one per object: 50,000 for those pods), each a wake-up of
//! another thread; here the task that writes the answer to the client
//! also reads the apiserver's connection, so a chunk is a function call.
//!
//! Invariants: at most [`KEPT_ALIVE_LANES`] + [`DEDICATED_LANES`] relays on
//! HTTP/1.1 at once, so the apiserver never sees a connection per relay
//! (more go on the shared HTTP/2 connections); a dedicated connection serves one
//! request and closes when its answer ends or is dropped; a lane's permit
//! is given back when its answer ends or is dropped, exactly once.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use http::{HeaderValue, Request, Response, Uri};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::UpstreamError;
use super::pool::{DIAL_TIMEOUT, Dedicated, DialError, Dialer, UpBody};

/// Dedicated connections large relays may hold at once.
pub(crate) const DEDICATED_LANES: usize = 4;

/// Small relays on kept-alive HTTP/1.1 connections at once (each its own connection while it lasts).
pub(crate) const KEPT_ALIVE_LANES: usize = 32;

/// Bytes read from a lane's connection at a time.
const READ_BUFFER: usize = 256 * 1024;

/// How a request travels to the apiserver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// A stream on a shared HTTP/2 connection (HTTP/1.1 where the server speaks only that).
    Http2,
    /// A kept-alive HTTP/1.1 connection while one of [`KEPT_ALIVE_LANES`] is free, else [`Lane::Http2`]:
    /// for an answer that ends soon.
    KeptAlive,
    /// A dedicated HTTP/1.1 connection while one of [`DEDICATED_LANES`] is free, else [`Lane::Http2`]:
    /// for answers of many megabytes.
    Dedicated,
}

/// The lanes to one apiserver.
pub struct Lanes {
    dialer: Dialer,
    /// The dedicated lanes' permits.
    dedicated: Arc<Semaphore>,
    /// Dedicated lanes taken so far.
    dedicated_taken: AtomicU64,
    /// The kept-alive lanes' permits.
    kept_alive: Arc<Semaphore>,
    /// Kept-alive lanes taken so far.
    kept_alive_taken: AtomicU64,
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes")
            .field("authority", &self.dialer.authority)
            .field("dedicated_free", &self.dedicated.available_permits())
            .finish_non_exhaustive()
    }
}

impl Lanes {
    /// Lanes to the HTTPS server `uri`, speaking HTTP/1.1 under `tls`.
    pub fn new(uri: &Uri, tls: rustls::ClientConfig) -> Result<Lanes, UpstreamError> {
        Ok(Lanes {
            dialer: Dialer::new(uri, tls, &[b"http/1.1"])?,
            dedicated: Arc::new(Semaphore::new(DEDICATED_LANES)),
            dedicated_taken: AtomicU64::new(0),
            kept_alive: Arc::new(Semaphore::new(KEPT_ALIVE_LANES)),
            kept_alive_taken: AtomicU64::new(0),
        })
    }

    /// A free kept-alive lane's permit, if one is free.
    pub(crate) fn take_kept_alive(&self) -> Option<OwnedSemaphorePermit> {
        let permit = self.kept_alive.clone().try_acquire_owned().ok()?;
        self.kept_alive_taken.fetch_add(1, Ordering::Relaxed);
        Some(permit)
    }

    /// Kept-alive lanes taken so far.
    pub(crate) fn kept_alive_taken(&self) -> u64 {
        self.kept_alive_taken.load(Ordering::Relaxed)
    }

    /// Kept-alive lanes in use now.
    pub(crate) fn kept_alive_in_use(&self) -> usize {
        KEPT_ALIVE_LANES - self.kept_alive.available_permits()
    }

    /// A free dedicated lane's permit, if one is free.
    pub(crate) fn take_dedicated(&self) -> Option<OwnedSemaphorePermit> {
        let permit = self.dedicated.clone().try_acquire_owned().ok()?;
        self.dedicated_taken.fetch_add(1, Ordering::Relaxed);
        Some(permit)
    }

    /// Dedicated lanes in use now.
    pub(crate) fn dedicated_in_use(&self) -> usize {
        DEDICATED_LANES - self.dedicated.available_permits()
    }

    /// Dedicated lanes taken so far.
    pub(crate) fn dedicated_taken(&self) -> u64 {
        self.dedicated_taken.load(Ordering::Relaxed)
    }

    /// Sends `req` on a dedicated connection, holding `permit`; the
    /// answer's body must drive the returned [`Dedicated`].
    pub async fn send(
        &self,
        mut req: Request<UpBody>,
        permit: OwnedSemaphorePermit,
    ) -> Result<(Response<Incoming>, Dedicated), UpstreamError> {
        debug_assert!(Arc::ptr_eq(permit.semaphore(), &self.dedicated), "a dedicated connection holds a dedicated lane's permit");
        // HTTP/1.1 wants the path alone on the request line, and the server in `Host`.
        let origin = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
        *req.uri_mut() = origin.parse().map_err(|e| UpstreamError::Config(format!("bad upstream path {origin:?}: {e}")))?;
        *req.version_mut() = http::Version::HTTP_11;
        let host = HeaderValue::from_str(&self.dialer.authority).map_err(|e| UpstreamError::Config(format!("upstream host: {e}")))?;
        req.headers_mut().insert(http::header::HOST, host);
        let tls = match tokio::time::timeout(DIAL_TIMEOUT, self.dialer.connect()).await {
            Ok(dialed) => dialed.map_err(|e| UpstreamError::Transport(Box::new(e)))?,
            Err(_) => return Err(UpstreamError::Transport(Box::new(DialError::Timeout(self.dialer.authority.clone())))),
        };
        let (mut sender, connection) = http1::Builder::new()
            .read_buf_exact_size(Some(READ_BUFFER))
            .handshake(TokioIo::new(tls))
            .await
            .map_err(|e| UpstreamError::Transport(Box::new(e)))?;
        let mut connection: Pin<Box<_>> = Box::pin(connection);
        let resp = tokio::select! {
            resp = sender.send_request(req) => resp.map_err(|e| UpstreamError::Transport(Box::new(e)))?,
            ended = connection.as_mut() => {
                let why = ended.err().map_or_else(|| "closed".to_string(), |e| e.to_string());
                return Err(UpstreamError::Transport(format!("the apiserver's connection ended before its answer: {why}").into()));
            }
        };
        // Without its sender, the connection closes once this answer ends.
        drop(sender);
        Ok((resp, Dedicated::new(connection, permit)))
    }
}

//! A response body from the apiserver ([`LeasedBody`]) and what it holds
//! until it ends ([`Lease`]): its HTTP/2 stream's slot on a pooled
//! connection, a kept-alive connection's lane, or a dedicated connection,
//! which the body drives (`crate::upstream::lane`): [`Dedicated`].
//!
//! Invariant: the lease is given back exactly once — when the body ends or
//! fails, or when it is dropped.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::sync::OwnedSemaphorePermit;

use super::Slot;
use bytes::Bytes;
use hyper::body::Incoming;

/// What a response body holds while it streams.
#[derive(Debug)]
pub enum Lease {
    /// A stream's slot on a pooled HTTP/2 connection.
    Http2(Slot),
    /// A dedicated connection, read as the body is.
    Dedicated(Dedicated),
    /// A kept-alive HTTP/1.1 connection's lane.
    KeptAlive(OwnedSemaphorePermit),
}

/// A response body holding its [`Lease`] until it ends, fails or is dropped.
#[derive(Debug)]
pub struct LeasedBody {
    inner: Incoming,
    lease: Option<Lease>,
}

impl LeasedBody {
    /// `inner`, holding `lease` (if any) until it ends.
    pub fn new(inner: Incoming, lease: Option<Lease>) -> LeasedBody {
        LeasedBody { inner, lease }
    }
}

impl hyper::body::Body for LeasedBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>> {
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(frame) => frame,
            Poll::Pending => {
                let Some(Lease::Dedicated(dedicated)) = &mut self.lease else { return Poll::Pending };
                // Nothing in the body's channel: its dedicated connection reads more into it.
                let _ = dedicated.poll_connection(cx);
                ready!(Pin::new(&mut self.inner).poll_frame(cx))
            }
        };
        if !matches!(frame, Some(Ok(_))) || self.inner.is_end_stream() {
            self.lease = None;
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// A dedicated connection's task.
type Connection = Pin<Box<dyn Future<Output = hyper::Result<()>> + Send + Sync>>;

/// A dedicated connection in use (`crate::upstream::lane`), driven by its
/// answer's body, and the lane's permit.
pub struct Dedicated {
    connection: Connection,
    ended: bool,
    _permit: OwnedSemaphorePermit,
}

impl std::fmt::Debug for Dedicated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dedicated").field("ended", &self.ended).finish_non_exhaustive()
    }
}

impl Dedicated {
    /// `connection`, which carries one answer, holding `permit`.
    pub fn new(connection: Connection, permit: OwnedSemaphorePermit) -> Dedicated {
        Dedicated { connection, ended: false, _permit: permit }
    }

    /// Drives the connection: reads what the apiserver sent into the
    /// body's channel. Ready once the connection ended (its body then ends
    /// or fails on its own).
    fn poll_connection(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.ended
            && let Poll::Ready(outcome) = self.connection.as_mut().poll(cx)
        {
            if let Err(e) = outcome {
                tracing::debug!(error = %e, "a dedicated connection ended");
            }
            self.ended = true;
        }
        match self.ended {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    }
}

//! A response body from the apiserver and the place it holds until it
//! ends: its HTTP/2 stream's slot on a pooled connection, a kept lane, or
//! a lane of its own, whose connection the body drives
//! (`crate::upstream::lane`): [`Own`].
//!
//! Invariant: the place is given back exactly once — when the body ends or
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
pub enum Place {
    /// A stream's slot on a pooled HTTP/2 connection.
    Stream(Slot),
    /// A connection of its own, read as the body is.
    Lane(Own),
    /// A kept-alive HTTP/1.1 connection's lane.
    Kept(OwnedSemaphorePermit),
}

/// A response body holding its [`Place`] until it ends, fails or is dropped.
#[derive(Debug)]
pub struct Held {
    inner: Incoming,
    place: Option<Place>,
}

impl Held {
    /// `inner`, holding `place` (if any) until it ends.
    pub fn new(inner: Incoming, place: Option<Place>) -> Held {
        Held { inner, place }
    }
}

impl hyper::body::Body for Held {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>> {
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(frame) => frame,
            Poll::Pending => {
                let Some(Place::Lane(own)) = &mut self.place else { return Poll::Pending };
                // Nothing in the body's channel: its own connection reads more into it.
                let _ = own.poll_connection(cx);
                ready!(Pin::new(&mut self.inner).poll_frame(cx))
            }
        };
        if !matches!(frame, Some(Ok(_))) || self.inner.is_end_stream() {
            self.place = None;
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

/// The connection of a lane of its own.
type Connection = Pin<Box<dyn Future<Output = hyper::Result<()>> + Send + Sync>>;

/// A lane of its own in use (`crate::upstream::lane`): its connection,
/// driven by its answer's body, and the lane's permit.
pub struct Own {
    connection: Connection,
    ended: bool,
    _permit: OwnedSemaphorePermit,
}

impl std::fmt::Debug for Own {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Own").field("ended", &self.ended).finish_non_exhaustive()
    }
}

impl Own {
    /// `connection`, which carries one answer, holding `permit`.
    pub fn new(connection: Connection, permit: OwnedSemaphorePermit) -> Own {
        Own { connection, ended: false, _permit: permit }
    }

    /// Drives the connection: reads what the apiserver sent into the
    /// body's channel. Ready once the connection ended (its body then ends
    /// or fails on its own).
    fn poll_connection(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.ended
            && let Poll::Ready(outcome) = self.connection.as_mut().poll(cx)
        {
            if let Err(e) = outcome {
                tracing::debug!(error = %e, "own lane's connection ended");
            }
            self.ended = true;
        }
        match self.ended {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    }
}

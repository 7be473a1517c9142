//! Response bodies: whole, a sequence of shared chunks, or a channel of
//! frames (watches), all behind one boxed type.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::{Body as HttpBody, Frame};
use tokio::sync::mpsc;

/// Every response body the simulator sends.
pub type Body = BoxBody<Bytes, Infallible>;

/// A body of one buffer.
pub fn full(b: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(b.into()).boxed()
}

/// A body written chunk by chunk from buffers it shares (list items).
pub fn chunks(parts: Vec<Bytes>) -> Body {
    Chunks(parts.into_iter()).boxed()
}

/// A body that streams frames until the sender is dropped (watches).
pub fn channel(rx: mpsc::Receiver<Bytes>) -> Body {
    Channel(rx).boxed()
}

struct Chunks(std::vec::IntoIter<Bytes>);

impl HttpBody for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.next().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.len() == 0
    }
}

struct Channel(mpsc::Receiver<Bytes>);

impl HttpBody for Channel {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

//! A response body followed as it goes out: each data frame shown to its
//! followers, then how it ended — its last frame sent, failed, or dropped
//! before its end (the client went away). Every stage that follows a body
//! (metrics counting its bytes, audit writing `ResponseComplete`) is a
//! [`Follow`], and all of a request's followers share one wrapper: one
//! allocation and one indirection a frame, however many follow.
//!
//! Invariants: a follower sees every data frame once, in order, then
//! [`Follow::end`] exactly once (on the frame that ends the stream, on
//! the first error, at the stream's end, or when the body is dropped);
//! no frame is added, held or changed, so the stream still ends with the
//! body's last data frame.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};

use super::body::{ApiBody, BoxError};

/// How a body ended.
#[derive(Debug, Clone, Copy)]
pub enum End<'a> {
    /// Its last frame went out.
    Complete,
    /// It failed with this error.
    Failed(&'a BoxError),
    /// It was dropped before its end (the client went away).
    Dropped,
}

/// What follows a body out.
pub trait Follow: Send + Sync + Unpin + 'static {
    /// A data frame goes out.
    fn data(&mut self, _data: &Bytes) {}

    /// The body ended (called once).
    fn end(&mut self, how: End<'_>);
}

impl<A: Follow, B: Follow> Follow for (A, B) {
    fn data(&mut self, data: &Bytes) {
        self.0.data(data);
        self.1.data(data);
    }

    fn end(&mut self, how: End<'_>) {
        self.0.end(how);
        self.1.end(how);
    }
}

impl<F: Follow> Follow for Option<F> {
    fn data(&mut self, data: &Bytes) {
        if let Some(f) = self {
            f.data(data);
        }
    }

    fn end(&mut self, how: End<'_>) {
        if let Some(f) = self {
            f.end(how);
        }
    }
}

/// `inner`, followed by `follow`.
pub struct Followed<F: Follow> {
    inner: ApiBody,
    pub(crate) follow: F,
    ended: bool,
}

impl<F: Follow> Followed<F> {
    /// `inner`, followed by `follow`.
    pub fn new(inner: ApiBody, follow: F) -> Followed<F> {
        Followed { inner, follow, ended: false }
    }

    /// As a response body.
    pub fn boxed(self) -> ApiBody {
        BodyExt::boxed(self)
    }

    fn end(&mut self, how: End<'_>) {
        if !std::mem::replace(&mut self.ended, true) {
            self.follow.end(how);
        }
    }
}

impl<F: Follow> Body for Followed<F> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        match &frame {
            Some(Ok(f)) => {
                if let Some(data) = f.data_ref() {
                    this.follow.data(data);
                }
                if this.inner.is_end_stream() {
                    this.end(End::Complete);
                }
            }
            Some(Err(e)) => this.end(End::Failed(e)),
            None => this.end(End::Complete),
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<F: Follow> Drop for Followed<F> {
    fn drop(&mut self) {
        let how = if self.inner.is_end_stream() { End::Complete } else { End::Dropped };
        self.end(how);
    }
}

impl<F: Follow> std::fmt::Debug for Followed<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Followed").field("ended", &self.ended).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::api::body::{chunks, full};

    /// Writes down what it sees.
    #[derive(Clone, Default)]
    struct Notes(Arc<Mutex<Vec<String>>>);

    impl Follow for Notes {
        fn data(&mut self, data: &Bytes) {
            self.0.lock().unwrap().push(format!("data {}", data.len()));
        }

        fn end(&mut self, how: End<'_>) {
            self.0.lock().unwrap().push(format!("{how:?}"));
        }
    }

    #[tokio::test]
    async fn followers_see_each_frame_then_the_end_once() {
        let (a, b) = (Notes::default(), Notes::default());
        let mut body = Followed::new(full(Bytes::from_static(b"{}")), (a.clone(), Some(b.clone())));
        let frame = body.frame().await.expect("a frame").expect("data");
        assert_eq!(frame.into_data().ok(), Some(Bytes::from_static(b"{}")));
        assert!(body.is_end_stream(), "no frame of its own after the body's");
        assert!(body.frame().await.is_none());
        drop(body);
        for notes in [a, b] {
            assert_eq!(*notes.0.lock().unwrap(), ["data 2", "Complete"]);
        }
    }

    #[tokio::test]
    async fn a_body_dropped_before_its_end_is_dropped() {
        let notes = Notes::default();
        let parts = (0..3).map(|_| Bytes::from(vec![b'x'; 70 * 1024]));
        let mut body = Followed::new(chunks(parts), notes.clone());
        body.frame().await.expect("a frame").expect("data");
        drop(body);
        assert_eq!(*notes.0.lock().unwrap(), [format!("data {}", 70 * 1024), "Dropped".to_string()]);
    }
}

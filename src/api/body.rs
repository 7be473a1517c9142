//! Response bodies: whole buffers, lists written from the objects' shared
//! bytes (never assembled into one buffer: parts taken from an iterator as
//! the client reads, small ones gathered into 64 KiB frames, or indented as
//! they go), gzip streamed from those parts
//! by a blocking task through a bounded channel, and upstream bodies passed
//! through in frames of up to 64 KiB: streams (watches, followed logs)
//! gathered only from what has come, never held; documents held at most
//! [`HOLD`] for more, and not at all once every byte upstream announced (its
//! `Content-Length`) is in.

use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use apimachinery::json::Indenter;
use bytes::{Bytes, BytesMut};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

/// Any error a body can fail with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// Every response body kache sends.
pub type ApiBody = BoxBody<Bytes, BoxError>;

/// A document's parts in order, made as its body is written: a list page
/// holds its objects (a pointer each) and makes an item's parts when the
/// writer reaches it, so a list in flight never holds a part per object.
pub type Parts = Box<dyn Iterator<Item = Bytes> + Send + Sync>;

/// The gzip level. The apiserver uses Go's level 1; zlib-rs's level 1 is
/// its "quick" strategy (static Huffman codes only), whose output is 1.6–1.8×
/// Go's. Its level 4 is smaller than Go's level 1 on every list measured, for
/// about the CPU of its own level 1 (`benches/encode.rs` prints each level's
/// size).
pub const GZIP_LEVEL: u32 = 4;

/// Compressed output is sent on in pieces of about this size.
const GZIP_PIECE: usize = 64 * 1024;

/// A body of one buffer.
pub fn full(b: impl Into<Bytes>) -> ApiBody {
    Full::new(b.into()).map_err(|never| match never {}).boxed()
}

/// Small parts are gathered into frames of about this size: one frame per
/// object would cost a chunk header and a write each.
const FRAME: usize = 64 * 1024;

/// A body of shared chunks, written in order, gathered into frames lazily
/// (at most one frame is built ahead of the client).
pub fn chunks(parts: impl Iterator<Item = Bytes> + Send + Sync + 'static) -> ApiBody {
    let stream = futures_util::stream::unfold(parts.peekable(), |mut parts| async move {
        let first = parts.next()?;
        if first.len() >= FRAME || parts.peek().is_none_or(|next| first.len() + next.len() > FRAME) {
            return Some((Ok::<_, BoxError>(Frame::data(first)), parts));
        }
        let mut frame = bytes::BytesMut::with_capacity(FRAME);
        frame.extend_from_slice(&first);
        while let Some(next) = parts.next_if(|next| frame.len() + next.len() <= FRAME) {
            frame.extend_from_slice(&next);
        }
        Some((Ok(Frame::data(frame.freeze())), parts))
    });
    StreamBody::new(stream).boxed()
}

/// A JSON document of shared chunks, indented as it is read, in frames of about [`FRAME`] bytes.
pub fn indented(parts: impl Iterator<Item = Bytes> + Send + Sync + 'static) -> ApiBody {
    let stream = futures_util::stream::unfold((parts, Indenter::default()), |(mut parts, mut indenter)| async move {
        let mut frame = Vec::with_capacity(FRAME + FRAME / 2);
        while frame.len() < FRAME {
            let Some(part) = parts.next() else { break };
            indenter.feed(&part, &mut frame);
        }
        if frame.is_empty() {
            return None;
        }
        Some((Ok::<_, BoxError>(Frame::data(Bytes::from(frame))), (parts, indenter)))
    });
    StreamBody::new(stream).boxed()
}

/// `parts` (indented first when `indent`) gzipped as they are read, a piece at a time.
pub fn gzip(parts: impl Iterator<Item = Bytes> + Send + 'static, indent: bool) -> ApiBody {
    // One piece queued: the compressor waits for the client rather than holding more.
    let (tx, rx) = mpsc::channel::<Result<Bytes, BoxError>>(1);
    tokio::task::spawn_blocking(move || {
        let mut enc = flate2::write::GzEncoder::new(Vec::with_capacity(GZIP_PIECE * 2), flate2::Compression::new(GZIP_LEVEL));
        let mut indenter = indent.then(Indenter::default);
        let mut spaced = Vec::new();
        for p in parts {
            // Writing into memory cannot fail.
            let _ = match &mut indenter {
                Some(indenter) => {
                    spaced.clear();
                    indenter.feed(&p, &mut spaced);
                    enc.write_all(&spaced)
                }
                None => enc.write_all(&p),
            };
            if enc.get_ref().len() >= GZIP_PIECE {
                let piece = std::mem::take(enc.get_mut());
                if tx.blocking_send(Ok(Bytes::from(piece))).is_err() {
                    return; // The client went away.
                }
            }
        }
        if let Ok(rest) = enc.finish() {
            let _ = tx.blocking_send(Ok(Bytes::from(rest)));
        }
    });
    channel(rx)
}

/// The longest a relayed document's bytes wait for more to fill a frame.
pub const HOLD: Duration = Duration::from_millis(2);

/// An upstream body passed on in frames of up to [`FRAME`] bytes: a
/// document's held up to [`HOLD`] for more; a stream's (a watch, a
/// streaming list, a followed log) gathered only from what has already
/// come, never waiting, so no event is delayed. Upstream may send one chunk
/// per object (the apiserver's streaming encoders do), and each chunk handed
/// on alone would cost a write system call of its own.
pub fn relay(incoming: crate::upstream::client::Body, stream: bool) -> ApiBody {
    let incoming = incoming.map_err(|e| Box::new(e) as BoxError);
    gather(incoming, if stream { Duration::ZERO } else { HOLD })
}

/// `inner`'s data in frames of up to [`FRAME`] bytes, held at most `patience`.
fn gather<B: Body<Data = Bytes, Error = BoxError> + Send + Sync + Unpin + 'static>(inner: B, patience: Duration) -> ApiBody {
    Gather { inner, buf: BytesMut::new(), next: None, done: false, patience, hold: None }.boxed()
}

/// Gathers the data frames of `inner` into frames of up to [`FRAME`] bytes.
struct Gather<B> {
    inner: B,
    buf: BytesMut,
    /// A trailers frame or error that must follow the gathered bytes.
    next: Option<Result<Frame<Bytes>, BoxError>>,
    done: bool,
    /// How long gathered bytes may wait for more.
    patience: Duration,
    /// Armed while bytes wait for more.
    hold: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<B: Body<Data = Bytes, Error = BoxError> + Unpin> Gather<B> {
    fn flush(&mut self) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.hold = None;
        Poll::Ready(Some(Ok(Frame::data(self.buf.split().freeze()))))
    }
}

impl<B: Body<Data = Bytes, Error = BoxError> + Unpin> Body for Gather<B> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if this.done || this.next.is_some() {
                return if this.buf.is_empty() { Poll::Ready(this.next.take()) } else { this.flush() };
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) if this.buf.is_empty() && data.len() >= FRAME => return Poll::Ready(Some(Ok(Frame::data(data)))),
                    Ok(data) => {
                        if !this.buf.is_empty() && this.buf.len() + data.len() > FRAME {
                            // Growing would copy what is gathered: send it, and start the next frame.
                            this.hold = None;
                            let gathered = this.buf.split().freeze();
                            this.buf.reserve(FRAME.max(data.len()));
                            this.buf.extend_from_slice(&data);
                            return Poll::Ready(Some(Ok(Frame::data(gathered))));
                        }
                        if this.buf.is_empty() {
                            this.buf.reserve(FRAME);
                        }
                        this.buf.extend_from_slice(&data);
                        if this.buf.len() >= FRAME {
                            return this.flush();
                        }
                    }
                    Err(trailers) => this.next = Some(Ok(trailers)),
                },
                Poll::Ready(Some(Err(e))) => this.next = Some(Err(e)),
                Poll::Ready(None) => this.done = true,
                Poll::Pending if this.buf.is_empty() => return Poll::Pending,
                // Every byte upstream announced (its Content-Length) is in: only its end is to come.
                Poll::Pending if this.patience.is_zero() || this.inner.size_hint().upper() == Some(0) => return this.flush(),
                Poll::Pending => {
                    let hold = this.hold.get_or_insert_with(|| Box::pin(tokio::time::sleep(this.patience)));
                    ready!(hold.as_mut().poll(cx));
                    return this.flush();
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.next.is_none() && self.buf.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let held = self.buf.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + held);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + held);
        }
        hint
    }
}

/// A body streamed from a channel until the sender is dropped.
pub fn channel(rx: mpsc::Receiver<Result<Bytes, BoxError>>) -> ApiBody {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item.map(Frame::data), rx)) });
    StreamBody::new(stream).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body fed by the test, and its gathered output.
    fn fed() -> (mpsc::Sender<Result<Bytes, BoxError>>, ApiBody) {
        let (tx, rx) = mpsc::channel(256);
        (tx, gather(channel(rx), HOLD))
    }

    async fn next(body: &mut ApiBody) -> Option<Result<Bytes, String>> {
        let frame = tokio::time::timeout(Duration::from_secs(5), body.frame()).await.expect("a frame within 5 s")?;
        Some(frame.map(|f| f.into_data().unwrap_or_default()).map_err(|e| e.to_string()))
    }

    #[tokio::test]
    async fn small_chunks_are_gathered_into_frames_in_order() {
        let (tx, mut body) = fed();
        let sent: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for piece in sent.chunks(1000) {
            tx.send(Ok(Bytes::copy_from_slice(piece))).await.unwrap();
        }
        drop(tx);
        let mut got = Vec::new();
        let mut sizes = Vec::new();
        while let Some(frame) = next(&mut body).await {
            let frame = frame.unwrap();
            sizes.push(frame.len());
            got.extend_from_slice(&frame);
        }
        assert_eq!(got, sent);
        assert_eq!(sizes, [65_000, 35_000]);
    }

    /// A body of `data` whose length is announced, whose end never comes.
    struct Announced(Option<Bytes>, u64);

    impl Body for Announced {
        type Data = Bytes;
        type Error = BoxError;

        fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            match self.0.take() {
                Some(data) => {
                    self.1 -= data.len() as u64;
                    Poll::Ready(Some(Ok(Frame::data(data))))
                }
                None => Poll::Pending,
            }
        }

        fn size_hint(&self) -> SizeHint {
            SizeHint::with_exact(self.1)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_document_whose_announced_bytes_are_all_in_waits_no_hold_for_its_end() {
        let pod = Bytes::from_static(b"{\"kind\":\"Pod\"}");
        let mut body = gather(Announced(Some(pod.clone()), pod.len() as u64), HOLD);
        assert_eq!(body.size_hint().exact(), Some(pod.len() as u64));
        let started = tokio::time::Instant::now();
        assert_eq!(next(&mut body).await, Some(Ok(pod)));
        assert_eq!(started.elapsed(), Duration::ZERO, "sent at once, not after the hold");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_gathers_what_has_come_and_never_waits_for_more() {
        let (tx, rx) = mpsc::channel(256);
        let mut body = gather(channel(rx), Duration::ZERO);
        for event in [&b"{\"type\":\"ADDED\"}\n"[..], b"{\"type\":\"MODIFIED\"}\n"] {
            tx.send(Ok(Bytes::copy_from_slice(event))).await.unwrap();
        }
        let started = tokio::time::Instant::now();
        let both = next(&mut body).await;
        assert_eq!(both, Some(Ok(Bytes::from_static(b"{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n"))), "one write");
        tx.send(Ok(Bytes::from_static(b"{\"type\":\"DELETED\"}\n"))).await.unwrap();
        assert_eq!(next(&mut body).await, Some(Ok(Bytes::from_static(b"{\"type\":\"DELETED\"}\n"))));
        assert_eq!(started.elapsed(), Duration::ZERO, "no event waited");
    }

    // Paused time: the clock moves only when every task waits, so what is measured is the hold itself.
    #[tokio::test(start_paused = true)]
    async fn bytes_wait_no_longer_than_the_hold_and_errors_follow_them() {
        let (tx, mut body) = fed();
        tx.send(Ok(Bytes::from_static(b"first"))).await.unwrap();
        let started = tokio::time::Instant::now();
        assert_eq!(next(&mut body).await, Some(Ok(Bytes::from_static(b"first"))));
        assert!(started.elapsed() <= HOLD, "held {:?}", started.elapsed());
        tx.send(Ok(Bytes::from_static(b"second"))).await.unwrap();
        tx.send(Err("upstream went away".into())).await.unwrap();
        assert_eq!(next(&mut body).await, Some(Ok(Bytes::from_static(b"second"))));
        assert_eq!(next(&mut body).await, Some(Err("upstream went away".to_string())));
    }
}

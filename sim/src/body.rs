//! Response bodies: whole, written from shared parts, or a channel of
//! frames (watches), all behind one boxed type.
//!
//! A written body hands hyper the chunks the apiserver's Go server would
//! hand its connection. Over HTTP/1.1 each part is a chunk, as it always was
//! here. Over HTTP/2 Go's response writer puts a 4 KiB `bufio.Writer`
//! (`handlerChunkWriteSize`) in front of the stream, so the encoder's writes
//! reach the stream as [`GoBuffered`] cuts them; hyper's h2 then splits each
//! chunk into DATA frames of at most the client's `MAX_FRAME_SIZE`, as Go's
//! server does. Invariant: the bytes are the parts' bytes, in order; only
//! where they are cut (and, when paced, when they go out) depends on the wire.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::{Body as HttpBody, Frame};
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};

use crate::pace::Pace;

/// Every response body the simulator sends.
pub type Body = BoxBody<Bytes, Infallible>;

/// A body of one buffer.
pub fn full(b: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(b.into()).boxed()
}

/// A body that streams frames until the sender is dropped (watches).
pub fn channel(rx: mpsc::Receiver<Bytes>) -> Body {
    Channel(rx).boxed()
}

/// How the apiserver's encoder hands a body to its response writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// In one `Write`: every document its encoder marshals whole (objects,
    /// `Status`es, discovery, indented JSON, and Tables, whose four fields
    /// keep them out of the streaming list encoders).
    Whole,
    /// One `Write` per part: the streaming list encoders (`collections.go`
    /// of the JSON and protobuf serializers), an item being one part and
    /// the envelope a few small ones.
    EachPart,
}

/// A body of `parts`, written as `writes` says, cut for HTTP/2 when
/// `http2`, and released no faster than `pace` allows.
pub fn written(parts: Vec<Bytes>, writes: Writes, http2: bool, pace: Option<Pace>) -> Body {
    match (http2, writes) {
        (false, _) => Written::new(parts.into_iter(), pace).boxed(),
        (true, Writes::Whole) => Written::new(std::iter::once(concat(parts)), pace).boxed(),
        (true, Writes::EachPart) => Written::new(GoBuffered::new(parts.into_iter()), pace).boxed(),
    }
}

fn concat(parts: Vec<Bytes>) -> Bytes {
    match <[Bytes; 1]>::try_from(parts) {
        Ok([one]) => one,
        Err(parts) => Bytes::from(parts.concat()),
    }
}

/// Go's `handlerChunkWriteSize`: the `bufio.Writer` in front of each HTTP/2 response.
const HANDLER_CHUNK_WRITE_SIZE: usize = 4 << 10;

/// The chunks Go's HTTP/2 response writer passes on for a sequence of
/// writes, by `bufio.Writer.Write`'s rule: a write that fits the free
/// space is copied in; one that does not, when the buffer holds something,
/// fills it and flushes it, and the rest is taken the same way; one larger
/// than the whole buffer, when it is empty, goes through as one chunk.
/// What is left is flushed when the handler returns.
struct GoBuffered<I> {
    writes: I,
    buffer: BytesMut,
    /// The rest of the write being taken.
    write: Bytes,
}

impl<I> GoBuffered<I> {
    fn new(writes: I) -> Self {
        GoBuffered { writes, buffer: BytesMut::with_capacity(HANDLER_CHUNK_WRITE_SIZE), write: Bytes::new() }
    }

    fn flush(&mut self) -> Bytes {
        std::mem::replace(&mut self.buffer, BytesMut::with_capacity(HANDLER_CHUNK_WRITE_SIZE)).freeze()
    }
}

impl<I: Iterator<Item = Bytes>> Iterator for GoBuffered<I> {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        loop {
            if self.write.is_empty() {
                match self.writes.next() {
                    Some(write) => self.write = write,
                    None => return (!self.buffer.is_empty()).then(|| self.flush()),
                }
                continue;
            }
            let available = HANDLER_CHUNK_WRITE_SIZE - self.buffer.len();
            if self.write.len() <= available {
                self.buffer.extend_from_slice(&self.write);
                self.write.clear();
            } else if self.buffer.is_empty() {
                return Some(std::mem::take(&mut self.write));
            } else {
                let fill = self.write.split_to(available);
                self.buffer.extend_from_slice(&fill);
                debug_assert_eq!(self.buffer.len(), HANDLER_CHUNK_WRITE_SIZE);
                return Some(self.flush());
            }
        }
    }
}

/// A paced chunk goes out in slices of at most this much, so its bytes flow
/// at the rate rather than wait and burst: HTTP/2's default
/// `SETTINGS_MAX_FRAME_SIZE` (RFC 9113 §6.5.2), so a client that keeps the
/// default gets the DATA frames it would get unpaced.
const PACE_SLICE: usize = 16 * 1024;

/// A body of chunks made as it is read, each released when its pace allows.
struct Written<I> {
    chunks: I,
    /// What goes out next: a chunk, or the rest of one being sliced.
    next: Option<Bytes>,
    pace: Option<Pace>,
    /// A slice held back until its time.
    held: Option<(Pin<Box<Sleep>>, Bytes)>,
}

impl<I: Iterator<Item = Bytes>> Written<I> {
    fn new(mut chunks: I, pace: Option<Pace>) -> Self {
        let next = chunks.find(|c| !c.is_empty());
        Written { chunks, next, pace, held: None }
    }

    /// What goes out now: the next chunk, or its next slice when paced.
    fn take(&mut self) -> Option<Bytes> {
        let mut chunk = self.next.take()?;
        if self.pace.is_some() && chunk.len() > PACE_SLICE {
            let slice = chunk.split_to(PACE_SLICE);
            self.next = Some(chunk);
            return Some(slice);
        }
        self.next = self.chunks.find(|c| !c.is_empty());
        Some(chunk)
    }
}

impl<I: Iterator<Item = Bytes> + Unpin> HttpBody for Written<I> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some((mut sleep, slice)) = this.held.take() {
            if sleep.as_mut().poll(cx).is_pending() {
                this.held = Some((sleep, slice));
                return Poll::Pending;
            }
            return Poll::Ready(Some(Ok(Frame::data(slice))));
        }
        let Some(slice) = this.take() else { return Poll::Ready(None) };
        let due = this.pace.as_mut().map(|p| p.due(slice.len())).filter(|due| *due > Instant::now());
        let Some(due) = due else { return Poll::Ready(Some(Ok(Frame::data(slice)))) };
        let mut sleep = Box::pin(tokio::time::sleep_until(due));
        // Registers the wake-up; a sleep due in the future is not ready yet.
        if sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Ok(Frame::data(slice))));
        }
        this.held = Some((sleep, slice));
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.next.is_none() && self.held.is_none()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(writes: &[usize]) -> Vec<usize> {
        let writes: Vec<Bytes> = writes.iter().map(|n| Bytes::from(vec![b'x'; *n])).collect();
        GoBuffered::new(writes.into_iter()).map(|c| c.len()).collect()
    }

    #[test]
    fn small_writes_are_gathered_up_to_four_kib_and_the_rest_flushed_at_the_end() {
        assert_eq!(cut(&[1000, 1000, 1000, 1000, 1000]), [4096, 904]);
        assert_eq!(cut(&[4096, 1]), [4096, 1], "a write that fits exactly is held until the next");
        assert_eq!(cut(&[]), Vec::<usize>::new());
    }

    #[test]
    fn a_write_larger_than_the_free_space_fills_and_flushes_the_buffer_then_is_taken_the_same_way() {
        // The list head, then items of 4.6 KB each with a comma between: every chunk is full.
        assert_eq!(cut(&[100, 4600, 1, 4600, 2]), [4096, 4096, 1111]);
        // After the buffer is flushed, a rest larger than the buffer goes through whole.
        assert_eq!(cut(&[10, 20_000, 10]), [4096, 15_914, 10]);
    }

    #[test]
    fn a_write_larger_than_the_buffer_goes_through_whole_when_the_buffer_is_empty() {
        assert_eq!(cut(&[20_000]), [20_000]);
        assert_eq!(cut(&[4096, 5000]), [4096, 5000]);
    }

    #[tokio::test]
    async fn the_written_bytes_are_the_parts_bytes_in_order_whatever_the_wire() {
        let parts: Vec<Bytes> = (0..50u8).map(|i| Bytes::from(vec![i; 300 * usize::from(i)])).collect();
        let expected = parts.concat();
        for (writes, http2) in [(Writes::Whole, false), (Writes::Whole, true), (Writes::EachPart, false), (Writes::EachPart, true)] {
            let body = written(parts.clone(), writes, http2, None).collect().await.expect("infallible").to_bytes();
            assert_eq!(body, expected, "{writes:?}, http2 {http2}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_paced_body_releases_its_bytes_in_slices_at_the_rate() {
        let pace = crate::Slowness { list_mb_per_second: 1.0, ..Default::default() }.list_pace();
        let started = Instant::now();
        let mut body = written(vec![Bytes::from(vec![0u8; 100_000])], Writes::Whole, true, pace);
        let mut got = 0;
        while let Some(frame) = body.frame().await {
            let data = frame.expect("infallible").into_data().expect("data");
            assert!(data.len() <= PACE_SLICE);
            got += data.len();
            // Byte n goes out no earlier than n µs (1 MB/s) after the start, and not much later.
            let at = started.elapsed();
            assert!(at >= std::time::Duration::from_micros(got as u64), "{got} bytes at {at:?}");
            assert!(at <= std::time::Duration::from_micros(got as u64 + 2000), "{got} bytes at {at:?}");
        }
        assert_eq!(got, 100_000);
    }
}

//! The server's frames, read as they pass, for two things hyper does not do:
//!
//! - **The preface.** An HTTP/2 server's first frame is its SETTINGS (RFC
//!   9113 §3.4), which carries `SETTINGS_MAX_CONCURRENT_STREAMS`. hyper
//!   applies it but does not say when it has arrived, and until then h2
//!   assumes a limit of its own — so a connection is used only once its
//!   server's limit is known exactly.
//! - **Reads that end where a frame ends.** h2 reads into a buffer of its
//!   own and splits each whole frame off it; the bytes read past a frame's
//!   end stay behind in a buffer the frame still shares, and h2 copies them
//!   into a new one before it reads on. Read as TLS decrypts them (a record
//!   at a time), that copied nearly every byte of a relayed list a second
//!   time (15% of kache's CPU relaying 242 MB from kube-apiserver 1.36). A
//!   read here ends at the next frame boundary: the 9-byte header alone,
//!   then the payload up to its end, so h2 sizes its buffer from the header
//!   and nothing is left behind to copy.
//!
//! Invariants: the bytes pass through unchanged and in order; a read that
//! returns no bytes means the stream ended (every boundary is at least one
//! byte away); only the first frame is kept (at most [`MAX_PREFACE`] bytes).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

/// The frame header: length (24 bits), type, flags, stream (RFC 9113 §4.1).
const HEADER: usize = 9;
/// `SETTINGS` (RFC 9113 §6.5) and its `SETTINGS_MAX_CONCURRENT_STREAMS`.
const SETTINGS: u8 = 0x4;
const MAX_CONCURRENT_STREAMS: u16 = 0x3;
/// A preface longer than this is not a server's SETTINGS (the protocol's
/// default `SETTINGS_MAX_FRAME_SIZE`).
const MAX_PREFACE: usize = HEADER + 16_384;

/// What the preface said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Preface {
    /// A SETTINGS frame; `Some(n)`: it limits streams to `n`.
    Settings(Option<u32>),
    /// Not a SETTINGS frame: not an HTTP/2 server (h2 will fail the connection).
    Other,
}

/// Where the reader is in the server's frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    /// In a header: `have` of its bytes read, `length` their length field so far.
    Header { have: usize, length: usize },
    /// In a payload, `left` bytes (at least one) before its end.
    Payload { left: usize },
}

impl Position {
    const START: Position = Position::Header { have: 0, length: 0 };

    /// Bytes to the next frame boundary (at least one).
    fn to_boundary(self) -> usize {
        match self {
            Position::Header { have, .. } => HEADER - have,
            Position::Payload { left } => left,
        }
    }

    /// Where the reader is after `bytes`, which end at or before the next boundary.
    fn after(self, bytes: &[u8]) -> Position {
        match self {
            Position::Header { have, mut length } => {
                for (i, b) in bytes.iter().enumerate() {
                    if have + i < 3 {
                        length = length << 8 | usize::from(*b);
                    }
                }
                match have + bytes.len() {
                    HEADER if length == 0 => Position::START,
                    HEADER => Position::Payload { left: length },
                    have => Position::Header { have, length },
                }
            }
            Position::Payload { left } if left == bytes.len() => Position::START,
            Position::Payload { left } => Position::Payload { left: left - bytes.len() },
        }
    }
}

/// `io` read a frame at a time, whose first frame is reported once.
#[derive(Debug)]
pub(crate) struct Frames<T> {
    io: T,
    position: Position,
    /// An error met after a read had bytes to return: the next read's.
    error: Option<io::Error>,
    /// The first frame's bytes so far, until it is complete.
    first: First,
}

impl<T> Frames<T> {
    /// `io`, and what will receive its server's preface.
    pub fn new(io: T) -> (Frames<T>, oneshot::Receiver<Preface>) {
        let (tx, rx) = oneshot::channel();
        (Frames { io, position: Position::START, error: None, first: Some((Vec::with_capacity(64), tx)) }, rx)
    }
}

/// The first frame's bytes so far, and who hears what it said.
type First = Option<(Vec<u8>, oneshot::Sender<Preface>)>;

/// Adds `bytes` to the first frame, and once it is whole says what it was.
fn saw_first(first: &mut First, bytes: &[u8]) {
    let Some((frame, _)) = first else { return };
    frame.extend_from_slice(&bytes[..bytes.len().min(MAX_PREFACE - frame.len())]);
    let Some(preface) = parse(frame) else { return };
    if let Some((_, tx)) = first.take() {
        // Nobody waiting is fine: the dial gave up.
        let _ = tx.send(preface);
    }
}

/// The first frame in `frame`, once it is all there.
fn parse(frame: &[u8]) -> Option<Preface> {
    let header = frame.get(..HEADER)?;
    let len = usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
    if header[3] != SETTINGS || HEADER + len > MAX_PREFACE {
        return Some(Preface::Other);
    }
    let payload = frame.get(HEADER..HEADER + len)?;
    let limit = payload
        .chunks_exact(6)
        .filter(|s| u16::from_be_bytes([s[0], s[1]]) == MAX_CONCURRENT_STREAMS)
        .map(|s| u32::from_be_bytes([s[2], s[3], s[4], s[5]]))
        .next_back();
    Some(Preface::Settings(limit))
}

impl<T: AsyncBufRead + Unpin> AsyncRead for Frames<T> {
    /// What `io` has decrypted, up to the next frame boundary: as much as
    /// is there at once (as tokio-rustls reads), never past the boundary.
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Some(e) = this.error.take() {
            return Poll::Ready(Err(e));
        }
        let mut read = false;
        while buf.remaining() > 0 {
            let chunk = match Pin::new(&mut this.io).poll_fill_buf(cx) {
                Poll::Ready(Ok(chunk)) => chunk,
                Poll::Ready(Err(e)) if !read => return Poll::Ready(Err(e)),
                Poll::Ready(Err(e)) => {
                    this.error = Some(e);
                    break;
                }
                Poll::Pending if !read => return Poll::Pending,
                Poll::Pending => break,
            };
            let boundary = this.position.to_boundary();
            let n = chunk.len().min(buf.remaining()).min(boundary);
            if n == 0 {
                break;
            }
            buf.put_slice(&chunk[..n]);
            this.position = this.position.after(&chunk[..n]);
            saw_first(&mut this.first, &chunk[..n]);
            Pin::new(&mut this.io).consume(n);
            read = true;
            if n == boundary {
                break;
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Frames<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Stores `preface`'s limit into `limit` (`fallback` when it names none:
/// h2 then keeps its initial value, which is `fallback`).
pub fn publish(preface: Preface, limit: &Arc<AtomicUsize>, fallback: usize) -> bool {
    match preface {
        Preface::Settings(n) => {
            let n = n.map_or(fallback, |n| usize::try_from(n).unwrap_or(usize::MAX));
            limit.store(n.max(1), Ordering::Release);
            true
        }
        Preface::Other => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
        let len = pairs.len() * 6;
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, SETTINGS, 0, 0, 0, 0, 0];
        for (id, v) in pairs {
            f.extend_from_slice(&id.to_be_bytes());
            f.extend_from_slice(&v.to_be_bytes());
        }
        f
    }

    fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, 0, 0, 0, 0, 1];
        f.extend_from_slice(payload);
        f
    }

    /// Reads `wire` through [`Frames`] as TLS hands it over, `chunk` bytes at
    /// a time, into buffers of `room` bytes: every read, and the preface.
    async fn reads(wire: &[u8], chunk: usize, room: usize) -> (Vec<Vec<u8>>, Preface) {
        use tokio::io::AsyncReadExt;
        let (mut frames, preface) = Frames::new(tokio::io::BufReader::with_capacity(chunk, wire));
        let mut reads = Vec::new();
        loop {
            let mut buf = vec![0; room];
            let n = frames.read(&mut buf).await.expect("read");
            if n == 0 {
                break;
            }
            reads.push(buf[..n].to_vec());
        }
        (reads, preface.await.expect("a preface"))
    }

    #[tokio::test]
    async fn reads_end_at_frame_boundaries_and_pass_every_byte_unchanged() {
        // kube-apiserver's: MAX_FRAME_SIZE 256 KiB, MAX_CONCURRENT_STREAMS 100, INITIAL_WINDOW_SIZE 256 KiB.
        let frames = [
            settings(&[(0x5, 262_144), (0x3, 100), (0x4, 262_144)]),
            frame(0x4, &[]),
            frame(0x0, &[7; 40_000]),
            frame(0x0, &[]),
            frame(0x0, &[8; 300]),
        ];
        let wire = frames.concat();
        // Where each header and each frame ends.
        let (mut ends, mut start) = (Vec::new(), 0);
        for f in &frames {
            ends.push(start + HEADER);
            start += f.len();
            ends.push(start);
        }
        ends.dedup();
        for (chunk, room) in [(1, 100_000), (7, 3), (4096, 100_000), (16_384, 5000), (100_000, 100_000)] {
            let (reads, preface) = reads(&wire, chunk, room).await;
            assert_eq!(reads.concat(), wire, "chunks of {chunk}, room for {room}");
            assert_eq!(preface, Preface::Settings(Some(100)));
            let mut at = 0;
            for r in &reads {
                let boundary = ends.iter().find(|e| **e > at).copied().unwrap_or(wire.len());
                assert!(at + r.len() <= boundary, "a read of {} from {at} crosses the boundary at {boundary}", r.len());
                at += r.len();
            }
            if room >= 100_000 && chunk >= 16_384 {
                assert_eq!(
                    reads.len(),
                    ends.len(),
                    "with room, each read ends at the next boundary: {:?}",
                    reads.iter().map(Vec::len).collect::<Vec<_>>()
                );
            }
        }
    }

    #[tokio::test]
    async fn a_preface_without_a_limit_or_not_settings_says_so() {
        assert_eq!(reads(&settings(&[(0x4, 65_535)]), 5, 100).await.1, Preface::Settings(None));
        assert_eq!(reads(b"HTTP/1.1 400 Bad Request\r\n\r\n", 5, 100).await.1, Preface::Other);
        let limit = Arc::new(AtomicUsize::new(0));
        assert!(publish(Preface::Settings(None), &limit, 100));
        assert_eq!(limit.load(Ordering::Relaxed), 100);
        assert!(!publish(Preface::Other, &limit, 100));
    }
}

//! An HTTP/2 server connection's writes as kube-apiserver's Go server
//! makes them (golang.org/x/net/http2 as vendored in Kubernetes 1.36), so
//! that what a client pays per byte read from the simulator is what it
//! pays reading the apiserver:
//!
//! - the connection writes through a 4 KiB `bufio.Writer`
//!   (`bufWriterPoolBufferSize`); frames that fit are gathered there and
//!   flushed when the server has nothing more to send;
//! - a DATA frame that does not fit — every full 4 KiB handler chunk, whose
//!   frame is 4,105 bytes — is written by `framer.endWrite` as one `Write`
//!   of its own (bufio hands a large write to an empty buffer straight on);
//! - over TLS, Go's `crypto/tls` turns each `Write` into its own records
//!   (up to 16 KiB of plaintext each) and each record into its own system
//!   call.
//!
//! So a 230 MB list reaches the client as about 56,000 TLS records of
//! 4 KiB, each in a write of its own, where hyper's server (which gathers
//! frames into one buffer) would send a quarter as many records in larger
//! writes. Here every chunk is one write to the inner stream, flushed
//! before the next: over tokio-rustls, one record and one system call.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Go's `bufWriterPoolBufferSize`: the connection's write buffer.
const BUFFER: usize = 4 << 10;

/// An HTTP/2 frame header's length.
const HEADER: usize = 9;

/// `inner`, written as Go's HTTP/2 server writes (module doc).
#[derive(Debug)]
pub struct GoWrites<IO> {
    inner: IO,
    /// The frame being received from the server's codec, until whole.
    frame: BytesMut,
    /// Small frames gathered, as in Go's buffer.
    small: BytesMut,
    /// Writes to make, one inner write (and flush) each, in order.
    out: VecDeque<Bytes>,
    /// The first of `out` was written and awaits its flush.
    flushing: bool,
}

impl<IO> GoWrites<IO> {
    /// Wraps a server connection that speaks HTTP/2 (after the client's preface, the server writes only frames).
    pub fn new(inner: IO) -> Self {
        GoWrites { inner, frame: BytesMut::new(), small: BytesMut::new(), out: VecDeque::new(), flushing: false }
    }

    /// Takes in `buf`, cutting it into frames; returns how much it took (all).
    fn take(&mut self, mut buf: &[u8]) -> usize {
        let taken = buf.len();
        while !buf.is_empty() {
            let want = if self.frame.len() < HEADER { HEADER } else { HEADER + frame_length(&self.frame) };
            let n = (want - self.frame.len()).min(buf.len());
            self.frame.extend_from_slice(&buf[..n]);
            buf = &buf[n..];
            if self.frame.len() >= HEADER && self.frame.len() == HEADER + frame_length(&self.frame) {
                let frame = self.frame.split().freeze();
                if frame.len() > BUFFER {
                    self.gathered();
                    self.out.push_back(frame);
                } else {
                    if self.small.len() + frame.len() > BUFFER {
                        self.gathered();
                    }
                    self.small.extend_from_slice(&frame);
                }
            }
        }
        taken
    }

    /// The gathered small frames become one write.
    fn gathered(&mut self) {
        if !self.small.is_empty() {
            self.out.push_back(self.small.split().freeze());
        }
    }
}

/// The payload length a frame header carries (24 bits).
fn frame_length(header: &[u8]) -> usize {
    (usize::from(header[0]) << 16) | (usize::from(header[1]) << 8) | usize::from(header[2])
}

impl<IO: AsyncWrite + Unpin> GoWrites<IO> {
    /// Makes every pending write, each flushed before the next.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some(chunk) = self.out.front_mut() {
            if !self.flushing {
                while chunk.has_remaining() {
                    let n = ready!(Pin::new(&mut self.inner).poll_write(cx, chunk.chunk()))?;
                    if n == 0 {
                        return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                    }
                    chunk.advance(n);
                }
                self.flushing = true;
            }
            ready!(Pin::new(&mut self.inner).poll_flush(cx))?;
            self.flushing = false;
            self.out.pop_front();
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for GoWrites<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(self.drain(cx))?;
        let taken = self.take(buf);
        // Write what is whole now; what cannot go yet waits for the next call.
        if let Poll::Ready(Err(e)) = self.drain(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(taken))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.gathered();
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.as_mut().poll_flush(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for GoWrites<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records each write it is given.
    #[derive(Default)]
    struct Writes(Vec<usize>);

    impl AsyncWrite for Writes {
        fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            self.0.push(buf.len());
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn frame(len: usize) -> Vec<u8> {
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, 0, 0, 0, 0, 0, 1];
        f.resize(HEADER + len, 7);
        f
    }

    #[tokio::test]
    async fn full_data_frames_are_written_alone_and_small_frames_gathered_until_a_flush() {
        use tokio::io::AsyncWriteExt;
        let mut w = GoWrites::new(Writes::default());
        // What hyper's codec hands over in one buffer: two small frames, two 4 KiB DATA frames, a small one.
        let stream: Vec<u8> = [frame(30), frame(40), frame(4096), frame(4096), frame(100)].concat();
        // Cut at odd places, as a codec's buffer may be.
        for piece in stream.chunks(1000) {
            w.write_all(piece).await.unwrap();
        }
        w.flush().await.unwrap();
        assert_eq!(w.inner.0, [39 + 49, 4105, 4105, 109]);
    }

    #[tokio::test]
    async fn small_frames_beyond_the_buffer_go_out_as_it_fills() {
        use tokio::io::AsyncWriteExt;
        let mut w = GoWrites::new(Writes::default());
        let stream: Vec<u8> = (0..5).flat_map(|_| frame(1991)).collect();
        w.write_all(&stream).await.unwrap();
        w.flush().await.unwrap();
        assert_eq!(w.inner.0, [4000, 4000, 2000]);
    }
}

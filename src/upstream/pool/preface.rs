//! The server's connection preface, read as it passes: an HTTP/2 server's
//! first frame is its SETTINGS (RFC 9113 §3.4), which carries
//! `SETTINGS_MAX_CONCURRENT_STREAMS`. hyper applies it but does not say
//! when it has arrived, and until then h2 assumes a limit of its own — so a
//! connection is used only once its server's limit is known exactly.
//!
//! Invariant: the bytes pass through unchanged; only the first frame is
//! looked at (at most [`MAX_PREFACE`] bytes kept), then reading costs one
//! branch.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
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
pub enum Preface {
    /// A SETTINGS frame; `Some(n)`: it limits streams to `n`.
    Settings(Option<u32>),
    /// Not a SETTINGS frame: not an HTTP/2 server (h2 will fail the connection).
    Other,
}

/// `io` whose first frame read from the server is reported once.
#[derive(Debug)]
pub struct Sniff<T> {
    io: T,
    /// The first frame's bytes so far, until it is complete.
    first: Option<(Vec<u8>, oneshot::Sender<Preface>)>,
}

impl<T> Sniff<T> {
    /// `io`, and what will receive its server's preface.
    pub fn new(io: T) -> (Sniff<T>, oneshot::Receiver<Preface>) {
        let (tx, rx) = oneshot::channel();
        (Sniff { io, first: Some((Vec::with_capacity(64), tx)) }, rx)
    }

    fn saw(&mut self, bytes: &[u8]) {
        let Some((frame, _)) = &mut self.first else { return };
        frame.extend_from_slice(&bytes[..bytes.len().min(MAX_PREFACE - frame.len())]);
        let Some(preface) = parse(frame) else { return };
        if let Some((_, tx)) = self.first.take() {
            // Nobody waiting is fine: the dial gave up.
            let _ = tx.send(preface);
        }
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

impl<T: AsyncRead + Unpin> AsyncRead for Sniff<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.io).poll_read(cx, buf))?;
        if self.first.is_some() {
            let this = &mut *self;
            this.saw(&buf.filled()[before..]);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Sniff<T> {
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

    #[test]
    fn the_limit_is_read_from_the_first_settings_frame_however_it_is_split() {
        // kube-apiserver's: MAX_FRAME_SIZE 256 KiB, MAX_CONCURRENT_STREAMS 100, INITIAL_WINDOW_SIZE 256 KiB.
        let frame = settings(&[(0x5, 262_144), (0x3, 100), (0x4, 262_144)]);
        for split in 0..frame.len() {
            let (mut sniff, mut rx) = Sniff::new(());
            sniff.saw(&frame[..split]);
            assert!(rx.try_recv().is_err(), "not complete at {split} bytes");
            sniff.saw(&frame[split..]);
            assert_eq!(rx.try_recv(), Ok(Preface::Settings(Some(100))));
        }
    }

    #[test]
    fn a_preface_without_a_limit_or_not_settings_says_so() {
        let (mut sniff, mut rx) = Sniff::new(());
        sniff.saw(&settings(&[(0x4, 65_535)]));
        assert_eq!(rx.try_recv(), Ok(Preface::Settings(None)));
        let (mut sniff, mut rx) = Sniff::new(());
        sniff.saw(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        assert_eq!(rx.try_recv(), Ok(Preface::Other));
        let limit = Arc::new(AtomicUsize::new(0));
        assert!(publish(Preface::Settings(None), &limit, 100));
        assert_eq!(limit.load(Ordering::Relaxed), 100);
        assert!(!publish(Preface::Other, &limit, 100));
    }
}

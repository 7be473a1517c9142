//! Response bodies: whole buffers, lists written from the objects' shared
//! bytes (never assembled into one buffer; small ones gathered into 64 KiB
//! frames as the client reads), gzip streamed from those chunks
//! by a blocking task through a bounded channel, and upstream bodies passed
//! through as they arrive.

use std::io::Write;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use tokio::sync::mpsc;

/// Any error a body can fail with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// Every response body kache sends.
pub type ApiBody = BoxBody<Bytes, BoxError>;

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
pub fn chunks(parts: Vec<Bytes>) -> ApiBody {
    let stream = futures_util::stream::unfold(parts.into_iter().peekable(), |mut parts| async move {
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

/// `parts` gzipped as they are read, a piece at a time.
pub fn gzip(parts: Vec<Bytes>) -> ApiBody {
    let (tx, rx) = mpsc::channel::<Result<Bytes, BoxError>>(4);
    tokio::task::spawn_blocking(move || {
        let mut enc = flate2::write::GzEncoder::new(Vec::with_capacity(GZIP_PIECE * 2), flate2::Compression::fast());
        for p in parts {
            // Writing into memory cannot fail.
            let _ = enc.write_all(&p);
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

/// A body streamed from a channel until the sender is dropped.
pub fn channel(rx: mpsc::Receiver<Result<Bytes, BoxError>>) -> ApiBody {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item.map(Frame::data), rx)) });
    StreamBody::new(stream).boxed()
}

//! HTTP/2 as kube-apiserver configures Go's server
//! (`k8s.io/apiserver/pkg/server/secure_serving.go`), over TLS (ALPN) and
//! h2c alike: its stream limit, flow-control windows, frame size and idle
//! timeout. HTTP/1.1 connections are served as hyper serves them.
//!
//! Go also advertises `SETTINGS_ENABLE_CONNECT_PROTOCOL` (WebSockets over
//! HTTP/2); the simulator does not, as it serves WebSockets over HTTP/1.1 only.
//!
//! One difference stays: a client that opens a stream beyond the limit gets
//! `RST_STREAM(REFUSED_STREAM)` from hyper's h2, where Go answers
//! `PROTOCOL_ERROR` once its SETTINGS were acknowledged (`REFUSED_STREAM`
//! only before). Either way the connection stays up; clients that respect
//! the advertised limit see neither.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use hyper_util::rt::TokioExecutor;
use hyper_util::server::conn::auto;
use tokio::sync::watch;

use crate::body::Body;

/// `SETTINGS_MAX_CONCURRENT_STREAMS` when `--http2-max-streams-per-connection`
/// is 0, the apiserver's default: "match http2.initialMaxConcurrentStreams used by clients".
pub const DEFAULT_MAX_STREAMS: u32 = 100;

/// The apiserver's `resourceBody99Percentile` ("at least 99% of serialized
/// resources in surveyed clusters were smaller than 256kb"): its
/// `MaxUploadBufferPerStream` (`SETTINGS_INITIAL_WINDOW_SIZE`) and
/// `MaxReadFrameSize` (`SETTINGS_MAX_FRAME_SIZE`).
const RESOURCE_BODY_99_PERCENTILE: u32 = 256 * 1024;

/// `SETTINGS_MAX_HEADER_LIST_SIZE`: the apiserver's `MaxHeaderBytes` (1 MiB),
/// padded as Go's `adjustHTTP1MaxHeaderSize` pads it (32 bytes for each of 10 fields).
const MAX_HEADER_LIST_SIZE: u32 = (1 << 20) + 10 * 32;

/// The apiserver's `IdleTimeout` ("matches http.DefaultTransport keep-alive timeout").
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The largest flow-control window HTTP/2 allows (RFC 9113 §6.9.1).
const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Sets `builder`'s HTTP/2 side as the apiserver's: `max_streams` streams
/// (0: [`DEFAULT_MAX_STREAMS`]), a 256 KiB window per stream, 256 KiB times
/// the streams for the connection (`MaxUploadBufferPerConnection`; capped at
/// the largest window, where Go's `int32` product would overflow), 256 KiB
/// frames, 1 MiB of headers.
pub fn configure(builder: &mut auto::Builder<TokioExecutor>, max_streams: u32) {
    let streams = if max_streams == 0 { DEFAULT_MAX_STREAMS } else { max_streams };
    builder
        .http2()
        .max_concurrent_streams(streams)
        .initial_stream_window_size(RESOURCE_BODY_99_PERCENTILE)
        .initial_connection_window_size(RESOURCE_BODY_99_PERCENTILE.saturating_mul(streams).min(MAX_WINDOW))
        .max_frame_size(RESOURCE_BODY_99_PERCENTILE)
        .max_header_list_size(MAX_HEADER_LIST_SIZE);
}

/// What Go's idle timer of a connection watches.
#[derive(Debug, Clone, Copy)]
struct Use {
    /// Requests whose response is not done.
    open: usize,
    /// The connection speaks HTTP/2 (ALPN said so, or a request came over it).
    http2: bool,
}

/// The streams of one connection, so that it can be closed as Go closes an
/// HTTP/2 connection that has had no stream open for its idle timeout (the
/// timer stops while a stream is open and restarts when the last one ends).
#[derive(Debug, Clone)]
pub struct Streams(Arc<watch::Sender<Use>>);

impl Streams {
    /// A new connection's, HTTP/2 if ALPN said so.
    pub fn new(http2: bool) -> Self {
        Streams(Arc::new(watch::Sender::new(Use { open: 0, http2 })))
    }

    /// Counts a request open until the returned guard is dropped (with its response body).
    pub fn open(&self, version: http::Version) -> OpenStream {
        self.0.send_modify(|u| {
            u.open += 1;
            u.http2 |= version == http::Version::HTTP_2;
        });
        OpenStream(self.0.clone())
    }

    /// Returns once the connection is HTTP/2 and has had no stream open for
    /// `timeout`; never if `timeout` is zero.
    pub async fn idle(&self, timeout: Duration) {
        if timeout.is_zero() {
            return std::future::pending().await;
        }
        let mut rx = self.0.subscribe();
        loop {
            // `self` keeps the sender alive: the channel cannot close.
            let _ = rx.wait_for(|u| u.http2 && u.open == 0).await;
            if tokio::time::timeout(timeout, rx.changed()).await.is_err() {
                return;
            }
        }
    }
}

/// One open request of a connection; dropping it closes it.
#[derive(Debug)]
pub struct OpenStream(Arc<watch::Sender<Use>>);

impl OpenStream {
    /// `body`, keeping the stream open until it is done or dropped.
    pub fn hold(self, body: Body) -> Body {
        Held { body, _stream: self }.boxed()
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.send_modify(|u| u.open -= 1);
    }
}

struct Held {
    body: Body,
    _stream: OpenStream,
}

impl HttpBody for Held {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

//! HTTP/2 without TLS (h2c, prior knowledge) to a plain-`http` target, as
//! clients speak HTTP/2 to kube-apiserver over TLS: requests share
//! connections of at most [`STREAMS`] streams each, another connection
//! opened when every one is full. kache and the simulator both take h2c on
//! their plain listeners, so 20,000 watches hold 200 sockets, not 20,000.
//!
//! Invariant: a connection carries at most [`STREAMS`] requests whose
//! response is still held — kube-apiserver's limit and Go's initial one,
//! under kache's (200) — so no request waits in h2's queue for another to
//! end: a stream's slot is taken before its request is sent and given back
//! when the request fails or its response body is dropped.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use http::{Request, Response};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http2::{Builder, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use kache::upstream::client::UpBody;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

/// Streams a connection carries at most.
pub const STREAMS: usize = 100;

/// Longest a TCP connect and HTTP/2 handshake may take.
const DIAL: Duration = Duration::from_secs(10);

/// Receive windows as Go's transport opens them: 4 MiB a stream, the
/// connection's large enough that streams never wait for each other.
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 64 << 20;

/// The h2c connections to one server. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Mux {
    authority: String,
    conns: Arc<Mutex<Vec<Arc<Conn>>>>,
}

#[derive(Debug)]
struct Conn {
    sender: SendRequest<UpBody>,
    /// Slots taken.
    used: AtomicUsize,
}

/// A stream's place on its connection, given back when dropped.
#[derive(Debug)]
struct Slot(Arc<Conn>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.used.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Mux {
    /// Connections to `authority` (`host:port`), opened on demand.
    pub fn new(authority: &str) -> Mux {
        Mux { authority: authority.to_string(), conns: Arc::default() }
    }

    /// Sends `req` (an absolute `http` URI) on a connection with a free
    /// slot; the response's body holds the slot.
    pub async fn send(&self, mut req: Request<UpBody>) -> anyhow::Result<Response<Slotted>> {
        *req.version_mut() = http::Version::HTTP_2;
        let slot = self.take().await?;
        let resp = slot.0.sender.clone().send_request(req).await?;
        Ok(resp.map(|inner| Slotted { inner, _slot: slot }))
    }

    /// A slot on the first open connection with one free, or on a new one.
    async fn take(&self) -> anyhow::Result<Slot> {
        let mut conns = self.conns.lock().await;
        conns.retain(|c| !c.sender.is_closed());
        let free =
            conns.iter().find(|c| c.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| (u < STREAMS).then_some(u + 1)).is_ok());
        if let Some(conn) = free {
            return Ok(Slot(conn.clone()));
        }
        let conn = Arc::new(Conn { sender: self.dial().await?, used: AtomicUsize::new(1) });
        conns.push(conn.clone());
        Ok(Slot(conn))
    }

    async fn dial(&self) -> anyhow::Result<SendRequest<UpBody>> {
        let dial = async {
            let tcp = TcpStream::connect(&self.authority).await?;
            tcp.set_nodelay(true)?;
            let (sender, connection) = Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .initial_stream_window_size(STREAM_WINDOW)
                .initial_connection_window_size(CONNECTION_WINDOW)
                .handshake(TokioIo::new(tcp))
                .await?;
            tokio::spawn(connection);
            anyhow::Ok(sender)
        };
        match tokio::time::timeout(DIAL, dial).await {
            Ok(dialled) => dialled.with_context(|| format!("h2c to {}", self.authority)),
            Err(_) => anyhow::bail!("h2c to {}: not connected within {DIAL:?}", self.authority),
        }
    }
}

/// A response body holding its stream's slot until it is dropped.
#[derive(Debug)]
pub struct Slotted {
    inner: Incoming,
    _slot: Slot,
}

impl Body for Slotted {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::{BodyExt, Empty, StreamBody};

    use super::*;

    /// An h2c server whose answers never end, allowing 200 streams a connection (as kache): its address and connections accepted.
    async fn endless() -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (addr, accepted) = (listener.local_addr().unwrap().to_string(), Arc::new(AtomicUsize::new(0)));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::Relaxed);
                let answer = hyper::service::service_fn(|_req| async {
                    let never = futures_util::stream::pending::<Result<Frame<Bytes>, Infallible>>();
                    Ok::<_, Infallible>(Response::new(StreamBody::new(never)))
                });
                let server = hyper::server::conn::http2::Builder::new(TokioExecutor::new()).max_concurrent_streams(200).clone();
                tokio::spawn(async move { server.serve_connection(TokioIo::new(tcp), answer).await });
            }
        });
        (addr, accepted)
    }

    #[tokio::test]
    async fn a_connection_carries_at_most_its_streams_and_a_dropped_answer_frees_one() {
        let (addr, accepted) = endless().await;
        let mux = Mux::new(&addr);
        let get = || Request::get(format!("http://{addr}/watch")).body(Empty::new().map_err(|never| match never {}).boxed()).unwrap();
        let mut held = Vec::new();
        for _ in 0..150 {
            held.push(mux.send(get()).await.unwrap());
        }
        assert_eq!(accepted.load(Ordering::Relaxed), 2, "150 streams on two connections");
        held.truncate(50);
        for _ in 0..150 {
            held.push(mux.send(get()).await.unwrap());
        }
        assert_eq!(accepted.load(Ordering::Relaxed), 2, "dropped answers gave their slots back: 200 streams on two connections");
        held.push(mux.send(get()).await.unwrap());
        assert_eq!(accepted.load(Ordering::Relaxed), 3, "the 201st opens a third");
    }
}

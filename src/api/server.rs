//! The listener: HTTP/1.1 and HTTP/2 on one socket — over TLS (ALPN picks
//! the protocol, client certificates are verified here and handed to the
//! request path) or in plain text (HTTP/1.1 or h2c) — and a graceful stop.
//!
//! Invariants: a client that does not finish its TLS handshake within
//! [`HANDSHAKE_TIMEOUT`] is dropped; every request carries an `Audit-ID`
//! (the client's, else a fresh one, as the apiserver's `WithAuditInit`)
//! and its peer's address ([`Peer`]) into the handler, so what it relays
//! upstream carries the same ID; every answer leaves with that `Audit-ID`
//! and the apiserver's `Cache-Control` unless its handler set them (a
//! relayed answer keeps upstream's); once shutdown begins no connection is
//! accepted, and open ones get the drain period.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::audit::HEADER as AUDIT_ID;
use apimachinery::tls::ClientCertificates;
use http::header::CACHE_CONTROL;
use http::{HeaderValue, Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::body::{ApiBody, BoxError};
use crate::access::Certificate;
use crate::audit::event::new_id;

/// How long a client has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The address a request came from (a request extension).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);

/// The `Cache-Control` of every answer, as the apiserver's
/// `WithCacheControl` filter sets it: each answer is private to its client,
/// so no shared HTTP cache between a client and kache may store one user's
/// answer (a list of Secrets) for another.
const PRIVATE: HeaderValue = HeaderValue::from_static("no-cache, private");

/// How a listener's connections are secured: the TLS acceptor and the CAs
/// of client certificates (`None`: plain HTTP/1.1 or h2c).
pub type Tls = Option<(TlsAcceptor, Option<Arc<ClientCertificates>>)>;

/// What answers a connection's requests, given its client certificate.
pub type Handler = Arc<dyn Fn(Request<Incoming>, Arc<Certificate>) -> BoxFuture<Response<ApiBody>> + Send + Sync>;

/// A boxed, sendable future.
pub type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// Accepts connections on `listener` and answers their requests with
/// `handler` until `shutdown` completes; then calls `stopping`, stops
/// accepting and gives open connections `drain` to finish. With `drain`
/// `None` (a hand-over to the next server on the same listener, which must
/// not close a connection whose request is on its way) the open
/// connections are left open, and returned: dropping the handle closes
/// them gracefully.
pub async fn accept(
    listener: &TcpListener,
    tls: &Tls,
    handler: Handler,
    shutdown: impl std::future::Future<Output = ()>,
    drain: Option<Duration>,
    stopping: impl FnOnce(),
) -> Option<GracefulShutdown> {
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let (handler, watcher, tls) = (handler.clone(), graceful.watcher(), tls.clone());
        tokio::spawn(async move {
            let result = match tls {
                None => serve_connection(stream, peer, handler, watcher, Arc::new(Certificate::None)).await,
                Some((acceptor, clients)) => match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(stream)) => {
                        let certificate = Certificate::of(stream.get_ref().1.peer_certificates(), clients.as_deref());
                        serve_connection(stream, peer, handler, watcher, Arc::new(certificate)).await
                    }
                    Ok(Err(e)) => Err(e.into()),
                    Err(_) => Err("TLS handshake timed out".into()),
                },
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
        });
    }
    stopping();
    let Some(drain) = drain else { return Some(graceful) };
    if tokio::time::timeout(drain, graceful.shutdown()).await.is_err() {
        tracing::info!(?drain, "connections still open after the drain period; closing them");
    }
    None
}

/// `peer`: the client's address; `certificate`: the connection's client certificate.
async fn serve_connection<I>(
    io: I,
    peer: SocketAddr,
    handler: Handler,
    watcher: Watcher,
    certificate: Arc<Certificate>,
) -> Result<(), BoxError>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        let handler = handler.clone();
        let certificate = certificate.clone();
        async move {
            let id = match req.headers().get(AUDIT_ID).filter(|v| !v.is_empty()) {
                Some(id) => id.clone(),
                None => HeaderValue::from_str(new_id().as_str()).unwrap_or(HeaderValue::from_static("")),
            };
            req.headers_mut().insert(AUDIT_ID, id.clone());
            req.extensions_mut().insert(Peer(peer));
            let mut resp = handler(req, certificate).await;
            resp.headers_mut().entry(AUDIT_ID).or_insert(id);
            resp.headers_mut().entry(CACHE_CONTROL).or_insert(PRIVATE);
            Ok::<_, std::convert::Infallible>(resp)
        }
    });
    let conn = auto::Builder::new(TokioExecutor::new()).serve_connection_with_upgrades(TokioIo::new(io), service).into_owned();
    watcher.watch(conn).await
}

/// A listener on `addr` whose accept queue holds what the kernel allows
/// (`net.core.somaxconn`, 4096 by default), as Go's listeners ask for:
/// tokio's default of 1,024 drops the SYNs of a burst of new clients (a
/// relist storm, thousands of watchers at once), which then retry a second
/// later.
pub async fn listen(addr: &str) -> std::io::Result<TcpListener> {
    let addr = tokio::net::lookup_host(addr)
        .await?
        .next()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::AddrNotAvailable, "the address resolves to nothing"))?;
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    // The kernel caps the backlog at somaxconn.
    socket.listen(u32::from(u16::MAX))
}

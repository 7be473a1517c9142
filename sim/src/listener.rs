//! The listening socket: accepts connections, completes TLS (ALPN chooses
//! HTTP/2) or takes them plain (h2c is told by its preface), and serves each
//! with hyper, handing every request to `server::handle`.
//!
//! Invariants: a failed or stalled handshake (10 s) ends only its own
//! connection; an HTTP/2 connection with no stream open for the configured
//! idle timeout is closed with GOAWAY; every answer carries `Cache-Control`
//! (`no-cache, private` unless its handler set one).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

use crate::server::{self, ClientCert};
use crate::state::State;
use crate::{gowrites, http2, request_body};

/// How long a client has to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS acceptor and, when a client CA is configured, what verifies client certificates.
pub type Tls = (tokio_rustls::TlsAcceptor, Option<Arc<apimachinery::tls::ClientCertificates>>);

/// Accepts connections on `listener` and serves each on a task of its own, forever.
pub async fn serve(state: Arc<State>, listener: TcpListener, addr: SocketAddr, tls: Option<Tls>) {
    let server_address = addr.to_string();
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let server_address = server_address.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => serve_connection(state, stream, false, None, server_address).await,
                Some((acceptor, clients)) => {
                    // A failed or stalled handshake only ends this connection.
                    let Ok(Ok(stream)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await else { return };
                    let session = stream.get_ref().1;
                    let http2 = session.alpn_protocol() == Some(b"h2");
                    let client = session.peer_certificates().filter(|c| !c.is_empty()).map(|chain| {
                        let verified = clients.as_ref().is_some_and(|v| v.verify(chain));
                        ClientCert { verified, user: verified.then(|| apimachinery::auth::UserInfo::from_certificate(&chain[0])).flatten() }
                    });
                    if http2 {
                        // Written as Go's server writes: a TLS record and a system call per full DATA frame.
                        serve_connection(state, gowrites::GoWrites::new(stream), true, client, server_address).await
                    } else {
                        serve_connection(state, stream, false, client, server_address).await
                    }
                }
            }
        });
    }
}

/// Serves one connection, HTTP/1.1 or HTTP/2 (`http2`: ALPN chose it; h2c
/// is told by its preface), until the client closes it or, for HTTP/2, it
/// has been idle for the configured timeout.
async fn serve_connection<I>(state: Arc<State>, io: I, http2: bool, client_cert: Option<ClientCert>, server_address: String)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let streams = http2::Streams::new(http2);
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    http2::configure(&mut builder, state.config.http2_max_streams_per_connection);
    let idle_timeout = state.config.http2_idle_timeout;
    let svc = {
        let streams = streams.clone();
        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let state = state.clone();
            let server_address = server_address.clone();
            let client_cert = client_cert.clone();
            let stream = streams.open(req.version());
            async move {
                // The apiserver's `WithAuditInit`: the client's Audit-ID (as sent) or a fresh one, echoed on every answer.
                let id = match req.headers().get(apimachinery::audit::HEADER).filter(|v| !v.is_empty()) {
                    Some(id) => id.clone(),
                    None => {
                        http::HeaderValue::from_str(apimachinery::audit::fresh(rand::random()).as_str()).expect("a UUID is a header value")
                    }
                };
                state.audited(&req, &id);
                let mut resp = server::handle(state, req.map(request_body::Drained::new), server_address, client_cert).await;
                resp.headers_mut().entry(apimachinery::audit::HEADER).or_insert(id);
                // The apiserver's `WithCacheControl` filter: on every answer, unless the handler set one.
                resp.headers_mut().entry(http::header::CACHE_CONTROL).or_insert(http::HeaderValue::from_static("no-cache, private"));
                Ok::<_, std::convert::Infallible>(resp.map(|body| stream.hold(body)))
            }
        })
    };
    // A client that goes away mid-request is not an error of the server.
    // Upgrades (exec, attach, portforward) are handed to the handler through `hyper::upgrade::on`.
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), svc);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        () = streams.idle(idle_timeout) => conn.as_mut().graceful_shutdown(),
    }
    // GOAWAY is sent; with no stream open the connection ends at once.
    let _ = conn.await;
}

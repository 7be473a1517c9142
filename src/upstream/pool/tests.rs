//! The pool against a real HTTPS HTTP/2 server (hyper's) with a stream limit.

use std::net::SocketAddr;

use http_body_util::{BodyExt, Empty, StreamBody};
use hyper::body::Frame;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::*;

/// What the test server saw.
#[derive(Debug, Default)]
struct Seen {
    connections: AtomicUsize,
    /// The most streams one connection had in its handler at once.
    most_at_once: AtomicUsize,
}

/// An HTTPS HTTP/2 server allowing `limit` streams a connection, whose
/// answers send their head and then stay open until `release` turns true.
async fn server(limit: u32) -> (SocketAddr, Arc<Seen>, watch::Sender<bool>, CertificateDer<'static>) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).expect("a certificate");
    let der = cert.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(vec![der.clone()], key))
        .expect("a server config");
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("an address");
    let (seen, release) = (Arc::new(Seen::default()), watch::Sender::new(false));
    let (seen2, release2) = (seen.clone(), release.clone());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen, release) = (acceptor.clone(), seen2.clone(), release2.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                seen.connections.fetch_add(1, Ordering::Relaxed);
                let in_flight = Arc::new(AtomicUsize::new(0));
                let service = hyper::service::service_fn(move |_req| {
                    let n = in_flight.fetch_add(1, Ordering::AcqRel) + 1;
                    seen.most_at_once.fetch_max(n, Ordering::AcqRel);
                    let (in_flight, released) = (in_flight.clone(), release.subscribe());
                    let body = futures_util::stream::unfold(0, move |step| {
                        let (in_flight, mut released) = (in_flight.clone(), released.clone());
                        async move {
                            if step == 1 {
                                let _ = released.wait_for(|r| *r).await;
                                in_flight.fetch_sub(1, Ordering::AcqRel);
                                return None;
                            }
                            Some((Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from_static(b"open"))), 1))
                        }
                    });
                    async move { Ok::<_, std::convert::Infallible>(Response::new(StreamBody::new(body))) }
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .max_concurrent_streams(limit)
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (addr, seen, release, der)
}

fn pool(addr: SocketAddr, ca: CertificateDer<'static>) -> Pool {
    let tls = super::super::tls::client_config(&super::super::tls::TlsMaterial { ca: Some(vec![ca]), ..Default::default() })
        .expect("a client config");
    Pool::new(&format!("https://127.0.0.1:{}", addr.port()).parse().expect("a URI"), tls).expect("a pool")
}

fn get(addr: SocketAddr) -> Request<UpBody> {
    let uri = format!("https://127.0.0.1:{}/api/v1/pods?watch=1", addr.port());
    Request::get(uri).body(Empty::new().map_err(|never| match never {}).boxed()).expect("a request")
}

/// Sends `n` requests at once; returns their open responses once every head is in.
async fn open_all(pool: &Pool, addr: SocketAddr, n: usize) -> Vec<Response<LeasedBody>> {
    let sends = (0..n).map(|_| {
        let pool = pool.clone();
        tokio::spawn(async move { pool.send(get(addr)).await.map(|(resp, slot)| resp.map(|b| LeasedBody::new(b, slot.map(Lease::Http2)))) })
    });
    let heads = futures_util::future::join_all(sends);
    let heads = tokio::time::timeout(Duration::from_secs(10), heads).await.expect("every response head, none waiting for another");
    heads.into_iter().map(|h| h.expect("the task").map_err(|e| format!("{e:?}")).expect("a response")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_beyond_the_stream_limit_open_connections_instead_of_waiting() {
    let (addr, seen, release, ca) = server(100).await;
    let pool = pool(addr, ca);
    let open = open_all(&pool, addr, 250).await;
    assert_eq!(open.len(), 250);
    // Dialled together, each reserved by the requests it carries: exactly the connections needed.
    assert_eq!((seen.connections.load(Ordering::Relaxed), pool.stats().opened.load(Ordering::Relaxed)), (3, 3));
    assert_eq!(seen.most_at_once.load(Ordering::Relaxed), 100);
    assert_eq!(pool.stats().streams.load(Ordering::Relaxed), 250);
    // Bodies that end give their slots back.
    release.send_replace(true);
    for resp in open {
        resp.into_body().collect().await.expect("the body ends");
    }
    assert_eq!(pool.stats().streams.load(Ordering::Relaxed), 0);
    // The next requests reuse the open connections.
    let again = open_all(&pool, addr, 150).await;
    drop(again);
    assert_eq!(pool.stats().opened.load(Ordering::Relaxed), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_allowing_fewer_streams_than_assumed_gets_no_more_and_nothing_hangs() {
    let (addr, seen, release, ca) = server(7).await;
    let pool = pool(addr, ca);
    // Reserved while the pool still assumed 100; the preface says 7, so the rest go elsewhere.
    let open = open_all(&pool, addr, 60).await;
    assert_eq!(open.len(), 60);
    assert!(seen.most_at_once.load(Ordering::Relaxed) <= 7);
    assert_eq!(pool.inner.assumed.load(Ordering::Relaxed), 7, "the server's limit is learned");
    // Once learned, new connections are dialled for it from the start.
    let opened = pool.stats().opened.load(Ordering::Relaxed);
    let more = open_all(&pool, addr, 21).await;
    assert_eq!(pool.stats().opened.load(Ordering::Relaxed) - opened, 3);
    release.send_replace(true);
    drop((open, more));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_responses_give_their_slots_back() {
    let (addr, _seen, _release, ca) = server(100).await;
    let pool = pool(addr, ca);
    for _ in 0..3 {
        let open = open_all(&pool, addr, 100).await;
        assert_eq!(pool.stats().streams.load(Ordering::Relaxed), 100);
        drop(open);
        assert_eq!(pool.stats().streams.load(Ordering::Relaxed), 0);
    }
    // Reset streams freed the one connection each time.
    assert_eq!(pool.stats().opened.load(Ordering::Relaxed), 1);
}

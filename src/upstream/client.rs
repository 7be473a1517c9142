//! The HTTP client to the apiserver, shared by everything kache sends
//! upstream (reflectors, probes, catch-up watches, reviews, pass-through)
//! and by the load test: kache's credentials on every request, URLs built
//! under the server's base path, and connections as Go's transport keeps
//! them — over TLS, HTTP/2 on as many connections as the server's stream
//! limit needs ([`super::pool`]); HTTP/1.1 when the server is plain HTTP
//! or ALPN chooses it (a connection per request in flight), and for
//! connection upgrades (exec, attach, port-forward), an HTTP/1.1 mechanism.
//! Relays choose their lane ([`super::lane`]): a small request a kept-alive
//! HTTP/1.1 connection, a whole collection a dedicated one, while one is free.
//! No request waits for another to end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, HeaderValue};
use http::uri::PathAndQuery;
use http::{Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::UpstreamError;
use super::bearer::Bearer;
use super::connect::Credentials;
use super::costs::{Costs, Measure, Meter, Metered};
pub use super::lane::Lane;
use super::lane::Lanes;
use super::pool::{Lease, LeasedBody, Pool, PoolError, PoolStats};
use super::tls::client_config;

/// A response body from the apiserver: it holds its HTTP/2 stream's place
/// until it ends, and a document's throughput is measured as it goes.
pub type Body = Metered<LeasedBody>;

pub use super::pool::{BoxError, UpBody};

/// Bytes read from an HTTP/1.1 connection at a time: a relayed body comes
/// in frames of up to this size, so a large list costs few reads and writes.
const READ_BUFFER: usize = 256 * 1024;

/// The most a non-streaming response (discovery, a list page) may hold.
const MAX_BODY: usize = 1 << 30;

/// How many times a request the server did not process (its stream
/// refused, or ended by GOAWAY before the server read it) is sent again,
/// when its body can be (Go's transport retries such requests too).
const RESEND: usize = 3;

/// The apiserver's client: connections plus credentials. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Client {
    base: Uri,
    bearer: Bearer,
    /// HTTP/2 connections, for an HTTPS server.
    h2: Option<Pool>,
    /// Set once the server chose HTTP/1.1 by ALPN: everything goes to `http1`.
    http1_only: Arc<AtomicBool>,
    /// HTTP/1.1 connections, a connection per request in flight, pooled.
    http1: HyperClient<HttpsConnector<HttpConnector>, UpBody>,
    /// What reads from the apiserver cost, measured on the documents it sends.
    costs: Arc<Costs>,
    /// The lanes relays take besides HTTP/2 ([`Lane::KeptAlive`], [`Lane::Dedicated`]), for an HTTPS server.
    lanes: Option<Arc<Lanes>>,
}

impl Client {
    /// Opens nothing yet: connections are made on demand and pooled.
    pub fn new(creds: &Credentials) -> Result<Client, UpstreamError> {
        let tls = client_config(&creds.tls)?;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(Duration::from_secs(10)));
        let http1 =
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls.clone()).https_or_http().enable_http1().wrap_connector(tcp);
        let http1 = HyperClient::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(super::pool::IDLE)
            .http1_read_buf_exact_size(READ_BUFFER)
            .build(http1);
        let (h2, lanes) = match creds.server.scheme_str() {
            Some("https") => (Some(Pool::new(&creds.server, tls.clone())?), Some(Arc::new(Lanes::new(&creds.server, tls)?))),
            _ => (None, None),
        };
        Ok(Client {
            base: creds.server.clone(),
            bearer: creds.bearer.clone(),
            h2,
            http1_only: Arc::default(),
            http1,
            costs: Arc::default(),
            lanes,
        })
    }

    /// What reads cost, upstream and (recorded by the API) from memory.
    pub fn costs(&self) -> &Arc<Costs> {
        &self.costs
    }

    /// Whether the answer to `req` is a document (not a stream) whose body
    /// measures upstream's throughput: not one that may come in CBOR, which
    /// the apiserver encodes whole before its head (no streaming encoder:
    /// 194 MB of pods, head at 3.9 s, end at 4.3 s), so the time from its
    /// head says nothing of what it took.
    fn measures(req: &Request<UpBody>) -> bool {
        let cbor = req.headers().get(http::header::ACCEPT).is_some_and(|a| a.as_bytes().windows(16).any(|w| w == b"application/cbor"));
        req.method() == http::Method::GET && !cbor && !apimachinery::params::is_stream(req.uri().path(), req.uri().query().unwrap_or(""))
    }

    /// A meter for an answer whose head just arrived, if it measures: from
    /// the head on, so what the apiserver does before it answers (gathering
    /// the list, waiting for its cache to be fresh: a round trip both sources
    /// pay) is not taken for slow transfer. It sends the head once it has
    /// encoded its first 4 KiB (Go's HTTP/2 handler buffer), then streams.
    fn meter(&self, measures: bool) -> Option<Meter> {
        measures.then(|| Meter::new(self.costs.clone(), Measure::Transfer, std::time::Instant::now()))
    }

    /// The HTTP/2 connections' counters and how many are open (`None`: no HTTP/2).
    pub fn connections(&self) -> Option<(&PoolStats, usize)> {
        self.h2.as_ref().filter(|_| !self.http1_only.load(Ordering::Relaxed)).map(|p| (p.stats(), p.connections()))
    }

    /// The lanes relays take besides HTTP/2 (`None`: a plain-HTTP server, where every request is HTTP/1.1).
    pub fn lanes(&self) -> Option<&Lanes> {
        self.lanes.as_deref()
    }

    /// The apiserver URL for `path_and_query` (which starts with `/`).
    pub fn uri(&self, path_and_query: &str) -> Result<Uri, UpstreamError> {
        let prefix = self.base.path().trim_end_matches('/');
        let pq: PathAndQuery = format!("{prefix}{path_and_query}")
            .parse()
            .map_err(|e| UpstreamError::Config(format!("bad upstream path {path_and_query:?}: {e}")))?;
        let mut parts = self.base.clone().into_parts();
        parts.path_and_query = Some(pq);
        Uri::from_parts(parts).map_err(|e| UpstreamError::Config(format!("bad upstream URL: {e}")))
    }

    /// Sends `req` with kache's credentials in place of any the request had.
    pub async fn send(&self, req: Request<UpBody>) -> Result<Response<Body>, UpstreamError> {
        self.send_on(req, Lane::Http2).await
    }

    /// [`Client::send`] on `lane`.
    pub async fn send_on(&self, req: Request<UpBody>, lane: Lane) -> Result<Response<Body>, UpstreamError> {
        let mut req = self.credentials(req);
        let measures = Self::measures(&req);
        let h2 = self.h2.as_ref().filter(|_| !self.http1_only.load(Ordering::Relaxed));
        if lane == Lane::Dedicated
            && h2.is_some()
            && let Some(lanes) = &self.lanes
            && let Some(permit) = lanes.take_dedicated()
        {
            let (resp, dedicated) = lanes.send(req, permit).await?;
            return Ok(resp.map(|b| Metered::new(LeasedBody::new(b, Some(Lease::Dedicated(dedicated))), self.meter(measures))));
        }
        if lane == Lane::KeptAlive
            && h2.is_some()
            && let Some(permit) = self.lanes.as_ref().and_then(|lanes| lanes.take_kept_alive())
        {
            return self.send_http1(req, measures, Some(Lease::KeptAlive(permit))).await;
        }
        if let Some(pool) = h2 {
            // What it takes to send a body-less request again.
            let again =
                hyper::body::Body::is_end_stream(req.body()).then(|| (req.method().clone(), req.uri().clone(), req.headers().clone()));
            let mut resent = 0;
            loop {
                match pool.send(req).await {
                    Ok((resp, slot)) => {
                        return Ok(resp.map(|b| Metered::new(LeasedBody::new(b, slot.map(Lease::Http2)), self.meter(measures))));
                    }
                    Err(PoolError::NotHttp2(unsent)) => {
                        tracing::info!(upstream = %self.base, "the apiserver chose HTTP/1.1: a connection per request from now on");
                        self.http1_only.store(true, Ordering::Relaxed);
                        req = *unsent;
                        break;
                    }
                    Err(PoolError::Connect(e)) => return Err(UpstreamError::Transport(Box::new(e))),
                    Err(PoolError::Request(e)) => match &again {
                        Some((method, uri, headers)) if resent < RESEND && unprocessed(&e) => {
                            resent += 1;
                            let mut next = Request::new(Empty::new().map_err(|never| match never {}).boxed());
                            (*next.method_mut(), *next.uri_mut(), *next.headers_mut()) = (method.clone(), uri.clone(), headers.clone());
                            req = next;
                        }
                        _ => return Err(UpstreamError::Transport(Box::new(e))),
                    },
                }
            }
        }
        self.send_http1(req, measures, None).await
    }

    /// Sends a connection-upgrade request over HTTP/1.1, with kache's credentials.
    pub async fn send_upgrade(&self, req: Request<UpBody>) -> Result<Response<Body>, UpstreamError> {
        self.send_http1(self.credentials(req), false, None).await
    }

    /// Sends `req` over a kept-alive HTTP/1.1 connection; its body holds `lease` until it ends.
    async fn send_http1(&self, mut req: Request<UpBody>, measures: bool, lease: Option<Lease>) -> Result<Response<Body>, UpstreamError> {
        *req.version_mut() = http::Version::HTTP_11;
        let resp = self.http1.request(req).await.map_err(|e| UpstreamError::Transport(Box::new(e)))?;
        Ok(resp.map(|b| Metered::new(LeasedBody::new(b, lease), self.meter(measures))))
    }

    /// `req` with kache's credentials in place of any it had.
    fn credentials(&self, mut req: Request<UpBody>) -> Request<UpBody> {
        req.headers_mut().remove(AUTHORIZATION);
        if let Some(v) = self.bearer.header() {
            req.headers_mut().insert(AUTHORIZATION, v);
        }
        req
    }

    /// A GET of `path_and_query` accepting JSON.
    pub async fn get(&self, path_and_query: &str) -> Result<Response<Body>, UpstreamError> {
        self.get_as(path_and_query, "application/json").await
    }

    /// A GET of `path_and_query` accepting `accept`.
    pub async fn get_as(&self, path_and_query: &str, accept: &'static str) -> Result<Response<Body>, UpstreamError> {
        let req = Request::get(self.uri(path_and_query)?)
            .header(http::header::ACCEPT, HeaderValue::from_static(accept))
            .body(Empty::new().map_err(|never| match never {}).boxed())
            .map_err(|e| UpstreamError::Config(e.to_string()))?;
        self.send(req).await
    }

    /// A POST of a JSON `body` whose whole answer is read (a review); a
    /// non-2xx answer is an [`UpstreamError::Status`].
    pub async fn post_json(&self, path: &str, body: Vec<u8>) -> Result<Bytes, UpstreamError> {
        let req = Request::post(self.uri(path)?)
            .header(http::header::ACCEPT, HeaderValue::from_static("application/json"))
            .header(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(http_body_util::Full::new(Bytes::from(body)).map_err(|never| match never {}).boxed())
            .map_err(|e| UpstreamError::Config(e.to_string()))?;
        let resp = self.send(req).await?;
        let status = resp.status();
        let body = Limited::new(resp.into_body(), MAX_BODY).collect().await.map_err(UpstreamError::Transport)?.to_bytes();
        if status.is_success() { Ok(body) } else { Err(UpstreamError::status(status, &body)) }
    }

    /// A GET whose whole body is read; a non-2xx answer is an [`UpstreamError::Status`].
    pub async fn get_bytes(&self, path_and_query: &str) -> Result<Bytes, UpstreamError> {
        self.get_bytes_as(path_and_query, "application/json").await
    }

    /// [`Client::get_bytes`] accepting `accept` (a metadata-only list, say).
    pub async fn get_bytes_as(&self, path_and_query: &str, accept: &'static str) -> Result<Bytes, UpstreamError> {
        let resp = self.get_as(path_and_query, accept).await?;
        let status = resp.status();
        let body = Limited::new(resp.into_body(), MAX_BODY).collect().await.map_err(UpstreamError::Transport)?.to_bytes();
        if status.is_success() { Ok(body) } else { Err(UpstreamError::status(status, &body)) }
    }
}

/// Whether the server cannot have processed the request: its stream was
/// refused, or a GOAWAY ended it before the server read it.
fn unprocessed(e: &hyper::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(h2) = s.downcast_ref::<h2::Error>() {
            return h2.reason() == Some(h2::Reason::REFUSED_STREAM) || (h2.is_go_away() && h2.is_remote());
        }
        source = s.source();
    }
    false
}

impl UpstreamError {
    /// The error for a non-2xx answer with a (possibly `Status`) body.
    pub fn status(code: StatusCode, body: &[u8]) -> UpstreamError {
        let message = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned());
        UpstreamError::Status { code: code.as_u16(), message }
    }
}

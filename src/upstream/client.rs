//! One pooled HTTP client to the apiserver: HTTP/2 when TLS negotiates it
//! (HTTP/1.1 otherwise), kache's credentials on every request, and URLs
//! built under the server's base path. Shared by the reflectors and the
//! pass-through proxy.

use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, HeaderValue};
use http::uri::PathAndQuery;
use http::{Request, Response, StatusCode, Uri};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::UpstreamError;
use super::auth::Auth;
use super::connect::Credentials;
use super::tls::client_config;

/// A request body of any kind.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The body type the client sends.
pub type UpBody = BoxBody<Bytes, BoxError>;

/// Bytes read from an HTTP/1.1 connection at a time: a relayed body comes
/// in frames of up to this size, so a large list costs few reads and writes.
const READ_BUFFER: usize = 256 * 1024;

/// The most a non-streaming response (discovery, a list page) may hold.
const MAX_BODY: usize = 1 << 30;

/// The apiserver connection pool plus credentials.
#[derive(Debug, Clone)]
pub struct Client {
    base: Uri,
    auth: Auth,
    http: HyperClient<HttpsConnector<HttpConnector>, UpBody>,
    /// HTTP/1.1 only: connection upgrades (exec, attach, port-forward) are
    /// an HTTP/1.1 mechanism, so ALPN must not pick HTTP/2 for them.
    http1: HyperClient<HttpsConnector<HttpConnector>, UpBody>,
}

impl Client {
    /// Opens nothing yet: connections are made on demand and pooled.
    pub fn new(creds: &Credentials) -> Result<Client, UpstreamError> {
        let tls = client_config(&creds.tls)?;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(Duration::from_secs(10)));
        let connector = || hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls.clone()).https_or_http();
        let all_versions = connector().enable_all_versions().wrap_connector(tcp.clone());
        let http1 = connector().enable_http1().wrap_connector(tcp);
        let mut builder = HyperClient::builder(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .http1_read_buf_exact_size(READ_BUFFER);
        let http1 = builder.build(http1);
        let http = builder.http2_keep_alive_interval(Duration::from_secs(30)).http2_keep_alive_while_idle(true).build(all_versions);
        Ok(Client { base: creds.server.clone(), auth: creds.auth.clone(), http, http1 })
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
    pub async fn send(&self, req: Request<UpBody>) -> Result<Response<Incoming>, UpstreamError> {
        self.send_with(&self.http, req).await
    }

    /// Sends a connection-upgrade request over HTTP/1.1, with kache's credentials.
    pub async fn send_upgrade(&self, req: Request<UpBody>) -> Result<Response<Incoming>, UpstreamError> {
        self.send_with(&self.http1, req).await
    }

    async fn send_with(
        &self,
        http: &HyperClient<HttpsConnector<HttpConnector>, UpBody>,
        mut req: Request<UpBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        req.headers_mut().remove(AUTHORIZATION);
        if let Some(v) = self.auth.header() {
            req.headers_mut().insert(AUTHORIZATION, v);
        }
        http.request(req).await.map_err(|e| UpstreamError::Transport(error_chain(&e)))
    }

    /// A GET of `path_and_query` accepting JSON.
    pub async fn get(&self, path_and_query: &str) -> Result<Response<Incoming>, UpstreamError> {
        let req = Request::get(self.uri(path_and_query)?)
            .header(http::header::ACCEPT, HeaderValue::from_static("application/json"))
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
        let body =
            Limited::new(resp.into_body(), MAX_BODY).collect().await.map_err(|e| UpstreamError::Transport(e.to_string()))?.to_bytes();
        if status.is_success() { Ok(body) } else { Err(UpstreamError::status(status, &body)) }
    }

    /// A GET whose whole body is read; a non-2xx answer is an [`UpstreamError::Status`].
    pub async fn get_bytes(&self, path_and_query: &str) -> Result<Bytes, UpstreamError> {
        let resp = self.get(path_and_query).await?;
        let status = resp.status();
        let body =
            Limited::new(resp.into_body(), MAX_BODY).collect().await.map_err(|e| UpstreamError::Transport(e.to_string()))?.to_bytes();
        if status.is_success() { Ok(body) } else { Err(UpstreamError::status(status, &body)) }
    }
}

/// An error and its sources on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
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

//! Many concurrent watch streams from one test: an async HTTP/1.1 client
//! that collects a watch's frames as raw lines (so kache's frames can be
//! compared with the simulator's byte for byte), and helpers that read a
//! frame's type and revision without parsing the object.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A client for many concurrent watches (one connection each).
pub type Watcher = Client<HttpConnector, Empty<Bytes>>;

/// `host:port` of a process's URL.
pub fn addr(url: &str) -> &str {
    url.split("://").nth(1).expect("a URL with a scheme")
}

/// An h2c connection (prior knowledge) to `url`, driven in the background
/// until the server closes it: many streams on one connection.
pub async fn h2c(url: &str) -> (hyper::client::conn::http2::SendRequest<Empty<Bytes>>, tokio::task::JoinHandle<hyper::Result<()>>) {
    let tcp = tokio::net::TcpStream::connect(addr(url)).await.expect("the server accepts");
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), hyper_util::rt::TokioIo::new(tcp)).await.expect("an HTTP/2 handshake");
    (sender, tokio::spawn(conn))
}

/// A new client.
pub fn client() -> Watcher {
    Client::builder(TokioExecutor::new()).pool_max_idle_per_host(0).build_http()
}

/// One watch's answer: the status and every line of the stream, each without its newline.
#[derive(Debug, Clone)]
pub struct Lines {
    pub status: u16,
    pub lines: Vec<Bytes>,
}

/// Runs the watch at `url` until its stream ends (or `limit` passes) and returns its lines.
pub async fn watch(client: &Watcher, url: &str, limit: Duration) -> Lines {
    watch_accepting(client, url, None, limit).await
}

/// [`watch`] with an `Accept` header.
pub async fn watch_accepting(client: &Watcher, url: &str, accept: Option<&str>, limit: Duration) -> Lines {
    let mut req = hyper::Request::get(url);
    if let Some(accept) = accept {
        req = req.header("accept", accept);
    }
    let req = req.body(Empty::new()).unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let resp = client.request(req).await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let mut lines = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) | Ok(None) => break,
            Ok(Some(Err(e))) => panic!("{url}: the stream broke: {e}"),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else { continue };
        buf.extend_from_slice(&data);
        while let Some(at) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=at).collect();
            lines.push(Bytes::copy_from_slice(&line[..line.len() - 1]));
        }
    }
    assert!(buf.iter().all(u8::is_ascii_whitespace), "{url}: the stream ended inside a frame");
    Lines { status, lines }
}

/// A frame's `type`.
pub fn frame_type(line: &[u8]) -> &str {
    let rest = line.strip_prefix(b"{\"type\":\"").unwrap_or_else(|| panic!("not a watch frame: {}", String::from_utf8_lossy(line)));
    let end = rest.iter().position(|b| *b == b'"').expect("a closed type");
    std::str::from_utf8(&rest[..end]).expect("ASCII")
}

/// A frame's object's `metadata.resourceVersion` (its first `resourceVersion`).
pub fn frame_rv(line: &[u8]) -> u64 {
    let key = b"\"resourceVersion\":\"";
    let at = line.windows(key.len()).position(|w| w == key).unwrap_or_else(|| panic!("no revision in {}", String::from_utf8_lossy(line)));
    let digits: Vec<u8> = line[at + key.len()..].iter().take_while(|b| b.is_ascii_digit()).copied().collect();
    String::from_utf8(digits).expect("digits").parse().expect("a revision")
}

/// Whether a frame is a BOOKMARK.
pub fn is_bookmark(line: &[u8]) -> bool {
    line.starts_with(b"{\"type\":\"BOOKMARK\"")
}

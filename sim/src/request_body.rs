//! Request bodies a handler left unread are drained as Go's `net/http`
//! server drains them, so a client still writing its body reads the answer
//! instead of a reset.
//!
//! kube-apiserver answers many requests without reading their bodies (a 404
//! path, a 405 method, a 401, the rest of a body past its 3 MiB limit). Go's
//! server then reads and discards up to 256 KiB of what is left
//! (`maxPostHandlerReadBytes`) and keeps the connection; past that it closes
//! the connection, but only after a lingering half-close (`rstAvoidanceDelay`,
//! 500 ms) in which the client's writes still land. hyper, left alone, closes
//! at once when a handler drops an unread body, and a client whose body was
//! not all written yet gets a broken pipe or a reset instead of the Status.
//!
//! [`Drained`] wraps each request's body; dropped before its end, it hands the
//! rest to a task that discards 256 KiB, and after that discards for at most
//! 500 ms more before it lets hyper close the connection. Invariants: the
//! task reads into nothing it keeps, so memory stays bounded whatever a
//! client sends, and it ends within 30 s and the linger.

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// What Go discards of an unread body before it gives up on the connection.
const DISCARD_BYTES: u64 = 256 * 1024;
/// How long Go lingers, half-closed, before it closes a connection that had
/// more unread body than it discards.
const LINGER: Duration = Duration::from_millis(500);
/// How long a client may take to send what is discarded.
const STALLED: Duration = Duration::from_secs(30);

/// A request body that drains what is left of itself when dropped.
#[derive(Debug)]
pub struct Drained(Option<Incoming>);

impl Drained {
    pub fn new(body: Incoming) -> Self {
        Self(Some(body))
    }
}

impl Body for Drained {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.0.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.0.as_ref().map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

impl Drop for Drained {
    fn drop(&mut self) {
        let Some(body) = self.0.take().filter(|b| !b.is_end_stream()) else { return };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(discard(body));
        }
    }
}

/// Reads `body` into nothing: 256 KiB (a client that stops sending loses
/// its connection after [`STALLED`]), then whatever arrives in the linger.
async fn discard(mut body: Incoming) {
    let mut read = 0u64;
    let first = async {
        while read <= DISCARD_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => read += frame.data_ref().map_or(0, |d| d.len() as u64),
                Some(Err(_)) | None => return false,
            }
        }
        true
    };
    if !matches!(tokio::time::timeout(STALLED, first).await, Ok(true)) {
        return;
    }
    let _ = tokio::time::timeout(LINGER, async { while let Some(Ok(_)) = body.frame().await {} }).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers before reading a body of `len` bytes, sent by a
    /// client that writes it all before it reads: the client reads the answer.
    async fn answer_to_an_unread_body(len: usize) -> (String, tokio::net::TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let (io, _) = listener.accept().await.expect("accept");
            let svc = hyper::service::service_fn(|req: hyper::Request<Incoming>| async move {
                let _unread = req.map(Drained::new);
                Ok::<_, std::convert::Infallible>(hyper::Response::new(http_body_util::Full::new(Bytes::from_static(b"answered"))))
            });
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(io), svc).await;
        });
        let mut client = tokio::net::TcpStream::connect(address).await.expect("connect");
        let head = format!("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: {len}\r\n\r\n");
        client.write_all(head.as_bytes()).await.expect("head");
        // The server answers between the head and the body.
        tokio::time::sleep(Duration::from_millis(50)).await;
        client.write_all(&vec![b'x'; len]).await.expect("the body is written, not reset");
        let mut answer = vec![0; 4096];
        let n = client.read(&mut answer).await.expect("the answer is read, not reset");
        (String::from_utf8_lossy(&answer[..n]).into_owned(), client)
    }

    #[tokio::test]
    async fn a_small_unread_body_is_discarded_the_answer_read_and_the_connection_kept() {
        let (answer, mut client) = answer_to_an_unread_body(100 * 1024).await;
        assert!(answer.ends_with("answered"), "{answer}");
        client.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await.expect("a second request");
        let mut second = vec![0; 4096];
        let n = client.read(&mut second).await.expect("the second answer");
        assert!(String::from_utf8_lossy(&second[..n]).ends_with("answered"), "the connection was kept");
    }

    #[tokio::test]
    async fn a_large_unread_body_lands_in_the_linger_and_the_answer_is_read() {
        let (answer, _) = answer_to_an_unread_body(1024 * 1024).await;
        assert!(answer.ends_with("answered"), "{answer}");
    }
}

//! `pods/portforward` sessions: the `portforward.k8s.io` protocol over SPDY,
//! reached either through a plain `SPDY/3.1` upgrade or tunnelled in the
//! binary messages of a WebSocket that negotiated
//! `SPDY/3.1+portforward.k8s.io` (what kubectl 1.32 tries first).
//!
//! For each forwarded connection the client opens two streams with the same
//! `requestid` header: `streamtype: error` and `streamtype: data`, with the
//! remote `port`. Every port of the simulated pod is an echo server: data
//! comes back on the data stream as it arrives; when the client ends the data
//! stream the server ends it too, then ends the paired error stream without an
//! error (the client waits for both).
//!
//! Invariants: every SYN_STREAM is answered with a SYN_REPLY before any data
//! on that stream; frames for unknown streams are dropped; a protocol error
//! ends the connection, never the process.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::spdy::{self, Frame};

/// The stream protocol (`X-Stream-Protocol-Version`) of port forwarding.
pub const PROTOCOL: &str = "portforward.k8s.io";
/// The WebSocket subprotocol that tunnels SPDY port forwarding.
pub const TUNNEL_PROTOCOL: &str = "SPDY/3.1+portforward.k8s.io";

/// How long the client has to close the tunnel after the SPDY session ends.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// What the reader asks the writer to send.
#[derive(Debug)]
enum Out {
    Reply(u32),
    Data { stream_id: u32, fin: bool, data: Bytes },
    Ping(u32),
}

/// A stream the client opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Data,
    Error,
}

/// Serves one SPDY port-forward session on `io` until either side ends it.
pub async fn serve<S: AsyncRead + AsyncWrite>(io: S) {
    let (r, w) = tokio::io::split(io);
    let (tx, mut rx) = mpsc::channel::<Out>(64);
    let read = async move {
        let mut reader = spdy::Reader::new(BufReader::new(r));
        let mut streams: HashMap<u32, Kind> = HashMap::new();
        // requestid → the error stream to end with its data stream.
        let mut error_streams: HashMap<String, u32> = HashMap::new();
        // request id of each data stream.
        let mut requests: HashMap<u32, String> = HashMap::new();
        while let Ok(Some(frame)) = reader.next().await {
            let mut out = Vec::new();
            match frame {
                Frame::SynStream { stream_id, headers, .. } => {
                    let header = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
                    let kind = if header("streamtype").as_deref() == Some("error") { Kind::Error } else { Kind::Data };
                    let request = header("requestid").unwrap_or_default();
                    if kind == Kind::Error {
                        error_streams.insert(request, stream_id);
                    } else {
                        requests.insert(stream_id, request);
                    }
                    streams.insert(stream_id, kind);
                    out.push(Out::Reply(stream_id));
                }
                Frame::Data { stream_id, fin, data } => {
                    if streams.get(&stream_id) == Some(&Kind::Data) {
                        if !data.is_empty() {
                            out.push(Out::Data { stream_id, fin: false, data });
                        }
                        if fin {
                            out.push(Out::Data { stream_id, fin: true, data: Bytes::new() });
                            let error = requests.remove(&stream_id).and_then(|r| error_streams.remove(&r));
                            if let Some(error) = error {
                                out.push(Out::Data { stream_id: error, fin: true, data: Bytes::new() });
                            }
                        }
                    }
                }
                Frame::Reset { stream_id } => {
                    streams.remove(&stream_id);
                    requests.remove(&stream_id);
                }
                // Odd ids are the client's pings; even ones would be answers to ours.
                Frame::Ping { id } if id % 2 == 1 => out.push(Out::Ping(id)),
                Frame::GoAway => break,
                Frame::Ping { .. } | Frame::Skipped => {}
            }
            for o in out {
                if tx.send(o).await.is_err() {
                    return;
                }
            }
        }
    };
    let write = async move {
        let mut writer = spdy::Writer::new(w);
        while let Some(o) = rx.recv().await {
            let sent = match o {
                Out::Reply(id) => writer.reply(id).await,
                Out::Data { stream_id, fin, data } => writer.data(stream_id, fin, &data).await,
                Out::Ping(id) => writer.ping(id).await,
            };
            if sent.is_err() {
                return;
            }
        }
    };
    tokio::join!(read, write);
}

/// Serves a session tunnelled in a WebSocket: binary messages carry the SPDY
/// byte stream in both directions.
pub async fn serve_tunnel<S: AsyncRead + AsyncWrite + Unpin>(ws: WebSocketStream<S>) {
    let (mut sink, mut source) = ws.split();
    let (near, far) = tokio::io::duplex(64 * 1024);
    let (mut far_read, mut far_write) = tokio::io::split(far);
    let inbound = async move {
        while let Some(Ok(msg)) = source.next().await {
            let data = match msg {
                Message::Binary(b) => b,
                Message::Close(_) => break,
                _ => continue,
            };
            if far_write.write_all(&data).await.is_err() {
                break;
            }
        }
        let _ = far_write.shutdown().await;
    };
    let outbound = async move {
        let mut buf = vec![0u8; 32 * 1024];
        while let Ok(n @ 1..) = far_read.read(&mut buf).await {
            if sink.send(Message::Binary(Bytes::copy_from_slice(&buf[..n]))).await.is_err() {
                return;
            }
        }
        let _ = sink.send(Message::Close(Some(CloseFrame { code: CloseCode::Normal, reason: "".into() }))).await;
    };
    let mut inbound = std::pin::pin!(inbound);
    // When the client closes the tunnel first, the session is dropped with it.
    let finished = tokio::select! {
        () = &mut inbound => false,
        ((), ()) = async { tokio::join!(serve(near), outbound) } => true,
    };
    if finished {
        let _ = tokio::time::timeout(CLOSE_GRACE, inbound).await;
    }
}

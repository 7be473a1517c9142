//! The WebSocket remote-command protocols of `pods/exec` and `pods/attach`
//! (`v5.channel.k8s.io` and `v4.channel.k8s.io`), as kube-apiserver speaks
//! them to kubectl: every binary message starts with a channel byte — 0 stdin,
//! 1 stdout, 2 stderr, 3 error (one `metav1.Status` at the end), 4 terminal
//! resize — and v5 adds 255, "close channel N", with which the client ends
//! stdin.
//!
//! One session owns one upgraded connection. Invariants: the status goes on
//! channel 3 after all output, then a normal close; a client that goes away
//! cancels the command; client messages are never trusted to be well formed
//! (unknown channels, resizes and text messages are ignored).

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::container::{self, Fd, Stdio};

/// The WebSocket subprotocols served, in the server's order of preference.
pub const PROTOCOLS: [&str; 2] = [V5, V4];
const V5: &str = "v5.channel.k8s.io";
const V4: &str = "v4.channel.k8s.io";

const STDIN: u8 = 0;
const ERROR: u8 = 3;
const CLOSE: u8 = 255;

/// How long the client has to answer the closing handshake.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The streams a client asked for (`PodExecOptions` / `PodAttachOptions`).
#[derive(Debug, Clone, Copy)]
pub struct Streams {
    /// `stdin`: the client sends standard input.
    pub stdin: bool,
    /// `stdout`: the client wants standard output.
    pub stdout: bool,
    /// `stderr`: the client wants standard error (never with `tty`).
    pub stderr: bool,
    /// `tty`: one terminal; standard error is written to standard output.
    pub tty: bool,
}

/// What runs in the container.
#[derive(Debug)]
pub enum Job {
    /// `exec`: a command of the simulated container.
    Exec {
        /// The pod's name (what `hostname` prints).
        pod: String,
        /// The command and its arguments.
        argv: Vec<String>,
    },
    /// `attach`: the container's main process.
    Attach {
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        pod: String,
    },
}

/// Serves one session on an upgraded connection that negotiated `protocol`
/// (one of [`PROTOCOLS`]).
pub async fn serve<S>(ws: WebSocketStream<S>, protocol: &str, streams: Streams, job: Job)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let close_channel = protocol == V5;
    let (mut sink, mut source) = ws.split();
    let (stdin_tx, stdin) = mpsc::channel::<Bytes>(8);
    let (out, mut out_rx) = mpsc::channel::<(Fd, Bytes)>(8);
    // Without stdin the command sees end of input at once.
    let mut stdin_tx = streams.stdin.then_some(stdin_tx);

    let reader = async {
        while let Some(Ok(msg)) = source.next().await {
            let Message::Binary(data) = msg else { continue };
            match data.first() {
                Some(&STDIN) => {
                    if let Some(tx) = &stdin_tx
                        && tx.send(data.slice(1..)).await.is_err()
                    {
                        stdin_tx = None;
                    }
                }
                Some(&CLOSE) if close_channel && data.get(1) == Some(&STDIN) => stdin_tx = None,
                _ => {}
            }
        }
    };
    let session = async {
        let command = async {
            let io = Stdio { stdin, out };
            match &job {
                Job::Exec { pod, argv } => container::exec(pod, argv, io).await,
                Job::Attach { namespace, pod } => container::attach(namespace, pod, io).await,
            }
        };
        let forward = async {
            while let Some((fd, data)) = out_rx.recv().await {
                let fd = if streams.tty { Fd::Stdout } else { fd };
                let wanted = match fd {
                    Fd::Stdout => streams.stdout,
                    Fd::Stderr => streams.stderr,
                };
                if wanted && sink.send(Message::Binary(frame(fd as u8, &data))).await.is_err() {
                    // Dropping the receiver stops the command.
                    return false;
                }
            }
            true
        };
        let (code, delivered) = tokio::join!(command, forward);
        if delivered {
            let status = serde_json::to_vec(&exit_status(&job, code)).expect("a Status serializes");
            let _ = sink.send(Message::Binary(frame(ERROR, &status))).await;
            let _ = sink.send(Message::Close(Some(CloseFrame { code: CloseCode::Normal, reason: "".into() }))).await;
        }
    };

    let mut reader = std::pin::pin!(reader);
    let mut session = std::pin::pin!(session);
    // When the client's side ends first, what the command still writes goes
    // out while the connection takes it (a client that is gone fails the
    // sends at once); after the grace period the session is dropped, which
    // cancels the command.
    let finished = tokio::select! {
        () = &mut reader => {
            let _ = tokio::time::timeout(CLOSE_GRACE, &mut session).await;
            false
        }
        () = &mut session => true,
    };
    if finished {
        // Let the client answer the close before the connection drops.
        let _ = tokio::time::timeout(CLOSE_GRACE, reader).await;
    }
}

fn frame(channel: u8, data: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(data.len() + 1);
    b.put_u8(channel);
    b.put_slice(data);
    b.freeze()
}

/// The `metav1.Status` of channel 3, as the kubelet writes it: `Success`, or
/// `NonZeroExitCode` with the code as the `ExitCode` cause.
fn exit_status(job: &Job, code: u8) -> Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    let what = match job {
        Job::Exec { argv, .. } => format!("error executing command [{}], exit code {code}", argv.join(" ")),
        Job::Attach { .. } => format!("exit code {code}"),
    };
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("command terminated with non-zero exit code: {what}"),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}
    })
}

//! The webhook backend (`--audit-webhook-config-file`): events POSTed as an
//! `audit.k8s.io/v1` `EventList` to the server a kubeconfig names (its
//! cluster's URL, CA and user's credentials), in batches of at most
//! `--audit-webhook-batch-max-size` events, or fewer once
//! `--audit-webhook-batch-max-wait` has passed since the batch began —
//! the apiserver's batch mode. A batch that fails is sent again after
//! `--audit-webhook-initial-backoff`, growing 1.5× a time, five times in
//! all (the apiserver's `DefaultRetryBackoffWithInitialDelay`), then
//! counted `failed`.
//!
//! Invariant: one batch is in flight at a time; what arrives meanwhile
//! waits in the bounded buffer, and what does not fit there is dropped and
//! counted (`super::sink`) — a slow webhook never slows a request.

use std::path::Path;
use std::time::Duration;

use super::event::LINE_START;
use super::sink::{Counts, Lines, Receiver};
use crate::upstream::UpstreamError;
use crate::upstream::client::Client;
use crate::upstream::connect::ConnectArgs;

/// Attempts per batch (`wait.Backoff.Steps`).
const ATTEMPTS: u32 = 5;

/// How long one POST may take (the apiserver's webhook client sends `?timeout=30s`).
const TIMEOUT: Duration = Duration::from_secs(30);

/// How batches are made and sent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Batching {
    pub max_size: usize,
    pub max_wait: Duration,
    pub initial_backoff: Duration,
}

/// Where batches go: the kubeconfig's server, with its credentials.
#[derive(Debug, Clone)]
pub(crate) struct Webhook {
    client: Client,
    /// The path batches are POSTed to (the server URL's).
    path: String,
}

impl Webhook {
    /// The webhook the kubeconfig at `path` names.
    pub async fn load(path: &Path) -> anyhow::Result<Webhook> {
        let fail = |e: &dyn std::fmt::Display| anyhow::anyhow!("initializing audit webhook: {}: {e}", path.display());
        let args = ConnectArgs { kubeconfig: Some(path.into()), ..ConnectArgs::default() };
        let creds = args.resolve().await.map_err(|e| fail(&e))?;
        let client = Client::new(&creds).map_err(|e| fail(&e))?;
        // `Client::uri` puts the server's own path before the one asked for.
        let path = if creds.server.path().trim_end_matches('/').is_empty() { "/" } else { "" };
        Ok(Webhook { client, path: path.to_string() })
    }

    /// Sends batches of what `rx` brings until every sender is gone.
    pub async fn run(self, rx: Receiver, batching: Batching, counts: Counts) {
        let max_size = batching.max_size.max(1);
        // The batch being made: at most `max_size` events taken from the buffer, as the apiserver's.
        let mut pending = Lines::default();
        let mut closed = false;
        while !(closed && pending.is_empty()) {
            if pending.is_empty() && !rx.take(&mut pending, max_size).await {
                return;
            }
            let deadline = tokio::time::Instant::now() + batching.max_wait;
            while pending.len() < max_size && !closed {
                let room = max_size - pending.len();
                match tokio::time::timeout_at(deadline, rx.take(&mut pending, room)).await {
                    Ok(taken) => closed = !taken,
                    Err(_) => break,
                }
            }
            let n = pending.len() as u64;
            match self.send(&event_list(pending.iter()), batching.initial_backoff).await {
                Ok(()) => counts.written.increment(n),
                Err(e) => {
                    tracing::error!(events = n, error = %e, "the audit webhook did not take a batch");
                    counts.failed.increment(n);
                }
            }
            pending.clear();
        }
    }

    /// POSTs `body`, retrying on any error with the apiserver's backoff.
    async fn send(&self, body: &[u8], initial_backoff: Duration) -> Result<(), UpstreamError> {
        let mut wait = initial_backoff;
        let mut attempt = 1;
        loop {
            let sent = tokio::time::timeout(TIMEOUT, self.client.post_json(&self.path, body.to_vec())).await;
            match sent.unwrap_or_else(|elapsed| Err(UpstreamError::Transport(Box::new(elapsed)))) {
                Ok(_) => return Ok(()),
                Err(e) if attempt >= ATTEMPTS => return Err(e),
                Err(e) => {
                    tracing::debug!(attempt, error = %e, "the audit webhook failed; retrying");
                    tokio::time::sleep(wait).await;
                    wait = wait.mul_f64(1.5);
                    attempt += 1;
                }
            }
        }
    }
}

/// The `EventList` of events given by their log lines: each item the line's
/// object without its type, as the apiserver's batches hold them.
fn event_list<'a>(batch: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(br#"{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":["#);
    for (i, line) in batch.enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.push(b'{');
        // The fields after the type, and the closing brace (not the newline).
        body.extend_from_slice(line.get(LINE_START.len()..line.len().saturating_sub(1)).unwrap_or_default());
    }
    body.extend_from_slice(b"]}");
    body
}

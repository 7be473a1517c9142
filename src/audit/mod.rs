//! Auditing, as kube-apiserver audits (`pkg/audit`, its `log` and
//! `webhook` plugins): the same `--audit-*` flags, the same `Policy` file
//! ([`policy`]), the same `audit.k8s.io/v1` events ([`event`]) written one
//! a line ([`log`]) or POSTed in batches ([`webhook`]).
//!
//! Invariants:
//! - no `--audit-policy-file`, no auditing (as the apiserver); with one,
//!   every request kache answers itself is audited by it — from memory,
//!   kache's own refusals (401, 403, 400, 404, 406, 429…), its health,
//!   metrics and errors — under the request's `Audit-ID`;
//! - a request kache passes through is not audited here: the apiserver
//!   audits it, under the same `Audit-ID` (kache sends it upstream),
//!   naming the client as the `impersonatedUser` kache acts as. Writing
//!   it twice would double every relayed write in the record and tell
//!   nothing the apiserver's event does not; the shared ID joins the two
//!   logs. (A request that never reached the apiserver — upstream
//!   unreachable — is kache's answer, and audited.)
//! - auditing never waits: events go to bounded queues ([`sink`]), and
//!   what does not fit is dropped and counted, never a blocked request.
//!
//! kache learns who answers a request only once it is routed, after the
//! stage where the apiserver writes `RequestReceived`; so the audit stage
//! keeps what the request was and who sent it, and once kache knows it
//! answers itself the policy is asked — about the authenticated user, as
//! the apiserver asks before impersonation — and `RequestReceived` written,
//! stamped with the time the request arrived, as the apiserver stamps it
//! (`api::chain`'s audit stage). What kache relays costs it no policy
//! evaluation and no event.

pub mod event;
pub mod json;
mod log;
pub mod policy;
pub mod record;
mod rotate;
pub mod sink;
mod webhook;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sink::{Backend, Queue, Sink};

/// The `--audit-*` flags of `kache serve`, as the apiserver's.
#[derive(Debug, Clone, clap::Args)]
pub struct AuditArgs {
    /// Path to the file that defines the audit policy (audit.k8s.io/v1 Policy, YAML or JSON). Without it
    /// nothing is audited.
    #[arg(long, value_name = "PATH")]
    pub audit_policy_file: Option<PathBuf>,
    /// If set, every request kache answers itself is logged to this file, one JSON event a line. '-' means
    /// standard out.
    #[arg(long, value_name = "PATH")]
    pub audit_log_path: Option<String>,
    /// The maximum number of days to retain old audit log files based on the timestamp encoded in their
    /// filename (0: no limit).
    #[arg(long, value_name = "DAYS", default_value_t = 366)]
    pub audit_log_maxage: u64,
    /// The maximum number of old audit log files to retain (0: no limit).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub audit_log_maxbackup: usize,
    /// The maximum size in megabytes of the audit log file before it gets rotated (0: never rotated).
    #[arg(long, value_name = "MB", default_value_t = 100)]
    pub audit_log_maxsize: u64,
    /// Format of saved audits: json, the apiserver's default (kache writes no other).
    #[arg(long, default_value = "json", value_parser = ["json"])]
    pub audit_log_format: String,
    /// Events queued for the log before they are dropped (and counted).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub audit_log_batch_buffer_size: usize,
    /// Path to a kubeconfig file naming the audit webhook (its server URL, CA and credentials).
    #[arg(long, value_name = "PATH")]
    pub audit_webhook_config_file: Option<PathBuf>,
    /// The maximum number of events in a webhook batch.
    #[arg(long, value_name = "N", default_value_t = 400)]
    pub audit_webhook_batch_max_size: usize,
    /// The longest a batch waits to fill before it is sent (e.g. 30s, 1m).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration)]
    pub audit_webhook_batch_max_wait: Duration,
    /// Events queued for the webhook before they are dropped (and counted).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub audit_webhook_batch_buffer_size: usize,
    /// How long after a failed batch it is sent again (then 1.5× longer each time, five tries in all).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    pub audit_webhook_initial_backoff: Duration,
}

/// A Go-style duration: `30s`, `1m30s`, `500ms`.
fn duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e}"))
}

/// The policy and where events go: shared by every request.
#[derive(Debug)]
pub struct Auditor {
    pub policy: policy::Policy,
    pub sink: Sink,
}

impl AuditArgs {
    /// The policy, checked as the apiserver checks it (`None`: no `--audit-policy-file`).
    pub fn policy(&self) -> anyhow::Result<Option<policy::Policy>> {
        for (flag, v) in [
            ("audit-log-batch-buffer-size", self.audit_log_batch_buffer_size),
            ("audit-webhook-batch-buffer-size", self.audit_webhook_batch_buffer_size),
            ("audit-webhook-batch-max-size", self.audit_webhook_batch_max_size),
        ] {
            if v == 0 {
                anyhow::bail!("--{flag} 0: must be a positive number");
            }
        }
        let Some(path) = &self.audit_policy_file else { return Ok(None) };
        policy::read(path).map(Some).map_err(|e| anyhow::anyhow!("loading audit policy file: {e}"))
    }

    /// The auditor the flags ask for, its backends started (`None`: no
    /// policy, or no backend). A bad policy or webhook kubeconfig is an error.
    pub async fn start(&self) -> anyhow::Result<Option<Arc<Auditor>>> {
        let policy = self.policy()?;
        let webhook = match &self.audit_webhook_config_file {
            Some(path) => Some(webhook::Webhook::load(path).await?),
            None => None,
        };
        let Some(policy) = policy else {
            if self.audit_log_path.is_some() || webhook.is_some() {
                tracing::info!("no audit policy file provided: no events are recorded");
            }
            return Ok(None);
        };
        metrics::describe_counter!(
            "kache_audit_events_total",
            "Audit events by backend (log, webhook) and result: written, dropped (the backend's queue was full), failed (the backend could not take them)."
        );
        let mut queues = Vec::new();
        if let Some(path) = &self.audit_log_path {
            let (queue, rx, counts) = Queue::new(Backend::Log, self.audit_log_batch_buffer_size);
            let out = log::Output::new(path, self.audit_log_maxsize, self.audit_log_maxbackup, self.audit_log_maxage);
            log::start(out, rx, counts).map_err(|e| anyhow::anyhow!("starting the audit log: {e}"))?;
            queues.push(queue);
        }
        if let Some(webhook) = webhook {
            let (queue, rx, counts) = Queue::new(Backend::Webhook, self.audit_webhook_batch_buffer_size);
            let batching = webhook::Batching {
                max_size: self.audit_webhook_batch_max_size,
                max_wait: self.audit_webhook_batch_max_wait,
                initial_backoff: self.audit_webhook_initial_backoff,
            };
            tokio::spawn(webhook.run(rx, batching, counts));
            queues.push(queue);
        }
        if queues.is_empty() {
            tracing::info!("an audit policy but no backend (--audit-log-path, --audit-webhook-config-file): no events are recorded");
            return Ok(None);
        }
        Ok(Some(Arc::new(Auditor { policy, sink: Sink::new(queues) })))
    }
}

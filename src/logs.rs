//! Logs: `tracing` to stderr, human-readable text by default (coloured only
//! on a terminal) or one JSON object per line with `--log-format json`;
//! verbosity from `--log-level`, else `RUST_LOG`, else `info`. kache logs
//! one line per upstream state change (a reflector listing, watching,
//! failing, recovering) and per start and stop, never one per request
//! unless `debug` is asked for.
//!
//! A closed output (`kache serve 2>&1 | head -3` once `head` has its lines)
//! is not an error: the write is dropped and [`output_closed`] completes,
//! which `kache serve` and `kache demo` take as a reason to stop, quietly.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, ValueEnum};
use tracing_subscriber::EnvFilter;

/// The logging flags, global to every `kache` command.
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// Log verbosity: error, warn, info, debug, trace, or directives as RUST_LOG takes them
    /// (`kache=debug,hyper=warn`). Default: RUST_LOG, else info.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Log lines as text (coloured only on a terminal) or one JSON object each.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl LogArgs {
    /// Installs the log subscriber for the process.
    pub fn init(&self) -> anyhow::Result<()> {
        let filter = match &self.log_level {
            Some(l) => EnvFilter::try_new(l).map_err(|e| anyhow::anyhow!("--log-level {l:?}: {e}"))?,
            None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        };
        let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(|| Output(Stream::Stderr)).log_internal_errors(false);
        match self.log_format {
            LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).init(),
            LogFormat::Json => logs.json().flatten_event(true).with_current_span(false).init(),
        }
        Ok(())
    }
}

/// Set once stdout or stderr is found closed.
static CLOSED: AtomicBool = AtomicBool::new(false);
static CLOSING: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Completes once a write to stdout or stderr has found its reader gone.
pub(crate) async fn output_closed() {
    loop {
        let notified = CLOSING.notified();
        if CLOSED.load(Ordering::Acquire) {
            return;
        }
        notified.await;
    }
}

/// Writes `line` and a newline to stdout; a closed stdout ends nothing but
/// [`output_closed`].
pub fn say(line: &str) {
    let mut out = Output(Stream::Stdout);
    let _ = writeln!(out, "{line}");
}

#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

/// stdout or stderr, where a broken pipe drops the write and marks the output closed.
struct Output(Stream);

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = match self.0 {
            Stream::Stdout => std::io::stdout().write(buf),
            Stream::Stderr => std::io::stderr().write(buf),
        };
        match written {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                CLOSED.store(true, Ordering::Release);
                CLOSING.notify_waiters();
                Ok(buf.len())
            }
            other => other,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.0 {
            Stream::Stdout => std::io::stdout().flush(),
            Stream::Stderr => std::io::stderr().flush(),
        }
    }
}

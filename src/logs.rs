//! Logs: `tracing` to stderr, human-readable text by default (coloured only
//! on a terminal) or one JSON object per line with `--log-format json`;
//! verbosity from `--log-level`, else `RUST_LOG`, else `info`. kache logs
//! one line per upstream state change (a reflector listing, watching,
//! failing, recovering) and per start and stop, never one per request
//! unless `debug` is asked for.

use std::io::IsTerminal;

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
        let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
        match self.log_format {
            LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).init(),
            LogFormat::Json => logs.json().flatten_event(true).with_current_span(false).init(),
        }
        Ok(())
    }
}

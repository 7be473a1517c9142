//! The log backend (`--audit-log-path`): one JSON event a line, as the
//! apiserver's `log` plugin writes them with `--audit-log-format=json` (the
//! only format kache writes), to standard output (`-`), a plain file
//! (`--audit-log-maxsize 0`) or a size-rotated one ([`super::rotate`]).
//!
//! Invariants: lines are written by one thread of their own, in the order
//! the events were sent, in as few writes as the buffer allows (once an
//! event has come, the thread lets more gather for [`GATHERING`] or until a
//! quarter of the buffer is full, so an event is written within about that,
//! the buffer never fills while events gather, and no request wakes it but
//! the one that finds it idle and the one that fills the quarter); a file that
//! cannot be written costs one error line when it starts failing and one
//! when it recovers (never one per event), its events are counted
//! `failed`, and it is opened again at most once a second — kache never
//! stops serving for it.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::rotate::Rotating;
use super::sink::{Counts, Lines, Receiver};

/// How long the writer lets events gather once one has come: the longest an
/// event waits for its write. Each gathering costs the writer a wakeup, which
/// on a busy machine takes a core from a request, so fewer and larger writes
/// make auditing cheaper (`loadtest audit`: `docs/performance.md`, "Auditing").
const GATHERING: Duration = Duration::from_millis(50);

/// How often a file that cannot be opened is tried again.
const REOPEN: Duration = Duration::from_secs(1);

/// Where lines go.
#[derive(Debug)]
pub enum Output {
    /// `-`.
    Stdout,
    /// A file never rotated (`--audit-log-maxsize 0`), opened for appending.
    Plain { path: PathBuf, file: Option<File> },
    /// A file rotated by size.
    Rotating(Rotating),
}

impl Output {
    /// The output `--audit-log-path` names, rotated past `max_size_mb` (0: never).
    /// Something there that is no regular file (`/dev/null`, `/dev/stdout`, a
    /// FIFO) is never rotated: renaming it would put a plain file in its place.
    pub fn new(path: &str, max_size_mb: u64, max_backups: usize, max_age_days: u64) -> Output {
        if path == "-" {
            return Output::Stdout;
        }
        let path = PathBuf::from(path);
        let special = std::fs::metadata(&path).is_ok_and(|m| !m.is_file());
        match max_size_mb {
            0 => Output::Plain { path, file: None },
            _ if special => Output::Plain { path, file: None },
            mb => Output::Rotating(Rotating::new(path, mb.saturating_mul(1 << 20), max_backups, max_age_days)),
        }
    }

    /// Writes `lines`.
    fn write(&mut self, lines: &Lines) -> io::Result<()> {
        match self {
            Output::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(lines.bytes())?;
                out.flush()
            }
            Output::Plain { path, file } => {
                let f = match file {
                    Some(f) => f,
                    None => file.insert(OpenOptions::new().append(true).open(&*path)?),
                };
                let result = f.write_all(lines.bytes());
                if result.is_err() {
                    *file = None;
                }
                result
            }
            Output::Rotating(r) => {
                let result = r.write_lines(lines);
                if result.is_err() {
                    r.close();
                }
                result
            }
        }
    }

    /// `ensureLogFile`: the file and its directory exist before the first event.
    fn ensure(&self) -> io::Result<()> {
        let path = match self {
            Output::Stdout => return Ok(()),
            Output::Plain { path, .. } => path,
            Output::Rotating(r) => r.path(),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        }
        OpenOptions::new().create(true).append(true).mode(0o600).open(path).map(drop)
    }

    fn name(&self) -> String {
        match self {
            Output::Stdout => "standard output".into(),
            Output::Plain { path, .. } => path.display().to_string(),
            Output::Rotating(r) => r.path().display().to_string(),
        }
    }
}

/// Starts the writer thread: it writes what `rx` brings to `out` until every sender is gone.
pub fn start(mut out: Output, rx: Receiver, counts: Counts) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("audit-log".into()).spawn(move || {
        let (mut failing, mut retry_at) = (false, Instant::now());
        if let Err(e) = out.ensure() {
            tracing::error!(output = %out.name(), error = %e, "the audit log cannot be written; events are counted as failed until it can");
            (failing, retry_at) = (true, Instant::now() + REOPEN);
        }
        let mut lines = Lines::default();
        while rx.take_blocking(&mut lines, GATHERING) {
            let n = lines.len() as u64;
            let result = match failing && Instant::now() < retry_at {
                true => Err(io::Error::other("not retried yet")),
                false => out.write(&lines),
            };
            match result {
                Ok(()) => {
                    counts.written.increment(n);
                    if std::mem::take(&mut failing) {
                        tracing::info!(output = %out.name(), "the audit log is written again");
                    }
                }
                Err(e) => {
                    counts.failed.increment(n);
                    if !failing {
                        tracing::error!(output = %out.name(), error = %e, "the audit log cannot be written; events are counted as failed until it can");
                        failing = true;
                    }
                    if Instant::now() >= retry_at {
                        retry_at = Instant::now() + REOPEN;
                    }
                }
            }
            lines.clear();
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_is_written_never_rotated() {
        assert!(matches!(Output::new("/dev/null", 1, 0, 0), Output::Plain { .. }));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("audit.log");
        assert!(matches!(Output::new(file.to_str().unwrap(), 1, 0, 0), Output::Rotating(_)), "a file not yet made is rotated");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(Output::new(file.to_str().unwrap(), 1, 0, 0), Output::Rotating(_)));
        assert!(matches!(Output::new(file.to_str().unwrap(), 0, 0, 0), Output::Plain { .. }));
    }
}

//! A log file rotated by size as `gopkg.in/natefinch/lumberjack.v2` (the
//! apiserver's `--audit-log-max*`) rotates it: before a write that would
//! take the file past `max_size`, the file is renamed to
//! `<name>-<UTC time as 2006-01-02T15-04-05.000><ext>` and a new one begun
//! with the old one's mode; then backups beyond `max_backups` (newest
//! kept) and older than `max_age` are removed. 0 means no limit.
//!
//! Invariants: a line is never split between two files; a line longer
//! than `max_size` is refused (lumberjack's error), not written; only a
//! regular file is ever renamed (lumberjack would rename `/dev/null`, and a
//! plain file would take its place for every program on the machine).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::sink::Lines;

/// A size-rotated log file.
#[derive(Debug)]
pub(crate) struct Rotating {
    path: PathBuf,
    max_size: u64,
    max_backups: usize,
    max_age: Option<Duration>,
    file: Option<File>,
    size: u64,
    /// Lines gathered for one write (kept from one call to the next).
    chunk: Vec<u8>,
}

impl Rotating {
    /// The log at `path`, rotated past `max_size` bytes, keeping `max_backups` backups of at most `max_age_days`.
    pub fn new(path: PathBuf, max_size: u64, max_backups: usize, max_age_days: u64) -> Rotating {
        let max_age = (max_age_days > 0).then(|| Duration::from_secs(max_age_days * 24 * 3600));
        Rotating { path, max_size, max_backups, max_age, file: None, size: 0, chunk: Vec::new() }
    }

    /// Writes `lines`, rotating between lines as the size requires: in one
    /// write when they fit the open file, else gathered line by line.
    pub(crate) fn write_lines(&mut self, lines: &Lines) -> io::Result<()> {
        if let Some(f) = &mut self.file
            && self.size + lines.bytes().len() as u64 <= self.max_size
        {
            f.write_all(lines.bytes())?;
            self.size += lines.bytes().len() as u64;
            debug_assert!(self.size <= self.max_size, "a file never grows past max_size");
            return Ok(());
        }
        let mut chunk = std::mem::take(&mut self.chunk);
        chunk.clear();
        let result = self.write_gathered(lines, &mut chunk);
        self.chunk = chunk;
        result
    }

    fn write_gathered(&mut self, lines: &Lines, chunk: &mut Vec<u8>) -> io::Result<()> {
        for line in lines.iter() {
            let len = line.len() as u64;
            if len > self.max_size {
                return Err(io::Error::other(format!("write length {len} exceeds maximum file size {}", self.max_size)));
            }
            if self.file.is_none() {
                self.open_existing_or_new(len)?;
            }
            if self.size + chunk.len() as u64 + len > self.max_size {
                self.flush(chunk)?;
                self.rotate()?;
            }
            chunk.extend_from_slice(line);
        }
        self.flush(chunk)
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Forgets the open file (after a failed write): the next write opens it again.
    pub fn close(&mut self) {
        self.file = None;
    }

    fn flush(&mut self, chunk: &mut Vec<u8>) -> io::Result<()> {
        if let Some(f) = &mut self.file {
            f.write_all(chunk)?;
            self.size += chunk.len() as u64;
            debug_assert!(self.size <= self.max_size, "a file never grows past max_size");
        }
        chunk.clear();
        Ok(())
    }

    fn open_existing_or_new(&mut self, len: u64) -> io::Result<()> {
        self.mill();
        match std::fs::metadata(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => self.open_new(),
            Err(e) => Err(io::Error::new(e.kind(), format!("error getting log file info: {e}"))),
            Ok(info) if info.len() + len >= self.max_size => self.rotate(),
            Ok(info) => match OpenOptions::new().append(true).open(&self.path) {
                Ok(f) => {
                    self.file = Some(f);
                    self.size = info.len();
                    Ok(())
                }
                Err(_) => self.open_new(),
            },
        }
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.file = None;
        self.open_new()?;
        self.mill();
        Ok(())
    }

    /// Renames the current file to its backup name, and begins a new one with its mode.
    fn open_new(&mut self) -> io::Result<()> {
        std::fs::create_dir_all(self.dir())?;
        let mut mode = 0o600;
        if let Ok(info) = std::fs::metadata(&self.path) {
            if !info.is_file() {
                return Err(io::Error::other(format!("{} is not a regular file: it is not rotated", self.path.display())));
            }
            mode = info.permissions().mode() & 0o7777;
            std::fs::rename(&self.path, backup_name(&self.path, SystemTime::now()))?;
        }
        let f = OpenOptions::new().create(true).write(true).truncate(true).mode(mode).open(&self.path)?;
        self.file = Some(f);
        self.size = 0;
        Ok(())
    }

    fn dir(&self) -> &Path {
        self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
    }

    /// `millRunOnce`: removes backups past the count, then past the age.
    fn mill(&self) {
        if self.max_backups == 0 && self.max_age.is_none() {
            return;
        }
        let (prefix, ext) = prefix_and_ext(&self.path);
        let Ok(entries) = std::fs::read_dir(self.dir()) else { return };
        let mut backups: Vec<(String, PathBuf)> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let stamp = name.strip_prefix(&format!("{prefix}-"))?.strip_suffix(&ext)?;
                parse_stamp(stamp)?;
                Some((stamp.to_string(), e.path()))
            })
            .collect();
        // The stamp's format sorts as its time does: newest first.
        backups.sort_by(|a, b| b.0.cmp(&a.0));
        let mut remove = Vec::new();
        if self.max_backups > 0 && backups.len() > self.max_backups {
            remove.extend(backups.split_off(self.max_backups));
        }
        if let Some(age) = self.max_age {
            let cutoff = stamp(SystemTime::now() - age);
            remove.extend(backups.into_iter().filter(|(s, _)| *s < cutoff));
        }
        for (_, path) in remove {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove an old audit log");
            }
        }
    }
}

/// `name` without and with its extension's dot: `audit` and `.log` of `audit.log`.
fn prefix_and_ext(path: &Path) -> (String, String) {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match name.rfind('.') {
        Some(dot) => (name[..dot].to_string(), name[dot..].to_string()),
        None => (name, String::new()),
    }
}

/// `backupTimeFormat` (`2006-01-02T15-04-05.000`) of `t` in UTC.
fn stamp(t: SystemTime) -> String {
    let rfc = humantime::format_rfc3339_millis(t).to_string();
    rfc.trim_end_matches('Z').replace(':', "-")
}

/// The time a backup's stamp names, if it is one.
fn parse_stamp(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 23 || b[13] != b'-' || b[16] != b'-' {
        return None;
    }
    humantime::parse_rfc3339(&format!("{}:{}:{}Z", &s[..13], &s[14..16], &s[17..])).ok()
}

/// The name `path` is renamed to when rotated at `t`.
fn backup_name(path: &Path, t: SystemTime) -> PathBuf {
    let (prefix, ext) = prefix_and_ext(path);
    path.with_file_name(format!("{prefix}-{}{ext}", stamp(t)))
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    #[test]
    fn backups_are_named_as_lumberjack_names_them() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(backup_name(Path::new("/var/log/audit.log"), t), Path::new("/var/log/audit-2023-11-14T22-13-20.123.log"));
        assert_eq!(backup_name(Path::new("audit"), t), Path::new("audit-2023-11-14T22-13-20.123"));
        assert_eq!(parse_stamp("2023-11-14T22-13-20.123"), Some(t));
        assert_eq!(parse_stamp("2023-11-14T22:13:20.123"), None);
    }

    #[test]
    fn a_file_rotates_before_a_line_that_would_overflow_it_and_old_backups_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        // An old backup past the count, and a file that is no backup.
        std::fs::write(dir.path().join("audit-2001-01-01T00-00-00.000.log"), "old\n").unwrap();
        std::fs::write(dir.path().join("audit-notes.log"), "keep\n").unwrap();
        let mut log = Rotating::new(path.clone(), 10, 1, 0);
        log.write_lines(&Lines::of(&["aaaa\n", "bbbb\n"])).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "aaaa\nbbbb\n");
        log.write_lines(&Lines::of(&["cccc\n"])).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "cccc\n");
        let names = files(dir.path());
        assert_eq!(names.len(), 3, "{names:?}");
        assert!(names.contains(&"audit-notes.log".to_string()) && names.contains(&"audit.log".to_string()));
        let backup = names.iter().find(|n| n.starts_with("audit-2") && !n.starts_with("audit-2001")).expect("the new backup");
        assert_eq!(std::fs::read_to_string(dir.path().join(backup)).unwrap(), "aaaa\nbbbb\n");
        assert!(log.write_lines(&Lines::of(&["a line of more than ten bytes\n"])).is_err());
    }

    #[test]
    fn an_existing_file_is_appended_to_until_it_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::write(&path, "1234\n").unwrap();
        let mut log = Rotating::new(path.clone(), 20, 0, 0);
        log.write_lines(&Lines::of(&["5678\n"])).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1234\n5678\n");
        log.write_lines(&Lines::of(&["abcd\n", "efgh\n", "ijkl\n"])).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "ijkl\n", "a batch that does not fit is split between lines");
        assert_eq!(files(dir.path()).len(), 2);
    }

    #[test]
    fn what_is_no_regular_file_is_never_renamed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::create_dir(&path).unwrap();
        let mut log = Rotating::new(path.clone(), 10, 0, 0);
        let err = log.write_lines(&Lines::of(&["aaaa\n"])).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(path.is_dir());
        assert_eq!(files(dir.path()), ["audit.log"]);
    }

    #[test]
    fn backups_older_than_the_age_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let old = backup_name(&path, SystemTime::now() - Duration::from_secs(3 * 24 * 3600));
        let recent = backup_name(&path, SystemTime::now() - Duration::from_secs(3600));
        std::fs::write(&old, "").unwrap();
        std::fs::write(&recent, "").unwrap();
        let mut log = Rotating::new(path.clone(), 100, 0, 2);
        log.write_lines(&Lines::of(&["x\n"])).unwrap();
        assert!(!old.exists() && recent.exists());
    }
}

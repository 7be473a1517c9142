//! Warm restart: each cached resource's state saved in a directory
//! (`--state-dir`) and restored at start, so that a restarted kache resumes
//! its upstream watches where it stopped instead of listing everything again.
//!
//! A state file holds one resource's head snapshot — its objects at
//! `confirmed_rv`, each exactly as the store keeps it — with that revision,
//! the resource and the identity of the upstream ([`Upstream`]), as one zstd
//! frame with its content checksum, behind a magic number and a format version.
//!
//! Invariants:
//! - A file is the state at exactly its revision: it is written from the head
//!   of a published view, whose revision is `confirmed_rv` (every upstream
//!   event up to it applied). The head is an immutable snapshot, so saving
//!   never blocks the store's writer or a reader; saves run off the async
//!   threads, one at a time.
//! - A file is replaced atomically: written whole to a temporary file in the
//!   same directory, synced, then renamed over the old one. A crash leaves
//!   the old state or the new one, never a mix.
//! - A file is restored only when it is of this format version, this
//!   resource and this upstream, and whole and unaltered: its frame is read
//!   to the end, so its checksum is checked, before any object is used.
//!   Anything else is ignored with one log line, and the resource is listed.
//!   Bad bytes never panic, and allocate little more than they hold.
//! - A restored state is a state upstream had, at its revision, and no more:
//!   it answers what a past state may (`resourceVersion=0`, and reads at its
//!   revision), the store confirms its revision only, and every consistent
//!   read still needs a freshness proof against upstream now
//!   (`upstream/freshness/`). It is served only once upstream has shown
//!   that its revision has not gone back below it — the resumed watch's
//!   first event or bookmark, or else a one-item probe (etcd restored while
//!   kache was down: then revisions no longer name the same states, and a
//!   store ahead of upstream would pass the freshness check); otherwise the
//!   resource is listed, as it is when the resumed watch gets 410 (upstream
//!   compacted past it).
//! - The files hold the objects as the apiserver sent them — Secrets too,
//!   when kache caches them — so a directory kache creates is its user's
//!   alone (0700), and so is every file it writes (0600).
//! - The format version changes whenever the file layout or the form the
//!   store keeps objects in changes, so a file is never read as something it
//!   is not. A directory belongs to one kache: two sharing it could only
//!   spoil each other's files, which are then ignored.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use apimachinery::resource::Resource;
use bytes::Bytes;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

use crate::store::{StoreReader, View};
use crate::upstream::UpstreamError;
use crate::upstream::client::Client;
use crate::upstream::connect::Credentials;
use crate::upstream::reflector::Saved;

/// The first bytes of a state file.
const MAGIC: &[u8; 8] = b"KACHEST\n";

/// The layout of the file and the form of the objects in it.
const FORMAT: u32 = 1;

/// zstd's level 1, its fastest standard one. Measured on the simulator's
/// 100,000 pods (463 MB of JSON, one core): level 1 writes 4.4 MB in
/// 0.27 s, level 3 5.4 MB in 0.32 s.
const LEVEL: i32 = 1;

/// Largest header accepted: it holds a few names and numbers.
const MAX_HEADER: u32 = 1 << 20;

/// Most bytes reserved ahead of reading an object (it may claim more than the file holds).
const MAX_RESERVE: usize = 1 << 20;

/// Which apiserver a state came from: a state is restored only into the
/// same. Three cheap facts, none needing a permission kache may lack
/// (`/version` is public by default): the URL it was given; the CA certificates it trusts for it (in a
/// cluster the URL is the same everywhere, `kubernetes.default.svc`, but each
/// cluster has its own CA); and the apiserver's build (`/version`), since
/// another build may encode the same stored object differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Upstream {
    /// The apiserver's base URL.
    pub server: String,
    /// `sha256:` and the hex digest of the CA certificates (DER, in order);
    /// empty when none is configured (the system roots, or plain HTTP).
    pub ca: String,
    /// `/version`'s `gitVersion`.
    pub version: String,
}

#[derive(Deserialize)]
struct Version {
    #[serde(rename = "gitVersion")]
    git_version: String,
}

impl Upstream {
    /// The identity of the apiserver `client` talks to with `creds`.
    pub(crate) async fn identify(client: &Client, creds: &Credentials) -> Result<Upstream, UpstreamError> {
        let body = client.get_bytes("/version").await?;
        let version: Version =
            serde_json::from_slice(&body).map_err(|e| UpstreamError::Decode(format!("a /version without gitVersion: {e}").into()))?;
        let ca = creds.tls.ca.as_ref().map_or_else(String::new, |certs| {
            let mut sha = ring::digest::Context::new(&ring::digest::SHA256);
            certs.iter().for_each(|c| sha.update(c));
            let hex: String = sha.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect();
            format!("sha256:{hex}")
        });
        Ok(Upstream { server: creds.server.to_string(), ca, version: version.git_version })
    }
}

/// What a state file says about itself, before its objects.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    group: String,
    version: String,
    resource: String,
    upstream: Upstream,
    revision: u64,
    objects: u64,
    bytes: u64,
}

/// Why a state file was not restored or not saved.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Reading or writing failed (for a restore: also a frame that is cut
    /// short or fails its checksum, as zstd reports it).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// Not a state file.
    #[error("not a kache state file")]
    NotState,
    /// A state file of another format version.
    #[error("format version {0}, not {FORMAT}")]
    Format(u32),
    /// The content does not hold together.
    #[error("corrupt: {0}")]
    Corrupt(String),
    /// Saved for another resource.
    #[error("saved for {0}")]
    OtherResource(String),
    /// Saved from another apiserver.
    #[error("saved from another apiserver: {} (CA {:?}, {})", .0.server, .0.ca, .0.version)]
    OtherUpstream(Upstream),
}

/// What one save wrote.
#[derive(Debug, Clone, Copy)]
struct Written {
    epoch: u64,
    rv: u64,
}

/// The state directory of one kache, for one upstream.
#[derive(Debug)]
pub struct StateDir {
    dir: PathBuf,
    upstream: Upstream,
    /// The last state saved per file; held through a save, so saves never overlap.
    written: Mutex<HashMap<PathBuf, Written>>,
}

impl StateDir {
    /// The state directory `dir`, created if missing, for `upstream`.
    pub fn open(dir: &Path, upstream: Upstream) -> Result<StateDir, StateError> {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        Ok(StateDir { dir: dir.to_path_buf(), upstream, written: Mutex::default() })
    }

    /// The file of `resource`: `PLURAL.VERSION.GROUP` (`core` for the core group).
    fn path(&self, resource: &Resource) -> PathBuf {
        let group = if resource.group.is_empty() { "core" } else { &resource.group };
        let name: String = format!("{}.{}.{group}", resource.plural, resource.version)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
            .collect();
        self.dir.join(format!("{name}.state"))
    }

    /// The state saved for `resource`, when there is a usable one; an
    /// unusable one is logged and ignored. Blocking.
    pub fn load(&self, resource: &Resource) -> Option<Saved> {
        let path = self.path(resource);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "state file ignored; listing");
                return None;
            }
        };
        match self.read(BufReader::new(file), resource) {
            Ok(saved) => Some(saved),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "state file ignored; listing");
                None
            }
        }
    }

    fn read(&self, mut file: impl io::BufRead, resource: &Resource) -> Result<Saved, StateError> {
        let mut magic = [0; MAGIC.len()];
        file.read_exact(&mut magic).map_err(|_| StateError::NotState)?;
        if &magic != MAGIC {
            return Err(StateError::NotState);
        }
        let format = read_u32(&mut file)?;
        if format != FORMAT {
            return Err(StateError::Format(format));
        }
        let mut frame = zstd::stream::read::Decoder::with_buffer(file)?;
        let header_len = read_u32(&mut frame)?;
        if header_len > MAX_HEADER {
            return Err(StateError::Corrupt(format!("a header of {header_len} bytes")));
        }
        let header: Header =
            serde_json::from_slice(&read_bytes(&mut frame, header_len)?).map_err(|e| StateError::Corrupt(format!("the header: {e}")))?;
        if (header.group.as_str(), header.version.as_str(), header.resource.as_str())
            != (resource.group.as_str(), resource.version.as_str(), resource.plural.as_str())
        {
            return Err(StateError::OtherResource(format!("{}/{}/{}", header.group, header.version, header.resource)));
        }
        if header.upstream != self.upstream {
            return Err(StateError::OtherUpstream(header.upstream));
        }
        // Grown as objects arrive, not from the header's claims.
        let mut items = Vec::new();
        let mut bytes = 0u64;
        for _ in 0..header.objects {
            let len = read_u32(&mut frame)?;
            bytes += u64::from(len);
            if bytes > header.bytes {
                return Err(StateError::Corrupt(format!("objects over the {} bytes the header counts", header.bytes)));
            }
            items.push(Bytes::from(read_bytes(&mut frame, len)?));
        }
        if bytes != header.bytes {
            return Err(StateError::Corrupt(format!("{bytes} bytes of objects, not {}", header.bytes)));
        }
        // Reading past the last object ends the frame, which checks its checksum.
        if frame.read(&mut [0])? != 0 {
            return Err(StateError::Corrupt("bytes after the last object".into()));
        }
        Ok(Saved { items, rv: header.revision })
    }

    /// Saves the head of `view`, `resource`'s store, unless it is the state
    /// last saved or there is none yet (no list). Returns the bytes of
    /// object data and of the file written. Blocking.
    pub fn save(&self, resource: &Resource, view: &View) -> Result<Option<(u64, u64)>, StateError> {
        let path = self.path(resource);
        let mut written = self.written.lock();
        let now = Written { epoch: view.epoch(), rv: view.confirmed_rv() };
        // Epoch 0: the store has had no list (or restore) yet.
        if now.epoch == 0 || written.get(&path).is_some_and(|w| (w.epoch, w.rv) == (now.epoch, now.rv)) {
            return Ok(None);
        }
        let head = view.head();
        let header = Header {
            group: resource.group.clone(),
            version: resource.version.clone(),
            resource: resource.plural.clone(),
            upstream: self.upstream.clone(),
            revision: head.rv(),
            objects: head.len() as u64,
            bytes: head.iter().map(|o| o.bytes().len() as u64).sum(),
        };
        let tmp = path.with_extension("state.tmp");
        // Created afresh, so with its private mode, even over one a crash left.
        let _ = std::fs::remove_file(&tmp);
        let file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        let mut out = BufWriter::new(file);
        out.write_all(MAGIC)?;
        out.write_all(&FORMAT.to_le_bytes())?;
        let mut frame = zstd::stream::write::Encoder::new(out, LEVEL)?;
        frame.include_checksum(true)?;
        let header_json = serde_json::to_vec(&header).map_err(io::Error::other)?;
        frame.write_all(&len_u32(header_json.len())?.to_le_bytes())?;
        frame.write_all(&header_json)?;
        for o in head.iter() {
            frame.write_all(&len_u32(o.bytes().len())?.to_le_bytes())?;
            frame.write_all(o.bytes())?;
        }
        let file = frame.finish()?.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        let size = file.metadata()?.len();
        drop(file);
        std::fs::rename(&tmp, &path)?;
        // The rename itself is durable once the directory is synced.
        File::open(&self.dir)?.sync_all()?;
        written.insert(path, now);
        Ok(Some((header.bytes, size)))
    }

    /// Saves every resource whose state changed since its last save, one at a time, off the async threads.
    pub(crate) async fn save_all(self: &Arc<Self>, resources: &[Kept]) {
        for r in resources {
            let (me, info, view) = (self.clone(), r.info.clone(), r.store.view());
            let started = Instant::now();
            match tokio::task::spawn_blocking(move || me.save(&info, &view)).await {
                Ok(Ok(Some((json, file)))) => {
                    tracing::debug!(resource = %r.info.qualified(), json, file, elapsed = ?started.elapsed(), "state saved")
                }
                Ok(Ok(None)) => {}
                Ok(Err(e)) => tracing::warn!(resource = %r.info.qualified(), error = %e, "state not saved"),
                Err(e) => tracing::warn!(resource = %r.info.qualified(), error = %e, "state not saved"),
            }
        }
    }
}

/// A resource whose state is saved: what it is and its store.
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    /// The resource.
    pub info: Resource,
    /// Its store.
    pub store: StoreReader,
}

/// Saves the cached resources' states periodically while it lives, and a
/// last time when [`Saver::finish`]ed.
#[derive(Debug)]
pub(crate) struct Saver {
    dir: Arc<StateDir>,
    resources: Vec<Kept>,
    periodic: Option<JoinHandle<()>>,
}

impl Saver {
    /// Saves `resources` into `dir` every `interval` (never, when zero) from now on.
    pub fn start(dir: Arc<StateDir>, resources: Vec<Kept>, interval: Duration) -> Saver {
        let periodic = (!interval.is_zero()).then(|| {
            let (dir, resources) = (dir.clone(), resources.clone());
            tokio::spawn(async move {
                let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    ticker.tick().await;
                    dir.save_all(&resources).await;
                }
            })
        });
        Saver { dir, resources, periodic }
    }

    /// Stops the periodic saves and saves once more (waiting for a save under way).
    pub async fn finish(mut self) {
        if let Some(periodic) = self.periodic.take() {
            periodic.abort();
        }
        let started = Instant::now();
        self.dir.save_all(&self.resources).await;
        tracing::info!(dir = %self.dir.dir.display(), elapsed = ?started.elapsed(), "state saved");
    }
}

impl Drop for Saver {
    fn drop(&mut self) {
        if let Some(periodic) = &self.periodic {
            periodic.abort();
        }
    }
}

fn read_u32(r: &mut impl Read) -> Result<u32, StateError> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_bytes(r: &mut impl Read, len: u32) -> Result<Vec<u8>, StateError> {
    let len = len as usize;
    let mut buf = Vec::with_capacity(len.min(MAX_RESERVE));
    r.take(len as u64).read_to_end(&mut buf)?;
    if buf.len() != len {
        return Err(StateError::Corrupt("cut short".into()));
    }
    Ok(buf)
}

fn len_u32(len: usize) -> io::Result<u32> {
    u32::try_from(len).map_err(|_| io::Error::other("an object over 4 GiB"))
}

#[cfg(test)]
mod tests {
    use crate::store::{CachedObject, StoreConfig, StoreWriter};

    use super::*;

    fn upstream() -> Upstream {
        Upstream { server: "https://10.0.0.1/".into(), ca: "sha256:ab".into(), version: "v1.36.2".into() }
    }

    fn pods() -> Resource {
        Resource::new("", "v1", "pods", "Pod", true)
    }

    fn pod(name: &str, rv: u64) -> CachedObject {
        let json = format!(r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}},"spec":{{"nodeName":"n1"}}}}"#);
        CachedObject::parse(Bytes::from(json), &[]).unwrap()
    }

    /// A state directory holding pods `a` and `b` at revision 7; the path of their file.
    fn saved(dir: &Path) -> (StateDir, PathBuf) {
        let state = StateDir::open(dir, upstream()).unwrap();
        let (mut writer, _) = StoreWriter::new(StoreConfig::default());
        assert!(state.save(&pods(), writer.view()).unwrap().is_none(), "nothing is saved before the first list");
        writer.replace(vec![pod("a", 3), pod("b", 5)], 7);
        let (json, _) = state.save(&pods(), writer.view()).unwrap().expect("saved");
        assert_eq!(json, writer.view().head().iter().map(|o| o.bytes().len() as u64).sum::<u64>());
        assert!(state.save(&pods(), writer.view()).unwrap().is_none(), "an unchanged state is not saved again");
        (state, dir.join("pods.v1.core.state"))
    }

    #[test]
    fn a_saved_state_comes_back_as_saved() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("state");
        let (state, path) = saved(&dir);
        assert!(path.exists() && !path.with_extension("state.tmp").exists());
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&path), mode(&dir)), (0o600, 0o700), "private: the objects may be Secrets");
        let back = state.load(&pods()).expect("restored");
        assert_eq!(back.rv, 7);
        let items: Vec<&[u8]> = back.items.iter().map(|b| &b[..]).collect();
        assert_eq!(items, [pod("a", 3).bytes().as_ref(), pod("b", 5).bytes().as_ref()]);
        assert!(state.load(&Resource::new("", "v1", "configmaps", "ConfigMap", true)).is_none(), "no file, no state");
    }

    #[test]
    fn another_resource_upstream_or_format_is_not_restored() {
        let dir = tempfile::tempdir().unwrap();
        let (_, path) = saved(dir.path());
        let file = || BufReader::new(File::open(&path).unwrap());
        let elsewhere = |u: Upstream| StateDir { dir: dir.path().into(), upstream: u, written: Mutex::default() };
        let other = elsewhere(Upstream { server: "https://10.0.0.2/".into(), ..upstream() });
        assert!(matches!(other.read(file(), &pods()), Err(StateError::OtherUpstream(u)) if u == upstream()));
        let other = elsewhere(Upstream { ca: "sha256:cd".into(), ..upstream() });
        assert!(matches!(other.read(file(), &pods()), Err(StateError::OtherUpstream(_))));
        let other = elsewhere(Upstream { version: "v1.37.0".into(), ..upstream() });
        assert!(matches!(other.read(file(), &pods()), Err(StateError::OtherUpstream(_))));
        let same = elsewhere(upstream());
        let apps_pods = Resource::new("apps", "v1", "pods", "Pod", true);
        assert!(matches!(same.read(file(), &apps_pods), Err(StateError::OtherResource(r)) if r == "/v1/pods"));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[MAGIC.len()] = 2;
        assert!(matches!(same.read(&bytes[..], &pods()), Err(StateError::Format(2))));
        assert!(matches!(same.read(&b"{\"kind\":\"Pod\"}"[..], &pods()), Err(StateError::NotState)));
    }

    #[test]
    fn a_damaged_file_is_never_restored() {
        let dir = tempfile::tempdir().unwrap();
        let (state, path) = saved(dir.path());
        let good = std::fs::read(&path).unwrap();
        let start = MAGIC.len() + 4;
        // Every single flipped bit of the frame, every cut, and trailing
        // bytes: refused, or (a bit zstd ignores) read as saved.
        let flipped = (start * 8..good.len() * 8).map(|bit| {
            let mut b = good.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            b
        });
        let cut = (0..good.len()).map(|len| good[..len].to_vec());
        let longer = [[&good[..], b"x"].concat(), [&good[..], &good[start..]].concat()];
        let as_saved = |s: Saved| (s.rv, s.items);
        let want = as_saved(state.read(&good[..], &pods()).unwrap());
        let mut refused = 0;
        for bad in flipped.chain(cut).chain(longer) {
            match state.read(&bad[..], &pods()) {
                Ok(s) => assert_eq!(as_saved(s), want, "{bad:?}"),
                Err(_) => refused += 1,
            }
        }
        assert!(refused >= (good.len() - start) * 8, "{refused}");
    }
}

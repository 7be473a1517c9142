//! The serving certificate, reloaded when its files change on disk (as
//! cert-manager and kubelet-mounted secrets rotate them): kache keeps
//! serving, new handshakes get the new certificate.
//!
//! Invariants: the files are looked at no more than once a second, at a
//! handshake; a change is loaded only when both files parse and match
//! (a half-written pair keeps the previous certificate, with a warning).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// How often the files are looked at.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// A certificate and key file pair, and what was last loaded from them.
#[derive(Debug)]
pub(crate) struct ReloadingCert {
    cert: PathBuf,
    key: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    checked: Instant,
    modified: (Option<SystemTime>, Option<SystemTime>),
    current: Arc<CertifiedKey>,
}

fn modified(p: &PathBuf) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Why the serving certificate or key cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CertError {
    /// A file that cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The files' contents do not make a serving certificate.
    #[error(transparent)]
    Tls(#[from] apimachinery::tls::TlsError),
}

fn load(cert: &PathBuf, key: &PathBuf) -> Result<Arc<CertifiedKey>, CertError> {
    let read = |p: &PathBuf| std::fs::read(p).map_err(|source| CertError::Read { path: p.clone(), source });
    Ok(apimachinery::tls::certified_key(&read(cert)?, &read(key)?)?)
}

impl ReloadingCert {
    /// Loads the pair now; an error here is a start-up error.
    pub fn new(cert: PathBuf, key: PathBuf) -> Result<ReloadingCert, CertError> {
        let current = load(&cert, &key)?;
        let state = State { checked: Instant::now(), modified: (modified(&cert), modified(&key)), current };
        Ok(ReloadingCert { cert, key, state: Mutex::new(state) })
    }

    fn current(&self) -> Arc<CertifiedKey> {
        let mut s = self.state.lock();
        if s.checked.elapsed() >= CHECK_EVERY {
            s.checked = Instant::now();
            let now = (modified(&self.cert), modified(&self.key));
            if now != s.modified {
                match load(&self.cert, &self.key) {
                    Ok(key) => {
                        s.current = key;
                        s.modified = now;
                        tracing::info!(cert = %self.cert.display(), "serving certificate reloaded");
                    }
                    Err(e) => tracing::warn!(error = %e, "serving certificate changed but does not load; keeping the previous one"),
                }
            }
        }
        s.current.clone()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

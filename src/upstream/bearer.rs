//! The `Authorization` header kache sends upstream. A token file (the
//! in-cluster service account's, which the kubelet rotates) is re-read at
//! most once a minute, like client-go does; a read failure keeps the last
//! good token.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::HeaderValue;
use parking_lot::Mutex;

use super::UpstreamError;

/// How often a token file is re-read.
const TOKEN_FILE_REFRESH: Duration = Duration::from_secs(60);

/// kache's credentials in the `Authorization` header, if any.
#[derive(Debug, Clone)]
pub enum Bearer {
    /// No header (client certificates or an open apiserver).
    None,
    /// A fixed bearer token.
    Token(HeaderValue),
    /// A bearer token read from a file that may rotate.
    TokenFile(Arc<TokenFile>),
}

/// A token file and the token last read from it.
#[derive(Debug)]
pub struct TokenFile {
    path: PathBuf,
    cached: Mutex<(HeaderValue, Instant)>,
}

impl Bearer {
    /// A fixed bearer token.
    pub fn token(token: &str) -> Result<Bearer, UpstreamError> {
        bearer(token).map(Bearer::Token)
    }

    /// A token read from `path` now and again every minute.
    pub(crate) fn token_file(path: PathBuf) -> Result<Bearer, UpstreamError> {
        let value = read_token(&path)?;
        Ok(Bearer::TokenFile(Arc::new(TokenFile { path, cached: Mutex::new((value, Instant::now())) })))
    }

    /// The header value to send now.
    pub fn header(&self) -> Option<HeaderValue> {
        match self {
            Bearer::None => None,
            Bearer::Token(v) => Some(v.clone()),
            Bearer::TokenFile(f) => Some(f.current()),
        }
    }
}

impl TokenFile {
    fn current(&self) -> HeaderValue {
        let mut cached = self.cached.lock();
        if cached.1.elapsed() >= TOKEN_FILE_REFRESH {
            match read_token(&self.path) {
                Ok(v) => cached.0 = v,
                Err(e) => tracing::warn!(path = %self.path.display(), error = %e, "keeping the previous upstream token"),
            }
            cached.1 = Instant::now();
        }
        cached.0.clone()
    }
}

fn read_token(path: &PathBuf) -> Result<HeaderValue, UpstreamError> {
    let text = std::fs::read_to_string(path).map_err(|e| UpstreamError::Config(format!("token file {}: {e}", path.display())))?;
    bearer(text.trim())
}

fn bearer(token: &str) -> Result<HeaderValue, UpstreamError> {
    let mut v = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
        .map_err(|_| UpstreamError::Config("the token has characters a header cannot carry".into()))?;
    v.set_sensitive(true);
    Ok(v)
}

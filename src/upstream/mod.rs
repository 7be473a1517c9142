//! kache's side of the apiserver: where it is and how to authenticate
//! ([`connect`], [`bearer`], [`tls`]), one pooled client ([`client`]), which
//! resources exist ([`discovery`]), one reflector per cached resource that
//! keeps its store exactly in step with upstream ([`reflector`]), what
//! kache learns of upstream by asking ([`capability`]), and the proof that
//! a store is fresh for a consistent read ([`freshness`]), tried where its
//! expected cost says so ([`plan`], from [`costs`]).

pub mod bearer;
pub(crate) mod capability;
pub mod client;
pub mod connect;
pub mod consistency;
pub mod costs;
pub mod discovery;
pub mod freshness;
pub mod lane;
pub mod plan;
pub(crate) mod pool;
pub mod reflector;
pub mod store_sink;
pub mod tls;

/// Any error, with its causes, that can cross tasks.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why talking to the apiserver failed.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The configuration (flags, kubeconfig, certificates) is unusable.
    #[error("{0}")]
    Config(String),
    /// The connection failed or broke (its causes kept).
    #[error("upstream connection: {}", chain(.0.as_ref()))]
    Transport(#[source] BoxError),
    /// The apiserver answered with an error.
    #[error("upstream answered {code}: {message}")]
    Status {
        /// The HTTP status code.
        code: u16,
        /// The `Status` message, or the start of the body.
        message: String,
    },
    /// The apiserver's answer could not be understood (its cause kept).
    #[error("upstream sent {}", chain(.0.as_ref()))]
    Decode(#[source] BoxError),
    /// The store refused what upstream sent (an object it cannot hold, an
    /// event that does not follow).
    #[error("the store refused upstream's answer: {0}")]
    Refused(#[source] BoxError),
}

/// `e` and its causes, each after a colon.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

//! Who a client is and whether it may do what it asks, decided as the
//! apiserver decides, by the apiserver: client certificates against
//! `--client-ca-file` (CN = user, O = groups), bearer tokens by a
//! `TokenReview` upstream, anonymous only with `--anonymous-auth`; an
//! action by a `SubjectAccessReview` upstream. The request path's stages
//! (`api::chain`) call these in the apiserver's order.
//!
//! Invariants: reviews are cached (tokens: `authn_ttl` valid,
//! `authn_failure_ttl` invalid; decisions: `allow_ttl`, `deny_ttl`) and
//! identical concurrent reviews coalesced into one upstream call
//! ([`reviews::Reviews`]); a review that fails (upstream unreachable) is a
//! 401/403 now and not cached.

mod reviews;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::collections::HashMap;

use apimachinery::auth::{self, Attributes, UserInfo};
use apimachinery::impersonation::Mode;
use apimachinery::status::ApiError;
use parking_lot::Mutex;

use crate::upstream::client::Client;
use reviews::Reviews;

/// How clients authenticate, and how long review outcomes hold.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// Bearer tokens are checked with a `TokenReview`.
    pub tokens: bool,
    /// Verified client certificates authenticate (the TLS layer checks them against the client CA).
    pub certificates: bool,
    /// Unauthenticated requests proceed as `system:anonymous`.
    pub anonymous: bool,
    pub authn_ttl: Duration,
    pub authn_failure_ttl: Duration,
    pub allow_ttl: Duration,
    pub deny_ttl: Duration,
}

/// Upstream review calls and refusals, for `/metrics`.
#[derive(Debug, Default)]
pub struct AuthStats {
    pub token_reviews: AtomicU64,
    pub access_reviews: AtomicU64,
    pub unauthenticated: AtomicU64,
    pub forbidden: AtomicU64,
}

/// A connection's client certificate, as the authenticator sees it.
#[derive(Debug, Clone)]
pub enum Certificate {
    /// None presented (or no client CA configured).
    None,
    /// Presented, but it does not chain to the client CA or names no one: a
    /// token may still authenticate the request; nothing else may.
    Rejected,
    /// A verified certificate's user (CN, groups O).
    User(UserInfo),
}

impl Certificate {
    /// The certificate of a connection whose peer presented `chain`, verified by `clients`.
    pub fn of(
        chain: Option<&[rustls::pki_types::CertificateDer<'_>]>,
        clients: Option<&apimachinery::tls::ClientCertificates>,
    ) -> Certificate {
        match (chain.filter(|c| !c.is_empty()), clients) {
            (None, _) | (_, None) => Certificate::None,
            (Some(chain), Some(clients)) if clients.verify(chain) => {
                UserInfo::from_certificate(&chain[0]).map_or(Certificate::Rejected, Certificate::User)
            }
            (Some(_), Some(_)) => Certificate::Rejected,
        }
    }
}

/// What the authorizer said of one request: allowed or not, and why (the
/// apiserver's `authorization.k8s.io/decision` and `…/reason` audit annotations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub allowed: bool,
    pub reason: String,
}

/// An authorizer's decision.
#[derive(Debug, Clone)]
struct Decision {
    allowed: bool,
    reason: String,
}

/// Reviews by the apiserver, cached and coalesced: who a bearer token
/// names (`TokenReview`) and what a user may do (`SubjectAccessReview`),
/// with the impersonation mode that last allowed each requester.
#[derive(Debug)]
pub struct Reviewer {
    client: Client,
    config: AuthConfig,
    tokens: Reviews<String, Option<UserInfo>>,
    decisions: Reviews<(UserInfo, Attributes), Option<Decision>>,
    /// The impersonation mode that last allowed each requester (the apiserver's `modeIndexCache`).
    modes: Mutex<HashMap<String, Mode>>,
    pub stats: AuthStats,
}

/// Keys each cache holds at most.
const CAPACITY: usize = 100_000;

/// Requesters whose last impersonation mode is remembered (the apiserver's LRU holds 10,000; kache
/// forgets them all when full, which only reorders the modes the next requests try).
const MODES: usize = 10_000;

impl Reviewer {
    pub fn new(client: Client, config: AuthConfig) -> Reviewer {
        let (tokens, decisions) = (Reviews::new(CAPACITY), Reviews::new(CAPACITY));
        Reviewer { client, config, tokens, decisions, modes: Mutex::default(), stats: AuthStats::default() }
    }

    /// The impersonation mode that last allowed `requester`, tried first.
    pub(crate) fn impersonation_mode(&self, requester: &str) -> Option<Mode> {
        self.modes.lock().get(requester).copied()
    }

    /// `mode` allowed `requester` to impersonate.
    pub(crate) fn remember_impersonation_mode(&self, requester: &str, mode: Mode) {
        let mut modes = self.modes.lock();
        if modes.len() >= MODES && !modes.contains_key(requester) {
            modes.clear();
        }
        modes.insert(requester.to_string(), mode);
    }

    /// How clients authenticate and how long reviews hold.
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// A client that presented no valid credential: counted, and the apiserver's 401.
    pub fn unauthenticated(&self) -> ApiError {
        self.stats.unauthenticated.fetch_add(1, Ordering::Relaxed);
        ApiError::unauthorized()
    }

    /// The user a bearer token names, by a `TokenReview` (cached); `None`: invalid.
    pub(crate) async fn review_token(&self, token: &str) -> Option<UserInfo> {
        let review = || async move {
            self.stats.token_reviews.fetch_add(1, Ordering::Relaxed);
            let body = serde_json::to_vec(&auth::token_review(token)).unwrap_or_default();
            match self.client.post_json("/apis/authentication.k8s.io/v1/tokenreviews", body).await {
                Ok(resp) => match auth::review_status(&resp) {
                    Some(s) if s.authenticated && !s.user.name.is_empty() => (Some(s.user), self.config.authn_ttl),
                    Some(_) => (None, self.config.authn_failure_ttl),
                    None => (None, Duration::ZERO),
                },
                Err(e) => {
                    tracing::warn!(error = %e, "a TokenReview failed; the request is refused");
                    (None, Duration::ZERO)
                }
            }
        };
        self.tokens.get(&token.to_string(), review).await
    }

    /// Whether `user` may do `attrs`; the apiserver's 403 if not.
    pub(crate) async fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Result<(), ApiError> {
        self.decide(user, attrs).await.0
    }

    /// [`Reviewer::authorize`]'s answer, and the authorizer's [`Verdict`] (a failed review is a deny).
    pub(crate) async fn decide(&self, user: &UserInfo, attrs: &Attributes) -> (Result<(), ApiError>, Verdict) {
        let key = (user.clone(), attrs.clone());
        let review = || async move {
            self.stats.access_reviews.fetch_add(1, Ordering::Relaxed);
            let body = serde_json::to_vec(&attrs.review(user)).unwrap_or_default();
            match self.client.post_json("/apis/authorization.k8s.io/v1/subjectaccessreviews", body).await {
                Ok(resp) => match auth::review_status(&resp) {
                    Some(s) => {
                        let ttl = if s.allowed { self.config.allow_ttl } else { self.config.deny_ttl };
                        (Some(Decision { allowed: s.allowed, reason: s.reason }), ttl)
                    }
                    None => (None, Duration::ZERO),
                },
                Err(e) => {
                    tracing::warn!(error = %e, "a SubjectAccessReview failed; the request is refused");
                    (None, Duration::ZERO)
                }
            }
        };
        match self.decisions.get(&key, review).await {
            Some(Decision { allowed: true, reason }) => (Ok(()), Verdict { allowed: true, reason }),
            Some(Decision { reason, .. }) => {
                self.stats.forbidden.fetch_add(1, Ordering::Relaxed);
                (Err(attrs.forbidden(&user.name, &reason)), Verdict { allowed: false, reason })
            }
            None => {
                self.stats.forbidden.fetch_add(1, Ordering::Relaxed);
                let reason = "the authorization review failed".to_string();
                (Err(attrs.forbidden(&user.name, &reason)), Verdict { allowed: false, reason })
            }
        }
    }
}

/// A watcher's standing permission, re-checked while its stream lives.
#[derive(Debug, Clone)]
pub struct Permission {
    reviewer: std::sync::Arc<Reviewer>,
    user: UserInfo,
    attrs: Attributes,
}

impl Permission {
    pub fn new(reviewer: std::sync::Arc<Reviewer>, user: UserInfo, attrs: Attributes) -> Permission {
        Permission { reviewer, user, attrs }
    }

    /// How often the permission is re-checked: when its cached allow expires.
    pub fn interval(&self) -> Duration {
        self.reviewer.config.allow_ttl.max(Duration::from_secs(1))
    }

    /// Whether the user still may (a fresh review once the cached allow has expired).
    pub(crate) async fn still_allowed(&self) -> bool {
        self.reviewer.authorize(&self.user, &self.attrs).await.is_ok()
    }
}

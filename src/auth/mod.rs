//! Who a client is and whether it may do what it asks, decided as the
//! apiserver decides, before any byte is served: client certificates
//! against `--client-ca-file` (CN = user, O = groups), bearer tokens by a
//! `TokenReview` upstream, anonymous only with `--anonymous-auth`; every
//! request kache answers from memory authorized by a `SubjectAccessReview`
//! upstream. A client's own `Impersonate-*` headers are honoured only when
//! it may impersonate (reviewed the same way). Requests passed through go
//! upstream as the client ([`impersonation_headers`]).
//!
//! Invariants: no request is served from memory without an allow for its
//! user and attributes; reviews are cached (tokens: `authn_ttl` valid,
//! `authn_failure_ttl` invalid; decisions: `allow_ttl`, `deny_ttl`) and
//! identical concurrent reviews coalesced into one upstream call
//! ([`reviews::Reviews`]); a review that fails (upstream unreachable) is a
//! 401/403 now and not cached.

mod reviews;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use apimachinery::auth::{self, Attributes, UserInfo};
use apimachinery::status::ApiError;
use http::{HeaderMap, HeaderName, HeaderValue};

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

/// An authorizer's decision.
#[derive(Debug, Clone)]
struct Decision {
    allowed: bool,
    reason: String,
}

/// The gate every request passes.
#[derive(Debug)]
pub struct Gate {
    client: Client,
    config: AuthConfig,
    tokens: Reviews<String, Option<UserInfo>>,
    decisions: Reviews<(UserInfo, Attributes), Option<Decision>>,
    pub stats: AuthStats,
}

/// Keys each cache holds at most.
const CAPACITY: usize = 100_000;

impl Gate {
    pub fn new(client: Client, config: AuthConfig) -> Gate {
        Gate { client, config, tokens: Reviews::new(CAPACITY), decisions: Reviews::new(CAPACITY), stats: AuthStats::default() }
    }

    /// The client's user: its certificate's, its token's, or anonymous;
    /// then the user it impersonates, if it may. 401 or 403 otherwise.
    pub async fn authenticate(&self, headers: &HeaderMap, certificate: &Certificate) -> Result<UserInfo, ApiError> {
        let user = self.identify(headers, certificate).await;
        let user = user.ok_or_else(|| {
            self.stats.unauthenticated.fetch_add(1, Ordering::Relaxed);
            ApiError::unauthorized()
        })?;
        self.impersonated(user, headers).await
    }

    /// As the apiserver's union of authenticators: a valid certificate, else
    /// a valid token; anonymous only when the request carries no credential.
    async fn identify(&self, headers: &HeaderMap, certificate: &Certificate) -> Option<UserInfo> {
        if let (Certificate::User(user), true) = (certificate, self.config.certificates) {
            return Some(user.clone());
        }
        let token = headers.get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|a| a.strip_prefix("Bearer "));
        match token.map(str::trim).filter(|t| !t.is_empty()) {
            Some(token) if self.config.tokens => self.review_token(token).await,
            Some(_) => None,
            None if matches!(certificate, Certificate::Rejected) || headers.contains_key(http::header::AUTHORIZATION) => None,
            None => self.config.anonymous.then(UserInfo::anonymous),
        }
    }

    async fn review_token(&self, token: &str) -> Option<UserInfo> {
        let review = async {
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
    pub async fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Result<(), ApiError> {
        let key = (user.clone(), attrs.clone());
        let review = async {
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
            Some(Decision { allowed: true, .. }) => Ok(()),
            Some(Decision { reason, .. }) => {
                self.stats.forbidden.fetch_add(1, Ordering::Relaxed);
                Err(attrs.forbidden(&user.name, &reason))
            }
            None => {
                self.stats.forbidden.fetch_add(1, Ordering::Relaxed);
                Err(attrs.forbidden(&user.name, "the authorization review failed"))
            }
        }
    }

    /// The user `user` acts as after its own `Impersonate-*` headers, each
    /// of which it must be allowed to impersonate (as the apiserver's
    /// impersonation filter checks it).
    async fn impersonated(&self, user: UserInfo, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
        let values =
            |name: &str| -> Vec<String> { headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).map(str::to_string).collect() };
        let Some(name) = values("impersonate-user").into_iter().next() else { return Ok(user) };
        let mut checks = vec![match name.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':')) {
            Some((ns, sa)) => impersonate("", "serviceaccounts", "", ns, sa),
            None => impersonate("", "users", "", "", &name),
        }];
        let mut groups = values("impersonate-group");
        checks.extend(groups.iter().map(|g| impersonate("", "groups", "", "", g)));
        let uid = values("impersonate-uid").into_iter().next().unwrap_or_default();
        if !uid.is_empty() {
            checks.push(impersonate("authentication.k8s.io", "uids", "", "", &uid));
        }
        let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
        for (k, v) in headers {
            if let Some(key) = k.as_str().strip_prefix("impersonate-extra-") {
                let key = percent_decode(key);
                let value = v.to_str().unwrap_or_default().to_string();
                checks.push(impersonate("authentication.k8s.io", "userextras", &key, "", &value));
                extra.entry(key).or_default().push(value);
            }
        }
        for a in &checks {
            self.authorize(&user, a).await?;
        }
        if name != "system:anonymous" && !groups.iter().any(|g| g == auth::AUTHENTICATED) {
            groups.push(auth::AUTHENTICATED.into());
        }
        Ok(UserInfo { name, uid, groups, extra })
    }
}

/// A watcher's standing permission, re-checked while its stream lives.
#[derive(Debug, Clone)]
pub struct Access {
    gate: std::sync::Arc<Gate>,
    user: UserInfo,
    attrs: Attributes,
}

impl Access {
    pub fn new(gate: std::sync::Arc<Gate>, user: UserInfo, attrs: Attributes) -> Access {
        Access { gate, user, attrs }
    }

    /// How often the permission is re-checked: when its cached allow expires.
    pub fn interval(&self) -> Duration {
        self.gate.config.allow_ttl.max(Duration::from_secs(1))
    }

    /// Whether the user still may (a fresh review once the cached allow has expired).
    pub async fn still_allowed(&self) -> bool {
        self.gate.authorize(&self.user, &self.attrs).await.is_ok()
    }
}

fn impersonate(group: &str, resource: &str, subresource: &str, namespace: &str, name: &str) -> Attributes {
    Attributes {
        verb: "impersonate".into(),
        resource_request: true,
        group: group.into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Attributes::default()
    }
}

fn percent_decode(s: &str) -> String {
    form_urlencoded::parse(format!("k={s}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_else(|| s.to_string())
}

/// The headers a request passed through carries so that upstream sees the
/// client's user: every `Authorization` and `Impersonate-*` header of the
/// client removed (kache's own credentials go with the request), and the
/// user, groups, uid and extras impersonated.
pub fn impersonation_headers(headers: &mut HeaderMap, user: &UserInfo) {
    let names: Vec<HeaderName> = headers.keys().filter(|k| k.as_str().starts_with("impersonate-")).cloned().collect();
    for n in names {
        headers.remove(n);
    }
    headers.remove(http::header::AUTHORIZATION);
    let value = |s: &str| HeaderValue::from_str(s).ok();
    if let Some(v) = value(&user.name) {
        headers.insert("impersonate-user", v);
    }
    for g in &user.groups {
        if let Some(v) = value(g) {
            headers.append("impersonate-group", v);
        }
    }
    if let Some(v) = value(&user.uid).filter(|_| !user.uid.is_empty()) {
        headers.insert("impersonate-uid", v);
    }
    for (k, vs) in &user.extra {
        let key: String = form_urlencoded::byte_serialize(k.as_bytes()).collect();
        if let Ok(name) = HeaderName::from_bytes(format!("impersonate-extra-{}", key.to_ascii_lowercase()).as_bytes()) {
            for v in vs {
                if let Some(v) = value(v) {
                    headers.append(name.clone(), v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passed_through_requests_impersonate_the_client() {
        let mut h = HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, "Bearer client".parse().unwrap());
        h.insert("impersonate-user", "root".parse().unwrap());
        h.insert("accept", "application/json".parse().unwrap());
        let user = UserInfo {
            name: "alice".into(),
            uid: "u1".into(),
            groups: vec!["dev".into(), auth::AUTHENTICATED.into()],
            extra: [("scopes.example.com/x".to_string(), vec!["a".to_string()])].into(),
        };
        impersonation_headers(&mut h, &user);
        assert!(h.get(http::header::AUTHORIZATION).is_none(), "the client's credentials never go upstream");
        assert_eq!(h.get("impersonate-user").unwrap(), "alice");
        assert_eq!(h.get_all("impersonate-group").iter().collect::<Vec<_>>(), ["dev", "system:authenticated"]);
        assert_eq!(h.get("impersonate-uid").unwrap(), "u1");
        assert_eq!(h.get("impersonate-extra-scopes.example.com%2fx").unwrap(), "a");
        assert_eq!(h.get("accept").unwrap(), "application/json");
    }
}

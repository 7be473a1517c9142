//! Stage 1, authentication (the apiserver's `WithAuthentication` over its
//! union of authenticators): who the client is, before anything else — a
//! verified client certificate's user, else a valid bearer token's (a
//! `TokenReview` upstream, cached), else `system:anonymous` when allowed and
//! the request carries no credential at all; otherwise the apiserver's 401.
//!
//! Invariant: without a reviewer (no client authentication, loopback only) no
//! one is authenticated and every request goes on as kache's own.

use apimachinery::auth::UserInfo;
use apimachinery::status::ApiError;
use http::HeaderMap;
use http::header::AUTHORIZATION;

use crate::access::{Certificate, Reviewer};

/// The client's user (`None`: kache authenticates no one); 401 when it presented no valid credential.
pub async fn authenticate(
    reviewer: Option<&Reviewer>,
    headers: &HeaderMap,
    certificate: &Certificate,
) -> Result<Option<UserInfo>, ApiError> {
    let Some(reviewer) = reviewer else { return Ok(None) };
    identify(reviewer, headers, certificate).await.map(Some).ok_or_else(|| reviewer.unauthenticated())
}

/// As the apiserver's union of authenticators: a valid certificate, else a
/// valid token; anonymous only when the request carries no credential.
async fn identify(reviewer: &Reviewer, headers: &HeaderMap, certificate: &Certificate) -> Option<UserInfo> {
    let config = reviewer.config();
    if let (Certificate::User(user), true) = (certificate, config.certificates) {
        return Some(user.clone());
    }
    let token = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|a| a.strip_prefix("Bearer "));
    match token.map(str::trim).filter(|t| !t.is_empty()) {
        Some(token) if config.tokens => reviewer.review_token(token).await,
        Some(_) => None,
        None if matches!(certificate, Certificate::Rejected) || headers.contains_key(AUTHORIZATION) => None,
        None => config.anonymous.then(UserInfo::anonymous),
    }
}

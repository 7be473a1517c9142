//! Stage 3, impersonation (the apiserver's `WithConstrainedImpersonation`):
//! a client's own `Impersonate-*` headers make it act as another user, once
//! one of the apiserver's impersonation modes allows it
//! (`apimachinery::impersonation`): the mode that last allowed this client
//! first, then the others in the apiserver's order, each mode's checks
//! asked of the apiserver's authorizer.
//!
//! Invariant: the user a request goes on as is either the authenticated
//! one or one a mode allowed — every check of that mode allowed — and the
//! mode is what the audit event names.

use apimachinery::auth::{Attributes, UserInfo};
use apimachinery::impersonation::{Mode, Step, Wanted};
use apimachinery::status::ApiError;
use http::HeaderMap;

use crate::access::Reviewer;

/// Whom a request acts as.
#[derive(Debug)]
pub struct Acting {
    /// The authenticated user, or the one it impersonates.
    pub user: UserInfo,
    /// The mode that allowed the impersonation (`None`: none asked for).
    pub by: Option<Mode>,
}

/// Whom `user` acts as after its own `Impersonate-*` headers, for `request`;
/// the apiserver's 400 for headers without a user, its 403 when no mode allows it.
pub async fn impersonate(reviewer: &Reviewer, user: UserInfo, headers: &HeaderMap, request: &Attributes) -> Result<Acting, ApiError> {
    let headers = headers.iter().filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)));
    let Some(wanted) = Wanted::of(headers)? else { return Ok(Acting { user, by: None }) };
    let last = reviewer.impersonation_mode(&user.name);
    let order = last.into_iter().chain(Mode::ALL.into_iter().filter(|m| Some(*m) != last));
    let mut first_refusal = None;
    for mode in order.filter(|m| m.applies(&wanted, &user)) {
        match allowed(reviewer, mode.steps(&wanted, &user, request)).await {
            Ok(()) => {
                reviewer.remember_impersonation_mode(&user.name, mode);
                return Ok(Acting { user: mode.user(&wanted), by: Some(mode) });
            }
            Err(e) => drop(first_refusal.get_or_insert(e)),
        }
    }
    // The legacy mode applies to every user: some mode refused.
    Err(first_refusal.unwrap_or_else(|| ApiError::internal("all impersonation modes failed")))
}

/// Whether every step allows.
async fn allowed(reviewer: &Reviewer, steps: Vec<Step>) -> Result<(), ApiError> {
    for step in steps {
        match step {
            Step::Check { user, attributes } => reviewer.authorize(&user, &attributes).await?,
            Step::Either { user, wildcard, each } => {
                if reviewer.authorize(&user, &wildcard).await.is_err() {
                    for a in &each {
                        reviewer.authorize(&user, a).await?;
                    }
                }
            }
            Step::Refuse(e) => return Err(e),
        }
    }
    Ok(())
}

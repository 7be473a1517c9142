//! Stage 6, authorization (the apiserver's `WithAuthorization`), for what
//! kache answers itself: the apiserver's authorizer is asked, by a
//! `SubjectAccessReview` (cached), whether the user may do what the request
//! asks. What kache passes through goes upstream as the client
//! (impersonation), where the apiserver authorizes it itself.
//!
//! Invariant: nothing is served from memory, and no figure of kache's, to a
//! user without the authorizer's allow; a watch keeps its [`Permission`] and
//! ends once the allow is withdrawn.

use std::sync::Arc;

use apimachinery::auth::{Attributes, UserInfo};
use apimachinery::status::ApiError;

use crate::access::{Permission, Reviewer, Verdict};

/// Whether `user` may do `attrs` (anyone may, without client
/// authentication); for a user under review, the standing [`Permission`] a
/// watch re-checks while it lives — and the authorizer's [`Verdict`], for
/// the audit.
pub async fn authorize(
    reviewer: Option<&Arc<Reviewer>>,
    user: Option<&UserInfo>,
    attrs: Attributes,
) -> (Result<Option<Permission>, ApiError>, Option<Verdict>) {
    let (Some(reviewer), Some(user)) = (reviewer, user) else { return (Ok(None), None) };
    let (allowed, verdict) = reviewer.decide(user, &attrs).await;
    (allowed.map(|()| Some(Permission::new(reviewer.clone(), user.clone(), attrs))), Some(verdict))
}

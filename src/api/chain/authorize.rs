//! Stage 6, authorization (the apiserver's `WithAuthorization`), for what
//! kache answers itself: the apiserver's authorizer is asked, by a
//! `SubjectAccessReview` (cached), whether the user may do what the request
//! asks. What kache passes through goes upstream as the client
//! (impersonation), where the apiserver authorizes it itself.
//!
//! Invariant: nothing is served from memory, and no figure of kache's, to a
//! user without the authorizer's allow; a watch keeps its [`Access`] and
//! ends once the allow is withdrawn.

use std::sync::Arc;

use apimachinery::auth::{Attributes, UserInfo};
use apimachinery::status::ApiError;

use crate::access::{Access, Gate, Verdict};

/// Whether `user` may do `attrs` (anyone may, without client
/// authentication); for a user under review, the standing [`Access`] a
/// watch re-checks while it lives — and the authorizer's [`Verdict`], for
/// the audit.
pub async fn authorize(
    gate: Option<&Arc<Gate>>,
    user: Option<&UserInfo>,
    attrs: Attributes,
) -> (Result<Option<Access>, ApiError>, Option<Verdict>) {
    let (Some(gate), Some(user)) = (gate, user) else { return (Ok(None), None) };
    let (allowed, verdict) = gate.decide(user, &attrs).await;
    (allowed.map(|()| Some(Access::new(gate.clone(), user.clone(), attrs))), Some(verdict))
}

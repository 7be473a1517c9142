//! Who is calling and whether they may: the client certificate the TLS
//! layer verified, and the policy's authentication, impersonation and
//! authorization, as the apiserver's filters apply them.

use http::{HeaderMap, Request};

use super::encoding::header;
use crate::policy::Policy;
use crate::request_body::Drained;
use apimachinery::auth::UserInfo;
use apimachinery::status::ApiError;

/// A client certificate the TLS layer saw, and the user it names.
#[derive(Debug, Clone)]
pub struct ClientCert {
    /// It chains to the client CA.
    pub verified: bool,
    /// The user it names, when verified and it has a common name.
    pub user: Option<UserInfo>,
}

/// Authenticates the request (a verified client certificate, else a bearer
/// token of the policy, else anonymous if the policy allows it) and applies
/// its impersonation, as the apiserver's filters do before priority and fairness.
pub(super) fn identify(policy: &Policy, req: &Request<Drained>, client_cert: Option<ClientCert>) -> Result<UserInfo, ApiError> {
    let client_cert_presented = client_cert.is_some();
    let token = header(req.headers(), http::header::AUTHORIZATION.as_str()).and_then(|a| a.strip_prefix("Bearer ")).map(str::trim);
    // As the apiserver's union of authenticators: a valid certificate, else a valid token; a certificate that does not verify is no one (401 unless a token authenticates).
    let user = match (client_cert.and_then(|c| c.user), token) {
        (Some(user), _) => Some(user),
        (None, Some(token)) => policy.authenticate(token),
        (None, None) if client_cert_presented => None,
        (None, None) => policy.anonymous.then(UserInfo::anonymous),
    };
    let user = user.ok_or_else(ApiError::unauthorized)?;
    Ok(policy.impersonated(&user, req.headers())?.unwrap_or(user))
}

/// Who a request is without a policy: whom it impersonates, else an
/// administrator (`system:masters`), as the credentials of a cluster's
/// admin are — the simulator lets every request in.
pub(super) fn unpoliced(headers: &HeaderMap) -> UserInfo {
    let values = |name: &str| -> Vec<String> { headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).map(str::to_string).collect() };
    match values("impersonate-user").into_iter().next() {
        Some(name) => {
            let mut groups = values("impersonate-group");
            groups.push(apimachinery::auth::AUTHENTICATED.into());
            UserInfo { name, groups, ..UserInfo::default() }
        }
        None => UserInfo {
            name: "admin".into(),
            groups: vec!["system:masters".into(), apimachinery::auth::AUTHENTICATED.into()],
            ..UserInfo::default()
        },
    }
}

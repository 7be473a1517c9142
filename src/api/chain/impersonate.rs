//! Stage 3, impersonation (the apiserver's `WithImpersonation`): a client's
//! own `Impersonate-*` headers make it act as another user — each header
//! allowed only if the client may `impersonate` that user, group, uid or
//! extra, as the apiserver's filter checks it.
//!
//! Invariant: the user a request goes on as is either the authenticated
//! one or one every impersonation header of it was authorized for.

use std::collections::BTreeMap;

use apimachinery::auth::{self, Attributes, UserInfo};
use apimachinery::status::ApiError;
use http::HeaderMap;

use crate::access::Gate;

/// The user `user` acts as after its own `Impersonate-*` headers; 403 when
/// it may not impersonate one of them.
pub async fn impersonate(gate: &Gate, user: UserInfo, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
    let values = |name: &str| -> Vec<String> { headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).map(str::to_string).collect() };
    let Some(name) = values("impersonate-user").into_iter().next() else { return Ok(user) };
    let mut checks = vec![match name.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':')) {
        Some((ns, sa)) => attributes("", "serviceaccounts", "", ns, sa),
        None => attributes("", "users", "", "", &name),
    }];
    let mut groups = values("impersonate-group");
    checks.extend(groups.iter().map(|g| attributes("", "groups", "", "", g)));
    let uid = values("impersonate-uid").into_iter().next().unwrap_or_default();
    if !uid.is_empty() {
        checks.push(attributes("authentication.k8s.io", "uids", "", "", &uid));
    }
    let mut extra = BTreeMap::<String, Vec<String>>::new();
    for (k, v) in headers {
        if let Some(key) = k.as_str().strip_prefix("impersonate-extra-") {
            let key = percent_decode(key);
            let value = v.to_str().unwrap_or_default().to_string();
            checks.push(attributes("authentication.k8s.io", "userextras", &key, "", &value));
            extra.entry(key).or_default().push(value);
        }
    }
    for a in &checks {
        gate.authorize(&user, a).await?;
    }
    if name != "system:anonymous" && !groups.iter().any(|g| g == auth::AUTHENTICATED) {
        groups.push(auth::AUTHENTICATED.into());
    }
    Ok(UserInfo { name, uid, groups, extra })
}

/// The `impersonate` action on one user, group, uid or extra.
fn attributes(group: &str, resource: &str, subresource: &str, namespace: &str, name: &str) -> Attributes {
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

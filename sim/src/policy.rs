//! The simulator's identities and permissions from a static policy file
//! (`--policy FILE`, JSON): users with their tokens, uid, groups and extra,
//! and RBAC-like allow rules. The simulator answers `TokenReview`s and
//! `SubjectAccessReview`s from it and enforces it on its own requests,
//! impersonation included — one oracle for kache's decisions.
//!
//! ```json
//! {"anonymous": false,
//!  "users": [{"name": "alice", "uid": "u-1", "groups": ["dev"], "tokens": ["alice-token"]}],
//!  "rules": [{"subjects": ["group:dev"], "verbs": ["get", "list", "watch"], "groups": [""],
//!             "resources": ["pods"], "namespaces": ["default"]}]}
//! ```
//!
//! Guarantees: a rule allows when its subjects name the user (`user:NAME`)
//! or one of its groups (`group:NAME`), and its verbs, API groups and
//! resources (`pods/log` for a subresource) hold the request's or `*`;
//! `namespaces` (absent: any, cluster scope included) and `names` (absent:
//! any; present: the request must name one) narrow it; `paths` (with a
//! trailing `*`) match non-resource requests; `reason` is what a review
//! says when the rule allows (RBAC's words, to compare audit annotations
//! with the apiserver's). `system:masters` may do
//! anything; every authenticated user may read discovery, version and
//! health paths, as the apiserver's default roles allow. Nothing else is
//! allowed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use apimachinery::auth::{AUTHENTICATED, Attributes, UserInfo};
use apimachinery::impersonation::{Mode, Step, Wanted};
use apimachinery::status::ApiError;
use http::HeaderMap;
use parking_lot::Mutex;
use serde::Deserialize;

/// The policy file.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Policy {
    /// Whether unauthenticated requests proceed as `system:anonymous` (else 401).
    #[serde(default)]
    pub anonymous: bool,
    #[serde(default)]
    users: Vec<PolicyUser>,
    #[serde(default)]
    rules: Vec<Rule>,
    /// The impersonation mode that last allowed each requester (the apiserver's mode index cache).
    #[serde(skip)]
    modes: Arc<Mutex<HashMap<String, Mode>>>,
}

#[derive(Debug, Clone, Deserialize)]
struct PolicyUser {
    name: String,
    #[serde(default)]
    uid: String,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    extra: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    tokens: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct Rule {
    subjects: Vec<String>,
    verbs: Vec<String>,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    resources: Vec<String>,
    namespaces: Option<Vec<String>>,
    names: Option<Vec<String>>,
    #[serde(default)]
    paths: Vec<String>,
    /// What the authorizer says when this rule allows (a `SubjectAccessReview`'s
    /// `status.reason`, e.g. RBAC's `allowed by RoleBinding …`); empty: nothing.
    #[serde(default)]
    reason: String,
}

fn holds(list: &[String], v: &str) -> bool {
    list.iter().any(|x| x == "*" || x == v)
}

/// A policy file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file cannot be read.
    #[error("--policy {}: {source}", path.display())]
    Read { path: std::path::PathBuf, source: std::io::Error },
    /// The file is not a policy.
    #[error("--policy {}: {source}", path.display())]
    Parse { path: std::path::PathBuf, source: serde_json::Error },
}

/// Paths every authenticated user may read (`system:discovery`, `system:public-info-viewer`).
const PUBLIC_PATHS: &[&str] = &["/api", "/apis", "/version", "/openapi", "/healthz", "/livez", "/readyz"];

impl Rule {
    fn names(&self, user: &UserInfo) -> bool {
        self.subjects.iter().any(|s| match s.split_once(':') {
            Some(("user", name)) => name == user.name,
            Some(("group", group)) => user.groups.iter().any(|g| g == group),
            _ => false,
        })
    }

    fn allows(&self, a: &Attributes) -> bool {
        if !holds(&self.verbs, &a.verb) {
            return false;
        }
        if !a.resource_request {
            return self.paths.iter().any(|p| p == &a.path || p.strip_suffix('*').is_some_and(|prefix| a.path.starts_with(prefix)));
        }
        let resource = if a.subresource.is_empty() { a.resource.clone() } else { format!("{}/{}", a.resource, a.subresource) };
        holds(&self.groups, &a.group)
            && holds(&self.resources, &resource)
            && self.namespaces.as_ref().is_none_or(|ns| holds(ns, &a.namespace))
            && self.names.as_ref().is_none_or(|names| !a.name.is_empty() && holds(names, &a.name))
    }
}

impl Policy {
    /// Reads a policy file.
    pub fn load(path: &std::path::Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read(path).map_err(|source| PolicyError::Read { path: path.into(), source })?;
        serde_json::from_slice(&text).map_err(|source| PolicyError::Parse { path: path.into(), source })
    }

    /// The user a bearer token belongs to.
    pub fn authenticate(&self, token: &str) -> Option<UserInfo> {
        let u = self.users.iter().find(|u| u.tokens.iter().any(|t| t == token))?;
        let mut groups = u.groups.clone();
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.into());
        }
        Some(UserInfo { name: u.name.clone(), uid: u.uid.clone(), groups, extra: u.extra.clone() })
    }

    /// Whether `user` may do `a`.
    pub fn allows(&self, user: &UserInfo, a: &Attributes) -> bool {
        self.decide(user, a).is_some()
    }

    /// The reason `user` may do `a` (`None`: it may not), as an authorizer gives it.
    pub fn decide(&self, user: &UserInfo, a: &Attributes) -> Option<&str> {
        if user.groups.iter().any(|g| g == "system:masters") {
            return Some("");
        }
        let authenticated = user.groups.iter().any(|g| g == AUTHENTICATED);
        if authenticated
            && !a.resource_request
            && a.verb == "get"
            && PUBLIC_PATHS.iter().any(|p| a.path == *p || a.path.starts_with(&format!("{p}/")))
        {
            return Some("");
        }
        self.rules.iter().find(|r| r.names(user) && r.allows(a)).map(|r| r.reason.as_str())
    }

    /// The user `requester` acts as after the request's `Impersonate-*`
    /// headers, for `request`: the first impersonation mode whose every
    /// check this policy allows (`apimachinery::impersonation`), the one
    /// that last allowed `requester` tried first; `None` without such
    /// headers, `Err` with the 400 or the first refusing mode's 403.
    pub fn impersonated(&self, requester: &UserInfo, headers: &HeaderMap, request: &Attributes) -> Result<Option<UserInfo>, ApiError> {
        let headers = headers.iter().filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)));
        let Some(wanted) = Wanted::of(headers)? else { return Ok(None) };
        let last = self.modes.lock().get(&requester.name).copied();
        let order = last.into_iter().chain(Mode::ALL.into_iter().filter(|m| Some(*m) != last));
        let mut first_refusal = None;
        for mode in order.filter(|m| m.applies(&wanted, requester)) {
            match mode.steps(&wanted, requester, request).into_iter().try_for_each(|step| self.step(step)) {
                Ok(()) => {
                    self.modes.lock().insert(requester.name.clone(), mode);
                    return Ok(Some(mode.user(&wanted)));
                }
                Err(e) => drop(first_refusal.get_or_insert(e)),
            }
        }
        Err(first_refusal.unwrap_or_else(|| ApiError::internal("all impersonation modes failed")))
    }

    /// Whether one impersonation step is allowed.
    fn step(&self, step: Step) -> Result<(), ApiError> {
        let check = |user: &UserInfo, a: &Attributes| if self.allows(user, a) { Ok(()) } else { Err(a.forbidden(&user.name, "")) };
        match step {
            Step::Check { user, attributes } => check(&user, &attributes),
            Step::Either { user, wildcard, each } => check(&user, &wildcard).or_else(|_| each.iter().try_for_each(|a| check(&user, a))),
            Step::Refuse(e) => Err(e),
        }
    }
}

/// Who a request is, as the apiserver's authentication and impersonation
/// filters find it: with a policy, a verified client certificate's user,
/// else a bearer token's, else anonymous if the policy allows it (a public
/// path: anonymous rather than refused), then whom its `Impersonate-*`
/// headers name; without one — the simulator lets every request in — whom
/// it impersonates, else an administrator (`system:masters`). `cert`: a
/// client certificate was presented, and the user it names if it verified.
pub fn identify(
    policy: Option<&Policy>,
    (headers, request): (&HeaderMap, &Attributes),
    cert: Option<Option<UserInfo>>,
    public: bool,
) -> Result<UserInfo, ApiError> {
    let values = |name: &str| -> Vec<String> { headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).map(str::to_string).collect() };
    let Some(policy) = policy else {
        let Some(name) = values("impersonate-user").into_iter().next() else {
            return Ok(UserInfo {
                name: "admin".into(),
                groups: vec!["system:masters".into(), AUTHENTICATED.into()],
                ..UserInfo::default()
            });
        };
        let mut groups = values("impersonate-group");
        groups.push(AUTHENTICATED.into());
        return Ok(UserInfo { name, groups, ..UserInfo::default() });
    };
    let presented = cert.is_some();
    let token =
        headers.get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|a| a.strip_prefix("Bearer ")).map(str::trim);
    // As the apiserver's union of authenticators: a valid certificate, else a valid token; a certificate that does not verify is no one.
    let user = match (cert.flatten(), token) {
        (Some(user), _) => Some(user),
        (None, Some(token)) => policy.authenticate(token),
        (None, None) if presented => None,
        (None, None) => policy.anonymous.then(UserInfo::anonymous),
    };
    let Some(user) = user.or_else(|| public.then(UserInfo::anonymous)) else { return Err(ApiError::unauthorized()) };
    Ok(policy.impersonated(&user, headers, request)?.unwrap_or(user))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        serde_json::from_str(
            r#"{"users": [{"name": "alice", "groups": ["dev"], "tokens": ["a"]}, {"name": "kache", "tokens": ["k"]}],
                "rules": [{"subjects": ["group:dev"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["pods"], "namespaces": ["default"]},
                          {"subjects": ["user:alice"], "verbs": ["get", "list"], "groups": [""], "resources": ["secrets"], "names": ["public"]},
                          {"subjects": ["user:kache"], "verbs": ["impersonate"], "groups": [""], "resources": ["users", "groups"]}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn rules_allow_what_they_name_and_nothing_else() {
        let p = policy();
        let alice = p.authenticate("a").unwrap();
        assert_eq!(alice.groups, ["dev", AUTHENTICATED]);
        assert!(p.authenticate("nope").is_none());
        let can = |path: &str, q: &str| p.allows(&alice, &Attributes::of("GET", path, q));
        assert!(can("/api/v1/namespaces/default/pods", "") && can("/api/v1/namespaces/default/pods", "watch=1"));
        assert!(!can("/api/v1/pods", ""), "cluster-wide is not in the namespace list");
        assert!(!can("/api/v1/namespaces/other/pods", ""));
        assert!(can("/api/v1/namespaces/x/secrets/public", "") && !can("/api/v1/namespaces/x/secrets/db", ""));
        assert!(!can("/api/v1/namespaces/x/secrets", ""), "a names rule does not allow the whole list");
        assert!(can("/api/v1/namespaces/x/secrets", "fieldSelector=metadata.name%3Dpublic"), "a list naming the object is allowed");
        assert!(can("/apis", "") && can("/version", ""));
    }

    #[test]
    fn impersonation_needs_its_own_permission() {
        let p = policy();
        let kache = p.authenticate("k").unwrap();
        let list = Attributes::of("GET", "/api/v1/namespaces/default/pods", "");
        let mut h = HeaderMap::new();
        h.insert("impersonate-user", "alice".parse().unwrap());
        h.append("impersonate-group", "dev".parse().unwrap());
        let as_alice = p.impersonated(&kache, &h, &list).unwrap().unwrap();
        assert_eq!((as_alice.name.as_str(), as_alice.groups.clone()), ("alice", vec!["dev".to_string(), AUTHENTICATED.to_string()]));
        let alice = p.authenticate("a").unwrap();
        assert_eq!(p.impersonated(&alice, &h, &list).unwrap_err().code, 403);
        assert_eq!(p.impersonated(&kache, &HeaderMap::new(), &list).unwrap(), None);
    }

    #[test]
    fn constrained_impersonation_alone_is_enough() {
        let p: Policy = serde_json::from_str(
            r#"{"users": [{"name": "bob", "tokens": ["b"]}],
                "rules": [{"subjects": ["user:bob"], "verbs": ["impersonate:user-info"], "groups": ["authentication.k8s.io"],
                           "resources": ["users"], "names": ["alice"]},
                          {"subjects": ["user:bob"], "verbs": ["impersonate-on:user-info:list"], "groups": [""], "resources": ["pods"]}]}"#,
        )
        .unwrap();
        let bob = p.authenticate("b").unwrap();
        let mut h = HeaderMap::new();
        h.insert("impersonate-user", "alice".parse().unwrap());
        let list = Attributes::of("GET", "/api/v1/namespaces/default/pods", "");
        assert_eq!(p.impersonated(&bob, &h, &list).unwrap().map(|u| u.name), Some("alice".into()));
        let get = Attributes::of("GET", "/api/v1/namespaces/default/pods/p", "");
        let refused = p.impersonated(&bob, &h, &get).unwrap_err();
        assert_eq!(refused.code, 403);
        assert!(refused.message.contains("cannot impersonate-on:user-info:get resource"), "{}", refused.message);
    }
}

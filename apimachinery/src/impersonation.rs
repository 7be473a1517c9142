//! Impersonation as kube-apiserver 1.36 authorizes it
//! (`WithConstrainedImpersonation`, KEP-5284, `endpoints/filters/impersonation`):
//! the user a request's `Impersonate-*` headers want ([`Wanted::of`]), and
//! the modes that may allow it, tried in the apiserver's order —
//! `associated-node`, `arbitrary-node`, `serviceaccount`, `user-info`, then
//! the legacy `impersonate` verb. A mode that applies to the wanted user
//! ([`Mode::applies`]) allows it when each of its checks ([`Mode::steps`])
//! is allowed; the request then acts as [`Mode::user`], and the constrained
//! mode's verb is what its audit event names (`impersonationConstraint`).
//!
//! Invariants: the steps are the apiserver's authorization checks in its
//! order, with its attributes (the constrained modes' in
//! `authentication.k8s.io/v1`, the legacy mode's users and groups in the
//! core group); a refusal the apiserver makes without asking its authorizer
//! is a [`Step::Refuse`] in its place. The caller remembers, per
//! requester, the mode that last allowed it and tries that one first, as
//! the apiserver's mode index cache does: the order decides which mode's
//! constraint is recorded and whose 403 is answered.

use std::collections::BTreeMap;

use crate::auth::{AUTHENTICATED, Attributes, UserInfo};
use crate::gostr::quote;
use crate::selector::content::{InvalidValue, aggregate_text, dns1123_subdomain_errors, is_dns1123_label, regex_error};
use crate::status::ApiError;

/// `system:unauthenticated`.
const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The groups every node is in, impersonated by a constrained mode.
const NODES: &str = "system:nodes";
/// The key of a service account token's node in its user's extra.
const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
/// What the associated-node mode puts in the requester's extra for its checks.
const ASSOCIATED_NODE_KEYS: &str = "authentication.kubernetes.io/associated-node-keys";
/// Checks of groups or extras from which a wildcard check is tried first (`manyAuthorizationChecksInLoop`).
const MANY: usize = 4;

/// The user a request's `Impersonate-*` headers ask to act as, as sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wanted {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Wanted {
    /// `processImpersonationHeaders`: the wanted user of a request with
    /// these headers (names lower case, in order), `None` when it
    /// impersonates no one; the apiserver's 400 for a uid, group or extra
    /// without a user.
    pub fn of<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Option<Wanted>, ApiError> {
        let mut w = Wanted::default();
        let (mut has_user, mut has_uid, mut has_groups, mut has_extra) = (false, false, false, false);
        for (name, value) in headers {
            match name {
                "impersonate-user" if !has_user => (has_user, w.name) = (true, value.to_string()),
                "impersonate-uid" if !has_uid => (has_uid, w.uid) = (true, value.to_string()),
                "impersonate-group" => {
                    has_groups = true;
                    w.groups.push(value.to_string());
                }
                _ => {
                    if let Some(key) = name.strip_prefix("impersonate-extra-") {
                        has_extra = true;
                        w.extra.entry(path_unescape(key)).or_default().push(value.to_string());
                    }
                }
            }
        }
        let has_user = has_user && !w.name.is_empty();
        let has_uid = has_uid && !w.uid.is_empty();
        if !has_user && (has_uid || has_groups || has_extra) {
            return Err(ApiError::bad_request(format!("requested {} without impersonating a user name", w.go_syntax())));
        }
        Ok(has_user.then_some(w))
    }

    /// Go's `%#v` of the `*user.DefaultInfo`.
    fn go_syntax(&self) -> String {
        let groups = match self.groups.as_slice() {
            [] => "[]string(nil)".to_string(),
            g => format!("[]string{{{}}}", g.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", ")),
        };
        let extra = match self.extra.is_empty() {
            true => "map[string][]string(nil)".to_string(),
            false => {
                let entries = self
                    .extra
                    .iter()
                    .map(|(k, v)| format!("{}:[]string{{{}}}", quote(k), v.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", ")));
                format!("map[string][]string{{{}}}", entries.collect::<Vec<_>>().join(", "))
            }
        };
        format!("&user.DefaultInfo{{Name:{}, UID:{}, Groups:{groups}, Extra:{extra}}}", quote(&self.name), quote(&self.uid))
    }

    fn only_name(&self) -> bool {
        self.uid.is_empty() && self.groups.is_empty() && self.extra.is_empty()
    }
}

/// `url.PathUnescape` of an extra's header key, lower-cased first; a key
/// that does not unescape is kept as sent.
fn path_unescape(key: &str) -> String {
    let b = key.to_ascii_lowercase().into_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(byte) => out.push(byte),
                None => return key.to_ascii_lowercase(),
            }
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_ascii_lowercase())
}

/// An impersonation mode, in the order the apiserver tries them ([`Mode::ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// A service account acting as the node its token is bound to.
    AssociatedNode,
    /// Any node, by name only.
    ArbitraryNode,
    /// A service account, by name only.
    ServiceAccount,
    /// Any other user, with its uid, groups and extras.
    UserInfo,
    /// The `impersonate` verb (Kubernetes 1.3's).
    Legacy,
}

/// One authorization check of a mode, or the apiserver's refusal in its place.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Allowed when the authorizer allows `user` to do `attributes`.
    Check { user: UserInfo, attributes: Attributes },
    /// Allowed when `wildcard` is; otherwise when every one of `each` is.
    Either { user: UserInfo, wildcard: Attributes, each: Vec<Attributes> },
    /// Refused whatever the authorizer says.
    Refuse(ApiError),
}

impl Mode {
    /// Every mode, in the apiserver's order.
    pub const ALL: [Mode; 5] = [Mode::AssociatedNode, Mode::ArbitraryNode, Mode::ServiceAccount, Mode::UserInfo, Mode::Legacy];

    fn name(self) -> &'static str {
        match self {
            Mode::AssociatedNode => "associated-node",
            Mode::ArbitraryNode => "arbitrary-node",
            Mode::ServiceAccount => "serviceaccount",
            Mode::UserInfo => "user-info",
            Mode::Legacy => "legacy",
        }
    }

    /// The verb the mode's checks ask for.
    fn verb(self) -> String {
        match self {
            Mode::Legacy => "impersonate".into(),
            m => format!("impersonate:{}", m.name()),
        }
    }

    /// What the audit event records as the mode that allowed a request
    /// (`authenticationMetadata.impersonationConstraint`); none for the legacy verb.
    pub fn constraint(self) -> Option<String> {
        (self != Mode::Legacy).then(|| self.verb())
    }

    fn constrained(self) -> bool {
        self != Mode::Legacy
    }

    /// Whether the mode can allow `requester` to act as `wanted` at all (its filter).
    pub fn applies(self, wanted: &Wanted, requester: &UserInfo) -> bool {
        match self {
            Mode::AssociatedNode => {
                wanted.only_name()
                    && node_name(&wanted.name).is_some_and(|node| {
                        service_account(&requester.name).is_some()
                            && matches!(requester.extra.get(NODE_NAME_KEY).map(Vec::as_slice), Some([n]) if n == node)
                    })
            }
            Mode::ArbitraryNode => wanted.only_name() && node_name(&wanted.name).is_some(),
            Mode::ServiceAccount => wanted.only_name() && service_account(&wanted.name).is_some(),
            Mode::UserInfo => node_name(&wanted.name).is_none() && service_account(&wanted.name).is_none(),
            Mode::Legacy => true,
        }
    }

    /// The checks that allow `requester` to make `request` as `wanted`
    /// under this mode, in order (for a mode that [applies](Mode::applies)).
    pub fn steps(self, wanted: &Wanted, requester: &UserInfo, request: &Attributes) -> Vec<Step> {
        let mut steps = Vec::new();
        // The associated-node mode asks as the requester with only its extras' keys, for every node ("*").
        let asker = match self {
            Mode::AssociatedNode => UserInfo {
                extra: BTreeMap::from([(ASSOCIATED_NODE_KEYS.to_string(), requester.extra.keys().cloned().collect())]),
                ..requester.clone()
            },
            _ => requester.clone(),
        };
        let check = |attributes: Attributes| Step::Check { user: asker.clone(), attributes };
        if self.constrained() {
            // May the requester make this request while impersonating in this mode?
            steps.push(check(Attributes { verb: format!("impersonate-on:{}:{}", self.name(), request.verb), ..request.clone() }));
        }
        let verb = self.verb();
        let (group, version) = if self.constrained() { ("authentication.k8s.io", "v1") } else { ("", "v1") };
        let on = |group: &str, resource: &str, name: &str| Attributes {
            verb: verb.clone(),
            resource_request: true,
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            name: name.into(),
            ..Attributes::default()
        };
        // The user: a node's or a service account's by their own resources (groups with either are
        // ruled out by the constrained modes' filters, before any check).
        let mut user = on(group, "users", &wanted.name);
        if self.constrained()
            && let Some(node) = node_name(&wanted.name)
        {
            (user.resource, user.name) = ("nodes".into(), node.into());
        }
        if let Some((namespace, name)) = service_account(&wanted.name) {
            (user.resource, user.namespace, user.name) = ("serviceaccounts".into(), namespace.into(), name.into());
        }
        if self == Mode::AssociatedNode {
            user.name = "*".into();
        }
        steps.push(check(user));
        if !wanted.uid.is_empty() {
            steps.push(check(Attributes { version: "v1".into(), ..on("authentication.k8s.io", "uids", &wanted.uid) }));
        }
        if !wanted.groups.is_empty() {
            let groups = on(group, "groups", "");
            if self.constrained() && wanted.groups.iter().any(String::is_empty) {
                steps.push(Step::Refuse(groups.forbidden(&requester.name, "impersonating the empty string group is not allowed")));
                return steps;
            }
            if self.constrained() && wanted.groups.iter().any(|g| g == "system:masters") {
                let masters = Attributes { name: "system:masters".into(), ..groups };
                steps.push(Step::Refuse(masters.forbidden(&requester.name, "impersonating the system:masters group is not allowed")));
                return steps;
            }
            let each: Vec<Attributes> = wanted.groups.iter().map(|g| Attributes { name: g.clone(), ..groups.clone() }).collect();
            match self.constrained() && wanted.groups.len() >= MANY {
                true => steps.push(Step::Either { user: asker.clone(), wildcard: Attributes { name: "*".into(), ..groups }, each }),
                false => steps.extend(each.into_iter().map(check)),
            }
        }
        if !wanted.extra.is_empty() {
            let extras = on("authentication.k8s.io", "userextras", "");
            if self.constrained()
                && let Err(why) = validate_extra(&wanted.extra)
            {
                steps.push(Step::Refuse(extras.forbidden(&requester.name, &why)));
                return steps;
            }
            let each: Vec<Attributes> = wanted
                .extra
                .iter()
                .flat_map(|(k, vs)| vs.iter().map(|v| Attributes { subresource: k.clone(), name: v.clone(), ..extras.clone() }))
                .collect();
            let large = wanted.extra.len() >= MANY || wanted.extra.values().map(Vec::len).sum::<usize>() >= MANY;
            match self.constrained() && large {
                true => {
                    let wildcard = Attributes { subresource: "*".into(), name: "*".into(), ..extras };
                    steps.push(Step::Either { user: asker.clone(), wildcard, each });
                }
                false => steps.extend(each.into_iter().map(check)),
            }
        }
        steps
    }

    /// The user a request acts as once this mode allowed `wanted`.
    pub fn user(self, wanted: &Wanted) -> UserInfo {
        let mut groups = wanted.groups.clone();
        if self.constrained() && node_name(&wanted.name).is_some() {
            groups = vec![NODES.into()];
        }
        if let Some((namespace, _)) = service_account(&wanted.name).filter(|_| groups.is_empty()) {
            groups = vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{namespace}")];
        }
        let ensure = |groups: &mut Vec<String>, g: &str| {
            if !groups.iter().any(|x| x == g) {
                groups.push(g.into());
            }
        };
        if wanted.name == "system:anonymous" {
            ensure(&mut groups, UNAUTHENTICATED);
        } else if !groups.iter().any(|g| g == UNAUTHENTICATED) {
            ensure(&mut groups, AUTHENTICATED);
        }
        UserInfo { name: wanted.name.clone(), uid: wanted.uid.clone(), groups, extra: wanted.extra.clone() }
    }
}

/// The node a `system:node:NAME` user names, if its name is a node's (a DNS subdomain).
fn node_name(user: &str) -> Option<&str> {
    user.strip_prefix("system:node:").filter(|n| dns1123_subdomain_errors(n).is_empty())
}

/// The namespace and name of a `system:serviceaccount:NS:NAME` user (`serviceaccount.SplitUsername`).
fn service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    (!name.contains(':') && namespace.len() <= 63 && is_dns1123_label(namespace) && dns1123_subdomain_errors(name).is_empty())
        .then_some((namespace, name))
}

/// `validateExtra`: what constrained impersonation refuses in extras (keys in key order, as Go's map order cannot be relied on).
fn validate_extra(extra: &BTreeMap<String, Vec<String>>) -> Result<(), String> {
    for (key, values) in extra {
        if key.is_empty() {
            return Err("impersonating the empty string key in extra is not allowed".into());
        }
        let errs = domain_prefixed_path_errors(key);
        if !errs.is_empty() {
            return Err(format!("impersonating an invalid key in extra is not allowed: {}", aggregate_text(&errs)));
        }
        if *key != key.to_lowercase() {
            return Err(format!("impersonating a non-lowercase key in extra is not allowed: {}", quote(key)));
        }
        if values.is_empty() {
            return Err("impersonating empty values in extra is not allowed".into());
        }
        if values.iter().any(String::is_empty) {
            return Err("impersonating the empty string value in extra is not allowed".into());
        }
    }
    Ok(())
}

/// `validation.IsDomainPrefixedPath` at `extra.key`.
fn domain_prefixed_path_errors(key: &str) -> Vec<InvalidValue> {
    const PATH: &str = "extra.key";
    const HTTP_PATH: &str = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+";
    let Some((host, path)) = key.split_once('/').filter(|(h, p)| !h.is_empty() && !p.is_empty()) else {
        return vec![InvalidValue::new(PATH, key, "must be a domain-prefixed path (such as \"acme.io/foo\")")];
    };
    let mut errs: Vec<InvalidValue> = dns1123_subdomain_errors(host).into_iter().map(|e| InvalidValue::new(PATH, host, e)).collect();
    if !path.bytes().all(|c| c.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&c)) {
        errs.push(InvalidValue::new(PATH, path, regex_error("Invalid path", HTTP_PATH, &[])));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(headers: &[(&str, &str)]) -> Result<Option<Wanted>, ApiError> {
        Wanted::of(headers.iter().copied())
    }

    fn list_pods() -> Attributes {
        Attributes::of("GET", "/api/v1/namespaces/ns/pods", "")
    }

    #[test]
    fn the_wanted_user_is_read_as_the_apiserver_reads_its_headers() {
        assert_eq!(wanted(&[]).unwrap(), None);
        let w = wanted(&[("impersonate-user", "alice"), ("impersonate-group", "a"), ("impersonate-extra-acme.io%2fscope", "x")])
            .unwrap()
            .unwrap();
        assert_eq!((w.name.as_str(), w.groups.as_slice()), ("alice", &["a".to_string()][..]));
        assert_eq!(w.extra.get("acme.io/scope"), Some(&vec!["x".to_string()]));
        let e = wanted(&[("impersonate-group", "g1"), ("impersonate-group", "g2")]).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                r#"requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"g1", "g2"}, Extra:map[string][]string(nil)} without impersonating a user name"#
            )
        );
        assert_eq!(path_unescape("a+b%2Fc"), "a+b/c", "a path, not a form: `+` stays");
    }

    #[test]
    fn modes_apply_to_the_users_their_filters_admit() {
        let user = |name: &str| Wanted { name: name.into(), ..Wanted::default() };
        let bob = UserInfo { name: "bob".into(), ..UserInfo::default() };
        let applying = |w: &Wanted, r: &UserInfo| Mode::ALL.iter().copied().filter(|m| m.applies(w, r)).collect::<Vec<_>>();
        assert_eq!(applying(&user("alice"), &bob), [Mode::UserInfo, Mode::Legacy]);
        assert_eq!(applying(&user("system:node:n1"), &bob), [Mode::ArbitraryNode, Mode::Legacy]);
        assert_eq!(applying(&user("system:serviceaccount:ns:sa"), &bob), [Mode::ServiceAccount, Mode::Legacy]);
        let agent = UserInfo {
            name: "system:serviceaccount:kube-system:agent".into(),
            extra: BTreeMap::from([(NODE_NAME_KEY.to_string(), vec!["n1".to_string()])]),
            ..UserInfo::default()
        };
        assert_eq!(applying(&user("system:node:n1"), &agent), [Mode::AssociatedNode, Mode::ArbitraryNode, Mode::Legacy]);
        let with_group = Wanted { groups: vec!["g".into()], ..user("system:node:n1") };
        assert_eq!(applying(&with_group, &bob), [Mode::Legacy]);
    }

    #[test]
    fn a_constrained_mode_asks_for_the_request_then_for_the_user() {
        let bob = UserInfo { name: "bob".into(), ..UserInfo::default() };
        let w = Wanted { name: "alice".into(), groups: vec!["dev".into()], ..Wanted::default() };
        let asked: Vec<(String, String, String, String)> = Mode::UserInfo
            .steps(&w, &bob, &list_pods())
            .into_iter()
            .map(|s| match s {
                Step::Check { attributes: a, .. } => (a.verb, a.group, a.resource, a.name),
                other => panic!("{other:?}"),
            })
            .collect();
        let s = |a: &str, b: &str, c: &str, d: &str| (a.to_string(), b.to_string(), c.to_string(), d.to_string());
        assert_eq!(
            asked,
            [
                s("impersonate-on:user-info:list", "", "pods", ""),
                s("impersonate:user-info", "authentication.k8s.io", "users", "alice"),
                s("impersonate:user-info", "authentication.k8s.io", "groups", "dev"),
            ]
        );
        let legacy: Vec<String> = Mode::Legacy
            .steps(&w, &bob, &list_pods())
            .into_iter()
            .map(|s| match s {
                Step::Check { attributes: a, .. } => format!("{} {}/{} {}", a.verb, a.group, a.resource, a.name),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(legacy, ["impersonate /users alice", "impersonate /groups dev"]);
        let masters = Wanted { groups: vec!["system:masters".into()], ..w };
        let refused = Mode::UserInfo.steps(&masters, &bob, &list_pods()).pop();
        assert!(matches!(refused, Some(Step::Refuse(e)) if e.message.ends_with("impersonating the system:masters group is not allowed")));
    }

    #[test]
    fn the_impersonated_user_gets_the_groups_the_apiserver_gives_it() {
        let sa = Wanted { name: "system:serviceaccount:ns:sa".into(), ..Wanted::default() };
        assert_eq!(Mode::ServiceAccount.user(&sa).groups, ["system:serviceaccounts", "system:serviceaccounts:ns", AUTHENTICATED]);
        assert_eq!(Mode::Legacy.user(&sa).groups, ["system:serviceaccounts", "system:serviceaccounts:ns", AUTHENTICATED]);
        let node = Wanted { name: "system:node:n1".into(), ..Wanted::default() };
        assert_eq!(Mode::ArbitraryNode.user(&node).groups, [NODES, AUTHENTICATED]);
        assert_eq!(Mode::Legacy.user(&node).groups, [AUTHENTICATED]);
        let anonymous = Wanted { name: "system:anonymous".into(), ..Wanted::default() };
        assert_eq!(Mode::UserInfo.user(&anonymous).groups, [UNAUTHENTICATED]);
        assert_eq!(Mode::UserInfo.constraint().as_deref(), Some("impersonate:user-info"));
        assert_eq!(Mode::Legacy.constraint(), None);
    }

    #[test]
    fn extras_are_validated_as_constrained_impersonation_validates_them() {
        let extra = |k: &str, v: &str| BTreeMap::from([(k.to_string(), vec![v.to_string()])]);
        assert_eq!(validate_extra(&extra("acme.io/scope", "x")), Ok(()));
        assert_eq!(
            validate_extra(&extra("scope", "x")).unwrap_err(),
            r#"impersonating an invalid key in extra is not allowed: extra.key: Invalid value: "scope": must be a domain-prefixed path (such as "acme.io/foo")"#
        );
        assert_eq!(
            validate_extra(&extra("acme.io/scope", "")).unwrap_err(),
            "impersonating the empty string value in extra is not allowed"
        );
    }
}

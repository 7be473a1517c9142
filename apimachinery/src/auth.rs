//! Who a client is and what it asks to do, as the apiserver sees them:
//! [`UserInfo`] (from a client certificate, a `TokenReview`, or anonymous)
//! and [`Attributes`] (the apiserver's `RequestInfo`: verb, API group,
//! resource, subresource, namespace, name), the `SubjectAccessReview` that
//! asks an authorizer about them, and the apiserver's 401 and 403.
//!
//! Guarantees: [`Attributes::of`] maps a request as `RequestInfoFactory`
//! does (a list or watch naming one object with `fieldSelector=metadata.name=X`
//! carries that name, as RBAC's `resourceNames` expects); [`Attributes::forbidden`]
//! words the 403 as `responsewriters.Forbidden` does.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::gostr::quote;
use crate::params::Query;
use crate::status::ApiError;

/// The group every authenticated user is in.
pub const AUTHENTICATED: &str = "system:authenticated";

/// An authenticated user, as `user.Info` holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UserInfo {
    /// The user name.
    #[serde(rename = "username", default)]
    pub name: String,
    /// A unique id, when the authenticator gives one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Its groups.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Extra attributes (e.g. a service account token's pod).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The user of a verified client certificate (DER): the subject's common
    /// name, its organizations as groups, and `system:authenticated`.
    pub fn from_certificate(der: &[u8]) -> Option<UserInfo> {
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let subject = cert.subject();
        let name = subject.iter_common_name().next()?.as_str().ok()?.to_string();
        let mut groups: Vec<String> = subject.iter_organization().filter_map(|o| o.as_str().ok().map(str::to_string)).collect();
        groups.push(AUTHENTICATED.into());
        Some(UserInfo { name, groups, ..UserInfo::default() })
    }

    /// The anonymous user (`--anonymous-auth`).
    pub fn anonymous() -> UserInfo {
        UserInfo { name: "system:anonymous".into(), groups: vec!["system:unauthenticated".into()], ..UserInfo::default() }
    }
}

/// What a request asks to do, as an authorizer sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, … (or the HTTP method for other paths).
    pub verb: String,
    /// Whether it names an API resource (else a path such as `/version`).
    pub resource_request: bool,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// The request path (for non-resource requests).
    pub path: String,
}

/// Subresources of a namespace that name the namespace itself.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

impl Attributes {
    /// The attributes of a request (`RequestInfoFactory.NewRequestInfo`).
    pub fn of(method: &str, path: &str, query: &str) -> Attributes {
        Attributes::of_query(method, path, &Query::parse(query))
    }

    /// [`Attributes::of`] a request whose query is already decoded.
    pub fn of_query(method: &str, path: &str, query: &Query) -> Attributes {
        let verb = method.to_ascii_lowercase();
        let mut a = Attributes { verb: verb.clone(), path: path.to_string(), ..Attributes::default() };
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        // Discovery (`/api/v1`, `/apis/G/V`) is a non-resource request: something must follow the version.
        let rest = match parts.as_slice() {
            ["api", version, rest @ ..] if !rest.is_empty() => {
                a.version = (*version).to_string();
                rest
            }
            ["apis", group, version, rest @ ..] if !rest.is_empty() => {
                a.group = (*group).to_string();
                a.version = (*version).to_string();
                rest
            }
            _ => return a,
        };
        a.resource_request = true;
        let mut rest: Vec<&str> = rest.to_vec();
        let mut watch_path = false;
        if rest.first() == Some(&"watch") {
            watch_path = true;
            rest.remove(0);
        }
        if rest.first() == Some(&"namespaces")
            && let Some(ns) = rest.get(1)
        {
            a.namespace = (*ns).to_string();
            if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
                rest.drain(..2);
            }
        }
        a.resource = rest.first().copied().unwrap_or_default().to_string();
        a.name = rest.get(1).copied().unwrap_or_default().to_string();
        a.subresource = rest.get(2).copied().unwrap_or_default().to_string();
        // Two parameters matter.
        let param = |k: &str| query.get(k);
        a.verb = match (verb.as_str(), a.name.is_empty()) {
            ("get", _) if watch_path => "watch".into(),
            ("get", true) if param("watch").is_some_and(|w| matches!(w, "1" | "true" | "t" | "T" | "TRUE" | "True")) => "watch".into(),
            ("get", true) => "list".into(),
            ("get", false) => "get".into(),
            ("post", _) => "create".into(),
            ("put", _) => "update".into(),
            ("patch", _) => "patch".into(),
            ("delete", true) => "deletecollection".into(),
            ("delete", false) => "delete".into(),
            (other, _) => other.into(),
        };
        // Connecting to a pod needs `create`, whichever method opens the stream (WebSockets use GET).
        if a.verb == "get"
            && a.group.is_empty()
            && a.resource == "pods"
            && matches!(a.subresource.as_str(), "exec" | "attach" | "portforward")
        {
            a.verb = "create".into();
        }
        if matches!(a.verb.as_str(), "list" | "watch")
            && let Some(name) = param("fieldSelector").and_then(exact_name)
        {
            a.name = name;
        }
        a
    }

    /// The `SubjectAccessReview` asking whether `user` may do this.
    pub fn review(&self, user: &UserInfo) -> Value {
        let attributes = if self.resource_request {
            json!({"resourceAttributes": {
                "namespace": self.namespace, "verb": self.verb, "group": self.group, "version": self.version,
                "resource": self.resource, "subresource": self.subresource, "name": self.name,
            }})
        } else {
            json!({"nonResourceAttributes": {"path": self.path, "verb": self.verb}})
        };
        let mut spec = attributes;
        spec["user"] = user.name.clone().into();
        spec["groups"] = user.groups.clone().into();
        if !user.extra.is_empty() {
            spec["extra"] = json!(user.extra);
        }
        if !user.uid.is_empty() {
            spec["uid"] = user.uid.clone().into();
        }
        json!({"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "spec": spec})
    }

    /// The apiserver's 403 for `user` (`reason`: the authorizer's, if any).
    pub fn forbidden(&self, user: &str, reason: &str) -> ApiError {
        let what = if !self.resource_request {
            format!("User {} cannot {} path {}", quote(user), self.verb, quote(&self.path))
        } else {
            let resource = match self.subresource.as_str() {
                "" => self.resource.clone(),
                sub => format!("{}/{sub}", self.resource),
            };
            let scope = match self.namespace.as_str() {
                "" => "at the cluster scope".to_string(),
                ns => format!("in the namespace {}", quote(ns)),
            };
            format!("User {} cannot {} resource {} in API group {} {scope}", quote(user), self.verb, quote(&resource), quote(&self.group))
        };
        let what = what.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        let what = if reason.is_empty() { what } else { format!("{what}: {reason}") };
        let qualified = match (self.resource_request, self.group.as_str()) {
            (false, _) => String::new(),
            (true, "") => self.resource.clone(),
            (true, g) => format!("{}.{g}", self.resource),
        };
        let message = match (qualified.is_empty(), self.name.is_empty()) {
            (true, _) => format!("forbidden: {what}"),
            (false, true) => format!("{qualified} is forbidden: {what}"),
            (false, false) => format!("{qualified} {} is forbidden: {what}", quote(&self.name)),
        };
        let mut details = serde_json::Map::new();
        if !self.name.is_empty() {
            details.insert("name".into(), self.name.clone().into());
        }
        if !self.group.is_empty() {
            details.insert("group".into(), self.group.clone().into());
        }
        if !self.resource.is_empty() {
            details.insert("kind".into(), self.resource.clone().into());
        }
        ApiError::forbidden_with(message, Value::Object(details))
    }
}

/// `X` of a field selector that requires exactly `metadata.name=X`.
fn exact_name(selector: &str) -> Option<String> {
    let mut name = None;
    for term in selector.split(',') {
        let (k, v) = term.split_once("==").or_else(|| term.split_once('='))?;
        if k.trim() == "metadata.name" && !k.ends_with('!') {
            name = Some(v.trim().to_string());
        }
    }
    name
}

/// A `TokenReview` of `token`.
pub fn token_review(token: &str) -> Value {
    json!({"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1", "spec": {"token": token}})
}

/// What a review answered.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ReviewStatus {
    /// `TokenReview`: whether the token is valid.
    #[serde(default)]
    pub authenticated: bool,
    /// `TokenReview`: who it is.
    #[serde(default)]
    pub user: UserInfo,
    /// `SubjectAccessReview`: whether the request is allowed.
    #[serde(default)]
    pub allowed: bool,
    /// `SubjectAccessReview`: the authorizer's reason.
    #[serde(default)]
    pub reason: String,
    /// The reviewer's error, if any.
    #[serde(default)]
    pub error: String,
}

/// The `status` of a review response.
pub fn review_status(body: &[u8]) -> Option<ReviewStatus> {
    #[derive(Deserialize)]
    struct Review {
        #[serde(default)]
        status: ReviewStatus,
    }
    serde_json::from_slice::<Review>(body).ok().map(|r| r.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(method: &str, path: &str, query: &str) -> (String, String, String, String, String, String) {
        let a = Attributes::of(method, path, query);
        (a.verb, a.group, a.resource, a.subresource, a.namespace, a.name)
    }

    #[test]
    fn requests_map_to_the_apiservers_attributes() {
        let s = |v: &str| v.to_string();
        assert_eq!(attrs("GET", "/api/v1/pods", ""), (s("list"), s(""), s("pods"), s(""), s(""), s("")));
        assert_eq!(attrs("GET", "/api/v1/namespaces/ns/pods", "watch=true"), (s("watch"), s(""), s("pods"), s(""), s("ns"), s("")));
        assert_eq!(attrs("GET", "/api/v1/watch/namespaces/ns/pods", ""), (s("watch"), s(""), s("pods"), s(""), s("ns"), s("")));
        assert_eq!(
            attrs("GET", "/apis/apps/v1/namespaces/ns/deployments/web", ""),
            (s("get"), s("apps"), s("deployments"), s(""), s("ns"), s("web"))
        );
        assert_eq!(attrs("POST", "/api/v1/namespaces/ns/pods/p/exec", ""), (s("create"), s(""), s("pods"), s("exec"), s("ns"), s("p")));
        assert_eq!(
            attrs("GET", "/api/v1/namespaces/ns/pods/p/exec", "command=ls"),
            (s("create"), s(""), s("pods"), s("exec"), s("ns"), s("p"))
        );
        assert_eq!(attrs("GET", "/api/v1/namespaces/ns", ""), (s("get"), s(""), s("namespaces"), s(""), s("ns"), s("ns")));
        assert_eq!(
            attrs("PUT", "/api/v1/namespaces/ns/finalize", ""),
            (s("update"), s(""), s("namespaces"), s("finalize"), s("ns"), s("ns"))
        );
        assert_eq!(attrs("DELETE", "/api/v1/namespaces/ns/pods", ""), (s("deletecollection"), s(""), s("pods"), s(""), s("ns"), s("")));
        assert_eq!(
            attrs("GET", "/api/v1/namespaces/ns/secrets", "fieldSelector=metadata.name%3Ddb"),
            (s("list"), s(""), s("secrets"), s(""), s("ns"), s("db"))
        );
        let version = Attributes::of("GET", "/version", "");
        assert!(!version.resource_request);
        assert_eq!(version.verb, "get");
        // Discovery of a group version is a non-resource request (what every user may read).
        for path in ["/api/v1", "/apis/apps/v1", "/apis/apps", "/api"] {
            let a = Attributes::of("GET", path, "");
            assert!(!a.resource_request && a.verb == "get" && a.path == path, "{path}: {a:?}");
        }
        assert!(Attributes::of("GET", "/apis/apps/v1/deployments", "").resource_request);
    }

    #[test]
    fn forbidden_is_worded_as_the_apiserver_words_it() {
        let e = Attributes::of("GET", "/api/v1/namespaces/default/pods", "").forbidden("alice", "");
        assert_eq!(e.code, 403);
        assert_eq!(e.message, r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#);
        let e = Attributes::of("GET", "/apis/apps/v1/deployments", "watch=1").forbidden("system:serviceaccount:a:b", "no");
        assert_eq!(
            e.message,
            r#"deployments.apps is forbidden: User "system:serviceaccount:a:b" cannot watch resource "deployments" in API group "apps" at the cluster scope: no"#
        );
        let e = Attributes::of("GET", "/api/v1/namespaces/x/secrets/db", "").forbidden("bob", "");
        assert_eq!(
            e.message,
            r#"secrets "db" is forbidden: User "bob" cannot get resource "secrets" in API group "" in the namespace "x""#
        );
        assert_eq!(e.to_value()["details"], json!({"name": "db", "kind": "secrets"}));
        let e = Attributes::of("GET", "/healthz/<x>", "").forbidden("system:anonymous", "");
        assert_eq!(e.message, r#"forbidden: User "system:anonymous" cannot get path "/healthz/&lt;x&gt;""#);
    }

    #[test]
    fn reviews_carry_the_user_and_the_attributes() {
        let user = UserInfo { name: "alice".into(), groups: vec!["dev".into(), AUTHENTICATED.into()], ..UserInfo::default() };
        let r = Attributes::of("GET", "/api/v1/namespaces/ns/pods/p", "").review(&user);
        assert_eq!(r["spec"]["resourceAttributes"]["verb"], "get");
        assert_eq!(r["spec"]["resourceAttributes"]["name"], "p");
        assert_eq!(r["spec"]["groups"], json!(["dev", "system:authenticated"]));
        let status = review_status(br#"{"status":{"authenticated":true,"user":{"username":"bob","groups":["g"]}}}"#).unwrap();
        assert!(status.authenticated && status.user.name == "bob" && status.user.groups == ["g"]);
    }
}

//! The audit `Policy` (`audit.k8s.io/v1`) and its evaluation, as
//! kube-apiserver's `pkg/audit/policy/checker.go` evaluates it: the first
//! rule whose every given field matches the request decides its level,
//! the stages it omits (the rule's and the policy's together) and whether
//! managed fields are left out of bodies; a request no rule matches is
//! not audited (`None`).
//!
//! Invariants: a [`Policy`] holds only what the apiserver's validation
//! accepts (it is made by [`read`]); a rule's `users` and `userGroups` never
//! match a request without a user; resource rules never match non-resource
//! requests, nor `nonResourceURLs` rules resource requests.

mod read;
#[cfg(test)]
mod tests;

use apimachinery::auth::{Attributes, UserInfo};

pub use read::{PolicyError, read};

use super::event::{Level, Stages};

/// A validated audit policy.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The rules, in order; each rule's `omit_stages` already holds the policy's.
    pub rules: Vec<Rule>,
    /// The stages omitted for every request.
    pub omit_stages: Stages,
    /// Managed fields are left out of bodies, unless a rule says otherwise.
    pub omit_managed_fields: bool,
}

/// One `PolicyRule`; an empty list matches anything.
#[derive(Debug, Clone)]
pub struct Rule {
    pub level: Level,
    pub users: Vec<String>,
    pub user_groups: Vec<String>,
    pub verbs: Vec<String>,
    pub resources: Vec<GroupResources>,
    pub namespaces: Vec<String>,
    pub non_resource_urls: Vec<String>,
    pub omit_stages: Stages,
    pub omit_managed_fields: Option<bool>,
}

impl Rule {
    /// A rule at `level` matching everything.
    pub fn at(level: Level) -> Rule {
        Rule {
            level,
            users: Vec::new(),
            user_groups: Vec::new(),
            verbs: Vec::new(),
            resources: Vec::new(),
            namespaces: Vec::new(),
            non_resource_urls: Vec::new(),
            omit_stages: Stages::default(),
            omit_managed_fields: None,
        }
    }
}

/// Resources of one API group (`""`: the core group, `*`: any).
#[derive(Debug, Clone, Default)]
pub struct GroupResources {
    pub group: String,
    /// `pods`, `pods/log`, `*`, `pods/*`, `*/status`; empty: every resource of the group.
    pub resources: Vec<String>,
    /// Names a request must name one of; empty: any.
    pub resource_names: Vec<String>,
}

/// How a request is audited (`audit.RequestAuditConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AuditConfig {
    pub level: Level,
    pub omit_stages: Stages,
    pub omit_managed_fields: bool,
}

impl Policy {
    /// How a request with `attrs` by `user` is audited.
    pub(crate) fn evaluate(&self, attrs: &Attributes, user: Option<&UserInfo>) -> AuditConfig {
        match self.rules.iter().find(|r| r.matches(attrs, user)) {
            Some(r) => AuditConfig {
                level: r.level,
                omit_stages: r.omit_stages,
                omit_managed_fields: r.omit_managed_fields.unwrap_or(self.omit_managed_fields),
            },
            None => AuditConfig { level: Level::None, omit_stages: self.omit_stages, omit_managed_fields: self.omit_managed_fields },
        }
    }
}

fn has(list: &[String], v: &str) -> bool {
    list.iter().any(|x| x == v)
}

impl Rule {
    /// `ruleMatches`.
    fn matches(&self, attrs: &Attributes, user: Option<&UserInfo>) -> bool {
        if !self.users.is_empty() && !user.is_some_and(|u| has(&self.users, &u.name)) {
            return false;
        }
        if !self.user_groups.is_empty() && !user.is_some_and(|u| u.groups.iter().any(|g| has(&self.user_groups, g))) {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, &attrs.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(attrs);
        }
        if !self.non_resource_urls.is_empty() {
            return !attrs.resource_request && self.non_resource_urls.iter().any(|spec| path_matches(&attrs.path, spec));
        }
        true
    }

    /// `ruleMatchesResource`: the namespace (`""` for cluster-scoped), then
    /// any group's resources — `*`, `resource/subresource`, `*/subresource`
    /// or `resource/*` — among its names, if any.
    fn matches_resource(&self, attrs: &Attributes) -> bool {
        if !attrs.resource_request || (!self.namespaces.is_empty() && !has(&self.namespaces, &attrs.namespace)) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let (resource, sub) = (attrs.resource.as_str(), attrs.subresource.as_str());
        // `resource`, or `resource/subresource`, without making it.
        let combined = |res: &str| match sub.is_empty() {
            true => res == resource,
            false => res.split_once('/') == Some((resource, sub)),
        };
        self.resources.iter().filter(|gr| gr.group == attrs.group || gr.group == "*").any(|gr| {
            gr.resources.is_empty()
                || (gr.resource_names.is_empty() || has(&gr.resource_names, &attrs.name))
                    && gr.resources.iter().any(|res| {
                        combined(res)
                            || res == "*"
                            || (!sub.is_empty() && res.strip_prefix("*/") == Some(sub))
                            || res.strip_suffix("/*") == Some(resource)
                    })
        })
    }
}

/// `pathMatches`: `*`, the path itself, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*" || spec == path || spec.strip_suffix('*').is_some_and(|_| path.starts_with(spec.trim_end_matches('*')))
}

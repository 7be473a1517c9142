//! Which resources to cache, resolved against the apiserver's discovery
//! documents (`/api/v1`, `/apis`, `/apis/GROUP/VERSION`).
//!
//! A resource is named as `pods`, `v1/pods`, `deployments.apps`,
//! `apps/v1/deployments` or `example.com/v1/widgets`; `*` means every
//! listable and watchable resource at its group's preferred version.
//! Subresources (`pods/log`) are never cached.
//!
//! Only plural names are taken, as RBAC rules name resources: an entry that
//! names nothing gets a did-you-mean instead — the plural of a singular or
//! short name (`pod`, `po` → `pods`), the group of a name found in another
//! one (`deployments` → `deployments.apps`), or the nearest name (`podz` →
//! `pods`).

use apimachinery::resource::Resource;
use serde::Deserialize;

use super::UpstreamError;
use super::client::Client;

#[derive(Deserialize)]
struct ResourceList {
    resources: Vec<ApiResource>,
}

#[derive(Deserialize)]
struct ApiResource {
    name: String,
    namespaced: bool,
    kind: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default, rename = "singularName")]
    singular: String,
    #[serde(default, rename = "shortNames")]
    short_names: Vec<String>,
}

/// A top-level resource of a group version, as discovery lists it.
struct Listed {
    info: Resource,
    verbs: Vec<String>,
    /// Its singular and short names (`pod`, `po`), which kubectl takes too.
    aliases: Vec<String>,
}

#[derive(Deserialize)]
struct GroupList {
    groups: Vec<Group>,
}

#[derive(Deserialize)]
struct Group {
    name: String,
    #[serde(rename = "preferredVersion")]
    preferred: GroupVersion,
}

#[derive(Deserialize)]
struct GroupVersion {
    version: String,
}

/// Why a built-in resource in a version kube-apiserver 1.36 does not serve by
/// default is not cached: kache knows built-in kinds in those versions only.
const UNKNOWN_VERSION: &str = "a built-in kind in a version kube-apiserver 1.36 does not serve by default (alpha or beta): \
     kache does not know its form (its bookmarks, Tables and field labels), so its requests pass through";

/// Resolves each spec to one resource; an unknown or unwatchable resource is an error.
pub async fn resolve(client: &Client, specs: &[String]) -> Result<Vec<Resource>, UpstreamError> {
    let mut out: Vec<Resource> = Vec::new();
    for spec in specs {
        for info in resolve_one(client, spec.trim()).await? {
            if !out.contains(&info) {
                out.push(info);
            }
        }
    }
    Ok(out)
}

/// What a `--resources` entry names, before the apiserver is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Spec {
    /// `*`: everything listable and watchable.
    All,
    /// `RESOURCE[.GROUP]`: in the group's preferred version.
    Named {
        /// The group (empty: core).
        group: String,
        /// The plural resource name.
        resource: String,
    },
    /// `[GROUP/]VERSION/RESOURCE`.
    Exact {
        /// The group (empty: core).
        group: String,
        /// The version.
        version: String,
        /// The plural resource name.
        resource: String,
    },
}

impl Spec {
    /// Reads `spec`; a malformed one is refused (before kache listens).
    pub fn parse(spec: &str) -> Result<Spec, UpstreamError> {
        let spec = spec.trim();
        let malformed = || {
            UpstreamError::Config(format!(
                "--resources {spec:?}: not a resource (expected RESOURCE, RESOURCE.GROUP, GROUP/VERSION/RESOURCE or *)"
            ))
        };
        if spec == "*" {
            return Ok(Spec::All);
        }
        let parts: Vec<&str> = spec.split('/').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(malformed());
        }
        Ok(match parts.as_slice() {
            [name] => {
                let (resource, group) = name.split_once('.').unwrap_or((name, ""));
                if resource.is_empty() || name.ends_with('.') {
                    return Err(malformed());
                }
                Spec::Named { group: group.to_string(), resource: resource.to_string() }
            }
            [version, resource] => Spec::Exact { group: String::new(), version: version.to_string(), resource: resource.to_string() },
            [group, version, resource] => {
                Spec::Exact { group: group.to_string(), version: version.to_string(), resource: resource.to_string() }
            }
            _ => return Err(malformed()),
        })
    }
}

async fn resolve_one(client: &Client, spec: &str) -> Result<Vec<Resource>, UpstreamError> {
    let parsed = Spec::parse(spec)?;
    let (candidates, resource) = match &parsed {
        Spec::All => {
            let mut all = Vec::new();
            for (group, version) in preferred_versions(client).await? {
                let listing = fetch(client, &group, &version).await?;
                for r in listing.into_iter().filter(|r| is_cacheable(&r.verbs)) {
                    match r.info.is_known() {
                        true => all.push(r.info),
                        false => tracing::warn!(resource = %r.info.qualified(), version = %r.info.version, "{}", UNKNOWN_VERSION),
                    }
                }
            }
            return Ok(all);
        }
        Spec::Exact { group, version, resource } => (vec![(group.clone(), version.clone())], resource),
        Spec::Named { group, resource } => {
            let gvs = preferred_versions(client).await?.into_iter().filter(|(g, _)| g == group).collect();
            (gvs, resource)
        }
    };
    for (group, version) in candidates {
        let listing = match fetch(client, &group, &version).await {
            Err(UpstreamError::Status { code: 404, .. }) => continue,
            other => other?,
        };
        if let Some(found) = listing.into_iter().find(|r| r.info.plural == *resource) {
            if !is_cacheable(&found.verbs) {
                return Err(UpstreamError::Config(format!(
                    "resource {spec:?} cannot be cached: it must support list and watch (verbs: {})",
                    found.verbs.join(", ")
                )));
            }
            if !found.info.is_known() {
                return Err(UpstreamError::Config(format!("resource {spec:?} cannot be cached: {UNKNOWN_VERSION}")));
            }
            return Ok(vec![found.info]);
        }
    }
    Err(match suggestion(client, spec, &parsed).await {
        Some(meant) => UpstreamError::Config(format!("resource {spec:?} not found on the apiserver; did you mean {meant:?}?")),
        None => UpstreamError::Config(format!(
            "resource {spec:?} not found on the apiserver (expected RESOURCE, RESOURCE.GROUP or GROUP/VERSION/RESOURCE)"
        )),
    })
}

/// The cacheable resource an unknown entry `text` most likely meant, written
/// as the entry was (`RESOURCE[.GROUP]` or `[GROUP/]VERSION/RESOURCE`) with
/// its plural: first one whose singular or short name, or whose plural in
/// another group or version, is the entry's name (its own group first); else
/// the nearest by edit distance, if at most a third of the entry differs.
/// Best effort: a group whose discovery fails is left out.
async fn suggestion(client: &Client, text: &str, spec: &Spec) -> Option<String> {
    let (group, name) = match spec {
        Spec::All => return None,
        Spec::Named { group, resource } | Spec::Exact { group, resource, .. } => (group, resource),
    };
    let mut listed = Vec::new();
    for (g, v) in preferred_versions(client).await.ok()? {
        listed.extend(fetch(client, &g, &v).await.unwrap_or_default().into_iter().filter(|r| is_cacheable(&r.verbs)));
    }
    let written = |r: &Resource| match spec {
        Spec::Exact { .. } if r.group.is_empty() => format!("{}/{}", r.version, r.plural),
        Spec::Exact { .. } => format!("{}/{}/{}", r.group, r.version, r.plural),
        _ => r.qualified(),
    };
    let named = listed
        .iter()
        .filter(|r| r.info.plural == *name || r.aliases.contains(name))
        .min_by_key(|r| r.info.group != *group)
        .map(|r| written(&r.info));
    named.or_else(|| {
        let (distance, nearest) = listed.iter().map(|r| written(&r.info)).map(|w| (strsim::levenshtein(text, &w), w)).min()?;
        (distance <= (text.chars().count() / 3).max(1)).then_some(nearest)
    })
}

fn is_cacheable(verbs: &[String]) -> bool {
    verbs.iter().any(|v| v == "list") && verbs.iter().any(|v| v == "watch")
}

/// The core group and every group at its preferred version.
async fn preferred_versions(client: &Client) -> Result<Vec<(String, String)>, UpstreamError> {
    let body = client.get_bytes("/apis").await?;
    let groups: GroupList =
        serde_json::from_slice(&body).map_err(|e| UpstreamError::Decode(format!("a bad /apis document: {e}").into()))?;
    let mut out = vec![(String::new(), "v1".to_string())];
    out.extend(groups.groups.into_iter().map(|g| (g.name, g.preferred.version)));
    Ok(out)
}

/// The top-level resources of one group version, with their verbs and other names.
async fn fetch(client: &Client, group: &str, version: &str) -> Result<Vec<Listed>, UpstreamError> {
    let path = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
    let body = client.get_bytes(&path).await?;
    let list: ResourceList =
        serde_json::from_slice(&body).map_err(|e| UpstreamError::Decode(format!("a bad {path} document: {e}").into()))?;
    Ok(list
        .resources
        .into_iter()
        .filter(|r| !r.name.contains('/'))
        .map(|r| Listed {
            info: Resource::new(group, version, &r.name, &r.kind, r.namespaced),
            verbs: r.verbs,
            aliases: std::iter::once(r.singular).chain(r.short_names).filter(|a| !a.is_empty()).collect(),
        })
        .collect())
}

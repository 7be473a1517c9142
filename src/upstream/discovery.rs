//! Which resources to cache, resolved against the apiserver's discovery
//! documents (`/api/v1`, `/apis`, `/apis/GROUP/VERSION`).
//!
//! A resource is named as `pods`, `v1/pods`, `deployments.apps`,
//! `apps/v1/deployments` or `example.com/v1/widgets`; `*` means every
//! listable and watchable resource at its group's preferred version.
//! Subresources (`pods/log`) are never cached.

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
pub enum Spec {
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
    let (candidates, resource) = match Spec::parse(spec)? {
        Spec::All => {
            let mut all = Vec::new();
            for (group, version) in preferred_versions(client).await? {
                let listing = fetch(client, &group, &version).await?;
                all.extend(listing.into_iter().filter(|r| is_cacheable(&r.1)).map(|r| r.0));
            }
            return Ok(all);
        }
        Spec::Exact { group, version, resource } => (vec![(group, version)], resource),
        Spec::Named { group, resource } => {
            let gvs = preferred_versions(client).await?.into_iter().filter(|(g, _)| *g == group).collect();
            (gvs, resource)
        }
    };
    for (group, version) in candidates {
        let listing = match fetch(client, &group, &version).await {
            Err(UpstreamError::Status { code: 404, .. }) => continue,
            other => other?,
        };
        if let Some((info, verbs)) = listing.into_iter().find(|(r, _)| r.plural == resource) {
            if !is_cacheable(&verbs) {
                return Err(UpstreamError::Config(format!(
                    "resource {spec:?} cannot be cached: it must support list and watch (verbs: {})",
                    verbs.join(", ")
                )));
            }
            return Ok(vec![info]);
        }
    }
    Err(unknown(spec))
}

fn unknown(spec: &str) -> UpstreamError {
    UpstreamError::Config(format!(
        "resource {spec:?} not found on the apiserver (expected RESOURCE, RESOURCE.GROUP or GROUP/VERSION/RESOURCE)"
    ))
}

fn is_cacheable(verbs: &[String]) -> bool {
    verbs.iter().any(|v| v == "list") && verbs.iter().any(|v| v == "watch")
}

/// The core group and every group at its preferred version.
async fn preferred_versions(client: &Client) -> Result<Vec<(String, String)>, UpstreamError> {
    let body = client.get_bytes("/apis").await?;
    let groups: GroupList = serde_json::from_slice(&body).map_err(|e| UpstreamError::Decode(format!("a bad /apis document: {e}")))?;
    let mut out = vec![(String::new(), "v1".to_string())];
    out.extend(groups.groups.into_iter().map(|g| (g.name, g.preferred.version)));
    Ok(out)
}

/// The top-level resources of one group version, with their verbs.
async fn fetch(client: &Client, group: &str, version: &str) -> Result<Vec<(Resource, Vec<String>)>, UpstreamError> {
    let path = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
    let body = client.get_bytes(&path).await?;
    let list: ResourceList = serde_json::from_slice(&body).map_err(|e| UpstreamError::Decode(format!("a bad {path} document: {e}")))?;
    Ok(list
        .resources
        .into_iter()
        .filter(|r| !r.name.contains('/'))
        .map(|r| {
            let info = Resource::new(group, version, &r.name, &r.kind, r.namespaced);
            (info, r.verbs)
        })
        .collect())
}

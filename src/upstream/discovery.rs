//! Which resources to cache, resolved against the apiserver's discovery
//! documents (`/api/v1`, `/apis`, `/apis/GROUP/VERSION`).
//!
//! A resource is named as `pods`, `v1/pods`, `deployments.apps`,
//! `apps/v1/deployments` or `example.com/v1/widgets`; `*` means every
//! listable and watchable resource at its group's preferred version.
//! Subresources (`pods/log`) are never cached.

use serde::Deserialize;

use super::UpstreamError;
use super::client::Client;

/// A cached resource as the apiserver describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group; empty for the core group.
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Plural resource name, e.g. `pods`.
    pub resource: String,
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl ResourceInfo {
    /// `v1` or `GROUP/VERSION`, as objects' `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// The kind of a list of these objects.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// `/api/v1` or `/apis/GROUP/VERSION`.
    pub fn group_version_path(&self) -> String {
        if self.group.is_empty() { format!("/api/{}", self.version) } else { format!("/apis/{}/{}", self.group, self.version) }
    }

    /// The cluster-wide collection path, e.g. `/api/v1/pods`.
    pub fn collection_path(&self) -> String {
        format!("{}/{}", self.group_version_path(), self.resource)
    }

    /// `{"kind":K,"apiVersion":V,`: how the apiserver begins an object of
    /// this resource outside a list (a GET, a watch event).
    pub fn type_prefix(&self) -> Vec<u8> {
        format!("{{\"kind\":{},\"apiVersion\":{},", serde_json::json!(self.kind), serde_json::json!(self.api_version())).into_bytes()
    }

    /// `pods` or `deployments.apps`, as the apiserver names resources in messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() { self.resource.clone() } else { format!("{}.{}", self.resource, self.group) }
    }
}

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
pub async fn resolve(client: &Client, specs: &[String]) -> Result<Vec<ResourceInfo>, UpstreamError> {
    let mut out: Vec<ResourceInfo> = Vec::new();
    for spec in specs {
        for info in resolve_one(client, spec.trim()).await? {
            if !out.contains(&info) {
                out.push(info);
            }
        }
    }
    Ok(out)
}

async fn resolve_one(client: &Client, spec: &str) -> Result<Vec<ResourceInfo>, UpstreamError> {
    if spec == "*" {
        let mut all = Vec::new();
        for (group, version) in preferred_versions(client).await? {
            let listing = fetch(client, &group, &version).await?;
            all.extend(listing.into_iter().filter(|r| is_cacheable(&r.1)).map(|r| r.0));
        }
        return Ok(all);
    }
    let parts: Vec<&str> = spec.split('/').collect();
    let (candidates, resource) = match parts.as_slice() {
        [gv @ .., resource] if !gv.is_empty() => {
            let (group, version) = match gv {
                [version] => (String::new(), version.to_string()),
                [group, version] => (group.to_string(), version.to_string()),
                _ => return Err(unknown(spec)),
            };
            (vec![(group, version)], *resource)
        }
        [name] => {
            let (resource, group) = name.split_once('.').unwrap_or((name, ""));
            let gvs = preferred_versions(client).await?.into_iter().filter(|(g, _)| g == group).collect();
            (gvs, resource)
        }
        _ => return Err(unknown(spec)),
    };
    for (group, version) in candidates {
        let listing = match fetch(client, &group, &version).await {
            Err(UpstreamError::Status { code: 404, .. }) => continue,
            other => other?,
        };
        if let Some((info, verbs)) = listing.into_iter().find(|(r, _)| r.resource == resource) {
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
async fn fetch(client: &Client, group: &str, version: &str) -> Result<Vec<(ResourceInfo, Vec<String>)>, UpstreamError> {
    let path = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
    let body = client.get_bytes(&path).await?;
    let list: ResourceList = serde_json::from_slice(&body).map_err(|e| UpstreamError::Decode(format!("a bad {path} document: {e}")))?;
    Ok(list
        .resources
        .into_iter()
        .filter(|r| !r.name.contains('/'))
        .map(|r| {
            let info = ResourceInfo {
                group: group.to_string(),
                version: version.to_string(),
                resource: r.name,
                kind: r.kind,
                namespaced: r.namespaced,
            };
            (info, r.verbs)
        })
        .collect())
}

/// Field paths and the values they have when absent.
type Fields = &'static [(&'static str, &'static str)];

/// Fields beyond `metadata.name`/`metadata.namespace` that field selectors
/// accept, per built-in resource, with the value an absent field has (as
/// the apiserver's field sets give it).
const SELECTABLE: &[(&str, &str, Fields)] = &[
    (
        "",
        "pods",
        &[
            ("spec.nodeName", ""),
            ("spec.restartPolicy", ""),
            ("spec.schedulerName", ""),
            ("spec.serviceAccountName", ""),
            ("spec.hostNetwork", "false"),
            ("status.phase", ""),
            ("status.podIP", ""),
            ("status.nominatedNodeName", ""),
        ],
    ),
    (
        "",
        "events",
        &[
            ("involvedObject.kind", ""),
            ("involvedObject.namespace", ""),
            ("involvedObject.name", ""),
            ("involvedObject.uid", ""),
            ("involvedObject.apiVersion", ""),
            ("involvedObject.resourceVersion", ""),
            ("involvedObject.fieldPath", ""),
            ("reason", ""),
            ("reportingComponent", ""),
            ("source", ""),
            ("type", ""),
        ],
    ),
    ("", "namespaces", &[("status.phase", "")]),
    ("", "nodes", &[("spec.unschedulable", "false")]),
    ("", "secrets", &[("type", "")]),
    ("", "replicationcontrollers", &[("status.replicas", "0")]),
    ("apps", "replicasets", &[("status.replicas", "0")]),
    ("batch", "jobs", &[("status.successful", "0")]),
];

impl ResourceInfo {
    /// The extra fields field selectors may name, with their absent values.
    pub fn selectable_fields(&self) -> Fields {
        SELECTABLE.iter().find(|(g, r, _)| *g == self.group && *r == self.resource).map_or(&[], |(_, _, f)| f)
    }
}

//! The resource table: which kinds the simulator serves, how each is keyed,
//! which fields its field selectors accept, and the discovery documents
//! kubectl reads to find them.
//!
//! The table is fixed once the server starts (built-ins plus the custom
//! resources named in [`crate::SimConfig`]); [`Registry`] is shared read-only.

use apimachinery::resource::{BUILTINS, BuiltinKind, Resource};
use serde_json::{Value, json};

/// One served resource: its names and built-in facts ([`Resource`]) plus
/// what discovery says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// Names, scope, selectable fields and zero object.
    pub resource: Resource,
    /// Singular name, e.g. `pod`.
    pub singular: String,
    /// kubectl short names.
    pub short_names: Vec<String>,
    /// Discovery categories (`all`).
    pub categories: Vec<String>,
    /// Whether the kind has a `status` subresource.
    pub status_subresource: bool,
}

/// A resource type is named and keyed as its [`Resource`].
impl std::ops::Deref for ResourceType {
    type Target = Resource;
    fn deref(&self) -> &Resource {
        &self.resource
    }
}

impl ResourceType {
    /// Whether it is a custom resource (served by the apiserver from a CRD,
    /// as unstructured maps), not a built-in kind.
    pub fn is_custom(&self) -> bool {
        apimachinery::resource::builtin(&self.group, &self.version, &self.plural).is_none()
    }

    /// How the apiserver writes its lists' envelopes.
    pub fn envelope(&self) -> apimachinery::list::Envelope {
        if self.is_custom() { apimachinery::list::Envelope::Unstructured } else { apimachinery::list::Envelope::Typed }
    }

    fn discovery_verbs() -> Value {
        json!(["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"])
    }

    fn legacy_discovery(&self) -> Vec<Value> {
        let mut out = vec![json!({
            "name": self.plural, "singularName": self.singular, "namespaced": self.namespaced,
            "kind": self.kind, "verbs": Self::discovery_verbs(),
            "shortNames": self.short_names, "categories": self.categories,
        })];
        if self.status_subresource {
            out.push(json!({
                "name": format!("{}/status", self.plural), "singularName": "", "namespaced": self.namespaced,
                "kind": self.kind, "verbs": ["get", "patch", "update"],
            }));
        }
        out
    }

    fn aggregated_discovery(&self) -> Value {
        let kind = json!({"group": self.group, "version": self.version, "kind": self.kind});
        let mut subresources = Vec::new();
        if self.status_subresource {
            subresources.push(json!({"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}));
        }
        json!({
            "resource": self.plural, "responseKind": kind,
            "scope": if self.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": self.singular, "verbs": Self::discovery_verbs(),
            "shortNames": self.short_names, "categories": self.categories,
            "subresources": subresources,
        })
    }
}

/// A custom resource to serve, parsed from `PLURAL.GROUP/VERSION=Kind[,cluster]`,
/// e.g. `widgets.example.com/v1=Widget`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomResource(pub ResourceType);

impl std::str::FromStr for CustomResource {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let usage = || format!("custom resource {s:?}: expected PLURAL.GROUP/VERSION=Kind[,cluster], e.g. widgets.example.com/v1=Widget");
        let (gvr, rest) = s.split_once('=').ok_or_else(usage)?;
        let (kind, scope) = match rest.split_once(',') {
            Some((k, "cluster")) => (k, false),
            Some((k, "namespaced")) => (k, true),
            Some(_) => return Err(usage()),
            None => (rest, true),
        };
        let (plural_group, version) = gvr.split_once('/').ok_or_else(usage)?;
        let (plural, group) = plural_group.split_once('.').ok_or_else(usage)?;
        if [plural, group, version, kind].iter().any(|p| p.is_empty()) {
            return Err(usage());
        }
        Ok(Self(ResourceType {
            resource: Resource::new(group, version, plural, kind, scope),
            singular: kind.to_lowercase(),
            short_names: vec![],
            categories: vec![],
            status_subresource: true,
        }))
    }
}

fn builtin_type(b: &BuiltinKind) -> ResourceType {
    ResourceType {
        resource: b.resource(),
        singular: b.kind.to_lowercase(),
        short_names: b.short_names.iter().map(|s| s.to_string()).collect(),
        categories: b.categories.iter().map(|c| c.to_string()).collect(),
        status_subresource: b.status_subresource,
    }
}

/// Index of a resource in the [`Registry`].
pub type ResourceId = usize;

/// A custom resource that cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Another resource has its group, version and plural.
    #[error("custom resource {qualified}/{version} is already served")]
    AlreadyServed { qualified: String, version: String },
}

/// Every served resource, fixed at start-up.
#[derive(Debug, Clone)]
pub struct Registry {
    types: Vec<ResourceType>,
}

impl Registry {
    /// The built-in table plus `custom`.
    pub fn new(custom: &[CustomResource]) -> Result<Self, RegistryError> {
        let mut types: Vec<ResourceType> = BUILTINS.iter().map(builtin_type).collect();
        for CustomResource(rt) in custom {
            if types.iter().any(|t| t.group == rt.group && t.version == rt.version && t.plural == rt.plural) {
                return Err(RegistryError::AlreadyServed { qualified: rt.qualified(), version: rt.version.clone() });
            }
            types.push(rt.clone());
        }
        Ok(Self { types })
    }

    /// The resource at `id`.
    pub fn get(&self, id: ResourceId) -> &ResourceType {
        &self.types[id]
    }

    /// All resources with their ids.
    pub fn iter(&self) -> impl Iterator<Item = (ResourceId, &ResourceType)> {
        self.types.iter().enumerate()
    }

    /// Looks a resource up by group, version and plural.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<ResourceId> {
        self.types.iter().position(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// The id of a built-in that the simulator itself relies on (namespaces, pods, …).
    pub fn builtin(&self, group: &str, plural: &str) -> ResourceId {
        self.types.iter().position(|t| t.group == group && t.plural == plural).expect("a built-in resource")
    }

    /// Whether `id` is a built-in kind (strategic merge patch applies only to those).
    pub fn is_builtin(&self, id: ResourceId) -> bool {
        id < BUILTINS.len()
    }

    /// Whether any resource is served under `group/version`.
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.types.iter().any(|t| t.group == group && t.version == version)
    }

    fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for t in self.types.iter().filter(|t| !t.group.is_empty()) {
            match out.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) if !versions.contains(&t.version) => versions.push(t.version.clone()),
                Some(_) => {}
                None => out.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        out
    }

    /// `GET /api`: `APIVersions`.
    pub fn api_versions(&self, server_address: &str) -> Value {
        json!({"kind": "APIVersions", "versions": ["v1"],
               "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]})
    }

    fn api_group(name: &str, versions: &[String]) -> Value {
        let vs: Vec<Value> = versions.iter().map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v})).collect();
        json!({"name": name, "versions": vs, "preferredVersion": vs[0]})
    }

    /// `GET /apis`: `APIGroupList`.
    pub fn api_group_list(&self) -> Value {
        let groups: Vec<Value> = self.groups().iter().map(|(g, vs)| Self::api_group(g, vs)).collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `GET /apis/GROUP`: `APIGroup`, if served.
    pub fn api_group_doc(&self, group: &str) -> Option<Value> {
        let (name, versions) = self.groups().into_iter().find(|(g, _)| g == group)?;
        let mut doc = json!({"kind": "APIGroup", "apiVersion": "v1"});
        if let (Some(d), Value::Object(g)) = (doc.as_object_mut(), Self::api_group(&name, &versions)) {
            d.extend(g);
        }
        Some(doc)
    }

    /// `GET /api/v1` or `/apis/GROUP/VERSION`: `APIResourceList`.
    pub fn api_resource_list(&self, group: &str, version: &str) -> Value {
        let resources: Vec<Value> =
            self.types.iter().filter(|t| t.group == group && t.version == version).flat_map(ResourceType::legacy_discovery).collect();
        let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
    }

    fn gv_path(group: &str, version: &str) -> String {
        if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
    }

    /// `GET /openapi/v3`: one entry per served group-version.
    pub fn openapi_root(&self) -> Value {
        let mut paths = serde_json::Map::new();
        for t in &self.types {
            let p = Self::gv_path(&t.group, &t.version);
            let url = format!("/openapi/v3/{p}");
            paths.entry(p).or_insert_with(|| json!({"serverRelativeURL": url}));
        }
        json!({"paths": paths})
    }

    /// `GET /openapi/v3/api/v1` (or `apis/GROUP/VERSION`): a minimal document
    /// that tells kubectl each kind's PATCH takes `fieldValidation`, so it
    /// leaves validation to the server instead of downloading schemas.
    pub fn openapi_group_version(&self, group: &str, version: &str) -> Option<Value> {
        let mut paths = serde_json::Map::new();
        for t in self.types.iter().filter(|t| t.group == group && t.version == version) {
            let scope = if t.namespaced { "namespaces/{namespace}/" } else { "" };
            let path = format!("/{}/{scope}{}/{{name}}", Self::gv_path(group, version), t.plural);
            let gvk = json!({"group": t.group, "version": t.version, "kind": t.kind});
            let param = json!([{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}}]);
            paths.insert(path, json!({"patch": {"parameters": param, "x-kubernetes-group-version-kind": gvk, "responses": {}}}));
        }
        if paths.is_empty() {
            return None;
        }
        Some(
            json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.36.2"}, "paths": paths, "components": {"schemas": {}}}),
        )
    }

    /// Aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`)
    /// for `/api` (`core = true`) or `/apis`.
    pub fn aggregated(&self, core: bool) -> Value {
        let groups: Vec<(String, Vec<String>)> = if core { vec![(String::new(), vec!["v1".into()])] } else { self.groups() };
        let items: Vec<Value> = groups
            .iter()
            .map(|(g, versions)| {
                let vs: Vec<Value> = versions
                    .iter()
                    .map(|v| {
                        let rs: Vec<Value> = self
                            .types
                            .iter()
                            .filter(|t| &t.group == g && &t.version == v)
                            .map(ResourceType::aggregated_discovery)
                            .collect();
                        json!({"version": v, "resources": rs, "freshness": "Current"})
                    })
                    .collect();
                let meta = if g.is_empty() { json!({}) } else { json!({"name": g}) };
                json!({"metadata": meta, "versions": vs})
            })
            .collect();
        json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_resource_spec_parses_scope_and_names() {
        let CustomResource(rt) = "widgets.example.com/v1=Widget".parse().unwrap();
        assert_eq!(
            (rt.group.as_str(), rt.version.as_str(), rt.plural.as_str(), rt.kind.as_str()),
            ("example.com", "v1", "widgets", "Widget")
        );
        assert!(rt.namespaced);
        let CustomResource(rt) = "gadgets.example.com/v1beta1=Gadget,cluster".parse().unwrap();
        assert!(!rt.namespaced);
        assert!("widgets/v1=Widget".parse::<CustomResource>().is_err());
        assert!("widgets.example.com/v1".parse::<CustomResource>().is_err());
    }
}

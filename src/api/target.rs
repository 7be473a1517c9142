//! What a request's path names under the cached resources: a collection
//! or one object of a cached resource, in its scope (a namespaced
//! resource's objects only within their namespace; a cluster-scoped one
//! has no namespaced paths). Subresources and other paths name nothing.

use std::sync::Arc;

use crate::cache::{Cache, CachedResource};

/// What a path under a cached resource names.
#[derive(Debug)]
pub struct Target<'a> {
    /// The resource's index in the cache (and among the dispatchers).
    pub index: usize,
    /// The resource.
    pub res: &'a Arc<CachedResource>,
    /// The namespace of a namespaced path.
    pub namespace: Option<&'a str>,
    /// The object, for a path below the collection.
    pub name: Option<&'a str>,
}

/// The cached collection or object `path` names, if any (subresources and
/// other paths are not cached).
pub fn target<'a>(cache: &'a Cache, path: &'a str) -> Option<Target<'a>> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, resource, name) = match *rest {
        [resource] => (None, resource, None),
        [resource, name] => (None, resource, Some(name)),
        ["namespaces", ns, resource] => (Some(ns), resource, None),
        ["namespaces", ns, resource, name] => (Some(ns), resource, Some(name)),
        _ => return None,
    };
    if namespace.is_some_and(str::is_empty) || name.is_some_and(str::is_empty) {
        return None;
    }
    let index =
        cache.resources().iter().position(|r| r.info().group == group && r.info().version == version && r.info().plural == resource)?;
    let res = &cache.resources()[index];
    let in_scope = match (res.info().namespaced, namespace, name) {
        // A cluster-scoped resource has no namespaced paths.
        (false, Some(_), _) => false,
        // A namespaced object is only named within its namespace.
        (true, None, Some(_)) => false,
        _ => true,
    };
    in_scope.then_some(Target { index, res, namespace, name })
}

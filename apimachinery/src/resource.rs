//! Resources as the API names and keys them: [`Resource`] (group, version,
//! plural, kind, scope) with the derived names the apiserver uses in paths,
//! list envelopes, lone objects and error messages, and [`BUILTINS`], the
//! facts about built-in kinds that clients can observe: which fields their
//! field selectors accept (and the value an absent field has), the zero
//! object a bookmark carries, short names and categories for discovery.
//!
//! Invariant: a [`Resource`] built with [`Resource::new`] carries the
//! built-in facts when, and only when, its group, version and plural are
//! those of a row of [`BUILTINS`]; any other resource (a custom resource) has
//! no extra selectable fields and an empty zero object.

/// Field paths that field selectors accept beyond `metadata.name` (and
/// `metadata.namespace` for namespaced kinds), with the value an absent
/// field has (`"false"` for booleans and `"0"` for numbers, as the
/// apiserver's field sets format zero values).
pub type Fields = &'static [(&'static str, &'static str)];

/// One built-in kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinKind {
    /// `v1` or `GROUP/VERSION`.
    pub group_version: &'static str,
    /// The plural resource name used in paths.
    pub plural: &'static str,
    /// The kind.
    pub kind: &'static str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// kubectl short names (discovery).
    pub short_names: &'static [&'static str],
    /// Whether the kind is in the `all` category (discovery).
    pub in_all: bool,
    /// Extra selectable fields.
    pub fields: Fields,
    /// Whether the kind has a `status` subresource.
    pub status_subresource: bool,
}

const POD_FIELDS: Fields = &[
    ("spec.nodeName", ""),
    ("spec.restartPolicy", ""),
    ("spec.schedulerName", ""),
    ("spec.serviceAccountName", ""),
    ("spec.hostNetwork", "false"),
    ("status.phase", ""),
    ("status.podIP", ""),
    ("status.nominatedNodeName", ""),
];

const EVENT_FIELDS: Fields = &[
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
];

/// The name [`Resource::probe_path`] asks for.
pub const PROBE_NAME: &str = "kache-freshness-probe";

/// Selectable fields read from another path of the object: events select
/// on `source`, which is `source.component` (the apiserver's `EventToSelectableFields`).
const FIELD_PATHS: &[(&str, &str)] = &[("source", "source.component")];

/// Built-in kinds, as kube-apiserver 1.36 serves them.
#[rustfmt::skip]
pub const BUILTINS: &[BuiltinKind] = &[
    BuiltinKind { group_version: "v1", plural: "namespaces", kind: "Namespace", namespaced: false, short_names: &["ns"], in_all: false, fields: &[("status.phase", "")], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "nodes", kind: "Node", namespaced: false, short_names: &["no"], in_all: false, fields: &[("spec.unschedulable", "false")], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "pods", kind: "Pod", namespaced: true, short_names: &["po"], in_all: true, fields: POD_FIELDS, status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "configmaps", kind: "ConfigMap", namespaced: true, short_names: &["cm"], in_all: false, fields: &[], status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "secrets", kind: "Secret", namespaced: true, short_names: &[], in_all: false, fields: &[("type", "")], status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "services", kind: "Service", namespaced: true, short_names: &["svc"], in_all: true, fields: &[], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "endpoints", kind: "Endpoints", namespaced: true, short_names: &["ep"], in_all: false, fields: &[], status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "events", kind: "Event", namespaced: true, short_names: &["ev"], in_all: false, fields: EVENT_FIELDS, status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "serviceaccounts", kind: "ServiceAccount", namespaced: true, short_names: &["sa"], in_all: false, fields: &[], status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "persistentvolumeclaims", kind: "PersistentVolumeClaim", namespaced: true, short_names: &["pvc"], in_all: false, fields: &[], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "persistentvolumes", kind: "PersistentVolume", namespaced: false, short_names: &["pv"], in_all: false, fields: &[], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "replicationcontrollers", kind: "ReplicationController", namespaced: true, short_names: &["rc"], in_all: true, fields: &[("status.replicas", "0")], status_subresource: true },
    BuiltinKind { group_version: "apps/v1", plural: "deployments", kind: "Deployment", namespaced: true, short_names: &["deploy"], in_all: true, fields: &[], status_subresource: true },
    BuiltinKind { group_version: "apps/v1", plural: "replicasets", kind: "ReplicaSet", namespaced: true, short_names: &["rs"], in_all: true, fields: &[("status.replicas", "0")], status_subresource: true },
    BuiltinKind { group_version: "apps/v1", plural: "daemonsets", kind: "DaemonSet", namespaced: true, short_names: &["ds"], in_all: true, fields: &[], status_subresource: true },
    BuiltinKind { group_version: "apps/v1", plural: "statefulsets", kind: "StatefulSet", namespaced: true, short_names: &["sts"], in_all: true, fields: &[], status_subresource: true },
    BuiltinKind { group_version: "apps/v1", plural: "controllerrevisions", kind: "ControllerRevision", namespaced: true, short_names: &[], in_all: false, fields: &[], status_subresource: false },
    BuiltinKind { group_version: "batch/v1", plural: "jobs", kind: "Job", namespaced: true, short_names: &[], in_all: true, fields: &[("status.successful", "0")], status_subresource: true },
    BuiltinKind { group_version: "batch/v1", plural: "cronjobs", kind: "CronJob", namespaced: true, short_names: &["cj"], in_all: true, fields: &[], status_subresource: true },
    BuiltinKind { group_version: "coordination.k8s.io/v1", plural: "leases", kind: "Lease", namespaced: true, short_names: &[], in_all: false, fields: &[], status_subresource: false },
    BuiltinKind { group_version: "discovery.k8s.io/v1", plural: "endpointslices", kind: "EndpointSlice", namespaced: true, short_names: &[], in_all: false, fields: &[], status_subresource: false },
    BuiltinKind { group_version: "apiextensions.k8s.io/v1", plural: "customresourcedefinitions", kind: "CustomResourceDefinition", namespaced: false, short_names: &["crd", "crds"], in_all: false, fields: &[], status_subresource: true },
    BuiltinKind { group_version: "networking.k8s.io/v1", plural: "ingresses", kind: "Ingress", namespaced: true, short_names: &["ing"], in_all: false, fields: &[], status_subresource: true },
    BuiltinKind { group_version: "rbac.authorization.k8s.io/v1", plural: "clusterroles", kind: "ClusterRole", namespaced: false, short_names: &[], in_all: false, fields: &[], status_subresource: false },
    BuiltinKind { group_version: "rbac.authorization.k8s.io/v1", plural: "rolebindings", kind: "RoleBinding", namespaced: true, short_names: &[], in_all: false, fields: &[], status_subresource: false },
    BuiltinKind { group_version: "flowcontrol.apiserver.k8s.io/v1", plural: "flowschemas", kind: "FlowSchema", namespaced: false, short_names: &[], in_all: false, fields: &[], status_subresource: true },
    BuiltinKind { group_version: "flowcontrol.apiserver.k8s.io/v1", plural: "prioritylevelconfigurations", kind: "PriorityLevelConfiguration", namespaced: false, short_names: &[], in_all: false, fields: &[], status_subresource: true },
];

impl BuiltinKind {
    /// The API group (empty for the core group).
    pub fn group(&self) -> &'static str {
        self.group_version.rsplit_once('/').map_or("", |(g, _)| g)
    }

    /// The version.
    pub fn version(&self) -> &'static str {
        self.group_version.rsplit_once('/').map_or(self.group_version, |(_, v)| v)
    }

    /// This kind as a [`Resource`].
    pub fn resource(&self) -> Resource {
        Resource::new(self.group(), self.version(), self.plural, self.kind, self.namespaced)
    }
}

/// The built-in kind served at `group`/`version`/`plural`, if it is one.
pub fn builtin(group: &str, version: &str, plural: &str) -> Option<&'static BuiltinKind> {
    BUILTINS.iter().find(|b| b.group() == group && b.version() == version && b.plural == plural)
}

/// The JSON after `metadata` of each built-in kind's empty object (a
/// bookmark's), as the apiserver writes it: its internal zero value converted
/// to the served version (`tests/reference/table-bookmarks/` holds them as its
/// own code writes them; the captured watches agree).
#[rustfmt::skip]
const EMPTY_OBJECTS: &[(&str, &str, &str)] = &[
    ("apiregistration.k8s.io/v1", "apiservices", r#","spec":{"groupPriorityMinimum":0,"versionPriority":0},"status":{}"#),
    ("certificates.k8s.io/v1", "certificatesigningrequests", r#","spec":{"request":null,"signerName":""},"status":{}"#),
    ("rbac.authorization.k8s.io/v1", "clusterrolebindings", r#","roleRef":{"apiGroup":"","kind":"","name":""}"#),
    ("rbac.authorization.k8s.io/v1", "clusterroles", r#","rules":null"#),
    ("v1", "configmaps", r#""#),
    ("apps/v1", "controllerrevisions", r#","data":null,"revision":0"#),
    ("batch/v1", "cronjobs", r#","spec":{"schedule":"","jobTemplate":{"metadata":{},"spec":{"template":{"metadata":{},"spec":{"containers":null}}}}},"status":{}"#),
    ("storage.k8s.io/v1", "csidrivers", r#","spec":{}"#),
    ("storage.k8s.io/v1", "csinodes", r#","spec":{"drivers":null}"#),
    ("storage.k8s.io/v1", "csistoragecapacities", r#","storageClassName":"""#),
    ("apiextensions.k8s.io/v1", "customresourcedefinitions", r#","spec":{"group":"","names":{"plural":"","kind":""},"scope":"","versions":null},"status":{"conditions":null,"acceptedNames":{"plural":"","kind":""},"storedVersions":null}"#),
    ("apps/v1", "daemonsets", r#","spec":{"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"updateStrategy":{}},"status":{"currentNumberScheduled":0,"numberMisscheduled":0,"desiredNumberScheduled":0,"numberReady":0}"#),
    ("apps/v1", "deployments", r#","spec":{"replicas":0,"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"strategy":{}},"status":{}"#),
    ("resource.k8s.io/v1", "deviceclasses", r#","spec":{}"#),
    ("v1", "endpoints", r#""#),
    ("discovery.k8s.io/v1", "endpointslices", r#","addressType":"","endpoints":null,"ports":null"#),
    ("v1", "events", r#","involvedObject":{},"source":{},"firstTimestamp":null,"lastTimestamp":null,"eventTime":null,"reportingComponent":"","reportingInstance":"""#),
    ("events.k8s.io/v1", "events", r#","eventTime":null,"regarding":{},"deprecatedSource":{},"deprecatedFirstTimestamp":null,"deprecatedLastTimestamp":null"#),
    ("flowcontrol.apiserver.k8s.io/v1", "flowschemas", r#","spec":{"priorityLevelConfiguration":{"name":""},"matchingPrecedence":0},"status":{}"#),
    ("autoscaling/v1", "horizontalpodautoscalers", r#","spec":{"scaleTargetRef":{"kind":"","name":""},"maxReplicas":0},"status":{"currentReplicas":0,"desiredReplicas":0}"#),
    ("autoscaling/v2", "horizontalpodautoscalers", r#","spec":{"scaleTargetRef":{"kind":"","name":""},"maxReplicas":0},"status":{"desiredReplicas":0,"currentMetrics":null}"#),
    ("networking.k8s.io/v1", "ingressclasses", r#","spec":{}"#),
    ("networking.k8s.io/v1", "ingresses", r#","spec":{},"status":{"loadBalancer":{}}"#),
    ("networking.k8s.io/v1", "ipaddresses", r#","spec":{}"#),
    ("batch/v1", "jobs", r#","spec":{"template":{"metadata":{},"spec":{"containers":null}}},"status":{}"#),
    ("coordination.k8s.io/v1", "leases", r#","spec":{}"#),
    ("v1", "limitranges", r#","spec":{"limits":null}"#),
    ("admissionregistration.k8s.io/v1", "mutatingadmissionpolicies", r#","spec":{}"#),
    ("admissionregistration.k8s.io/v1", "mutatingadmissionpolicybindings", r#","spec":{}"#),
    ("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", r#""#),
    ("v1", "namespaces", r#","spec":{},"status":{}"#),
    ("networking.k8s.io/v1", "networkpolicies", r#","spec":{"podSelector":{}}"#),
    ("v1", "nodes", r#","spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}"#),
    ("v1", "persistentvolumeclaims", r#","spec":{"resources":{}},"status":{}"#),
    ("v1", "persistentvolumes", r#","spec":{},"status":{}"#),
    ("policy/v1", "poddisruptionbudgets", r#","spec":{},"status":{"disruptionsAllowed":0,"currentHealthy":0,"desiredHealthy":0,"expectedPods":0}"#),
    ("v1", "pods", r#","spec":{"containers":null},"status":{}"#),
    ("v1", "podtemplates", r#","template":{"metadata":{},"spec":{"containers":null}}"#),
    ("scheduling.k8s.io/v1", "priorityclasses", r#","value":0"#),
    ("flowcontrol.apiserver.k8s.io/v1", "prioritylevelconfigurations", r#","spec":{"type":""},"status":{}"#),
    ("apps/v1", "replicasets", r#","spec":{"replicas":0,"selector":null,"template":{"metadata":{},"spec":{"containers":null}}},"status":{"replicas":0}"#),
    ("v1", "replicationcontrollers", r#","spec":{},"status":{"replicas":0}"#),
    ("resource.k8s.io/v1", "resourceclaims", r#","spec":{"devices":{"requests":null}},"status":{}"#),
    ("resource.k8s.io/v1", "resourceclaimtemplates", r#","spec":{"metadata":{},"spec":{"devices":{"requests":null}}}"#),
    ("v1", "resourcequotas", r#","spec":{},"status":{}"#),
    ("resource.k8s.io/v1", "resourceslices", r#","spec":{"driver":"","pool":{"name":"","generation":0,"resourceSliceCount":0}}"#),
    ("rbac.authorization.k8s.io/v1", "rolebindings", r#","roleRef":{"apiGroup":"","kind":"","name":""}"#),
    ("rbac.authorization.k8s.io/v1", "roles", r#","rules":null"#),
    ("node.k8s.io/v1", "runtimeclasses", r#","handler":"""#),
    ("v1", "secrets", r#""#),
    ("v1", "serviceaccounts", r#""#),
    ("networking.k8s.io/v1", "servicecidrs", r#","spec":{},"status":{}"#),
    ("v1", "services", r#","spec":{},"status":{"loadBalancer":{}}"#),
    ("apps/v1", "statefulsets", r#","spec":{"replicas":0,"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"serviceName":"","updateStrategy":{}},"status":{"replicas":0,"availableReplicas":0}"#),
    ("storage.k8s.io/v1", "storageclasses", r#","provisioner":"""#),
    ("admissionregistration.k8s.io/v1", "validatingadmissionpolicies", r#","spec":{},"status":{}"#),
    ("admissionregistration.k8s.io/v1", "validatingadmissionpolicybindings", r#","spec":{}"#),
    ("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", r#""#),
    ("storage.k8s.io/v1", "volumeattachments", r#","spec":{"attacher":"","source":{},"nodeName":""},"status":{"attached":false}"#),
    ("storage.k8s.io/v1", "volumeattributesclasses", r#","driverName":"""#),
];

/// The members after `metadata` of the empty object of built-in `plural` in `group`/`version`.
fn empty_object_suffix(group: &str, version: &str, plural: &str) -> Option<&'static str> {
    let matches = |gv: &str| match gv.rsplit_once('/') {
        Some((g, v)) => g == group && v == version,
        None => group.is_empty() && gv == version,
    };
    EMPTY_OBJECTS.iter().find(|(gv, p, _)| *p == plural && matches(gv)).map(|(_, _, suffix)| *suffix)
}

/// A resource: what its paths, lists, objects and errors are named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// API group; empty for the core group.
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Plural resource name, e.g. `pods`.
    pub plural: String,
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Extra selectable fields (built-in kinds only).
    pub fields: Fields,
    /// What the apiserver writes after `metadata` in the kind's empty object
    /// (what bookmarks carry), e.g. `,"spec":{"containers":null},"status":{}`;
    /// `None` for a kind it does not build in (a custom resource's bookmark
    /// is unstructured: its members in key order).
    pub zero_suffix: Option<&'static str>,
}

impl Resource {
    /// A resource, with the built-in facts when it is a built-in kind.
    pub fn new(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> Resource {
        let b = builtin(group, version, plural);
        Resource {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            kind: kind.into(),
            namespaced,
            fields: b.map_or(&[], |b| b.fields),
            zero_suffix: empty_object_suffix(group, version, plural),
        }
    }

    /// `v1` or `GROUP/VERSION`, as objects' `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// `pods` or `deployments.apps`, as the apiserver names resources in messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() { self.plural.clone() } else { format!("{}.{}", self.plural, self.group) }
    }

    /// The kind of a list of these objects, e.g. `PodList`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// `/api/v1` or `/apis/GROUP/VERSION`.
    pub fn group_version_path(&self) -> String {
        if self.group.is_empty() { format!("/api/{}", self.version) } else { format!("/apis/{}/{}", self.group, self.version) }
    }

    /// The cluster-wide collection path, e.g. `/api/v1/pods`.
    pub fn collection_path(&self) -> String {
        format!("{}/{}", self.group_version_path(), self.plural)
    }

    /// The cheapest consistent read of this resource, for its revision: a
    /// list naming one object (`PROBE_NAME`, which none is expected to
    /// have) in `default`, or cluster-wide for a cluster-scoped resource.
    /// kube-apiserver reads a list whose field selector names one object by
    /// its key (the registry's `MatchesSingle`): it waits for its watch cache
    /// to reach etcd's current revision as for any consistent list, then
    /// looks up one key — where `limit=1` walks the whole collection (pods,
    /// 50,000 of them, kube-apiserver 1.36.2: 1.2 ms against 6–12 ms).
    /// `limit=1` stays, for a server that would not narrow by name.
    pub fn probe_path(&self) -> String {
        let scope = if self.namespaced { "/namespaces/default" } else { "" };
        format!("{}{scope}/{}?fieldSelector=metadata.name%3D{PROBE_NAME}&limit=1", self.group_version_path(), self.plural)
    }

    /// `{"kind":K,"apiVersion":V,`: how the apiserver begins an object of
    /// this resource outside a list (a GET, a watch event).
    pub fn type_prefix(&self) -> String {
        format!("{{\"kind\":{},\"apiVersion\":{},", json_string(&self.kind), json_string(&self.api_version()))
    }

    /// The storage key in etcd order: `namespace/name`, or `name` for a cluster-scoped resource.
    pub fn key(&self, namespace: &str, name: &str) -> String {
        if self.namespaced { format!("{namespace}/{name}") } else { name.to_string() }
    }

    /// The key prefix of a list: `ns/` in a namespace, empty across all.
    pub fn prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{ns}/"),
            _ => String::new(),
        }
    }

    /// Whether field selectors may name `field`.
    pub fn supports_field(&self, field: &str) -> bool {
        field == "metadata.name" || (self.namespaced && field == "metadata.namespace") || self.fields.iter().any(|(f, _)| *f == field)
    }

    /// Where in the object each extra selectable field is read from, in
    /// the order of [`Resource::fields`] (for [`crate::meta::parse`]).
    pub fn field_paths(&self) -> Vec<&'static str> {
        self.fields.iter().map(|(f, _)| FIELD_PATHS.iter().find(|(name, _)| name == f).map_or(*f, |(_, path)| *path)).collect()
    }
}

/// The value of the `i`-th of `fields` given what was read at its path:
/// the text, or the zero value's text when absent.
pub fn field_or_default(fields: Fields, i: usize, read: Option<&str>) -> &str {
    match read {
        Some(v) => v,
        None => fields.get(i).map_or("", |(_, default)| default),
    }
}

/// A string as a JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_names_one_object_where_the_apiserver_reads_it_by_key() {
        let pods = Resource::new("", "v1", "pods", "Pod", true);
        assert_eq!(pods.probe_path(), "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dkache-freshness-probe&limit=1");
        let roles = Resource::new("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false);
        assert_eq!(
            roles.probe_path(),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles?fieldSelector=metadata.name%3Dkache-freshness-probe&limit=1"
        );
        let o = crate::params::ListOptions::decode(pods.probe_path().split_once('?').unwrap().1).unwrap();
        assert_eq!(crate::list::named_key(&pods, Some("default"), &o).as_deref(), Some("default/kache-freshness-probe"));
    }

    #[test]
    fn builtins_carry_their_facts_and_custom_resources_none() {
        let pods = Resource::new("", "v1", "pods", "Pod", true);
        assert!(pods.supports_field("spec.nodeName") && pods.supports_field("metadata.namespace"));
        assert!(!pods.supports_field("spec.unknownField"));
        assert_eq!(pods.zero_suffix, Some(r#","spec":{"containers":null},"status":{}"#));
        assert_eq!(
            (pods.key("ns", "p"), pods.prefix(Some("ns")), pods.type_prefix()),
            ("ns/p".into(), "ns/".into(), r#"{"kind":"Pod","apiVersion":"v1","#.into())
        );
        let nodes = Resource::new("", "v1", "nodes", "Node", false);
        assert!(!nodes.supports_field("metadata.namespace"));
        assert_eq!((nodes.key("", "n"), nodes.prefix(Some("ns"))), ("n".into(), String::new()));
        let widgets = Resource::new("example.com", "v1", "widgets", "Widget", true);
        assert_eq!((widgets.fields.len(), widgets.zero_suffix), (0, None));
        let events = Resource::new("", "v1", "events", "Event", true);
        assert!(events.field_paths().contains(&"source.component") && events.supports_field("source"));
        let of = |i, read| field_or_default(pods.fields, i, read);
        assert_eq!((of(4, None), of(4, Some("true")), of(0, None)), ("false", "true", ""));
        assert_eq!(
            (widgets.qualified(), widgets.api_version(), widgets.collection_path()),
            ("widgets.example.com".into(), "example.com/v1".into(), "/apis/example.com/v1/widgets".into())
        );
    }
}

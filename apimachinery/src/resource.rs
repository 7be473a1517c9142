//! Resources as the API names and keys them: [`Resource`] (group, version,
//! plural, kind, scope) with the derived names the apiserver uses in paths,
//! list envelopes, lone objects and error messages, and [`BUILTINS`], the
//! facts about built-in kinds that clients can observe: their field labels
//! ([`crate::field_labels`]), the zero object a bookmark carries, short
//! names and categories for discovery.
//!
//! Invariant: a [`Resource`] built with [`Resource::new`] carries the
//! built-in facts when, and only when, its group and plural are those of a
//! kind kube-apiserver builds in ([`is_builtin`]); any other resource (a
//! custom resource) has a custom resource's field labels and an empty zero
//! object.

use crate::field_labels::{self, FieldLabels};

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
    /// Discovery categories (`all`, `api-extensions`).
    pub categories: &'static [&'static str],
    /// Whether the kind has a `status` subresource.
    pub status_subresource: bool,
}

/// The name [`Resource::probe_path`] asks for.
pub const PROBE_NAME: &str = "kache-freshness-probe";

/// Built-in kinds, as kube-apiserver 1.36 serves them by default: every
/// resource that can be listed and watched, in the order of its discovery
/// documents (`/api`, `/apis`), with what they say of it.
#[rustfmt::skip]
pub const BUILTINS: &[BuiltinKind] = &[
    BuiltinKind { group_version: "v1", plural: "configmaps", kind: "ConfigMap", namespaced: true, short_names: &["cm"], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "endpoints", kind: "Endpoints", namespaced: true, short_names: &["ep"], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "events", kind: "Event", namespaced: true, short_names: &["ev"], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "limitranges", kind: "LimitRange", namespaced: true, short_names: &["limits"], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "namespaces", kind: "Namespace", namespaced: false, short_names: &["ns"], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "nodes", kind: "Node", namespaced: false, short_names: &["no"], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "persistentvolumeclaims", kind: "PersistentVolumeClaim", namespaced: true, short_names: &["pvc"], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "persistentvolumes", kind: "PersistentVolume", namespaced: false, short_names: &["pv"], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "pods", kind: "Pod", namespaced: true, short_names: &["po"], categories: &["all"], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "podtemplates", kind: "PodTemplate", namespaced: true, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "replicationcontrollers", kind: "ReplicationController", namespaced: true, short_names: &["rc"], categories: &["all"], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "resourcequotas", kind: "ResourceQuota", namespaced: true, short_names: &["quota"], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "v1", plural: "secrets", kind: "Secret", namespaced: true, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "serviceaccounts", kind: "ServiceAccount", namespaced: true, short_names: &["sa"], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "v1", plural: "services", kind: "Service", namespaced: true, short_names: &["svc"], categories: &["all"], status_subresource: true },
    BuiltinKind { group_version: "apiregistration.k8s.io/v1", plural: "apiservices", kind: "APIService", namespaced: false, short_names: &[], categories: &["api-extensions"], status_subresource: true },
    BuiltinKind { group_version: "apps/v1", plural: "controllerrevisions", kind: "ControllerRevision", namespaced: true, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "apps/v1", plural: "daemonsets", kind: "DaemonSet", namespaced: true, short_names: &["ds"], categories: &["all"], status_subresource: true },
    BuiltinKind { group_version: "apps/v1", plural: "deployments", kind: "Deployment", namespaced: true, short_names: &["deploy"], categories: &["all"], status_subresource: true },
    BuiltinKind { group_version: "apps/v1", plural: "replicasets", kind: "ReplicaSet", namespaced: true, short_names: &["rs"], categories: &["all"], status_subresource: true },
    BuiltinKind { group_version: "apps/v1", plural: "statefulsets", kind: "StatefulSet", namespaced: true, short_names: &["sts"], categories: &["all"], status_subresource: true },
    BuiltinKind { group_version: "events.k8s.io/v1", plural: "events", kind: "Event", namespaced: true, short_names: &["ev"], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "autoscaling/v2", plural: "horizontalpodautoscalers", kind: "HorizontalPodAutoscaler", namespaced: true, short_names: &["hpa"], categories: &["all"], status_subresource: true },
    BuiltinKind { group_version: "autoscaling/v1", plural: "horizontalpodautoscalers", kind: "HorizontalPodAutoscaler", namespaced: true, short_names: &["hpa"], categories: &["all"], status_subresource: true },
    BuiltinKind { group_version: "batch/v1", plural: "cronjobs", kind: "CronJob", namespaced: true, short_names: &["cj"], categories: &["all"], status_subresource: true },
    BuiltinKind { group_version: "batch/v1", plural: "jobs", kind: "Job", namespaced: true, short_names: &[], categories: &["all"], status_subresource: true },
    BuiltinKind { group_version: "certificates.k8s.io/v1", plural: "certificatesigningrequests", kind: "CertificateSigningRequest", namespaced: false, short_names: &["csr"], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "networking.k8s.io/v1", plural: "ingressclasses", kind: "IngressClass", namespaced: false, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "networking.k8s.io/v1", plural: "ingresses", kind: "Ingress", namespaced: true, short_names: &["ing"], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "networking.k8s.io/v1", plural: "ipaddresses", kind: "IPAddress", namespaced: false, short_names: &["ip"], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "networking.k8s.io/v1", plural: "networkpolicies", kind: "NetworkPolicy", namespaced: true, short_names: &["netpol"], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "networking.k8s.io/v1", plural: "servicecidrs", kind: "ServiceCIDR", namespaced: false, short_names: &[], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "policy/v1", plural: "poddisruptionbudgets", kind: "PodDisruptionBudget", namespaced: true, short_names: &["pdb"], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "rbac.authorization.k8s.io/v1", plural: "clusterrolebindings", kind: "ClusterRoleBinding", namespaced: false, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "rbac.authorization.k8s.io/v1", plural: "clusterroles", kind: "ClusterRole", namespaced: false, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "rbac.authorization.k8s.io/v1", plural: "rolebindings", kind: "RoleBinding", namespaced: true, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "rbac.authorization.k8s.io/v1", plural: "roles", kind: "Role", namespaced: true, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "storage.k8s.io/v1", plural: "csidrivers", kind: "CSIDriver", namespaced: false, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "storage.k8s.io/v1", plural: "csinodes", kind: "CSINode", namespaced: false, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "storage.k8s.io/v1", plural: "csistoragecapacities", kind: "CSIStorageCapacity", namespaced: true, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "storage.k8s.io/v1", plural: "storageclasses", kind: "StorageClass", namespaced: false, short_names: &["sc"], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "storage.k8s.io/v1", plural: "volumeattachments", kind: "VolumeAttachment", namespaced: false, short_names: &[], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "storage.k8s.io/v1", plural: "volumeattributesclasses", kind: "VolumeAttributesClass", namespaced: false, short_names: &["vac"], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "admissionregistration.k8s.io/v1", plural: "mutatingadmissionpolicies", kind: "MutatingAdmissionPolicy", namespaced: false, short_names: &[], categories: &["api-extensions"], status_subresource: false },
    BuiltinKind { group_version: "admissionregistration.k8s.io/v1", plural: "mutatingadmissionpolicybindings", kind: "MutatingAdmissionPolicyBinding", namespaced: false, short_names: &[], categories: &["api-extensions"], status_subresource: false },
    BuiltinKind { group_version: "admissionregistration.k8s.io/v1", plural: "mutatingwebhookconfigurations", kind: "MutatingWebhookConfiguration", namespaced: false, short_names: &[], categories: &["api-extensions"], status_subresource: false },
    BuiltinKind { group_version: "admissionregistration.k8s.io/v1", plural: "validatingadmissionpolicies", kind: "ValidatingAdmissionPolicy", namespaced: false, short_names: &[], categories: &["api-extensions"], status_subresource: true },
    BuiltinKind { group_version: "admissionregistration.k8s.io/v1", plural: "validatingadmissionpolicybindings", kind: "ValidatingAdmissionPolicyBinding", namespaced: false, short_names: &[], categories: &["api-extensions"], status_subresource: false },
    BuiltinKind { group_version: "admissionregistration.k8s.io/v1", plural: "validatingwebhookconfigurations", kind: "ValidatingWebhookConfiguration", namespaced: false, short_names: &[], categories: &["api-extensions"], status_subresource: false },
    BuiltinKind { group_version: "apiextensions.k8s.io/v1", plural: "customresourcedefinitions", kind: "CustomResourceDefinition", namespaced: false, short_names: &["crd", "crds"], categories: &["api-extensions"], status_subresource: true },
    BuiltinKind { group_version: "scheduling.k8s.io/v1", plural: "priorityclasses", kind: "PriorityClass", namespaced: false, short_names: &["pc"], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "coordination.k8s.io/v1", plural: "leases", kind: "Lease", namespaced: true, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "node.k8s.io/v1", plural: "runtimeclasses", kind: "RuntimeClass", namespaced: false, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "discovery.k8s.io/v1", plural: "endpointslices", kind: "EndpointSlice", namespaced: true, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "resource.k8s.io/v1", plural: "deviceclasses", kind: "DeviceClass", namespaced: false, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "resource.k8s.io/v1", plural: "resourceclaims", kind: "ResourceClaim", namespaced: true, short_names: &[], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "resource.k8s.io/v1", plural: "resourceclaimtemplates", kind: "ResourceClaimTemplate", namespaced: true, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "resource.k8s.io/v1", plural: "resourceslices", kind: "ResourceSlice", namespaced: false, short_names: &[], categories: &[], status_subresource: false },
    BuiltinKind { group_version: "flowcontrol.apiserver.k8s.io/v1", plural: "flowschemas", kind: "FlowSchema", namespaced: false, short_names: &[], categories: &[], status_subresource: true },
    BuiltinKind { group_version: "flowcontrol.apiserver.k8s.io/v1", plural: "prioritylevelconfigurations", kind: "PriorityLevelConfiguration", namespaced: false, short_names: &[], categories: &[], status_subresource: true },
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

/// Built-in resources of groups and versions kube-apiserver 1.36 serves
/// only when enabled (`--runtime-config`), by group and plural.
#[rustfmt::skip]
const NOT_SERVED_BY_DEFAULT: &[(&str, &str)] = &[
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"), ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
    ("certificates.k8s.io", "clustertrustbundles"), ("certificates.k8s.io", "podcertificaterequests"),
    ("coordination.k8s.io", "leasecandidates"), ("internal.apiserver.k8s.io", "storageversions"),
    ("resource.k8s.io", "devicetaintrules"), ("resource.k8s.io", "resourcepoolstatusrequests"),
    ("scheduling.k8s.io", "workloads"), ("scheduling.k8s.io", "podgroups"),
    ("storagemigration.k8s.io", "storageversionmigrations"),
];

/// Whether `plural` in `group` is a kind kube-apiserver builds in (in any
/// version it serves), not a custom resource.
pub fn is_builtin(group: &str, plural: &str) -> bool {
    BUILTINS.iter().any(|b| b.plural == plural && b.group() == group)
        || (group.is_empty() && plural == "componentstatuses")
        || NOT_SERVED_BY_DEFAULT.contains(&(group, plural))
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
    /// What its field selectors may name, and where each reads its value.
    pub fields: FieldLabels,
    /// Whether the apiserver serves it from its watch cache: every resource
    /// but events (`DefaultWatchCacheSizes` gives `events` and
    /// `events.k8s.io/events` none), which it lists and watches from etcd —
    /// `resourceVersion=0` lists paged, continue tokens of etcd's form, watches
    /// without periodic bookmarks.
    pub watch_cached: bool,
    /// What the apiserver writes after `metadata` in the kind's empty object
    /// (what bookmarks carry), e.g. `,"spec":{"containers":null},"status":{}`;
    /// `None` for a kind it does not build in (a custom resource's bookmark
    /// is unstructured: its members in key order).
    pub zero_suffix: Option<&'static str>,
}

impl Resource {
    /// A resource, with the built-in facts when it is a built-in kind.
    pub fn new(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> Resource {
        Resource {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            kind: kind.into(),
            namespaced,
            fields: field_labels::of(group, version, plural, namespaced, is_builtin(group, plural)),
            watch_cached: !(plural == "events" && matches!(group, "" | "events.k8s.io")),
            zero_suffix: empty_object_suffix(group, version, plural),
        }
    }

    /// Whether kache knows its form: a custom resource, or a built-in kind in
    /// a version kube-apiserver 1.36 serves by default (one with a zero object).
    pub fn is_known(&self) -> bool {
        self.zero_suffix.is_some() || !is_builtin(&self.group, &self.plural)
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

    /// The paths of the object whose values its field labels read, in the
    /// order a store keeps them ([`FieldLabels::paths`]).
    pub fn field_paths(&self) -> Vec<&'static str> {
        self.fields.paths()
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
        assert!(matches!(pods.fields.check("spec.nodeName"), field_labels::Check::Label(_)));
        assert_eq!(pods.fields.check("metadata.namespace"), field_labels::Check::Namespace);
        assert!(matches!(pods.fields.check("spec.unknownField"), field_labels::Check::Refused(_)));
        assert_eq!(pods.zero_suffix, Some(r#","spec":{"containers":null},"status":{}"#));
        assert_eq!(
            (pods.key("ns", "p"), pods.prefix(Some("ns")), pods.type_prefix()),
            ("ns/p".into(), "ns/".into(), r#"{"kind":"Pod","apiVersion":"v1","#.into())
        );
        let nodes = Resource::new("", "v1", "nodes", "Node", false);
        assert_eq!((nodes.key("", "n"), nodes.prefix(Some("ns"))), ("n".into(), String::new()));
        let widgets = Resource::new("example.com", "v1", "widgets", "Widget", true);
        assert_eq!((widgets.fields.labels.len(), widgets.fields.open, widgets.zero_suffix), (0, true, None));
        let events = Resource::new("", "v1", "events", "Event", true);
        assert!(events.field_paths().contains(&"source.component") && events.field_paths().contains(&"reportingComponent"));
        assert_eq!(
            (widgets.qualified(), widgets.api_version(), widgets.collection_path()),
            ("widgets.example.com".into(), "example.com/v1".into(), "/apis/example.com/v1/widgets".into())
        );
    }
}

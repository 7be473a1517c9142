//! Field labels: the fields a resource's field selectors may name, where
//! each reads its value in the object as served, and the apiserver's words
//! for any other — kube-apiserver 1.36's per-kind conversion functions
//! (`AddFieldLabelConversionFunc`, `pkg/apis/*/*/conversion.go`, one per
//! served group and version) and selectable field sets (`GetAttrs` /
//! `ToSelectableFields`, `pkg/registry/*/*/strategy.go`).
//!
//! Invariants: every built-in group, version and resource without a row in
//! [`CONVERTED`] takes the apiserver's default conversion
//! (`DefaultMetaV1FieldSelectorConversion`: `metadata.name` and
//! `metadata.namespace`, the latter always empty on a cluster-scoped kind);
//! a custom resource accepts `metadata.name`, `metadata.namespace` when
//! namespaced, and the `selectableFields` of its CRD, which kache does not
//! read ([`Check::Unknown`]); a label's value is the text of the first of
//! its paths that is present and not empty, else its zero value (`false`,
//! `0` or empty, as `strconv` formats the Go zero value).
//!
//! `tests/reference/apiserver-1.36/field-labels/` holds the apiserver's answer to every
//! label of every built-in kind; the differential test replays them
//! against kache and the simulator, which both read this table.

use crate::gostr;

/// One label a kind's field selectors accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label {
    /// The label as a selector names it, e.g. `spec.nodeName`.
    pub name: &'static str,
    /// Where the value is read, first present and non-empty first (e.g. an
    /// Event's `source`: `source.component`, else `reportingComponent`);
    /// none: the apiserver accepts the label but never sets it (`""`).
    pub paths: &'static [&'static str],
    /// The value when no path has one: the zero value as the apiserver
    /// formats it (`"false"`, `"0"`, or empty).
    pub zero: &'static str,
}

/// How the apiserver words its 400 for a label the kind does not accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `field label not supported: LABEL` (most conversion functions, custom resources).
    NotSupported,
    /// `"LABEL" is not a known field selector: only "metadata.name", "metadata.namespace"` (the default conversion).
    NotKnown,
    /// `field label "LABEL" not supported for KIND` (batch/v1 Jobs).
    NotSupportedFor(&'static str),
    /// `field label not supported for GVK: LABEL`, GVK as Go prints a `GroupVersionKind` (ResourceSlices).
    NotSupportedForGvk(&'static str),
}

impl Refusal {
    /// The message for `label`.
    pub fn message(self, label: &str) -> String {
        match self {
            Refusal::NotSupported => format!("field label not supported: {label}"),
            Refusal::NotKnown => {
                format!("{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"", gostr::quote(label))
            }
            Refusal::NotSupportedFor(kind) => format!("field label {} not supported for {kind}", gostr::quote(label)),
            Refusal::NotSupportedForGvk(gvk) => format!("field label not supported for {gvk}: {label}"),
        }
    }
}

/// A resource's field labels beyond `metadata.name`, which every kind accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldLabels {
    /// Whether `metadata.namespace` is accepted (on a cluster-scoped kind it is always empty).
    pub namespace: bool,
    /// The kind's own labels.
    pub labels: &'static [Label],
    /// The words for any other label.
    pub refusal: Refusal,
    /// Whether labels the table does not know may be accepted upstream (a
    /// custom resource's `selectableFields`): only the apiserver can say.
    pub open: bool,
}

/// What a field selector's label is to a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// `metadata.name`.
    Name,
    /// `metadata.namespace` (empty for a cluster-scoped object).
    Namespace,
    /// One of the kind's own labels.
    Label(&'static Label),
    /// A label only the apiserver knows whether it accepts (a custom resource's).
    Unknown,
    /// Refused, with this message.
    Refused(String),
}

impl FieldLabels {
    /// What `label` is to this resource.
    pub fn check(&self, label: &str) -> Check {
        match label {
            "metadata.name" => Check::Name,
            "metadata.namespace" if self.namespace => Check::Namespace,
            _ => match self.labels.iter().find(|l| l.name == label) {
                Some(l) => Check::Label(l),
                None if self.open && label != "metadata.namespace" => Check::Unknown,
                None => Check::Refused(self.refusal.message(label)),
            },
        }
    }

    /// The distinct paths the labels read, in the order of first use: what
    /// a store parses from each object (see [`FieldLabels::path_index`]).
    pub fn paths(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for p in self.labels.iter().flat_map(|l| l.paths) {
            if !out.contains(p) {
                out.push(p);
            }
        }
        out
    }

    /// Where in [`FieldLabels::paths`] `label` reads, in its order.
    pub fn indexes(&self, label: &Label) -> Vec<usize> {
        let paths = self.paths();
        label.paths.iter().filter_map(|p| paths.iter().position(|q| q == p)).collect()
    }
}

impl Label {
    /// Its value, given the text at each of its paths in order (empty when absent).
    pub fn value<'a>(&self, mut read: impl Iterator<Item = &'a str>) -> &'a str {
        read.find(|v| !v.is_empty()).unwrap_or(self.zero)
    }
}

const fn text(name: &'static str, paths: &'static [&'static str]) -> Label {
    Label { name, paths, zero: "" }
}

const fn number(name: &'static str, paths: &'static [&'static str]) -> Label {
    Label { name, paths, zero: "0" }
}

const fn boolean(name: &'static str, paths: &'static [&'static str]) -> Label {
    Label { name, paths, zero: "false" }
}

/// `pkg/apis/core/v1/conversion.go` and `pkg/registry/core/pod/strategy.go` (`PodToSelectableFields`).
const POD: &[Label] = &[
    text("spec.nodeName", &["spec.nodeName"]),
    // Older v1 clients' name for it, renamed by the conversion.
    text("spec.host", &["spec.nodeName"]),
    text("spec.restartPolicy", &["spec.restartPolicy"]),
    text("spec.schedulerName", &["spec.schedulerName"]),
    text("spec.serviceAccountName", &["spec.serviceAccountName"]),
    // `strconv.FormatBool` of the (always present) security context's.
    boolean("spec.hostNetwork", &["spec.hostNetwork"]),
    text("status.phase", &["status.phase"]),
    // The first of `status.podIPs`, which the served `status.podIP` always is.
    text("status.podIP", &["status.podIP"]),
    // Accepted by the conversion, absent from the selectable set: always empty.
    text("status.podIPs", &[]),
    text("status.nominatedNodeName", &["status.nominatedNodeName"]),
];

/// `pkg/registry/core/event/strategy.go` (`ToSelectableFields`): `source` is
/// the source's component, else the reporting controller (`reportingComponent` in v1).
const EVENT: &[Label] = &[
    text("involvedObject.kind", &["involvedObject.kind"]),
    text("involvedObject.namespace", &["involvedObject.namespace"]),
    text("involvedObject.name", &["involvedObject.name"]),
    text("involvedObject.uid", &["involvedObject.uid"]),
    text("involvedObject.apiVersion", &["involvedObject.apiVersion"]),
    text("involvedObject.resourceVersion", &["involvedObject.resourceVersion"]),
    text("involvedObject.fieldPath", &["involvedObject.fieldPath"]),
    text("reason", &["reason"]),
    text("reportingComponent", &["reportingComponent"]),
    text("source", &["source.component", "reportingComponent"]),
    text("type", &["type"]),
];

/// `pkg/apis/events/v1/conversion.go`: events.k8s.io's names mapped onto the
/// core Event's selectable set (`regarding` is `involvedObject`), read from
/// the events.k8s.io/v1 object.
const EVENTS_K8S_IO: &[Label] = &[
    text("reason", &["reason"]),
    text("regarding.kind", &["regarding.kind"]),
    text("regarding.namespace", &["regarding.namespace"]),
    text("regarding.name", &["regarding.name"]),
    text("regarding.uid", &["regarding.uid"]),
    text("regarding.apiVersion", &["regarding.apiVersion"]),
    text("regarding.resourceVersion", &["regarding.resourceVersion"]),
    text("regarding.fieldPath", &["regarding.fieldPath"]),
    text("reportingController", &["reportingController"]),
    text("type", &["type"]),
];

const RESOURCE_SLICE: &[Label] = &[text("spec.nodeName", &["spec.nodeName"]), text("spec.driver", &["spec.driver"])];

const SIGNER: &[Label] = &[text("spec.signerName", &["spec.signerName"])];

/// A row: group, versions, plural, whether `metadata.namespace` is accepted, labels, refusal.
type Row = (&'static str, &'static [&'static str], &'static str, bool, &'static [Label], Refusal);

/// The resources with a conversion function of their own, by served group
/// and version. Every other built-in takes the default conversion.
#[rustfmt::skip]
pub const CONVERTED: &[Row] = &[
    ("", &["v1"], "pods", true, POD, Refusal::NotSupported),
    ("", &["v1"], "nodes", false, &[boolean("spec.unschedulable", &["spec.unschedulable"])], Refusal::NotSupported),
    ("", &["v1"], "replicationcontrollers", true, &[number("status.replicas", &["status.replicas"])], Refusal::NotSupported),
    ("", &["v1"], "events", true, EVENT, Refusal::NotSupported),
    ("", &["v1"], "namespaces", false, &[text("status.phase", &["status.phase"])], Refusal::NotSupported),
    ("", &["v1"], "secrets", true, &[text("type", &["type"])], Refusal::NotSupported),
    ("", &["v1"], "services", true, &[text("spec.clusterIP", &["spec.clusterIP"]), text("spec.type", &["spec.type"])], Refusal::NotSupported),
    // The label says `successful`; the value is `status.succeeded` (`pkg/registry/batch/job/strategy.go`).
    ("batch", &["v1"], "jobs", true, &[number("status.successful", &["status.succeeded"])], Refusal::NotSupportedFor("Job")),
    ("certificates.k8s.io", &["v1", "v1beta1"], "certificatesigningrequests", false, SIGNER, Refusal::NotSupported),
    ("certificates.k8s.io", &["v1beta1", "v1alpha1"], "clustertrustbundles", false, SIGNER, Refusal::NotSupported),
    // Namespaced, yet its conversion does not accept `metadata.namespace`.
    ("certificates.k8s.io", &["v1beta1", "v1alpha1"], "podcertificaterequests", false,
        &[text("spec.signerName", &["spec.signerName"]), text("spec.podName", &["spec.podName"]), text("spec.nodeName", &["spec.nodeName"])],
        Refusal::NotSupported),
    ("events.k8s.io", &["v1"], "events", true, EVENTS_K8S_IO, Refusal::NotSupported),
    ("resource.k8s.io", &["v1"], "resourceslices", false, RESOURCE_SLICE, Refusal::NotSupportedForGvk("resource.k8s.io/v1, Kind=ResourceSlice")),
    ("resource.k8s.io", &["v1beta2"], "resourceslices", false, RESOURCE_SLICE, Refusal::NotSupportedForGvk("resource.k8s.io/v1beta2, Kind=ResourceSlice")),
    ("resource.k8s.io", &["v1beta1"], "resourceslices", false, RESOURCE_SLICE, Refusal::NotSupportedForGvk("resource.k8s.io/v1beta1, Kind=ResourceSlice")),
];

/// The default conversion's labels (`DefaultMetaV1FieldSelectorConversion`).
pub const DEFAULT: FieldLabels = FieldLabels { namespace: true, labels: &[], refusal: Refusal::NotKnown, open: false };

/// The field labels of `plural` in `group`/`version`: a built-in's
/// (`builtin`), or a custom resource's (namespaced or not).
pub fn of(group: &str, version: &str, plural: &str, namespaced: bool, builtin: bool) -> FieldLabels {
    if !builtin {
        return FieldLabels { namespace: namespaced, labels: &[], refusal: Refusal::NotSupported, open: true };
    }
    CONVERTED
        .iter()
        .find(|(g, versions, p, ..)| *g == group && *p == plural && versions.contains(&version))
        .map_or(DEFAULT, |&(_, _, _, namespace, labels, refusal)| FieldLabels { namespace, labels, refusal, open: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_worded_as_each_conversion_words_them() {
        let pods = of("", "v1", "pods", true, true);
        assert_eq!(pods.check("spec.nope"), Check::Refused("field label not supported: spec.nope".into()));
        let jobs = of("batch", "v1", "jobs", true, true);
        assert_eq!(jobs.check("a\"b"), Check::Refused(r#"field label "a\"b" not supported for Job"#.into()));
        let deployments = of("apps", "v1", "deployments", true, true);
        assert_eq!(
            deployments.check("status.replicas"),
            Check::Refused(r#""status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace""#.into())
        );
        let slices = of("resource.k8s.io", "v1", "resourceslices", false, true);
        assert_eq!(
            slices.check("metadata.namespace"),
            Check::Refused("field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: metadata.namespace".into())
        );
    }

    #[test]
    fn namespaces_are_accepted_by_the_default_and_by_namespaced_custom_resources_only() {
        assert_eq!(of("rbac.authorization.k8s.io", "v1", "clusterroles", false, true).check("metadata.namespace"), Check::Namespace);
        assert!(matches!(of("", "v1", "nodes", false, true).check("metadata.namespace"), Check::Refused(_)));
        assert_eq!(of("example.com", "v1", "widgets", true, false).check("metadata.namespace"), Check::Namespace);
        let cluster_widgets = of("example.com", "v1", "gadgets", false, false);
        assert_eq!(cluster_widgets.check("metadata.namespace"), Check::Refused("field label not supported: metadata.namespace".into()));
        assert_eq!(cluster_widgets.check("spec.color"), Check::Unknown);
    }

    #[test]
    fn values_fall_back_to_later_paths_then_to_the_zero_value() {
        let events = of("", "v1", "events", true, true);
        let Check::Label(source) = events.check("source") else { panic!("source is an Event label") };
        let paths = events.paths();
        let read = |values: &[(&str, &'static str)]| -> Vec<&'static str> {
            events.indexes(source).iter().map(|&i| values.iter().find(|(p, _)| *p == paths[i]).map_or("", |(_, v)| *v)).collect()
        };
        let both = read(&[("source.component", "kubelet"), ("reportingComponent", "ctrl")]);
        assert_eq!(source.value(both.into_iter()), "kubelet");
        let reporting = read(&[("source.component", ""), ("reportingComponent", "ctrl")]);
        assert_eq!(source.value(reporting.into_iter()), "ctrl");
        let pods = of("", "v1", "pods", true, true);
        let Check::Label(host_network) = pods.check("spec.hostNetwork") else { panic!("a pod label") };
        assert_eq!(host_network.value(std::iter::once("")), "false");
        let Check::Label(ips) = pods.check("status.podIPs") else { panic!("a pod label") };
        assert!(pods.indexes(ips).is_empty());
        assert_eq!(ips.value(std::iter::empty()), "");
        // `spec.host` reads what `spec.nodeName` reads: one path, parsed once.
        let Check::Label(host) = pods.check("spec.host") else { panic!("a pod label") };
        assert_eq!(pods.paths()[pods.indexes(host)[0]], "spec.nodeName");
        assert_eq!(pods.paths().iter().filter(|p| **p == "spec.nodeName").count(), 1);
    }
}

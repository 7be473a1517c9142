//! What the simulator generates at start-up ([`Workload`]): how many objects
//! of each kind, and no more — the objects, and the churn over them, are
//! `generate`'s, so the configuration names a workload without reaching the
//! generators. Invariant: [`Workload::objects`] is exactly how many objects
//! `generate::populate` creates (what the not-ready 503 counts toward).

/// What to generate at start-up.
#[derive(Debug, Clone, Copy, Default)]
pub struct Workload {
    /// Number of pods.
    pub pods: usize,
    /// Number of nodes the pods are spread over.
    pub nodes: usize,
    /// Number of namespaces the pods and configmaps are spread over.
    pub namespaces: usize,
    /// Number of configmaps.
    pub configmaps: usize,
    /// Bytes of data per configmap.
    pub configmap_size: usize,
    /// Number of RBAC cluster roles, and of role bindings.
    pub rbac: usize,
}

impl Workload {
    /// How many objects it creates.
    pub fn objects(&self) -> usize {
        self.namespaces + self.nodes + self.pods + self.configmaps + 2 * self.rbac
    }
}

//! Column definitions of the built-in printers of `apps` and `batch`.

/// `deployments`.
pub const DEPLOYMENTS: &str = columns![
    name_column!(),
    column!("Ready", "string", "", 0, r"Number of the pod with ready state"),
    column!(
        "Up-to-date",
        "string",
        "",
        0,
        r"Total number of non-terminating pods targeted by this deployment that have the desired template spec."
    ),
    column!(
        "Available",
        "string",
        "",
        0,
        r"Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment."
    ),
    age_column!(),
    column!("Containers", "string", "", 1, r"Names of each container in the template."),
    column!("Images", "string", "", 1, r"Images referenced by each container in the template."),
    column!(
        "Selector",
        "string",
        "",
        1,
        r"Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this ",
        r"deployment. It must match the pod template's labels."
    )
];

/// `replicasets`.
pub const REPLICASETS: &str = columns![
    name_column!(),
    column!(
        "Desired",
        "integer",
        "",
        0,
        r"Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. ",
        r"Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"
    ),
    column!(
        "Current",
        "integer",
        "",
        0,
        r"Replicas is the most recently observed number of non-terminating pods. More info: ",
        r"https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"
    ),
    column!("Ready", "integer", "", 0, r"The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."),
    age_column!(),
    column!("Containers", "string", "", 1, r"Names of each container in the template."),
    column!("Images", "string", "", 1, r"Images referenced by each container in the template."),
    column!(
        "Selector",
        "string",
        "",
        1,
        r"Selector is a label query over pods that should match the replica count. Label keys and values that must match in ",
        r"order to be controlled by this replica set. It must match the pod template's labels. More info: ",
        r"https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
    )
];

/// `daemonsets`.
pub const DAEMONSETS: &str = columns![
    name_column!(),
    column!(
        "Desired",
        "integer",
        "",
        0,
        r"The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). ",
        r"More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"
    ),
    column!(
        "Current",
        "integer",
        "",
        0,
        r"The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: ",
        r"https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"
    ),
    column!(
        "Ready",
        "integer",
        "",
        0,
        r"numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod ",
        r"running with a Ready Condition."
    ),
    column!("Up-to-date", "integer", "", 0, r"The total number of nodes that are running updated daemon pod"),
    column!(
        "Available",
        "integer",
        "",
        0,
        r"The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ",
        r"available (ready for at least spec.minReadySeconds)"
    ),
    column!(
        "Node Selector",
        "string",
        "",
        0,
        r"NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels ",
        r"for the pod to be scheduled on that node. More info: ",
        r"https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"
    ),
    age_column!(),
    column!("Containers", "string", "", 1, r"Names of each container in the template."),
    column!("Images", "string", "", 1, r"Images referenced by each container in the template."),
    column!(
        "Selector",
        "string",
        "",
        1,
        r"A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the ",
        r"pod template's labels. More info: ",
        r"https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
    )
];

/// `statefulsets`.
pub const STATEFULSETS: &str = columns![
    name_column!(),
    column!("Ready", "string", "", 0, r"Number of the pod with ready state"),
    age_column!(),
    column!("Containers", "string", "", 1, r"Names of each container in the template."),
    column!("Images", "string", "", 1, r"Images referenced by each container in the template.")
];

/// `controllerrevisions`.
pub const CONTROLLERREVISIONS: &str = columns![
    name_column!(),
    column!("Controller", "string", "", 0, r"Controller of the object"),
    column!("Revision", "string", "", 0, r"Revision indicates the revision of the state represented by Data."),
    age_column!()
];

/// `jobs`.
pub const JOBS: &str = columns![
    name_column!(),
    column!("Status", "string", "", 0, r"Status of the job."),
    column!(
        "Completions",
        "string",
        "",
        0,
        r"The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may ",
        r"decrease in reaction to scale down of elastic indexed jobs."
    ),
    column!("Duration", "string", "", 0, r"Time required to complete the job."),
    age_column!(),
    column!("Containers", "string", "", 1, r"Names of each container in the template."),
    column!("Images", "string", "", 1, r"Images referenced by each container in the template."),
    column!(
        "Selector",
        "string",
        "",
        1,
        r"A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: ",
        r"https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
    )
];

/// `cronjobs`.
pub const CRONJOBS: &str = columns![
    name_column!(),
    column!("Schedule", "string", "", 0, r"The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    column!(
        "Timezone",
        "string",
        "",
        0,
        r"The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not ",
        r"specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone ",
        r"names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob ",
        r"validation and the controller manager during execution. If no system-wide time zone database can be found a bundled ",
        r"version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or ",
        r"due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event ",
        r"with the reason UnknownTimeZone. More information can be found in ",
        r"https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones"
    ),
    column!(
        "Suspend",
        "boolean",
        "",
        0,
        r"This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  ",
        r"Defaults to false."
    ),
    column!("Active", "integer", "", 0, r"A list of pointers to currently running jobs."),
    column!("Last Schedule", "string", "", 0, r"Information when was the last time the job was successfully scheduled."),
    age_column!(),
    column!("Containers", "string", "", 1, r"Names of each container in the template."),
    column!("Images", "string", "", 1, r"Images referenced by each container in the template."),
    column!(
        "Selector",
        "string",
        "",
        1,
        r"A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: ",
        r"https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
    )
];

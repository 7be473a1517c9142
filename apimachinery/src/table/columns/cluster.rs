//! Column definitions of the built-in printers of the other groups: `coordination.k8s.io`,
//! `autoscaling`, `policy`, `rbac.authorization.k8s.io`, `admissionregistration.k8s.io`,
//! `apiregistration.k8s.io`, `flowcontrol.apiserver.k8s.io`, `scheduling.k8s.io`, `node.k8s.io`,
//! `certificates.k8s.io`, `resource.k8s.io`.

/// `leases`.
pub const LEASES: &str = columns![
    name_column!(),
    column!(
        "Holder",
        "string",
        "",
        0,
        r"holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the ",
        r"holder identity must be equal to the elected LeaseCandidate.metadata.name field."
    ),
    age_column!()
];

/// `horizontalpodautoscalers`.
pub const HORIZONTALPODAUTOSCALERS: &str = columns![
    name_column!(),
    column!(
        "Reference",
        "string",
        "",
        0,
        r"scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, ",
        r"as well as to actually change the replica count."
    ),
    column!(
        "Targets",
        "string",
        "",
        0,
        r"metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica ",
        r"count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the ",
        r"target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count ",
        r"is increased, and vice-versa.  See the individual metric source types for more information about how each type of ",
        r"metric must respond. If not set, the default metric will be set to 80% average CPU utilization."
    ),
    column!(
        "MinPods",
        "string",
        "",
        0,
        r"minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 ",
        r"pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or ",
        r"External metric is configured.  Scaling is active as long as at least one metric value is available."
    ),
    column!(
        "MaxPods",
        "string",
        "",
        0,
        r"maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less ",
        r"that minReplicas."
    ),
    column!(
        "Replicas",
        "string",
        "",
        0,
        r"currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler."
    ),
    age_column!()
];

/// `poddisruptionbudgets`.
pub const PODDISRUPTIONBUDGETS: &str = columns![
    name_column!(),
    column!("Min Available", "string", "", 0, r"The minimum number of pods that must be available."),
    column!("Max Unavailable", "string", "", 0, r"The maximum number of pods that may be unavailable."),
    column!("Allowed Disruptions", "integer", "", 0, r"Calculated number of pods that may be disrupted at this time."),
    age_column!()
];

/// `rolebindings`.
pub const ROLEBINDINGS: &str = columns![
    name_column!(),
    column!(
        "Role",
        "string",
        "",
        0,
        r"RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot ",
        r"be resolved, the Authorizer must return an error."
    ),
    age_column!(),
    column!("Users", "string", "", 1, r"Users in the roleBinding"),
    column!("Groups", "string", "", 1, r"Groups in the roleBinding"),
    column!("ServiceAccounts", "string", "", 1, r"ServiceAccounts in the roleBinding")
];

/// `clusterrolebindings`.
pub const CLUSTERROLEBINDINGS: &str = columns![
    name_column!(),
    column!(
        "Role",
        "string",
        "",
        0,
        r"RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer ",
        r"must return an error."
    ),
    age_column!(),
    column!("Users", "string", "", 1, r"Users in the clusterRoleBinding"),
    column!("Groups", "string", "", 1, r"Groups in the clusterRoleBinding"),
    column!("ServiceAccounts", "string", "", 1, r"ServiceAccounts in the clusterRoleBinding")
];

/// `mutatingwebhookconfigurations`, `validatingwebhookconfigurations`.
pub const WEBHOOK_CONFIGURATIONS: &str = columns![
    name_column!(),
    column!("Webhooks", "integer", "", 0, r"Webhooks indicates the number of webhooks registered in this configuration"),
    age_column!()
];

/// `validatingadmissionpolicies`.
pub const VALIDATINGADMISSIONPOLICIES: &str = columns![
    name_column!(),
    column!("Validations", "integer", "", 0, r"Validations indicates the number of validation rules defined in this configuration"),
    column!("ParamKind", "string", "", 0, r"ParamKind specifies the kind of resources used to parameterize this policy"),
    age_column!()
];

/// `mutatingadmissionpolicies`.
pub const MUTATINGADMISSIONPOLICIES: &str = columns![
    name_column!(),
    column!("Mutations", "integer", "", 0, r"Mutation indicates the number of mutations rules defined in this configuration"),
    column!("ParamKind", "string", "", 0, r"ParamKind specifies the kind of resources used to parameterize this policy"),
    age_column!()
];

/// `mutatingadmissionpolicybindings`, `validatingadmissionpolicybindings`.
pub const ADMISSION_POLICY_BINDINGS: &str = columns![
    name_column!(),
    column!("PolicyName", "string", "", 0, r"PolicyName indicates the policy definition which the policy binding binded to"),
    column!("ParamRef", "string", "", 0, r"ParamRef indicates the param resource which sets the configuration param"),
    age_column!()
];

/// `apiservices`.
pub const APISERVICES: &str = columns![
    name_column!(),
    column!("Service", "string", "", 0, r"The reference to the service that hosts this API endpoint."),
    column!("Available", "string", "", 0, r"Whether this service is available."),
    age_column!()
];

/// `flowschemas`.
pub const FLOWSCHEMAS: &str = columns![
    name_column!(),
    column!("PriorityLevel", "string", "", 0, r"`name` is the name of the priority level configuration being referenced Required."),
    column!(
        "MatchingPrecedence",
        "string",
        "",
        0,
        r"`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is ",
        r"among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each ",
        r"MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to ",
        r"1000 as default."
    ),
    column!(
        "DistinguisherMethod",
        "string",
        "",
        0,
        r"`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` ",
        r"specifies that the distinguisher is disabled and thus will always be the empty string."
    ),
    age_column!(),
    column!("MissingPL", "string", "", 0, r"references a broken or non-existent PriorityLevelConfiguration")
];

/// `prioritylevelconfigurations`.
pub const PRIORITYLEVELCONFIGURATIONS: &str = columns![
    name_column!(),
    column!(
        "Type",
        "string",
        "",
        0,
        r#"`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` "#,
        r"means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract ",
        r#"from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this "#,
        r"priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to ",
        r"this priority level. Required."
    ),
    column!(
        "NominalConcurrencyShares",
        "string",
        "",
        0,
        r"`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this ",
        r"level. This is the number of execution seats available at this priority level. This is used both for requests ",
        r"dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from ",
        r"this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to ",
        r"their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] ",
        r"NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf ",
        r"not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a ",
        r#"\"jail\" for this priority level that is used to hold some request(s)"#
    ),
    column!(
        "Queues",
        "string",
        "",
        0,
        r"`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value ",
        r"must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of ",
        r"associated flow schemas irrelevant.  This field has a default value of 64."
    ),
    column!(
        "HandSize",
        "string",
        "",
        0,
        r"`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a ",
        r"request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to ",
        r"shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest ",
        r"queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few ",
        r"heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on ",
        r"setting this field.  This field has a default value of 8."
    ),
    column!(
        "QueueLengthLimit",
        "string",
        "",
        0,
        r"`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at ",
        r"a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50."
    ),
    age_column!()
];

/// `priorityclasses`.
pub const PRIORITYCLASSES: &str = columns![
    name_column!(),
    column!(
        "Value",
        "integer",
        "",
        0,
        r"value represents the integer value of this priority class. This is the actual priority that pods receive when they ",
        r"have the name of this class in their pod spec."
    ),
    column!(
        "Global-Default",
        "boolean",
        "",
        0,
        r"globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not ",
        r"have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one ",
        r"PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default ",
        r"PriorityClasses will be used as the default priority."
    ),
    age_column!(),
    column!(
        "PreemptionPolicy",
        "string",
        "",
        0,
        r"preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults ",
        r"to PreemptLowerPriority if unset."
    )
];

/// `runtimeclasses`.
pub const RUNTIMECLASSES: &str = columns![name_column!(), column!("Handler", "string", "", 0, ""), age_column!()];

/// `certificatesigningrequests`.
pub const CERTIFICATESIGNINGREQUESTS: &str = columns![
    name_column!(),
    age_column!(),
    column!(
        "SignerName",
        "string",
        "",
        0,
        r"Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be ",
        r"defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    ",
        r#"\"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    "#,
        r#"\"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of "#,
        r"trust for signers happens out of band. You can select on this field using `spec.signerName`."
    ),
    column!("Requestor", "string", "", 0, r"Base64-encoded PKCS#10 CSR data"),
    column!(
        "RequestedDuration",
        "string",
        "",
        0,
        r"expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a ",
        r"certificate with a different validity duration so a client must check the delta between the notBefore and and ",
        r"notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of ",
        r"the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the ",
        r"maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller ",
        r"manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of ",
        r"the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter ",
        r"than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe ",
        r"minimum valid value for expirationSeconds is 600, i.e. 10 minutes."
    ),
    column!("Condition", "string", "", 0, r"Conditions applied to the request, such as approval or denial.")
];

/// `resourceclaims`.
pub const RESOURCECLAIMS: &str = columns![
    name_column!(),
    column!("State", "string", "", 0, r"A summary of the current state (allocated, pending, reserved, etc.)."),
    age_column!()
];

/// `resourceslices`.
pub const RESOURCESLICES: &str = columns![
    name_column!(),
    column!(
        "Node",
        "string",
        "",
        0,
        r"NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ",
        r"ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to ",
        r"ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type as ",
        r"some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and ",
        r"PerDeviceNodeSelection must be set. This field is immutable."
    ),
    column!(
        "Driver",
        "string",
        "",
        0,
        r"Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ",
        r"ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS domain owned ",
        r"by the vendor of the driver. It should use only lower case characters. This field is immutable."
    ),
    column!(
        "Pool",
        "string",
        "",
        0,
        r"Name is used to identify the pool. For node-local devices, this is often the node name, but this is not ",
        r"required.\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated by ",
        r"slashes. This field is immutable."
    ),
    age_column!()
];

//! Column definitions of the built-in printers of the core group (`""`), and of `events.k8s.io`
//! events (written as core events).

/// `pods`.
pub const PODS: &str = columns![
    name_column!(),
    column!("Ready", "string", "", 0, r"The aggregate readiness state of this pod for accepting traffic."),
    column!("Status", "string", "", 0, r"The aggregate status of the containers in this pod."),
    column!(
        "Restarts",
        "string",
        "",
        0,
        r"The number of times the containers in this pod have been restarted and when the last container in this pod has ",
        r"restarted."
    ),
    age_column!(),
    column!(
        "IP",
        "string",
        "",
        1,
        r"podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."
    ),
    column!(
        "Node",
        "string",
        "",
        1,
        r"NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the ",
        r"scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the ",
        r"lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific ",
        r"node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename"
    ),
    column!(
        "Nominated Node",
        "string",
        "",
        1,
        r"nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as ",
        r"preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be ",
        r"scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. ",
        r"Scheduler may also decide to give the resources on this node to a higher priority pod that is created after ",
        r"preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled."
    ),
    column!(
        "Readiness Gates",
        "string",
        "",
        1,
        r"If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ",
        r#"ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: "#,
        r"https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates"
    )
];

/// `configmaps`.
pub const CONFIGMAPS: &str = columns![
    name_column!(),
    column!(
        "Data",
        "string",
        "",
        0,
        r"Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with ",
        r"non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the ",
        r"BinaryData field, this is enforced during validation process."
    ),
    age_column!()
];

/// `secrets`.
pub const SECRETS: &str = columns![
    name_column!(),
    column!(
        "Type",
        "string",
        "",
        0,
        r"Used to facilitate programmatic handling of secret data. More info: ",
        r"https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"
    ),
    column!(
        "Data",
        "string",
        "",
        0,
        r"Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form ",
        r"of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. ",
        r"Described in https://tools.ietf.org/html/rfc4648#section-4"
    ),
    age_column!()
];

/// `namespaces`.
pub const NAMESPACES: &str = columns![name_column!(), column!("Status", "string", "", 0, r"The status of the namespace"), age_column!()];

/// `serviceaccounts`, `deviceclasses`, `resourceclaimtemplates` (Name, Age).
pub const SERVICEACCOUNTS: &str = columns![name_column!(), age_column!()];

/// `nodes`.
pub const NODES: &str = columns![
    name_column!(),
    column!("Status", "string", "", 0, r"The status of the node"),
    column!("Roles", "string", "", 0, r"The roles of the node"),
    age_column!(),
    column!("Version", "string", "", 0, r"Kubelet Version reported by the node."),
    column!(
        "Internal-IP",
        "string",
        "",
        1,
        r"List of addresses reachable to the node. Queried from cloud provider, if available. More info: ",
        r"https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the ",
        r"merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a ",
        r"full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change ",
        r"during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that ",
        r"inherit a Node's address in its own status or consumers of the downward API (status.hostIP)."
    ),
    column!(
        "External-IP",
        "string",
        "",
        1,
        r"List of addresses reachable to the node. Queried from cloud provider, if available. More info: ",
        r"https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the ",
        r"merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a ",
        r"full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change ",
        r"during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that ",
        r"inherit a Node's address in its own status or consumers of the downward API (status.hostIP)."
    ),
    column!("OS-Image", "string", "", 1, r"OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
    column!("Kernel-Version", "string", "", 1, r"Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
    column!(
        "Container-Runtime",
        "string",
        "",
        1,
        r"ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."
    )
];

/// `services`.
pub const SERVICES: &str = columns![
    name_column!(),
    column!(
        "Type",
        "string",
        "",
        0,
        r"type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, ",
        r#"NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. "#,
        r"Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object ",
        r#"or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a "#,
        r#"set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which "#,
        r#"routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external "#,
        r"load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. ",
        r#"\"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to "#,
        r"ExternalName services. More info: ",
        r"https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types"
    ),
    column!(
        "Cluster-IP",
        "string",
        "",
        0,
        r"clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is ",
        r"in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of ",
        r"the service will fail. This field may not be changed through updates unless the type field is also being changed to ",
        r"ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which ",
        r#"case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or "#,
        r#"a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when "#,
        r"direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, ",
        r"and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This ",
        r"field will be wiped when updating a Service to type ExternalName. More info: ",
        r"https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"
    ),
    column!(
        "External-IP",
        "string",
        "",
        0,
        r"externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  ",
        r"These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with ",
        r"this IP.  A common example is external load-balancers that are not part of the Kubernetes system."
    ),
    column!(
        "Port(s)",
        "string",
        "",
        0,
        r"The list of ports that are exposed by this service. More info: ",
        r"https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"
    ),
    age_column!(),
    column!(
        "Selector",
        "string",
        "",
        1,
        r"Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service ",
        r"is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to ",
        r"types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: ",
        r"https://kubernetes.io/docs/concepts/services-networking/service/"
    )
];

/// `events`.
pub const EVENTS: &str = columns![
    column!("Last Seen", "string", "", 0, r"The time at which the most recent occurrence of this event was recorded."),
    column!("Type", "string", "", 0, r"Type of this event (Normal, Warning), new types could be added in the future"),
    column!(
        "Reason",
        "string",
        "",
        0,
        r"This should be a short, machine understandable string that gives the reason for the transition into the object's ",
        r"current status."
    ),
    column!("Object", "string", "", 0, r"The object that this event is about."),
    column!(
        "Subobject",
        "string",
        "",
        1,
        r"If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field ",
        r"access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container ",
        r#"within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the "#,
        r#"container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index "#,
        r"2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object."
    ),
    column!("Source", "string", "", 1, r"The component reporting this event. Should be a short machine understandable string."),
    column!("Message", "string", "", 0, r"A human-readable description of the status of this operation."),
    column!("First Seen", "string", "", 1, r"The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
    column!("Count", "string", "", 1, r"The number of times this event has occurred."),
    column!(
        "Name",
        "string",
        "name",
        1,
        r"Name must be unique within a namespace. Is required when creating resources, although some resources may allow a ",
        r"client to request the generation of an appropriate name automatically. Name is primarily intended for creation ",
        r"idempotence and configuration definition. Cannot be updated. More info: ",
        r"https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
    )
];

/// `endpoints`.
pub const ENDPOINTS: &str = columns![
    name_column!(),
    column!(
        "Endpoints",
        "string",
        "",
        0,
        r"The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they ",
        r"share. A single address with multiple ports, some of which are ready and some of which are not (because they come ",
        r"from different containers) will result in the address being displayed in different subsets for the different ports. ",
        r"No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that ",
        r"comprise a service."
    ),
    age_column!()
];

/// `persistentvolumeclaims`.
pub const PERSISTENTVOLUMECLAIMS: &str = columns![
    name_column!(),
    column!("Status", "string", "", 0, r"phase represents the current phase of PersistentVolumeClaim."),
    column!("Volume", "string", "", 0, r"volumeName is the binding reference to the PersistentVolume backing this claim."),
    column!("Capacity", "string", "", 0, r"capacity represents the actual resources of the underlying volume."),
    column!(
        "Access Modes",
        "string",
        "",
        0,
        r"accessModes contains the actual access modes the volume backing the PVC has. More info: ",
        r"https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1"
    ),
    column!("StorageClass", "string", "", 0, r"StorageClass of the pvc"),
    column!("VolumeAttributesClass", "string", "", 0, r"VolumeAttributesClass of the pvc"),
    age_column!(),
    column!(
        "VolumeMode",
        "string",
        "",
        1,
        r"volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in ",
        r"claim spec."
    )
];

/// `persistentvolumes`.
pub const PERSISTENTVOLUMES: &str = columns![
    name_column!(),
    column!(
        "Capacity",
        "string",
        "",
        0,
        r"capacity is the description of the persistent volume's resources and capacity. More info: ",
        r"https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"
    ),
    column!(
        "Access Modes",
        "string",
        "",
        0,
        r"accessModes contains all ways the volume can be mounted. More info: ",
        r"https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"
    ),
    column!(
        "Reclaim Policy",
        "string",
        "",
        0,
        r"persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options ",
        r"are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned ",
        r"PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this ",
        r"PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"
    ),
    column!(
        "Status",
        "string",
        "",
        0,
        r"phase indicates if a volume is available, bound to a claim, or released by a claim. More info: ",
        r"https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase"
    ),
    column!(
        "Claim",
        "string",
        "",
        0,
        r"claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be ",
        r"non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: ",
        r"https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"
    ),
    column!("StorageClass", "string", "", 0, r"StorageClass of the pv"),
    column!("VolumeAttributesClass", "string", "", 0, r"VolumeAttributesClass of the pv"),
    column!(
        "Reason",
        "string",
        "",
        0,
        r"reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in ",
        r"the CLI."
    ),
    age_column!(),
    column!(
        "VolumeMode",
        "string",
        "",
        1,
        r"volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. ",
        r"Value of Filesystem is implied when not included in spec."
    )
];

/// `podtemplates`.
pub const PODTEMPLATES: &str = columns![
    name_column!(),
    column!("Containers", "string", "", 0, r"Names of each container in the template."),
    column!("Images", "string", "", 0, r"Images referenced by each container in the template."),
    column!("Pod Labels", "string", "", 0, r"The labels for the pod template.")
];

/// `replicationcontrollers`.
pub const REPLICATIONCONTROLLERS: &str = columns![
    name_column!(),
    column!(
        "Desired",
        "integer",
        "",
        0,
        r"Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. ",
        r"Defaults to 1. More info: ",
        r"https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"
    ),
    column!(
        "Current",
        "integer",
        "",
        0,
        r"Replicas is the most recently observed number of replicas. More info: ",
        r"https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"
    ),
    column!("Ready", "integer", "", 0, r"The number of ready replicas for this replication controller."),
    age_column!(),
    column!("Containers", "string", "", 1, r"Names of each container in the template."),
    column!("Images", "string", "", 1, r"Images referenced by each container in the template."),
    column!(
        "Selector",
        "string",
        "",
        1,
        r"Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to ",
        r"the labels present on the Pod template. Label keys and values that must match in order to be controlled by this ",
        r"replication controller, if empty defaulted to labels on Pod template. More info: ",
        r"https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
    )
];

/// `resourcequotas`.
pub const RESOURCEQUOTAS: &str = columns![
    name_column!(),
    column!("Request", "string", "", 0, r"Request represents a minimum amount of cpu/memory that a container may consume."),
    column!(
        "Limit",
        "string",
        "",
        0,
        r"Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."
    ),
    age_column!()
];

/// `componentstatuses`.
pub const COMPONENTSTATUSES: &str = columns![
    name_column!(),
    column!("Status", "string", "", 0, r"Status of the component conditions"),
    column!("Message", "string", "", 0, r"Message of the component conditions"),
    column!("Error", "string", "", 0, r"Error of the component conditions")
];

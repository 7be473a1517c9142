//! Column definitions of the built-in printers of `storage.k8s.io`.

/// `csidrivers`.
pub const CSIDRIVERS: &str = columns![
    name_column!(),
    column!(
        "AttachRequired",
        "boolean",
        "",
        0,
        r"attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ",
        r"ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume ",
        r"interface which checks the volumeattachment status and waits until the volume is attached before proceeding to ",
        r"mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when ",
        r"the attach operation is complete. If the value is specified to false, the attach operation will be skipped. Otherwise ",
        r"the attach operation will be called.\n\nThis field is immutable."
    ),
    column!(
        "PodInfoOnMount",
        "boolean",
        "",
        0,
        r"podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) ",
        r"during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is ",
        r"false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod ",
        r"information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and ",
        r"validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if ",
        r#"podInfoOnMount is set to true. This list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": "#,
        r#"pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) "#,
        r#"\"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline volume\n                              "#,
        r#"  defined by a CSIVolumeSource, otherwise \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in "#,
        r#"Kubernetes 1.16. It is only required for drivers which support both the \"Persistent\" and \"Ephemeral\" "#,
        r"VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't ",
        r"support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines ",
        r"which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes ",
        r"\u003c 1.29 and now is mutable."
    ),
    column!(
        "StorageCapacity",
        "boolean",
        "",
        0,
        r"storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the ",
        r"driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to ",
        r"true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with ",
        r"late binding will pause until the driver deployment has published some suitable CSIStorageCapacity ",
        r"object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when ",
        r"storage capacity information has been published.\n\nThis field was immutable in Kubernetes \u003c= 1.22 and now is ",
        r"mutable."
    ),
    column!(
        "TokenRequests",
        "string",
        "",
        0,
        r"tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary ",
        r"authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver ",
        r#"should parse and validate the following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {\n  "#,
        r#"\"\u003caudience\u003e\": {\n    \"token\": \u003ctoken\u003e,\n    \"expirationTimestamp\": \u003cexpiration "#,
        r"timestamp in RFC3339\u003e,\n  },\n  ...\n}\n\nNote: Audience in each TokenRequest should be different and at most ",
        r"one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger ",
        r"NodePublishVolume periodically."
    ),
    column!(
        "RequiresRepublish",
        "boolean",
        "",
        0,
        r"requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any ",
        r"possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial ",
        r"NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New ",
        r"mount points will not be seen by a running container."
    ),
    column!(
        "Modes",
        "string",
        "",
        0,
        r"volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty ",
        r#"is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual "#,
        r#"PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec "#,
        r"with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this ",
        r"because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about ",
        r"implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support ",
        r"one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable."
    ),
    age_column!()
];

/// `csinodes`.
pub const CSINODES: &str = columns![
    name_column!(),
    column!("Drivers", "integer", "", 0, r"Drivers indicates the number of CSI drivers registered on the node"),
    age_column!()
];

/// `storageclasses`.
pub const STORAGECLASSES: &str = columns![
    name_column!(),
    column!("Provisioner", "string", "", 0, r"provisioner indicates the type of the provisioner."),
    column!(
        "ReclaimPolicy",
        "string",
        "",
        0,
        r"reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. ",
        r"Defaults to Delete."
    ),
    column!(
        "VolumeBindingMode",
        "string",
        "",
        0,
        r"volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, ",
        r"VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature."
    ),
    column!("AllowVolumeExpansion", "string", "", 0, r"allowVolumeExpansion shows whether the storage class allow volume expand."),
    age_column!()
];

/// `volumeattachments`.
pub const VOLUMEATTACHMENTS: &str = columns![
    name_column!(),
    column!(
        "Attacher",
        "string",
        "name",
        0,
        r"attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by ",
        r"GetPluginName()."
    ),
    column!("PV", "string", "", 0, r"persistentVolumeName represents the name of the persistent volume to attach."),
    column!("Node", "string", "", 0, r"nodeName represents the node that the volume should be attached to."),
    column!(
        "Attached",
        "boolean",
        "",
        0,
        r"attached indicates the volume is successfully attached. This field must only be set by the entity completing the ",
        r"attach operation, i.e. the external-attacher."
    ),
    age_column!()
];

/// `volumeattributesclasses`.
pub const VOLUMEATTRIBUTESCLASSES: &str =
    columns![name_column!(), column!("DriverName", "string", "", 0, r"Name of the CSI driver This field is immutable."), age_column!()];

#!/usr/bin/env python3
"""Captures persistentvolumes/, replicationcontrollers/ and controllerrevisions/
in the file set and `.meta` format of the other directories (README.md), from a
real kube-apiserver v1.36.2, in namespace `enc2` (PVs are cluster-scoped, named
`enc2-*`). Writes go through the API with the owning component's User-Agent,
statuses by PUT to `/status` after a GET, as for the first capture.

Objects: PVs `enc2-pv-ebs-orphan` (CSI, Failed with reason/message),
`enc2-pv-ebs-postgres` (CSI ebs.csi.aws.com from csi-provisioner: volumeHandle,
fsType, attributes, zone nodeAffinity, claimRef to PVC enc2/data-postgres-0,
volumeAttributesClassName, Bound), `enc2-pv-hostpath-logs` (hostPath, pre-bound
by kubectl, claimRef completed by the binder, Bound), `enc2-pv-local-ssd` (local
block device, hostname nodeAffinity, Available), `enc2-pv-nfs-archive` (NFS,
mount options, Retain, claim deleted: Released). RCs `frontend` (3/3 ready),
`legacy-batch` (scaled to 0), `redis-replica` (1 of 2, ReplicaFailure
condition). ControllerRevisions of DaemonSet `node-agent` (revisions 1 and 2,
before and after an image upgrade) and StatefulSet `kv` (revision 1), written as
kube-controller-manager writes them (data: the template patch with
`"$patch":"replace"`, keys sorted, compact; labels, annotations, owner).

Captured 2026-12-07 17:57:02-17:57:40 UTC (client clock) from a fresh apiserver
(default feature gates; its responses carry X-Kubernetes-Pf-* headers the first
capture's did not) with no controller-manager running: every write in the
captures is this script's. A kube-controller-manager was started on that
apiserver a few minutes later; re-running needs the same quiet.

usage: capture-more.py   (once: the objects must not exist yet)
"""
import datetime, hashlib, http.client, json, os, ssl, sys, time

HOST, NS = "127.0.0.1:6443", "enc2"
TOKEN = os.environ.get("TOKEN", "kreal-admin-token")
CTX = ssl.create_default_context(cafile="/opt/realapi/pki/ca.crt")
OUT = os.path.dirname(os.path.abspath(__file__))
KCM = "kube-controller-manager/v1.36.2 (linux/amd64) kubernetes/8e16b12/system:serviceaccount:kube-system:"
KUBECTL = "kubectl/v1.36.2 (linux/amd64) kubernetes/8e16b12"
HELM = "Helm/3.16.2"
PB = "application/vnd.kubernetes.protobuf"
META = ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"


def request(method, path, accept="application/json", ua="capture-encodings/1.0", body=None):
    conn = http.client.HTTPSConnection("127.0.0.1", 6443, context=CTX, timeout=60)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    sent = [("Host", HOST), ("User-Agent", ua), ("Accept", accept)]
    if body is not None:
        body = json.dumps(body, separators=(",", ":")).encode()  # compact, as Go writes it
        sent += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    sent.append(("Authorization", "Bearer " + TOKEN))
    for k, v in sent:
        conn.putheader(k, v)
    started, t0 = datetime.datetime.now(datetime.timezone.utc), time.monotonic()
    conn.endheaders(body)
    resp = conn.getresponse()
    data = resp.read()
    took = time.monotonic() - t0
    conn.close()
    return resp, data, sent, started, took


def write(method, path, body, ua):
    resp, data, *_ = request(method, path, ua=ua, body=body)
    if resp.status >= 300:
        sys.exit("%s %s: %d %s" % (method, path, resp.status, data.decode()))
    return json.loads(data)


def capture(kind_dir, name, path, accept, note=None):
    resp, data, sent, started, took = request("GET", path, accept)
    os.makedirs(os.path.join(OUT, kind_dir), exist_ok=True)
    with open(os.path.join(OUT, kind_dir, name), "wb") as f:
        f.write(data)
    lines = ["> GET %s HTTP/1.1" % path]
    lines += ["> %s: %s" % (k, "Bearer <redacted>" if k == "Authorization" else v) for k, v in sent]
    lines.append("< HTTP/1.1 %d %s" % (resp.status, resp.reason))
    lines += ["< %s: %s" % kv for kv in resp.getheaders()]
    lines.append("# body: %d bytes in %s (transfer chunking removed, otherwise as sent), sha256 %s"
                 % (len(data), name, hashlib.sha256(data).hexdigest()))
    lines.append("# request sent %s (client clock), response complete after %.3f s"
                 % (started.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), took))
    if note:
        lines.append("# note: " + note)
    with open(os.path.join(OUT, kind_dir, name + ".meta"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%-24s %-26s %d %6d bytes" % (kind_dir, name, resp.status, len(data)))


def capture_all(kind_dir, collection, obj, rv):
    one, note = "%s/%s" % (collection, obj), "resourceVersion %s is the collection's list resourceVersion taken just before this kind's objects were written" % rv
    watch = "%s?watch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=3" % (collection, rv)
    initial = collection + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2"
    for name, path, accept in [
        ("get.json", one, "application/json"), ("get.pb", one, PB),
        ("get-metadata.json", one, "application/json" + META), ("get-metadata.pb", one, PB + META),
        ("list.json", collection, "application/json"), ("list.pb", collection, PB),
        ("list-page.json", collection + "?limit=2", "application/json"), ("list-page.pb", collection + "?limit=2", PB),
        ("list-metadata.json", collection, "application/json" + META.replace("Metadata;", "MetadataList;")),
        ("list-metadata.pb", collection, PB + META.replace("Metadata;", "MetadataList;")),
        ("table.json", collection, TABLE), ("table-get.json", one, TABLE),
        ("table-include-object.json", collection + "?includeObject=Object", TABLE),
        ("table-include-none.json", collection + "?includeObject=None", TABLE),
    ]:
        capture(kind_dir, name, path, accept)
    capture(kind_dir, "watch.pb", watch, PB + ";stream=watch", note)
    capture(kind_dir, "watch.json", watch, "application/json", note)
    capture(kind_dir, "watch-metadata.pb", watch, "%s%s,application/json%s,application/json" % (PB, META, META),
            note + "; Accept is what client-go's metadata client sends for watch")
    capture(kind_dir, "watch-initial.pb", initial, PB + ";stream=watch")
    capture(kind_dir, "watch-initial.json", initial, "application/json")


def list_rv(collection):
    return write("GET", collection + "?limit=1", None, KUBECTL)["metadata"]["resourceVersion"]


def ago(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds))


def put_status(path, ua, **status):
    obj = write("GET", path, None, ua)
    obj["status"] = {**obj.get("status", {}), **status}
    return write("PUT", path + "/status", obj, ua)


def persistent_volumes():
    pvs, api = "/api/v1/persistentvolumes", "/api/v1/namespaces/%s/persistentvolumeclaims" % NS
    claims = {}
    for claim, app, size, sc, pv in [("data-postgres-0", "postgres", "100Gi", "gp3", "enc2-pv-ebs-postgres"),
                                     ("logs", "log-shipper", "5Gi", "manual", "enc2-pv-hostpath-logs")]:
        claims[claim] = write("POST", api + "?fieldManager=kubectl-create", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim, "labels": {"app.kubernetes.io/name": app}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, "storageClassName": sc, "volumeName": pv}}, KUBECTL)
    ref = lambda c: {"kind": "PersistentVolumeClaim", "namespace": NS, "name": c["metadata"]["name"], "uid": c["metadata"]["uid"],
                     "apiVersion": "v1", "resourceVersion": c["metadata"]["resourceVersion"]}
    gone = lambda name, uid: {"kind": "PersistentVolumeClaim", "namespace": NS, "name": name, "uid": uid, "apiVersion": "v1", "resourceVersion": "48213"}
    zone = {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]}]}]}}
    csi_meta = {"annotations": {"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com", "volume.kubernetes.io/provisioner-deletion-secret-name": "",
                                "volume.kubernetes.io/provisioner-deletion-secret-namespace": ""},
                "finalizers": ["external-provisioner.volume.kubernetes.io/finalizer"]}
    csi = lambda handle: {"driver": "ebs.csi.aws.com", "volumeHandle": handle, "fsType": "ext4",
                          "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity": "1795280312861-2107-ebs.csi.aws.com"}}
    rv = list_rv(pvs)
    made = [
        ("enc2-pv-ebs-postgres", "csi-provisioner/v5.2.0 (linux/amd64) kubernetes/$Format", csi_meta,
         {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "100Gi"}, "claimRef": ref(claims["data-postgres-0"]), "csi": csi("vol-0a1b2c3d4e5f67890"),
          "nodeAffinity": zone, "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "gp3", "volumeMode": "Filesystem",
          "volumeAttributesClassName": "gp3-iops-6000"}, {"phase": "Bound"}),
        ("enc2-pv-hostpath-logs", KUBECTL, {"labels": {"type": "local", "app.kubernetes.io/name": "log-shipper"}},
         {"storageClassName": "manual", "capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
          "hostPath": {"path": "/var/log/enc2", "type": "DirectoryOrCreate"}, "claimRef": {"namespace": NS, "name": "logs"}}, {"phase": "Bound"}),
        ("enc2-pv-local-ssd", "local-volume-provisioner/v2.7.0 (linux/amd64)",
         {"labels": {"storage-tier": "nvme"}, "annotations": {"pv.kubernetes.io/provisioned-by": "local-volume-provisioner-ip-10-0-1-23-7c1f9a"}},
         {"capacity": {"storage": "375Gi"}, "volumeMode": "Block", "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Delete",
          "storageClassName": "local-nvme", "local": {"path": "/dev/nvme1n1"},
          "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                                                      "values": ["ip-10-0-1-23.eu-west-1.compute.internal"]}]}]}}},
         {"phase": "Available"}),
        ("enc2-pv-nfs-archive", KUBECTL, {"annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
         {"capacity": {"storage": "1Ti"}, "accessModes": ["ReadWriteMany", "ReadOnlyMany"], "persistentVolumeReclaimPolicy": "Retain",
          "mountOptions": ["hard", "nfsvers=4.1"], "nfs": {"server": "10.0.12.7", "path": "/exports/archive"},
          "claimRef": gone("archive", "4f0c2d1e-9b7a-4c3e-8d6f-5a4b3c2d1e0f")}, {"phase": "Released"}),
        ("enc2-pv-ebs-orphan", "csi-provisioner/v5.2.0 (linux/amd64) kubernetes/$Format", csi_meta,
         {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "20Gi"}, "claimRef": gone("tmp-build-cache", "0d9e8f7a-6b5c-4d3e-a2f1-0e9d8c7b6a59"),
          "csi": csi("vol-0f9e8d7c6b5a43210"), "nodeAffinity": zone, "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "gp3",
          "volumeMode": "Filesystem"},
         {"phase": "Failed", "reason": "VolumeFailedDelete",
          "message": 'error deleting EBS volume "vol-0f9e8d7c6b5a43210" since volume is currently attached to "i-0123456789abcdef0"'}),
    ]
    for name, ua, meta, spec, status in made:
        write("POST", pvs + ("?fieldManager=kubectl-create" if ua == KUBECTL else ""),
              {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, **meta}, "spec": spec}, ua)
        binder = KCM + "persistent-volume-binder"
        if name == "enc2-pv-hostpath-logs":  # the binder completes a pre-bound claimRef, then binds
            pv = write("GET", pvs + "/" + name, None, binder)
            pv["spec"]["claimRef"] = ref(claims["logs"])
            pv["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bound-by-controller"] = "yes"
            write("PUT", pvs + "/" + name, pv, binder)
        put_status(pvs + "/" + name, binder, **status)
    capture_all("persistentvolumes", pvs, "enc2-pv-ebs-postgres", rv)


def replication_controllers():
    rcs = "/api/v1/namespaces/%s/replicationcontrollers" % NS
    rv = list_rv(rcs)

    def rc(name, replicas, labels, containers, **extra):
        return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name, "labels": labels, **extra.pop("meta", {})},
                "spec": {"replicas": replicas, "selector": labels, **extra, "template": {"metadata": {"labels": labels}, "spec": {"containers": containers}}}}
    made = [
        rc("frontend", 3, {"app": "guestbook", "tier": "frontend"}, [{
            "name": "php-redis", "image": "gcr.io/google-samples/gb-frontend:v5", "ports": [{"name": "http", "containerPort": 80}],
            "env": [{"name": "GET_HOSTS_FROM", "value": "dns"}], "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"memory": "256Mi"}},
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5}}],
            meta={"annotations": {"kubernetes.io/change-cause": "kubectl scale rc frontend --replicas=3"}}),
        rc("redis-replica", 2, {"app": "redis", "role": "replica"}, [{
            "name": "redis", "image": "redis:7.4.1-alpine", "args": ["--replicaof", "redis-master", "6379"], "ports": [{"containerPort": 6379}],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}], "resources": {"limits": {"memory": "512Mi"}}}], minReadySeconds=5),
        rc("legacy-batch", 0, {"app": "legacy-batch"}, [{"name": "worker", "image": "busybox:1.37", "command": ["sh", "-c", "while true; do sleep 3600; done"]}]),
    ]
    made[1]["spec"]["template"]["spec"]["volumes"] = [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}]
    statuses = {
        "frontend": {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 1},
        "redis-replica": {"replicas": 1, "fullyLabeledReplicas": 1, "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 1, "conditions": [{
            "type": "ReplicaFailure", "status": "True", "lastTransitionTime": ago(95), "reason": "FailedCreate",
            "message": 'pods "redis-replica-x7k2p" is forbidden: exceeded quota: compute-resources, requested: limits.memory=512Mi, '
                       'used: limits.memory=1792Mi, limited: limits.memory=2Gi'}]},
        "legacy-batch": {"replicas": 0, "observedGeneration": 1},
    }
    for obj in made:
        write("POST", rcs + "?fieldManager=kubectl-create", obj, KUBECTL)
        put_status(rcs + "/" + obj["metadata"]["name"], KCM + "replication-controller", **statuses[obj["metadata"]["name"]])
    capture_all("replicationcontrollers", rcs, "frontend", rv)


def controller_revisions():
    apps = "/apis/apps/v1/namespaces/%s/" % NS
    helm = {"labels": {"app.kubernetes.io/managed-by": "Helm"}, "annotations": {"meta.helm.sh/release-name": "platform", "meta.helm.sh/release-namespace": NS}}
    agent = {"name": "agent", "image": "ghcr.io/example/node-agent:2.4.0", "args": ["--metrics-port=9105"],
             "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
             "resources": {"requests": {"cpu": "20m", "memory": "32Mi"}}, "volumeMounts": [{"name": "proc", "mountPath": "/host/proc", "readOnly": True}]}
    ds = write("POST", apps + "daemonsets", {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "node-agent", **helm}, "spec": {
        "selector": {"matchLabels": {"app.kubernetes.io/name": "node-agent"}}, "template": {"metadata": {"labels": {"app.kubernetes.io/name": "node-agent"}},
        "spec": {"containers": [agent], "volumes": [{"name": "proc", "hostPath": {"path": "/proc"}}], "tolerations": [{"operator": "Exists"}]}}}}, HELM)
    sts = write("POST", apps + "statefulsets", {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "kv", **helm}, "spec": {
        "replicas": 3, "serviceName": "kv", "selector": {"matchLabels": {"app.kubernetes.io/name": "kv"}},
        "template": {"metadata": {"labels": {"app.kubernetes.io/name": "kv"}}, "spec": {"containers": [{
            "name": "etcd", "image": "quay.io/coreos/etcd:v3.5.17", "ports": [{"name": "client", "containerPort": 2379}, {"name": "peer", "containerPort": 2380}],
            "volumeMounts": [{"name": "data", "mountPath": "/var/lib/etcd"}]}]}},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "8Gi"}}}}]}}, HELM)

    def revision(owner, kind, hash_label, hash_, number):
        # As the DaemonSet and StatefulSet controllers write them: `getPatch` (Go sorts map keys) and the owner's annotations.
        template = dict(owner["spec"]["template"], **{"$patch": "replace"})
        return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {
            "name": "%s-%s" % (owner["metadata"]["name"], hash_), "labels": dict(owner["spec"]["template"]["metadata"]["labels"], **{hash_label: hash_}),
            "annotations": owner["metadata"]["annotations"], "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": owner["metadata"]["name"],
                                                                                 "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
            "data": json.loads(json.dumps({"spec": {"template": template}}, sort_keys=True)), "revision": number}
    crs, ua = apps + "controllerrevisions", KCM + "daemon-set-controller"
    rv = list_rv(crs)
    write("POST", crs, revision(ds, "DaemonSet", "controller-revision-hash", "6d8f9c7b54", 1), ua)
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = "ghcr.io/example/node-agent:2.4.1"
    ds = write("PUT", apps + "daemonsets/node-agent", ds, HELM)
    write("POST", crs, revision(ds, "DaemonSet", "controller-revision-hash", "58b7d4c9f6", 2), ua)
    write("POST", crs, revision(sts, "StatefulSet", "controller.kubernetes.io/hash", "7f9c5d8b46", 1), KCM + "statefulset-controller")
    capture_all("controllerrevisions", crs, "node-agent-58b7d4c9f6", rv)


if __name__ == "__main__":
    resp, *_ = request("GET", "/api/v1/namespaces/" + NS)
    if resp.status == 404:
        write("POST", "/api/v1/namespaces?fieldManager=kubectl-create", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, KUBECTL)
    persistent_volumes()
    replication_controllers()
    controller_revisions()

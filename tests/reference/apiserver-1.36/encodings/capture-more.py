#!/usr/bin/env python3
"""Captures directories of encodings/ beyond the first capture, in the file
set and `.meta` format of the other directories (README.md), from a real
kube-apiserver v1.36.2. Writes go through the API with the owning component's
User-Agent, statuses by PUT to `/status` after a GET, as for the first
capture. Two sets:

usage: capture-more.py enc2             (once: the objects must not exist yet)
       capture-more.py enc3 [PART...]   (PART: a key of ENC3; all by default)

enc2: persistentvolumes/, replicationcontrollers/ and controllerrevisions/, in
namespace `enc2` (PVs are cluster-scoped, named `enc2-*`).

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

enc3: every other kind of resource.rs's BUILTINS (37 directories: one per
row the earlier captures lacked, HorizontalPodAutoscaler's autoscaling/v1 in
`horizontalpodautoscalers.autoscaling.v1/`, and a second CRD capture,
`customresourcedefinitions.enc3/`), in namespace `enc3` or named `enc3-*`,
every object labelled `capture.kache.dev/set=enc3` (the functions below say
what each holds). Captured 2026-12-07 18:50:28-19:01:49 UTC (client clock)
from the same apiserver with a kube-controller-manager running (its resource
quota, HPA, disruption, cluster role aggregation and service CIDR
controllers write statuses here, as do the apiserver's own CRD, APF,
APIService availability and admission policy type-checking controllers;
`settle` waits until they are done) while Kubernetes' conformance tests ran
in other namespaces. So lists are taken at one revision
(`resourceVersionMatch=Exact`) and watches select this set's label; see
capture_all. The APIServices (which fail discovery while they exist) were
deleted right after their capture; the rest were left in place. Re-running
needs the objects gone (`kubectl delete` by the label, the namespace `enc3`).
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


def request(method, path, accept="application/json", ua="capture-encodings/1.0", body=None, headers=(), content_type="application/json"):
    conn = http.client.HTTPSConnection("127.0.0.1", 6443, context=CTX, timeout=60)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    sent = [("Host", HOST), ("User-Agent", ua), ("Accept", accept)]
    if body is not None:
        body = json.dumps(body, separators=(",", ":")).encode()  # compact, as Go writes it
        sent += [("Content-Type", content_type), ("Content-Length", str(len(body)))]
    sent += list(headers)
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


def write(method, path, body, ua, headers=(), content_type="application/json"):
    resp, data, *_ = request(method, path, ua=ua, body=body, headers=headers, content_type=content_type)
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
    print("%-44s %-26s %d %6d bytes" % (kind_dir, name, resp.status, len(data)))


def capture_all(kind_dir, collection, obj, rv, exact=False):
    """The file set of README.md. `exact` (the enc3 set): every list at one
    revision (`resourceVersion=R&resourceVersionMatch=Exact`, R taken just
    before), so that other clients' writes (cluster-scoped kinds are shared
    with the conformance tests running beside) cannot make the JSON and the
    protobuf lists differ; and watches only of this capture's objects
    (`labelSelector=capture.kache.dev/set=enc3`)."""
    one, note = "%s/%s" % (collection, obj), "resourceVersion %s is the collection's list resourceVersion taken just before this kind's objects were written" % rv
    at, sel = "", ""
    if exact:
        at, sel = "resourceVersion=%s&resourceVersionMatch=Exact" % list_rv(collection), "labelSelector=" + SET.replace("=", "%3D") + "&"
    q = lambda *params: collection + ("?" + "&".join(p for p in params if p) if any(params) else "")
    watch = "%s?%swatch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=3" % (collection, sel, rv)
    initial = collection + "?" + sel + "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2"
    for name, path, accept in [
        ("get.json", one, "application/json"), ("get.pb", one, PB),
        ("get-metadata.json", one, "application/json" + META), ("get-metadata.pb", one, PB + META),
        ("list.json", q(at), "application/json"), ("list.pb", q(at), PB),
        ("list-page.json", q("limit=2", at), "application/json"), ("list-page.pb", q("limit=2", at), PB),
        ("list-metadata.json", q(at), "application/json" + META.replace("Metadata;", "MetadataList;")),
        ("list-metadata.pb", q(at), PB + META.replace("Metadata;", "MetadataList;")),
        ("table.json", q(at), TABLE), ("table-get.json", one, TABLE),
        ("table-include-object.json", q("includeObject=Object", at), TABLE),
        ("table-include-none.json", q("includeObject=None", at), TABLE),
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


# ---------------------------------------------------------------------------
# The enc3 set: every other built-in kind (resource.rs's BUILTINS), in
# namespace `enc3` or named `enc3-*`, every object labelled SET.

NS3, SET = "enc3", "capture.kache.dev/set=enc3"
LABEL = dict([SET.split("=")])
CORE3 = "/api/v1/namespaces/%s/" % NS3


def ns3(path):
    return "/apis/%s/namespaces/%s/%s" % (path.split(" ")[0], NS3, path.split(" ")[1]) if " " in path else CORE3 + path


def meta(name, labels=None, **more):
    return {"name": name, "labels": {**LABEL, **(labels or {})}, **more}


def create(collection, objects, ua=KUBECTL, field_manager=True, headers=()):
    """POSTs each object (kubectl's `fieldManager=kubectl-create` when `ua` is
    kubectl's), returning them as created."""
    query = "?fieldManager=kubectl-create" if field_manager and ua == KUBECTL else ""
    return [write("POST", collection + query, o, ua, headers) for o in objects]


def settle(collection, quiet=4, limit=90):
    """Waits until no object of this set in `collection` has changed for
    `quiet` seconds (controllers writing statuses), so that the captures of
    one object in JSON and protobuf are of the same revision."""
    last, since, start = None, time.monotonic(), time.monotonic()
    while time.monotonic() - start < limit:
        items = write("GET", collection + "?labelSelector=" + SET.replace("=", "%3D"), None, KUBECTL)["items"]
        now = sorted((o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in items)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(1)
    sys.exit("%s did not settle" % collection)


def pki():
    """A throwaway CA (for caBundles and as the custom signer) and a signed
    client certificate for a CSR, made with openssl."""
    import subprocess, tempfile
    d = tempfile.mkdtemp(prefix="enc3-pki-")
    run = lambda *a: subprocess.run(["openssl", *a], cwd=d, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "3650", "-subj", "/O=Example Corp/CN=enc3 example CA")
    for name, subject in [("alice", "/O=enc3:devs/CN=enc3-alice"), ("ci", "/O=enc3:ci/CN=enc3-ci-runner"), ("bob", "/CN=enc3-bob")]:
        run("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", name + ".key",
            "-out", name + ".csr", "-subj", subject)
    run("x509", "-req", "-in", "alice.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1", "-out", "alice.crt")
    read = lambda f: open(os.path.join(d, f), "rb").read()
    b64 = lambda f: __import__("base64").b64encode(read(f)).decode()
    return {"ca": b64("ca.crt"), "alice.csr": b64("alice.csr"), "ci.csr": b64("ci.csr"), "bob.csr": b64("bob.csr"), "alice.crt": b64("alice.crt")}


def core_kinds():
    """LimitRanges, PodTemplates and ResourceQuotas (whose status the
    controller-manager's resource quota controller writes)."""
    rv = list_rv(CORE3 + "limitranges")
    create(CORE3 + "limitranges", [
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": meta("cpu-mem-defaults", {"app.kubernetes.io/managed-by": "Helm"}, annotations={
            "meta.helm.sh/release-name": "namespace-defaults", "meta.helm.sh/release-namespace": NS3}),
         "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m", "memory": "512Mi"}, "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
                              "max": {"cpu": "2", "memory": "2Gi"}, "min": {"cpu": "10m", "memory": "16Mi"}, "maxLimitRequestRatio": {"cpu": "10"}}]}},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": meta("pod-limits"),
         "spec": {"limits": [{"type": "Pod", "max": {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "20Gi"}, "min": {"cpu": "10m"}}]}},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": meta("storage-limits"),
         "spec": {"limits": [{"type": "PersistentVolumeClaim", "max": {"storage": "100Gi"}, "min": {"storage": "1Gi"}}]}},
    ], HELM)
    settle(CORE3 + "limitranges")
    capture_all("limitranges", CORE3 + "limitranges", "cpu-mem-defaults", rv, exact=True)

    rv = list_rv(CORE3 + "podtemplates")
    web = {"metadata": {"labels": {"app.kubernetes.io/name": "web", "app.kubernetes.io/version": "2.4.1"},
                        "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"}},
           "spec": {"serviceAccountName": "web", "terminationGracePeriodSeconds": 45, "priorityClassName": "enc3-critical-batch",
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "fsGroup": 10001, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{"name": "web", "image": "ghcr.io/example/web:2.4.1", "args": ["--listen=:8080", "--log-format=json"],
                                    "ports": [{"name": "http", "containerPort": 8080}, {"name": "metrics", "containerPort": 9090}],
                                    "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                            {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}],
                                    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                                    "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
                                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 10, "failureThreshold": 5},
                                    "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
                                    "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, {"name": "config", "mountPath": "/etc/web", "readOnly": True}]}],
                    "volumes": [{"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}}, {"name": "config", "configMap": {"name": "web-config"}}],
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "web"}}, "topologyKey": "kubernetes.io/hostname"}}]}},
                    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
                                                   "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "web"}}}]}}
    batch = {"metadata": {"labels": {"app.kubernetes.io/name": "report"}}, "spec": {
        "restartPolicy": "OnFailure", "runtimeClassName": "enc3-gvisor",
        "initContainers": [{"name": "fetch", "image": "busybox:1.37", "command": ["sh", "-c", "wget -O /work/input.csv $SOURCE_URL"],
                            "env": [{"name": "SOURCE_URL", "value": "https://data.example.com/daily.csv"}],
                            "volumeMounts": [{"name": "work", "mountPath": "/work"}]}],
        "containers": [{"name": "report", "image": "ghcr.io/example/report:1.9.0", "command": ["/report"], "args": ["--input=/work/input.csv"],
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}},
                        "volumeMounts": [{"name": "work", "mountPath": "/work"}]}],
        "volumes": [{"name": "work", "emptyDir": {}}], "nodeSelector": {"kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "m6i.large"}}}
    create(CORE3 + "podtemplates", [
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": meta("web", {"app.kubernetes.io/name": "web"}), "template": web},
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": meta("nightly-report", annotations={"description": "template of the nightly report job"}),
         "template": batch},
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": meta("debug-shell"),
         "template": {"spec": {"containers": [{"name": "shell", "image": "busybox:1.37", "stdin": True, "tty": True}]}}},
    ])
    settle(CORE3 + "podtemplates")
    capture_all("podtemplates", CORE3 + "podtemplates", "web", rv, exact=True)

    rv = list_rv(CORE3 + "resourcequotas")
    create(CORE3 + "resourcequotas", [
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("compute-resources"), "spec": {"hard": {
            "requests.cpu": "4", "requests.memory": "8Gi", "limits.cpu": "8", "limits.memory": "16Gi", "pods": "20", "requests.storage": "500Gi"}}},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("object-counts"), "spec": {"hard": {
            "configmaps": "50", "secrets": "50", "services": "10", "services.loadbalancers": "2", "services.nodeports": "0",
            "persistentvolumeclaims": "10", "count/deployments.apps": "10", "count/jobs.batch": "20", "resourcequotas": "5"}}},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("critical-pods"), "spec": {
            "hard": {"pods": "5", "requests.cpu": "10", "requests.memory": "20Gi"},
            "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["enc3-critical-batch"]}]}}},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("long-running"), "spec": {
            "hard": {"pods": "15", "limits.memory": "12Gi"}, "scopes": ["NotTerminating", "NotBestEffort"]}},
    ])
    settle(CORE3 + "resourcequotas")
    capture_all("resourcequotas", CORE3 + "resourcequotas", "compute-resources", rv, exact=True)


def services_and_addresses():
    """Services in enc3 (the apiserver allocates an IPAddress for each
    ClusterIP; they get SET's label), a NetworkPolicy set, IngressClasses and
    a ServiceCIDR inside the cluster's range (10.96.0.0/16), so that the IPs
    Services get do not change."""
    ips = "/apis/networking.k8s.io/v1/ipaddresses"
    rv = list_rv(ips)
    svcs = create(CORE3 + "services", [
        {"apiVersion": "v1", "kind": "Service", "metadata": meta("web", {"app.kubernetes.io/name": "web"}),
         "spec": {"selector": {"app.kubernetes.io/name": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta("metrics"),
         "spec": {"clusterIP": "10.96.200.10", "selector": {"app.kubernetes.io/name": "web"}, "ports": [{"name": "metrics", "port": 9090}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta("dns-cache"),
         "spec": {"selector": {"k8s-app": "dns-cache"}, "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53}]}},
    ])
    for svc in svcs:  # the allocator's IPAddress: labelled as this set's, as a cluster admin would (kubectl label)
        write("PATCH", ips + "/" + svc["spec"]["clusterIP"] + "?fieldManager=kubectl-label", {"metadata": {"labels": LABEL}}, KUBECTL,
              content_type="application/merge-patch+json")
    settle(ips)
    capture_all("ipaddresses", ips, "10.96.200.10", rv, exact=True)

    cidrs = "/apis/networking.k8s.io/v1/servicecidrs"
    rv = list_rv(cidrs)
    create(cidrs, [{"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": meta("enc3-platform-services",
                    annotations={"description": "addresses reserved for platform services"}), "spec": {"cidrs": ["10.96.200.0/24"]}},
                   {"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": meta("enc3-tenant-services"),
                    "spec": {"cidrs": ["10.96.128.0/20"]}}])
    settle(cidrs)
    capture_all("servicecidrs", cidrs, "enc3-platform-services", rv, exact=True)

    nps = ns3("networking.k8s.io/v1 networkpolicies")
    rv = list_rv(nps)
    create(nps, [
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("default-deny-all"),
         "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("web-allow", {"app.kubernetes.io/name": "web"}), "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "web"}}, "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "ingress-nginx"}},
                                   "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}},
                                  {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.5.0/24", "10.0.6.0/24"]}}],
                         "ports": [{"protocol": "TCP", "port": 8080}, {"port": "metrics"}]},
                        {"from": [{"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["sre", "platform"]}]}}],
                         "ports": [{"protocol": "TCP", "port": 9090}]}],
            "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
                       {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.169.254/32"]}}],
                        "ports": [{"protocol": "TCP", "port": 32000, "endPort": 32768}]}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("db-ingress"), "spec": {
            "podSelector": {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["postgres"]},
                                                 {"key": "role", "operator": "NotIn", "values": ["backup"]}]},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "web"}}}], "ports": [{"protocol": "TCP", "port": 5432}]}]}},
    ])
    settle(nps)
    capture_all("networkpolicies", nps, "web-allow", rv, exact=True)

    classes = "/apis/networking.k8s.io/v1/ingressclasses"
    rv = list_rv(classes)
    create(classes, [
        {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": meta("enc3-nginx", {"app.kubernetes.io/name": "ingress-nginx",
         "app.kubernetes.io/component": "controller"}, annotations={"meta.helm.sh/release-name": "ingress-nginx", "meta.helm.sh/release-namespace": NS3}),
         "spec": {"controller": "k8s.io/ingress-nginx", "parameters": {"apiGroup": "k8s.nginx.org", "kind": "IngressParameters", "name": "nginx-params",
                                                                       "scope": "Namespace", "namespace": NS3}}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": meta("enc3-alb"),
         "spec": {"controller": "ingress.k8s.aws/alb", "parameters": {"apiGroup": "elbv2.k8s.aws", "kind": "IngressClassParams", "name": "alb-internal",
                                                                      "scope": "Cluster"}}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": meta("enc3-traefik"), "spec": {"controller": "traefik.io/ingress-controller"}},
    ], HELM)
    settle(classes)
    capture_all("ingressclasses", classes, "enc3-nginx", rv, exact=True)


def autoscalers():
    """HorizontalPodAutoscalers written through autoscaling/v2 (every metric
    source type, behavior), whose statuses the controller-manager's HPA
    controller writes (the targets do not exist: AbleToScale False); the same
    objects read through autoscaling/v1 as well."""
    v2, v1 = ns3("autoscaling/v2 horizontalpodautoscalers"), ns3("autoscaling/v1 horizontalpodautoscalers")
    rv = list_rv(v2)
    target = lambda kind, name, group="apps/v1": {"apiVersion": group, "kind": kind, "name": name}
    create(v2, [
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta("web", {"app.kubernetes.io/name": "web"}), "spec": {
            "scaleTargetRef": target("Deployment", "web"), "minReplicas": 3, "maxReplicas": 30,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "900Mi"}}},
                {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "web", "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Pods", "pods": {"metric": {"name": "http_requests_per_second"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
                {"type": "Object", "object": {"describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "web"},
                                              "metric": {"name": "requests_per_second", "selector": {"matchLabels": {"verb": "GET"}}},
                                              "target": {"type": "Value", "value": "10k"}}},
                {"type": "External", "external": {"metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": "web-tasks"}}},
                                                  "target": {"type": "AverageValue", "averageValue": "30"}}}],
            "behavior": {
                "scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Min",
                              "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}, {"type": "Pods", "value": 2, "periodSeconds": 60}]},
                "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}, {"type": "Pods", "value": 4, "periodSeconds": 15}]}}}},
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta("api"), "spec": {
            "scaleTargetRef": target("Deployment", "api"), "minReplicas": 2, "maxReplicas": 8,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}},
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta("queue-worker"), "spec": {
            "scaleTargetRef": target("StatefulSet", "queue-worker"), "maxReplicas": 12,
            "metrics": [{"type": "External", "external": {"metric": {"name": "sqs_approximate_number_of_messages"},
                                                          "target": {"type": "Value", "value": "250"}}}],
            "behavior": {"scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 120}]}}}},
    ])
    settle(v2, quiet=20)  # the HPA controller syncs every 15 s
    capture_all("horizontalpodautoscalers", v2, "web", rv, exact=True)
    capture_all("horizontalpodautoscalers.autoscaling.v1", v1, "web", rv, exact=True)


def certificate_signing_requests(keys):
    """CSRs for a custom signer (`example.com/enc3-client-signer`, which no
    controller signs), created by impersonated users so that the apiserver
    fills username, uid, groups and extra: one approved and signed (the
    certificate written by the signer to /status), one denied, one pending."""
    csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    rv = list_rv(csrs)
    as_user = lambda user, groups, uid, extra: [("Impersonate-User", user), ("Impersonate-Uid", uid)] + \
        [("Impersonate-Group", g) for g in groups] + [("Impersonate-Extra-" + k, v) for k, vs in extra.items() for v in vs]
    csr = lambda name, request, usages, **spec: {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": meta(name),
                                                 "spec": {"request": keys[request], "signerName": "example.com/enc3-client-signer", "usages": usages, **spec}}
    create(csrs, [csr("enc3-alice-client", "alice.csr", ["digital signature", "key encipherment", "client auth"], expirationSeconds=86400)], KUBECTL,
           headers=as_user("enc3-alice", ["enc3:devs"], "5b0f3c1e-7a2d-4f7e-9d51-2c8e6a1b4f03", {"scopes": ["view", "edit"], "session-id": ["c2f1e8"]}))
    create(csrs, [csr("enc3-ci-runner", "ci.csr", ["client auth"])], "ci-bot/0.3.0",
           headers=as_user("enc3-ci-runner", ["enc3:ci", "enc3:devs"], "0e6d9c2b-41f8-4a5e-b7c3-9d2e1f0a8b74", {}))
    create(csrs, [csr("enc3-bob-client", "bob.csr", ["digital signature", "client auth"], expirationSeconds=3600)], KUBECTL,
           headers=as_user("enc3-bob", ["enc3:devs"], "7c4e2a90-3b1d-4e6f-8a5c-1d9b0e7f2c36", {}))
    approve = lambda name, type_, reason, message: put_approval(csrs + "/" + name, {"type": type_, "status": "True", "reason": reason, "message": message,
                                                                                   "lastUpdateTime": ago(0)})  # as kubectl sends it
    approve("enc3-alice-client", "Approved", "KubectlApprove", "This CSR was approved by kubectl certificate approve.")
    approve("enc3-ci-runner", "Denied", "KubectlDeny", "This CSR was denied by kubectl certificate deny.")
    signed = write("GET", csrs + "/enc3-alice-client", None, "enc3-signer/1.0")
    signed["status"]["certificate"] = keys["alice.crt"]
    write("PUT", csrs + "/enc3-alice-client/status", signed, "enc3-signer/1.0")
    settle(csrs)
    capture_all("certificatesigningrequests", csrs, "enc3-alice-client", rv, exact=True)


def put_approval(path, condition):
    obj = write("GET", path, None, KUBECTL)
    obj.setdefault("status", {}).setdefault("conditions", []).append(condition)
    return write("PUT", path + "/approval?fieldManager=kubectl-certificate", obj, KUBECTL)


def disruption_budgets():
    """PodDisruptionBudgets, whose statuses the controller-manager's
    disruption controller writes (no pods match)."""
    pdbs = ns3("policy/v1 poddisruptionbudgets")
    rv = list_rv(pdbs)
    create(pdbs, [
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("web", {"app.kubernetes.io/name": "web"}),
         "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app.kubernetes.io/name": "web"}}}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("api"),
         "spec": {"maxUnavailable": "25%", "unhealthyPodEvictionPolicy": "AlwaysAllow", "selector": {"matchLabels": {"app.kubernetes.io/name": "api"}}}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("zookeeper"),
         "spec": {"maxUnavailable": 1, "unhealthyPodEvictionPolicy": "IfHealthyBudget", "selector": {"matchExpressions": [
             {"key": "app.kubernetes.io/name", "operator": "In", "values": ["zookeeper"]}, {"key": "canary", "operator": "DoesNotExist"}]}}},
    ], HELM)
    settle(pdbs, quiet=6)
    capture_all("poddisruptionbudgets", pdbs, "web", rv, exact=True)


def rbac():
    """Cluster roles (one aggregated by the controller-manager), bindings to
    users, groups and service accounts, and namespaced roles. The subjects
    are users nobody authenticates as, but `enc3:devs` may create CSRs
    (certificate_signing_requests impersonates them)."""
    api = "/apis/rbac.authorization.k8s.io/v1/"
    role_ref = lambda kind, name: {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}
    user = lambda kind, name: {"kind": kind, "apiGroup": "rbac.authorization.k8s.io", "name": name}
    sa = lambda name: {"kind": "ServiceAccount", "name": name, "namespace": NS3}
    rv = list_rv(api + "clusterroles")
    create(api + "clusterroles", [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": meta("enc3-auditor", annotations={"rbac.authorization.kubernetes.io/autoupdate": "true"}),
         "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"enc3.example.com/aggregate-to-auditor": "true"}},
                                                      {"matchExpressions": [{"key": "enc3.example.com/audit-scope", "operator": "Exists"}]}]}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": meta("enc3-workload-reader", {"enc3.example.com/aggregate-to-auditor": "true"}), "rules": [
             {"apiGroups": [""], "resources": ["pods", "pods/log", "services", "endpoints"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "daemonsets"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": ["apps"], "resources": ["deployments/scale"], "resourceNames": ["web", "api"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": meta("enc3-metrics-reader", {"enc3.example.com/audit-scope": "metrics"}),
         "rules": [{"nonResourceURLs": ["/metrics", "/metrics/*", "/healthz"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta("enc3-csr-requester"),
         "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get", "list", "watch"]}]},
    ])
    settle(api + "clusterroles", quiet=5)
    capture_all("clusterroles", api + "clusterroles", "enc3-auditor", rv, exact=True)

    rv = list_rv(api + "clusterrolebindings")
    create(api + "clusterrolebindings", [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta("enc3-auditors"),
         "roleRef": role_ref("ClusterRole", "enc3-auditor"),
         "subjects": [user("User", "enc3-alice"), user("Group", "enc3:auditors"), sa("auditor")]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta("enc3-csr-requesters"),
         "roleRef": role_ref("ClusterRole", "enc3-csr-requester"), "subjects": [user("Group", "enc3:devs"), user("Group", "enc3:ci")]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta("enc3-prometheus"),
         "roleRef": role_ref("ClusterRole", "enc3-metrics-reader"), "subjects": [sa("prometheus")]},
    ])
    settle(api + "clusterrolebindings")
    capture_all("clusterrolebindings", api + "clusterrolebindings", "enc3-auditors", rv, exact=True)

    roles = ns3("rbac.authorization.k8s.io/v1 roles")
    rv = list_rv(roles)
    create(roles, [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta("config-editor"), "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["web-tls", "db"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta("leader-election"), "rules": [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta("everything"),
         "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]},
    ], HELM)
    settle(roles)
    capture_all("roles", roles, "config-editor", rv, exact=True)

    bindings = ns3("rbac.authorization.k8s.io/v1 rolebindings")
    rv = list_rv(bindings)
    create(bindings, [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("config-editors"),
         "roleRef": role_ref("Role", "config-editor"), "subjects": [sa("web"), user("User", "enc3-bob")]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("leader-election"),
         "roleRef": role_ref("Role", "leader-election"), "subjects": [sa("controller")]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("team-view"),
         "roleRef": role_ref("ClusterRole", "view"), "subjects": [user("Group", "enc3:devs"), sa("default")]},
    ], HELM)
    settle(bindings)
    capture_all("rolebindings", bindings, "config-editors", rv, exact=True)


def storage():
    """StorageClasses (none the default), CSIDrivers, CSINodes (of nodes that
    do not exist), CSIStorageCapacities, VolumeAttachments (statuses written
    as the external attacher writes them) and VolumeAttributesClasses."""
    api = "/apis/storage.k8s.io/v1/"
    rv = list_rv(api + "storageclasses")
    create(api + "storageclasses", [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": meta("enc3-gp3-encrypted", annotations={
            "meta.helm.sh/release-name": "aws-ebs-csi-driver", "meta.helm.sh/release-namespace": NS3}),
         "provisioner": "ebs.csi.aws.com", "reclaimPolicy": "Retain", "allowVolumeExpansion": True, "volumeBindingMode": "WaitForFirstConsumer",
         "parameters": {"type": "gp3", "iops": "6000", "throughput": "250", "encrypted": "true", "csi.storage.k8s.io/fstype": "xfs",
                        "kmsKeyId": "arn:aws:kms:eu-west-1:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"},
         "mountOptions": ["noatime", "nouuid"],
         "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.ebs.csi.aws.com/zone", "values": ["eu-west-1a", "eu-west-1b"]}]}]},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": meta("enc3-nfs"), "provisioner": "nfs.csi.k8s.io",
         "parameters": {"server": "nfs.enc3.example.com", "share": "/exports/k8s", "subDir": "${pvc.metadata.namespace}/${pvc.metadata.name}"},
         "mountOptions": ["nfsvers=4.1", "hard"]},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": meta("enc3-local-nvme"), "provisioner": "kubernetes.io/no-provisioner",
         "volumeBindingMode": "WaitForFirstConsumer"},
    ], HELM)
    settle(api + "storageclasses")
    capture_all("storageclasses", api + "storageclasses", "enc3-gp3-encrypted", rv, exact=True)

    rv = list_rv(api + "csidrivers")
    create(api + "csidrivers", [
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": meta("enc3-ebs.csi.example.com", {"app.kubernetes.io/name": "aws-ebs-csi-driver"}),
         "spec": {"attachRequired": True, "podInfoOnMount": False, "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                  "storageCapacity": True, "requiresRepublish": False, "seLinuxMount": True, "nodeAllocatableUpdatePeriodSeconds": 60,
                  "tokenRequests": [{"audience": "sts.amazonaws.com", "expirationSeconds": 3600}]}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": meta("enc3-secrets-store.csi.example.com"),
         "spec": {"attachRequired": False, "podInfoOnMount": True, "volumeLifecycleModes": ["Ephemeral"], "requiresRepublish": True,
                  "serviceAccountTokenInSecrets": True,
                  "tokenRequests": [{"audience": "vault"}, {"audience": "api://AzureADTokenExchange", "expirationSeconds": 600}]}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": meta("enc3-nfs.csi.example.com"), "spec": {"attachRequired": False}},
    ], HELM)
    settle(api + "csidrivers")
    capture_all("csidrivers", api + "csidrivers", "enc3-ebs.csi.example.com", rv, exact=True)

    rv = list_rv(api + "csinodes")
    create(api + "csinodes", [
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta("enc3-node-1", annotations={
            "storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/gce-pd"}),
         "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-0a1b2c3d4e5f67890", "topologyKeys": ["kubernetes.io/os", "topology.ebs.csi.aws.com/zone"],
                               "allocatable": {"count": 25}},
                              {"name": "efs.csi.aws.com", "nodeID": "i-0a1b2c3d4e5f67890"}]}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta("enc3-node-2"),
         "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-0fedcba9876543210", "topologyKeys": ["topology.ebs.csi.aws.com/zone"],
                               "allocatable": {"count": 0}}]}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta("enc3-node-3"), "spec": {"drivers": []}},
    ], "kubelet/v1.36.2 (linux/amd64) kubernetes/8e16b12")
    settle(api + "csinodes")
    capture_all("csinodes", api + "csinodes", "enc3-node-1", rv, exact=True)

    caps = ns3("storage.k8s.io/v1 csistoragecapacities")
    rv = list_rv(caps)
    zone = lambda z: {"matchLabels": {"topology.ebs.csi.aws.com/zone": z}}
    create(caps, [
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity", "metadata": meta("csisc-" + suffix),
         "storageClassName": sc, "nodeTopology": topology, **sizes}
        for suffix, sc, topology, sizes in [
            ("7hx2k", "enc3-gp3-encrypted", zone("eu-west-1a"), {"capacity": "64Ti", "maximumVolumeSize": "16Ti"}),
            ("m4q9z", "enc3-gp3-encrypted", zone("eu-west-1b"), {"capacity": "0"}),
            ("p2w7d", "enc3-local-nvme", {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["enc3-node-1"]}]},
             {"capacity": "1788Gi", "maximumVolumeSize": "894Gi"})]
    ], "csi-provisioner/v5.2.0 (linux/amd64) kubernetes/$Format")
    settle(caps)
    capture_all("csistoragecapacities", caps, "csisc-7hx2k", rv, exact=True)

    attacher = "csi-attacher/v4.8.1 (linux/amd64) kubernetes/$Format"
    rv = list_rv(api + "volumeattachments")
    pv_spec = {"accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
               "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0c9d8e7f6a5b4c3d2", "fsType": "ext4"}}
    create(api + "volumeattachments", [
        {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": meta("enc3-csi-4f1c9e2b7a"),
         "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "enc3-node-1", "source": {"persistentVolumeName": "enc3-pv-data"}}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": meta("enc3-csi-8b3d0a6e1f"),
         "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "enc3-node-2", "source": {"inlineVolumeSpec": pv_spec}}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": meta("enc3-csi-c7e2f5a9d0"),
         "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "enc3-node-1", "source": {"persistentVolumeName": "enc3-pv-logs"}}},
    ], KCM + "attachdetach-controller")
    for name, status in [
        ("enc3-csi-4f1c9e2b7a", {"attached": True, "attachmentMetadata": {"devicePath": "/dev/xvdba", "nvme": "true"}}),
        ("enc3-csi-8b3d0a6e1f", {"attached": False, "attachError": {"time": ago(40), "errorCode": 8, "message":
            "rpc error: code = ResourceExhausted desc = the maximum number of attachments for this node has been reached"}}),
        ("enc3-csi-c7e2f5a9d0", {"attached": True, "attachmentMetadata": {"devicePath": "/dev/xvdbb"}, "detachError": {"time": ago(5), "message":
            "rpc error: code = DeadlineExceeded desc = context deadline exceeded"}}),
    ]:
        put_status(api + "volumeattachments/" + name, attacher, **status)
    settle(api + "volumeattachments")
    capture_all("volumeattachments", api + "volumeattachments", "enc3-csi-4f1c9e2b7a", rv, exact=True)

    rv = list_rv(api + "volumeattributesclasses")
    create(api + "volumeattributesclasses", [
        {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass", "metadata": meta("enc3-gp3-iops-6000"),
         "driverName": "ebs.csi.aws.com", "parameters": {"iops": "6000", "throughput": "500", "type": "gp3"}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass", "metadata": meta("enc3-gold", annotations={"description": "io2, 20k IOPS"}),
         "driverName": "ebs.csi.aws.com", "parameters": {"iops": "20000", "type": "io2"}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass", "metadata": meta("enc3-balanced"), "driverName": "pd.csi.storage.gke.io",
         "parameters": {"provisioned-iops-on-create": "3000"}},
    ])
    settle(api + "volumeattributesclasses")
    capture_all("volumeattributesclasses", api + "volumeattributesclasses", "enc3-gp3-iops-6000", rv, exact=True)


def admission(keys):
    """Webhook configurations and admission policies that match nothing
    anyone does: namespace `enc3` only, and there only objects nobody
    creates (deployments, pods, labelled configmaps); the validating
    policies' statuses are the apiserver's type checking."""
    api = "/apis/admissionregistration.k8s.io/v1/"
    only_enc3 = {"matchLabels": {"kubernetes.io/metadata.name": NS3}}
    svc = lambda name, path, port=443: {"service": {"namespace": NS3, "name": name, "path": path, "port": port}, "caBundle": keys["ca"]}
    rv = list_rv(api + "validatingwebhookconfigurations")
    create(api + "validatingwebhookconfigurations", [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": meta("enc3-policy-controller", annotations={"cert-manager.io/inject-ca-from": NS3 + "/policy-controller-tls"}), "webhooks": [
             {"name": "deployments.policy.enc3.example.com", "clientConfig": svc("policy-controller", "/validate/deployments", 8443),
              "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments", "deployments/scale"],
                         "scope": "Namespaced"}],
              "failurePolicy": "Fail", "matchPolicy": "Equivalent", "sideEffects": "None", "timeoutSeconds": 5, "admissionReviewVersions": ["v1", "v1beta1"],
              "namespaceSelector": only_enc3, "objectSelector": {"matchExpressions": [{"key": "enc3.example.com/validate", "operator": "In", "values": ["true"]}]},
              "matchConditions": [{"name": "not-dry-run", "expression": "!request.dryRun"},
                                  {"name": "exclude-system", "expression": "!request.userInfo.username.startsWith('system:')"}]},
             {"name": "configmaps.audit.enc3.example.com", "clientConfig": {"url": "https://audit.enc3.example.com:9443/validate", "caBundle": keys["ca"]},
              "rules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["*"], "resources": ["configmaps"]}],
              "failurePolicy": "Ignore", "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1"], "namespaceSelector": only_enc3,
              "objectSelector": {"matchLabels": {"enc3.example.com/audited": "true"}}}]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": meta("enc3-quota-checker"), "webhooks": [
            {"name": "quota.enc3.example.com", "clientConfig": svc("quota-checker", "/check"), "admissionReviewVersions": ["v1"], "sideEffects": "None",
             "rules": [{"operations": ["CREATE"], "apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["jobs"]}], "namespaceSelector": only_enc3,
             "objectSelector": {"matchLabels": {"enc3.example.com/quota-checked": "true"}}}]},
    ], HELM)
    settle(api + "validatingwebhookconfigurations")
    capture_all("validatingwebhookconfigurations", api + "validatingwebhookconfigurations", "enc3-policy-controller", rv, exact=True)

    rv = list_rv(api + "mutatingwebhookconfigurations")
    create(api + "mutatingwebhookconfigurations", [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": meta("enc3-sidecar-injector"), "webhooks": [
            {"name": "sidecar-injector.enc3.example.com", "clientConfig": svc("sidecar-injector", "/inject", 15017),
             "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
             "failurePolicy": "Fail", "reinvocationPolicy": "IfNeeded", "sideEffects": "None", "timeoutSeconds": 10, "admissionReviewVersions": ["v1"],
             "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": [NS3]},
                                                        {"key": "enc3.example.com/injection", "operator": "In", "values": ["enabled"]}]},
             "objectSelector": {"matchExpressions": [{"key": "sidecar.enc3.example.com/inject", "operator": "NotIn", "values": ["false"]}]}},
            {"name": "defaults.enc3.example.com", "clientConfig": {"url": "https://defaults.enc3.example.com/mutate"},
             "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"], "scope": "Namespaced"}],
             "failurePolicy": "Ignore", "matchPolicy": "Exact", "sideEffects": "None", "admissionReviewVersions": ["v1", "v1beta1"],
             "namespaceSelector": only_enc3, "objectSelector": {"matchLabels": {"enc3.example.com/defaults": "true"}}}]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": meta("enc3-image-digests"), "webhooks": [
            {"name": "digests.enc3.example.com", "clientConfig": svc("image-resolver", "/resolve"), "admissionReviewVersions": ["v1"], "sideEffects": "None",
             "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}], "namespaceSelector": only_enc3,
             "objectSelector": {"matchLabels": {"enc3.example.com/resolve-digests": "true"}}}]},
    ], HELM)
    settle(api + "mutatingwebhookconfigurations")
    capture_all("mutatingwebhookconfigurations", api + "mutatingwebhookconfigurations", "enc3-sidecar-injector", rv, exact=True)

    deployments_in_enc3 = {"namespaceSelector": only_enc3, "resourceRules": [
        {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]}
    rv = list_rv(api + "validatingadmissionpolicies")
    create(api + "validatingadmissionpolicies", [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": meta("enc3-replica-limit"), "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "failurePolicy": "Fail", "matchConstraints": deployments_in_enc3,
            "matchConditions": [{"name": "not-system", "expression": "!request.userInfo.username.startsWith('system:')"}],
            "variables": [{"name": "replicas", "expression": "object.spec.replicas"},
                          {"name": "limit", "expression": "int(params.data['maxReplicas'])"}],
            "validations": [
                {"expression": "variables.replicas <= variables.limit", "reason": "Invalid",
                 "messageExpression": "'replicas must be at most ' + string(variables.limit)"},
                {"expression": "object.spec.template.spec.containers.all(c, c.image.contains('@sha256:'))", "message": "images must be pinned by digest"},
                {"expression": "object.spec.replicas > 'three'", "message": "a rule that does not type-check"}],
            "auditAnnotations": [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": meta("enc3-team-label"), "spec": {
            "matchConstraints": {"namespaceSelector": only_enc3, "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}],
                "objectSelector": {"matchLabels": {"enc3.example.com/owned": "true"}}},
            "validations": [{"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels", "message": "a team label is required",
                             "reason": "Forbidden"}]}},
    ])
    rv_bindings = list_rv(api + "validatingadmissionpolicybindings")
    create(api + "validatingadmissionpolicybindings", [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": meta("enc3-replica-limit"), "spec": {
            "policyName": "enc3-replica-limit", "validationActions": ["Deny", "Audit"],
            "paramRef": {"name": "replica-limits", "namespace": NS3, "parameterNotFoundAction": "Deny"},
            "matchResources": {"namespaceSelector": only_enc3, "excludeResourceRules": [
                {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["deployments/scale"]}]}}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": meta("enc3-team-label"), "spec": {
            "policyName": "enc3-team-label", "validationActions": ["Warn"]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": meta("enc3-replica-limit-strict"), "spec": {
            "policyName": "enc3-replica-limit", "validationActions": ["Deny"],
            "paramRef": {"selector": {"matchLabels": {"enc3.example.com/limits": "strict"}}, "parameterNotFoundAction": "Allow"},
            "matchResources": {"namespaceSelector": only_enc3, "objectSelector": {"matchLabels": {"tier": "critical"}}, "matchPolicy": "Exact"}}},
    ])
    settle(api + "validatingadmissionpolicies", quiet=6)
    capture_all("validatingadmissionpolicies", api + "validatingadmissionpolicies", "enc3-replica-limit", rv, exact=True)
    settle(api + "validatingadmissionpolicybindings")
    capture_all("validatingadmissionpolicybindings", api + "validatingadmissionpolicybindings", "enc3-replica-limit", rv_bindings, exact=True)

    rv = list_rv(api + "mutatingadmissionpolicies")
    create(api + "mutatingadmissionpolicies", [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy", "metadata": meta("enc3-default-labels"), "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "matchConstraints": deployments_in_enc3, "failurePolicy": "Ignore",
            "reinvocationPolicy": "IfNeeded",
            "matchConditions": [{"name": "unlabelled", "expression": "!has(object.metadata.labels) || !('team' in object.metadata.labels)"}],
            "variables": [{"name": "team", "expression": "params.data['team']"}],
            "mutations": [
                {"patchType": "ApplyConfiguration", "applyConfiguration": {
                    "expression": "Object{metadata: Object.metadata{labels: {'team': variables.team}}}"}},
                {"patchType": "JSONPatch", "jsonPatch": {"expression":
                    "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'enc3.example.com/defaulted': 'true'}}]"}}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy", "metadata": meta("enc3-pull-policy"), "spec": {
            "matchConstraints": {"namespaceSelector": only_enc3, "objectSelector": {"matchLabels": {"enc3.example.com/pull-always": "true"}},
                                 "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]},
            "reinvocationPolicy": "Never",
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression":
                "[JSONPatch{op: 'replace', path: '/spec/containers/0/imagePullPolicy', value: 'Always'}]"}}]}},
    ])
    rv_bindings = list_rv(api + "mutatingadmissionpolicybindings")
    create(api + "mutatingadmissionpolicybindings", [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding", "metadata": meta("enc3-default-labels"), "spec": {
            "policyName": "enc3-default-labels", "paramRef": {"name": "team-defaults", "namespace": NS3, "parameterNotFoundAction": "Deny"},
            "matchResources": {"namespaceSelector": only_enc3}}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding", "metadata": meta("enc3-pull-policy"), "spec": {
            "policyName": "enc3-pull-policy"}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding", "metadata": meta("enc3-default-labels-critical"), "spec": {
            "policyName": "enc3-default-labels", "paramRef": {"selector": {"matchLabels": {"enc3.example.com/defaults": "critical"}}, "parameterNotFoundAction": "Allow"},
            "matchResources": {"namespaceSelector": only_enc3, "objectSelector": {"matchLabels": {"tier": "critical"}}}}},
    ])
    settle(api + "mutatingadmissionpolicies")
    capture_all("mutatingadmissionpolicies", api + "mutatingadmissionpolicies", "enc3-default-labels", rv, exact=True)
    settle(api + "mutatingadmissionpolicybindings")
    capture_all("mutatingadmissionpolicybindings", api + "mutatingadmissionpolicybindings", "enc3-default-labels", rv_bindings, exact=True)


def custom_resource_definitions(keys):
    """CRDs of group enc3.example.com whose plural starts `enc3-` (a CRD is
    named `<plural>.<group>`): `enc3-gadgets` (namespaced, two versions, a
    schema using most of JSONSchemaProps, CEL rules, defaults of every JSON
    type, printer columns, selectable fields, status and scale, webhook
    conversion to a service that does not exist: no custom resource is ever
    written) and `enc3-sprockets` (cluster-scoped, minimal); the apiserver's
    controllers write their statuses."""
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    rv = list_rv(crds)
    condition = {"type": "object", "required": ["type", "status"], "properties": {
        "type": {"type": "string", "maxLength": 316}, "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "reason": {"type": "string"}, "message": {"type": "string", "maxLength": 32768},
        "lastTransitionTime": {"type": "string", "format": "date-time"}, "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0}}}
    spec = {
        "type": "object", "description": "GadgetSpec is the desired state of a Gadget.", "required": ["size"],
        "x-kubernetes-validations": [
            {"rule": "self.replicas <= 50 || self.size == 'large'", "message": "more than 50 replicas need size large",
             "fieldPath": ".replicas", "reason": "FieldValueInvalid"},
            {"rule": "!oldSelf.hasValue() || self.size == oldSelf.value().size || self.size != 'small'", "optionalOldSelf": True,
             "messageExpression": "'size cannot shrink to small from ' + oldSelf.value().size"}],
        "properties": {
            "size": {"type": "string", "enum": ["small", "medium", "large"], "default": "medium", "title": "Size"},
            "replicas": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 100, "default": 1},
            "ratio": {"type": "number", "minimum": 0.5, "maximum": 2.5, "exclusiveMaximum": True, "multipleOf": 0.25, "default": 1.5},
            "weight": {"type": "number", "minimum": 1, "maximum": 1e6},
            "color": {"type": "string", "pattern": "^#[0-9a-f]{6}$", "nullable": True, "example": "#1e90ff"},
            "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": "^[0-9a-z-]+$"},
            "paused": {"type": "boolean", "default": False},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 63}, "maxItems": 16, "minItems": 0,
                     "x-kubernetes-list-type": "set", "default": ["default"]},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"],
                      "items": {"type": "object", "required": ["name", "protocol"], "properties": {
                          "name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 32, "minProperties": 1,
                       "x-kubernetes-map-type": "granular"},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
                "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "template": {"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True},
            "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                       "default": {"mode": "auto", "level": 3, "threshold": 0.75, "features": ["a", "b"], "nested": {"on": True, "none": None}}},
            "schedule": {"type": "string", "format": "date-time", "description": "When to run next, RFC 3339."},
            "backend": {"type": "object", "properties": {"service": {"type": "string"}, "bucket": {"type": "string"}},
                        "oneOf": [{"required": ["service"]}, {"required": ["bucket"]}], "not": {"required": ["service", "bucket"]}},
        }}
    gadgets = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": meta("enc3-gadgets.enc3.example.com", {"app.kubernetes.io/name": "gadget-operator"}, annotations={
            "controller-gen.kubebuilder.io/version": "v0.17.2", "api-approved.kubernetes.io": "unapproved, experimental-only"}),
        "spec": {
            "group": "enc3.example.com", "scope": "Namespaced",
            "names": {"plural": "enc3-gadgets", "singular": "enc3-gadget", "kind": "Enc3Gadget", "listKind": "Enc3GadgetList",
                      "shortNames": ["e3g", "e3gadget"], "categories": ["enc3"]},
            "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1", "v1beta1"], "clientConfig": {
                "service": {"namespace": NS3, "name": "gadget-conversion", "path": "/convert", "port": 9443}, "caBundle": keys["ca"]}}},
            "versions": [
                {"name": "v1alpha1", "served": True, "storage": False, "deprecated": True,
                 "deprecationWarning": "enc3.example.com/v1alpha1 Enc3Gadget is deprecated; use enc3.example.com/v1 Enc3Gadget",
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                {"name": "v1", "served": True, "storage": True,
                 "schema": {"openAPIV3Schema": {
                     "type": "object", "description": "Enc3Gadget is a gadget of the enc3 capture.", "title": "Enc3Gadget",
                     "externalDocs": {"description": "Gadget operator docs", "url": "https://gadgets.enc3.example.com/docs"},
                     "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}, "spec": spec,
                                    "status": {"type": "object", "properties": {
                                        "readyReplicas": {"type": "integer"}, "selector": {"type": "string"}, "phase": {"type": "string"},
                                        "conditions": {"type": "array", "items": condition, "x-kubernetes-list-type": "map",
                                                       "x-kubernetes-list-map-keys": ["type"]}}}}}},
                 "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.readyReplicas",
                                                          "labelSelectorPath": ".status.selector"}},
                 "additionalPrinterColumns": [
                     {"name": "Size", "type": "string", "jsonPath": ".spec.size", "description": "The gadget's size"},
                     {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "format": "int32"},
                     {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "priority": 1},
                     {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                     {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                 "selectableFields": [{"jsonPath": ".spec.size"}, {"jsonPath": ".spec.color"}]}]}}
    sprockets = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": meta("enc3-sprockets.enc3.example.com"),
        "spec": {"group": "enc3.example.com", "scope": "Cluster", "names": {"plural": "enc3-sprockets", "kind": "Enc3Sprocket"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": {"type": "object", "properties": {"teeth": {"type": "integer", "minimum": 3}}}}}}}]}}
    create(crds, [gadgets, sprockets], HELM)
    settle(crds, quiet=6)
    capture_all("customresourcedefinitions.enc3", crds, "enc3-gadgets.enc3.example.com", rv, exact=True)


def scheduling_and_node():
    """PriorityClasses (none the global default) and RuntimeClasses."""
    pcs = "/apis/scheduling.k8s.io/v1/priorityclasses"
    rv = list_rv(pcs)
    create(pcs, [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta("enc3-critical-batch"), "value": 100000,
         "description": "Batch jobs that may preempt lower-priority work.", "preemptionPolicy": "PreemptLowerPriority"},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta("enc3-best-effort"), "value": -10,
         "description": "Opportunistic work; never preempts.", "preemptionPolicy": "Never"},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta("enc3-standard"), "value": 1000, "globalDefault": False},
    ], HELM)
    settle(pcs)
    capture_all("priorityclasses", pcs, "enc3-critical-batch", rv, exact=True)

    rcs = "/apis/node.k8s.io/v1/runtimeclasses"
    rv = list_rv(rcs)
    create(rcs, [
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": meta("enc3-gvisor"), "handler": "runsc",
         "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
         "scheduling": {"nodeSelector": {"sandbox.enc3.example.com/runtime": "gvisor"},
                        "tolerations": [{"key": "sandbox.enc3.example.com/runtime", "operator": "Equal", "value": "gvisor", "effect": "NoSchedule"}]}},
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": meta("enc3-kata"), "handler": "kata-qemu",
         "overhead": {"podFixed": {"cpu": "100m", "memory": "160Mi"}},
         "scheduling": {"nodeSelector": {"katacontainers.io/kata-runtime": "true"}}},
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": meta("enc3-runc"), "handler": "runc"},
    ], HELM)
    settle(rcs)
    capture_all("runtimeclasses", rcs, "enc3-gvisor", rv, exact=True)


def dynamic_resources():
    """resource.k8s.io/v1: DeviceClasses, ResourceSlices as a DRA driver
    publishes them (node-local GPUs, a network-attached pool), claims with
    their allocation written to /status as the scheduler writes it, and
    claim templates."""
    api = "/apis/resource.k8s.io/v1/"
    driver = "gpu.enc3.example.com"
    gpu_params = {"apiVersion": "gpu.enc3.example.com/v1", "kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing", "timeSlicing": {"interval": "Long"}}}
    rv = list_rv(api + "deviceclasses")
    create(api + "deviceclasses", [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": meta("enc3-gpu.example.com"), "spec": {
            "selectors": [{"cel": {"expression": "device.driver == '%s'" % driver}},
                          {"cel": {"expression": "device.attributes['%s'].productName.startsWith('A100')" % driver}}],
            "config": [{"opaque": {"driver": driver, "parameters": gpu_params}}],
            "extendedResourceName": "enc3.example.com/gpu"}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": meta("enc3-nic.example.com"),
         "spec": {"selectors": [{"cel": {"expression": "device.driver == 'nic.enc3.example.com' && device.capacity['nic.enc3.example.com'].bandwidth.compareTo(quantity('10G')) >= 0"}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": meta("enc3-any.example.com"), "spec": {}},
    ])
    settle(api + "deviceclasses")
    capture_all("deviceclasses", api + "deviceclasses", "enc3-gpu.example.com", rv, exact=True)

    rv = list_rv(api + "resourceslices")
    gpu = lambda i, uuid: {"name": "gpu-%d" % i, "attributes": {
        "productName": {"string": "A100-SXM4-40GB"}, "driverVersion": {"version": "560.35.3"}, "index": {"int": i}, "uuid": {"string": uuid},
        "migCapable": {"bool": True}, "resource.kubernetes.io/pcieRoot": {"string": "pci0000:%02x" % (i * 16)}},
        "capacity": {"memory": {"value": "40Gi"}, "multiprocessors": {"value": "108"}}}
    create(api + "resourceslices", [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta("enc3-node-1-gpu.enc3.example.com-x7k2p"), "spec": {
            "driver": driver, "nodeName": "enc3-node-1", "pool": {"name": "enc3-node-1", "generation": 3, "resourceSliceCount": 1},
            "devices": [gpu(0, "GPU-8d3c1f2e-5b4a-4c9d-a1e7-0f6b2d8c9e31"), gpu(1, "GPU-1b7e9a4c-3d2f-4e8a-9c6b-5a0d1f2e3c47")]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta("enc3-fabric-nic.enc3.example.com-m4q9z"), "spec": {
            "driver": "nic.enc3.example.com", "allNodes": True, "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 2},
            "devices": [{"name": "nic-%d" % i, "attributes": {"model": {"string": "ConnectX-7"}, "numa": {"int": i % 2}},
                         "capacity": {"bandwidth": {"value": "200G"}}} for i in range(3)]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta("enc3-fabric-nic.enc3.example.com-q2w8d"), "spec": {
            "driver": "nic.enc3.example.com", "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.enc3.example.com/rack", "operator": "In", "values": ["r12", "r13"]}]}]},
            "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 2}, "devices": []}},
    ], "gpu-kubelet-plugin/0.4.0 (linux/amd64)")
    settle(api + "resourceslices")
    capture_all("resourceslices", api + "resourceslices", "enc3-node-1-gpu.enc3.example.com-x7k2p", rv, exact=True)

    claims = ns3("resource.k8s.io/v1 resourceclaims")
    rv = list_rv(claims)
    create(claims, [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta("training-gpus"), "spec": {"devices": {
            "requests": [{"name": "gpus", "exactly": {"deviceClassName": "enc3-gpu.example.com", "allocationMode": "ExactCount", "count": 2,
                                                      "selectors": [{"cel": {"expression": "device.capacity['%s'].memory.compareTo(quantity('40Gi')) >= 0" % driver}}]}}],
            "constraints": [{"requests": ["gpus"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
            "config": [{"requests": ["gpus"], "opaque": {"driver": driver, "parameters": gpu_params}}]}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta("fast-or-slow-nic"), "spec": {"devices": {
            "requests": [{"name": "nic", "firstAvailable": [
                {"name": "fast", "deviceClassName": "enc3-nic.example.com", "selectors": [{"cel": {"expression": "device.attributes['nic.enc3.example.com'].model == 'ConnectX-7'"}}]},
                {"name": "any", "deviceClassName": "enc3-nic.example.com", "allocationMode": "All"}]}]}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta("shared-gpu"), "spec": {"devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "enc3-gpu.example.com", "adminAccess": False}}]}}},
    ], KUBECTL)
    scheduler = "kube-scheduler/v1.36.2 (linux/amd64) kubernetes/8e16b12/scheduler"
    on_node_1 = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["enc3-node-1"]}]}]}
    put_status(claims + "/training-gpus", scheduler, allocation={
        "devices": {"results": [{"request": "gpus", "driver": driver, "pool": "enc3-node-1", "device": "gpu-%d" % i} for i in range(2)],
                    "config": [{"source": "FromClaim", "requests": ["gpus"], "opaque": {"driver": driver, "parameters": gpu_params}},
                               {"source": "FromClass", "opaque": {"driver": driver, "parameters": gpu_params}}]},
        "nodeSelector": on_node_1})
    put_status(claims + "/fast-or-slow-nic", scheduler, allocation={"devices": {"results": [
        {"request": "nic/fast", "driver": "nic.enc3.example.com", "pool": "fabric", "device": "nic-1"}]}})
    nic = write("GET", claims + "/fast-or-slow-nic", None, "nic-kubelet-plugin/0.2.0")
    nic["status"]["devices"] = [{"driver": "nic.enc3.example.com", "pool": "fabric", "device": "nic-1",
                                 "conditions": [{"type": "Ready", "status": "True", "reason": "InterfaceUp", "message": "link up at 200Gb/s",
                                                 "lastTransitionTime": ago(20), "observedGeneration": 1}],
                                 "data": {"vlan": 120, "mtu": 9000},
                                 "networkData": {"interfaceName": "net1", "ips": ["10.20.30.41/24", "fd00:10:20::29/64"], "hardwareAddress": "ea:9f:cb:40:b1:7b"}}]
    write("PUT", claims + "/fast-or-slow-nic/status", nic, "nic-kubelet-plugin/0.2.0")
    settle(claims, quiet=6)
    capture_all("resourceclaims", claims, "training-gpus", rv, exact=True)

    templates = ns3("resource.k8s.io/v1 resourceclaimtemplates")
    rv = list_rv(templates)
    create(templates, [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": meta("single-gpu"), "spec": {
            "metadata": {"labels": {"app.kubernetes.io/name": "inference"}, "annotations": {"enc3.example.com/cost-center": "ml"}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "enc3-gpu.example.com"}}],
                                 "config": [{"requests": ["gpu"], "opaque": {"driver": driver, "parameters": gpu_params}}]}}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": meta("all-nics"), "spec": {
            "spec": {"devices": {"requests": [{"name": "nics", "exactly": {"deviceClassName": "enc3-nic.example.com", "allocationMode": "All"}}]}}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": meta("empty"), "spec": {"spec": {}}},
    ], HELM)
    settle(templates)
    capture_all("resourceclaimtemplates", templates, "single-gpu", rv, exact=True)


def flow_control():
    """Priority levels that lend all their seats (so that nothing else's
    concurrency changes) and flow schemas matching only users nobody is, one
    of them dangling; the apiserver's APF controller writes their statuses.
    The lists hold the bootstrap objects too."""
    api = "/apis/flowcontrol.apiserver.k8s.io/v1/"
    rv = list_rv(api + "prioritylevelconfigurations")
    create(api + "prioritylevelconfigurations", [
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration", "metadata": meta("enc3-batch"), "spec": {
            "type": "Limited", "limited": {"nominalConcurrencyShares": 2, "lendablePercent": 100, "borrowingLimitPercent": 50,
                                           "limitResponse": {"type": "Queue", "queuing": {"queues": 16, "handSize": 4, "queueLengthLimit": 50}}}}},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration", "metadata": meta("enc3-reject"), "spec": {
            "type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 100, "limitResponse": {"type": "Reject"}}}},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration", "metadata": meta("enc3-idle"), "spec": {
            "type": "Limited", "limited": {"nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}}},
    ])
    rv_schemas = list_rv(api + "flowschemas")
    create(api + "flowschemas", [
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": meta("enc3-batch-jobs"), "spec": {
            "priorityLevelConfiguration": {"name": "enc3-batch"}, "matchingPrecedence": 9100, "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "enc3-batch-runner"}},
                                    {"kind": "ServiceAccount", "serviceAccount": {"namespace": NS3, "name": "batch"}},
                                    {"kind": "Group", "group": {"name": "enc3:batch"}}],
                       "resourceRules": [{"verbs": ["list", "watch"], "apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "namespaces": [NS3]},
                                         {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"], "clusterScope": True}],
                       "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/readyz"]}]}]}},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": meta("enc3-scrapers"), "spec": {
            "priorityLevelConfiguration": {"name": "enc3-reject"}, "matchingPrecedence": 9200, "distinguisherMethod": {"type": "ByNamespace"},
            "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": NS3, "name": "prometheus"}}],
                       "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": meta("enc3-dangling"), "spec": {
            "priorityLevelConfiguration": {"name": "enc3-missing"}, "matchingPrecedence": 9300,
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "enc3-nobody"}}], "resourceRules": [
                {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True, "namespaces": ["*"]}]}]}},
    ])
    settle(api + "prioritylevelconfigurations")
    capture_all("prioritylevelconfigurations", api + "prioritylevelconfigurations", "enc3-batch", rv, exact=True)
    settle(api + "flowschemas", quiet=6)
    capture_all("flowschemas", api + "flowschemas", "enc3-batch-jobs", rv_schemas, exact=True)


def api_services(keys):
    """APIServices of a group nobody serves, to a service that does not
    exist: the aggregator's availability controller marks them unavailable.
    An unavailable APIService fails discovery for everyone (the namespace
    controller retries namespace deletions meanwhile), so they are deleted
    as soon as they are captured."""
    api = "/apis/apiregistration.k8s.io/v1/apiservices"
    rv = list_rv(api)
    made = create(api, [
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": meta("enc3-v1beta1.metrics.enc3.example.com",
         {"app.kubernetes.io/name": "enc3-metrics-adapter"}), "spec": {
            "group": "metrics.enc3.example.com", "version": "enc3-v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
            "service": {"namespace": NS3, "name": "metrics-adapter", "port": 443}, "caBundle": keys["ca"]}},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": meta("enc3-v1.custom.enc3.example.com"), "spec": {
            "group": "custom.enc3.example.com", "version": "enc3-v1", "groupPriorityMinimum": 1000, "versionPriority": 15,
            "service": {"namespace": NS3, "name": "custom-api", "port": 8443}, "insecureSkipTLSVerify": True}},
    ], HELM)
    try:
        settle(api, quiet=4)
        capture_all("apiservices", api, "enc3-v1beta1.metrics.enc3.example.com", rv, exact=True)
    finally:
        for o in made:
            write("DELETE", api + "/" + o["metadata"]["name"], None, HELM)


ENC3 = {  # captured directories -> what writes their objects
    "core": core_kinds, "networking": services_and_addresses, "autoscaling": autoscalers, "rbac": rbac, "policy": disruption_budgets,
    "storage": storage, "scheduling": scheduling_and_node, "resource": dynamic_resources, "flowcontrol": flow_control,
    "certificates": certificate_signing_requests, "admission": admission, "crds": custom_resource_definitions, "apiservices": api_services,
}


def enc3(parts):
    resp, *_ = request("GET", "/api/v1/namespaces/" + NS3)
    if resp.status == 404:
        write("POST", "/api/v1/namespaces?fieldManager=kubectl-create", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(NS3, {
            "team": "platform", "pod-security.kubernetes.io/warn": "restricted"})}, KUBECTL)
    keys = pki()
    for part in parts or ENC3:
        fn = ENC3[part]
        fn(keys) if fn.__code__.co_argcount else fn()


def enc2():
    resp, *_ = request("GET", "/api/v1/namespaces/" + NS)
    if resp.status == 404:
        write("POST", "/api/v1/namespaces?fieldManager=kubectl-create", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, KUBECTL)
    persistent_volumes()
    replication_controllers()
    controller_revisions()


if __name__ == "__main__":
    if sys.argv[1:2] == ["enc2"]:
        enc2()
    elif sys.argv[1:2] == ["enc3"]:
        enc3(sys.argv[2:])
    else:
        sys.exit(__doc__)


#!/usr/bin/env python3
"""Captures kube-apiserver's answers to field selectors: every label of every
built-in kind, into answers.json beside this script.

    capture.py KUBECONFIG

Against a real kube-apiserver (1.36 here) with no controllers running (a
namespace deleted stays Terminating), as an administrator. It creates, in
namespace `field-labels` and cluster-wide with names starting `fl-`, objects
that give each label of its kind a value and leave it unset, then asks:

- for every label of every kind whose conversion accepts more than
  `metadata.name`/`metadata.namespace` (`apimachinery::field_labels`):
  `LABEL=V` and `LABEL!=V` for each value V the objects have, the zero value
  and a value none has, namespaced and across all namespaces;
- for every listable and watchable built-in resource the apiserver
  serves: a label no kind has, `metadata.namespace=…`, `metadata.name=…`,
  two refused labels at once, and an empty label.

Each answer is the status code and either the names of the `fl-` objects
selected (sorted) or the Status message. The objects are written as the
apiserver served them (without managedFields), for the test to create in
the simulator: tests/kache_field_labels.rs.
"""
import base64
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

NS = "field-labels"
HERE = os.path.dirname(os.path.abspath(__file__))


class Api:
    def __init__(self, kubeconfig):
        cfg = json.loads(subprocess.check_output(["kubectl", "config", "view", "--raw", "--minify", "-o", "json", "--kubeconfig", kubeconfig]))
        cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
        self.server = cluster["server"]
        self.ctx = ssl.create_default_context(cafile=cluster.get("certificate-authority"))
        self.token = user["token"]

    def call(self, method, path, body=None, content_type="application/json"):
        req = urllib.request.Request(self.server + path, method=method, data=None if body is None else json.dumps(body).encode())
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Accept", "application/json")
        if body is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.ctx) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def ok(self, method, path, body=None, content_type="application/json"):
        code, out = self.call(method, path, body, content_type)
        if code >= 300 and not (code == 409 and method == "POST"):
            sys.exit(f"{method} {path}: {code} {out.get('message', out)}")
        return out


def base(group, version):
    return f"/api/{version}" if not group else f"/apis/{group}/{version}"


def csr_request():
    pem = subprocess.check_output(
        ["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=fl", "-keyout", "/dev/null"], stderr=subprocess.DEVNULL
    )
    return base64.b64encode(pem).decode()


# (group, version, plural, namespaced, object, status merged in through /status)
OBJECTS = [
    ("", "v1", "serviceaccounts", True, {"metadata": {"name": "fl-sa"}}, None),
    ("", "v1", "serviceaccounts", True, {"metadata": {"name": "default"}}, None),
    ("", "v1", "pods", True, {"metadata": {"name": "fl-pod-rich"}, "spec": {
        "nodeName": "fl-node-a", "restartPolicy": "Never", "schedulerName": "fl-scheduler", "serviceAccountName": "fl-sa",
        "hostNetwork": True, "containers": [{"name": "c", "image": "busybox"}]}},
     {"phase": "Running", "podIP": "10.1.2.3", "podIPs": [{"ip": "10.1.2.3"}, {"ip": "fd00::3"}]}),
    ("", "v1", "pods", True, {"metadata": {"name": "fl-pod-bare"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, None),
    # A pod the scheduler nominated a node for (only an unbound pod may have one).
    ("", "v1", "pods", True, {"metadata": {"name": "fl-pod-nominated"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
     {"nominatedNodeName": "fl-node-b"}),
    ("", "v1", "nodes", False, {"metadata": {"name": "fl-node-a"}, "spec": {"unschedulable": True}}, None),
    ("", "v1", "nodes", False, {"metadata": {"name": "fl-node-b"}}, None),
    ("", "v1", "replicationcontrollers", True, {"metadata": {"name": "fl-rc-two"}, "spec": {"replicas": 2, "selector": {"app": "fl"},
        "template": {"metadata": {"labels": {"app": "fl"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}, {"replicas": 2}),
    ("", "v1", "replicationcontrollers", True, {"metadata": {"name": "fl-rc-none"}, "spec": {"replicas": 0, "selector": {"app": "fl0"},
        "template": {"metadata": {"labels": {"app": "fl0"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}, None),
    ("", "v1", "events", True, {"metadata": {"name": "fl-ev-source"}, "involvedObject": {
        "kind": "Pod", "namespace": NS, "name": "fl-pod-rich", "uid": "0000-fl", "apiVersion": "v1", "resourceVersion": "7",
        "fieldPath": "spec.containers{c}"}, "reason": "Started", "message": "m", "type": "Normal",
        "source": {"component": "kubelet", "host": "fl-node-a"}, "reportingComponent": "kubelet", "reportingInstance": "fl-node-a",
        "firstTimestamp": "2026-12-01T00:00:00Z", "lastTimestamp": "2026-12-01T00:00:00Z", "count": 1}, None),
    # No source: `source` falls back to the reporting controller (the Events API conformance test's case).
    ("", "v1", "events", True, {"metadata": {"name": "fl-ev-reporting"}, "involvedObject": {"kind": "ConfigMap", "namespace": NS, "name": "fl-cm"},
        "reason": "Drained", "message": "m", "type": "Warning", "reportingComponent": "fl.example.com/controller",
        "reportingInstance": "fl-1", "action": "Drain", "eventTime": "2026-12-01T00:00:00.000000Z"}, None),
    ("events.k8s.io", "v1", "events", True, {"metadata": {"name": "fl-ev-new"}, "regarding": {"kind": "Pod", "namespace": NS,
        "name": "fl-pod-bare", "apiVersion": "v1"}, "reason": "Scheduled", "note": "n", "type": "Normal", "action": "Bind",
        "reportingController": "default-scheduler", "reportingInstance": "s-1", "eventTime": "2026-12-01T00:00:00.000000Z"}, None),
    ("", "v1", "namespaces", False, {"metadata": {"name": "fl-ns"}}, None),
    ("", "v1", "namespaces", False, {"metadata": {"name": "fl-ns-leaving"}}, None),
    ("", "v1", "secrets", True, {"metadata": {"name": "fl-secret-opaque"}, "stringData": {"a": "b"}}, None),
    ("", "v1", "secrets", True, {"metadata": {"name": "fl-secret-typed"}, "type": "example.com/fl", "stringData": {"a": "b"}}, None),
    ("", "v1", "services", True, {"metadata": {"name": "fl-svc-cluster"}, "spec": {"ports": [{"port": 80}]}}, None),
    ("", "v1", "services", True, {"metadata": {"name": "fl-svc-headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}, None),
    ("", "v1", "services", True, {"metadata": {"name": "fl-svc-external"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}, None),
    ("batch", "v1", "jobs", True, {"metadata": {"name": "fl-job-done"}, "spec": {"template": {"spec": {"restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox"}]}}}}, "JOB_DONE"),
    ("batch", "v1", "jobs", True, {"metadata": {"name": "fl-job-new"}, "spec": {"template": {"spec": {"restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox"}]}}}}, None),
    ("certificates.k8s.io", "v1", "certificatesigningrequests", False, {"metadata": {"name": "fl-csr-example"}, "spec": {
        "request": "CSR", "signerName": "example.com/fl", "usages": ["digital signature"]}}, None),
    ("certificates.k8s.io", "v1", "certificatesigningrequests", False, {"metadata": {"name": "fl-csr-kubelet"}, "spec": {
        "request": "CSR", "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}}, None),
    ("resource.k8s.io", "v1", "resourceslices", False, {"metadata": {"name": "fl-slice-node"}, "spec": {"driver": "gpu.example.com",
        "nodeName": "fl-node-a", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}}, None),
    ("resource.k8s.io", "v1", "resourceslices", False, {"metadata": {"name": "fl-slice-all"}, "spec": {"driver": "net.example.com",
        "allNodes": True, "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}}, None),
    # Kinds with the default conversion: one namespaced, two cluster-scoped.
    ("", "v1", "configmaps", True, {"metadata": {"name": "fl-cm"}, "data": {"a": "b"}}, None),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", False, {"metadata": {"name": "fl-role"}, "rules": []}, None),
    ("apps", "v1", "replicasets", True, {"metadata": {"name": "fl-rs"}, "spec": {"replicas": 0, "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}, None),
]

# The kinds whose field labels the capture exercises value by value, with each label and its zero value
# (from the apiserver's source: pkg/apis/*/*/conversion.go, pkg/registry/*/*/strategy.go).
LABELED = {
    ("", "v1", "pods"): {"spec.nodeName": "", "spec.host": "", "spec.restartPolicy": "", "spec.schedulerName": "",
                         "spec.serviceAccountName": "", "spec.hostNetwork": "false", "status.phase": "", "status.podIP": "",
                         "status.podIPs": "", "status.nominatedNodeName": ""},
    ("", "v1", "nodes"): {"spec.unschedulable": "false"},
    ("", "v1", "replicationcontrollers"): {"status.replicas": "0"},
    ("", "v1", "events"): {k: "" for k in ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
                                           "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
                                           "reason", "reportingComponent", "source", "type"]},
    ("events.k8s.io", "v1", "events"): {k: "" for k in ["regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
                                                         "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
                                                         "reason", "reportingController", "type"]},
    ("", "v1", "namespaces"): {"status.phase": ""},
    ("", "v1", "secrets"): {"type": ""},
    ("", "v1", "services"): {"spec.clusterIP": "", "spec.type": ""},
    ("batch", "v1", "jobs"): {"status.successful": "0"},
    ("certificates.k8s.io", "v1", "certificatesigningrequests"): {"spec.signerName": ""},
    ("resource.k8s.io", "v1", "resourceslices"): {"spec.nodeName": "", "spec.driver": ""},
}

# Labels a selector may name that the kind's conversion may or may not accept: asked of every resource.
PROBES = ["fl.nope=x", "metadata.namespace=" + NS, "metadata.namespace!=" + NS, "metadata.name=fl-none", "zz.second=1,aa.first=2",
          "=x", "status.replicas=0", "spec.nodeName=fl-node-a", "source=kubelet", "regarding.kind=Pod", "involvedObject.kind=Pod"]


def dig(obj, path):
    for part in path.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def text(v):
    if v is None or isinstance(v, (dict, list)):
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def main():
    api = Api(sys.argv[1])
    api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    request = csr_request()
    for group, version, plural, namespaced, obj, status in OBJECTS:
        obj = json.loads(json.dumps(obj).replace('"CSR"', json.dumps(request)))
        path = base(group, version) + (f"/namespaces/{NS}" if namespaced else "") + "/" + plural
        api.ok("POST", path, obj)
        name = obj["metadata"]["name"]
        if status == "JOB_DONE":
            # A finished Job's status as the job controller writes it (validation wants the conditions and times).
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            status = {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": now, "lastTransitionTime": now},
                {"type": "Complete", "status": "True", "lastProbeTime": now, "lastTransitionTime": now}]}
        if status:
            api.ok("PATCH", f"{path}/{name}/status", {"status": status}, "application/merge-patch+json")
    # No namespace controller runs: a deleted namespace stays Terminating.
    api.ok("DELETE", "/api/v1/namespaces/fl-ns-leaving")

    served = {}
    for group, version, plural, namespaced, _, _ in OBJECTS:
        key = f"{group}/{version}/{plural}"
        if key in served:
            continue
        items = api.ok("GET", base(group, version) + "/" + plural)["items"]
        items = [i for i in items if i["metadata"]["name"].startswith("fl-") and i["metadata"].get("namespace", NS) == NS]
        for i in items:
            i["metadata"].pop("managedFields", None)
        served[key] = {"group": group, "version": version, "plural": plural, "namespaced": namespaced, "items": items}

    answers = []

    def ask(path, selector):
        q = urllib.parse.urlencode({"fieldSelector": selector})
        code, out = api.call("GET", f"{path}?{q}")
        answer = {"path": path, "fieldSelector": selector, "code": code}
        if code == 200:
            names = [i["metadata"]["name"] for i in out["items"]]
            answer["names"] = sorted(n for n in names if n.startswith("fl-"))
        else:
            answer["message"] = out.get("message")
        answers.append(answer)

    for (group, version, plural), labels in LABELED.items():
        namespaced = served[f"{group}/{version}/{plural}"]["namespaced"] if f"{group}/{version}/{plural}" in served else True
        items = served.get(f"{group}/{version}/{plural}", {"items": []})["items"]
        if plural == "events" and group == "":
            items = items + served["events.k8s.io/v1/events"]["items"]
        paths = [base(group, version) + f"/namespaces/{NS}/{plural}", base(group, version) + f"/{plural}"] if namespaced else \
            [base(group, version) + f"/{plural}"]
        for label, zero in labels.items():
            values = {zero, "fl-none"}
            for i in items:
                for field in ([label] if "." not in label else [label, label.replace("regarding.", "involvedObject.")]):
                    v = text(dig(i, field))
                    if v:
                        values.add(v)
            for value in sorted(values):
                for path in paths:
                    ask(path, f"{label}={value}")
                    ask(path, f"{label}!={value}")

    groups = api.ok("GET", "/api")["versions"], api.ok("GET", "/apis")["groups"]
    resources = []
    for version in groups[0]:
        resources += [("", version, r) for r in api.ok("GET", f"/api/{version}")["resources"]]
    for g in groups[1]:
        gv = g["preferredVersion"]["groupVersion"]
        for v in g["versions"]:
            resources += [(g["name"], v["version"], r) for r in api.ok("GET", f"/apis/{v['groupVersion']}")["resources"]]
    for group, version, r in resources:
        if "/" in r["name"] or not {"list", "watch"} <= set(r["verbs"]):
            continue
        path = base(group, version) + (f"/namespaces/{NS}" if r["namespaced"] else "") + "/" + r["name"]
        for selector in PROBES:
            ask(path, selector)

    out = {"apiserver": api.ok("GET", "/version")["gitVersion"], "namespace": NS, "objects": list(served.values()), "answers": answers}
    with open(os.path.join(HERE, "answers.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(answers)} answers from {out['apiserver']}")


if __name__ == "__main__":
    main()

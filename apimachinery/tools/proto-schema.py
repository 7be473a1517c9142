#!/usr/bin/env python3
"""Writes apimachinery/src/protobuf/schema.txt: the protobuf field table of
the built-in kinds kache caches (every kind of resource.rs's BUILTINS), read
from the prost sources of the k8s-pb crate (Apache-2.0; generated from the
Kubernetes .proto files).

usage: proto-schema.py K8S_PB_SRC_DIR [SOURCE] > apimachinery/src/protobuf/schema.txt

SOURCE names the sources in the header (default: the crate directory's name).
The table is made from k8s-pb at commit 7d74b0b ("Update dependency
kubernetes/kubernetes to v1.36.0"; no release yet, the crate still says
0.9.0): its Kubernetes 1.36.0 protos are those of 1.36.2 byte for byte
(but for the `k8s.io.` package prefix), and every field of every message of
the table was checked against 1.36.2's `generated.proto` files:

  git -C k8s-pb archive 7d74b0b k8s-pb/src | tar -x -C /tmp/k8s-pb-7d74b0b
  proto-schema.py /tmp/k8s-pb-7d74b0b/k8s-pb/src "k8s-pb 7d74b0b (Kubernetes v1.36.0)"

One block per message, `M <package>.<Message>`, then one line per field:
`<tag> <name> <kind>[*]` where kind is `string`, `bytes`, `int32`, `int64`,
`bool`, `double`, `<package>.<Message>`, or `map:<key>:<value>`; `*` marks a
repeated field. Names are prost's snake_case; readers match JSON keys by
comparing names without case, `_`, `-` and `$` (`x-kubernetes-list-type`,
`$ref`). Message names are prost's too (`JsonSchemaProps`, `APIService`):
protobuf::message_name finds a kind's message without case.
"""
import os
import re
import sys

ROOTS = [
    "api.core.v1." + k for k in (
        "Pod Node Namespace ConfigMap Secret Service Endpoints Event ServiceAccount "
        "PersistentVolumeClaim PersistentVolume ReplicationController").split()
] + [
    "api.apps.v1.Deployment", "api.apps.v1.ReplicaSet", "api.apps.v1.DaemonSet",
    "api.apps.v1.StatefulSet", "api.apps.v1.ControllerRevision",
    "api.batch.v1.Job", "api.batch.v1.CronJob",
    "api.coordination.v1.Lease", "api.discovery.v1.EndpointSlice",
    "api.networking.v1.Ingress", "api.events.v1.Event",
    # The other kinds kube-apiserver 1.36 serves by default (resource.rs's BUILTINS).
    "api.core.v1.LimitRange", "api.core.v1.PodTemplate", "api.core.v1.ResourceQuota",
    "kube_aggregator.pkg.apis.apiregistration.v1.APIService",
    "api.autoscaling.v1.HorizontalPodAutoscaler", "api.autoscaling.v2.HorizontalPodAutoscaler",
    "api.certificates.v1.CertificateSigningRequest",
    "api.networking.v1.IngressClass", "api.networking.v1.IPAddress",
    "api.networking.v1.NetworkPolicy", "api.networking.v1.ServiceCIDR",
    "api.policy.v1.PodDisruptionBudget",
    "api.rbac.v1.ClusterRole", "api.rbac.v1.ClusterRoleBinding", "api.rbac.v1.Role", "api.rbac.v1.RoleBinding",
    "api.storage.v1.CSIDriver", "api.storage.v1.CSINode", "api.storage.v1.CSIStorageCapacity",
    "api.storage.v1.StorageClass", "api.storage.v1.VolumeAttachment", "api.storage.v1.VolumeAttributesClass",
] + [
    "api.admissionregistration.v1." + k for k in (
        "MutatingAdmissionPolicy MutatingAdmissionPolicyBinding MutatingWebhookConfiguration "
        "ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding ValidatingWebhookConfiguration").split()
] + [
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    "api.scheduling.v1.PriorityClass", "api.node.v1.RuntimeClass",
    "api.resource.v1.DeviceClass", "api.resource.v1.ResourceClaim",
    "api.resource.v1.ResourceClaimTemplate", "api.resource.v1.ResourceSlice",
    "api.flowcontrol.v1.FlowSchema", "api.flowcontrol.v1.PriorityLevelConfiguration",
    "apimachinery.pkg.apis.meta.v1.ListMeta",
    "apimachinery.pkg.apis.meta.v1.PartialObjectMetadata",
    "apimachinery.pkg.apis.meta.v1.Status",
]

FIELD = re.compile(r'#\[prost\(([^\]]*?)tag = "(\d+)"\)\]\s*pub (?:r#)?(\w+):\s*(.*?),?\s*(?=\n\s*(?:///|#\[|pub )|\s*$)', re.S)


def modules(src):
    out = {}
    for dirpath, _, files in os.walk(src):
        if "mod.rs" in files:
            rel = os.path.relpath(dirpath, src)
            pkg = "" if rel == "." else rel.replace(os.sep, ".")
            out[pkg] = open(os.path.join(dirpath, "mod.rs")).read()
    return out


def resolve(pkg, rust_type):
    """`super::super::apis::meta::v1::Time` seen from `pkg` -> full name."""
    parts = rust_type.split("::")
    here = pkg.split(".")
    while parts and parts[0] == "super":
        parts.pop(0)
        here.pop()
    if len(parts) == 1:
        return ".".join(here + parts)
    return ".".join(here + parts)


def messages(mods):
    out = {}
    for pkg, text in mods.items():
        # `{}` on one line is an empty message (e.g. CustomResourceSubresourceStatus).
        for m in re.finditer(r"pub struct (\w+) \{(?:\}|(.*?)\n\})", text, re.S):
            fields = []
            for f in FIELD.finditer(m.group(2) or ""):
                attrs, tag, name, ty = f.group(1), f.group(2), f.group(3), f.group(4)
                kind = re.match(r'\s*(\w+(?: = "[^"]*")?)', attrs).group(1)
                repeated = "repeated" in attrs
                ty = re.sub(r"\s+", "", ty).replace(",>", ">")  # rustfmt's multi-line `Option<\n  T,\n>`
                inner = re.sub(r"^::core::option::Option<|^::prost::alloc::vec::Vec<", "", ty)
                inner = re.sub(r"^::prost::alloc::boxed::Box<", "", inner)  # recursive messages (JSONSchemaProps)
                if kind.startswith("btree_map"):
                    k, v = re.search(r'"(\w+), (\w+)"', kind).groups()
                    if v == "message":
                        v = resolve(pkg, re.search(r"String,\s*([\w:]+)", ty).group(1).strip())
                    kind = "map:%s:%s" % (k, v)
                elif kind == "message":
                    kind = resolve(pkg, inner.rstrip(">"))
                elif kind.startswith("bytes"):
                    kind = "bytes"
                fields.append((int(tag), name, kind + ("*" if repeated else "")))
            out[pkg + "." + m.group(1)] = fields
    return out


def main():
    msgs = messages(modules(sys.argv[1]))
    need, seen = list(ROOTS), []
    while need:
        name = need.pop()
        if name in seen:
            continue
        seen.append(name)
        for _, _, kind in msgs[name]:
            ref = kind.rstrip("*").split(":")[-1]
            if "." in ref:
                need.append(ref)
    source = sys.argv[2] if len(sys.argv) > 2 else os.path.basename(os.path.dirname(os.path.abspath(sys.argv[1])))
    print("# Generated by apimachinery/tools/proto-schema.py from %s; do not edit." % source)
    for name in sorted(seen):
        print("M " + name)
        for tag, field, kind in sorted(msgs[name]):
            print("%d %s %s" % (tag, field, kind))


main()

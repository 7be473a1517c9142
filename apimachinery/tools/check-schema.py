#!/usr/bin/env python3
"""Checks apimachinery/src/protobuf/schema.txt and go.txt against a Kubernetes
source tree (e.g. /opt/realapi/k8s, v1.36.2):

* every message of schema.txt has exactly the fields of its `generated.proto`
  (numbers, names and types, compared without case, `_`, `-` and `$`), for
  every package of PACKAGES (all the kinds of resource.rs's BUILTINS);
* go.txt's `always` facts are the non-pointer scalar fields tagged
  `omitempty` of the Go types, and those tagged `omitzero` (JSON drops them
  when zero, gogo-protobuf writes them always). Lists what go.txt lacks; what it has beyond that
  (fields without `omitempty`, always in JSON anyway) is only shown with -v.

usage: check-schema.py K8S_SRC [-v]     (exits 1 when something is missing)
"""
import os
import re
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../src/protobuf")
PACKAGES = {
    "api.core.v1": "api/core/v1", "api.apps.v1": "api/apps/v1", "api.batch.v1": "api/batch/v1",
    "api.coordination.v1": "api/coordination/v1", "api.discovery.v1": "api/discovery/v1",
    "api.networking.v1": "api/networking/v1", "api.events.v1": "api/events/v1",
    "api.autoscaling.v1": "api/autoscaling/v1", "api.autoscaling.v2": "api/autoscaling/v2",
    "api.certificates.v1": "api/certificates/v1", "api.policy.v1": "api/policy/v1", "api.rbac.v1": "api/rbac/v1",
    "api.storage.v1": "api/storage/v1", "api.admissionregistration.v1": "api/admissionregistration/v1",
    "api.scheduling.v1": "api/scheduling/v1", "api.node.v1": "api/node/v1", "api.resource.v1": "api/resource/v1",
    "api.flowcontrol.v1": "api/flowcontrol/v1",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1": "apiextensions-apiserver/pkg/apis/apiextensions/v1",
    "kube_aggregator.pkg.apis.apiregistration.v1": "kube-aggregator/pkg/apis/apiregistration/v1",
    "apimachinery.pkg.apis.meta.v1": "apimachinery/pkg/apis/meta/v1", "apimachinery.pkg.runtime": "apimachinery/pkg/runtime",
    "apimachinery.pkg.api.resource": "apimachinery/pkg/api/resource", "apimachinery.pkg.util.intstr": "apimachinery/pkg/util/intstr",
}
SCALARS = ("string", "bytes", "int32", "int64", "bool", "double")


def n(s):
    """A name compared as schema.rs compares it: without case, `_`, `-` and `$` (`x-kubernetes-list-type`, `$ref`)."""
    return re.sub(r"[_$-]", "", s).lower()


def main():
    src, verbose = os.path.join(sys.argv[1], "staging/src/k8s.io"), "-v" in sys.argv
    schema, cur = {}, None
    for line in open(os.path.join(HERE, "schema.txt")):
        if line.startswith("M "):
            cur = n(line[2:].strip())
            schema[cur] = {}
        elif cur and line.strip() and not line.startswith("#"):
            tag, name, kind = line.split()
            schema[cur][int(tag)] = (n(name), n(kind))
    proto, gotypes, named = {}, {}, set()
    for pkg, d in PACKAGES.items():
        text = re.sub(r"//.*", "", open(os.path.join(src, d, "generated.proto")).read())
        for m in re.finditer(r"\nmessage (\w+) \{(.*?)\n\}", text, re.S):
            fields = {}
            for rep, ty, mk, mv, name, tag in re.findall(r"(optional|repeated)?\s*(map<\s*(\S+?),\s*(\S+?)>|\S+)\s+(\w+)\s*=\s*(\d+)", m.group(2)):
                ref = lambda t: t if t in SCALARS else t.lstrip(".").replace("k8s.io.", "") if "." in t else pkg + "." + t
                kind = "map:%s:%s" % (ref(mk), ref(mv)) if mk else ref(ty) + ("*" if rep == "repeated" else "")
                fields[int(tag)] = (n(name), n(kind))
            proto[n(pkg + "." + m.group(1))] = fields
        for f in os.listdir(os.path.join(src, d)):
            if f.endswith(".go") and not f.endswith("_test.go") and not f.startswith(("generated", "zz_")):
                text = open(os.path.join(src, d, f)).read()
                named |= set(re.findall(r"\ntype (\w+) (?:string|int32|int64|bool)\n", text))
                for m in re.finditer(r"\ntype (\w+) struct \{(.*?)\n\}", text, re.S):
                    gotypes[n(pkg + "." + m.group(1))] = re.findall(r'\n\s*\w+\s+(\S+)\s+`json:"([^"]*)" protobuf:', m.group(2))
    bad = 0
    for msg, fields in sorted(schema.items()):
        if proto.get(msg) != fields:
            bad += 1
            print("schema.txt %s: %s, generated.proto: %s" % (msg, sorted(fields.items()), sorted(proto.get(msg, {}).items())))
    facts = [(n(w[1]), {n(f) for f in w[2:]}) for w in (l.split() for l in open(os.path.join(HERE, "go.txt"))) if len(w) > 2 and w[0] == "always"]
    for msg in sorted(schema):
        have = set().union(*[fs for m, fs in facts if msg == m or msg.endswith("." + m)])
        want, plain = set(), set()
        for ty, tag in gotypes.get(msg, []):
            name, *opts = tag.split(",")
            if "omitzero" in opts or ty in ("string", "bool", "int32", "int64", "types.UID") or ty in named:
                (want if {"omitempty", "omitzero"} & set(opts) else plain).add(n(name))
        if want - have:
            bad += 1
            print("go.txt lacks: always %s %s" % (msg, " ".join(sorted(want - have))))
        if verbose and have - want:
            print("go.txt also: %s %s%s" % (msg, " ".join(sorted(have - want)), "" if have - want <= plain else " (not a non-pointer scalar!)"))
    sys.exit(1 if bad else 0)


main()

#!/usr/bin/env bash
# Captures the CBOR answers (and the JSON answer to the same request, taken
# right after it) of a real kube-apiserver into this directory. Usage:
#   KUBECONFIG=/opt/realapi/kubeconfig kubectl apply -f objects.yaml && kubectl create -f objects-2.yaml
#   (plus the node status patch in README.md), then ./capture.sh
# Each body F is exactly the response body; F.meta holds the request line,
# the Accept sent, the status line and the response headers.
set -euo pipefail
API=${API:-https://127.0.0.1:6443}
CURL=(curl -sS -A bench --cacert "${CACERT:-/opt/realapi/pki/ca.crt}" -H "Authorization: Bearer ${TOKEN:-kreal-admin-token}")
cd "$(dirname "$0")"

# get NAME ACCEPT PATH [curl args...]
get() {
  local name=$1 accept=$2 path=$3; shift 3
  "${CURL[@]}" "$@" -H "Accept: $accept" -D "$name.meta.tmp" -o "$name" "$API$path"
  { echo "> GET $path"; echo "> Accept: $accept"; grep -iv '^date:\|^audit-id:\|^x-kubernetes-pf' "$name.meta.tmp" | tr -d '\r' | sed '/^$/d; s/^/< /'; } > "$name.meta"
  rm "$name.meta.tmp"
}

CBOR=application/cbor
JSON=application/json
META_CBOR="application/cbor;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
META_JSON="application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
METALIST_CBOR="application/cbor;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METALIST_JSON="application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
TABLE_CBOR="application/cbor;as=Table;v=v1;g=meta.k8s.io"
NS=/api/v1/namespaces/cbor-ref

# name  path (objects: GET, then the list of the same resource)
objects=(
  configmap "$NS/configmaps/cm-binary"
  secret "$NS/secrets/secret-data"
  service "$NS/services/svc"
  node /api/v1/nodes/cbor-node-1
  deployment /apis/apps/v1/namespaces/cbor-ref/deployments/web
  pod "$NS/pods/pod-a"
  lease /apis/coordination.k8s.io/v1/namespaces/cbor-ref/leases/lease-a
  event "$NS/events/pod-a.evt1"
  event-events.k8s.io /apis/events.k8s.io/v1/namespaces/cbor-ref/events/pod-a.evt2
  gadget /apis/cbor.kache.dev/v1/namespaces/cbor-ref/gadgets/g1
  gadget-float /apis/cbor.kache.dev/v1/namespaces/cbor-ref/gadgets/g2
  gadget-no-integers /apis/cbor.kache.dev/v1/namespaces/cbor-ref/gadgets/g3
)
for ((i = 0; i < ${#objects[@]}; i += 2)); do
  n=${objects[i]} p=${objects[i+1]}
  get "$n-get.cbor" $CBOR "$p"
  get "$n-get.json" $JSON "$p"
  get "$n-get-metadata.cbor" "$META_CBOR" "$p"
  get "$n-get-metadata.json" "$META_JSON" "$p"
done

# Lists: a JSON list for its revision, then the JSON and the CBOR list at that
# revision (other clients move the revision between two consistent reads; and
# a list at an exact revision is the watch cache's, whose continue tokens
# differ from etcd's).
rv() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["resourceVersion"])' "$1"; }
last_rv() { grep -o '"resourceVersion":"[0-9]*"' "$1" | tail -1 | grep -o '[0-9]*'; }
pair() { # name accept-json accept-cbor path (without query) [query]
  local name=$1 aj=$2 ac=$3 path=$4 q=${5:+$5&}
  get "$name.json" "$aj" "$path?${5:-}"
  local at="$path?${q}resourceVersion=$(rv "$name.json")&resourceVersionMatch=Exact"
  get "$name.json" "$aj" "$at"
  get "$name.cbor" "$ac" "$at"
}
pair configmaps-list $JSON $CBOR "$NS/configmaps"
pair configmaps-list-metadata "$METALIST_JSON" "$METALIST_CBOR" "$NS/configmaps"
pair pods-list-page $JSON $CBOR /api/v1/namespaces/perf/pods limit=2
pair pods-list-empty $JSON $CBOR /api/v1/namespaces/cbor-ref/persistentvolumeclaims
pair gadgets-list $JSON $CBOR /apis/cbor.kache.dev/v1/namespaces/cbor-ref/gadgets
pair gadgets-list-empty $JSON $CBOR /apis/cbor.kache.dev/v1/namespaces/default/gadgets
pair events-list $JSON $CBOR "$NS/events"

# Tables in CBOR.
get pods-table.cbor "$TABLE_CBOR" "$NS/pods"
get gadgets-table.cbor "$TABLE_CBOR" /apis/cbor.kache.dev/v1/namespaces/cbor-ref/gadgets

# Status errors.
get configmaps-list-406.json text/html "$NS/configmaps"
get configmap-404.cbor $CBOR "$NS/configmaps/missing"
get configmaps-410.cbor $CBOR "$NS/configmaps?watch=1&resourceVersion=1"
get configmaps-list-410.cbor $CBOR "$NS/configmaps?limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Miwic3RhcnQiOiJ4In0"

# Watch streams: CBOR is asked for as application/cbor (application/cbor-seq
# gets 406) and answered as application/cbor-seq. The JSON of the same watch
# is taken again until its initial-events-end bookmark has the CBOR one's
# revision.
WATCH="watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2"
get watch-accept-cbor-seq.json application/cbor-seq "$NS/configmaps?$WATCH"
for try in 1 2 3 4 5 6; do
  get configmaps-watch-initial.cbor-seq $CBOR "$NS/configmaps?$WATCH"
  get configmaps-watch-initial.json $JSON "$NS/configmaps?$WATCH"
  [ "$(grep -ao 'resourceVersion.[0-9]*' configmaps-watch-initial.cbor-seq | tail -1 | grep -o '[0-9]*$')" = "$(last_rv configmaps-watch-initial.json)" ] && break
done
get configmaps-watch-metadata.cbor-seq "application/cbor;as=PartialObjectMetadata;g=meta.k8s.io;v=v1" "$NS/configmaps?$WATCH"
get gadgets-watch-initial.cbor-seq $CBOR "/apis/cbor.kache.dev/v1/namespaces/cbor-ref/gadgets?$WATCH"

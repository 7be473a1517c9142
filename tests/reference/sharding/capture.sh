#!/usr/bin/env bash
# Captures sharded lists and watches (KEP-5866) from a real kube-apiserver
# v1.36 started with --feature-gates=ShardedListAndWatch=true, for the
# objects of objects.yaml plus the pods and configmaps created below.
# Usage: APISERVER=https://127.0.0.1:6443 CA=ca.crt TOKEN=... ./capture.sh
set -euo pipefail
cd "$(dirname "$0")"
: "${APISERVER:=https://127.0.0.1:6443}" "${CA:=/opt/realapi/pki/ca.crt}" "${TOKEN:=kreal-admin-token}"
NS=shard-ref
HALF="shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
UPPER="shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
TWO="shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || shardRange(object.metadata.uid,'0xc000000000000000','0x10000000000000000')"
BYNS="shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')"

# cap FILE NOTE ACCEPT PATH [name=value ...]: one request, written as
# the request line, "# NOTE", "--- STATUS", content-type, a blank line, the body.
cap() {
  local file=$1 note=$2 accept=$3 path=$4; shift 4
  local q
  q=$(python3 -c 'import sys, urllib.parse as u; q = u.urlencode([tuple(a.split("=", 1)) for a in sys.argv[2:]]); print(sys.argv[1] + ("?" + q if q else ""))' "$path" "$@")
  local tmp; tmp=$(mktemp -d)
  curl -sS -A bench --cacert "$CA" -H "Authorization: Bearer $TOKEN" -H "Accept: $accept" \
    --max-time 3 -D "$tmp/h" -o "$tmp/b" "$APISERVER$q" || true
  {
    echo "GET $q"
    echo "# $note"
    echo "--- $(head -1 "$tmp/h" | awk '{print $2}')"
    grep -i '^content-type:' "$tmp/h" | tr -d '\r' | tr 'A-Z' 'a-z'
    echo
    cat "$tmp/b"
  } > "$file"
  rm -r "$tmp"
}

J=application/json
P=application/vnd.kubernetes.protobuf
PODS=/api/v1/namespaces/$NS/pods
CMS=/api/v1/namespaces/$NS/configmaps
W=/apis/shard.kache.dev/v1/namespaces/$NS/widgets

cap list-pods-all.txt "no shard selector: the whole namespace" $J $PODS
cap list-pods-lower.txt "lower half of the uid hash range" $J $PODS "shardSelector=$HALF"
cap list-pods-upper.txt "upper half, end 2^64" $J $PODS "shardSelector=$UPPER"
cap list-pods-or.txt "two ranges joined by ||, spaces and quotes normalised in shardInfo" $J $PODS "shardSelector=$TWO"
cap list-pods-namespace.txt "hash of the namespace" $J $PODS "shardSelector=$BYNS"
cap list-pods-cluster-namespace.txt "cluster-wide, hash of the namespace, a page" $J /api/v1/pods "shardSelector=$BYNS" limit=3
cap list-pods-label.txt "with a label selector" $J $PODS "shardSelector=$HALF" labelSelector=tier=t1
cap list-pods-field.txt "with a field selector" $J $PODS "shardSelector=$HALF" fieldSelector=metadata.name!=pod-01
cap list-pods-paged-1.txt "a page: remainingItemCount counts the scope after the start, less limit" $J $PODS "shardSelector=$HALF" limit=2
c=$(sed -n '6,$p' list-pods-paged-1.txt | jq -r .metadata.continue)
cap list-pods-paged-2.txt "the next page" $J $PODS "shardSelector=$HALF" limit=2 "continue=$c"
cap list-pods-label-paged.txt "a page with a label selector: no remainingItemCount" $J $PODS "shardSelector=$HALF" labelSelector=app=web limit=2
cap list-pods-rv0.txt "resourceVersion=0" $J $PODS "shardSelector=$HALF" resourceVersion=0
cap list-pods-empty-selector.txt "an empty shardSelector is ignored: no shardInfo" $J $PODS "shardSelector="
cap list-pods-metadata.txt "metadata only" "$J;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1" $PODS "shardSelector=$HALF"
cap list-pods-table.txt "a Table" "$J;as=Table;v=v1;g=meta.k8s.io" $PODS "shardSelector=$HALF"
cap list-pods-protobuf.txt "protobuf: ListMeta field 5 is shardInfo" $P $PODS "shardSelector=$HALF"
cap list-configmaps.txt "configmaps" $J $CMS "shardSelector=$HALF"
cap list-widgets.txt "a custom resource" $J $W "shardSelector=$HALF"
cap list-widgets-paged-1.txt "a custom resource, a page" $J $W "shardSelector=$UPPER" limit=3
cap watch-pods-initial.txt "a watch-list of a shard" $J $PODS "shardSelector=$HALF" watch=1 sendInitialEvents=true resourceVersionMatch=NotOlderThan allowWatchBookmarks=true timeoutSeconds=1
cap watch-widgets-initial.txt "a watch-list of a shard of a custom resource" $J $W "shardSelector=$UPPER" watch=1 sendInitialEvents=true resourceVersionMatch=NotOlderThan allowWatchBookmarks=true timeoutSeconds=1
cap get-pod.txt "a GET ignores shardSelector" $J $PODS/pod-01 "shardSelector=$HALF"

# Malformed selectors: 500, "invalid shard selector: ...", no reason.
n=0
while IFS= read -r sel; do
  n=$((n + 1))
  cap "$(printf 'err-%02d.txt' $n)" "malformed" $J $PODS "shardSelector=$sel"
done <<'SELECTORS'
shardRange(object.metadata.uid, '0x0', '0x8000000000000000')
shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')
shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')
shardRange(object.metadata.uid, '0x0000000000000000')
shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')
shardRange(object.metadata.uid, '0x000000000000000G', '0x8000000000000000')
shardRange(object.metadata.uid, '0x00000000000000000', '0x8000000000000000')
shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')
shardRange(object.metadata.uid, '0x0000000000000000', '0x800000000000000A')
shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')
hash(object.metadata.uid)
shardRange(object.metadata.uid, 0, '0x8000000000000000')
shardRange(uid, '0x0000000000000000', '0x8000000000000000')
shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'
shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000000')
   
shardRange(object["metadata"].uid, '0x0000000000000000', '0x8000000000000000')
SELECTORS
cap watch-err.txt "a malformed selector on a watch" $J $PODS "shardSelector=shardRange(object.metadata.uid, '0x0', '0x1')" watch=1

#!/usr/bin/env bash
# Compares kache's CBOR answers with the real apiserver's, both put in
# canonical order (canonical.py: every map sorted by its encoded keys), for
# the objects of objects.yaml / objects-2.yaml. Start kache first, e.g.
#   kache serve --listen 127.0.0.1:18443 --kubeconfig /opt/realapi/kubeconfig \
#     --resources configmaps,secrets,services,deployments.apps,leases.coordination.k8s.io,events,events.events.k8s.io,nodes,gadgets.cbor.kache.dev
# and run this twice (the first CBOR request of each resource passes through
# while kache learns that the apiserver serves CBOR). Lists are compared at
# the revision kache lists (resourceVersionMatch=Exact), GETs at revision 0.
# Prints SAME or DIFF, the Content-Type, kache's/the apiserver's status, the Accept and the path.
set -euo pipefail
cd "$(dirname "$0")"
K=${KACHE:-http://127.0.0.1:18443}; A=${API:-https://127.0.0.1:6443}
T=$(mktemp -d)
AC=(curl -s -A bench --cacert "${CACERT:-/opt/realapi/pki/ca.crt}" -H "Authorization: Bearer ${TOKEN:-kreal-admin-token}")
NS=/api/v1/namespaces/cbor-ref
M1="application/cbor;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
ML="application/cbor;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
check() { # accept path [list]
  local sep; sep=$([[ $2 == *\?* ]] && echo '&' || echo '?')
  local q="${sep}resourceVersion=0"
  if [ -n "${3:-}" ]; then
    local rv; rv=$(curl -s "$K$2${sep}resourceVersion=0" -H "Accept: application/json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
    q="${sep}resourceVersion=$rv&resourceVersionMatch=Exact"
  fi
  curl -s -D $T/kh -H "Accept: $1" "$K$2$q" -o $T/k.cbor; "${AC[@]}" -D $T/ah -H "Accept: $1" "$A$2$q" -o $T/a.cbor
  local kc ac; kc=$(python3 canonical.py $T/k.cbor | sha256sum | cut -c1-16); ac=$(python3 canonical.py $T/a.cbor | sha256sum | cut -c1-16)
  printf '%-5s %s %s %s %s\n' "$([ "$kc" = "$ac" ] && echo SAME || echo DIFF)" "$(grep -i '^content-type' $T/kh | tr -d '\r' | cut -d' ' -f2)" "$(head -1 $T/kh | cut -d' ' -f2)/$(head -1 $T/ah | cut -d' ' -f2)" "$1" "$2$q"
}
for p in "$NS/configmaps/cm-binary" "$NS/secrets/secret-data" "$NS/services/svc" /api/v1/nodes/cbor-node-1 /apis/apps/v1/namespaces/cbor-ref/deployments/web /apis/coordination.k8s.io/v1/namespaces/cbor-ref/leases/lease-a "$NS/events/pod-a.evt1" /apis/events.k8s.io/v1/namespaces/cbor-ref/events/pod-a.evt2 /apis/cbor.kache.dev/v1/namespaces/cbor-ref/gadgets/g3 /apis/cbor.kache.dev/v1/namespaces/cbor-ref/gadgets/g1; do
  check application/cbor "$p"; check "$M1" "$p"
done
for p in /api/v1/configmaps /api/v1/secrets /api/v1/services /apis/apps/v1/deployments /apis/coordination.k8s.io/v1/leases /api/v1/events /apis/events.k8s.io/v1/events /api/v1/nodes /apis/cbor.kache.dev/v1/gadgets "/apis/coordination.k8s.io/v1/leases?limit=7"; do
  check application/cbor "$p" list; check "$ML" "$p" list
done
check application/cbor "$NS/configmaps/missing"

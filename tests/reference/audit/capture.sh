#!/usr/bin/env bash
# usage: capture.sh BASE TARGET   (BASE: https://127.0.0.1:6443 or http://127.0.0.1:7800)
B=$1; T=$2; OUT=/tmp/realaudit/resp-$T; mkdir -p $OUT
UA="kache-audit-capture/1.0"
ADMIN="Bearer kreal-admin-token"; VIEWER="Bearer kreal-viewer-token"
TABLE="application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
req() { # name token method path [accept] [body]
  local name=$1 tok=$2 method=$3 path=$4 accept=${5:-application/json} body=${6:-}
  local args=(-s --cacert /opt/realapi/pki/ca.crt -o $OUT/$name.body -D $OUT/$name.headers -X $method -A "$UA" -H "Accept: $accept" -H "Audit-ID: cap-$name-$T")
  [[ -n $tok ]] && args+=(-H "Authorization: $tok")
  [[ -n $body ]] && args+=(-H "Content-Type: application/json" --data "$body")
  curl "${args[@]}" "$B$path"; echo "$name $(head -1 $OUT/$name.headers | tr -d '\r')"
}
req list-pods "$ADMIN" GET "/api/v1/pods?resourceVersion=0"
req list-pods-table "$ADMIN" GET "/api/v1/pods?limit=500&resourceVersion=0" "$TABLE"
req get-pod "$ADMIN" GET "/api/v1/namespaces/default/pods/p1?resourceVersion=0"
req get-pod-consistent "$ADMIN" GET "/api/v1/namespaces/default/pods/p1"
req get-configmap "$ADMIN" GET "/api/v1/namespaces/default/configmaps/c1?resourceVersion=0"
req list-secrets "$ADMIN" GET "/api/v1/namespaces/default/secrets?resourceVersion=0"
req watch-pods "$ADMIN" GET "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0&timeoutSeconds=2"
req viewer-allowed "$VIEWER" GET "/api/v1/namespaces/view-ok/pods?resourceVersion=0"
req viewer-forbidden "$VIEWER" GET "/api/v1/namespaces/default/pods?resourceVersion=0"
req viewer-forbidden-watch "$VIEWER" GET "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0"
req not-found "$ADMIN" GET "/api/v1/namespaces/default/pods/nope?resourceVersion=0"
req unauthenticated "Bearer not-a-token" GET "/api/v1/pods?resourceVersion=0"
req create-configmap "$ADMIN" POST "/api/v1/namespaces/default/configmaps" application/json "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"made-via-$T\"},\"data\":{\"k\":\"v\"}}"
imp() { # name: admin acting as viewer
  curl -s --cacert /opt/realapi/pki/ca.crt -o $OUT/$1.body -D $OUT/$1.headers -A "$UA" -H "Accept: application/json" -H "Audit-ID: cap-$1-$T" -H "Authorization: $ADMIN" -H "Impersonate-User: viewer" "$B$2"; echo "$1 $(head -1 $OUT/$1.headers | tr -d '\r')"
}
imp impersonated "/api/v1/namespaces/view-ok/pods?resourceVersion=0"

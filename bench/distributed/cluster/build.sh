#!/bin/bash
# Builds Kubernetes $KV (v1.34.4) from the Go module proxy's zip of k8s.io/kubernetes into
# $K8S_BIN: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl.
# About 6 minutes on 2 cores (kube-apiserver alone ~4). Skips binaries already there.
set -euo pipefail
. "$(dirname "$0")/env.sh"
command -v go >/dev/null || { echo "build.sh: no go toolchain (https://go.dev/dl, 1.24 or later)" >&2; exit 1; }
SV=v0.${KV#v1.}   # the published k8s.io/* staging modules: v0.34.4
COMPONENTS="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"
missing=""; for c in $COMPONENTS; do [ -x "$K8S_BIN/$c" ] || missing="$missing $c"; done
[ -z "$missing" ] && { echo "build.sh: all binaries in $K8S_BIN"; exit 0; }
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0
go mod download "k8s.io/kubernetes@$KV"
SRC=$K8S_DIR/src
rm -rf "$SRC"; mkdir -p "$SRC" "$K8S_BIN"
cp -r "$(go env GOMODCACHE)/k8s.io/kubernetes@$KV/." "$SRC/"; chmod -R u+w "$SRC"
cd "$SRC"
# The zip's go.mod points k8s.io/X at ./staging/src/k8s.io/X, which the zip lacks:
# use the published k8s.io/X@$SV instead. No other patch is needed.
sed -i -E "s#^(\s*k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+#\1 => \1 $SV#" go.mod
for c in $missing; do
  s=$(date +%s)
  nice -n 19 go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KV -X k8s.io/client-go/pkg/version.gitVersion=$KV" -o "$K8S_BIN/$c" "./cmd/$c"
  echo "build.sh: $c built in $(( $(date +%s) - s ))s"
done

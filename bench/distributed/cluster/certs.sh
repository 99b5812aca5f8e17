#!/bin/bash
# A CA (kept), the apiserver's serving cert, the service-account key pair, client certs for
# admin (system:masters), the controller-manager, the scheduler and the kubelet (also its
# serving cert), and their kubeconfigs in $K8S_DIR. Leaf certs are remade on every run.
set -euo pipefail
. "$(dirname "$0")/env.sh"
P=$K8S_DIR/pki; mkdir -p "$P"; cd "$P"
q() { "$@" 2>/dev/null; }
[ -f ca.key ] || { q openssl genrsa -out ca.key 2048; openssl req -x509 -new -key ca.key -subj /CN=loadlab-k8s-ca -days 3650 -out ca.crt; }
# cert NAME SUBJECT [SANS]: a client cert, or a client+server cert when SANS are given.
cert() {
  q openssl genrsa -out "$1.key" 2048
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
  if [ -n "${3:-}" ]; then printf "subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n" "$3" > "$1.ext"
  else printf "extendedKeyUsage=clientAuth\n" > "$1.ext"; fi
  q openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile "$1.ext" -out "$1.crt"
}
cert apiserver /CN=kube-apiserver "IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin "/O=system:masters/CN=admin"
cert kcm /CN=system:kube-controller-manager
cert sched /CN=system:kube-scheduler
cert kubelet "/O=system:nodes/CN=system:node:$NODE" "IP:127.0.0.1,DNS:localhost,DNS:$NODE"
[ -f sa.key ] || { q openssl genrsa -out sa.key 2048; q openssl rsa -in sa.key -pubout -out sa.pub; }
# kubeconfig NAME CERT: $K8S_DIR/NAME.kubeconfig for the user of CERT.
kubeconfig() {
  local K="$K8S_BIN/kubectl --kubeconfig=$K8S_DIR/$1.kubeconfig"
  $K config set-cluster local --server=https://127.0.0.1:6443 --certificate-authority="$P/ca.crt" --embed-certs >/dev/null
  $K config set-credentials "$1" --client-certificate="$P/$2.crt" --client-key="$P/$2.key" --embed-certs >/dev/null
  $K config set-context local --cluster=local --user="$1" >/dev/null
  $K config use-context local >/dev/null
}
kubeconfig admin admin; kubeconfig kcm kcm; kubeconfig sched sched; kubeconfig kubelet kubelet
echo "certs.sh: pki and kubeconfigs in $K8S_DIR"

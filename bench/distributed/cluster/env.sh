# Sourced by the scripts here: where the single-node cluster keeps its state.
#   K8S_DIR  state: pki, kubeconfigs, etcd data, containerd root/state, logs, pids
#            (default bench/out/k8s, which git ignores)
#   K8S_BIN  kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl
#            (default $K8S_DIR/bin; build.sh builds them there)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
K8S_DIR=${K8S_DIR:-$REPO/bench/out/k8s}
mkdir -p "$K8S_DIR"
K8S_DIR=$(cd "$K8S_DIR" && pwd)
K8S_BIN=${K8S_BIN:-$K8S_DIR/bin}
KV=${KV:-v1.34.4}
# Not private ranges: the benchmark range 198.18.0.0/15 (RFC 2544).
POD_SUBNET=198.18.0.0/24
SERVICE_RANGE=198.18.1.0/24
SERVICE_IP=198.18.1.1   # the `kubernetes` Service's address, first of SERVICE_RANGE
DNS_IP=198.18.1.10      # kubelet's clusterDNS; nothing answers there (no CoreDNS)
NODE=$(hostname | tr 'A-Z' 'a-z')
SOCK=$K8S_DIR/run/containerd.sock
KUBECTL="$K8S_BIN/kubectl --kubeconfig $K8S_DIR/admin.kubeconfig"
CTR="ctr --address $SOCK -n k8s.io"
export K8S_DIR K8S_BIN

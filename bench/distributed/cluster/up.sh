#!/bin/bash
# Starts a single-node Kubernetes cluster on this machine, all state in $K8S_DIR:
# etcd, kube-apiserver (127.0.0.1:6443), kube-controller-manager, kube-scheduler,
# containerd (its own socket, root and state), and a kubelet whose node uses a bridge CNI
# (cni0, $POD_SUBNET). Idempotent: what runs already is left running. Waits for the node
# to be Ready. admin's kubeconfig: $K8S_DIR/admin.kubeconfig. Stop it all with down.sh.
set -euo pipefail
. "$(dirname "$0")/env.sh"
t0=$(date +%s%N)
step() { local ds=$(( ($(date +%s%N) - t0) / 100000000 )); printf 'up.sh: %-30s %4d.%ds\n' "$1" $((ds / 10)) $((ds % 10)); }

# Prerequisites, all named at once.
need=""
[ "$(id -u)" = 0 ] || need="$need\n  root (the kubelet and containerd mount, make cgroups and network namespaces)"
for pair in etcd:etcd-server containerd:containerd ctr:containerd /usr/sbin/runc:runc \
            /usr/lib/cni/bridge:containernetworking-plugins openssl:openssl gcc:gcc \
            python3:python3 ip:iproute2; do
  cmd=${pair%%:*}; pkg=${pair#*:}
  if [ "${cmd#/}" != "$cmd" ]; then [ -x "$cmd" ] || need="$need\n  $cmd (apt-get install $pkg)"
  else command -v "$cmd" >/dev/null || need="$need\n  $cmd (apt-get install $pkg)"; fi
done
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
  [ -x "$K8S_BIN/$c" ] || { need="$need\n  $K8S_BIN/$c (run $HERE/build.sh: needs the go toolchain, ~6 min)"; break; }
done
[ -z "$need" ] || { printf "up.sh: missing:$need\n" >&2; exit 1; }

mkdir -p "$K8S_DIR"/{run,log,etcd-data,containerd/root,containerd/state,cni/net.d,cni/ipam,kubelet-root,manifests,img}
cd "$K8S_DIR"
alive() { [ -f "run/$1.pid" ] && kill -0 "$(cat "run/$1.pid")" 2>/dev/null; }
# start NAME CMD...: in the background at low priority, logging to log/NAME.log.
start() { local n=$1; shift; alive "$n" && return 0; nohup nice -n 19 "$@" > "log/$n.log" 2>&1 & echo $! > "run/$n.pid"; }

[ -f pki/ca.crt ] && [ -f admin.kubeconfig ] || "$HERE/certs.sh" >/dev/null
step "certificates"

start etcd etcd --name k8s --data-dir "$K8S_DIR/etcd-data" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster k8s=http://127.0.0.1:2380

cat > cni/net.d/10-bridge.conflist <<JSON
{"cniVersion":"0.4.0","name":"loadlab-pods","plugins":[
 {"type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":false,"hairpinMode":true,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"$POD_SUBNET"}]],"routes":[{"dst":"0.0.0.0/0"}],"dataDir":"$K8S_DIR/cni/ipam"}}]}
JSON
echo '{"cniVersion":"0.4.0","name":"lo","type":"loopback"}' > cni/net.d/99-loopback.conf
# containerd: only what differs from its defaults. The runc wrapper: see runc-wrap.
cat > containerd/config.toml <<TOML
version = 2
root = "$K8S_DIR/containerd/root"
state = "$K8S_DIR/containerd/state"
[grpc]
  address = "$SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  disable_hugetlb_controller = true
  tolerate_missing_hugetlb_controller = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$K8S_DIR/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$HERE/runc-wrap"
        SystemdCgroup = false
TOML
start containerd containerd --config "$K8S_DIR/containerd/config.toml"
until $CTR version >/dev/null 2>&1; do sleep 0.2; done
step "etcd and containerd"

# The pod sandbox image, from a static pause built here: no registry is reachable.
if ! $CTR image ls -q | grep -qx registry.k8s.io/pause:3.10; then
  [ -x img/pause ] || gcc -static -O2 -o img/pause "$HERE/pause.c"
  python3 "$HERE/mkimage.py" img/pause.tar registry.k8s.io/pause:3.10 --file img/pause:/pause:755 --entrypoint /pause
  $CTR image import img/pause.tar >/dev/null
fi
step "pause image"

start apiserver "$K8S_BIN/kube-apiserver" \
  --etcd-servers=http://127.0.0.1:2379 \
  --bind-address=127.0.0.1 --secure-port=6443 --advertise-address=127.0.0.1 \
  --tls-cert-file=pki/apiserver.crt --tls-private-key-file=pki/apiserver.key \
  --client-ca-file=pki/ca.crt \
  --kubelet-client-certificate=pki/admin.crt --kubelet-client-key=pki/admin.key \
  --kubelet-certificate-authority=pki/ca.crt \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file=pki/sa.pub --service-account-signing-key-file=pki/sa.key \
  --service-cluster-ip-range=$SERVICE_RANGE --allow-privileged=true \
  --endpoint-reconciler-type=none
# (a loopback advertise address makes the default endpoint reconciler fail every 10 s)
until $KUBECTL get --raw /readyz >/dev/null 2>&1; do sleep 0.5; done
step "kube-apiserver ready"

start kcm "$K8S_BIN/kube-controller-manager" --kubeconfig=kcm.kubeconfig \
  --authentication-kubeconfig=kcm.kubeconfig --authorization-kubeconfig=kcm.kubeconfig \
  --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false \
  --use-service-account-credentials=true \
  --service-account-private-key-file=pki/sa.key --root-ca-file=pki/ca.crt \
  --cluster-signing-cert-file=pki/ca.crt --cluster-signing-key-file=pki/ca.key \
  --service-cluster-ip-range=$SERVICE_RANGE --allocate-node-cidrs=false \
  '--controllers=*,-cloud-node-lifecycle'
start sched "$K8S_BIN/kube-scheduler" --kubeconfig=sched.kubeconfig \
  --authentication-kubeconfig=sched.kubeconfig --authorization-kubeconfig=sched.kubeconfig \
  --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false

# cgroup v1 (this kernel's controllers are all v1): 1.34 still runs on it with
# failCgroupV1: false; 1.35 refuses it by default. The eviction thresholds are low and image
# GC is off so that the imported images (no registry to pull them again) are never removed.
cat > kubelet-config.yaml <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $K8S_DIR/pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $K8S_DIR/pki/kubelet.crt
tlsPrivateKeyFile: $K8S_DIR/pki/kubelet.key
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://$SOCK
staticPodPath: $K8S_DIR/manifests
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
resolvConf: /etc/resolv.conf
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
protectKernelDefaults: false
makeIPTablesUtilChains: false
YAML
start kubelet "$K8S_BIN/kubelet" --config=kubelet-config.yaml --kubeconfig=kubelet.kubeconfig \
  --root-dir="$K8S_DIR/kubelet-root" --hostname-override="$NODE" --v=1
until $KUBECTL get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True; do
  alive kubelet || { echo "up.sh: the kubelet exited; see $K8S_DIR/log/kubelet.log" >&2; tail -5 log/kubelet.log >&2; exit 1; }
  sleep 0.5
done
# Pods may only run once the default service account exists.
until $KUBECTL get serviceaccount default >/dev/null 2>&1; do sleep 0.5; done
step "node $NODE Ready"
echo "up.sh: export KUBECONFIG=$K8S_DIR/admin.kubeconfig"

#!/bin/bash
# Stops everything up.sh started and leaves nothing behind: the pods (so their containers,
# shims, network namespaces and mounts go), the processes (by their pid files), shims left
# on our containerd socket, mounts under $K8S_DIR, the cni0 bridge, the kubepods cgroups.
# Keeps $K8S_DIR's pki, etcd data and images, so the next up.sh is quick.
. "$(dirname "$0")/env.sh"
cd "$K8S_DIR" || exit 0
alive() { [ -f "run/$1.pid" ] && kill -0 "$(cat "run/$1.pid")" 2>/dev/null; }
stop() { # NAME: SIGTERM, then SIGKILL after 10 s
  alive "$1" || { rm -f "run/$1.pid"; return 0; }
  local pid; pid=$(cat "run/$1.pid"); kill "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null; rm -f "run/$1.pid"
}
if alive apiserver; then
  $KUBECTL delete jobs,pods --all -A --wait=true --timeout=60s >/dev/null 2>&1
fi
for p in kubelet kcm sched apiserver; do stop $p; done
if alive containerd; then
  # What the kubelet did not stop: pod sandboxes and containers, by force.
  for t in $($CTR task ls -q 2>/dev/null); do $CTR task kill -s SIGKILL "$t" 2>/dev/null; done
  sleep 1
  for t in $($CTR task ls -q 2>/dev/null); do $CTR task delete -f "$t" >/dev/null 2>&1; done
  for c in $($CTR container ls -q 2>/dev/null); do $CTR container delete "$c" >/dev/null 2>&1; done
fi
stop containerd; stop etcd
# Shims outlive containerd (they are reparented): only those on our socket.
for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $SOCK"); do kill "$pid"; done
sleep 0.5
grep " $K8S_DIR/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l
# The pods' network namespaces containerd mounted (/run/netns/cni-*), if any are left.
for ns in $(awk '$3=="nsfs" && $2 ~ /\/netns\/cni-/ {print $2}' /proc/mounts); do umount -l "$ns"; rm -f "$ns"; done
ip link del cni0 2>/dev/null
rm -rf cni/ipam/*
# The kubelet's cgroups (empty once the pods are gone), deepest first.
for ctl in /sys/fs/cgroup/*/; do
  [ -d "${ctl}kubepods" ] && find "${ctl}kubepods" -depth -type d -exec rmdir {} + 2>/dev/null
done
echo "down.sh: stopped"

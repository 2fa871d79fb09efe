#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The test cluster's one node, run inside the cgroup v2 VM (vm-run --net):
# containerd + runc + CNI bridge, kubelet (cgroupfs driver), kube-proxy and
# CoreDNS as node processes, all joined to the control plane on the host at
# https://10.0.2.2:PORT (the host's loopback through qemu's user network).
# Then it runs CMD (the scenarios) and stops everything.
#
#   node.sh RUNDIR BINDIR IMAGEDIR -- CMD [ARGS...]
#
# /var/lib/kubelet must be the VM's virtio disk (the disk ioqos manages by
# default); /var/lib/containerd is a tmpfs. Logs: RUNDIR/logs/node-*.log.
set -euo pipefail
die() { echo "node: $*" >&2; exit 1; }
log() { echo "node: $(date +%T) $*" >&2; }
[ "${IOQOS_E2E_VM:-}" = 1 ] || die "runs inside the VM (tests/cluster/run.sh starts it)"
[ $# -ge 5 ] && [ "$4" = -- ] || die "usage: node.sh RUNDIR BINDIR IMAGEDIR -- CMD [ARGS...]"
RUN=$1 BIN=$2 IMAGES=$3; shift 4
CNI=$(dirname "$BIN")/cni
PKI=$RUN/pki
NODE=${IOQOS_CLUSTER_NODE:-ioqos-e2e}
N=$RUN/node
mkdir -p "$N" "$RUN/logs"
export PATH=$BIN:$PATH KUBECONFIG=$PKI/admin-guest.kubeconfig
mountpoint -q /var/lib/kubelet || die "/var/lib/kubelet is not a mount (vm-run --virtio-disk ...:mount=/var/lib/kubelet)"
hostname "$NODE"

# ---- kernel: bridge netfilter for Services, forwarding for pod traffic -------------
for m in overlay br_netfilter veth bridge nf_conntrack iptable_nat iptable_filter \
         xt_MASQUERADE xt_conntrack xt_comment xt_mark xt_addrtype nf_nat; do
  modprobe "$m" || die "modprobe $m failed"
done
sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 \
  net.ipv4.conf.all.route_localnet=1 || die "sysctl failed"
mkdir -p /var/lib/containerd /etc/cni/net.d /var/lib/ioqos /var/log/pods
mount -t tmpfs -o size=3g tmpfs /var/lib/containerd || die "cannot mount tmpfs on /var/lib/containerd"
# the pods' network: one bridge, masqueraded towards the host (10.0.2.2)
cat > /etc/cni/net.d/10-ioqos-test.conflist <<JSON
{"cniVersion": "1.0.0", "name": "ioqos-test", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
# no DNS server outside the cluster; pods with dnsPolicy Default get none
: > "$N/resolv.conf"

PIDS=()
launch() {  # name cmd...
  local name=$1; shift
  "$@" >"$RUN/logs/node-$name.log" 2>&1 &
  PIDS+=($!)
  echo $! > "$N/$name.pid"
}
stop_all() {
  local p
  # the containers' logs live on the node only: keep them with the run's logs
  cp -r /var/log/pods "$RUN/logs/pods" 2>/dev/null || true
  # the kubelet may have been restarted by a scenario (pid file updated)
  [ -f "$N/kubelet.pid" ] && PIDS+=("$(cat "$N/kubelet.pid")")
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${PIDS[$i]}" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
}
trap stop_all EXIT
wait_for() {  # what seconds cmd...
  local what=$1 secs=$2 i; shift 2
  for ((i = 0; i < secs * 2; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  die "$what not ready after ${secs}s (logs: $RUN/logs)"
}

# ---- containerd --------------------------------------------------------------------
cat > "$N/containerd.toml" <<TOML
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "registry.k8s.io/pause:3.10.2"
[plugins.'io.containerd.cri.v1.runtime']
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$BIN/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$CNI"]
    conf_dir = "/etc/cni/net.d"
TOML
log "starting containerd"
launch containerd containerd --config "$N/containerd.toml"
wait_for containerd 120 ctr --address /run/containerd/containerd.sock version
for img in "$IMAGES"/*.tar; do
  ctr -n k8s.io images import --no-unpack=false "$img" >/dev/null || die "ctr images import $img failed"
done
log "images: $(ctr -n k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"

# ---- kubelet -----------------------------------------------------------------------
cat > "$N/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
clusterDNS: [10.0.2.15]
clusterDomain: cluster.local
resolvConf: $N/resolv.conf
# TCG runs everything several times slower than a real machine
runtimeRequestTimeout: 10m
failSwapOn: false
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
YAML
log "starting kubelet"
KUBELET=("$BIN/kubelet" --config="$N/kubelet.yaml" --kubeconfig="$PKI/kubelet.kubeconfig"
         --hostname-override="$NODE" --node-ip=10.0.2.15 --root-dir=/var/lib/kubelet --v=2)
# the restart scenario relaunches the same command line
/usr/bin/python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "${KUBELET[@]}" > "$N/kubelet.argv"
launch kubelet "${KUBELET[@]}"

# ---- kube-proxy (Services, among them "kubernetes" -> 10.0.2.2) and CoreDNS ----------
cat > "$N/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $PKI/kube-proxy.kubeconfig}
hostnameOverride: $NODE
clusterCIDR: 10.88.0.0/16
mode: iptables
conntrack: {maxPerCore: 0}
YAML
launch kube-proxy kube-proxy --config="$N/kube-proxy.yaml" --v=1
cat > "$N/Corefile" <<COREFILE
.:53 {
    errors
    health 127.0.0.1:8080
    ready 127.0.0.1:8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $PKI/admin-guest.kubeconfig ioqos-test
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
}
COREFILE
launch coredns coredns -conf "$N/Corefile"

wait_for "node $NODE Ready" 300 sh -c "kubectl get node '$NODE' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
wait_for coredns 60 curl -sf http://127.0.0.1:8181/ready
log "node $NODE is Ready"
set +e
"$@"
rc=$?
set -e
log "scenarios exited $rc"
exit $rc

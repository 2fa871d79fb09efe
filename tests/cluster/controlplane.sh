#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The test cluster's control plane on the host, loopback only: etcd,
# kube-apiserver (TLS, Node+RBAC authorization, NodeRestriction, the
# ServiceAccount issuer), kube-controller-manager (quota, service-account
# and every other default controller), kube-scheduler (the default one).
# Flags follow upstream's hack/local-up-cluster.sh.
#
#   tests/cluster/controlplane.sh run RUNDIR BINDIR     (RUNDIR/pki from pki.sh)
#   tests/cluster/controlplane.sh start RUNDIR BINDIR
#   tests/cluster/controlplane.sh stop RUNDIR
#
# run: stays in the foreground once everything is up (RUNDIR/controlplane.ready
# appears), stops the components on SIGTERM/SIGINT and takes them with it when
# it is killed (each has a parent-death signal); tests start it in the
# background under `setpriv --pdeathsig KILL`, so nothing outlives them.
# start: the same, then returns, leaving the components running until stop.
#
# Logs: RUNDIR/logs/<component>.log. Ports, all on 127.0.0.1, from
# P=$IOQOS_CLUSTER_APISERVER_PORT (default 16443): apiserver P, etcd P+1 (client)
# and P+2 (peer), controller-manager P+3, scheduler P+4; so two clusters with
# different P can run side by side.
set -euo pipefail
die() { echo "controlplane: $*" >&2; exit 1; }
log() { echo "controlplane: $*" >&2; }
usage() { die "usage: controlplane.sh run|start RUNDIR BINDIR | stop RUNDIR"; }
[ $# -ge 2 ] || usage
CMD=$1 RUN=$(cd "$2" && pwd)
PORT=${IOQOS_CLUSTER_APISERVER_PORT:-16443}
ETCD_PORT=$((PORT + 1)) PEER_PORT=$((PORT + 2)) KCM_PORT=$((PORT + 3)) SCHED_PORT=$((PORT + 4))
PKI=$RUN/pki
mkdir -p "$RUN/logs"

stop() {
  local f pid
  for c in kube-scheduler kube-controller-manager kube-apiserver etcd; do
    f=$RUN/$c.pid
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}
if [ "$CMD" = stop ]; then stop; exit 0; fi
{ [ "$CMD" = start ] || [ "$CMD" = run ]; } && [ $# -eq 3 ] || usage
BIN=$3
rm -f "$RUN/controlplane.ready"
# the fixed loopback ports must be free: a control plane left running by an
# earlier run that was killed would answer instead
for p in "$PORT" "$ETCD_PORT" "$PEER_PORT" "$KCM_PORT" "$SCHED_PORT"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    die "127.0.0.1:$p is in use (another test cluster running? ss -ltnp sport = :$p)"
  fi
done
PDEATH=()
[ "$CMD" = run ] && PDEATH=(setpriv --pdeathsig KILL --)
[ -f "$PKI/ca.crt" ] || die "$PKI has no PKI (run pki.sh first)"

# launch NAME ARGS... : in the background, logged, pid recorded; dies with us
launch() {
  local name=$1; shift
  "${PDEATH[@]}" "$BIN/$name" "$@" >"$RUN/logs/$name.log" 2>&1 &
  echo $! > "$RUN/$name.pid"
}
# wait_for WHAT SECONDS CMD... : poll CMD until it succeeds
wait_for() {
  local what=$1 secs=$2 i; shift 2
  for ((i = 0; i < secs * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  log "$what not ready after ${secs}s; last log lines:"
  return 1
}
alive() { kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null || { tail -n 30 "$RUN/logs/$1.log" >&2; die "$1 exited"; }; }

ETCD=http://127.0.0.1:$ETCD_PORT
launch etcd --name ioqos-test --data-dir "$RUN/etcd" \
  --listen-client-urls "$ETCD" --advertise-client-urls "$ETCD" \
  --listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" \
  --initial-cluster "ioqos-test=http://127.0.0.1:$PEER_PORT" --unsafe-no-fsync --log-level warn
wait_for etcd 60 curl -sf "$ETCD/health" || { tail -n 30 "$RUN/logs/etcd.log" >&2; stop; die "etcd did not start"; }

# --advertise-address 10.0.2.2: the endpoint of Service "kubernetes", which pods
# in the VM node reach through kube-proxy and qemu's user network (10.0.2.2 is
# the host's loopback there); the apiserver itself listens on 127.0.0.1 only.
launch kube-apiserver \
  --bind-address=127.0.0.1 --secure-port="$PORT" --advertise-address=10.0.2.2 \
  --etcd-servers="$ETCD" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --client-ca-file="$PKI/ca.crt" \
  --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$PKI/ca.crt" \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
  --endpoint-reconciler-type=lease --profiling=false --v=1
wait_for kube-apiserver 120 curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
  "https://127.0.0.1:$PORT/readyz" || { tail -n 40 "$RUN/logs/kube-apiserver.log" >&2; stop; die "kube-apiserver did not become ready"; }

launch kube-controller-manager \
  --kubeconfig="$PKI/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$PKI/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$PKI/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --leader-elect=false \
  --use-service-account-credentials=true \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --controllers='*' --v=1
launch kube-scheduler \
  --kubeconfig="$PKI/scheduler.kubeconfig" \
  --authentication-kubeconfig="$PKI/scheduler.kubeconfig" \
  --authorization-kubeconfig="$PKI/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --leader-elect=false --v=1
sleep 1
alive kube-controller-manager
alive kube-scheduler
log "up: https://127.0.0.1:$PORT (logs in $RUN/logs)"
touch "$RUN/controlplane.ready"
[ "$CMD" = run ] || exit 0
trap 'stop; exit 0' TERM INT
# stay the components' parent; report one that exits on its own
while sleep 2; do
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
    kill -0 "$(cat "$RUN/$c.pid")" 2>/dev/null && continue
    log "$c exited; last log lines:"; tail -n 20 "$RUN/logs/$c.log" >&2
    stop; exit 1
  done
done

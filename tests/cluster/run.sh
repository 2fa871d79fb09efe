#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Real Kubernetes around ioqos: builds (or finds cached) the upstream
# components, starts the control plane on the host, boots the node in the
# cgroup v2 VM, installs ioqos from manifests/ as a user would and runs the
# scenarios (tests/cluster/scenarios.py) on the node.
#
#   tests/cluster/run.sh [-b BUILD_DIR] [-k] [SCENARIO...]
#
#   -b DIR   the CMake build dir with the ioqos binaries (default: build)
#   -k       keep the run directory (PKI, logs, state) even when all passed
#   SCENARIO run only these (names: scenarios.py --list); default all
#
# Exit: 0 all passed; 1 a scenario failed; 2 usage; 77 skipped
# (IOQOS_CLUSTER_SKIP=1 or IOQOS_E2E_SKIP=1). Logs of every component are
# in the run directory (printed), kept when anything failed.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=$ROOT/build KEEP=0
while getopts b:kh o; do
  case $o in
    b) BUILD=$(cd "$OPTARG" && pwd) ;;
    k) KEEP=1 ;;
    h) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ "${IOQOS_CLUSTER_SKIP:-0}" = 1 ] || [ "${IOQOS_E2E_SKIP:-0}" = 1 ]; then
  echo "cluster: skipped (IOQOS_CLUSTER_SKIP / IOQOS_E2E_SKIP)"; exit 77
fi
log() { echo "cluster: $(date +%T) $*" >&2; }
T0=$(date +%s)

BIN=$("$HERE/build-components.sh") || { echo "cluster: building the upstream components failed" >&2; exit 1; }
log "components: $BIN ($(( $(date +%s) - T0 )) s)"
# in use: build-components.sh does not remove a build while this lock is held
exec 8<"$(dirname "$BIN")/lock"
flock -s 8
# helm, for the scenario that moves the install to the chart (same cache and lock rules)
HELM=""
if [ $# = 0 ] || printf '%s\n' "$@" | grep -qx helm; then
  HELM=$("$ROOT/tests/manifests/helm/build-helm.sh" -q) || { echo "cluster: building helm failed" >&2; exit 1; }
  exec 7>>"${HELM%/helm}/lock"
  flock -s 7
fi
RUN=$(mktemp -d "${TMPDIR:-/tmp}/ioqos-cluster.XXXXXX")
chmod 755 "$RUN"
CP=""
cleanup() {
  local rc=$?
  if [ -n "$CP" ]; then
    kill -TERM "$CP" 2>/dev/null || true
    wait "$CP" 2>/dev/null || true
  fi
  if [ $rc -eq 0 ] && [ $KEEP = 0 ]; then
    rm -rf "$RUN"
  else
    log "run directory kept: $RUN (logs/: every component; node/: its configs)"
  fi
}
trap cleanup EXIT
"$HERE/images.sh" "$BUILD" "$BIN" "$RUN/images" >/dev/null
PORT=${IOQOS_CLUSTER_APISERVER_PORT:-16443}
"$HERE/pki.sh" "$RUN/pki" "https://127.0.0.1:$PORT" "https://10.0.2.2:$PORT" ioqos-e2e
# in the background, dying with this script (parent-death signal)
setpriv --pdeathsig KILL -- "$HERE/controlplane.sh" run "$RUN" "$BIN" &
CP=$!
while [ ! -e "$RUN/controlplane.ready" ]; do
  kill -0 "$CP" 2>/dev/null || { CP=""; echo "cluster: the control plane did not start" >&2; exit 1; }
  sleep 0.5
done
log "control plane up ($(( $(date +%s) - T0 )) s)"

# The node: 2 CPUs, memory for containerd's tmpfs and the pods, and the disk
# ioqos manages (the kubelet root): a virtio disk that qemu holds to
# 200 MiB/s, ext4.
# A guest kernel that locks up (vm-run exit 244: a soft lockup of 120 s; seen once under
# TCG, modprobe and coredns stuck on both vCPUs before the node registered) is booted once
# more; the scenarios then run against the same control plane (they create what they need
# and tolerate what an earlier attempt left).
for attempt in 1 2; do
  set +e
  # vm-run (and with it qemu) dies with this script too
  setpriv --pdeathsig KILL -- "$ROOT/tests/e2e/vm-run" --net --mem "${IOQOS_CLUSTER_VM_MEM:-6144}" --smp 2 \
    --timeout "${IOQOS_CLUSTER_TIMEOUT:-3000}" --share "$RUN" --share "$BUILD" \
    --virtio-disk kubelet:size=8G:bps=209715200:iops=51200:mkfs=ext4:mount=/var/lib/kubelet \
    --keep-log "$RUN/logs/vm-console.log" \
    -e IOQOS_CLUSTER_BUILD="$BUILD" -e IOQOS_CLUSTER_BIN="$BIN" -e IOQOS_CLUSTER_RUN="$RUN" -e IOQOS_HELM="$HELM" \
    -- "$HERE/node.sh" "$RUN" "$BIN" "$RUN/images" -- /usr/bin/python3 "$HERE/scenarios.py" "$@"
  rc=$?
  set -e
  [ $rc = 244 ] && [ $attempt = 1 ] || break
  log "the node's kernel locked up (vm-run exit 244; console kept as $RUN/logs/vm-console-lockup.log): booting it once more"
  cp "$RUN/logs/vm-console.log" "$RUN/logs/vm-console-lockup.log" 2>/dev/null || true
done
log "done in $(( $(date +%s) - T0 )) s, exit $rc"
exit $rc

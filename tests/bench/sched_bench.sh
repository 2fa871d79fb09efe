#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Scheduling benchmark (part of `make bench`): the real upstream kube-scheduler
# (v1.37.2, tests/cluster/build-components.sh) calling ioqos-scheduler-ext over
# mutual TLS, with N fake Nodes (no kubelet) on a control plane on the host
# (tests/cluster/controlplane.sh). Pods scheduled per second for (a) pods that
# request ioqos/bandwidth (filter + prioritize + bind through the extender) and
# (b) the same pods without ioqos resources, side by side in each round, with
# the extender's p99 filter/prioritize/bind latency from its own histogram.
# Two modes: stream (pods created as fast as the client can while the scheduler
# runs, like a burst of real pods) and backlog (pods created while the
# benchmark scheduler is SIGSTOPped, measured from its SIGCONT: the scheduler's
# own rate, not the client's creation rate).
# Prints a table, writes JSON (default bench-results/sched.json). The driver is
# tests/bench/sched_bench.py; nothing is asserted about timings.
#
#   tests/bench/sched_bench.sh [--build DIR] [--quick] [--nodes 100,1000]
#       [--pods 300] [--rounds 3] [--modes stream,backlog] [--warmup 30]
#       [--qps 1000] [--ext-threads 4] [--no-ext-bind] [--out FILE]
#       [--port 17443] [--timeout SECONDS] [--keep]
#
#   --build DIR    CMake build dir with scheduler-ext/ioqos-scheduler-ext (default build)
#   --quick        smoke check: 100 nodes, 60 pods, 1 round, warm-up 10 (~1-2 min)
#   --nodes LIST   fake node counts, comma-separated (default 100,1000)
#   --pods P       pods per run (default 300), created as fast as 8 client threads can
#   --rounds R     rounds per node count; each runs (a) and (b), order rotated (default 3)
#   --modes LIST   stream and/or backlog (default both)
#   --warmup W     pods of each kind scheduled, unmeasured, before the rounds (default 30)
#   --qps Q        the benchmark scheduler's clientConnection.qps (burst 2Q; default
#                  1000, so its client rate limit, 50 by default, is not what is measured)
#   --ext-threads N  the extender's --threads (default 4, as the shipped manifest)
#   --no-ext-bind  diagnosis: the extender filters and prioritizes but does not bind
#                  (no bindVerb; kube-scheduler's DefaultBinder binds (a) too)
#   --out FILE     JSON results (default bench-results/sched.json)
#   --port P       apiserver port; etcd P+1/P+2, controller-manager P+3, default
#                  scheduler P+4, extender P+7 (HTTPS) and P+8 (metrics), benchmark
#                  scheduler P+9 (default 17443: no clash with the cluster test's 16443)
#   --timeout S    bound on the whole benchmark (default 1800; --quick 600)
#   --keep         keep the run directory (PKI, logs) even when it passed
#
# Env: IOQOS_CLUSTER_SKIP=1 skips it (exit 0); IOQOS_CLUSTER_CACHE as build-components.sh.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=$ROOT/build NODES=100,1000 PODS=300 ROUNDS=3 WARMUP=30 QPS=1000 MODES=stream,backlog EXT_THREADS=4 EXTRA=()
OUT=$ROOT/bench-results/sched.json PORT=17443 TIMEOUT="" KEEP=0 QUICK=0
usage() { sed -n '17,41p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --nodes) NODES=$2; shift 2 ;;
    --pods) PODS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --qps) QPS=$2; shift 2 ;;
    --ext-threads) EXT_THREADS=$2; shift 2 ;;
    --no-ext-bind) EXTRA+=(--no-ext-bind); shift ;;
    --out) OUT=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "sched_bench: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
if [ "$QUICK" = 1 ]; then
  NODES=100 PODS=60 ROUNDS=1 WARMUP=10
  TIMEOUT=${TIMEOUT:-600}
fi
TIMEOUT=${TIMEOUT:-1800}
log() { echo "sched-bench: $(date +%T) $*" >&2; }
die() { echo "sched-bench: $*" >&2; exit 1; }
if [ "${IOQOS_CLUSTER_SKIP:-0}" = 1 ]; then
  echo "sched-bench: skipped (IOQOS_CLUSTER_SKIP=1)"; exit 0
fi
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || die "no build dir (make build first)"
EXT=$BUILD/scheduler-ext/ioqos-scheduler-ext
[ -x "$EXT" ] || die "$EXT not found (make build first)"
case $OUT in /*) ;; *) OUT=$(pwd)/$OUT ;; esac
T0=$(date +%s)

BIN=$("$ROOT/tests/cluster/build-components.sh" -q) || die "building the upstream components failed"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler; do
  [ -x "$BIN/$b" ] || die "$BIN/$b missing"
done
for p in "$PORT" $((PORT + 7)) $((PORT + 8)) $((PORT + 9)); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    die "127.0.0.1:$p is in use (another benchmark running? ss -ltnp sport = :$p)"
  fi
done

RUN=$(mktemp -d "${TMPDIR:-/tmp}/ioqos-sched-bench.XXXXXX")
CP="" PY=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$PY" ]; then kill -TERM "$PY" 2>/dev/null || true; wait "$PY" 2>/dev/null || true; fi
  if [ -n "$CP" ]; then kill -TERM "$CP" 2>/dev/null || true; wait "$CP" 2>/dev/null || true; fi
  if [ $rc -eq 0 ] && [ $KEEP = 0 ]; then
    rm -rf "$RUN"
  else
    log "run directory kept: $RUN (logs/: every component)"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "components: $BIN; run directory $RUN"
"$ROOT/tests/cluster/pki.sh" "$RUN/pki" "https://127.0.0.1:$PORT" "https://10.0.2.2:$PORT" ioqos-bench >/dev/null
"$ROOT/scripts/extender-certs.sh" -o "$RUN/extcerts" -i 127.0.0.1 -d 7 >/dev/null
# the control plane in the background, dying with this script (parent-death signal)
IOQOS_CLUSTER_APISERVER_PORT=$PORT setpriv --pdeathsig KILL -- \
  "$ROOT/tests/cluster/controlplane.sh" run "$RUN" "$BIN" 2>"$RUN/controlplane.log" &
CP=$!
while [ ! -e "$RUN/controlplane.ready" ]; do
  if ! kill -0 "$CP" 2>/dev/null; then
    CP=""
    cat "$RUN/controlplane.log" >&2
    die "the control plane did not start"
  fi
  sleep 0.5
done
log "control plane up on 127.0.0.1:$PORT ($(( $(date +%s) - T0 )) s)"

set +e
setpriv --pdeathsig KILL -- timeout --signal TERM --kill-after 30 "$TIMEOUT" \
  setpriv --pdeathsig KILL -- /usr/bin/python3 "$HERE/sched_bench.py" --rundir "$RUN" --pki "$RUN/pki" --certs "$RUN/extcerts" \
  --bin "$BIN" --extender "$EXT" --apiserver-port "$PORT" \
  --ext-port $((PORT + 7)) --ext-metrics-port $((PORT + 8)) --sched-port $((PORT + 9)) \
  --nodes "$NODES" --pods "$PODS" --rounds "$ROUNDS" --modes "$MODES" --warmup "$WARMUP" --qps "$QPS" --ext-threads "$EXT_THREADS" ${EXTRA[@]+"${EXTRA[@]}"} --out "$OUT" &
PY=$!
wait "$PY"
rc=$?
PY=""
set -e
if [ $rc -eq 124 ]; then
  log "timed out after $TIMEOUT s"
fi
if [ $rc -ne 0 ]; then
  kill -0 "$CP" 2>/dev/null || { log "the control plane had exited:"; tail -n 20 "$RUN/controlplane.log" >&2; }
fi
log "done in $(( $(date +%s) - T0 )) s, exit $rc"
exit $rc

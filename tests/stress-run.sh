#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tests/stress-run.sh [-n RUNS] [-s STAGES] [-o DIR] [-H HOGS]
#
# Runs `make test` RUNS times (default 5) with HOGS busy loops (default 1: one of the two
# cores of a CI machine kept busy) beside it, and reports every failure of every run:
# whether the suite holds on a loaded machine, not only on a quiet one. Each run's output
# and its per-stage wall-time table are kept under DIR (default stress-results/<time>/).
#   -s STAGES   only these stages of scripts/test.sh (IOQOS_TEST_STAGES, e.g. "host vm")
# Exit status: 0 when every run passed, 1 otherwise.
set -u
cd "$(dirname "$0")/.."
RUNS=5 STAGES="" OUT="" HOGS=1
usage() { sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while getopts "n:s:o:H:h" o; do
    case $o in
        n) RUNS=$OPTARG ;;
        s) STAGES=$OPTARG ;;
        o) OUT=$OPTARG ;;
        H) HOGS=$OPTARG ;;
        h) usage 0 ;;
        *) usage ;;
    esac
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "stress-run: -n wants a count, got '$RUNS'" >&2; exit 2; }
[[ $HOGS =~ ^[0-9]+$ ]] || { echo "stress-run: -H wants a count, got '$HOGS'" >&2; exit 2; }
OUT=${OUT:-stress-results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT" || exit 1

HOG_PIDS=()
stop_hogs() {
    local p
    for p in "${HOG_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    HOG_PIDS=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM

SUMMARY=() BAD=0
for ((i = 1; i <= RUNS; i++)); do
    for ((h = 0; h < HOGS; h++)); do
        sh -c 'while :; do :; done' &
        HOG_PIDS+=($!)
    done
    echo "stress-run: run $i of $RUNS with $HOGS busy loop(s), log $OUT/run-$i.log"
    t0=$(date +%s)
    env IOQOS_TEST_TIMES="$OUT/run-$i.times" ${STAGES:+"IOQOS_TEST_STAGES=$STAGES"} \
        make test > "$OUT/run-$i.log" 2>&1
    rc=$?
    stop_hogs
    fails=$(grep '^failed: ' "$OUT/run-$i.times" 2>/dev/null | sed 's/^failed: //' | paste -sd ',' -)
    SUMMARY+=("$(printf 'run %d: %s in %d s%s' "$i" "$([ $rc = 0 ] && echo passed || echo "FAILED (exit $rc)")" \
        $(($(date +%s) - t0)) "${fails:+ - $fails}")")
    [ $rc = 0 ] || BAD=1
    echo "  ${SUMMARY[-1]}"
done
echo "stress-run: $RUNS runs, $HOGS busy loop(s) beside each${STAGES:+, stages: $STAGES}"
printf '  %s\n' "${SUMMARY[@]}" | tee "$OUT/summary.txt"
for ((i = 1; i <= RUNS; i++)); do
    echo "  run $i stages:"; sed 's/^/    /' "$OUT/run-$i.times" 2>/dev/null
done
exit $BAD

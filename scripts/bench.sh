#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench: every benchmark; results printed and saved under bench-results/.
#   1. calibration of the disk holding the repository (ioqosctl calibrate)
#   2. the isolation benchmark on a real kernel (tests/bench/run.sh: nullb, nullb-closed, virtio,
#      3 rounds in rotated order; about 1.5 h on 2 cores)
#   3. the extender benchmark (tests/extender/bench.sh or bench.py), if present
#   4. the plugin benchmark (tests/plugin/bench*), if present
# A failing part is reported and the others still run; the exit status is 1 if any failed.
set -u
build=${1:-build}
cd "$(dirname "$0")/.." || exit 1
mkdir -p bench-results
failed=""
part() {  # part NAME CMD...
    name=$1; shift
    echo
    echo "######## $name"
    start=$(date +%s)
    if "$@"; then
        echo "######## $name: done in $(( $(date +%s) - start )) s"
    else
        echo "######## $name: FAILED (exit $?) after $(( $(date +%s) - start )) s"
        failed="$failed $name"
    fi
}
calibrate() {
    "$build/plugin/ctl/ioqosctl" calibrate --dir "$(pwd)" --seconds 5 --no-save > bench-results/calibrate.txt &&
        cat bench-results/calibrate.txt
}

part "calibration of the disk holding $(pwd) (5 s per phase)" calibrate
part "isolation benchmark (real kernel, cgroup v2 VM)" tests/bench/run.sh --build "$build"
part "combined-direction grants (real kernel, cgroup v2 VM)" tests/bench/directions.sh --build "$build"

if [ -x tests/extender/bench.sh ]; then
    part "extender benchmark" tests/extender/bench.sh "$build"
elif [ -f tests/extender/bench.py ]; then
    part "extender benchmark" /usr/bin/python3 tests/extender/bench.py --build-dir "$build" \
        --out bench-results/extender.json
else
    echo "######## extender benchmark: skipped (no tests/extender/bench.sh or bench.py yet)"
fi
part "scheduling benchmark (real kube-scheduler + extender, fake nodes)" tests/bench/sched_bench.sh --build "$build"

found=0
for f in tests/plugin/bench*; do
    [ -f "$f" ] || continue
    found=1
    case $f in
        *.py) part "plugin benchmark ($f)" /usr/bin/python3 "$f" --build "$build" \
                  --out "bench-results/plugin-$(basename "$f" .py).json" ;;
        *) [ -x "$f" ] && part "plugin benchmark ($f)" "$f" "$build" ;;
    esac
done
[ "$found" = 1 ] || echo "######## plugin benchmark: skipped (no tests/plugin/bench* yet)"

echo
if [ -n "$failed" ]; then
    echo "make bench: FAILED parts:$failed (results of the others are in bench-results/)"
    exit 1
fi
echo "make bench: all parts done; results in bench-results/"

#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Combined-direction grants (enforcement.combinedDirections), measured in the cgroup v2 VM:
# one pod with a 24 MiB/s grant on a 400 MiB/s virtio disk, reading and writing at once,
# only reading, only writing, and switching from writing to reading, through the real
# plugin with the option off and on, and a control (off, granted half) (tests/bench/directions.py). Results in OUT
# (default bench-results/): directions-raw.json (every run, medians in "summary"),
# directions-plugin.log.MODE.ROUND (the plugin's logs).
#
# usage: tests/bench/directions.sh [--ctest] [--build DIR] [--out DIR] [--rounds N]
#            [--arg ARG]...   (extra directions.py options)
#   (default)  3 rounds, stages both, read, write, switch, modes off and on (about 6 min)
#   --ctest    1 round, stage both only, runtime 8 s, with --check: read + write <= 1.1 x
#              the grant with the option on, >= 1.5 x with it off (what make test runs)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/../.." && pwd -P)
MiB=1048576
build=$REPO/build
out=
rounds=3
extra=()
ctest=0
while [ $# -gt 0 ]; do
    case $1 in
        --ctest) ctest=1 ;;
        --build) build=$2; shift ;;
        --out) out=$2; shift ;;
        --rounds) rounds=$2; shift ;;
        --arg) extra+=("$2"); shift ;;
        -h|--help) awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"; exit 0 ;;
        *) echo "directions.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$out" ] || out=$REPO/bench-results
build=$(cd "$build" && pwd -P)
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
CAP_BW=$((400 * MiB))
CAP_IOPS=100000
args=(--rounds "$rounds")
# runtime 8 s (not 5): each io.max rewrite restarts blk-throttle's slice, which lets up to a
# slice of the grant plus a queued 1 MiB I/O per direction through early; the split's first
# rewrites in a 3 s window were enough for 1.12 x once (4 rewrites), in 6 s they are not
[ $ctest = 1 ] && args=(--rounds 1 --stages both --modes off,on --runtime 8 --ramp 2 --check)
shares=()
case $build/ in "$REPO"/*) ;; *) shares+=(--share "$build") ;; esac
case $out/ in "$REPO"/*) ;; *) shares+=(--share "$out") ;; esac
"$REPO/tests/e2e/vm-run" --timing --timeout 1800 "${shares[@]}" \
    --virtio-disk "vd0:size=8G:bps=$CAP_BW:iops=$CAP_IOPS" -- \
    /usr/bin/python3 "$HERE/directions.py" --disk /dev/e2e/vd0 --capacity-bw "$CAP_BW" \
    --capacity-iops "$CAP_IOPS" "${args[@]}" "${extra[@]}" \
    --plugin "$build/plugin/daemon/ioqos-plugin" --proto-py "$build/proto/python" \
    --out "$out/directions-raw.json" --plugin-log "$out/directions-plugin.log"

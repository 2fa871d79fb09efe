#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The isolation benchmark: a db pod next to a backup pod on one finite disk, on a real
# kernel (cgroup v2 VM, tests/e2e/vm-run), solo / contended / weight-only / ioqos /
# control side by side, and ioqos with 1 and 4 pods without a grant next to them
# (ioqos+1u, ioqos+4u) and those 4 pods alone beside idle grants (neighbours).
# One VM per device kind; results in OUT (default bench-results/,
# bench-results/demo/ for --demo):
#   isolation-raw-<kind>.json   every run, as measured (written by isolation.py in the VM)
#   isolation-plugin-<kind>.log the plugin's log of that VM
#   isolation.json              medians, spreads and ratios (report.py)
#   isolation.md                the table
#   isolation.png               the plot (gnuplot)
#
# usage: tests/bench/run.sh [--demo | --ctest] [--build DIR] [--out DIR]
#            [--devices nullb,nullb-closed,nullb-recipe,virtio] [--rounds N] [--runtime S] [--cases LIST]
#            [--stages LIST] [--no-accuracy] [--no-overhead] [--report-only]
#            [--vm-arg ARG]...   (extra vm-run options, also env BENCH_VM_ARGS)
#            [--arg ARG]...      (extra isolation.py options, also env BENCH_SCENARIO_ARGS)
#
#   (default)  the full run: four device kinds, every db workload with a direct backup,
#              two with a buffered one and a wal db (fdatasync per commit) with both (virtio),
#              13 stages, 3 rounds, accuracy and
#              overhead; nullb-closed (the db closed-loop on the token-bucket disk,
#              granted its need + 30 %) with the 6 stages without ungranted pods and no
#              accuracy/overhead (same disk as nullb); nullb-recipe (the same disk and db
#              with the token-bucket recipe as deployed: allocatable fraction 0.7, the
#              plugin pacing the disk in every stage, nodePolicy.iocost.pace auto) with
#              the stages of pods without a grant and lending, two QD cases
#              (about 2 h on 2 cores)
#   --demo     one short round of the most telling cases, with one pod without a
#              grant (ioqos+1u) and the same pod first using the idle grants (wake-up)
#              (a few minutes)
#   --ctest    the demo's virtio case only, stages solo, contended, ioqos, ioqos+1u, wake-up, ioqos+host
#              (what tests/bench/CMakeLists.txt runs)
#
# Env: NULLB_LATENCY_US (500): nullb-closed's and nullb-recipe's completion latency per request;
#      NULLB_CLOSED_HEADROOM_SHARE (0.05): their plugin headroomShare (the
#      token-bucket recipe of docs/enforcement.md; ioqos+pace's auto pace follows it)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/../.." && pwd -P)
MiB=1048576

build=$REPO/build
out=
devices=nullb,nullb-closed,nullb-recipe,virtio
rounds=3
runtime=8
ramp=2
stages=solo,contended,weight,weight-plain,ioqos,control,ioqos+1u,ioqos+4u,neighbours,wake-up,ioqos+burst,control+1u,control+4u
stages_nullb_closed=solo,contended,weight,weight-plain,ioqos,ioqos+pace,control
# the plugin owns iocost there (it paces the disk): no weight or ioqos+pace stage
stages_nullb_recipe=solo,contended,ioqos,ioqos+1u,ioqos+4u,neighbours,wake-up,control,control+1u,control+4u
direct_cases="randread-qd1+direct,randread-qd16+direct,randwrite-qd1+direct,randwrite-qd16+direct"
# buffered backups only on the filesystem disk: null_blk (not memory-backed) discards
# data, so it holds no filesystem, and buffered writes to its raw device share one
# inode across every stage (see settle() in isolation.py)
cases_nullb=$direct_cases
cases_nullb_closed=$direct_cases
cases_nullb_recipe="randread-qd1+direct,randread-qd16+direct"
# the wal db (fdatasync after each 4k write) needs the filesystem too
cases_virtio="$direct_cases,randread-qd16+buffered,randwrite-qd1+buffered,wal-fsync+direct,wal-fsync+buffered"
read -r -a vm_extra <<< "${BENCH_VM_ARGS:-}"
read -r -a sc_extra <<< "${BENCH_SCENARIO_ARGS:-}"
extra=(--accuracy --overhead)
mode=full
report_only=0
cases_override=

# the mode sets the defaults; options given with it still win
for a in "$@"; do
    case $a in --demo) mode=demo ;; --ctest) mode=ctest ;; esac
done
case $mode in
    demo)
        rounds=1; runtime=6; devices=nullb,virtio; stages=solo,contended,weight,ioqos,control,ioqos+1u,wake-up
        cases_nullb="randwrite-qd1+direct"
        cases_virtio="randread-qd16+direct"
        extra=() ;;
    ctest)
        rounds=1; runtime=5; devices=virtio; stages=solo,contended,ioqos,ioqos+1u,wake-up,ioqos+host
        cases_virtio="randread-qd16+direct"
        extra=() ;;
esac

while [ $# -gt 0 ]; do
    case $1 in
        --demo|--ctest) ;;
        --build) build=$2; shift ;;
        --out) out=$2; shift ;;
        --devices) devices=$2; shift ;;
        --rounds) rounds=$2; shift ;;
        --runtime) runtime=$2; shift ;;
        --cases) cases_override=$2; shift ;;
        --stages) stages=$2; stages_nullb_closed=$2; stages_nullb_recipe=$2; shift ;;
        --no-accuracy) extra=("${extra[@]/--accuracy}") ;;
        --no-overhead) extra=("${extra[@]/--overhead}") ;;
        --report-only) report_only=1 ;;
        --vm-arg) vm_extra+=("$2"); shift ;;
        --arg) sc_extra+=("$2"); shift ;;
        -h|--help) awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# the demo keeps its results apart, so it never overwrites the full run's
[ -n "$out" ] || { [ "$mode" = demo ] && out=$REPO/bench-results/demo || out=$REPO/bench-results; }
# shellcheck disable=SC2034  # read through ${!c} below
if [ -n "$cases_override" ]; then
    cases_nullb=$cases_override; cases_nullb_closed=$cases_override; cases_nullb_recipe=$cases_override
    cases_virtio=$cases_override
fi
mapfile -t extra < <(printf '%s\n' "${extra[@]}" | grep . || true)

build=$(cd "$build" && pwd -P)
plugin=$build/plugin/daemon/ioqos-plugin
ctl=$build/plugin/ctl/ioqosctl
proto_py=$build/proto/python
mkdir -p "$out"
out=$(cd "$out" && pwd -P)

# The disks (device facts from shared/DESIGN.md, "What done means for performance"):
# 200 MiB/s and 51200 4k IOPS; the control disks have twice the throttle.
CAP_BW=$((200 * MiB))
CAP_IOPS=51200
NULLB_LATENCY_US=${NULLB_LATENCY_US:-500}
NULLB_CLOSED_HEADROOM_SHARE=${NULLB_CLOSED_HEADROOM_SHARE:-0.05}
case $NULLB_LATENCY_US in ''|*[!0-9]*) echo "run.sh: NULLB_LATENCY_US must be a whole number of µs" >&2; exit 2 ;; esac

run_kind() {
    local kind=$1 cases=$2 vmargs inargs rc=0 kstages=$stages kextra=("${extra[@]}")
    case $kind in
        nullb|nullb-closed|nullb-recipe)
            vmargs=(--nullb "nb0:mbps=$((CAP_BW / MiB)):size_gb=8"
                    --nullb "nb1:mbps=$((2 * CAP_BW / MiB)):size_gb=8")
            inargs=(--disk /dev/e2e/nb0 --control-disk /dev/e2e/nb1)
            # nullb-closed: the db as a database runs, closed-loop (as much as it can,
            # never paced) and granted its measured need + 30 %; the backup the rest.
            # On a token-bucket disk this is the harsh case (issue 18). Its disks
            # complete each request after NULLB_LATENCY_US (default 500 µs, a cloud
            # volume's order; null_blk's timer mode), so the closed-loop db is bound
            # by the device's latency as on a real volume, not by how fast TCG runs
            # fio: without it a fast host let the db fill the disk alone (47k of
            # 51k IOPS), its grant took every unit and the backup got 1 MiB/s
            if [ "$kind" != nullb ]; then
                local lat=":irqmode=2:completion_nsec=$((NULLB_LATENCY_US * 1000))"
                vmargs=(--nullb "nb0:mbps=$((CAP_BW / MiB)):size_gb=8$lat"
                        --nullb "nb1:mbps=$((2 * CAP_BW / MiB)):size_gb=8$lat")
                # the plugin as docs/enforcement.md sets it up for a token-bucket disk: a
                # small pool for pods without a grant (headroomShare 0.05), so that
                # ioqos+pace's "auto" paces at grants + pool = 0.81 of the capacity
                inargs+=(--db-demand 0 --db-grant-factor 1.3 --device-latency-us "$NULLB_LATENCY_US"
                         --ungranted on --headroom-share "$NULLB_CLOSED_HEADROOM_SHARE")
                kstages=$stages_nullb_closed; kextra=()
                if [ "$kind" = nullb-recipe ]; then
                    # the recipe as an operator deploys it (docs/enforcement.md): the plugin
                    # paces the disk itself in every stage, grants from 0.7 of it
                    inargs+=(--fraction 0.7 --plugin-pace auto)
                    kstages=$stages_nullb_recipe
                fi
            fi ;;
        virtio)
            # the pods without a grant (stages ioqos+Nu, neighbours) write files of
            # their own: 4 pods x 4 writers x 64 MiB beside the db's and backup's 1.5 GiB
            local vsize=2G csize=2G
            case ,$stages, in *,ioqos+[0-9]u,*|*,neighbours,*) vsize=4G ;; esac
            case ,$stages, in *,control+[0-9]u,*) csize=4G ;; esac
            vmargs=(--virtio-disk "vd0:size=$vsize:bps=$CAP_BW:iops=$CAP_IOPS:mkfs=ext4:mount=/mnt/vd0"
                    --virtio-disk "vd1:size=$csize:bps=$((2 * CAP_BW)):iops=$((2 * CAP_IOPS)):mkfs=ext4:mount=/mnt/vd1")
            # qemu's virtio-blk says rotational=1; the backing is RAM, and iocost picks its
            # cost model from that flag: non-rotational gives weight-only the SSD model
            # (measured: far stronger than the HDD model there)
            inargs=(--disk /dev/e2e/vd0 --mount /mnt/vd0 --control-disk /dev/e2e/vd1 --control-mount /mnt/vd1
                    --nonrot) ;;
        *) echo "run.sh: unknown device kind $kind" >&2; return 2 ;;
    esac
    local shares=()
    case $build/ in "$REPO"/*) ;; *) shares+=(--share "$build") ;; esac
    case $out/ in "$REPO"/*) ;; *) shares+=(--share "$out") ;; esac
    echo "== $kind: booting kernel (cgroup v2 VM, qemu TCG) with the $kind disk and its control disk"
    loads+=("$kind start $(cut -d' ' -f1-3 /proc/loadavg)")
    "$REPO/tests/e2e/vm-run" --timing --timeout 7200 "${shares[@]}" "${vm_extra[@]}" "${vmargs[@]}" -- \
        /usr/bin/python3 "$HERE/isolation.py" --kind "$kind" "${inargs[@]}" \
        --capacity-bw "$CAP_BW" --capacity-iops "$CAP_IOPS" --control-factor 2 \
        --cases "$cases" --stages "$kstages" --rounds "$rounds" --runtime "$runtime" --ramp "$ramp" \
        "${kextra[@]}" "${sc_extra[@]}" --plugin "$plugin" --ioqosctl "$ctl" --proto-py "$proto_py" \
        --out "$out/isolation-raw-$kind.json" --plugin-log "$out/isolation-plugin-$kind.log" || rc=$?
    loads+=("$kind end $(cut -d' ' -f1-3 /proc/loadavg)")
    return $rc
}

loads=()
status=0
if [ "$report_only" = 0 ]; then
    for f in "$plugin" "$ctl" "$proto_py/deviceplugin/v1beta1/api_pb2.py"; do
        [ -e "$f" ] || { echo "run.sh: $f missing: build first (cmake --build $build)" >&2; exit 1; }
    done
    raws=()
    for kind in ${devices//,/ }; do
        rm -f "$out/isolation-raw-$kind.json"
        c=cases_${kind//-/_}
        run_kind "$kind" "${!c}" || { status=$?; echo "== $kind: the scenario failed (exit $status)" >&2; }
        raws+=("$out/isolation-raw-$kind.json")
    done
else
    raws=()
    for kind in ${devices//,/ }; do raws+=("$out/isolation-raw-$kind.json"); done
fi
if [ "$report_only" = 0 ]; then
    printf "%s\n" "${loads[@]}" > "$out/isolation-host-load.txt"
fi
/usr/bin/python3 "$HERE/report.py" --out "$out" --mode "$mode" --host-load-file "$out/isolation-host-load.txt" \
    "${raws[@]}" || status=$?
exit "$status"

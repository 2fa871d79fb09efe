#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run-writers.sh v1|v2 KERNEL_WRITERS_BIN [IOQOSCTL]
#
# Runs the enforcement writer's real-kernel tests (kernel_writers.c):
#   v1  on this host's cgroup v1 blkio hierarchy (root needed; skipped otherwise)
#   v2  inside the e2e VM (Debian's kernel, cgroup v2), via tests/e2e/vm-run
# Disks: two loop devices (the first with one partition, the second on BFQ) on v1;
# two null_blk disks (the second on BFQ) plus a partitioned loop device on v2.
# With IOQOSCTL, also checks that `ioqosctl probe` finds the BFQ weight file of
# the BFQ disk where this kernel has it (v1: in child cgroups only).
# Everything created here is removed on exit, also on failure.
set -u
MODE=${1:?usage: run-writers.sh v1|v2 KERNEL_WRITERS_BIN}
BIN=$(readlink -f "${2:?usage: run-writers.sh v1|v2 KERNEL_WRITERS_BIN}")
CTL=${3:+$(readlink -f "$3")}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
. "$HERE/lib-kernel.sh"

case $MODE in
v1)
    kt_need_v1_host || exit 77
    CGROOT=/sys/fs/cgroup/blkio
    ;;
v2)
    if [ -z "${IOQOS_E2E_VM:-}" ]; then
        [ "${IOQOS_E2E_SKIP:-0}" = 1 ] && { echo "SKIP: IOQOS_E2E_SKIP=1"; exit 77; }
        export IOQOS_KT_BIN=$BIN
        exec "$HERE/../e2e/vm-run" --nullb nb0:mbps=1000 --nullb nb1:mbps=1000:sched=bfq \
            -- "$HERE/run-writers.sh" v2 "$BIN" ${CTL:+"$CTL"}
    fi
    CGROOT=/sys/fs/cgroup
    [ -e /dev/loop-control ] || modprobe loop || { echo "FAIL - modprobe loop"; exit 1; }
    ;;
*) echo "usage: run-writers.sh v1|v2 BIN" >&2; exit 2 ;;
esac

kt_cleanup_init
PARENT=$CGROOT/ioqos-kt-$$
kt_track_cgroup "$PARENT"
mkdir "$PARENT" || kt_die "mkdir $PARENT"
if [ "$MODE" = v2 ]; then
    echo "+io +memory" > "$PARENT/cgroup.subtree_control" || kt_die "enable io in $PARENT"
fi

# A partitioned loop device (both modes): its whole disk and its partition.
kt_loop_with_partition 64 || kt_die "cannot set up a partitioned loop device"
PLOOP=$KT_DEV
PDISK=$(kt_devno "$PLOOP")
PART=$(kt_devno "${PLOOP}p1")

if [ "$MODE" = v1 ]; then
    DEV1=$PDISK
    kt_set_sched "$PLOOP" none || kt_die "cannot set the none scheduler on $PLOOP"
    kt_loop 64 || kt_die "cannot set up a loop device"
    L2=$KT_DEV
    kt_set_sched "$L2" bfq || { echo "SKIP: bfq scheduler not available"; exit 77; }
    DEV2=$(kt_devno "$L2")
else
    DEV1=$IOQOS_E2E_DISK_NB0_DEVNO
    DEV2=$IOQOS_E2E_DISK_NB1_DEVNO
fi

echo "kernel $(uname -r), cgroup $MODE: dev1=$DEV1 dev2(bfq)=$DEV2 partition=$PART of $PDISK"
IOQOS_KT_VERSION=${MODE#v} IOQOS_KT_CGROUP=$PARENT IOQOS_KT_ROOT=$CGROOT \
IOQOS_KT_DEV1=$DEV1 IOQOS_KT_DEV2=$DEV2 IOQOS_KT_PART=$PART IOQOS_KT_PART_DISK=$PDISK \
    "$BIN" --jobs=1 --verbose=0
RC=$?
[ -n "$CTL" ] || exit $RC

WANT=$([ "$MODE" = v1 ] && echo blkio.bfq.weight || echo io.bfq.weight)
printf '{"devices":[{"select":"%s","capacity":{"bandwidthBytesPerSec":104857600}}]}\n' "$DEV2" \
    > "$KT_TMP/bfq.json"
"$CTL" probe --json --config "$KT_TMP/bfq.json" > "$KT_TMP/probe.json" || kt_die "ioqosctl probe"
if "$PY" - "$KT_TMP/probe.json" "$WANT" <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))["disks"][0]
if sys.argv[2] not in d["capabilities"]:
    print("FAIL - probe: %s missing on the bfq disk: %s" % (sys.argv[2], d["missing"].get(sys.argv[2])))
    sys.exit(1)
print("ok   - probe: %s on the bfq disk %s" % (sys.argv[2], d["name"]))
EOF
    exit $RC
fi
exit 1

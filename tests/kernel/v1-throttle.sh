#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# v1-throttle.sh IOQOSCTL
#
# cgroup v1 on this host, end to end: a child blkio cgroup of our own, a loop device on a
# sparse file, limits put in place by `ioqosctl apply` (the ioqos writer), fio doing
# direct I/O inside the cgroup. Prints achieved/limit per mode and checks it lies in
# [IOQOS_KT_LO, IOQOS_KT_HI] (default 0.90..1.05). Buffered writes are measured and
# reported only: v1 blk-throttle does not see them (writeback runs outside the cgroup).
# Everything is removed on exit, also on failure. Skips (77) without root or blkio.
set -u
CTL=$(readlink -f "${1:?usage: v1-throttle.sh IOQOSCTL}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
. "$HERE/lib-kernel.sh"
kt_need_v1_host || exit 77
command -v fio >/dev/null || { echo "SKIP: fio not installed"; exit 77; }

RT=${IOQOS_KT_RUNTIME:-4}
LO=${IOQOS_KT_LO:-0.90}
HI=${IOQOS_KT_HI:-1.05}
FAILS=0

kt_cleanup_init
CG=/sys/fs/cgroup/blkio/ioqos-kt-throttle-$$
kt_track_cgroup "$CG"
mkdir "$CG" || kt_die "mkdir $CG"
kt_loop 2048 || kt_die "cannot set up a loop device"
DEV=$KT_DEV
D=$(kt_devno "$DEV")
kt_set_sched "$DEV" none || kt_die "cannot set the none scheduler on $DEV"
echo "kernel $(uname -r), cgroup v1 blkio, disk $DEV ($D), cgroup $CG"

apply() {  # ioqosctl apply ARGS..., output kept for the log
    "$CTL" apply --cgroup "$CG" --device "$D" "$@" > "$KT_TMP/apply.out" 2>&1 ||
        { cat "$KT_TMP/apply.out"; kt_die "ioqosctl apply $*"; }
}

# measure NAME DIR(read|write) METRIC(bw_bytes|iops) LIMIT FIO_ARGS...
measure() {
    local name=$1 dir=$2 metric=$3 limit=$4 got r
    shift 4
    kt_in_cgroup "$CG" fio --name="$name" --filename="$DEV" --output-format=json \
        --output="$KT_TMP/$name.json" --time_based --runtime="$RT" --ramp_time=1 "$@" \
        > "$KT_TMP/$name.log" 2>&1 || { cat "$KT_TMP/$name.log"; kt_die "fio $name"; }
    got=$(fio_val "$KT_TMP/$name.json" "$dir" "$metric") || kt_die "fio output $name"
    r=$(ratio "$got" "$limit")
    printf 'accuracy %-24s limit %12d achieved %14.1f ratio %s\n' "$name" "$limit" "$got" "$r"
    RATIO=$r
}

check() {  # name ratio
    if in_range "$2" "$LO" "$HI"; then
        echo "ok   - $1 ratio $2 in [$LO, $HI]"
    else
        echo "FAIL - $1 ratio $2 not in [$LO, $HI]"
        FAILS=$((FAILS + 1))
    fi
}

MiB=1048576
apply --wbps $((20 * MiB))
measure v1-direct-write write bw_bytes $((20 * MiB)) --rw=write --bs=1M --direct=1 --ioengine=psync
check "v1 direct write bandwidth" "$RATIO"

apply --wbps max --rbps $((20 * MiB))
measure v1-direct-read read bw_bytes $((20 * MiB)) --rw=read --bs=1M --direct=1 --ioengine=psync
check "v1 direct read bandwidth" "$RATIO"

apply --rbps max --wiops 500
measure v1-direct-randwrite-iops write iops 500 --rw=randwrite --bs=4k --direct=1 \
    --ioengine=psync --size=256M
check "v1 direct 4k randwrite IOPS" "$RATIO"

apply --wiops max --riops 500
measure v1-direct-randread-iops read iops 500 --rw=randread --bs=4k --direct=1 \
    --ioengine=psync --size=256M
check "v1 direct 4k randread IOPS" "$RATIO"

# Buffered writes: reported, not checked. Here the final fsync issues the writeback from
# inside the cgroup, so it is throttled; background writeback by the flusher threads is
# not charged to a v1 blkio cgroup at all.
apply --riops max --wbps $((20 * MiB))
T0=$(date +%s.%N)
kt_in_cgroup "$CG" fio --name=v1-buffered --filename="$DEV" --rw=write --bs=1M --direct=0 \
    --ioengine=psync --size=100M --end_fsync=1 > "$KT_TMP/buffered.log" 2>&1 ||
    { cat "$KT_TMP/buffered.log"; kt_die "fio buffered"; }
T1=$(date +%s.%N)
RATIO=$(awk -v a="$T0" -v b="$T1" -v l=$((20 * MiB)) 'BEGIN { printf "%.3f", 100 * 1048576 / (b - a) / l }')
printf 'accuracy %-24s limit %12d achieved %14.1f ratio %s (write+fsync wall time)\n' \
    v1-buffered-write $((20 * MiB)) "$(awk -v r="$RATIO" -v l=$((20 * MiB)) 'BEGIN { print r * l }')" "$RATIO"
echo "info - v1 buffered write: only the writeback issued from the cgroup (fsync) is throttled"

# The limits are in place as written, and clearing removes them.
"$CTL" show --cgroup "$CG" | sed 's/^/show | /'
apply --clear
for f in read_bps write_bps read_iops write_iops; do
    if grep -q "^$D " "$CG/blkio.throttle.${f}_device"; then
        echo "FAIL - $f still limited after --clear"; FAILS=$((FAILS + 1))
    fi
done
echo "v1-throttle: $FAILS failed"
[ "$FAILS" = 0 ]

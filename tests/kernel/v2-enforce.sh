#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# v2-enforce.sh IOQOSCTL
#
# cgroup v2 in the e2e VM (Debian's kernel under qemu), end to end through ioqosctl:
# a kubelet-shaped pod cgroup (systemd driver, Burstable) found with `ioqosctl
# cgroup-path`, limits put in place with `ioqosctl apply`, the workload running in a
# container cgroup below the pod. Prints achieved/limit per mode and checks it lies in
# [IOQOS_KT_LO, IOQOS_KT_HI] (default 0.80..1.05: under TCG a busy host can only make the
# workload slower, never the limit looser; the numbers are the report):
#   fio direct write / read bandwidth, direct 4k randwrite / randread IOPS on a null_blk
#   disk (mbps=200: a finite disk);
#   buffered write bandwidth with memory+io on, to a file on ext4 on a virtio disk
#   (qemu-throttled to 200 MiB/s; cgroup writeback needs a filesystem): its floor is
#   taken against min(limit, the same writer unthrottled in the same run), its ceiling
#   against the limit (buffered_limited below says why);
# and reports buffered writes of a pod whose parent does not delegate memory to it.
set -u
CTL=$(readlink -f "${1:?usage: v2-enforce.sh IOQOSCTL}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
if [ -z "${IOQOS_E2E_VM:-}" ]; then
    [ "${IOQOS_E2E_SKIP:-0}" = 1 ] && { echo "SKIP: IOQOS_E2E_SKIP=1"; exit 77; }
    exec "$HERE/../e2e/vm-run" --timing --nullb nb0:mbps=200:size_gb=4 \
        --virtio-disk vd0:size=2G:bps=209715200:mkfs=ext4:mount=/mnt/vd0 -- "$0" "$CTL"
fi
. "$HERE/lib-kernel.sh"

RT=${IOQOS_KT_RUNTIME:-4}
LO=${IOQOS_KT_LO:-0.80}  # TCG on a shared host: CPU starvation can only lower the rate
HI=${IOQOS_KT_HI:-1.05}
FAILS=0
MiB=1048576
CG=/sys/fs/cgroup
UID_=8f14e45f-ceea-467f-a0e6-9a1b2c3d4e5f
DEV=$IOQOS_E2E_DISK_NB0
D=$IOQOS_E2E_DISK_NB0_DEVNO
VDEV=$IOQOS_E2E_DISK_VD0
VD=$IOQOS_E2E_DISK_VD0_DEVNO

kt_cleanup_init
fail() { echo "FAIL - $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok   - $*"; }

# What kubelet (systemd driver, cgroup v2) creates for a Burstable pod, controllers
# enabled along the path as kubelet does.
KP=$CG/kubepods.slice
POD=$KP/kubepods-burstable.slice/kubepods-burstable-pod${UID_//-/_}.slice
kt_track_cgroup "$KP"
mkdir -p "$POD/ctr" || kt_die "mkdir $POD/ctr"
for d in "$KP" "$KP/kubepods-burstable.slice" "$POD"; do
    echo "+io +memory" > "$d/cgroup.subtree_control" || kt_die "enable io memory in $d"
done
CTR=$POD/ctr
echo "kernel $(uname -r), cgroup v2, disk $DEV ($D, null_blk mbps=200), pod $POD"

got=$("$CTL" cgroup-path --qos Burstable --uid "$UID_" --driver systemd 2>&1)
[ "$got" = "$POD" ] && ok "cgroup-path (systemd) finds the pod" || fail "cgroup-path: '$got'"
got=$("$CTL" cgroup-path --qos Burstable --uid "$UID_" 2>&1)
[ "$got" = "$POD" ] && ok "cgroup-path (auto) finds the pod" || fail "cgroup-path auto: '$got'"
got=$("$CTL" cgroup-path --qos BestEffort --uid "$UID_" 2>/dev/null)
[ "$got" = "$POD" ] && ok "cgroup-path with the wrong QoS class finds the pod by search" ||
    fail "cgroup-path search: '$got'"

apply() {
    "$CTL" apply --cgroup "$POD" --device "$D" "$@" > "$KT_TMP/apply.out" 2>&1 ||
        { cat "$KT_TMP/apply.out"; kt_die "ioqosctl apply $*"; }
}

# measure NAME DIR METRIC LIMIT FIO_ARGS... : time-based fio in the container cgroup
measure() {
    local name=$1 dir=$2 metric=$3 limit=$4 got
    shift 4
    kt_in_cgroup "$CTR" fio --name="$name" --filename="$DEV" --output-format=json \
        --output="$KT_TMP/$name.json" --time_based --runtime="$RT" --ramp_time=1 "$@" \
        > "$KT_TMP/$name.log" 2>&1 || { cat "$KT_TMP/$name.log"; kt_die "fio $name"; }
    got=$(fio_val "$KT_TMP/$name.json" "$dir" "$metric") || kt_die "fio output $name"
    RATIO=$(ratio "$got" "$limit")
    printf 'accuracy %-26s limit %12d achieved %14.1f ratio %s\n' "$name" "$limit" "$got" "$RATIO"
}

# buffered NAME LIMIT POD CTR MB : dd writes MB through the page cache of a file on ext4
# (a filesystem with cgroup writeback) from container cgroup CTR and fsyncs
# (tests/support/buffered_rate.py: steady rate at the disk between 20% and 80% of the
# bytes). Sets RATE (bytes/s), RATIO (RATE / LIMIT) and CHARGED (MiB charged to POD).
buffered() {
    local name=$1 limit=$2 pod=$3 ctr=$4 mb=$5 out rc whole
    out=$("$PY" "$HERE/../support/buffered_rate.py" "$ctr" "$pod" "$VD" "${VDEV#/dev/}" \
        $((mb * MiB)) /mnt/vd0/ioqos-kt.dat) || kt_die "buffered_rate.py in $ctr: $out"
    read -r rc RATE whole CHARGED <<< "$out"
    [ "$rc" = 0 ] || kt_die "dd in $ctr failed ($out)"
    CHARGED=$((CHARGED / MiB))
    RATIO=$(ratio "$RATE" "$limit")
    printf 'accuracy %-26s limit %12d achieved %14.1f ratio %s (steady writeback; %s MiB charged to the pod)\n' \
        "$name" "$limit" "$RATE" "$RATIO" "$CHARGED"
}

# buffered_limited NAME LIMIT POD CTR MB : the same writer unthrottled just before and just
# after the run under LIMIT (POD's io.max on the virtio disk). Under TCG every buffered
# byte is copied by emulated code: on a busy host the writer alone may not reach the
# limit (seen in CI: 0.68 and 0.77 of 40 MiB/s; unthrottled, 0.74 of it with one CPU
# hog beside the VM). And a throttled writer needs headroom: blk-throttle lets writeback
# out in bursts and balance_dirty_pages paces the writer with sleeps, and a starved guest
# wakes late from both (2026-12-04, one busy loop beside the VM: unthrottled 66.6 and
# 92.9 MB/s, under 40 MiB/s 27.5 MB/s = 0.66 of the limit; the same run quiet: 95.6 /
# 119.5, and 0.97 of the limit). So the floor is taken against min(LIMIT, half the slower
# reference): on a quiet host (references above twice the limit) that is the limit itself,
# as before; and the ceiling against LIMIT alone: an overshoot always fails, a slow host
# does not. What the floor still proves: the writer is held near the limit asked, not at a
# fraction of it (a limit written at half its value fails whenever the host is not starved).
# Sets RATIO (achieved / LIMIT), FLOOR (achieved / min(LIMIT, references / 2)), CHARGED.
buffered_limited() {
    local name=$1 limit=$2 pod=$3 ctr=$4 mb=$5 ref achieved charged ratio
    "$CTL" apply --cgroup "$pod" --device "$VD" --wbps max > /dev/null || kt_die "apply $VD max"
    buffered "$name-unthrottled-before" "$limit" "$pod" "$ctr" "$mb"
    ref=$RATE
    "$CTL" apply --cgroup "$pod" --device "$VD" --wbps "$limit" > /dev/null || kt_die "apply $VD"
    buffered "$name" "$limit" "$pod" "$ctr" "$mb"
    achieved=$RATE charged=$CHARGED ratio=$RATIO
    "$CTL" apply --cgroup "$pod" --device "$VD" --wbps max > /dev/null || kt_die "apply $VD max"
    buffered "$name-unthrottled-after" "$limit" "$pod" "$ctr" "$mb"
    [ "$RATE" -lt "$ref" ] && ref=$RATE
    ref=$((ref / 2))
    [ "$ref" -gt "$limit" ] && ref=$limit
    RATIO=$ratio CHARGED=$charged
    FLOOR=$(ratio "$achieved" "$ref")
    echo "info - $name: reference min(limit, unthrottled / 2) $ref B/s, achieved/reference $FLOOR"
}

check() {
    if in_range "$2" "$LO" "$HI"; then ok "$1 ratio $2 in [$LO, $HI]"
    else fail "$1 ratio $2 not in [$LO, $HI]"; fi
}

apply --wbps $((50 * MiB))
measure v2-direct-write write bw_bytes $((50 * MiB)) --rw=write --bs=1M --direct=1 --ioengine=psync
check "v2 direct write bandwidth" "$RATIO"

apply --wbps max --rbps $((50 * MiB))
measure v2-direct-read read bw_bytes $((50 * MiB)) --rw=read --bs=1M --direct=1 --ioengine=psync
check "v2 direct read bandwidth" "$RATIO"

# null_blk with mbps= serves about 500 4k writes/s at QD1 under TCG: limits below that.
apply --rbps max --wiops 200
measure v2-direct-randwrite-iops write iops 200 --rw=randwrite --bs=4k --direct=1 \
    --ioengine=psync --size=1G
check "v2 direct 4k randwrite IOPS" "$RATIO"

apply --wiops max --riops 200
measure v2-direct-randread-iops read iops 200 --rw=randread --bs=4k --direct=1 \
    --ioengine=psync --size=1G
check "v2 direct 4k randread IOPS" "$RATIO"

# Buffered writes are charged to the pod when memory and io are both on along the path.
echo $((16 * MiB)) > /proc/sys/vm/dirty_background_bytes
echo $((64 * MiB)) > /proc/sys/vm/dirty_bytes
buffered_limited v2-buffered-write $((40 * MiB)) "$POD" "$CTR" 300
# Below the floor: measured once more, references included (a burst of load on the host
# passes; a limit that holds the writer too low fails twice). The ceiling is checked on the
# highest ratio of the attempts: an overshoot in any of them fails.
if ! awk -v f="$FLOOR" -v lo="$LO" 'BEGIN { exit !(f >= lo) }'; then
    echo "info - v2 buffered write: $FLOOR of the reference, below $LO: measuring again"
    first=$RATIO
    buffered_limited v2-buffered-write-again $((40 * MiB)) "$POD" "$CTR" 300
    awk -v a="$first" -v b="$RATIO" 'BEGIN { exit !(a > b) }' && RATIO=$first
fi
if awk -v f="$FLOOR" -v lo="$LO" 'BEGIN { exit !(f >= lo) }'; then
    ok "v2 buffered write (memory+io) achieved/min(limit, unthrottled / 2) $FLOOR >= $LO"
else fail "v2 buffered write (memory+io) achieved/min(limit, unthrottled / 2) $FLOOR < $LO"; fi
if awk -v r="$RATIO" -v hi="$HI" 'BEGIN { exit !(r <= hi) }'; then
    ok "v2 buffered write (memory+io) achieved/limit $RATIO <= $HI"
else fail "v2 buffered write (memory+io) achieved/limit $RATIO > $HI (the limit did not hold)"; fi
[ "$CHARGED" -ge 300 ] && ok "buffered writeback charged to the pod ($CHARGED MiB)" ||
    fail "only $CHARGED of 300 MiB of writeback charged to the pod"

# A pod whose parent does not delegate memory to it. Reported, not checked: on Debian's
# 6.1 with ext4 this writeback was still charged to the writer's io cgroup and held.
NOMEM=$KP/ioqos-kt-nomem
mkdir -p "$NOMEM/pod/ctr" && echo "+io" > "$NOMEM/cgroup.subtree_control" &&
    echo "+io" > "$NOMEM/pod/cgroup.subtree_control" || kt_die "cannot set up $NOMEM"
"$CTL" apply --cgroup "$NOMEM/pod" --device "$VD" --wbps $((40 * MiB)) > /dev/null ||
    kt_die "apply to $NOMEM/pod"
buffered v2-buffered-write-no-memory $((40 * MiB)) "$NOMEM/pod" "$NOMEM/pod/ctr" 300
echo "info - pod without the memory controller: buffered ratio $RATIO, $CHARGED MiB charged to the pod"

"$CTL" show --cgroup "$POD" | sed 's/^/show | /'
"$CTL" apply --cgroup "$POD" --device "$D" --clear > /dev/null || fail "apply --clear"
if grep -q "^$D " "$POD/io.max"; then fail "io.max still set after --clear"; else ok "cleared"; fi
echo "v2-enforce: $FAILS failed"
[ "$FAILS" = 0 ]

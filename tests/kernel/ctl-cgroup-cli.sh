#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ctl-cgroup-cli.sh IOQOSCTL
#
# `ioqosctl cgroup-path | apply | show` as a user runs them, on temp trees (no root
# needed): exit statuses (0 ok, 1 failed, 2 usage), messages for bad input, and that
# nothing is written when the input is refused.
set -u
CTL=$(readlink -f "${1:?usage: ctl-cgroup-cli.sh IOQOSCTL}")
T=$(mktemp -d /tmp/ioqos-cli.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
PASS=0 FAILS=0
UID_=8f14e45f-ceea-467f-a0e6-9a1b2c3d4e5f

# expect STATUS "text in output or empty" -- ARGS...
expect() {
    local want=$1 text=$2 out rc
    shift 3
    out=$("$CTL" "$@" 2>&1)
    rc=$?
    if [ "$rc" != "$want" ]; then
        echo "FAIL - ioqosctl $*: exit $rc, want $want: $out"; FAILS=$((FAILS + 1)); return
    fi
    if [ -n "$text" ] && [[ $out != *"$text"* ]]; then
        echo "FAIL - ioqosctl $*: output lacks '$text': $out"; FAILS=$((FAILS + 1)); return
    fi
    echo "ok   - ioqosctl $* -> $rc"; PASS=$((PASS + 1))
}

# A v2 cgroupfs with a kubelet (systemd) pod, and a sysfs with a disk and a partition.
CG=$T/cgroup
POD=$CG/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${UID_//-/_}.slice
mkdir -p "$POD" "$T/sys/devices/pci0/block/sdb/sdb1" "$T/sys/dev/block"
echo "cpu io memory" > "$CG/cgroup.controllers"
echo "io memory" > "$POD/cgroup.controllers"
: > "$POD/io.max"
echo "default 100" > "$POD/io.weight"
echo "8:16" > "$T/sys/devices/pci0/block/sdb/dev"
mkdir -p "$T/sys/devices/pci0/block/sdb/queue"
echo "[none] mq-deadline" > "$T/sys/devices/pci0/block/sdb/queue/scheduler"
echo "8:17" > "$T/sys/devices/pci0/block/sdb/sdb1/dev"
echo 1 > "$T/sys/devices/pci0/block/sdb/sdb1/partition"
ln -s ../../devices/pci0/block/sdb "$T/sys/dev/block/8:16"
ln -s ../../devices/pci0/block/sdb/sdb1 "$T/sys/dev/block/8:17"
mkdir -p "$T/sys/class/block"   # as in real sysfs: every device also under class/block
ln -s ../../devices/pci0/block/sdb "$T/sys/class/block/sdb"
ln -s ../../devices/pci0/block/sdb/sdb1 "$T/sys/class/block/sdb1"

# ---- cgroup-path ----
expect 0 "usage: ioqosctl cgroup-path" -- cgroup-path --help
expect 0 "$POD" -- cgroup-path --qos BestEffort --uid "$UID_" --cgroupfs-root "$CG"
expect 0 "$POD" -- cgroup-path --qos BestEffort --uid "$UID_" --driver systemd --cgroupfs-root "$CG"
expect 0 "$CG/kubepods/pod$UID_" -- cgroup-path --qos Guaranteed --uid "$UID_" --driver cgroupfs \
    --cgroupfs-root "$CG" --expected
expect 0 "$CG/blkio/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/" -- \
    cgroup-path --qos Burstable --uid "$UID_" --driver systemd --kubelet-cgroup-root /kubelet \
    --cgroup-version 1 --cgroupfs-root "$CG" --expected
# the former spelling of --kubelet-cgroup-root still works, and says it is deprecated
expect 0 "$CG/blkio/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/" -- \
    cgroup-path --qos Burstable --uid "$UID_" --driver systemd --cgroup-root /kubelet \
    --cgroup-version 1 --cgroupfs-root "$CG" --expected
expect 0 "warning: --cgroup-root is deprecated and will be removed: use --kubelet-cgroup-root" -- \
    cgroup-path --qos Burstable --uid "$UID_" --driver systemd --cgroup-root /kubelet \
    --cgroup-version 1 --cgroupfs-root "$CG" --expected
expect 0 "usage: ioqosctl cgroup-path" -- cgroup-path --help
expect 0 "--kubelet-cgroup-root R" -- cgroup-path --help
expect 1 "not found: tried" -- cgroup-path --qos Burstable --uid "${UID_%?}0" --cgroupfs-root "$CG"
expect 2 "--qos and --uid are required" -- cgroup-path --uid "$UID_"
expect 2 "lowercase hex" -- cgroup-path --qos Burstable --uid "${UID_^^}"
expect 2 "must be 36 characters" -- cgroup-path --qos Burstable --uid ../../etc
expect 2 "want Guaranteed, Burstable or BestEffort" -- cgroup-path --qos gold --uid "$UID_"
expect 2 "want auto, cgroupfs or systemd" -- cgroup-path --qos Burstable --uid "$UID_" --driver x
expect 2 "needs --driver" -- cgroup-path --qos Burstable --uid "$UID_" --expected
expect 2 "is not 1 or 2" -- cgroup-path --qos Burstable --uid "$UID_" --cgroup-version 3
expect 2 "unknown option" -- cgroup-path --bogus
expect 1 "no cgroup hierarchy" -- cgroup-path --qos Burstable --uid "$UID_" --cgroupfs-root "$T/sys"

# ---- apply ----
A=(apply --cgroup "$POD" --sysfs-root "$T/sys")
expect 0 "usage: ioqosctl apply" -- apply --help
expect 2 "--cgroup and --device are required" -- apply --cgroup "$POD"
expect 2 "want MAJ:MIN" -- "${A[@]}" --device sdb --wbps 1M
expect 2 "nothing to apply" -- "${A[@]}" --device 8:16
expect 2 "0 is not a limit" -- "${A[@]}" --device 8:16 --wbps 0
expect 2 "quantity" -- "${A[@]}" --device 8:16 --wbps fast
expect 2 "not an integer in [1, 10000]" -- "${A[@]}" --device 8:16 --weight 10001
expect 2 "not an integer in [1, 1000]" -- "${A[@]}" --device 8:16 --bfq-weight 0
expect 2 "--clear takes no limits" -- "${A[@]}" --device 8:16 --clear --wbps 1M
expect 1 "a partition of sdb (8:16)" -- "${A[@]}" --device 8:17 --wbps 1M
expect 1 "no block device 8:99" -- "${A[@]}" --device 8:99 --wbps 1M
expect 1 "riops=4294967295: out of range" -- "${A[@]}" --device 8:16 --riops 4294967295
expect 1 "does not exist" -- apply --cgroup "$T/nope" --device 8:16 --wbps 1M
if [ -s "$POD/io.max" ]; then echo "FAIL - refused input wrote io.max"; FAILS=$((FAILS + 1)); fi
expect 0 "would write 8:16 rbps=max wbps=10485760 riops=max wiops=max" -- \
    "${A[@]}" --device 8:16 --wbps 10Mi --dry-run
if [ -s "$POD/io.max" ]; then echo "FAIL - --dry-run wrote io.max"; FAILS=$((FAILS + 1)); fi
expect 0 "read back: 8:16 rbps=max wbps=10485760 riops=max wiops=max" -- \
    "${A[@]}" --device 8:16 --wbps 10Mi
expect 0 "unchanged: 8:16 rbps=max wbps=10485760" -- "${A[@]}" --device 8:16 --wbps 10Mi

# ---- show ----
expect 0 "8:16 rbps=max wbps=10485760" -- show --cgroup "$POD"
expect 1 "not a cgroup with I/O control" -- show --cgroup "$T/sys"
expect 2 "--cgroup is required" -- show

echo "ctl-cgroup-cli: $PASS passed, $FAILS failed"
[ "$FAILS" = 0 ]

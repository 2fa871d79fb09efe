#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# v1-nocaps.sh IOQOSCTL
#
# The DaemonSet runs the plugin as uid 0 with every capability dropped
# (manifests/base/plugin/plugin-daemonset.yaml). This checks the kernel fact that
# rests on: the ioqos writer (`ioqosctl apply`, the code the daemon runs) can set
# blkio.throttle.* on a root-owned cgroup with an empty capability set, and it is
# the file's owner bits that allow it: the same write to a file owned by another
# user fails without CAP_DAC_OVERRIDE (the control, so the check can fail).
# A child blkio cgroup of our own and a loop device; removed on exit.
# Skips (77) without root, blkio or setpriv.
set -u
CTL=$(readlink -f "${1:?usage: v1-nocaps.sh IOQOSCTL}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
. "$HERE/lib-kernel.sh"
kt_need_v1_host || exit 77
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) not installed"; exit 77; }

kt_cleanup_init
CG=/sys/fs/cgroup/blkio/ioqos-kt-nocaps-$$
kt_track_cgroup "$CG"
mkdir "$CG" || kt_die "mkdir $CG"
kt_loop 64 || kt_die "cannot set up a loop device"
D=$(kt_devno "$KT_DEV")

# no capability in any set, and no way to regain one (as the DaemonSet:
# drop ALL, allowPrivilegeEscalation false)
nocaps() { setpriv --bounding-set=-all --inh-caps=-all --ambient-caps=-all --no-new-privs "$@"; }

eff=$(nocaps awk '/^CapEff/ {print $2}' /proc/self/status)
[ "$eff" = 0000000000000000 ] || kt_die "setpriv left capabilities: CapEff=$eff"
echo "uid $(nocaps id -u), CapEff=$eff, cgroup $CG, disk $KT_DEV ($D)"

nocaps "$CTL" apply --cgroup "$CG" --device "$D" --rbps 10485760 --wiops 300 \
    > "$KT_TMP/apply.out" 2>&1 || { cat "$KT_TMP/apply.out"; kt_die "ioqosctl apply without capabilities"; }
grep -qx "$D 10485760" "$CG/blkio.throttle.read_bps_device" ||
    kt_die "read_bps_device: $(cat "$CG/blkio.throttle.read_bps_device")"
grep -qx "$D 300" "$CG/blkio.throttle.write_iops_device" ||
    kt_die "write_iops_device: $(cat "$CG/blkio.throttle.write_iops_device")"
echo "ok   - root without capabilities wrote blkio.throttle.* of a root-owned cgroup"

# control: the owner bits are what allowed it
F=$CG/blkio.throttle.read_bps_device
chown 65534 "$F" || kt_die "chown $F"
if nocaps sh -c "echo '$D 2097152' > '$F'" 2>/dev/null; then
    kt_die "control: a file owned by uid 65534 was writable without capabilities"
fi
grep -qx "$D 10485760" "$F" || kt_die "control: the value changed: $(cat "$F")"
chown 0 "$F"
echo "ok   - control: the same write to a file of another owner is refused (EACCES)"

#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# e2e: the nvmet probe on a real kernel (issue 16, probe part). In the cgroup v2 VM:
# `ioqosctl probe --json` says no-module before nvmet is loaded; with nvmet + nvmet-tcp loaded
# and a target on a loopback TCP port exporting the null_blk disk as namespace 1 it lists the
# namespace (enabled,
# buffered_io off, backed by nb0) and gives the verdict of this kernel (Debian's 6.1 has no
# per-namespace cgroup_id: "absent"; a 7.5+ kernel would say "present"). And the cgroup ID
# ioqos computes (`ioqosctl show`, the directory's inode) is the ID the kernel itself reports
# for that cgroup (tracefs event cgroup:cgroup_mkdir, field id=). Then the plugin with
# nvmet.namespaces on that target (test_nvmet.py HostV2).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BUILD=${IOQOS_E2E_BUILD:-${IOQOS_E2E_SHARES%%:*}}
if [ -z "$BUILD" ] || [ ! -x "$BUILD/plugin/ctl/ioqosctl" ] || [ ! -x "$BUILD/plugin/daemon/ioqos-plugin" ]; then
    echo "FAIL - no build tree with ioqosctl and ioqos-plugin (IOQOS_E2E_SHARES=${IOQOS_E2E_SHARES:-})"; exit 1
fi
e2e_in_vm --nullb nb0:size_gb=1 -e IOQOS_E2E_BUILD="$BUILD" -- "$0" "$@"

CTL=$BUILD/plugin/ctl/ioqosctl
CFS=/sys/kernel/config
SUB=nqn.2026-12.io.ioqos:e2e
jq_py() { $PY -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
CFG=/tmp/nvmet-e2e.json
echo '{"devices":[{"select":"nb0","capacity":{"bandwidthBytesPerSec":209715200,"iops":50000}}]}' > $CFG
probe() { "$CTL" probe --json --config $CFG; }

check_eq "before nvmet is loaded: no-module" no-module "$(probe | jq_py 'd["nvmet"]["state"]')"
check "modprobe nvmet nvmet-tcp" modprobe -a nvmet nvmet-tcp
check "configfs is mounted" test -d $CFS/nvmet/subsystems
out=$(probe)
check_eq "loaded, no namespace: present" present "$(echo "$out" | jq_py 'd["nvmet"]["state"]')"
check_eq "no namespace: the cgroup_id verdict is unknown" unknown "$(echo "$out" | jq_py 'd["nvmet"]["cgroupID"]')"

# a loop target: subsystem, namespace 1 on the null_blk disk, a loop port
mkdir $CFS/nvmet/subsystems/$SUB && echo 1 > $CFS/nvmet/subsystems/$SUB/attr_allow_any_host
mkdir $CFS/nvmet/subsystems/$SUB/namespaces/1
echo -n /dev/nb0 > $CFS/nvmet/subsystems/$SUB/namespaces/1/device_path
check "namespace 1 enables" sh -c "echo 1 > $CFS/nvmet/subsystems/$SUB/namespaces/1/enable"
# a TCP port on loopback (Debian's kernel has no nvme-loop transport)
mkdir $CFS/nvmet/ports/1
echo tcp > $CFS/nvmet/ports/1/addr_trtype
echo ipv4 > $CFS/nvmet/ports/1/addr_adrfam
echo 127.0.0.1 > $CFS/nvmet/ports/1/addr_traddr
echo 4420 > $CFS/nvmet/ports/1/addr_trsvcid
check "the subsystem is exported on a loopback TCP port" ln -s $CFS/nvmet/subsystems/$SUB $CFS/nvmet/ports/1/subsystems/$SUB
out=$(probe)
info "probe: $(echo "$out" | jq_py 'json.dumps(d["nvmet"])')"
check_eq "one namespace listed" "$SUB 1" "$(echo "$out" | jq_py '" ".join("%s %d" % (n["subsystem"], n["nsid"]) for n in d["nvmet"]["namespaces"])')"
check_eq "it is enabled" True "$(echo "$out" | jq_py 'd["nvmet"]["namespaces"][0]["enabled"]')"
check_eq "buffered_io is off" False "$(echo "$out" | jq_py 'd["nvmet"]["namespaces"][0]["bufferedIO"]')"
check_eq "backed by the null_blk disk" nb0 "$(echo "$out" | jq_py 'd["nvmet"]["namespaces"][0].get("disk")')"
if [ -e $CFS/nvmet/subsystems/$SUB/namespaces/1/cgroup_id ]; then
    check_eq "the kernel has cgroup_id: present" present "$(echo "$out" | jq_py 'd["nvmet"]["cgroupID"]')"
else
    check_eq "this kernel has no cgroup_id: absent" absent "$(echo "$out" | jq_py 'd["nvmet"]["cgroupID"]')"
    echo "$out" > /tmp/nvmet-probe.json
    check "the verdict says why" grep -q 'Linux 7.5+' /tmp/nvmet-probe.json
fi
text=$("$CTL" probe --config $CFG)
check "the text report lists the namespace" sh -c "echo \"\$0\" | grep -q 'namespace $SUB/1: enabled, buffered_io off, block device /dev/nb0'" "$text"

# the cgroup ID: what ioqos computes vs what the kernel reports
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
T=/sys/kernel/tracing
echo 1 > $T/events/cgroup/cgroup_mkdir/enable
echo > $T/trace
CGD=$CG/ioqos-nvmet-e2e
mkdir $CGD
echo 0 > $T/events/cgroup/cgroup_mkdir/enable
kid=$(grep -o 'cgroup_mkdir: root=[0-9]* id=[0-9]* level=1 path=/ioqos-nvmet-e2e' $T/trace | sed 's/.* id=\([0-9]*\) .*/\1/')
oid=$("$CTL" show --cgroup $CGD | sed -n '1s/.*(cgroup v2, id \([0-9]*\)).*/\1/p')
info "cgroup $CGD: kernel id ${kid:-?}, ioqosctl show id ${oid:-?}"
check "the kernel reported an id for the new cgroup" test -n "$kid"
check_eq "ioqos's cgroup ID is the kernel's" "$kid" "$oid"
rmdir $CGD

# the plugin with nvmet.namespaces on this target: it makes the namespace cgroup on the
# real kernel, takes the units, says whether the kernel charges the namespace, and removes
# the cgroup when the entry goes (tests/plugin/test_nvmet.py HostV2)
(cd "$E2E_REPO/tests/plugin" &&
    IOQOS_PLUGIN_BIN=$BUILD/plugin/daemon/ioqos-plugin IOQOS_CTL_BIN=$CTL \
    IOQOS_PROTO_PY_DIR=$BUILD/proto/python PYTHONDONTWRITEBYTECODE=1 IOQOS_NVMET_V2_DISK=nb0 \
    IOQOS_NVMET_V2_SUB=$SUB $PY test_nvmet.py HostV2 > /tmp/test-nvmet.out 2>&1)
rc=$?
cat /tmp/test-nvmet.out
check_eq "the plugin's namespace cgroup on a real kernel (test_nvmet.py HostV2)" 0 "$rc"
check "the v2 test ran (not skipped)" sh -c '! grep -q "skipped" /tmp/test-nvmet.out'

# tear the target down (the VM goes anyway; modules must unload cleanly)
rm $CFS/nvmet/ports/1/subsystems/$SUB && rmdir $CFS/nvmet/ports/1
echo 0 > $CFS/nvmet/subsystems/$SUB/namespaces/1/enable
rmdir $CFS/nvmet/subsystems/$SUB/namespaces/1 && rmdir $CFS/nvmet/subsystems/$SUB
check "the target is gone" test ! -e $CFS/nvmet/subsystems/$SUB
e2e_summary

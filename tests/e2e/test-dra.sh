#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# e2e DRA mode on a real cgroup v2 kernel: the daemon in --mode=dra inside the VM, the
# python3-grpcio kubelet stand-in registers it and prepares a claim for a pod whose cgroup
# exists (as kubelet has it before the sandbox): io.max is written and read back by the
# kernel before the answer, a process in the pod cgroup is charged there, unprepare clears.
# The test is tests/plugin/test_dra.py HostV2 (skipped outside the VM).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BUILD=${IOQOS_E2E_BUILD:-${IOQOS_E2E_SHARES%%:*}}
if [ -z "$BUILD" ] || [ ! -x "$BUILD/plugin/daemon/ioqos-plugin" ]; then
    echo "FAIL - no build tree with ioqos-plugin (IOQOS_E2E_SHARES=${IOQOS_E2E_SHARES:-})"; exit 1
fi
e2e_in_vm --nullb nb0:mbps=200:size_gb=1 -e IOQOS_E2E_BUILD="$BUILD" -- "$0" "$@"

cd "$E2E_REPO/tests/plugin" || exit 1
IOQOS_PLUGIN_BIN=$BUILD/plugin/daemon/ioqos-plugin IOQOS_CTL_BIN=$BUILD/plugin/ctl/ioqosctl \
    IOQOS_PROTO_PY_DIR=$BUILD/proto/python PYTHONDONTWRITEBYTECODE=1 IOQOS_DRA_V2_DISK=nb0 \
    $PY test_dra.py HostV2 > /tmp/test-dra.out 2>&1
rc=$?
cat /tmp/test-dra.out
check_eq "DRA prepare/unprepare on real cgroup v2 (test_dra.py HostV2)" 0 "$rc"
check "the v2 test ran (not skipped)" sh -c '! grep -q "skipped" /tmp/test-dra.out'
e2e_summary

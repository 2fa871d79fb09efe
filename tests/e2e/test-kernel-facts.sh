#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# e2e kernel facts: what Debian's 6.1 kernel accepts in the cgroup v2 io files, checked on
# the real kernel so the project's writers and capability probe rest on verified facts.
#   - io.weight forms: "default N" and "N" always; "MAJ:MIN N" only for a device with
#     iocost enabled in the root io.cost.qos (EOPNOTSUPP otherwise)
#   - io.max readback format, "max" clearing, ENODEV for a partition
#   - io.bfq.weight: "N", "default N", "MAJ:MIN N" on a BFQ disk; EOPNOTSUPP on a non-BFQ disk
#   - io.latency absent; io.cost.qos/io.cost.model formats
#   - memory.high gives a buffered writer held by io.max a dirty limit of its own (the page
#     cache bound of pods without a grant, docs/ungranted.md)
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_in_vm --nullb nb0:mbps=200:sched=bfq --nullb nb1:mbps=200 \
    --virtio-disk vd0:size=256M --virtio-disk pt0:size=64M -- "$0" "$@"

NB0=$(devno nb0) NB1=$(devno nb1) VD0=$(devno "$IOQOS_E2E_DISK_VD0")
T=$(mkcg facts)

# write FILE VALUE -> prints "ok" or the errno text
w() { if echo "$2" > "$1" 2>/tmp/w.err; then echo ok; else sed 's/.*write error: //' /tmp/w.err; fi; }

# --- io.weight without iocost -----------------------------------------------------------
check_eq "io.weight 'default 200' without iocost" ok "$(w $T/io.weight 'default 200')"
check_eq "io.weight readback" "default 200" "$(cat $T/io.weight)"
check_eq "io.weight 'N' without iocost" ok "$(w $T/io.weight '300')"
check_eq "io.weight 'N' sets the default" "default 300" "$(cat $T/io.weight)"
check_eq "io.weight 'MAJ:MIN N' without iocost -> EOPNOTSUPP" "Operation not supported" "$(w $T/io.weight "$NB1 400")"
check_eq "io.weight range: 0 rejected" "Invalid argument" "$(w $T/io.weight 0)"
check_eq "io.weight range: 10001 rejected" "Invalid argument" "$(w $T/io.weight 10001)"

# --- iocost ----------------------------------------------------------------------------
info "io.cost.qos before: '$(cat $CG/io.cost.qos)' io.cost.model before: '$(cat $CG/io.cost.model)'"
check_eq "io.cost.qos enable=1 on a null_blk" ok "$(w $CG/io.cost.qos "$NB1 enable=1")"
check_eq "io.cost.qos enable=1 ctrl=user min=100 max=100 on virtio" ok \
    "$(w $CG/io.cost.qos "$VD0 enable=1 ctrl=user min=100 max=100")"
info "io.cost.qos: $(tr '\n' '|' < $CG/io.cost.qos)"
info "io.cost.model: $(tr '\n' '|' < $CG/io.cost.model)"
check "io.cost.qos lists the device with enable=1" grep -q "^$NB1 enable=1 ctrl=auto" $CG/io.cost.qos
check "io.cost.model lists the device (linear model)" grep -q "^$NB1 ctrl=auto model=linear" $CG/io.cost.model
check_eq "io.weight 'MAJ:MIN N' with iocost on that device" ok "$(w $T/io.weight "$NB1 400")"
check_eq "io.weight 'MAJ:MIN N' on another iocost device" ok "$(w $T/io.weight "$VD0 500")"
check_eq "io.weight 'MAJ:MIN N' still EOPNOTSUPP where iocost is off" "Operation not supported" \
    "$(w $T/io.weight "$NB0 600")"
check_eq "io.weight 'default N' with iocost" ok "$(w $T/io.weight 'default 250')"
check_eq "io.weight readback lists default then devices" "default 250|$VD0 500|$NB1 400|" \
    "$(tr '\n' '|' < $T/io.weight)"
check_eq "io.weight 'MAJ:MIN default' removes the device entry" ok "$(w $T/io.weight "$VD0 default")"
check_eq "io.weight readback after removal" "default 250|$NB1 400|" "$(tr '\n' '|' < $T/io.weight)"
check_eq "io.cost.qos enable=0" ok "$(w $CG/io.cost.qos "$NB1 enable=0")"

# --- io.bfq.weight ---------------------------------------------------------------------
check "io.bfq.weight exists in a child" test -f $T/io.bfq.weight
check_eq "io.bfq.weight 'N'" ok "$(w $T/io.bfq.weight 150)"
check_eq "io.bfq.weight 'default N'" ok "$(w $T/io.bfq.weight 'default 160')"
check_eq "io.bfq.weight 'MAJ:MIN N' on a bfq disk" ok "$(w $T/io.bfq.weight "$NB0 170")"
check_eq "io.bfq.weight 'MAJ:MIN N' on a non-bfq disk -> EOPNOTSUPP" "Operation not supported" \
    "$(w $T/io.bfq.weight "$NB1 180")"
check_eq "io.bfq.weight readback" "default 160|$NB0 170|" "$(tr '\n' '|' < $T/io.bfq.weight)"
check_eq "io.bfq.weight range: 1001 rejected (ERANGE)" "Numerical result out of range" "$(w $T/io.bfq.weight 1001)"

# --- io.max ------------------------------------------------------------------------------
check_eq "io.max 'MAJ:MIN wbps=N'" ok "$(w $T/io.max "$NB1 wbps=10485760")"
check_eq "io.max readback has all four keys" "$NB1 rbps=max wbps=10485760 riops=max wiops=max" "$(cat $T/io.max)"
check_eq "io.max keys update independently" ok "$(w $T/io.max "$NB1 riops=1000")"
check_eq "io.max readback after partial update" "$NB1 rbps=max wbps=10485760 riops=1000 wiops=max" "$(cat $T/io.max)"
check_eq "io.max all max" ok "$(w $T/io.max "$NB1 rbps=max wbps=max riops=max wiops=max")"
check_eq "io.max all max removes the line" "" "$(cat $T/io.max)"
check_eq "io.max on an unknown device -> ENODEV" "No such device" "$(w $T/io.max "240:250 wbps=1")"
check_eq "io.max on the root cgroup does not exist" "" "$(ls $CG/io.max 2>/dev/null)"

# A partition: io.max and io.cost.qos reject it with ENODEV.
PT=$IOQOS_E2E_DISK_PT0
$PY - "$PT" <<'EOF'
import struct, sys
mbr = bytearray(512)
mbr[446:462] = struct.pack('<B3sB3sII', 0, b'\0\0\0', 0x83, b'\0\0\0', 2048, 65536)
mbr[510:512] = b'\x55\xaa'
with open(sys.argv[1], 'r+b') as f: f.write(mbr)
EOF
blockdev --rereadpt "$PT"
P1=$(cat /sys/block/${PT#/dev/}/${PT#/dev/}1/dev 2>/dev/null)
check "partition ${PT}1 appeared" test -n "$P1"
check_eq "io.max on a partition -> ENODEV" "No such device" "$(w $T/io.max "$P1 wbps=1048576")"
check_eq "io.cost.qos on a partition -> ENODEV" "No such device" "$(w $CG/io.cost.qos "$P1 enable=1")"
check_eq "io.max on the partition's disk works" ok "$(w $T/io.max "$(devno "$PT") wbps=1048576")"

# --- io.latency, misc ------------------------------------------------------------------------
check "io.latency does not exist (CONFIG_BLK_CGROUP_IOLATENCY off)" test ! -e $T/io.latency
check "io.prio.class does not exist in 6.1" test ! -e $T/io.prio.class
check_eq "virtio disks report rotational" 1 "$(cat /sys/block/${IOQOS_E2E_DISK_VD0#/dev/}/queue/rotational)"
check_eq "null_blk reports non-rotational" 0 "$(cat /sys/block/nb1/queue/rotational)"
info "scheduler nb1: $(cat /sys/block/nb1/queue/scheduler), vd0: $(cat /sys/block/${IOQOS_E2E_DISK_VD0#/dev/}/queue/scheduler)"

# --- memory.high and a throttled buffered writer -------------------------------------------
# io.max holds buffered writes at writeback only: the writer dirties at memory speed and its
# dirty and under-writeback pages pile up behind the cap, up to the node-wide dirty limit.
# memory.high gives its cgroup a dirty limit of its own (a fifth of its page cache room) and
# the kernel then paces the writer where it dirties. The same writer (dd, buffered, raw vd0,
# held to 4 MiB/s) for 3 s without and with memory.high = 32 MiB; queued = file_dirty +
# file_writeback of its memory.stat, the most seen.
queued_mib() { awk '$1 == "file_dirty" || $1 == "file_writeback" { s += $2 } END { print int(s / 1048576) }' \
    "$1/memory.stat"; }
buffered_run() {
    local c=$1 most=0 q i
    in_cg "$c" dd if=/dev/zero of="$IOQOS_E2E_DISK_VD0" bs=1M count=200 status=none &
    local pid=$!
    for i in $(seq 30); do
        q=$(queued_mib "$c")
        [ "$q" -gt "$most" ] && most=$q
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    kill $pid 2>/dev/null
    wait $pid 2>/dev/null
    # drain what it left at full speed, so the next run starts clean
    echo "$VD0 wbps=max" > "$c/io.max"
    sync
    echo "$most"
}
FREE=$(mkcg facts-pc/free) BOUND=$(mkcg facts-pc/bound)
echo "$VD0 wbps=4194304" > "$FREE/io.max"
echo "$VD0 wbps=4194304" > "$BOUND/io.max"
check_eq "memory.high 32 MiB" ok "$(w "$BOUND/memory.high" $((32 * 1048576)))"
free_q=$(buffered_run "$FREE")
bound_q=$(buffered_run "$BOUND")
info "throttled buffered writer, most MiB dirty + under writeback in 3 s: without memory.high $free_q, with 32 MiB $bound_q"
check "without memory.high the pages pile up behind io.max (> 32 MiB: else this run proves nothing)" \
    test "$free_q" -gt 32
check "with memory.high 32 MiB they stay within half of it" test "$bound_q" -le 16
rmcg "$CG/facts-pc"

rmcg $T
e2e_summary

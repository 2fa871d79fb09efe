#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# e2e smoke test: the VM gives what the project's real-kernel tests need — cgroup v2 with
# io+memory, iocost files in the root, io.max/io.weight/io.bfq.weight in a child, a null_blk
# disk on BFQ, fio inside a kubepods-style child cgroup (accounted in its io.stat),
# /usr/bin/python3 with grpc, unix sockets in /tmp and /run, loopback TCP.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_in_vm --timing --nullb nb0:mbps=200:size_gb=2:sched=bfq -- "$0" "$@"

# --- cgroup v2 -----------------------------------------------------------------------------
check "cgroup2 is mounted at /sys/fs/cgroup" \
    awk '$2 == "/sys/fs/cgroup" && $3 == "cgroup2" { f = 1 } END { exit !f }' /proc/mounts
sc=$(cat $CG/cgroup.subtree_control)
info "root cgroup.subtree_control: $sc"
check "io enabled in the root subtree_control" grep -qw io $CG/cgroup.subtree_control
check "memory enabled in the root subtree_control" grep -qw memory $CG/cgroup.subtree_control
check "io.cost.qos exists in the root" test -f $CG/io.cost.qos
check "io.cost.model exists in the root" test -f $CG/io.cost.model

# --- the null_blk disk ------------------------------------------------------------------
check "null_blk disk nb0 exists (configfs device named after its directory)" test -b /dev/nb0
check "/dev/e2e/nb0 points at it" test "$(readlink -f /dev/e2e/nb0)" = /dev/nb0
check_eq "IOQOS_E2E_DISK_NB0 is set" /dev/nb0 "${IOQOS_E2E_DISK_NB0:-}"
check "nb0 uses bfq" grep -q '\[bfq\]' /sys/block/nb0/queue/scheduler
check_eq "nb0 mbps" 200 "$(cat /sys/kernel/config/nullb/nb0/mbps)"
check_eq "nb0 is not memory backed" 0 "$(cat /sys/kernel/config/nullb/nb0/memory_backed)"
check_eq "nb0 size (512-byte sectors)" $((2 * 1024 * 1024 * 2)) "$(cat /sys/block/nb0/size)"
NB=$(devno nb0)
check_eq "IOQOS_E2E_DISK_NB0_DEVNO" "$NB" "${IOQOS_E2E_DISK_NB0_DEVNO:-}"

# --- a kubepods-style child cgroup ------------------------------------------------------------
POD=$(mkcg kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice)
for f in io.max io.weight io.bfq.weight io.stat io.pressure memory.max; do
    check "child cgroup has $f" test -f "$POD/$f"
done
check "io.max accepts MAJ:MIN wbps=" sh -c "echo '$NB wbps=104857600' > $POD/io.max"
check_eq "io.max reads back" "$NB rbps=max wbps=104857600 riops=max wiops=max" "$(cat $POD/io.max)"
check "io.bfq.weight accepts MAJ:MIN N on a bfq disk" sh -c "echo '$NB 300' > $POD/io.bfq.weight"
check "io.weight accepts 'default N'" sh -c "echo 'default 300' > $POD/io.weight"

# fio in the child cgroup: its I/O is charged there.
in_cg "$POD" fio --name=smoke --filename=/dev/nb0 --rw=write --bs=1M --size=64M --direct=1 \
    --ioengine=libaio --iodepth=4 --output-format=json --output=/tmp/smoke.json > /tmp/fio.out 2>&1
check_eq "fio in the child cgroup succeeded" 0 $?
wb=$(awk -v d="$NB" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) { sub("wbytes=", "", $i); print $i } }' "$POD/io.stat")
check_eq "the child's io.stat charged fio's 64 MiB" 67108864 "${wb:-0}"
info "fio write at io.max 100 MiB/s: $(mib "$(fio_val /tmp/smoke.json write)") MiB/s"
check "a shell can join the child cgroup" in_cg "$POD" sh -c "grep -q pod1234 /proc/self/cgroup"
rmcg $CG/kubepods.slice
check "child cgroups can be removed" test ! -d $CG/kubepods.slice

# --- userland the project's tests rely on -------------------------------------------------
check "/usr/bin/python3 imports grpc" $PY -c 'import grpc'
for dir in /tmp /run; do
    check "unix socket server/client in $dir" $PY - "$dir/e2e-smoke.sock" <<'EOF'
import os, socket, sys, threading
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(path); s.listen(1)
def serve():
    c, _ = s.accept(); c.sendall(c.recv(100).upper()); c.close()
t = threading.Thread(target=serve); t.start()
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.connect(path); c.sendall(b"ping")
assert c.recv(100) == b"PING"
t.join(); os.unlink(path)
EOF
done
check "grpc server on a unix socket answers a client" $PY - <<'EOF'
import grpc
from concurrent import futures
def echo(req, ctx): return req
handler = grpc.method_handlers_generic_handler("e2e.Echo", {
    "Echo": grpc.unary_unary_rpc_method_handler(echo)})
server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
server.add_generic_rpc_handlers((handler,))
server.add_insecure_port("unix:///run/e2e-grpc.sock")
server.start()
with grpc.insecure_channel("unix:///run/e2e-grpc.sock") as ch:
    assert ch.unary_unary("/e2e.Echo/Echo")(b"hello", timeout=30) == b"hello"
server.stop(0)
EOF
check "loopback TCP works" $PY -c '
import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.sendall(b"x"); assert a.recv(1) == b"x"'
check "modprobe works (full module tree)" modprobe dm-mod
check "the repository is writable" sh -c "f=\$(mktemp '$E2E_REPO/.e2e-smoke.XXXXXX') && rm \"\$f\""
check "/dev/shm is a tmpfs" awk '$2 == "/dev/shm" && $3 == "tmpfs" { f = 1 } END { exit !f }' /proc/mounts

e2e_summary

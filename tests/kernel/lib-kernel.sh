# SPDX-License-Identifier: Apache-2.0
# Helpers for the real-kernel tests in tests/kernel (sourced; bash).
# Every cgroup, loop device, file and process they create is tracked and removed
# by the EXIT trap that kt_cleanup_init installs, also when a test fails.

KT_CGROUPS=() KT_LOOPS=() KT_FILES=() KT_PIDS=()
KT_TMP=""
PY=/usr/bin/python3
# shellcheck source=../support/fio.sh
. "$(dirname "${BASH_SOURCE[0]}")/../support/fio.sh"

kt_die() { echo "FAIL - $*" >&2; exit 1; }

kt_cleanup() {
    local rc=$? p d l
    for p in "${KT_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    for p in "${KT_PIDS[@]}"; do wait "$p" 2>/dev/null; done
    # cgroups: newest first, children before parents; move stray processes out.
    for ((i = ${#KT_CGROUPS[@]} - 1; i >= 0; i--)); do
        d=${KT_CGROUPS[$i]}
        [ -d "$d" ] || continue
        while read -r sub; do
            while read -r p; do
                echo "$p" > "$(kt_cgroup_root_of "$sub")/cgroup.procs" 2>/dev/null
            done < "$sub/cgroup.procs"
            rmdir "$sub" 2>/dev/null || echo "cleanup: cannot remove $sub" >&2
        done < <(find "$d" -depth -type d)
    done
    for l in "${KT_LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
    for l in "${KT_FILES[@]}"; do rm -f "$l"; done
    [ -z "$KT_TMP" ] || rm -rf "$KT_TMP"
    exit "$rc"
}

kt_cleanup_init() {
    trap kt_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    KT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ioqos-kt.XXXXXX") || kt_die "mktemp"
}

# The hierarchy root a cgroup directory belongs to (where stray processes go).
kt_cgroup_root_of() {
    case $1 in
        /sys/fs/cgroup/blkio/*) echo /sys/fs/cgroup/blkio ;;
        *) echo /sys/fs/cgroup ;;
    esac
}

kt_track_cgroup() { KT_CGROUPS+=("$1"); }
kt_track_pid() { KT_PIDS+=("$1"); }

# Host prerequisites for the v1 tests; prints why and returns 1 when missing.
kt_need_v1_host() {
    if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root (cgroup and loop devices)"; return 1; fi
    if [ ! -f /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device ]; then
        echo "SKIP: no cgroup v1 blkio hierarchy at /sys/fs/cgroup/blkio"; return 1
    fi
    if ! command -v losetup >/dev/null || ! command -v partx >/dev/null; then
        echo "SKIP: losetup/partx not found (util-linux)"; return 1
    fi
    if ! losetup -f >/dev/null 2>&1; then echo "SKIP: no free loop device"; return 1; fi
    return 0
}

# kt_loop SIZE_MB: a loop device backed by a sparse file, in $KT_DEV
# (not printed: the device must be tracked by this shell, not a subshell).
kt_loop() {
    local img
    KT_DEV=""
    img=$(mktemp "$KT_TMP/disk.XXXXXX") || return 1
    truncate -s "${1}M" "$img" || return 1
    KT_DEV=$(losetup -f --show "$img") || return 1
    KT_LOOPS+=("$KT_DEV")
}

# kt_loop_with_partition SIZE_MB: a loop device with one partition (${KT_DEV}p1)
kt_loop_with_partition() {
    local img
    KT_DEV=""
    img=$(mktemp "$KT_TMP/disk.XXXXXX") || return 1
    truncate -s "${1}M" "$img" || return 1
    # An MBR with one Linux partition from sector 2048 to the end.
    "$PY" - "$img" "$1" <<'EOF' || return 1
import struct, sys
path, mb = sys.argv[1], int(sys.argv[2])
sectors = mb * 2048 - 2048
entry = struct.pack('<B3sB3sII', 0, b'\0\0\0', 0x83, b'\0\0\0', 2048, sectors)
with open(path, 'r+b') as f:
    mbr = bytearray(512)
    mbr[446:462] = entry
    mbr[510:512] = b'\x55\xaa'
    f.write(mbr)
EOF
    KT_DEV=$(losetup -f --show "$img") || return 1
    KT_LOOPS+=("$KT_DEV")
    partx -a "$KT_DEV" >/dev/null 2>&1 || true  # already scanned is fine
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do
        [ -e "/sys/class/block/${KT_DEV#/dev/}p1/dev" ] && break
        sleep 0.1
    done
    [ -e "/sys/class/block/${KT_DEV#/dev/}p1/dev" ] || { echo "no partition on $KT_DEV" >&2; return 1; }
}

kt_devno() { cat "/sys/class/block/${1#/dev/}/dev"; }

# kt_set_sched /dev/X SCHED  (returns 1 if the scheduler is not available)
kt_set_sched() {
    local f=/sys/block/${1#/dev/}/queue/scheduler
    grep -qw "$2" "$f" || modprobe "$2" 2>/dev/null
    grep -qw "$2" "$f" || grep -q "\[$2\]" "$f" || return 1
    echo "$2" > "$f" && grep -q "\[$2\]" "$f"
}

# kt_in_cgroup DIR CMD... : run CMD inside cgroup DIR (the shell moves itself, then execs)
kt_in_cgroup() {
    local cg=$1; shift
    sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}


# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034
# Shared helpers for the e2e test scripts (sourced; bash).
#
# A test script is run on the host (by ctest); it re-executes itself inside the VM with
# e2e_in_vm [vm-run options...] and then runs its checks there. Checks are counted and
# the script ends with e2e_summary, which prints "N passed, N failed" and sets the exit
# status.

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
E2E_REPO=$(cd "$E2E_DIR/../.." && pwd -P)
E2E_PASS=0
E2E_FAIL=0
CG=/sys/fs/cgroup
PY=/usr/bin/python3
# shellcheck source=../support/fio.sh
. "$E2E_REPO/tests/support/fio.sh"

# Re-execute the calling script inside the VM (no-op when already inside).
# Usage: e2e_in_vm [vm-run options] -- "$0" "$@"
e2e_in_vm() {
    if [ -n "${IOQOS_E2E_VM:-}" ]; then return 0; fi
    if [ "${IOQOS_E2E_SKIP:-0}" = 1 ]; then
        echo "SKIP: IOQOS_E2E_SKIP=1"; exit 77
    fi
    exec "$E2E_DIR/vm-run" "$@"
}

ok() { E2E_PASS=$((E2E_PASS + 1)); echo "ok   - $*"; }
not_ok() { E2E_FAIL=$((E2E_FAIL + 1)); echo "FAIL - $*"; }
info() { echo "info - $*"; }

# check "description" command...   (passes when the command succeeds)
check() {
    local what=$1; shift
    local out
    if out=$("$@" 2>&1); then ok "$what"; else not_ok "$what${out:+: $out}"; fi
}

# check_eq "description" expected actual
check_eq() {
    if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1: expected '$2', got '$3'"; fi
}

# check_range "description" value lo hi   (floating point, inclusive)
check_range() {
    if awk -v v="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(v >= lo && v <= hi) }'; then
        ok "$1 ($2 in [$3, $4])"
    else
        not_ok "$1: $2 not in [$3, $4]"
    fi
}

e2e_summary() {
    echo "e2e: $E2E_PASS passed, $E2E_FAIL failed"
    [ "$E2E_FAIL" = 0 ]
}

# --- cgroup helpers (inside the VM) ------------------------------------------------------

# Make a cgroup path under /sys/fs/cgroup, enabling io and memory on every ancestor.
mkcg() {
    local rel=$1 p=$CG part
    local IFS=/
    for part in $rel; do
        [ -n "$part" ] || continue
        grep -qw io "$p/cgroup.subtree_control" || echo "+io +memory" > "$p/cgroup.subtree_control"
        p=$p/$part
        mkdir -p "$p"
    done
    echo "$p"
}

# Run a command inside cgroup directory $1 (the process moves itself, then execs).
in_cg() {
    local cg=$1; shift
    sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}

# Move every process out of a cgroup tree and remove it (children first).
rmcg() {
    local d
    [ -d "$1" ] || return 0
    find "$1" -depth -type d | while read -r d; do
        while read -r pid; do echo "$pid" > "$CG/cgroup.procs" 2>/dev/null; done < "$d/cgroup.procs"
        rmdir "$d" 2>/dev/null
    done
}

devno() { cat "/sys/block/${1#/dev/}/dev"; }

mib() { awk -v a="$1" 'BEGIN { printf "%.1f", a / 1048576 }'; }

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The shipped binaries carry the hardening CMakeLists.txt asks for (issue 12):
# PIE, full RELRO (GNU_RELRO + BIND_NOW), stack canaries (-fstack-protector-strong
# makes every function with a local array call __stack_chk_fail) and glibc's
# checked functions (_FORTIFY_SOURCE=2: __*_chk imports).
#   check-hardening.sh BINARY...
# Exit 0 all hardened, 1 a property missing (each one named), 2 usage/tools.
set -u
[ $# -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
command -v readelf >/dev/null || { echo "readelf not found (binutils)" >&2; exit 2; }
rc=0
miss() { echo "FAIL $1: $2"; rc=1; bad=1; }
for b in "$@"; do
    bad=0
    [ -f "$b" ] || { miss "$b" "missing"; continue; }
    readelf -h "$b" | grep -q 'Type:[[:space:]]*DYN' || miss "$b" "not a position-independent executable (PIE)"
    readelf -lW "$b" | grep -q 'GNU_RELRO' || miss "$b" "no GNU_RELRO segment (-Wl,-z,relro)"
    readelf -dW "$b" | grep -Eq '\(BIND_NOW\)|FLAGS.*\bNOW\b' || miss "$b" "not bound at load time (-Wl,-z,now): RELRO is partial"
    syms=$(readelf --dyn-syms -W "$b")
    echo "$syms" | grep -q '__stack_chk_fail' || miss "$b" "no stack protector (__stack_chk_fail not imported)"
    echo "$syms" | grep -Eq '__[a-z_]+_chk(@|$| )' || miss "$b" "no _FORTIFY_SOURCE checked functions (__*_chk not imported)"
    [ $bad = 0 ] && echo "ok $b: PIE, full RELRO, stack protector, FORTIFY"
done
exit $rc

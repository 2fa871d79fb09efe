#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# scripts/test.sh: what `make test` runs, in stages, with a wall-time table at the end.
#
#   deps        the Debian packages (scripts/deps.sh; nothing when all are present)
#   build       cmake configure + build into $BUILD
#   host        unit, integration, manifests, fuzz and build checks, IOQOS_TEST_JOBS at a
#               time (default 4): most of them wait on sockets and timers, not the CPU
#   kernel      cgroup v1 on this host (root), one at a time
#   vm          cgroup v2 in the qemu VM (label e2e), one at a time: each boots a VM with
#               2 vCPUs under TCG, and its measurements want the machine to themselves
#   cluster     upstream Kubernetes v1.37.2 around ioqos (label cluster): the components
#               built once per machine, then the scenarios
#   asan-build  a second build with ASan + UBSan into $BUILD-asan (no fuzz sub-build: the
#               fuzz targets already ran under libFuzzer's own ASan), compiled at nice 19
#               beside the host stage (log: $BUILD/asan-build.log)
#   asan        the unit and integration tests again under ASan + UBSan (valgrind runs
#               excluded: they are in the host stage), IOQOS_TEST_JOBS at a time
#
# Every stage after the build runs even when an earlier one failed, so one run reports every
# failure; the exit status is 1 when any stage failed. Environment:
#   DEB_PACKAGES (from the Makefile), BUILD (build), JOBS (nproc: compile jobs), CMAKE_FLAGS,
#   IOQOS_TEST_JOBS (4),
#   IOQOS_TEST_STAGES (all of the above, space separated: run only those),
#   IOQOS_TEST_TIMES (a file the table is also written to).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
CMAKE_FLAGS=${CMAKE_FLAGS:-}
TJ=${IOQOS_TEST_JOBS:-4}
STAGES=${IOQOS_TEST_STAGES:-deps build host kernel vm cluster asan-build asan}
[[ $TJ =~ ^[1-9][0-9]*$ ]] || { echo "test.sh: IOQOS_TEST_JOBS wants a count, got '$TJ'" >&2; exit 2; }
for s in $STAGES; do
    case " deps build host kernel vm cluster asan-build asan " in
        *" $s "*) ;;
        *) echo "test.sh: unknown stage '$s' in IOQOS_TEST_STAGES" >&2; exit 2 ;;
    esac
done

ROWS=() FAILED=() BAD=0 T_ALL=$(date +%s)

# stage NAME COMMAND... : runs COMMAND when NAME is selected, records its wall time and result.
stage() {
    local name=$1 t0 rc
    shift
    case " $STAGES " in *" $name "*) ;; *) return 0 ;; esac
    echo "=== make test: $name ($(date -u +%H:%M:%S))"
    t0=$(date +%s)
    "$@"
    rc=$?
    ROWS+=("$(printf '%-11s %6d s  %s' "$name" $(($(date +%s) - t0)) \
        "$([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)")")")
    [ $rc = 0 ] || BAD=1
    return $rc
}

# ctest_in DIR ARGS... : ctest in DIR; the names of failed tests go to FAILED.
ctest_in() {
    local dir=$1 rc _ name
    shift
    (cd "$dir" && ctest --output-on-failure --timeout 900 "$@")
    rc=$?
    if [ $rc != 0 ] && [ -f "$dir/Testing/Temporary/LastTestsFailed.log" ]; then
        while IFS=: read -r _ name; do FAILED+=("$name ($dir)"); done \
            < "$dir/Testing/Temporary/LastTestsFailed.log"
    fi
    return $rc
}

configure_build() {  # DIR EXTRA_CMAKE_ARGS...
    local dir=$1
    shift
    # shellcheck disable=SC2086 # CMAKE_FLAGS is a list of flags
    cmake -S . -B "$dir" "$@" $CMAKE_FLAGS && cmake --build "$dir" -j "$JOBS"
}

report() {
    local r f
    echo
    echo "=== make test: wall time per stage (IOQOS_TEST_JOBS=$TJ, $(nproc) CPUs)"
    for r in "${ROWS[@]}"; do echo "  $r"; done
    printf '  %-11s %6d s\n' total $(($(date +%s) - T_ALL))
    for f in "${FAILED[@]}"; do echo "  failed: $f"; done
    if [ -n "${IOQOS_TEST_TIMES:-}" ]; then
        { for r in "${ROWS[@]}"; do echo "$r"; done
          for f in "${FAILED[@]}"; do echo "failed: $f"; done; } > "$IOQOS_TEST_TIMES"
    fi
}
trap report EXIT

# shellcheck disable=SC2086 # DEB_PACKAGES is a list of package names (from the Makefile)
stage deps ./scripts/deps.sh ${DEB_PACKAGES:?set by the Makefile} || exit 1
stage build configure_build "$BUILD" || exit 1
# The ASan build compiles beside the host tests, at the lowest CPU priority: those tests
# mostly wait on sockets and timers and leave a core idle, the VM and cluster stages after
# them want the machine to themselves. Its output goes to $BUILD/asan-build.log (shown if it fails).
ASAN_PID="" ASAN_RC=0
case " $STAGES " in
    *" asan-build "*)
        echo "=== make test: asan-build ($(date -u +%H:%M:%S), beside host, log $BUILD/asan-build.log)"
        ( trap - EXIT
          renice -n 19 -p "$BASHPID" > /dev/null
          t0=$(date +%s)
          configure_build "$BUILD-asan" -DIOQOS_SANITIZE=ON -DIOQOS_FUZZ_TESTS=OFF \
              > "$BUILD/asan-build.log" 2>&1
          echo "$? $(($(date +%s) - t0))" > "$BUILD/asan-build.stage" ) &
        ASAN_PID=$! ;;
esac
stage host ctest_in "$BUILD" -j "$TJ" -LE 'kernel|e2e|cluster'
if [ -n "$ASAN_PID" ]; then
    wait "$ASAN_PID"
    read -r ASAN_RC secs < "$BUILD/asan-build.stage" || ASAN_RC=1
    if [ "$ASAN_RC" != 0 ]; then
        echo "=== make test: asan-build failed (exit $ASAN_RC); the end of $BUILD/asan-build.log:"
        tail -n 60 "$BUILD/asan-build.log"
        BAD=1
    fi
    ROWS+=("$(printf '%-11s %6d s  %s' asan-build "${secs:-0}" "$([ "$ASAN_RC" = 0 ] &&
        echo "ok (beside host, nice 19)" || echo "FAILED (exit $ASAN_RC)")")")
fi
stage kernel ctest_in "$BUILD" -j 1 -L kernel
stage vm ctest_in "$BUILD" -j 1 -L e2e
stage cluster ctest_in "$BUILD" -j 1 -L cluster
[ "$ASAN_RC" = 0 ] && stage asan ctest_in "$BUILD-asan" -j "$TJ" -L 'unit|integration' -E valgrind
exit $BAD

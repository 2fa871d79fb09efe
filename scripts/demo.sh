#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make demo: the isolation scenario on a real kernel, one short round (a few minutes).
# A "db" pod (4k random I/O) next to a "backup" pod (1 MiB sequential writes) on one
# finite disk, inside a throw-away cgroup v2 VM (Debian's kernel under qemu TCG):
# db alone, then with the backup and no QoS, with io.weight 500/10 (the published
# method), with ioqos grants through the real plugin, and the harness-ceiling control.
# The table at the end compares them side by side; docs/benchmark.md explains it.
# Results (JSON, table, plot) go to bench-results/. The full run is `make bench`.
set -eu
build=${1:-build}
cd "$(dirname "$0")/.."
exec tests/bench/run.sh --demo --build "$build"

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run-fuzzer.sh FUZZER WORK_CORPUS SEED_CORPUS SECONDS
# Runs a libFuzzer target for SECONDS (IOQOS_FUZZ_SECONDS in the environment wins: `make fuzz`). New inputs go to WORK_CORPUS (in the
# build tree), never into the seeds in the source tree. A crash, leak or
# timeout fails the test and leaves the reproducer in WORK_CORPUS/..
set -eu
fuzzer=$1 work=$2 seeds=$3 secs=${IOQOS_FUZZ_SECONDS:-$4}
[ -x "$fuzzer" ] || { echo "run-fuzzer: $fuzzer is not built" >&2; exit 1; }
mkdir -p "$work"
cd "$(dirname "$work")"
exec "$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 "$work" "$seeds"

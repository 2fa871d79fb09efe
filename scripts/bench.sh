#!/bin/sh
# make bench: every benchmark, results printed and saved under bench-results/.
set -eu
build=${1:-build}
mkdir -p bench-results
echo "== calibration of the disk holding $(pwd) (5 s per phase)"
"$build/plugin/ctl/ioqosctl" calibrate --dir "$(pwd)" --seconds 5 --no-save | tee bench-results/calibrate.txt

#!/bin/sh
# make demo: shows what ioqos sees and would enforce on this machine.
# (The real-kernel protection demo replaces this once the VM scenario lands.)
set -eu
build=${1:-build}
echo "== ioqosctl probe: managed disks, capabilities and capacity on this machine"
"$build/plugin/ctl/ioqosctl" probe

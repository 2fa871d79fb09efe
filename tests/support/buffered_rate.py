#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""buffered_rate.py CGROUP CHARGE_CGROUP DEVNO DISK BYTES FILE [SAMPLES]

Writes BYTES through the page cache into FILE (dd bs=1M conv=fsync) from a process
placed in cgroup v2 directory CGROUP, and measures the steady writeback rate at the
disk: /sys/block/DISK/stat's written sectors, sampled every 0.25 s, rate taken between
20% and 80% of BYTES (the start, before writeback runs, and the final fsync are left
out). Caches are dropped before and FILE removed after, so runs are comparable.

Prints one line: "RC STEADY_BYTES_PER_S WHOLE_BYTES_PER_S CHARGED_BYTES" where RC is
dd's exit code, WHOLE the rate over the whole run (dirtying and fsync included, wall
clock) and CHARGED the growth of CHARGE_CGROUP's io.stat wbytes for DEVNO (what the
kernel charged to that cgroup for the run's writeback). With SAMPLES, the samples go
there too, a line "SECONDS MIB_AT_THE_DISK" each (IOQOS_E2E_DEBUG in test-iomax-accuracy).

Used by tests/kernel/v2-enforce.sh and tests/e2e/test-iomax-accuracy.sh (both inside
the e2e VM), which also run it unthrottled as the same run's reference: under TCG the
writer itself may be slower than a limit when the host is busy.
"""
import os
import subprocess
import sys
import time


def charged(cgroup, devno):
    with open(os.path.join(cgroup, "io.stat")) as f:
        for line in f:
            fields = line.split()
            if fields and fields[0] == devno:
                kv = dict(x.split("=", 1) for x in fields[1:])
                return int(kv.get("wbytes", 0))
    return 0


def written(disk):
    with open("/sys/block/%s/stat" % disk) as f:
        return int(f.read().split()[6]) * 512


def main(argv):
    if len(argv) not in (7, 8):
        sys.exit(__doc__)
    cgroup, charge_cg, devno, disk, total, path = argv[1:7]
    total = int(total)
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    c0, w0 = charged(charge_cg, devno), written(disk)
    t0 = time.monotonic()
    p = subprocess.Popen(["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup,
                          "dd", "if=/dev/zero", "of=" + path, "bs=1M",
                          "count=%d" % (total >> 20), "conv=fsync", "status=none"])
    samples = []
    while p.poll() is None:
        samples.append((time.monotonic(), written(disk) - w0))
        time.sleep(0.25)
    t1 = time.monotonic()
    samples.append((t1, written(disk) - w0))
    lo = next((s for s in samples if s[1] >= 0.2 * total), samples[0])
    hi = [s for s in samples if s[1] <= 0.8 * total] or [samples[-1]]
    hi = hi[-1]
    steady = (hi[1] - lo[1]) / (hi[0] - lo[0]) if hi[0] > lo[0] else 0
    got = charged(charge_cg, devno) - c0
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    os.sync()
    if len(argv) == 8:
        with open(argv[7], "w") as f:
            for t, b in samples:
                f.write("%.2f %d\n" % (t - t0, b >> 20))
    print(p.returncode, int(steady), int(total / (t1 - t0)), got)


if __name__ == "__main__":
    main(sys.argv)

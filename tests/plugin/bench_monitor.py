#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The grant monitor's cost (docs/benchmark.md "Grant monitor overhead"):
CPU per pass and per 100 granted pods, as a share of one core at the
default interval (1 s). Prints numbers; asserts nothing about time.

  /usr/bin/python3 tests/plugin/bench_monitor.py --build BUILD_DIR [--pods 100] [--seconds 30]

The daemon runs against the kubelet and API server stand-ins on a cgroup v2
temp tree: N granted pods on one fake disk, each with an io.stat and an
io.pressure that a feeder advances every second (so every pass computes
rates and verdicts), and the disk's block stat. The monitor's own CPU is its
thread's CPU time over its passes (ioqos_monitor_cpu_seconds_total); the
daemon's whole CPU over the same time is printed beside it. On a real kernel
io.stat is generated per read (one line per device with I/O): a little more
than reading a temp file, the same order."""
import argparse
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="build dir")
    ap.add_argument("--pods", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--out", help="also write the numbers as JSON here")
    args = ap.parse_args()
    b = os.path.abspath(args.build)
    os.environ["IOQOS_PLUGIN_BIN"] = os.path.join(b, "plugin/daemon/ioqos-plugin")
    os.environ["IOQOS_PROTO_PY_DIR"] = os.path.join(b, "proto/python")
    sys.path.insert(0, HERE)
    import harness as h
    env = h.Env(bw_bytes=10 * args.pods * h.MIB, iops=1000 * args.pods, reconcile_s=10,
                extra_config={"monitor": {"intervalSeconds": 1}})
    res = {"pods": args.pods, "interval_s": 1}
    stop = threading.Event()
    try:
        d = env.start_daemon(extra=["--log-level", "warn"])
        k = env.kubelet
        k.wait_registered(h.BW)
        k.wait_registered(h.IOPS)
        d.wait_ready(timeout=60)
        cgs = []
        t = PluginAdmit(env, h)
        for i in range(args.pods):
            cgs.append(t.grant("p%03d" % i))
        stat = os.path.join(env.sysfs_root, "class/block/fakedisk0/stat")

        def feed():
            n = 0
            while not stop.wait(1.0):
                n += 1
                for cg in cgs:
                    h.set_io_stat(cg, "250:0", rbytes=n * (256 << 10), wbytes=0, rios=n * 64, wios=0)
                    h.write(os.path.join(cg, "io.pressure"),
                            "some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n"
                            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" % (n * 100000))
                h.write(stat, "0 0 %d 0 0 0 %d 0 0 %d %d 0 0 0 0 0 0\n" % (n * 8192 * len(cgs), n * 2048 * len(cgs),
                                                                       n * 500, n * 1000))
        th = threading.Thread(target=feed, daemon=True)
        th.start()
        while d.metric("ioqos_monitor_pods") != args.pods:
            time.sleep(0.5)
        time.sleep(3)
        p0, c0, w0 = d.metric("ioqos_monitor_passes_total"), d.metric("ioqos_monitor_cpu_seconds_total"), \
            proc_cpu(d.proc.pid)
        t0 = time.monotonic()
        time.sleep(args.seconds)
        p1, c1, w1 = d.metric("ioqos_monitor_passes_total"), d.metric("ioqos_monitor_cpu_seconds_total"), \
            proc_cpu(d.proc.pid)
        el = time.monotonic() - t0
        res.update({
            "seconds": el, "passes": p1 - p0,
            "monitor_cpu_s_per_pass": (c1 - c0) / (p1 - p0),
            "monitor_cpu_percent_of_core": (c1 - c0) / el * 100.0,
            "monitor_cpu_percent_per_100_pods": (c1 - c0) / el * 100.0 * 100.0 / args.pods,
            "daemon_cpu_percent_of_core": (w1 - w0) / el * 100.0,
            "last_pass_wall_s": d.metric("ioqos_monitor_pass_duration_seconds"),
            "verdicts_within": sum(1 for i in range(args.pods)
                                   if d.metric("ioqos_pod_grant_verdict", pod="p%03d" % i, verdict="within") == 1),
        })
        print("grant monitor, %d granted pods, interval 1 s, %.0f s:" % (args.pods, el))
        print("  passes                     %d" % res["passes"])
        print("  monitor CPU per pass       %.3f ms" % (res["monitor_cpu_s_per_pass"] * 1000))
        print("  monitor CPU                %.3f %% of one core (%.3f %% per 100 pods)" % (
            res["monitor_cpu_percent_of_core"], res["monitor_cpu_percent_per_100_pods"]))
        print("  last pass wall time        %.3f ms" % (res["last_pass_wall_s"] * 1000))
        print("  whole daemon CPU           %.3f %% of one core (reconcile, ungranted, metrics scrapes)" %
              res["daemon_cpu_percent_of_core"])
        print("  pods classified 'within'   %d of %d" % (res["verdicts_within"], args.pods))
        if args.out:
            with open(args.out, "w") as f:
                json.dump(res, f, indent=1)
    finally:
        stop.set()
        env.close()


class PluginAdmit:
    """admit + PreStart of a granted pod (1 bandwidth unit), as the tests do."""

    def __init__(self, env, h):
        self.env, self.h = env, h

    def grant(self, name):
        h, env, k = self.h, self.env, self.env.kubelet
        uid = h.new_uid()
        env.api.put_pod(h.pod_object(name, uid, bw=1))
        taken = set(i for _, _, c in k.pod_resources for r in c.values() for i in r.get(h.BW, []))
        avail = [i for i in h.ids_of(k.plugins[h.BW].lists[-1]) if i not in taken]
        chosen = list(k.preferred(h.BW, avail, size=1).container_responses[0].deviceIDs)
        k.allocate(h.BW, chosen)
        k.set_pod("default", name, {"app": {h.BW: chosen}})
        cg = h.v2_pod_cgroup(env.cgroup_root, uid, "burstable", atomic=True)
        k.prestart(h.BW, chosen)
        return cg


if __name__ == "__main__":
    main()

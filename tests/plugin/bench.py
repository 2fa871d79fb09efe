#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ioqos-plugin benchmark: RPC latency with 10k units advertised per resource,
idle RSS and CPU. Prints numbers; asserts nothing about time.

  /usr/bin/python3 tests/plugin/bench.py --build BUILD_DIR [--out bench-results/plugin.json]

The daemon runs against the kubelet and API server stand-ins on a cgroup v2
temp tree (one fake disk with 10000 bandwidth and 10000 IOPS units, the
production reconcile interval of 10 s). Latency is measured at the client
(kubelet stand-in, python grpcio, so it includes python's own overhead) and
at the server (the daemon's ioqos_rpc_duration_seconds histogram)."""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

UNITS = 10000
ITER = 200


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def timed(fn, n=ITER):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def proc_stat(pid):
    with open("/proc/%d/status" % pid) as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu_ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return rss, cpu_ticks


def idle(pid, seconds):
    hz = os.sysconf("SC_CLK_TCK")
    _, c0 = proc_stat(pid)
    t0 = time.monotonic()
    time.sleep(seconds)
    rss, c1 = proc_stat(pid)
    return rss, (c1 - c0) / hz / (time.monotonic() - t0) * 100.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="also write the numbers as JSON here")
    ap.add_argument("--idle-seconds", type=float, default=20.0)
    ap.add_argument("--build", help="build dir: sets IOQOS_PLUGIN_BIN and IOQOS_PROTO_PY_DIR")
    args = ap.parse_args()
    if args.build:
        os.environ["IOQOS_PLUGIN_BIN"] = os.path.join(os.path.abspath(args.build), "plugin/daemon/ioqos-plugin")
        os.environ["IOQOS_PROTO_PY_DIR"] = os.path.join(os.path.abspath(args.build), "proto/python")
    sys.path.insert(0, HERE)
    import harness as h
    env = h.Env(bw_bytes=UNITS * h.MIB, iops=UNITS * 100, reconcile_s=10)
    res = {"units_per_resource": UNITS, "iterations": ITER}
    try:
        d = env.start_daemon(extra=["--log-level", "warn"])
        k = env.kubelet
        t0 = time.perf_counter()
        k.wait_registered(h.BW)
        k.wait_registered(h.IOPS)
        lst = k.wait_list(h.BW, lambda l: len(l) == UNITS, timeout=60)
        k.wait_list(h.IOPS, lambda l: len(l) == UNITS, timeout=60)
        res["start_to_both_lists_s"] = time.perf_counter() - t0
        d.wait_ready(timeout=60)
        pid = d.proc.pid
        time.sleep(2)
        res["rss_kib_after_start"], res["idle_cpu_percent_after_start"] = idle(pid, args.idle_seconds)

        avail = h.ids_of(lst)
        from deviceplugin.v1beta1 import api_pb2 as dp
        res["list_message_bytes"] = len(dp.ListAndWatchResponse(
            devices=[dp.Device(ID=i, health="Healthy") for i in avail]).SerializeToString())

        opts = k.channel(h.BW).unary_unary("/v1beta1.DevicePlugin/GetDevicePluginOptions",
                                          request_serializer=dp.Empty.SerializeToString,
                                          response_deserializer=dp.DevicePluginOptions.FromString)
        lat = {}
        lat["GetDevicePluginOptions"] = timed(lambda: opts(dp.Empty(), timeout=10))
        lat["GetPreferredAllocation (10k available, size 100)"] = timed(
            lambda: k.preferred(h.BW, avail, size=100))
        lat["Allocate (100 IDs)"] = timed(lambda: k.allocate(h.BW, avail[:100]))
        lat["Allocate (10k IDs)"] = timed(lambda: k.allocate(h.BW, avail), n=50)

        # PreStart: full path (pod resources List, pod cache, cgroup write + read-back)
        uid = h.new_uid()
        env.api.put_pod(h.pod_object("bench", uid, bw=100, iops=100))
        k.set_pod("default", "bench", {"app": {h.BW: avail[:100], h.IOPS: h.ids_of(k.plugins[h.IOPS].lists[-1])[:100]}})
        h.v2_pod_cgroup(env.cgroup_root, uid)
        k.prestart(h.BW, avail[:100])  # warm-up: the first one may GET the pod on a cache miss
        lat["PreStartContainer (pod with 200 units)"] = timed(lambda: k.prestart(h.BW, avail[:100]))

        res["client_latency_ms"] = {
            name: {"p50": 1000 * statistics.median(xs), "p99": 1000 * pct(xs, 99),
                   "max": 1000 * max(xs), "n": len(xs)} for name, xs in lat.items()}
        server = {}
        for m in ("GetDevicePluginOptions", "GetPreferredAllocation", "Allocate", "PreStartContainer"):
            s = d.metric("ioqos_rpc_duration_seconds_sum", resource=h.BW, method=m)
            c = d.metric("ioqos_rpc_duration_seconds_count", resource=h.BW, method=m)
            if s is not None and c:
                server[m] = {"mean_ms": 1000 * s / c, "n": int(c)}
        res["server_latency_ms"] = server
        time.sleep(2)
        res["rss_kib_after_load"], res["idle_cpu_percent_after_load"] = idle(pid, args.idle_seconds)
        res["exit_code"] = d.terminate()
    finally:
        env.close()

    print("ioqos-plugin benchmark: %d units per resource advertised" % UNITS)
    print("  start to both device lists at kubelet: %.3f s" % res["start_to_both_lists_s"])
    print("  ListAndWatch message: %d bytes" % res["list_message_bytes"])
    print("  client-side latency (python grpcio kubelet stand-in):")
    for name, v in res["client_latency_ms"].items():
        print("    %-48s p50 %8.3f ms  p99 %8.3f ms  max %8.3f ms  (n=%d)" %
              (name, v["p50"], v["p99"], v["max"], v["n"]))
    print("  server-side latency (ioqos_rpc_duration_seconds, mean over all calls):")
    for name, v in res["server_latency_ms"].items():
        print("    %-48s mean %8.3f ms  (n=%d)" % (name, v["mean_ms"], v["n"]))
    print("  idle after start: RSS %d KiB, CPU %.3f %% of one core (over %.0f s)" %
          (res["rss_kib_after_start"], res["idle_cpu_percent_after_start"], args.idle_seconds))
    print("  idle after load:  RSS %d KiB, CPU %.3f %% of one core (over %.0f s)" %
          (res["rss_kib_after_load"], res["idle_cpu_percent_after_load"], args.idle_seconds))
    print("  exit code after SIGTERM: %d" % res["exit_code"])
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=2)
        print("  written: %s" % args.out)
    return 0 if res["exit_code"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

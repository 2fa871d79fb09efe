#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Extender benchmark (part of `make bench`).

For 100, 1000 and 5000 nodes in both nodeCacheCapable modes: the latency of
a filter + prioritize pair as kube-scheduler issues them (client-side wall
time over a keep-alive connection, p50/p99) and the extender's memory (RSS
after the run, and its peak). In names mode the extender's node cache is fed
by list+watch from the local API-server stand-in; in full-node mode every
request carries the Node objects as client-go marshals them. Plus the JSON
parse throughput of full-node requests, measured in-process.

Usage: bench.py [--build-dir build] [--out bench-results/extender.json] [--quick]
"""
import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "support"))

import k8s  # noqa: E402
from apiserver import ApiServer  # noqa: E402  (tests/support)


def make_nodes(n):
    nodes = []
    for i in range(n):
        disks = [k8s.disk("nvme0n1", 2000, cap_iops=500, alloc_bw=(i * 37) % 2000, dev="259:0"),
                 k8s.disk("nvme1n1", 2000, cap_iops=500, alloc_bw=(i * 53) % 2000, dev="259:1")]
        nodes.append(k8s.node("node-%05d" % i, disks))
    return nodes


def rss_kib(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def pct(sorted_vals, p):
    i = min(len(sorted_vals) - 1, int(round(p / 100.0 * (len(sorted_vals) - 1))))
    return sorted_vals[i]


def measure(ext, filter_body, prio_body, iters):
    conn = ext.conn(timeout=120)
    hdr = {"Content-Type": "application/json"}

    def one(verb, body):
        conn.request("POST", "/" + verb, body=body, headers=hdr)
        r = conn.getresponse()
        data = r.read()
        if r.status != 200:
            raise RuntimeError("HTTP %d: %s" % (r.status, data[:300]))
        return data

    for _ in range(min(5, iters)):  # warm-up
        one("filter", filter_body)
        one("prioritize", prio_body)
    # this process also holds the API stand-in's thousands of objects: keep
    # Python's collector from pausing the client in the middle of a sample
    gc.collect()
    gc.freeze()
    gc.disable()
    times = []
    try:
        for _ in range(iters):
            t0 = time.perf_counter()
            one("filter", filter_body)
            one("prioritize", prio_body)
            times.append(time.perf_counter() - t0)
    finally:
        gc.enable()
        gc.unfreeze()
    conn.close()
    times.sort()
    return {"p50_ms": pct(times, 50) * 1e3, "p99_ms": pct(times, 99) * 1e3, "iters": iters}


def bench_names(Extender, n, iters, pod):
    from extproc import TOKEN  # main() has imported extproc by now
    api = ApiServer(token=TOKEN).start()
    try:
        for node in make_nodes(n):
            api.set_node(node)
        with Extender("--log-level", "info", api=api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, timeout=300, what="node cache sync")
            # a live cluster sends node updates all the time; the first one after
            # the list lets the cache hand the list's memory back (see nodecache.c)
            api.set_node(make_nodes(1)[0])
            time.sleep(2)  # let the one-time list teardown finish before sampling
            names = ["node-%05d" % i for i in range(n)]
            body = json.dumps(k8s.filter_args(pod, names=names), separators=(",", ":")).encode()
            res = measure(ext, body, body, iters)
            res.update(rss_kib(ext.proc.pid))
            res["request_bytes"] = len(body)
            return res
    finally:
        api.stop()


def bench_full(Extender, n, iters, pod):
    with Extender("--log-level", "info") as ext:
        body = json.dumps(k8s.filter_args(pod, nodes=make_nodes(n)), separators=(",", ":")).encode()
        res = measure(ext, body, body, iters)
        res.update(rss_kib(ext.proc.pid))
        res["request_bytes"] = len(body)
        return res


def parse_throughput(parse_bin, n, pod, reps):
    body = json.dumps(k8s.filter_args(pod, nodes=make_nodes(n)), separators=(",", ":"))
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        f.write(body)
        f.flush()
        out = subprocess.run([parse_bin, f.name, str(reps)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--out", help="write the results as JSON here too")
    ap.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run)")
    a = ap.parse_args()
    bindir = os.path.abspath(a.build_dir)
    os.environ["IOQOS_EXT_BIN"] = os.path.join(bindir, "scheduler-ext", "ioqos-scheduler-ext")
    parse_bin = os.path.join(bindir, "tests", "extender", "ext-bench-parse")
    import extproc  # reads IOQOS_EXT_BIN
    extproc.BIN = os.environ["IOQOS_EXT_BIN"]
    Extender = extproc.Extender

    pod = k8s.pod("bench", containers=[k8s.container("db", bw=300, iops=20)],
                  init=[k8s.container("proxy", bw=20, sidecar=True)])
    sizes = (100, 1000, 5000)
    iters = {"names": {100: 400, 1000: 300, 5000: 200}, "full": {100: 200, 1000: 60, 5000: 20}}
    if a.quick:
        iters = {m: {k: max(3, v // 20) for k, v in d.items()} for m, d in iters.items()}

    load_start = os.getloadavg()
    rows = []
    for mode in ("names", "full"):
        for n in sizes:
            fn = bench_names if mode == "names" else bench_full
            r = fn(Extender, n, iters[mode][n], pod)
            r.update(mode=mode, nodes=n)
            rows.append(r)
            print("  measured mode=%s nodes=%d p99=%.2f ms" % (mode, n, r["p99_ms"]), file=sys.stderr)

    parse = [parse_throughput(parse_bin, n, pod, 3 if a.quick else 10) for n in sizes]

    print()
    print("ioqos-scheduler-ext: filter + prioritize (one pair as kube-scheduler sends them)")
    print("%-10s %6s %12s %10s %10s %10s %10s %7s" % ("mode", "nodes", "request", "p50 ms", "p99 ms",
                                                     "RSS MiB", "peak MiB", "iters"))
    for r in rows:
        print("%-10s %6d %10.1fKi %10.2f %10.2f %10.1f %10.1f %7d" % (
            "names" if r["mode"] == "names" else "full-node", r["nodes"], r["request_bytes"] / 1024.0,
            r["p50_ms"], r["p99_ms"], r["VmRSS"] / 1024.0, r["VmHWM"] / 1024.0, r["iters"]))
    print()
    print("full-node JSON parse throughput (in-process, 64 KiB chunks, median)")
    print("%6s %12s %10s %10s %14s" % ("nodes", "request", "parse ms", "MiB/s", "filter ms"))
    for p in parse:
        print("%6d %10.1fMi %10.2f %10.1f %14.2f" % (p["nodes"], p["bytes"] / 1048576.0,
                                                       p["parse_s"] * 1e3, p["parse_mib_s"], p["filter_s"] * 1e3))
    load_end = os.getloadavg()
    print()
    print("machine: %d CPUs, load average %.2f at start, %.2f at end (other work on the machine "
          "shows up in p99)" % (os.cpu_count(), load_start[0], load_end[0]))
    goal = [r for r in rows if r["mode"] == "names" and r["nodes"] == 5000][0]
    print()
    print("goal: names mode p99 < 5 ms at 5000 nodes: %.2f ms (%s)" % (
        goal["p99_ms"], "met" if goal["p99_ms"] < 5 else "NOT met"))
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump({"latency": rows, "parse": parse}, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The ctest's assertions on a short isolation run (bench-results style
isolation.json from report.py). Only what holds on a noisy 2-core TCG
machine: no ratios, no targets.

  - every case: ioqos db IOPS > 2 x contended (the grants clearly protect)
  - every pod start: 0 bytes of I/O before the limit, io.max in place and read
    back when PreStartContainer returned, no process in the pod cgroup yet
  - the backup never exceeds its grant by more than 15 % (the cap holds)
  - the grant monitor (monitor.starvedWindowSeconds short): no IoqosGrantNotMet
    in the ioqos stage (grants kept; the db is latency-bound below its
    bandwidth grant), and at least one, within window + 10 s of the writers'
    first I/O, in ioqos+host (a direct writer outside the pods fills the
    disk), naming ungranted I/O as the cause. + 10 s: under TCG on a loaded
    machine the disk reaches "full" only in some seconds (12.4 s seen with
    the host's load average at 14; 5.4-6.4 s otherwise)
  - with a pod without a grant next to them (stage ioqos+1u, when run): db IOPS
    > 2 x contended, the backup >= 0.75 of its grant, the ungranted pod <= 1.1 x
    the pool (headroomShare x what the disk does not advertise + unheld units), and its bound in io.max when its
    container started

usage: check_robust.py ISOLATION_JSON
"""
import json
import sys


def main():
    s = json.load(open(sys.argv[1]))
    fails, oks = [], []

    def check(cond, what):
        (oks if cond else fails).append(what)

    check(s["cases"], "at least one case ran")
    for c in s["cases"]:
        st = c["stages"]
        name = "%s %s + %s" % (c["device"], c["db"], c["backup"])
        if "ioqos" in st and "contended" in st:
            check(st["ioqos"]["db_iops"] > 2 * st["contended"]["db_iops"],
                  "%s: ioqos db IOPS %.0f > 2 x contended %.0f" % (name, st["ioqos"]["db_iops"],
                                                                   st["contended"]["db_iops"]))
        if "ioqos" in st and "monitor_not_met" in st["ioqos"]:
            check(st["ioqos"]["monitor_not_met"] == 0,
                  "%s: ioqos: no IoqosGrantNotMet (got %d: %s)" % (
                      name, st["ioqos"]["monitor_not_met"], ", ".join(st["ioqos"]["monitor_not_met_pods"])))
        if "ioqos+host" in st:
            h = st["ioqos+host"]
            win, first = h.get("monitor_window_s"), h.get("monitor_first_not_met_s")
            check(h.get("monitor_not_met", 0) >= 1 and first is not None and first <= win + 10,
                  "%s: ioqos+host: IoqosGrantNotMet within the window (%s s) + 10 s of the writers' "
                  "start: %s, first after %s s" % (name, win, h.get("monitor_not_met_pods"),
                                                   "%.1f" % first if first is not None else "never"))
            check("ungranted I/O" in h.get("monitor_causes", []),
                  "%s: ioqos+host: the cause named is ungranted I/O (%s)" % (name, h.get("monitor_causes")))
        if c.get("satisfaction") is not None:
            check(c["satisfaction"] <= 1.15, "%s: backup achieved/granted %.3f <= 1.15" % (name, c["satisfaction"]))
        if "ioqos+1u" in st and "contended" in st:
            u, x = c.get("ungranted", {}).get("ioqos+1u", {}), st["ioqos+1u"]
            check(x["db_iops"] is not None and x["db_iops"] > 2 * st["contended"]["db_iops"],
                  "%s: ioqos+1u db IOPS %.0f > 2 x contended %.0f" % (name, x["db_iops"] or 0, st["contended"]["db_iops"]))
            # 0.75, not the report's 0.95 target: under TCG the ungranted
            # writer's CPU slows the backup too (0.899 seen on a clean clone
            # with nothing wrong); a pool that let the ungranted pod take the
            # backup's share would leave it near 0.5
            sat = u.get("satisfaction")
            check(sat is not None and 0.75 <= sat <= 1.15,
                  "%s: ioqos+1u backup achieved/granted %.3f in 0.75..1.15" % (name, sat or 0))
            agg, pool = x.get("nb_aggregate_bytes"), x.get("pool_bytes")
            check(agg is not None and pool and agg <= 1.1 * pool,
                  "%s: ioqos+1u pod without a grant %.1f MiB/s <= 1.1 x pool %.1f MiB/s" % (
                      name, (agg or 0) / 1048576.0, (pool or 0) / 1048576.0))
            check(x.get("nb_starts") and x.get("nb_bound_at_start") == x.get("nb_starts"),
                  "%s: ioqos+1u bound in place when the ungranted container started (%s of %s)" % (
                      name, x.get("nb_bound_at_start"), x.get("nb_starts")))
        e = c["enforce"]
        if e["runs"]:
            check(e["bytes_before_limit_max"] == 0, "%s: bytes before the limit = %s" % (name, e["bytes_before_limit_max"]))
            check(e["limit_in_place_at_return"], "%s: io.max in place when PreStartContainer returned" % name)
            check(e["procs_at_return_max"] == 0, "%s: no process in the pod cgroup before the container" % name)
    for w in oks:
        print("ok   - " + w)
    for w in fails:
        print("FAIL - " + w)
    print("bench check: %d passed, %d failed" % (len(oks), len(fails)))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The ctest's assertions on a short isolation run (bench-results style
isolation.json from report.py). Only what holds on a noisy 2-core TCG
machine: no ratios, no targets.

  - the db's IOPS (ioqos and ioqos+1u against contended, and the control stage's when the
    run has one) and the backup's floor beside the pod without a grant are printed, not asserted:
    they are performance figures (make bench / make demo judge them against targets). Under
    TCG with a CPU hog beside the VM the db's 4k I/O and the writers are CPU-bound: with the
    grants in place it measured ioqos 351 / ioqos+1u 81 IOPS against contended 227 and
    control 788, and the backup 0.605 of its grant. What this test asserts is what the
    grants are made of, which holds on a loaded machine: limits in place before the first
    I/O, caps that hold, the monitor's verdicts
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
  - with a pod without a grant next to them (stage ioqos+1u, when run): the backup
    <= 1.15 of its grant, the ungranted pod <= 1.1 x its bound: the pool (headroomShare x
    what the disk does not advertise + unheld units), or, where a granted pod lent part of its
    grant during the window, the mean of the pod's io.max over it; and its bound in io.max
    when its container started
  - lending (stage wake-up, when run): with db and backup granted and idle the plugin lends
    (its lent gauge > 0) and the pod without a grant's caps exceed the pool nobody holds; once
    db and backup run, every lent byte is taken back (a reclaim logged, each within 1000 ms of
    the lender's last quiet sample, while the db runs never more lent than the rule allows for
    the lenders' measured rates), the backup <= 1.15 of its grant
    and the pod without a grant <= 1.1 x the pool over the db's window. What the pod wrote with
    the lent part (against the disk) and the reclaim times are printed: performance figures

usage: check_robust.py ISOLATION_JSON
"""
import json
import sys


def note_gain(note, name, stage, st):
    """STAGE's db IOPS against contended and the control stage of the same run (printed)."""
    cont = st["contended"]["db_iops"]
    got = st[stage].get("db_iops")
    ctl = st.get("control", {}).get("db_iops")
    ceiling = ("%.2f" % ((got - cont) / (ctl - cont))
               if got is not None and ctl is not None and ctl > cont else "n/a")
    note("%s: %s db IOPS %s, contended %.0f, control %s: ioqos/ceiling %s" % (
        name, stage, "%.0f" % got if got is not None else "none", cont,
        "%.0f" % ctl if ctl is not None else "not run", ceiling))


def caps_hold(check, name, stage, x, u, where=""):
    """A stage with pods without a grant: the backup within 15 % of its grant (u: the case's
    "ungranted" figures of the stage) and those pods within 1.1 x their bound (x: the stage).
    Their bound is the pool, plus what a granted pod lends while it uses less than its grant:
    with lending on, a db slowed by a busy host (TCG) lends part of its grant while it runs,
    and the bound is then the mean of their io.max over the window (seen with one CPU hog:
    a pool of 20 MiB/s, a bound of 1.43 x it at times, the pod at 22.1 MiB/s). Whether the
    lent part is taken back is the wake-up stage's check."""
    sat = u.get("satisfaction")
    check(sat is not None and sat <= 1.15,
          "%s: %s backup achieved/granted %.3f <= 1.15" % (name, stage, sat or 0))
    agg, pool = x.get("nb_aggregate_bytes"), x.get("pool_bytes")
    bound, lent = pool, ""
    if pool and (x.get("nb_caps_mean_sum_bytes") or 0) > pool:
        bound = x["nb_caps_mean_sum_bytes"]
        lent = " + the lent part: their io.max over the window"
    check(agg is not None and bound and agg <= 1.1 * bound,
          "%s: %s pod without a grant %.1f MiB/s <= 1.1 x bound %.1f MiB/s (pool %.1f MiB/s%s)%s" % (
              name, stage, (agg or 0) / 1048576.0, (bound or 0) / 1048576.0, (pool or 0) / 1048576.0,
              lent, where))
    return sat


def main():
    s = json.load(open(sys.argv[1]))
    fails, oks, notes = [], [], []

    def check(cond, what):
        (oks if cond else fails).append(what)

    check(s["cases"], "at least one case ran")
    for c in s["cases"]:
        st = c["stages"]
        name = "%s %s + %s" % (c["device"], c["db"], c["backup"])
        for stage in ("ioqos", "ioqos+1u"):
            if stage in st and "contended" in st:
                note_gain(notes.append, name, stage, st)
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
            # the cap holds (asserted); the floor is a performance figure (printed): under
            # TCG the ungranted writer's CPU slows the backup too (0.899 seen on a clean
            # clone, 0.605 with a CPU hog beside the VM, nothing wrong in either)
            sat = caps_hold(check, name, "ioqos+1u", x, u)
            notes.append("%s: ioqos+1u backup achieved/granted %.3f (make bench target 0.95-1.10)"
                         % (name, sat or 0))
            check(x.get("nb_starts") and x.get("nb_bound_at_start") == x.get("nb_starts"),
                  "%s: ioqos+1u bound in place when the ungranted container started (%s of %s)" % (
                      name, x.get("nb_bound_at_start"), x.get("nb_starts")))
        if "wake-up" in st:
            w, x = st["wake-up"], c.get("ungranted", {}).get("wake-up", {})
            check((w.get("lent_bytes") or 0) > 0,
                  "%s: wake-up: the idle grants lent (%.1f MiB/s after %s s)" % (
                      name, (w.get("lent_bytes") or 0) / 1048576.0, w.get("lent_after_s")))
            check(w.get("reclaim_ms") and max(w["reclaim_ms"]) <= 1000,
                  "%s: wake-up: the lent part taken back, each within 1000 ms (reclaim_ms %s)" % (
                      name, w.get("reclaim_ms")))
            # Not "nothing lent while the db runs": a db the machine's load slows
            # below half its grant rightly lends the rest (6.3 MiB/s seen with a
            # CPU hog beside the VM); what may never happen is lending beyond the
            # rule for the rates the pods had (isolation.lent_beyond_rule)
            lb = w.get("lent_beyond_rule")
            check(lb is not None and lb["bytes"] <= 65536,  # 64 KiB/s: float rounding, nothing more
                  "%s: wake-up: while the db ran, nothing lent beyond the lending rule for db's and backup's "
                  "rates (worst: %s)" % (name, lb and "lent %.1f, allowed %.1f MiB/s at %.1f s" % (
                      lb["lent_bytes"] / 1048576.0, lb["allowed_bytes"] / 1048576.0, lb["at_s"])))
            caps_hold(check, name, "wake-up", w, x, " over the db's window")
            notes.append("%s: wake-up: with the grants idle the pod without a grant wrote %.1f MiB/s "
                         "(%.2f of the disk; pool %.1f MiB/s with the lent part); reclaim_ms median %s, max %s" % (
                             name, (w.get("idle_grants_nb_bytes") or 0) / 1048576.0,
                             w.get("idle_grants_nb_vs_disk") or 0, (w.get("idle_grants_pool_bytes") or 0) / 1048576.0,
                             w.get("reclaim_ms_median"), w.get("reclaim_ms_max")))
            if "ioqos+1u" in st and "contended" in st:
                note_gain(notes.append, name, "wake-up", st)
        e = c["enforce"]
        if e["runs"]:
            check(e["bytes_before_limit_max"] == 0, "%s: bytes before the limit = %s" % (name, e["bytes_before_limit_max"]))
            check(e["limit_in_place_at_return"], "%s: io.max in place when PreStartContainer returned" % name)
            check(e["procs_at_return_max"] == 0, "%s: no process in the pod cgroup before the container" % name)
    for w in notes:
        print("info - " + w)
    for w in oks:
        print("ok   - " + w)
    for w in fails:
        print("FAIL - " + w)
    print("bench check: %d passed, %d failed" % (len(oks), len(fails)))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()

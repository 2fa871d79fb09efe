#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the raw isolation runs (isolation-raw-<kind>.json, written by
isolation.py in the VM) into medians, spreads and ratios: OUT/isolation.json,
the markdown table OUT/isolation.md (also printed) and the plot
OUT/isolation.png (gnuplot, when it is installed).

  report.py --out DIR [--mode full|demo|ctest] RAW.json...

Definitions (docs/benchmark.md explains how to read them):
  protection(stage) = (stage - contended) / (solo - contended) on db IOPS medians
  ceiling           = protection(control): what the harness lets any QoS reach
  ioqos / ceiling   = (ioqos - contended) / (control - contended)
  satisfaction      = backup achieved / granted bandwidth (ioqos stage)
Targets (shared/DESIGN.md): ioqos / ceiling >= 0.95 and above weight-only;
satisfaction 0.95..1.10; io.max accuracy within 5 %; 0 bytes before the limit.

Pods without a grant (stages ioqos+1u, ioqos+4u, neighbours; issue 11):
  +Nu / ceiling     = (ioqos+Nu - contended) / (control - contended), target >= 0.9
  backup            achieved / granted in ioqos+Nu, target 0.95..1.10
  pool              = headroomShare x unadvertised + unheld units (the plugin's
                      ioqos_ungranted_pool_bytes_per_second beside it)
  neighbours / pool = the ungranted pods' aggregate / pool, target >= 0.9 (ioqos+4u)
  neighbours / disk = their aggregate / capacity with the granted pods idle
                      (neighbours stage; the idle grants lent: nodePolicy.ungranted.lend),
                      target >= 0.8
  db wake-up ms     = from the db's first I/O until a 0.2 s window runs at >= 0.9
                      of its steady rate (wake-up stage, one per round), target
                      median <= 250, p90 <= 500
  bytes before bound  the plugin's bytes_before= of each bound it placed, target 0
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

MIB = 1024 * 1024
STAGE_ORDER = ("solo", "contended", "weight", "weight-plain", "ioqos", "ioqos+pace", "control",
               "ioqos+1u", "ioqos+4u", "neighbours", "wake-up", "ioqos+burst", "control+1u", "control+4u",
               "ioqos+host")
NB_CONTROL = {"ioqos+1u": "control+1u", "ioqos+4u": "control+4u", "wake-up": "control+1u"}
GRANTED_STAGES = ("ioqos", "ioqos+pace", "ioqos+1u", "ioqos+4u", "neighbours", "wake-up", "ioqos+burst",
                  "ioqos+host")
NEIGHBOUR_STAGES = ("ioqos+1u", "ioqos+4u", "neighbours", "wake-up")
TARGET_CEILING = 0.95
TARGET_CEILING_UNGRANTED = 0.9
TARGET_NB_POOL = 0.9
TARGET_WORK_CONSERVING = 0.8
SAT_LO, SAT_HI = 0.95, 1.10
ACC_TOL = 0.05


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    xs = [x for x in xs if x is not None]
    return [min(xs), max(xs)] if xs else None


def ratio(stage, contended, solo):
    if None in (stage, contended, solo):
        return None
    gap = solo - contended
    if gap <= 0:
        return None
    return (stage - contended) / gap


def fmt_iops(x):
    if x is None:
        return "–"
    return "%.1fk" % (x / 1000.0) if x >= 1000 else "%.0f" % x


def fmt_r(x, nd=2):
    return "–" if x is None else ("%.*f" % (nd, x))


def fmt_sp(sp, f):
    return "" if not sp or sp[0] == sp[1] else " (%s–%s)" % (f(sp[0]), f(sp[1]))


def iops_cell(st, s):
    """A table cell: the db's median IOPS in stage s (with its spread), or – ."""
    if s not in st:
        return "–"
    return fmt_iops(st[s]["db_iops"]) + fmt_sp(st[s]["db_iops_spread"], fmt_iops)


def summarize_neighbours(rs, case, meta):
    """The pods without a grant in one stage's runs: medians over rounds of
    their aggregate and its ratio to the pool (and to the disk), each pod's
    bandwidth (by position: same QoS class and writer every round), the bytes
    each did before its bound (the plugin's log), whether the bound was in
    place when its container started, and whether every bound went with the
    last grant."""
    cap = meta.get("capacity_bw_bytes")
    agg = [r["neighbours_bw_bytes"] for r in rs if "neighbours_bw_bytes" in r]
    pools = [r["pool_bytes"] for r in rs if "pool_bytes" in r]
    mpool = [r.get("metrics", {}).get("ioqos_ungranted_pool_bytes_per_second") for r in rs]
    vs_pool = [r["neighbours_bw_bytes"] / r["pool_bytes"] for r in rs
               if r.get("pool_bytes") and "neighbours_bw_bytes" in r]
    vs_disk = [x / cap for x in agg] if cap else []
    each, vs_cap = {}, {}
    starts = bounded = not_logged = 0
    before, unbounded_after = [], 0
    for r in rs:
        placed = {}
        for f in r.get("ungranted_log", {}).get("placed", []):
            if f.get("pod"):
                placed.setdefault(f["pod"], f)
        for i, n in enumerate(r.get("neighbours", [])):
            key = "%d %s %s" % (i, n["qos"], n["mode"])
            each.setdefault(key, []).append(n.get("bw_bytes"))
            if n.get("cap_mean_bytes"):
                vs_cap.setdefault(key, []).append(n["bw_bytes"] / n["cap_mean_bytes"])
            starts += 1
            bounded += 1 if n.get("iomax_at_start") else 0
            f = placed.get(n["name"])
            if f is None or not isinstance(f.get("bytes_before"), int):
                not_logged += 1
            else:
                before.append(f["bytes_before"])
        unbounded_after += sum(1 for l in r.get("neighbours_iomax_after_release", []) if l)
    gauge = [r.get("metrics", {}).get("ioqos_ungranted_before_bound_max_bytes") for r in rs]
    fails = [r.get("metrics", {}).get("ioqos_ungranted_failures_total") for r in rs]
    holds = [r.get("metrics", {}).get("ioqos_ungranted_owe_holds_total") for r in rs]
    caps_sum = [r["caps_sum_max_bytes"] / r["pool_bytes"] for r in rs
                if r.get("caps_sum_max_bytes") and r.get("pool_bytes")]
    # the bound they had over the db's window, lent part included: per round the sum of each
    # pod's mean io.max wbps (rounds where a pod had no bound at some sample are left out)
    caps_mean = [sum(n["cap_mean_bytes"] for n in r["neighbours"]) for r in rs
                 if r.get("neighbours") and all(n.get("cap_mean_bytes") for n in r["neighbours"])]
    return {
        "nb_count": max([len(r.get("neighbours", [])) for r in rs] or [0]),
        "nb_aggregate_bytes": med(agg), "nb_aggregate_spread": spread(agg),
        "pool_bytes": med(pools), "pool_metric_bytes": med(mpool),
        "nb_vs_pool": med(vs_pool), "nb_vs_pool_spread": spread(vs_pool),
        "nb_vs_disk": med(vs_disk), "nb_vs_disk_spread": spread(vs_disk),
        "nb_each_bytes": {k: med(v) for k, v in each.items()},
        "nb_each_vs_cap": {k: med(v) for k, v in vs_cap.items()},
        "nb_starts": starts, "nb_bound_at_start": bounded, "nb_bound_not_logged": not_logged,
        "nb_bytes_before_max": max(before) if before else None,
        "nb_bytes_before_gauge_max": max([x for x in gauge if x is not None] or [None]),
        "nb_failures_total_max": max([x for x in fails if x is not None] or [None]),
        "nb_owe_holds": [x for x in holds if x is not None],
        "nb_bounds_left_after_release": unbounded_after,
        "nb_caps_sum_vs_pool_max": max(caps_sum) if caps_sum else None,
        "nb_caps_mean_sum_bytes": med(caps_mean),
    }


def pct_nearest(xs, q):
    """The q-quantile of xs by nearest rank (None for no values)."""
    if not xs:
        return None
    ys = sorted(xs)
    return ys[min(len(ys) - 1, max(0, math.ceil(q * len(ys)) - 1))]


def summarize_db_start(rs):
    """The db's start in a stage timed by isolation.wake_transient (wake-up,
    and ioqos+1u as its reference): from its first I/O until a 0.2 s window
    runs at >= 0.9 of its steady rate in the stage; one per round."""
    wt = [r.get("wake_transient") or {} for r in rs]
    wake = [w["to_level_ms"] for w in wt if w.get("to_level_ms") is not None]
    return {
        "wake_ms": wake,
        "wake_ms_median": med(wake),
        "wake_ms_p90": pct_nearest(wake, 0.9),
        "wake_unsettled": sum(1 for w in wt if w and w.get("to_level_ms") is None),
    }


def summarize_burst(rs, meta):
    """The ioqos+burst stage before the db starts: what the backup (annotated
    ioqos.io/burst) wrote with the db granted but idle, against its grant and
    the disk, and the plugin's burst gauge then."""
    cap = meta.get("capacity_bw_bytes")
    b = [r.get("burst") or {} for r in rs]
    before = [x["backup_bytes_per_s"] / x["grant_bytes"] for x in b
              if x.get("backup_bytes_per_s") is not None and x.get("grant_bytes")]
    return {
        "burst_bytes": med([x.get("burst_bytes") for x in b]),
        "burst_after_s": med([x.get("burst_after_s") for x in b]),
        "burst_never": sum(1 for x in b if not x.get("burst_bytes")),
        "backup_alone_vs_grant": med(before),
        "backup_alone_vs_disk": med([x["backup_bytes_per_s"] / cap for x in b
                                     if x.get("backup_bytes_per_s") is not None]) if cap else None,
    }


def summarize_wake_up(rs, meta):
    """The wake-up stage: what the pod without a grant wrote while the idle
    grants were lent to it (against the disk), how long the plugin took to
    take the lent part back once db and backup started (its reclaim_ms log
    field: from the lender's last quiet sample to the cuts), and the worst
    sample of what was lent while the db ran beyond what the lending rule
    allows for the lenders' rates (<= 0: within the rule)."""
    cap = meta.get("capacity_bw_bytes")
    lend = [r.get("lending", {}) for r in rs]
    idle = [l.get("nb_bytes_per_s") for l in lend if l.get("nb_bytes_per_s") is not None]
    rec = [x for r in rs for x in r.get("reclaim_ms", [])]
    return {
        **summarize_db_start(rs),
        "lent_bytes": med([l.get("lent_bytes") for l in lend]),
        "lent_after_s": med([l.get("lent_after_s") for l in lend]),
        "idle_grants_nb_bytes": med(idle),
        "idle_grants_nb_vs_disk": med([x / cap for x in idle]) if cap else None,
        "idle_grants_pool_bytes": med([l.get("pool_bytes") for l in lend]),
        "reclaim_ms": rec,
        "reclaim_ms_median": med(rec),
        "reclaim_ms_max": max(rec) if rec else None,
        # lent while the db ran beyond what the lending rule allows for the
        # lenders' measured rates (isolation.lent_beyond_rule; <= 0: within)
        "lent_beyond_rule": max([r["lent_beyond_rule"] for r in rs if r.get("lent_beyond_rule")],
                                key=lambda x: x["bytes"], default=None),
    }


def summarize_case(case, meta=None):
    failed = [r for r in case["runs"] if "error" in r]
    runs = [r for r in case["runs"] if "error" not in r]
    by = {}
    for r in runs:
        by.setdefault(r["stage"], []).append(r)
    st = {}
    for s, rs in by.items():
        dbs = [r["db"] for r in rs if "db" in r]  # the neighbours stage has no db job
        st[s] = {
            "n": len(rs),
            "db_iops": med([d["iops"] for d in dbs]),
            "db_iops_spread": spread([d["iops"] for d in dbs]),
            "db_lat_mean_us": med([d["lat_mean_us"] for d in dbs]),
            "db_lat_p99_us": med([d["lat_p99_us"] for d in dbs]),
            "db_lat_p99_spread": spread([d["lat_p99_us"] for d in dbs]),
            "backup_bw_bytes": med([r.get("backup", {}).get("bw_bytes") for r in rs]),
            "backup_bw_spread": spread([r.get("backup", {}).get("bw_bytes") for r in rs]),
            # a wal db: its commits' (fdatasync's) latency
            "db_sync_p99_us": med([d.get("sync_p99_us") for d in dbs]),
            "db_sync_max_us": max([d["sync_max_us"] for d in dbs if d.get("sync_max_us") is not None] or [None]),
            # node-wide dirty memory over the db's window (buffered writers' backlog)
            "dirty_max_mib": med([(r.get("meminfo") or {}).get("dirty_max_mib") for r in rs]),
            "writeback_max_mib": med([(r.get("meminfo") or {}).get("writeback_max_mib") for r in rs]),
            # the guest's CPUs (all together) and the plugin over the stage
            "cpu_guest_busy": med([(r.get("cpu") or {}).get("guest_busy") for r in rs]),
            "cpu_plugin_share": med([r["cpu"]["plugin_s"] / (r["cpu"]["window_s"] * r["cpu"]["ncpu"])
                                     for r in rs if (r.get("cpu") or {}).get("plugin_s") is not None
                                     and r["cpu"].get("window_s") and r["cpu"].get("ncpu")]),
        }
        if s in NEIGHBOUR_STAGES or s in NB_CONTROL.values():
            st[s].update(summarize_neighbours(rs, case, meta or {}))
        if s == "wake-up":
            st[s].update(summarize_wake_up(rs, meta or {}))
        if s == "ioqos+burst":
            st[s].update(summarize_burst(rs, meta or {}))
            st[s].update(summarize_db_start(rs))
        elif any(r.get("wake_transient") for r in rs):  # ioqos+1u: the wake-up's reference
            st[s].update(summarize_db_start(rs))
        mons = [r["monitor"] for r in rs if "monitor" in r]
        if mons:  # the grant monitor's Events during the stage (the most of any round)
            notmet = [[e for e in m["events"] if e["reason"] == "IoqosGrantNotMet"] for m in mons]
            st[s].update({
                "monitor_window_s": mons[0]["window_s"],
                "monitor_not_met": max(len(x) for x in notmet),
                "monitor_not_met_pods": sorted({e["name"] for x in notmet for e in x}),
                "monitor_causes": sorted({e["message"].split("most likely cause: ")[-1].split(":")[0]
                                          for x in notmet for e in x}),
                "monitor_first_not_met_s": med([r["monitor_first_not_met_s"] for r in rs
                                                if "monitor_first_not_met_s" in r]),
                "monitor_disk_warnings": max(sum(e["reason"] == "IoqosDiskUnderDelivers" for e in m["events"])
                                             for m in mons),
                "monitor_starved_pod_s": med([m["verdict_seconds"].get("starved", 0) for m in mons]),
            })
    iops = {s: v["db_iops"] for s, v in st.items() if v["db_iops"] is not None}
    solo, cont = iops.get("solo"), iops.get("contended")
    # the plugin paced the disk in every stage (isolation.py --plugin-pace):
    # "contended" ran under that pacing too, so it is no baseline; the ratios
    # are then plain stage / solo and stage / control (a contended of 0)
    paced_all = bool((meta or {}).get("plugin_pace"))
    if paced_all and cont is not None:
        cont = 0.0
    prot = {s: ratio(iops.get(s), cont, solo) for s in ("weight", "weight-plain", "ioqos", "ioqos+pace", "control",
                                                        "ioqos+1u", "ioqos+4u", "control+1u", "control+4u")
            if s in iops}
    # per-round ratios (each round's own solo and contended): the spread
    rounds = sorted(set(r["round"] for r in runs))
    per_round = {s: [] for s in prot}
    per_round_ceiling = []
    per_round_nb_ceiling = {}
    for rd in rounds:
        ri = {r["stage"]: r["db"]["iops"] for r in runs if r["round"] == rd and "db" in r}
        if paced_all and "contended" in ri:
            ri["contended"] = 0.0
        for s in prot:
            per_round[s].append(ratio(ri.get(s), ri.get("contended"), ri.get("solo")))
        if "ioqos" in ri and "control" in ri:
            per_round_ceiling.append(ratio(ri["ioqos"], ri.get("contended"), ri["control"]))
        for s in ("ioqos+1u", "ioqos+4u", "ioqos+pace"):
            if s in ri and "control" in ri:
                per_round_nb_ceiling.setdefault(s, []).append(ratio(ri[s], ri.get("contended"), ri["control"]))
    g = case["grants"]
    granted_backup = g["backup_bw_units"] * MIB
    out = {
        "name": case["name"], "device": case["device"], "db": case["db"], "backup": case["backup"],
        "grants": g, "stages": st, "protection": prot,
        "protection_spread": {s: spread(v) for s, v in per_round.items()},
        "rounds": len(rounds), "paced_all": paced_all,
        "failed_runs": [{"stage": r["stage"], "round": r["round"], "error": r["error"]} for r in failed],
    }
    if "ioqos" in iops and "control" in iops:
        out["ioqos_vs_ceiling"] = ratio(iops["ioqos"], cont, iops["control"])
        out["ioqos_vs_ceiling_spread"] = spread(per_round_ceiling)
    if "ioqos" in st and st["ioqos"]["backup_bw_bytes"] is not None:
        out["satisfaction"] = st["ioqos"]["backup_bw_bytes"] / granted_backup
        out["satisfaction_spread"] = [x / granted_backup for x in st["ioqos"]["backup_bw_spread"]]
    if "ioqos+pace" in iops and "control" in iops:
        # the ioqos stage with iocost pacing the disk (issue 18)
        out["pace_vs_ceiling"] = ratio(iops["ioqos+pace"], cont, iops["control"])
        out["pace_vs_ceiling_spread"] = spread(per_round_nb_ceiling.get("ioqos+pace", []))
    if "ioqos+pace" in st and st["ioqos+pace"]["backup_bw_bytes"] is not None:
        out["pace_satisfaction"] = st["ioqos+pace"]["backup_bw_bytes"] / granted_backup
    if "weight" in st and st["weight"]["backup_bw_bytes"] is not None:
        out["weight_backup_vs_grant"] = st["weight"]["backup_bw_bytes"] / granted_backup
    if "control" in st and st["control"]["backup_bw_bytes"] is not None:
        out["control_satisfaction"] = st["control"]["backup_bw_bytes"] / granted_backup
    # pods without a grant
    ung = {}
    for s in ("ioqos+1u", "ioqos+4u", "wake-up"):
        if s not in st:
            continue
        u = ung[s] = {}
        if s in iops and "control" in iops:
            u["vs_ceiling"] = ratio(iops[s], cont, iops["control"])
            u["vs_ceiling_spread"] = spread(per_round_nb_ceiling.get(s, []))
        cs = NB_CONTROL[s]
        if s in iops and cs in iops:
            # against the harness ceiling with the same pods without a grant
            # running (their CPU cost under TCG), on the control disk
            u["ceiling_with_pods"] = ratio(iops[cs], cont, solo)
            u["vs_ceiling_with_pods"] = ratio(iops[s], cont, iops[cs])
        if st[s]["backup_bw_bytes"] is not None:
            u["satisfaction"] = st[s]["backup_bw_bytes"] / granted_backup
            u["satisfaction_spread"] = [x / granted_backup for x in st[s]["backup_bw_spread"]]
    if "neighbours" in st:
        ung["neighbours"] = {}
    out["ungranted"] = ung
    # verdicts: None = not measured
    v = {}
    if out.get("ioqos_vs_ceiling") is not None:
        v["ceiling_0.95"] = out["ioqos_vs_ceiling"] >= TARGET_CEILING
    if prot.get("ioqos") is not None and prot.get("weight") is not None:
        v["above_weight"] = prot["ioqos"] > prot["weight"]
    if out.get("satisfaction") is not None:
        v["satisfaction"] = SAT_LO <= out["satisfaction"] <= SAT_HI
    for s, tag in (("ioqos+1u", "1u"), ("ioqos+4u", "4u")):
        u = ung.get(s, {})
        if u.get("vs_ceiling") is not None:
            v["db_%s_ceiling_0.9" % tag] = u["vs_ceiling"] >= TARGET_CEILING_UNGRANTED
        if u.get("satisfaction") is not None:
            v["satisfaction_%s" % tag] = SAT_LO <= u["satisfaction"] <= SAT_HI
    if st.get("ioqos+4u", {}).get("nb_vs_pool") is not None:
        v["neighbours_pool_4u"] = st["ioqos+4u"]["nb_vs_pool"] >= TARGET_NB_POOL
    bb = [st[s]["nb_bytes_before_max"] for s in NEIGHBOUR_STAGES
          if s in st and st[s].get("nb_bytes_before_max") is not None]
    if bb:
        out["ungranted_bytes_before_max"] = max(bb)
        v["bytes_before_bound"] = max(bb) == 0
    nb_missing = sum(st[s].get("nb_bound_not_logged", 0) for s in NEIGHBOUR_STAGES if s in st)
    if any(s in st for s in NEIGHBOUR_STAGES):
        out["ungranted_bound_not_logged"] = nb_missing
        if nb_missing:
            v["bytes_before_bound"] = False
    out["targets"] = v
    # what the ungranted-pod bounds did in stages WITHOUT such pods (must be
    # nothing but the moment before a granted pod's PreStartContainer)
    other = {}
    for r in runs:
        if r["stage"] in NEIGHBOUR_STAGES:
            continue
        for f in r.get("ungranted_log", {}).get("placed", []):
            o = other.setdefault(r["stage"], {"bounds": 0, "pods": set(), "bytes_before_max": 0})
            o["bounds"] += 1
            o["pods"].add(f.get("pod") or f.get("cgroup", "?"))
            o["bytes_before_max"] = max(o["bytes_before_max"], f.get("bytes_before") or 0)
    out["ungranted_in_other_stages"] = {s: dict(o, pods=sorted(o["pods"]), runs=len(by.get(s, [])))
                                        for s, o in other.items()}
    # enforcement facts of the runs granted through the plugin
    enf = [r["enforce"] for r in runs if r["stage"] in GRANTED_STAGES and "enforce" in r]
    out["enforce"] = {
        "runs": len(enf),
        "bytes_before_limit_max": max([e[p]["bytes_before_limit"] for e in enf for p in e] or [None]),
        "limit_in_place_at_return": all(e[p]["iomax_at_return"] for e in enf for p in e),
        "procs_at_return_max": max([e[p]["procs_at_return"] for e in enf for p in e] or [None]),
        "prestart_ms_median": med([e[p]["prestart_ms"] for e in enf for p in e]),
        "backup_first_second_vs_grant": med([e["backup"]["first_second_bytes"] / granted_backup
                                             for e in enf if "first_second_bytes" in e.get("backup", {})]),
    }
    return out


def summarize_accuracy(raw):
    out = {}
    for a in raw.get("accuracy", []):
        out.setdefault(a["mode"], []).append(a["achieved_bytes"] / a["granted_bytes"])
    res = {}
    for mode, xs in out.items():
        m = med(xs)
        res[mode] = {"ratio": m, "spread": spread(xs), "n": len(xs),
                     "within_5pct": all(abs(x - 1) <= ACC_TOL for x in xs)}
    enf = [a["enforce"] for a in raw.get("accuracy", [])]
    if enf:
        res["bytes_before_limit_max"] = max(e["bytes_before_limit"] for e in enf)
        res["first_second_vs_grant"] = med([e["first_second_bytes"] / a["granted_bytes"]
                                            for e, a in zip(enf, raw["accuracy"])])
    return res


def summarize_overhead(raw):
    ov = raw.get("overhead", [])
    if not ov:
        return {}
    noq = [o["aggregate_bytes"] for o in ov if not o["qos"]]
    q = [o["aggregate_bytes"] for o in ov if o["qos"]]
    mn, mq = med(noq), med(q)
    return {"no_qos_bytes": mn, "qos_bytes": mq, "no_qos_spread": spread(noq), "qos_spread": spread(q),
            "overhead": (1 - mq / mn) if mn and mq is not None else None, "n": len(q)}


def yes_no(v):
    return "–" if v is None else ("yes" if v else "**no**")


def fmt_mib(x):
    return "–" if x is None else "%.0f" % (x / MIB)


def nb_short(key):
    """'2 BestEffort buffered' -> 'BE buf'"""
    _, qos, mode = key.split()
    return "%s %s" % ({"BestEffort": "BE", "Burstable": "Bu", "Guaranteed": "G"}.get(qos, qos),
                      "buf" if mode == "buffered" else "dir")


def start_ms(w):
    """A stage's db start (summarize_db_start): "median / p90 (n, k never)"."""
    if not w or not (w.get("wake_ms") or w.get("wake_unsettled")):
        return "–"
    return "%s / %s (%d%s)" % (
        fmt_r(w.get("wake_ms_median"), 0), fmt_r(w.get("wake_ms_p90"), 0), len(w.get("wake_ms") or []),
        ", %d never" % w["wake_unsettled"] if w.get("wake_unsettled") else "")


def markdown_lending(summary):
    """The wake-up stage: what the idle grants gave the pod without a grant,
    and how fast the plugin took them back (docs/ungranted.md, "Lending")."""
    rows = [c for c in summary["cases"] if "wake-up" in c["stages"]]
    if not rows:
        return []
    L = ["", "## Lending the idle part of grants (stage wake-up)", "",
         "db and backup granted but idle while one pod without a grant writes flat out: what it gets from "
         "the grants the plugin lends it (target ≥ 0.8 of the disk); then backup and db start and the plugin "
         "takes the lent part back (reclaim: from the lender's last quiet sample to the cuts in place, the "
         "plugin's `reclaim_ms`); the db's IOPS over its window against ioqos+1u (the same pod, nothing lent); "
         "the db's wake-up: from its first I/O until a 0.2 s window first runs at ≥ 0.9 of its steady rate "
         "in the stage (io.stat every 50 ms; one wake-up per round; target median ≤ 250 ms, p90 ≤ 500 ms); "
         "beside it the same figure for the db's start in ioqos+1u (the same pods, nothing lent): what fio's "
         "start-up and the disk take without any lending.",
         "", "| device | db | backup | lent MiB/s | pod without a grant, grants idle | of the disk | "
         "reclaims | reclaim ms median / max | lent beyond the rule | db wake-up ms median / p90 (n) "
         "| db start ms in ioqos+1u | db IOPS wake-up | ioqos+1u |",
         "|---|---|---|---:|---:|---:|---:|---|---:|---|---|---:|---:|"]
    for c in rows:
        w, st = c["stages"]["wake-up"], c["stages"]
        wm = start_ms(w)
        L.append("| %s | %s | %s | %s | %s | %s | %d | %s / %s | %s | %s | %s | %s | %s |" % (
            c["device"], c["db"], c["backup"], fmt_mib(w.get("lent_bytes")), fmt_mib(w.get("idle_grants_nb_bytes")),
            fmt_r(w.get("idle_grants_nb_vs_disk")), len(w.get("reclaim_ms") or []),
            fmt_r(w.get("reclaim_ms_median"), 0), fmt_r(w.get("reclaim_ms_max"), 0),
            fmt_mib(max(0.0, (w.get("lent_beyond_rule") or {}).get("bytes", 0.0))), wm,
            start_ms(st.get("ioqos+1u")), fmt_iops(w.get("db_iops")),
            fmt_iops(st.get("ioqos+1u", {}).get("db_iops"))))
    return L


def markdown_burst(summary):
    """The ioqos+burst stage (docs/ungranted.md, "Burst"): the backup above its
    grant while the db is idle, and both once the db runs."""
    rows = [c for c in summary["cases"] if "ioqos+burst" in c["stages"]]
    if not rows:
        return []
    L = ["", "## Burst above a grant (stage ioqos+burst)", "",
         "The backup annotated `ioqos.io/burst: \"true\"` (plugin `nodePolicy.ungranted.burst: annotated`) starts "
         "with the db granted but idle: what it writes then, against its grant and the disk, and the burst the "
         "plugin gave it (its gauge); then the db starts and the burst is taken back: the db's start (as in "
         "wake-up), its IOPS and the backup against its grant over the db's window, beside the ioqos stage "
         "(no burst).",
         "", "| device | db | backup | backup alone × grant | of the disk | burst MiB/s | db start ms median / p90 (n) "
         "| db IOPS burst | ioqos | backup × grant burst | ioqos |",
         "|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for c in rows:
        b, st = c["stages"]["ioqos+burst"], c["stages"]

        def bk(x):
            v, g = (x or {}).get("backup_bw_bytes"), c["grants"]["backup_bw_units"] * MIB
            return fmt_r(v / g) if v is not None and g else "–"
        start = start_ms(b)
        L.append("| %s | %s | %s | %s | %s | %s%s | %s | %s | %s | %s | %s |" % (
            c["device"], c["db"], c["backup"], fmt_r(b.get("backup_alone_vs_grant")),
            fmt_r(b.get("backup_alone_vs_disk")), fmt_mib(b.get("burst_bytes")),
            " (%d never)" % b["burst_never"] if b.get("burst_never") else "", start,
            fmt_iops(b.get("db_iops")), fmt_iops(st.get("ioqos", {}).get("db_iops")), bk(b), bk(st.get("ioqos"))))
    return L


def stage_rows(summary, key):
    """(case, stage) of every stage that has the summary field key, in stage order."""
    return [(c, s) for c in summary["cases"] for s in STAGE_ORDER if s in c["stages"]
            and c["stages"][s].get(key) is not None]


def markdown_dirty(summary):
    """Buffered writes: per case and stage, the db's rate and tail next to the
    node's Dirty / Writeback (max over the db's window, median over rounds);
    for a wal db its commit (fdatasync) p99 and worst commit."""
    rows = stage_rows(summary, "dirty_max_mib")
    if not rows:
        return []
    L = ["", "## Buffered writes: dirty memory beside the db", "",
         "Dirty and Writeback: /proc/meminfo in the guest, the largest value over the db's window (median "
         "over rounds). A wal db (wal-fsync) commits with fdatasync after each 4k write on the same ext4 "
         "filesystem as the buffered writers: its commits wait for the journal, which waits for their data.",
         "", "| device | db | backup | stage | db IOPS | db p99 ms | commit p99 ms | worst commit ms "
         "| Dirty MiB | Writeback MiB |", "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]

    def ms(x):
        return "%.1f" % (x / 1000.0) if x is not None else "–"
    for c, s in rows:
        x = c["stages"][s]
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f |" % (
            c["device"], c["db"], c["backup"], s, fmt_iops(x.get("db_iops")), ms(x.get("db_lat_p99_us")),
            ms(x.get("db_sync_p99_us")), ms(x.get("db_sync_max_us")), x["dirty_max_mib"],
            x.get("writeback_max_mib") or 0))
    return L


def markdown_cpu(summary):
    """Per case and stage, how busy the guest's CPUs were over the stage and
    the plugin's part of them: under TCG the db's IOPS are CPU as much as disk,
    so a stage whose CPUs are saturated says little about the disk."""
    rows = stage_rows(summary, "cpu_guest_busy")
    if not rows:
        return []
    L = ["", "## CPU over each stage", "",
         "The guest's CPUs, all together, busy over the stage (/proc/stat, idle and iowait excluded), and the "
         "plugin's process CPU time (process_cpu_seconds_total) as a share of them; medians over rounds. "
         "The plugin runs in every stage (the control stages' disk is not its).", "",
         "| device | db | backup | stage | db IOPS | guest CPUs busy | plugin |", "|---|---|---|---|---:|---:|---:|"]
    for c, s in rows:
        x = c["stages"][s]
        pl = x.get("cpu_plugin_share")
        L.append("| %s | %s | %s | %s | %s | %.2f | %s |" % (
            c["device"], c["db"], c["backup"], s, fmt_iops(x.get("db_iops")), x["cpu_guest_busy"],
            "%.3f" % pl if pl is not None else "–"))
    return L


def markdown_ungranted(summary):
    L = []
    cases = [c for c in summary["cases"] if any(s in c["stages"] for s in NEIGHBOUR_STAGES)]
    L.append("")
    L.append("## Pods without a grant")
    L.append("")
    L.append("ioqos+1u: the ioqos stage plus one ungranted pod (Burstable, the backup's writer, direct); "
             "ioqos+4u: plus four (2 BestEffort: buffered writers on a filesystem disk, else direct; 2 Burstable: "
             "direct); neighbours: db and backup granted but idle, the four ungranted pods writing. Ungranted "
             "pods are never admitted through the device plugin: the plugin's node policy bounds them inside the "
             "pool = headroomShare × what the disk does not advertise + the units nobody holds. Targets: +Nu / ceiling = (stage − contended) / (control − "
             "contended) ≥ %.1f; backup %.2f–%.2f of its grant; the ungranted pods together ≥ %.1f of the pool "
             "while the granted pods are busy (ioqos+4u); 0 bytes before a bound." % (
                 TARGET_CEILING_UNGRANTED, SAT_LO, SAT_HI, TARGET_NB_POOL))
    L.append("")
    L.append("db IOPS (median, min–max) and latency (mean / p99, ms):")
    L.append("")
    withc = any(s in c["stages"] for c in cases for s in NB_CONTROL.values())
    L.append("| device | db | backup | ioqos | ioqos+1u | ioqos+4u | control | +1u / ceiling | ≥ 0.9 "
             "| +4u / ceiling | ≥ 0.9 | latency ioqos | ioqos+1u | ioqos+4u |" +
             (" control+1u | control+4u | +1u / ceiling with 1u | +4u / ceiling with 4u |" if withc else ""))
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|---|" if withc else ""))
    for c in cases:
        st, u, t = c["stages"], c.get("ungranted", {}), c["targets"]

        def lat(s):
            if s not in st or st[s]["db_iops"] is None:
                return "–"
            m, p = st[s]["db_lat_mean_us"], st[s]["db_lat_p99_us"]
            return "%s / %s" % ("–" if m is None else "%.2f" % (m / 1000), "–" if p is None else "%.1f" % (p / 1000))

        def vc(s):
            x = u.get(s, {})
            return fmt_r(x.get("vs_ceiling")) + fmt_sp(x.get("vs_ceiling_spread"), fmt_r)
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["device"], c["db"], c["backup"], iops_cell(st, "ioqos"), iops_cell(st, "ioqos+1u"),
            iops_cell(st, "ioqos+4u"), iops_cell(st, "control"),
            vc("ioqos+1u"), yes_no(t.get("db_1u_ceiling_0.9")), vc("ioqos+4u"), yes_no(t.get("db_4u_ceiling_0.9")),
            lat("ioqos"), lat("ioqos+1u"), lat("ioqos+4u")) +
            (" %s | %s | %s | %s |" % (iops_cell(st, "control+1u"), iops_cell(st, "control+4u"),
                                       fmt_r(u.get("ioqos+1u", {}).get("vs_ceiling_with_pods")),
                                       fmt_r(u.get("ioqos+4u", {}).get("vs_ceiling_with_pods"))) if withc else ""))
    if withc:
        L.append("")
        L.append("control+1u / control+4u: the control stage plus the same pods without a grant, each held at "
                 "pool / N by `ioqosctl apply`, on the control disk (throttle doubled, never the bottleneck): the "
                 "harness ceiling with their CPU cost. ioqos+Nu / ceiling with Nu = (ioqos+Nu − contended) / "
                 "(control+Nu − contended): below 1 by what the disk itself (its headroom given to the pool) "
                 "costs the db. Reported; the target is judged against the control stage.")
    L.append("")
    L.append("Backup and ungranted pods, MiB/s (medians; the ungranted pods' io.stat over the db's measured "
             "window). Pool = headroomShare × what the disk does not advertise + the units nobody holds (the plugin's `ioqos_ungranted_pool_bytes_per_second` "
             "in parentheses when it differs). Each pod: BE/Bu = BestEffort/Burstable, buf/dir = buffered/direct "
             "writes; achieved / its mean io.max bound over the window in brackets.")
    L.append("")
    L.append("| device | db | backup | grant | backup +1u (/ grant) | 0.95–1.10 | backup +4u (/ grant) | 0.95–1.10 "
             "| pool | +1u pod | +4u each | +4u together / pool | ≥ 0.9 |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in cases:
        st, u, t = c["stages"], c.get("ungranted", {}), c["targets"]

        def bk(s):
            if s not in st or st[s]["backup_bw_bytes"] is None:
                return "–"
            return "%s (%s)" % (fmt_mib(st[s]["backup_bw_bytes"]), fmt_r(u.get(s, {}).get("satisfaction")))

        def pool(s):
            x = st.get(s, {})
            p, m = x.get("pool_bytes"), x.get("pool_metric_bytes")
            if p is None:
                return "–"
            return fmt_mib(p) + ("" if m is None or abs(m - p) < MIB / 2 else " (%s)" % fmt_mib(m))

        def each(s):
            x = st.get(s, {})
            e, vc = x.get("nb_each_bytes") or {}, x.get("nb_each_vs_cap") or {}
            if not e:
                return "–"
            return ", ".join("%s %s%s" % (nb_short(k), fmt_mib(v),
                                          " [%s]" % fmt_r(vc[k]) if vc.get(k) is not None else "")
                             for k, v in sorted(e.items()))
        x4 = st.get("ioqos+4u", {})
        L.append("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["device"], c["db"], c["backup"], c["grants"]["backup_bw_units"],
            bk("ioqos+1u"), yes_no(t.get("satisfaction_1u")), bk("ioqos+4u"), yes_no(t.get("satisfaction_4u")),
            pool("ioqos+4u" if "ioqos+4u" in st else "ioqos+1u"), each("ioqos+1u"), each("ioqos+4u"),
            "%s / %s = %s" % (fmt_mib(x4.get("nb_aggregate_bytes")), fmt_mib(x4.get("pool_bytes")),
                              fmt_r(x4.get("nb_vs_pool")) + fmt_sp(x4.get("nb_vs_pool_spread"), fmt_r))
            if x4 else "–", yes_no(t.get("neighbours_pool_4u"))))
    L.append("")
    L.append("The neighbours stage (db and backup granted, idle) and the ungranted pods' starts in all three "
             "stages. Work conservation: the ungranted pods use what the idle grants lend them "
             "(`nodePolicy.ungranted.lend`), target ≥ %.1f of the disk together. Bytes before bound = the largest "
             "`bytes_before=` of the plugin's `ungranted bound placed` lines for these pods (I/O done before "
             "their bound was in place; target 0)." % TARGET_WORK_CONSERVING)
    L.append("")
    L.append("| device | db | backup | pool | each | together | / pool | / disk | work-conserving ≥ 0.8 "
             "| ungranted starts | bound in place at container start | bytes before bound (max) | = 0 |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in cases:
        st, t = c["stages"], c["targets"]
        n = st.get("neighbours", {})
        starts = sum(st[s].get("nb_starts", 0) for s in NEIGHBOUR_STAGES if s in st)
        at_start = sum(st[s].get("nb_bound_at_start", 0) for s in NEIGHBOUR_STAGES if s in st)
        bb = c.get("ungranted_bytes_before_max")
        nl = c.get("ungranted_bound_not_logged", 0)
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d of %d | %s%s | %s |" % (
            c["device"], c["db"], c["backup"], fmt_mib(n.get("pool_bytes")),
            ", ".join("%s %s" % (nb_short(k), fmt_mib(v)) for k, v in sorted((n.get("nb_each_bytes") or {}).items()))
            or "–", fmt_mib(n.get("nb_aggregate_bytes")),
            fmt_r(n.get("nb_vs_pool")) + fmt_sp(n.get("nb_vs_pool_spread"), fmt_r),
            fmt_r(n.get("nb_vs_disk")) + fmt_sp(n.get("nb_vs_disk_spread"), fmt_r),
            yes_no(n["nb_vs_disk"] >= TARGET_WORK_CONSERVING) if n.get("nb_vs_disk") is not None else "–",
            starts, at_start, starts,
            "–" if bb is None else "%d" % bb, " (%d not logged)" % nl if nl else "",
            yes_no(t.get("bytes_before_bound"))))
    notes = []
    for c in cases:
        st = c["stages"]
        for s in NEIGHBOUR_STAGES:
            x = st.get(s)
            if not x:
                continue
            if x.get("nb_bounds_left_after_release"):
                notes.append("%s %s + %s, %s: %d ungranted bound(s) still in io.max after the last grant went "
                             "(the plugin should clear them)." % (c["device"], c["db"], c["backup"], s,
                                                                  x["nb_bounds_left_after_release"]))
            if x.get("nb_failures_total_max"):
                notes.append("%s %s + %s, %s: ioqos_ungranted_failures_total = %d." % (
                    c["device"], c["db"], c["backup"], s, x["nb_failures_total_max"]))
            if any(x.get("nb_owe_holds") or []):
                notes.append("%s %s + %s, %s: pods found owing the kernel after a cut, their io.max held "
                             "until paid (ioqos_ungranted_owe_holds_total per round: %s; docs/ungranted.md "
                             "\"io.max after a cut\")." % (c["device"], c["db"], c["backup"], s,
                                                            ", ".join(str(h) for h in x["nb_owe_holds"])))
            if x.get("nb_caps_sum_vs_pool_max") is not None and x["nb_caps_sum_vs_pool_max"] > 1.001:
                notes.append("%s %s + %s, %s: the sampled bounds summed to %.2f × the pool nobody holds at one "
                             "instant (what idle grants lend comes on top of it while they are idle; and the "
                             "cgroups are sampled one after another, so a re-split between two reads can show "
                             "here)." % (c["device"], c["db"], c["backup"], s, x["nb_caps_sum_vs_pool_max"]))
        for s, o in sorted(c.get("ungranted_in_other_stages", {}).items()):
            notes.append("%s %s + %s, %s (no ungranted pod): %d ungranted bound(s) placed over %d run(s), on %s, "
                         "bytes before max %d%s." % (
                             c["device"], c["db"], c["backup"], s, o["bounds"], o["runs"], ", ".join(o["pods"]),
                             o["bytes_before_max"],
                             " (a granted pod's cgroup in the moment between its creation and its "
                             "PreStartContainer; the grant replaces it)" if s in GRANTED_STAGES
                             else " — **a stage without grants must not be bounded**"))
    if notes:
        L.append("")
        L += ["- " + n for n in notes]
    return L


def markdown(summary):
    L = []
    meta = summary["meta"]
    L.append("# ioqos isolation benchmark — %s" % summary["generated"])
    L.append("")
    L.append("Machine: %s. Guest: Debian kernel %s under qemu TCG (no KVM), %s vCPUs, cgroup v2. "
             "Mode: %s; %s. Host load average (1/5/15 min) on the host during the run: %s." % (
                 meta.get("host", "?"), meta.get("kernel", "?"), meta.get("cpus", "?"), summary["mode"],
                 meta.get("settings", ""), meta.get("host_load", "not recorded")))
    if summary["mode"] != "full":
        L.append("")
        L.append("A short run (%s): one round per case, so no medians or spreads; `make bench` measures "
                 "every case in 3 rounds." % summary["mode"])
    L.append("")
    L.append("## Protection of the db (4k random I/O) from the backup (1 MiB sequential writes)")
    L.append("")
    L.append("db IOPS, median of rounds (min–max). Protection = (stage − contended) / (solo − contended); "
             "ceiling = protection of the control stage (ioqos limits, disk throttle doubled); "
             "ioqos / ceiling = (ioqos − contended) / (control − contended). Target: ioqos / ceiling ≥ 0.95 "
             "and ioqos above weight-only.")
    paced = sorted({c["device"] for c in summary["cases"] if c.get("paced_all")})
    if paced:
        L.append("")
        L.append("On %s the plugin paced the disk in every stage (`nodePolicy.iocost.pace`, the token-bucket "
                 "recipe as deployed): its contended stage ran paced too and is no baseline there, so its "
                 "ratios are plain stage / solo and stage / control (a contended of 0)." % ", ".join(paced))
    L.append("")
    L.append("| device | db | backup | solo | contended | weight-only | ioqos | control | weight-only protection "
             "| ioqos protection | ceiling | ioqos / ceiling | ≥ 0.95 | > weight-only |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in summary["cases"]:
        st, p, ps = c["stages"], c["protection"], c["protection_spread"]

        def pr(s):
            return fmt_r(p.get(s)) + fmt_sp(ps.get(s), fmt_r) if s in p else "–"
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["device"], c["db"], c["backup"], iops_cell(st, "solo"), iops_cell(st, "contended"),
            iops_cell(st, "weight"), iops_cell(st, "ioqos"), iops_cell(st, "control"), pr("weight"), pr("ioqos"), pr("control"),
            fmt_r(c.get("ioqos_vs_ceiling")) + fmt_sp(c.get("ioqos_vs_ceiling_spread"), fmt_r),
            yes_no(c["targets"].get("ceiling_0.95")), yes_no(c["targets"].get("above_weight"))))
    if any("weight-plain" in c["stages"] for c in summary["cases"]):
        L.append("")
        L.append("Published plain form (io.weight 500/10 without enabling iocost; the kernel falls back to the "
                 "cgroup-wide default weight), protection: " + "; ".join(
                     "%s %s + %s: %s" % (c["device"], c["db"], c["backup"], fmt_r(c["protection"].get("weight-plain")))
                     for c in summary["cases"] if "weight-plain" in c["stages"]) + ".")
    if any("ioqos+pace" in c["stages"] for c in summary["cases"]):
        L.append("")
        L.append("### iocost pacing (stage ioqos+pace: the ioqos stage with `nodePolicy.iocost.pace`)")
        L.append("")
        L.append("The ioqos stage plus iocost with its model at pace × the disk's capacity and vrate pinned "
                 "(%s): the disk is fed no faster than that, spread over iocost's period. db IOPS and "
                 "latency (mean / p99 ms), protection and against the ceiling, backup achieved / granted; "
                 "medians." % ", ".join(sorted(set("pace %s%s, latency target %s us%s" % (
                     r.get("pace", "?"), " (%s)" % r["pace_setting"] if r.get("pace_setting") == "auto" else "",
                     r.get("pace_lat_us", "?"),
                     ", device latency %s us" % r["device_latency_us"] if r.get("device_latency_us") else "")
                     for r in meta.get("raw", {}).values()))))
        L.append("")
        L.append("| device | db | backup | ioqos | ioqos+pace | control | ioqos / ceiling | ioqos+pace / ceiling "
                 "| p99 ioqos | p99 ioqos+pace | p99 solo | backup ioqos+pace / grant |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for c in summary["cases"]:
            st = c["stages"]
            if "ioqos+pace" not in st:
                continue

            def p99(s):
                v = st.get(s, {}).get("db_lat_p99_us")
                return "–" if v is None else "%.1f" % (v / 1000)
            L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                c["device"], c["db"], c["backup"], iops_cell(st, "ioqos"), iops_cell(st, "ioqos+pace"),
                iops_cell(st, "control"),
                fmt_r(c.get("ioqos_vs_ceiling")) + fmt_sp(c.get("ioqos_vs_ceiling_spread"), fmt_r),
                fmt_r(c.get("pace_vs_ceiling")) + fmt_sp(c.get("pace_vs_ceiling_spread"), fmt_r),
                p99("ioqos"), p99("ioqos+pace"), p99("solo"), fmt_r(c.get("pace_satisfaction"))))
    L.append("")
    L.append("## Latency of the db and bandwidth of the backup")
    L.append("")
    L.append("db latency (fio total latency, mean / p99, ms) and backup MiB/s (the backup pod's io.stat over the "
             "db's measured window), medians. Satisfaction = backup achieved / granted in the ioqos stage "
             "(target 0.95–1.10).")
    L.append("")
    L.append("| device | db | backup | db solo | contended | weight-only | ioqos | control | backup contended "
             "| weight-only | ioqos | grant | satisfaction |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in summary["cases"]:
        st = c["stages"]

        def lat(s):
            if s not in st:
                return "–"
            m, p = st[s]["db_lat_mean_us"], st[s]["db_lat_p99_us"]
            return "%s / %s" % ("–" if m is None else "%.2f" % (m / 1000), "–" if p is None else "%.1f" % (p / 1000))

        def bw(s):
            if s not in st or st[s]["backup_bw_bytes"] is None:
                return "–"
            return "%.0f" % (st[s]["backup_bw_bytes"] / MIB)
        sat = c.get("satisfaction")
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s%s |" % (
            c["device"], c["db"], c["backup"], lat("solo"), lat("contended"), lat("weight"), lat("ioqos"),
            lat("control"), bw("contended"), bw("weight"), bw("ioqos"), c["grants"]["backup_bw_units"],
            fmt_r(sat), "" if sat is None else (" " + yes_no(c["targets"].get("satisfaction")))))
    L.append("")
    L.append("Grants (ioqos stage): the db's need is the higher of two closed-loop solo runs, or, when that is "
             "more than a quarter of the disk, a solo run paced at a quarter of the disk (fio rate_iops, then used in "
             "every stage of the case); its grant is need × %s rounded up to whole units (1 MiB/s, 100 IOPS); "
             "the backup gets the remaining bandwidth units of %s." % (
                 meta.get("db_grant_factor", "?"), ", ".join(
                     "%s %d" % (k, v) for k, v in meta.get("allocatable_bw_units", {}).items())))
    L.append("")
    L.append("| device | db | db closed-loop solo (IOPS) | paced at | db need | db grant | backup grant |")
    L.append("|---|---|---|---|---|---|---|")
    for c in summary["cases"]:
        g = c["grants"]
        L.append("| %s | %s + %s | %s | %s | %s | %d MiB/s + %d IOPS | %d MiB/s |" % (
            c["device"], c["db"], c["backup"], fmt_iops(g.get("db_closed_loop_iops")),
            fmt_iops(g.get("db_rate_iops")) if g.get("db_rate_iops") else "not paced",
            fmt_iops(g["db_need_iops"]), g["db_bw_units"],
            g["db_iops_units"] * 100, g["backup_bw_units"]))
    if any(s in c["stages"] for c in summary["cases"] for s in NEIGHBOUR_STAGES):
        L += markdown_ungranted(summary)
    L += markdown_lending(summary)
    L += markdown_burst(summary)
    L += markdown_dirty(summary)
    L += markdown_cpu(summary)
    if summary["accuracy"]:
        L.append("")
        L.append("## io.max accuracy (one backup pod alone, grant through the plugin)")
        L.append("")
        L.append("| device | writes | achieved / granted (median, min–max) | within 5 % |")
        L.append("|---|---|---|---|")
        for dev, acc in summary["accuracy"].items():
            for mode in ("direct", "buffered"):
                if mode in acc:
                    a = acc[mode]
                    L.append("| %s | %s | %.3f%s | %s |" % (dev, mode, a["ratio"],
                                                            fmt_sp(a["spread"], lambda x: "%.3f" % x),
                                                            yes_no(a["within_5pct"])))
    L.append("")
    mon = [(c, s) for c in summary["cases"] for s in STAGE_ORDER if "monitor_not_met" in c["stages"].get(s, {})]
    if mon:
        L.append("## Grant monitor")
        L.append("")
        L.append("The plugin's grant monitor (docs/enforcement.md, \"Is the grant kept?\") ran with a %s s "
                 "window and every Event posted. Per granted stage: IoqosGrantNotMet Events (most in one "
                 "round), on which pods, the cause they name, seconds from the writers' first I/O to the first "
                 "one (median), and the pod-seconds classified starved. Expected: none in ioqos (grants "
                 "kept), one within the window in ioqos+host (a writer outside the pods fills the disk)."
                 % mon[0][0]["stages"][mon[0][1]]["monitor_window_s"])
        L.append("")
        L.append("| device | db | backup | stage | IoqosGrantNotMet | pods | cause | first after | starved pod-s "
                 "| IoqosDiskUnderDelivers |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for c, s in mon:
            x = c["stages"][s]
            first = x.get("monitor_first_not_met_s")
            L.append("| %s | %s | %s | %s | %d | %s | %s | %s | %s | %d |" % (
                c["device"], c["db"], c["backup"], s, x["monitor_not_met"],
                ", ".join(x["monitor_not_met_pods"]) or "–", ", ".join(x["monitor_causes"]) or "–",
                "%.1f s" % first if first is not None else "–",
                "%.0f" % x["monitor_starved_pod_s"] if x.get("monitor_starved_pod_s") is not None else "–",
                x.get("monitor_disk_warnings", 0)))
        L.append("")
    L.append("## Time to enforce")
    L.append("")
    te = summary["time_to_enforce"]
    dra = any(r.get("grant_via") == "dra" for r in summary["meta"]["raw"].values())
    call = "NodePrepareResources" if dra else "PreStartContainer"
    path = ("kubelet stand-in → plugin → API claim GET, pod cache, cgroup write + read-back" if dra
            else "kubelet stand-in → plugin → pod resources, API cache, cgroup write + read-back")
    L.append("- Bytes of I/O a pod did before its limit was in place (pod io.stat at the moment "
             "%s returned; the container starts only after): max **%s** over %d pod starts "
             "(target 0)." % (call, te["bytes_before_limit_max"], te["pod_starts"]))
    L.append("- io.max in place and read back when %s returned: %s; processes in the pod "
             "cgroup then: %s (the container had not started)." % (
                 call, "every start" if te["limit_in_place_always"] else "**NOT every start**",
                 te["procs_at_return_max"]))
    L.append("- %s round trip (%s): median %.0f ms." % (call, path, te["prestart_ms_median"])
             if te["prestart_ms_median"] is not None else "- %s round trip: –" % call)
    if te.get("first_second_vs_grant") is not None:
        L.append("- The backup's first second of I/O, relative to its grant: %.2f (≤ 1 means throttled "
                 "from the first I/O)." % te["first_second_vs_grant"])
    if te.get("ungranted_starts"):
        L.append("- Pods without a grant: max **%s** bytes before their bound (the plugin's `bytes_before=`) over "
                 "%d starts%s (target 0); the bound was in io.max when the container started (%s s after the "
                 "pod cgroup) in %d of %d." % (
                     "–" if te["ungranted_bytes_before_max"] is None else te["ungranted_bytes_before_max"],
                     te["ungranted_starts"],
                     ", %d with no `ungranted bound placed` line" % te["ungranted_not_logged"]
                     if te["ungranted_not_logged"] else "",
                     summary["meta"].get("sandbox_delay_s", "?"),
                     te["ungranted_bound_at_start"], te["ungranted_starts"]))
    if summary["overhead"]:
        L.append("")
        L.append("## Overhead (two writers, grants summing to the capacity vs no QoS)")
        L.append("")
        L.append("| device | no QoS MiB/s | io.max = capacity/2 each, MiB/s | overhead |")
        L.append("|---|---|---|---|")
        for dev, o in summary["overhead"].items():
            if o:
                L.append("| %s | %.1f%s | %.1f%s | %.1f %% |" % (
                    dev, o["no_qos_bytes"] / MIB, fmt_sp(o["no_qos_spread"], lambda x: "%.0f" % (x / MIB)),
                    o["qos_bytes"] / MIB, fmt_sp(o["qos_spread"], lambda x: "%.0f" % (x / MIB)),
                    100 * o["overhead"]))
    fails = [(c, f) for c in summary["cases"] for f in c.get("failed_runs", [])]
    if fails:
        L.append("")
        L.append("## Failed runs (left out of the medians)")
        L.append("")
        for c, f in fails:
            L.append("- %s %s + %s, %s round %d: %s" % (c["device"], c["db"], c["backup"], f["stage"],
                                                       f["round"] + 1, f["error"]))
    L.append("")
    L.append("## Targets not reached")
    L.append("")
    missed = []
    for c in summary["cases"]:
        t = c["targets"]
        what = []
        if t.get("ceiling_0.95") is False:
            what.append("ioqos / ceiling %s < 0.95" % fmt_r(c.get("ioqos_vs_ceiling")))
        if t.get("above_weight") is False:
            what.append("ioqos protection %s not above weight-only %s" % (
                fmt_r(c["protection"].get("ioqos")), fmt_r(c["protection"].get("weight"))))
        if t.get("satisfaction") is False:
            what.append("backup satisfaction %s outside 0.95–1.10" % fmt_r(c.get("satisfaction")))
        u, cst = c.get("ungranted", {}), c["stages"]
        for s, tag in (("ioqos+1u", "1u"), ("ioqos+4u", "4u")):
            if t.get("db_%s_ceiling_0.9" % tag) is False:
                wp = u[s].get("vs_ceiling_with_pods")
                what.append("%s / ceiling %s < 0.9%s" % (
                    s, fmt_r(u[s].get("vs_ceiling")), "" if wp is None else
                    " (%s against the ceiling with the same pods, %s)" % (fmt_r(wp), NB_CONTROL[s])))
            if t.get("satisfaction_%s" % tag) is False:
                what.append("backup in %s %s of its grant, outside 0.95–1.10" % (s, fmt_r(u[s].get("satisfaction"))))
        if t.get("neighbours_pool_4u") is False:
            what.append("ungranted pods together %s of the pool in ioqos+4u (< 0.9)" % fmt_r(
                cst["ioqos+4u"].get("nb_vs_pool")))
        if t.get("bytes_before_bound") is False:
            what.append("ungranted pods: %s bytes before their bound%s" % (
                c.get("ungranted_bytes_before_max"),
                ", %d start(s) with no `ungranted bound placed` line" % c["ungranted_bound_not_logged"]
                if c.get("ungranted_bound_not_logged") else ""))
        if what:
            cs = c["stages"]
            p, cl = c["protection"], c["protection"].get("control")
            if (t.get("above_weight") is False and cl is not None and p.get("ioqos") is not None
                    and p["ioqos"] >= TARGET_CEILING * cl and p["weight"] >= TARGET_CEILING * cl):
                what.append("both at the harness ceiling %s, so the order of the two is within the rounds' "
                            "spread (weight-only %s, ioqos %s)" % (
                                fmt_r(cl), fmt_sp(c["protection_spread"].get("weight"), fmt_r).strip(),
                                fmt_sp(c["protection_spread"].get("ioqos"), fmt_r).strip()))
            if c.get("weight_backup_vs_grant") is not None and t.get("above_weight") is False:
                what.append("weight-only gave the backup %s of the grant ioqos gives it" % fmt_r(
                    c["weight_backup_vs_grant"]))
            ctx = "control/solo = %s" % fmt_r((cs["control"]["db_iops"] / cs["solo"]["db_iops"])
                                              if "control" in cs and "solo" in cs else None)
            if "control" in cs and "ioqos" in cs:
                ctx += ", backup in control %.0f MiB/s vs ioqos %.0f MiB/s" % (
                    (cs["control"]["backup_bw_bytes"] or 0) / MIB, (cs["ioqos"]["backup_bw_bytes"] or 0) / MIB)
            missed.append("- %s %s + backup %s: %s (%s)." % (c["device"], c["db"], c["backup"], "; ".join(what), ctx))
    for dev, acc in summary["accuracy"].items():
        for mode in ("direct", "buffered"):
            if mode in acc and not acc[mode]["within_5pct"]:
                missed.append("- io.max accuracy %s %s: %s outside 1 ± 0.05 in some round." % (
                    dev, mode, fmt_sp(acc[mode]["spread"], lambda x: "%.3f" % x).strip()))
    if te["bytes_before_limit_max"]:
        missed.append("- Time to enforce: %s bytes before the limit." % te["bytes_before_limit_max"])
    L += missed or ["None."]
    L.append("")
    L.append("Why a target can be missed on this harness is in docs/benchmark.md (TCG CPU cost of the neighbour, "
             "null_blk's 20 ms token bucket, writeback under TCG).")
    return "\n".join(L) + "\n"


def plot(summary, out):
    gp = shutil.which("gnuplot")
    if not gp or not any(v is not None for c in summary["cases"] for v in c["protection"].values()):
        return None
    dat = os.path.join(out, "isolation-plot.dat")
    with open(dat, "w") as f:
        f.write("# case weight ioqos ceiling sat_ioqos ioqos_vs_ceiling sat_weight\n")
        for c in summary["cases"]:
            p = c["protection"]
            label = "%s\\n%s\\n%s" % (c["device"], c["db"], c["backup"])

            def v(x):
                return "NaN" if x is None else "%.4f" % x
            f.write('"%s" %s %s %s %s %s %s\n' % (label, v(p.get("weight")), v(p.get("ioqos")), v(p.get("control")),
                                                v(c.get("satisfaction")), v(c.get("ioqos_vs_ceiling")),
                                                v(c.get("weight_backup_vs_grant"))))
    png = os.path.join(out, "isolation.png")
    n = len(summary["cases"])
    script = """
set terminal pngcairo size %d,900 font "sans,10"
set output "%s"
set multiplot layout 2,1 title "ioqos isolation benchmark (%s, medians of %s)"
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key tmargin center horizontal
set bmargin 4
set yrange [-0.2:1.5]
set ylabel "protection of db IOPS"
set xtics font ",8"
set arrow 1 from graph 0, first 0.95 to graph 1, first 0.95 nohead dt 2 lc rgb "black"
plot "%s" using 2:xtic(1) title "weight-only (io.weight 500/10, iocost 5 ms)" lc rgb "#d95f02", \\
     "" using 3 title "ioqos (grants via the plugin)" lc rgb "#1b9e77", \\
     "" using 4 title "control = harness ceiling" lc rgb "#7570b3", \\
     "" using 6 title "ioqos / ceiling" lc rgb "#66a61e" fs pattern 4
unset arrow 1
set yrange [0:1.5]
set ylabel "backup achieved / its grant"
set arrow 2 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "black"
plot "%s" using 7:xtic(1) title "weight-only (no grant: what it got of the grant ioqos gives it)" lc rgb "#d95f02", \\
     "" using 5 title "ioqos (neighbour satisfaction)" lc rgb "#1b9e77"
unset multiplot
""" % (max(900, 160 * n), png, summary["generated"], summary["meta"].get("rounds_desc", "rounds"), dat, dat)
    r = subprocess.run([gp], input=script, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        print("report: gnuplot failed: " + r.stdout, file=sys.stderr)
        return None
    return png


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", default="full")
    ap.add_argument("--host-load", help="host load averages during the run (text)")
    ap.add_argument("--host-load-file", help="read them from this file (run.sh writes it)")
    ap.add_argument("raw", nargs="+")
    a = ap.parse_args()
    if not a.host_load and a.host_load_file and os.path.exists(a.host_load_file):
        a.host_load = "; ".join(l.strip() for l in open(a.host_load_file) if l.strip())
    raws = []
    for p in a.raw:
        if not os.path.exists(p):
            print("report: %s missing (that run failed or was skipped)" % p, file=sys.stderr)
            continue
        raw = json.load(open(p))
        if "units" not in raw.get("meta", {}):
            print("report: %s has no results (the scenario failed before its first case)" % p, file=sys.stderr)
            continue
        raws.append(raw)
    if not raws:
        sys.exit("report: no results")
    m0 = raws[0]["meta"]
    rounds = sorted(set(r["meta"].get("rounds") for r in raws))
    host = "%d-core machine" % os.cpu_count()
    try:
        with open("/etc/os-release") as f:
            osr = dict(l.rstrip().split("=", 1) for l in f if "=" in l)
        host = "%d-core %s" % (os.cpu_count(), osr.get("PRETTY_NAME", "").strip('"'))
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
        virt = " VM" if " hypervisor" in open("/proc/cpuinfo").read() else ""
        host += virt + (" (%s)" % cpu if cpu else "")
    except OSError:
        pass
    summary = {
        "generated": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "mode": a.mode,
        "meta": {
            "host": host, "kernel": m0.get("kernel"), "cpus": m0.get("cpus"),
            "host_load": a.host_load or "not recorded",
            "db_grant_factor": m0.get("db_grant_factor"),
            "allocatable_bw_units": {r["meta"]["kind"]: r["meta"]["units"]["bw"] for r in raws},
            "rounds_desc": "%s round%s" % ("/".join(map(str, rounds)), "" if rounds == [1] else "s"),
            "settings": "%s round(s) per case in rotated stage order, %s s measured per stage after %s s ramp, "
                        "allocatable fraction %s, iocost for weight-only: %s, grants via %s" % (
                            "/".join(map(str, rounds)), m0.get("runtime_s"), m0.get("ramp_s"),
                            m0.get("allocatable_fraction"), m0.get("iocost_qos"),
                            "DRA claims (--mode=dra, NodePrepareResources)" if m0.get("grant_via") == "dra"
                            else "the device plugin (Allocate + PreStartContainer)"),
            "raw": {r["meta"]["kind"]: r["meta"] for r in raws},
            "sandbox_delay_s": m0.get("ungranted", {}).get("sandbox_delay_s"),
        },
        "cases": [summarize_case(c, r["meta"]) for r in raws for c in r["cases"]],
        "accuracy": {r["meta"]["kind"]: summarize_accuracy(r) for r in raws if r.get("accuracy")},
        "overhead": {r["meta"]["kind"]: summarize_overhead(r) for r in raws if r.get("overhead")},
    }
    enf_cases = [c["enforce"] for c in summary["cases"] if c["enforce"]["runs"]]
    acc_b = [v.get("bytes_before_limit_max") for v in summary["accuracy"].values()
             if v.get("bytes_before_limit_max") is not None]
    acc_n = sum(len(r.get("accuracy", [])) for r in raws)
    bb = [e["bytes_before_limit_max"] for e in enf_cases] + acc_b
    summary["time_to_enforce"] = {
        "bytes_before_limit_max": max(bb) if bb else None,
        "pod_starts": 2 * sum(e["runs"] for e in enf_cases) + acc_n,
        "limit_in_place_always": all(e["limit_in_place_at_return"] for e in enf_cases),
        "procs_at_return_max": max([e["procs_at_return_max"] for e in enf_cases] or [None]),
        "prestart_ms_median": med([e["prestart_ms_median"] for e in enf_cases]),
        "first_second_vs_grant": med([e["backup_first_second_vs_grant"] for e in enf_cases] +
                                     [v.get("first_second_vs_grant") for v in summary["accuracy"].values()]),
    }
    nbst = [c["stages"][s] for c in summary["cases"] for s in NEIGHBOUR_STAGES if s in c["stages"]]
    if nbst:
        ub = [c["ungranted_bytes_before_max"] for c in summary["cases"]
              if c.get("ungranted_bytes_before_max") is not None]
        summary["time_to_enforce"].update({
            "ungranted_starts": sum(x.get("nb_starts", 0) for x in nbst),
            "ungranted_bound_at_start": sum(x.get("nb_bound_at_start", 0) for x in nbst),
            "ungranted_not_logged": sum(x.get("nb_bound_not_logged", 0) for x in nbst),
            "ungranted_bytes_before_max": max(ub) if ub else None,
        })
    os.makedirs(a.out, exist_ok=True)
    md = markdown(summary)
    with open(os.path.join(a.out, "isolation.md"), "w") as f:
        f.write(md)
    png = plot(summary, a.out)
    summary["plot"] = png
    with open(os.path.join(a.out, "isolation.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    print(md)
    print("results: %s/isolation.json, isolation.md%s" % (a.out, ", isolation.png" if png else " (no gnuplot: no plot)"))


if __name__ == "__main__":
    main()

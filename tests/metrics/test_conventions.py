# SPDX-License-Identifier: Apache-2.0
"""Every metric the real binaries expose follows the naming rules written in
docs/operations.md ("Metrics conventions"). One scrape of each binary after
a scenario that fills every family it can: the plugin with a granted pod
(bandwidth and IOPS, io.stat counters), a pod without a grant, two disk
classes and a selector that resolves to nothing; the extender after filter,
prioritize and a refused body.

The rules (R1..R9 match the list in the docs):
  R1 names: ioqos_ (extender: ioqos_extender_) or process_ prefix, [a-z0-9_], no "__"
  R2 HELP and TYPE once per family, before its samples; type counter, gauge or histogram
  R3 counter <=> name ends in _total; a histogram's samples are _bucket/_sum/_count
  R4 base units only: no ms, MiB, percent, ..., and no "units" (ioqos units
     are a configured size, not a unit)
  R5 a unit word (bytes, seconds, iops) is the suffix, before _total
  R6 one label-name set per family (histogram buckets add le)
  R7 no unit mixing: a family in a quantity unit has no resource/unit label
  R8 label names from the documented set; plugin families carry node=NODE
     (except ioqos_build_info); per-disk families carry exactly node, disk,
     class (+ capability or dev); per-pod families node, namespace, pod, disk
     (+ direction)
  R9 process_* basics present in both binaries
Every family is in the metrics table of docs/plugin.md or docs/extender.md,
and every name there is served. And, on the values: ratios documented in the docs match one to one
(PromQL's a / b: the same label sets on both sides), per-pod series exist
only for granted pods, _info gauges are 1.
"""
import os
import re
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "extender"))
sys.path.insert(0, os.path.join(HERE, "..", "plugin"))

import k8s  # noqa: E402  (tests/extender)
from extproc import Extender  # noqa: E402
from harness import (BW, MIB, NODE, PluginTest, new_uid, pod_object,  # noqa: E402
                     set_io_stat, v2_pod_cgroup, write)

NAME_RE = re.compile(r"^(ioqos|process)_[a-z0-9_]+$")
SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')

# R4: not base units (or not units at all)
FORBIDDEN_TOKENS = {"ms", "msec", "millis", "milliseconds", "us", "usec", "microseconds",
                    "nanoseconds", "ns", "minutes", "hours", "days", "kb", "mb", "gb", "kib",
                    "mib", "gib", "mbps", "kbps", "percent", "pct", "units", "unit"}
# R5: unit words and the suffixes they may form
UNIT_WORDS = {"bytes", "seconds", "iops"}
UNIT_SUFFIXES = ("_bytes", "_seconds", "_bytes_per_second", "_iops")
QUANTITY_SUFFIXES = ("_bytes", "_bytes_per_second", "_iops")  # R7
# R8
LABEL_NAMES = {"node", "disk", "class", "dev", "capability", "select", "namespace", "pod",
               "direction", "resource", "method", "code", "reason", "verb", "kind", "result", "verdict",
               "le"}
DISK_LABELS = {"node", "disk", "class"}
POD_LABELS = {"node", "namespace", "pod", "disk"}
PROCESS = {"process_cpu_seconds_total": "counter", "process_start_time_seconds": "gauge",
           "process_resident_memory_bytes": "gauge", "process_virtual_memory_bytes": "gauge",
           "process_open_fds": "gauge", "process_max_fds": "gauge"}


def parse(text):
    """Families {name: {"type", "help", "samples": [(sample name, labels dict, value)]}}
    and the problems found while parsing (R2, R3 sample names)."""
    fams, errs, order = {}, [], []
    for n, line in enumerate(text.splitlines(), 1):
        if not line:
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            kind, rest = line[2:6], line[7:]
            name, _, arg = rest.partition(" ")
            f = fams.setdefault(name, {"type": None, "help": None, "samples": []})
            key = "help" if kind == "HELP" else "type"
            if f[key] is not None:
                errs.append("R2 %s: second %s line" % (name, kind))
            if f["samples"]:
                errs.append("R2 %s: %s after its samples" % (name, kind))
            if not arg.strip():
                errs.append("R2 %s: empty %s" % (name, kind))
            f[key] = arg
            if name not in order:
                order.append(name)
            continue
        if line.startswith("#"):
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            errs.append("line %d unparsable: %r" % (n, line))
            continue
        sname, body, value = m.group(1), m.group(3) or "", m.group(4)
        labels, pos = {}, 0
        for lm in LABEL_RE.finditer(body):
            if lm.start() != pos:
                break
            labels[lm.group(1)] = lm.group(2)
            pos = lm.end()
        if pos != len(body):
            errs.append("line %d: bad label set %r" % (n, body))
        fam = sname
        if fam not in fams:
            for suf in ("_bucket", "_sum", "_count"):
                if sname.endswith(suf) and fams.get(sname[:-len(suf)], {}).get("type") == "histogram":
                    fam = sname[:-len(suf)]
        if fam not in fams:
            errs.append("R2 %s: sample without HELP/TYPE" % sname)
            fams[fam] = {"type": None, "help": None, "samples": []}
        f = fams[fam]
        if f["type"] == "histogram" and sname == fam:
            errs.append("R3 %s: a histogram sample must end in _bucket/_sum/_count" % sname)
        f["samples"].append((sname, labels, float(value)))
    return fams, errs


def check_rules(fams, binary, node=None):
    """The violations of R1..R9 in one binary's families (a list of strings)."""
    errs = []
    for name, f in sorted(fams.items()):
        t = f["type"]
        if not NAME_RE.match(name) or "__" in name:
            errs.append("R1 %s: bad name" % name)
        if f["help"] is None or t is None:
            errs.append("R2 %s: HELP and TYPE both needed" % name)
        if t not in ("counter", "gauge", "histogram"):
            errs.append("R2 %s: type %r" % (name, t))
        if (t == "counter") != name.endswith("_total"):
            errs.append("R3 %s: counters and only counters end in _total (type %s)" % (name, t))
        base = name[:-len("_total")] if name.endswith("_total") else name
        tokens = base.split("_")
        bad = FORBIDDEN_TOKENS.intersection(tokens)
        if bad:
            errs.append("R4 %s: not a base unit: %s" % (name, ", ".join(sorted(bad))))
        if UNIT_WORDS.intersection(tokens) and not base.endswith(UNIT_SUFFIXES):
            errs.append("R5 %s: the unit must be the name's suffix" % name)
        if "per" in tokens and not base.endswith("_bytes_per_second"):
            errs.append("R5 %s: rates are named _bytes_per_second or _iops" % name)
        if t == "histogram" and not base.endswith(("_seconds", "_bytes")):
            errs.append("R5 %s: a histogram observes seconds or bytes" % name)
        # R6
        sets = set()
        for sname, labels, _ in f["samples"]:
            keys = set(labels)
            if t == "histogram" and sname.endswith("_bucket"):
                if "le" not in keys:
                    errs.append("R6 %s: bucket without le" % name)
                keys.discard("le")
            elif "le" in keys:
                errs.append("R6 %s: le outside a bucket" % name)
            sets.add(frozenset(keys))
        if len(sets) > 1:
            errs.append("R6 %s: label sets differ: %s" % (name, sorted(sorted(s) for s in sets)))
        names = set().union(*sets) if sets else set()
        # R7
        if base.endswith(QUANTITY_SUFFIXES) and names & {"resource", "unit"}:
            errs.append("R7 %s: a quantity must not mix resources/units by label" % name)
        # R8
        info = name.endswith("_info")
        if not info and names - LABEL_NAMES:
            errs.append("R8 %s: undocumented labels %s" % (name, sorted(names - LABEL_NAMES)))
        if info:
            for _, _, v in f["samples"]:
                if v != 1:
                    errs.append("R8 %s: an _info gauge is 1, not %g" % (name, v))
        if binary == "extender" and name.startswith("ioqos_") and name != "ioqos_build_info" \
                and not name.startswith("ioqos_extender_"):
            errs.append("R1 %s: the extender's own metrics are ioqos_extender_*" % name)
        if binary == "plugin" and name.startswith("ioqos_") and name != "ioqos_build_info":
            for _, labels, _ in f["samples"]:
                if labels.get("node") != node:
                    errs.append("R8 %s: node=%r, want %r" % (name, labels.get("node"), node))
                    break
            if "pod" in names and names - {"direction", "verdict"} != POD_LABELS:
                errs.append("R8 %s: per-pod labels %s, want %s (+direction)" %
                            (name, sorted(names), sorted(POD_LABELS)))
            elif "disk" in names and "pod" not in names and \
                    names - {"capability", "dev", "verdict"} != DISK_LABELS:
                errs.append("R8 %s: per-disk labels %s, want %s (+capability or dev)" %
                            (name, sorted(names), sorted(DISK_LABELS)))
    for name, t in PROCESS.items():
        if name not in fams:
            errs.append("R9 %s missing" % name)
        elif fams[name]["type"] != t or len(fams[name]["samples"]) != 1:
            errs.append("R9 %s: want one %s sample" % (name, t))
    return errs


def series(fams, name, drop=()):
    """{frozenset(label items): value} of a family, without the labels in drop."""
    out = {}
    for _, labels, v in fams.get(name, {"samples": []})["samples"]:
        key = frozenset((k, x) for k, x in labels.items() if k not in drop)
        out[key] = out.get(key, 0) + v
    return out


def join(fams, a, b, drop=()):
    """PromQL a / b (sum without(drop) on a): the label sets must match one to
    one. Returns {labels: a/b}; raises AssertionError naming the unmatched ones."""
    sa, sb = series(fams, a, drop), series(fams, b)
    if not sa or set(sa) != set(sb):
        raise AssertionError("%s / %s: label sets do not match one to one:\n  only in %s: %s\n"
                             "  only in %s: %s" % (a, b, a, [dict(k) for k in set(sa) - set(sb)],
                                                   b, [dict(k) for k in set(sb) - set(sa)]))
    return {k: (sa[k] / sb[k] if sb[k] else float("nan")) for k in sa}


def documented(doc):
    """Metric names in the table of the "## Metrics" section of docs/DOC."""
    with open(os.path.join(HERE, "..", "..", "docs", doc)) as f:
        text = f.read()
    sec = text[text.index("\n## Metrics\n"):]
    sec = sec[:sec.index("\n## ", 1)]
    return set(re.findall(r"`((?:ioqos|process)_[a-z0-9_]+)`", sec))


def check_documented(test, fams, doc):
    """Every family served is in the doc's table, every name there is served."""
    names = documented(doc)
    test.assertEqual(sorted(set(fams) - names), [], "served but not in docs/%s" % doc)
    test.assertEqual(sorted(names - set(fams)), [], "in docs/%s but not served" % doc)


class Rules(unittest.TestCase):
    """The checker itself: each rule refuses what it is meant to refuse."""

    def test_old_names_fail(self):
        # the plugin's exposition before the conventions (abridged)
        old = ('# HELP ioqos_disk_capacity_units u\n# TYPE ioqos_disk_capacity_units gauge\n'
               'ioqos_disk_capacity_units{disk="a",class="fast",resource="ioqos/iops"} 10\n'
               '# HELP ioqos_disk_allocated_units u\n# TYPE ioqos_disk_allocated_units gauge\n'
               'ioqos_disk_allocated_units{disk="a",resource="ioqos/iops"} 9\n'
               '# HELP ioqos_ungranted_bytes_before_bound_max m\n'
               '# TYPE ioqos_ungranted_bytes_before_bound_max gauge\n'
               'ioqos_ungranted_bytes_before_bound_max 0\n'
               '# HELP ioqos_x_total c\n# TYPE ioqos_x_total gauge\nioqos_x_total 1\n'
               'ioqos_y 1\n')
        fams, errs = parse(old)
        errs += check_rules(fams, "plugin", NODE)
        text = "\n".join(errs)
        for want in ("R4 ioqos_disk_capacity_units", "R5 ioqos_ungranted_bytes_before_bound_max",
                     "R3 ioqos_x_total", "R2 ioqos_y", "R8 ioqos_disk_allocated_units: node=None",
                     "R8 ioqos_disk_allocated_units: per-disk labels", "R9 process_open_fds"):
            self.assertIn(want, text)
        with self.assertRaisesRegex(AssertionError, "do not match one to one"):
            join(fams, "ioqos_disk_allocated_units", "ioqos_disk_capacity_units")

    def test_mixed_labels_and_units_fail(self):
        fams, errs = parse('# HELP ioqos_a_bytes a\n# TYPE ioqos_a_bytes gauge\n'
                           'ioqos_a_bytes{resource="x"} 1\nioqos_a_bytes{disk="y"} 1\n'
                           '# HELP ioqos_b_ms b\n# TYPE ioqos_b_ms gauge\nioqos_b_ms{uid="u"} 1\n')
        text = "\n".join(errs + check_rules(fams, "extender"))
        for want in ("R6 ioqos_a_bytes", "R7 ioqos_a_bytes", "R4 ioqos_b_ms", "R8 ioqos_b_ms"):
            self.assertIn(want, text)


class Plugin(PluginTest):
    env_args = {"extra_config": {
        "devices": [
            {"select": "fakedisk0", "class": "fast",
             "capacity": {"bandwidthBytesPerSec": 1000 * MIB, "iops": 100000}},
            {"select": "fakedisk1", "class": "slow",
             "capacity": {"bandwidthBytesPerSec": 200 * MIB, "iops": 1000}},
            {"select": "diskz"}],
        "nodePolicy": {"ungranted": {"enable": True, "intervalMs": 300}}},
        "disks": (("fakedisk0", "250:0"), ("fakedisk1", "250:1"))}

    def test_scrape_follows_the_conventions(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000 + 200)
        # a granted pod on fakedisk0 (bandwidth and IOPS) with I/O counted
        _, ids, _, cg = self.admit("db", bw=200, iops=50, annotations={"ioqos.io/disk": "fakedisk0"})
        k.prestart(BW, ids[BW])
        set_io_stat(cg, "250:0", rbytes=4096, wbytes=8192, rios=1, wios=2)
        # a pod without a grant: bounded by the ungranted pool, no per-pod series
        uid = new_uid()
        self.env.api.put_pod(pod_object("plain", uid, qos="BestEffort", phase="Running"))
        k.set_pod("default", "plain", {"app": {}})
        v2_pod_cgroup(self.env.cgroup_root, uid, "besteffort", atomic=True)
        deadline = time.monotonic() + 10
        while d.metric("ioqos_ungranted_pods", disk="fakedisk0") != 1:
            self.assertLess(time.monotonic(), deadline, "the ungranted pod was never bounded")
            time.sleep(0.1)
        # the grant monitor: the disk's block stat and the pod's io.pressure,
        # measured over two passes
        for n in (1, 2):
            for disk in ("fakedisk0", "fakedisk1"):
                write(os.path.join(self.env.sysfs_root, "class/block", disk, "stat"),
                      "1 0 8 0 %d 0 %d 0 0 %d %d 0 0 0 0 0 0\n" % (2 * n, 16 * n, 100 * n, 100 * n))
            write(os.path.join(cg, "io.pressure"), "some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n"
                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" % (1000 * n))
            set_io_stat(cg, "250:0", rbytes=4096 * n, wbytes=8192 * n, rios=n, wios=2 * n)
            passes = d.metric("ioqos_monitor_passes_total") or 0
            while (d.metric("ioqos_monitor_passes_total") or 0) < passes + 2:
                self.assertLess(time.monotonic(), deadline + 10, "the monitor never passed")
                time.sleep(0.1)
        self.assertEqual(d.metric("ioqos_pod_grant_verdict", pod="db", disk="fakedisk0", verdict="idle"), 1)
        _, text = d.http("/metrics")
        fams, errs = parse(text)
        errs += check_rules(fams, "plugin", NODE)
        self.assertEqual(errs, [], "\n".join(errs) + "\n--- scrape:\n" + text)
        check_documented(self, fams, "plugin.md")

        # the documented alert: allocated / capacity per disk, for each resource
        for suf, held, cap in (("bytes_per_second", 200 * MIB, 1000 * MIB), ("iops", 5000, 100000)):
            r = join(fams, "ioqos_disk_allocated_" + suf, "ioqos_disk_capacity_" + suf)
            self.assertEqual(len(r), 2, r)
            fast = frozenset({"node": NODE, "disk": "fakedisk0", "class": "fast"}.items())
            self.assertAlmostEqual(r[fast], held / cap)
        # the other per-disk families join the capacity the same way
        for name in ("ioqos_disk_healthy", "ioqos_disk_capacity_error", "ioqos_ungranted_pool_iops",
                     "ioqos_ungranted_pool_bytes_per_second", "ioqos_ungranted_pods"):
            join(fams, name, "ioqos_disk_capacity_bytes_per_second")
        # grant vs achieved: rate(io_bytes_total) summed over direction / grant
        r = join(fams, "ioqos_pod_io_bytes_total", "ioqos_pod_grant_bytes_per_second",
                 drop=("direction",))
        self.assertEqual(list(r.values()), [2 * (4096 + 8192) / (200 * MIB)])
        join(fams, "ioqos_pod_io_operations_total", "ioqos_pod_grant_iops", drop=("direction",))
        # the monitor's achieved vs grant, and the disk's delivery vs its capacity
        join(fams, "ioqos_pod_achieved_bytes_per_second", "ioqos_pod_grant_bytes_per_second",
             drop=("direction",))
        join(fams, "ioqos_pod_achieved_iops", "ioqos_pod_grant_iops", drop=("direction",))
        join(fams, "ioqos_pod_io_stall_ratio", "ioqos_pod_grant_iops")
        join(fams, "ioqos_pod_grant_verdict", "ioqos_pod_grant_iops", drop=("verdict",))
        for name in ("ioqos_disk_io_bytes_per_second", "ioqos_disk_granted_io_bytes_per_second"):
            r = join(fams, name, "ioqos_disk_capacity_bytes_per_second")
        # bounded cardinality: per-pod series for the granted pod only
        pods = {l.get("pod") for n, f in fams.items() if n.startswith("ioqos_pod_")
                for _, l, _ in f["samples"] if "pod" in l}
        self.assertEqual(pods, {"db"})
        disks = {l["disk"] for f in fams.values() for _, l, _ in f["samples"] if "disk" in l}
        self.assertEqual(disks, {"fakedisk0", "fakedisk1"})
        # process_* describe this process
        ps = {n: fams[n]["samples"][0][2] for n in PROCESS}
        self.assertLessEqual(ps["process_start_time_seconds"], time.time())
        self.assertGreater(ps["process_start_time_seconds"], time.time() - 300)
        self.assertGreater(ps["process_resident_memory_bytes"], 0)
        self.assertLessEqual(ps["process_open_fds"], ps["process_max_fds"])
        self.assertGreater(ps["process_open_fds"], 3)


class ExtenderScrape(unittest.TestCase):
    def test_scrape_follows_the_conventions(self):
        with Extender() as ext:
            nodes = [k8s.node("n1", [k8s.disk("sda", 1000)]), k8s.node("n2")]
            ext.post("filter", k8s.filter_args(k8s.ioqos_pod("db", bw=10), nodes=nodes))
            ext.post("prioritize", k8s.filter_args(k8s.ioqos_pod("db", bw=10), nodes=nodes))
            ext.request("POST", "/filter", b"{not json")
            deadline = time.monotonic() + 10
            while True:
                _, text, _ = ext.get("/metrics")
                if 'verb="prioritize",code="200"' in text or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            fams, errs = parse(text)
            errs += check_rules(fams, "extender")
            self.assertEqual(errs, [], "\n".join(errs) + "\n--- scrape:\n" + text)
            check_documented(self, fams, "extender.md")
            self.assertIn("ioqos_extender_request_duration_seconds", fams)
            self.assertEqual(fams["process_open_fds"]["type"], "gauge")


if __name__ == "__main__":
    unittest.main()

# SPDX-License-Identifier: Apache-2.0
"""The monitoring bundle (manifests/monitoring) against the real binaries.

One scenario runs ioqos-plugin (kubelet and API server stand-ins, cgroup v2
temp tree, two fake disks) and ioqos-scheduler-ext, and scrapes /metrics of
each twice: in a good state (one modest grant, all healthy) and in a bad one
(a disk 95% allocated, a refused PreStartContainer, a disk gone, a pod
without a grant that cannot be bounded, a restarted kubelet refusing the
registration, a failed bind). The scraped samples, with the target labels
the PodMonitors give them, become `promtool test rules` input series: good
values throughout for the "quiet" cases, good then bad for the "fire" cases.
Every alert must fire on the bad series with the expected labels and stay
quiet on the good ones; every metric name the rules and the dashboard use
must be in a scrape.

Environment (set by CMake): IOQOS_PLUGIN_BIN, IOQOS_EXT_BIN,
IOQOS_PROTO_PY_DIR, PROMTOOL. Run with /usr/bin/python3 (Debian's grpcio).
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "plugin"))
sys.path.insert(0, os.path.join(HERE, "..", "extender"))

import yaml  # noqa: E402

from harness import (BW, IOPS, NODE, PluginTest, ids_of, new_uid, pod_object,  # noqa: E402
                     remove_fake_disk, set_io_stat, v2_pod_cgroup_dir, write)
from extproc import Extender  # noqa: E402

BUNDLE = os.path.join(REPO, "manifests", "monitoring")
PROMTOOL = os.environ.get("PROMTOOL", "/usr/bin/promtool")

# What the PodMonitors make of a scraped sample (prometheus-operator): job is
# "<namespace>/<PodMonitor name>", namespace/pod/container/instance name the
# target, the plugin's relabeling adds node; honorLabels (plugin only) keeps
# a sample's own label where the two collide.
TARGETS = {
    "plugin": ({"job": "ioqos-system/ioqos-plugin", "namespace": "ioqos-system",
                "pod": "ioqos-plugin-x7k2p", "container": "plugin", "endpoint": "metrics",
                "instance": "10.0.0.5:9464", "node": NODE}, True),
    "extender": ({"job": "ioqos-system/ioqos-scheduler-ext", "namespace": "ioqos-system",
                  "pod": "ioqos-scheduler-ext-5d9c7-abcde", "container": "extender",
                  "endpoint": "metrics", "instance": "10.0.1.7:9465"}, False),
}

CHANGE_MIN = 30  # the bad values start at this minute in the "fire" series
END_MIN = 90

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*')


def parse_scrape(text):
    """{(name, frozenset(labels)): value} of a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise AssertionError("unparsable sample line: %r" % line)
        labels = {}
        body = m.group(2) or ""
        pos = 0
        while pos < len(body):
            lm = LABEL.match(body, pos)
            if not lm:
                raise AssertionError("unparsable labels in: %r" % line)
            # the exposition format escapes only backslash, quote, newline
            labels[lm.group(1)] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1),
                                         lm.group(2))
            pos = lm.end()
        out[(m.group(1), frozenset(labels.items()))] = float(m.group(3))
    return out


def with_targets(samples, which):
    target, honor = TARGETS[which]
    out = {}
    for (name, labels), v in samples.items():
        lab = dict(labels)
        for k, tv in target.items():
            if k in lab and not honor:
                lab["exported_" + k] = lab.pop(k)
            lab.setdefault(k, tv)
        out[(name, frozenset(lab.items()))] = v
    return out


def series_text(name, labels):
    return "%s{%s}" % (name, ", ".join('%s=%s' % (k, json.dumps(v)) for k, v in sorted(labels)))


def fmt(v):
    if v != v or v in (float("inf"), float("-inf")):
        raise AssertionError("non-finite sample value %r" % v)
    return repr(int(v)) if v == int(v) else repr(v)


def input_series(good, bad=None):
    """promtool input_series at 1m steps up to END_MIN: good values only, or
    good until CHANGE_MIN then bad (a series only in one scrape is missing
    in the other part, as a series that appears or vanishes)."""
    out = []
    keys = set(good) | set(bad or {})
    for k in sorted(keys, key=lambda k: (k[0], sorted(k[1]))):
        if bad is None:
            vals = "%s+0x%d" % (fmt(good[k]), END_MIN)
        else:
            head = ("%s+0x%d" % (fmt(good[k]), CHANGE_MIN - 1) if k in good
                    else " ".join(["_"] * CHANGE_MIN))
            tail = ("%s+0x%d" % (fmt(bad[k]), END_MIN - CHANGE_MIN) if k in bad
                    else " ".join(["_"] * (END_MIN - CHANGE_MIN + 1)))
            vals = head + " " + tail
        out.append({"series": series_text(*k), "values": vals})
    return out


def rule_groups():
    with open(os.path.join(BUNDLE, "prometheusrule.yaml")) as f:
        doc = yaml.safe_load(f)
    return doc["spec"]


def dashboard():
    with open(os.path.join(BUNDLE, "ioqos-dashboard.json")) as f:
        return json.load(f)


def alerts():
    return [r for g in rule_groups()["groups"] for r in g["rules"] if "alert" in r]


def for_minutes(rule):
    f = rule.get("for", "0m")
    m = re.fullmatch(r"(\d+)([ms])", f)
    if not m:
        raise AssertionError("alert %s: unhandled for: %r" % (rule["alert"], f))
    return int(m.group(1)) if m.group(2) == "m" else -(-int(m.group(1)) // 60)


# --- metric names in PromQL -------------------------------------------------

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset", "inf", "nan"}


def metric_names(expr):
    """Metric names a PromQL expression selects: identifiers that are not
    functions, keywords, label names (in {...} or by/on(...) lists), nor in
    strings, ranges or Grafana $variables."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\$\{?\w+\}?", "", e)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", e):
        if m.group(2) or m.group(1).lower() in KEYWORDS:
            continue
        names.add(m.group(1))
    return names


def dashboard_exprs(d):
    out = []
    for p in d.get("panels", []):
        for t in p.get("targets", []):
            out.append(("panel %r" % p.get("title"), t["expr"]))
    for v in d.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if v.get("type") == "query":
            m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q.strip())
            if not m:
                raise AssertionError("variable %s: query %r is not label_values(sel, label)" % (v["name"], q))
            out.append(("variable %s" % v["name"], m.group(1)))
    return out


def missing_names(exprs, scraped_names):
    """[(where, name)] of metric names used but never scraped."""
    out = []
    for where, expr in exprs:
        for n in sorted(metric_names(expr)):
            if n not in scraped_names:
                out.append((where, n))
    return out


# --- the scenario ------------------------------------------------------------

class Scenario(PluginTest):
    """Runs both binaries through the good and the bad state once."""
    env_args = {"disks": (("diska", "250:0"), ("diskb", "250:16"))}

    def grant(self, name, bw, iops=0):
        uid, ids, _, cg = self.admit(name, bw=bw, iops=iops, annotations={"ioqos.io/disk": "diska"},
                                     atomic=True)
        for res in ids:
            self.env.kubelet.prestart(res, ids[res])
        return cg

    def ungranted_unbounded(self, name):
        """A pod without a grant whose cgroup has no io.max (io controller
        not enabled for it): its bound cannot be put in place."""
        uid = new_uid()
        self.env.api.put_pod(pod_object(name, uid))
        self.env.kubelet.set_pod("default", name, {"app": {}})
        final = v2_pod_cgroup_dir(self.env.cgroup_root, uid)
        aside = os.path.join(self.env.cgroup_root, ".staging", os.path.basename(final))
        write(os.path.join(aside, "cgroup.controllers"), "cpu memory pids\n")
        write(os.path.join(aside, "io.stat"), "")
        os.rename(aside, final)  # appears at once, as a real cgroup mkdir
        d = self.env.daemons[-1]
        deadline = time.monotonic() + 30
        while not d.metric("ioqos_ungranted_failures_total"):
            self.assertLess(time.monotonic(), deadline, "no ungranted failure; log:\n" + d.text()[-3000:])
            time.sleep(0.1)

    def collect(self):
        out = {}
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(ids_of(l)) == 2000)
        cg = self.grant("db", 100, iops=50)
        set_io_stat(cg, "250:0", rbytes=4096, wbytes=8192, rios=1, wios=2)  # the pod did I/O
        deadline = time.monotonic() + 30
        while d.metric("ioqos_pod_io_bytes_total", pod="db", direction="write") != 8192:
            self.assertLess(time.monotonic(), deadline, "no pod I/O counters; log:\n" + d.text()[-3000:])
            time.sleep(0.1)
        out["plugin_good"] = d.http("/metrics")[1]
        with Extender() as ext:
            # a filter request so the latency histogram has samples
            st, _, _ = ext.post("filter", {"Pod": {"metadata": {"name": "p", "namespace": "n"}},
                                           "NodeNames": ["w1"]})
            self.assertEqual(st, 200)
            out["ext_good"] = ext.get("/metrics")[1]
            st, res, _ = ext.post("bind", {"PodName": "a", "PodNamespace": "b", "PodUID": "c",
                                           "Node": "d"})
            self.assertIn("without Kubernetes API access", res["Error"])
            out["ext_bad"] = ext.get("/metrics")[1]
        # bad: 950 of diska's 1000 bandwidth units held, a PreStart for units
        # no pod holds (refused), diskb gone, then a restarted kubelet that
        # refuses the registration
        self.grant("bulk", 850)
        with self.assertRaises(Exception):
            k.prestart(BW, ["diska-bw-999"])
        remove_fake_disk(self.env.sysfs_root, "diskb", "250:16")
        k.wait_list(BW, lambda l: len(ids_of(l, "Unhealthy")) == 1000, what="diskb unhealthy")
        self.ungranted_unbounded("nogrant")
        k.reject_register = "device manager not ready"
        k.restart(down_seconds=0.3)
        deadline = time.monotonic() + 30
        while any(d.metric("ioqos_kubelet_registered", resource=r) != 0 for r in (BW, IOPS)):
            self.assertLess(time.monotonic(), deadline, "registration never lost; log:\n" + d.text()[-3000:])
            time.sleep(0.1)
        out["plugin_bad"] = d.http("/metrics")[1]
        # a graceful stop exits 0 (under ASan, a leak or memory error does not)
        self.assertEqual(d.terminate(), 0, "plugin exit; log:\n" + d.text()[-3000:])
        return out


SCRAPES = {}


def setUpModule():
    s = Scenario("collect")
    s.setUp()
    try:
        SCRAPES.update(s.collect())
    finally:
        s.doCleanups()
    dump = os.environ.get("IOQOS_MONITORING_DUMP")
    if dump:  # the scrapes, for docs and reviews
        os.makedirs(dump, exist_ok=True)
        for k, v in SCRAPES.items():
            with open(os.path.join(dump, k + ".txt"), "w") as f:
                f.write(v)


def samples(state):
    """Target-labelled samples of both binaries in state good or bad."""
    out = with_targets(parse_scrape(SCRAPES["plugin_" + state]), "plugin")
    out.update(with_targets(parse_scrape(SCRAPES["ext_" + state]), "extender"))
    return out


def labels_of(state, name, **match):
    """Label sets (dicts, without __name__) of the state's samples of name
    whose labels include match."""
    return [dict(l) for (n, l), _ in samples(state).items()
            if n == name and all(dict(l).get(k) == v for k, v in match.items())]


def expected_alerts():
    """What the bad state must raise, alert by alert: [labels]."""
    sev = {a["alert"]: a["labels"]["severity"] for a in alerts()}
    assert all(a["labels"]["severity"] == sev[a["alert"]] for a in alerts())
    exp = {
        # only diska's bandwidth is over 90% (950/1000); diskb and iops are not
        "IoqosDiskNearlySoldOut": [dict(l, resource="bandwidth") for l in
                                   labels_of("bad", "ioqos_disk_allocated_bytes_per_second", disk="diska")],
        # the refused PreStart: no pod holds diska-bw-999
        "IoqosEnforcementErrors": [{"node": NODE, "reason": "pod-not-listed"}],
        # the pod without a grant whose cgroup has no io.max
        "IoqosUngrantedBoundFailures": [{"node": NODE}],
        # registered == 0 and healthy == 0 keep every label of their series
        "IoqosKubeletRegistrationLost": [l for r in (BW, IOPS)
                                         for l in labels_of("bad", "ioqos_kubelet_registered", resource=r)],
        "IoqosDiskUnhealthy": labels_of("bad", "ioqos_disk_healthy", disk="diskb"),
        "IoqosExtenderBindErrors": [{"namespace": "ioqos-system",
                                     "pod": TARGETS["extender"][0]["pod"]}],
    }
    for name, lst in exp.items():
        for l in lst:
            l["severity"] = sev[name]
    return exp


def promtool_tests(fire, quiet, exp):
    """The `promtool test rules` file: for each alert, eval time = the
    change + its "for" + 5m (inside every 10m increase() window)."""
    times = {a["alert"]: CHANGE_MIN + for_minutes(a) + 5 for a in alerts()}
    tests = [
        {"name": "bad series: every alert fires", "interval": "1m", "input_series": fire,
         "alert_rule_test": [{"eval_time": "%dm" % times[a], "alertname": a,
                              "exp_alerts": [{"exp_labels": l} for l in exp[a]]} for a in times]},
        {"name": "good series: every alert stays quiet", "interval": "1m", "input_series": quiet,
         "alert_rule_test": [{"eval_time": "%dm" % times[a], "alertname": a, "exp_alerts": []}
                             for a in times]},
        {"name": "bad series, before the change: quiet", "interval": "1m", "input_series": fire,
         "alert_rule_test": [{"eval_time": "%dm" % (CHANGE_MIN - 1), "alertname": a, "exp_alerts": []}
                             for a in times]},
    ]
    return tests


OUTAGE_MIN = 10  # the registration outage tests' kubelet goes away at this minute


def outage_series(keys, zeros):
    """promtool input_series: each series 1, then 0 for `zeros` minutes from
    OUTAGE_MIN (kubelet away), then 1 again."""
    return [{"series": series_text(*k),
             "values": "1+0x%d 0+0x%d 1+0x%d" % (OUTAGE_MIN - 1, zeros - 1,
                                                 END_MIN - OUTAGE_MIN - zeros)} for k in keys]


def run_promtool_test(tmp, tests, groups=None):
    """Runs `promtool test rules`; the rules have no annotations there (their
    templates are checked by `promtool check rules`), so the expectations
    need only labels."""
    g = copy.deepcopy(groups or rule_groups())
    for grp in g["groups"]:
        for r in grp["rules"]:
            r.pop("annotations", None)
    rules = os.path.join(tmp, "rules.yaml")
    with open(rules, "w") as f:
        yaml.safe_dump(g, f)
    spec = os.path.join(tmp, "tests.yaml")
    with open(spec, "w") as f:
        yaml.safe_dump({"rule_files": [rules], "evaluation_interval": "1m", "tests": tests}, f,
                       sort_keys=False)
    return subprocess.run([PROMTOOL, "test", "rules", spec], capture_output=True, text=True,
                          timeout=120)


class Monitoring(unittest.TestCase):
    def test_parse_scrape(self):
        got = parse_scrape('# HELP x y\nx{a="q\\"\\\\n\\n",b="é"} 2.5\ny 1 1700000000\n')
        self.assertEqual(got, {("x", frozenset({"a": 'q"\\n\n', "b": "é"}.items())): 2.5,
                               ("y", frozenset()): 1.0})
        with self.assertRaises(AssertionError):
            parse_scrape('x{a=b} 1\n')

    def setUp(self):
        if not os.access(PROMTOOL, os.X_OK):
            self.fail("promtool not found at %s (Debian package prometheus; make deps)" % PROMTOOL)
        self.tmp = tempfile.mkdtemp(prefix="ioqos-monitoring-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_check_rules(self):
        path = os.path.join(self.tmp, "rules.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(rule_groups(), f)
        p = subprocess.run([PROMTOOL, "check", "rules", path], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS: %d rules found" % len(alerts()), p.stdout)
        # control: a broken expression is refused
        g = rule_groups()
        g["groups"][0]["rules"][0]["expr"] = "sum by (node (ioqos_disk_healthy)"
        with open(path, "w") as f:
            yaml.safe_dump(g, f)
        p = subprocess.run([PROMTOOL, "check", "rules", path], capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0, "promtool accepted a broken expression")

    def test_alerts_fire_on_bad_and_stay_quiet_on_good(self):
        good, bad = samples("good"), samples("bad")
        exp = expected_alerts()
        for a in ("IoqosDiskNearlySoldOut", "IoqosEnforcementErrors", "IoqosKubeletRegistrationLost",
                  "IoqosDiskUnhealthy", "IoqosExtenderBindErrors"):
            self.assertTrue(exp[a], "the bad scrape has no series for %s" % a)
        p = run_promtool_test(self.tmp, promtool_tests(input_series(good, bad), input_series(good), exp))
        self.assertEqual(p.returncode, 0, "promtool test rules:\n" + p.stdout + p.stderr)
        self.assertIn("SUCCESS", p.stdout)

    def test_control_wrong_expectations_fail(self):
        """The promtool run can fail: expecting the bad state's alerts on the
        good series, or no alert on the bad ones, is refused for each alert."""
        good, bad = samples("good"), samples("bad")
        exp = expected_alerts()
        for a, labels in exp.items():
            if not labels:
                continue
            tests = promtool_tests(input_series(good, bad), input_series(good), exp)
            # good series, expecting the alert
            tests[1]["alert_rule_test"] = [t if t["alertname"] != a else
                                           dict(t, exp_alerts=[{"exp_labels": l} for l in labels])
                                           for t in tests[1]["alert_rule_test"]]
            p = run_promtool_test(self.tmp, tests[1:2])
            self.assertNotEqual(p.returncode, 0, "%s 'fired' on the good series" % a)
            # bad series, expecting silence
            tests = promtool_tests(input_series(good, bad), input_series(good), exp)
            tests[0]["alert_rule_test"] = [dict(t, exp_alerts=[]) if t["alertname"] == a else t
                                           for t in tests[0]["alert_rule_test"]]
            p = run_promtool_test(self.tmp, tests[0:1])
            self.assertNotEqual(p.returncode, 0, "%s stayed quiet on the bad series" % a)

    def test_registration_lost_fires_on_an_outage_and_not_on_a_blip(self):
        """IoqosKubeletRegistrationLost on the scraped ioqos_kubelet_registered
        series: kubelet away longer than the rule's `for` is pending until
        then, firing after, resolved once registered again; away for less is
        quiet at every minute. The control: expecting it on the blip fails."""
        rule = next(a for a in alerts() if a["alert"] == "IoqosKubeletRegistrationLost")
        hold = for_minutes(rule)
        self.assertGreaterEqual(hold, 2, "a `for` below 2m leaves no blip to test")
        keys = [k for k, v in samples("good").items() if k[0] == "ioqos_kubelet_registered"]
        self.assertTrue(keys)
        self.assertTrue(all(samples("good")[k] == 1 for k in keys))
        labels = [dict(dict(k[1]), severity=rule["labels"]["severity"]) for k in keys]

        def at(minute, firing):
            return {"eval_time": "%dm" % minute, "alertname": rule["alert"],
                    "exp_alerts": [{"exp_labels": l} for l in labels] if firing else []}

        def test(zeros, checks):
            return {"name": "kubelet away %d minutes" % zeros, "interval": "1m",
                    "input_series": outage_series(keys, zeros), "alert_rule_test": checks}
        outage = test(hold + 3, [at(OUTAGE_MIN - 1, False), at(OUTAGE_MIN + hold - 1, False),
                                 at(OUTAGE_MIN + hold, True), at(OUTAGE_MIN + hold + 2, True),
                                 at(OUTAGE_MIN + hold + 4, False)])
        blip = test(hold, [at(m, False) for m in range(OUTAGE_MIN - 1, OUTAGE_MIN + hold + 3)])
        p = run_promtool_test(self.tmp, [outage, blip])
        self.assertEqual(p.returncode, 0, "promtool test rules:\n" + p.stdout + p.stderr)
        self.assertIn("SUCCESS", p.stdout)
        p = run_promtool_test(self.tmp, [test(hold, [at(OUTAGE_MIN + hold - 1, True)])])
        self.assertNotEqual(p.returncode, 0, "the alert 'fired' on a blip shorter than its for")

    def test_every_metric_name_used_is_scraped(self):
        scraped = {n for state in ("good", "bad") for (n, _) in samples(state)}
        exprs = [("alert %s" % a["alert"], a["expr"]) for a in alerts()]
        exprs += dashboard_exprs(dashboard())
        used = set().union(*(metric_names(e) for _, e in exprs))
        self.assertGreaterEqual(len(used), 10, "too few names found: %s" % sorted(used))
        self.assertEqual(missing_names(exprs, scraped), [])
        # control: a misspelt name in a panel is caught, label names are not names
        d = dashboard()
        d["panels"][1]["targets"][0]["expr"] = 'sum by (node) (ioqos_disk_capacity{node=~"$node"})'
        self.assertIn(("panel %r" % d["panels"][1]["title"], "ioqos_disk_capacity"),
                      missing_names(dashboard_exprs(d), scraped))
        self.assertEqual(metric_names('histogram_quantile(0.99, sum by (le, verb) '
                                      '(rate(a_bucket{x="y"}[5m]))) / on(node) b > 0'), {"a_bucket", "b"})

    def test_every_dashboard_query_returns_data(self):
        """Each panel and variable query, on the scraped series, gives at
        least one sample (right label values too, not only names): as an
        alert on absent(query) that must stay quiet. The control, a label
        value the binaries never expose, must make one fire."""
        def run(exprs):
            groups = {"groups": [{"name": "dashboard", "rules": [
                {"alert": "Empty%d" % i, "expr": "absent(%s)" % re.sub(r"\$\{?\w+\}?", ".*", e)}
                for i, (_, e) in enumerate(exprs)]}]}
            tests = [{"name": "dashboard queries", "interval": "1m",
                      "input_series": input_series(samples("good"), samples("bad")),
                      "alert_rule_test": [{"eval_time": "%dm" % (CHANGE_MIN + 5), "alertname": "Empty%d" % i,
                                           "exp_alerts": []} for i in range(len(exprs))]}]
            return run_promtool_test(self.tmp, tests, groups)
        exprs = dashboard_exprs(dashboard())
        p = run(exprs)
        self.assertEqual(p.returncode, 0, "queries without data (EmptyN = query N of %s):\n%s%s"
                         % ([e for _, e in exprs], p.stdout, p.stderr))
        bad = [(w, e.replace('method="PreStartContainer"', 'method="PreStart"')) for w, e in exprs]
        self.assertNotEqual(bad, exprs)
        self.assertNotEqual(run(bad).returncode, 0, "a query on a label value never exposed had data")

    def test_component_renders_in_an_overlay(self):
        """The component added to the base: the PodMonitors select the pods
        and name a port that is the metrics port, the dashboard ConfigMap
        carries the sidecar's label and valid JSON, all in ioqos-system."""
        # kustomize wants relative paths: an overlay in a copy of manifests/
        shutil.copytree(os.path.join(REPO, "manifests"), os.path.join(self.tmp, "manifests"))
        ov = os.path.join(self.tmp, "manifests", "overlays", "with-monitoring")
        os.makedirs(ov)
        with open(os.path.join(ov, "kustomization.yaml"), "w") as f:
            yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                            "resources": ["../../base"], "components": ["../../monitoring"]}, f)
        p = subprocess.run(["kubectl", "kustomize", ov], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        docs = [x for x in yaml.safe_load_all(p.stdout) if x]
        by_kind = {}
        for o in docs:
            by_kind.setdefault(o["kind"], []).append(o)
        ports = {"ioqos-plugin": 9464, "ioqos-scheduler-ext": 9465}
        self.assertEqual(sorted(m["metadata"]["name"] for m in by_kind["PodMonitor"]), sorted(ports))
        for pm in by_kind["PodMonitor"]:
            self.assertEqual(pm["metadata"]["namespace"], "ioqos-system")
            sel = pm["spec"]["selector"]["matchLabels"]
            pods = [w["spec"]["template"] for w in by_kind["DaemonSet"] + by_kind["Deployment"]
                    if all(w["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in sel.items())]
            self.assertEqual(len(pods), 1, "%s selects %d pod templates" % (pm["metadata"]["name"], len(pods)))
            for ep in pm["spec"]["podMetricsEndpoints"]:
                cports = {cp["name"]: cp["containerPort"] for c in pods[0]["spec"]["containers"]
                          for cp in c.get("ports", [])}
                self.assertEqual(cports.get(ep["port"]), ports[pm["metadata"]["name"]])
        cm = [c for c in by_kind["ConfigMap"] if c["metadata"]["name"] == "ioqos-dashboard"]
        self.assertEqual(len(cm), 1)
        self.assertEqual(cm[0]["metadata"]["namespace"], "ioqos-system")
        self.assertEqual(cm[0]["metadata"]["labels"].get("grafana_dashboard"), "1")
        self.assertEqual(json.loads(cm[0]["data"]["ioqos-dashboard.json"])["uid"], "ioqos")
        self.assertEqual(len(by_kind["PrometheusRule"]), 1)
        self.assertEqual(by_kind["PrometheusRule"][0]["metadata"]["namespace"], "ioqos-system")


if __name__ == "__main__":
    unittest.main(verbosity=2)

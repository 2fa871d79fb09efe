# SPDX-License-Identifier: Apache-2.0
"""Version skew between the plugin and the extender (docs/operations.md,
"Version skew"): their one contract is the node annotation ioqos.io/devices,
and while its version is 1 any plugin works with any extender.

  - skew/plugin-VERSION.json: the annotation each release's plugin published,
    captured from that release's binary (skew/README.md says how). This
    extender must place on them as their plugins meant.
  - a newer plugin: the same annotations with fields, capability names and a
    resource this extender does not know, everywhere a writer may add them.
    It must decide exactly as without them (that is the rule an older
    extender relies on when the plugins are upgraded first).
  - a version it does not know: the node is unknown, with the reason said.

Run: IOQOS_EXT_BIN=build/scheduler-ext/ioqos-scheduler-ext \
     /usr/bin/python3 -m unittest -v test_skew
"""
import copy
import glob
import json
import os
import time
import unittest

import k8s
from extproc import Extender

HERE = os.path.dirname(os.path.abspath(__file__))
# IOQOS_SKEW_ANNOTATIONS (a glob): other recordings, e.g. this tree's own
# plugin for an older release's extender (skew/README.md)
RELEASES = sorted(glob.glob(os.environ.get("IOQOS_SKEW_ANNOTATIONS") or
                            os.path.join(HERE, "skew", "plugin-*.json")))


def released():
    """(version, annotation dict) of every recorded release, published now:
    a live plugin refreshes publishedAt every 5 minutes, a recording keeps
    the time it was made."""
    out = []
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for path in RELEASES:
        ver = os.path.basename(path)[len("plugin-"):-len(".json")]
        with open(path) as f:
            a = json.load(f)
        if "publishedAt" in a:
            a["publishedAt"] = now
        out.append((ver, a))
    return out


def newer(a):
    """What a newer writer may add (docs/annotations.md, compatibility rules)."""
    a = copy.deepcopy(a)
    a["schedulingHints"] = {"preferred": ["x"], "weight": 3}
    a["units"]["ioqos/latency"] = 100
    for d in a["devices"]:
        d["capabilities"] = d.get("capabilities", []) + ["io.latency.v2", "zoned"]
        d["capacity"]["ioqos/latency"] = 40
        d["allocated"]["ioqos/latency"] = 7
        d["queueDepth"] = 64
        d["topology"] = {"numa": 0, "rotational": False}
    a["nvmet"] = {"state": "loaded", "future": [1, 2, 3]}
    return a


def text(a):
    return json.dumps(a, separators=(",", ":"))


def free_bw(a):
    return max(d["capacity"].get(k8s.RES_BW, 0) - d["allocated"].get(k8s.RES_BW, 0)
               for d in a["devices"] if d["healthy"] and d.get("class", "default") == "default")


class VersionSkew(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ext = Extender()

    @classmethod
    def tearDownClass(cls):
        cls.ext.stop()

    def decide(self, a, bw):
        """filter and prioritize of a pod asking bw units, on a node with annotation a."""
        node = k8s.node(a["node"], raw_annotation=text(a) if isinstance(a, dict) else a)
        args = k8s.filter_args(k8s.ioqos_pod("db", bw=bw), nodes=[node])
        st, res, _ = self.ext.post("filter", args)
        self.assertEqual(st, 200, res)
        st, prio, _ = self.ext.post("prioritize", args)
        self.assertEqual(st, 200, prio)
        return res["FailedNodes"], res["FailedAndUnresolvableNodes"], \
            [n["metadata"]["name"] for n in res["Nodes"]["items"]], prio

    def test_releases_are_recorded(self):
        self.assertTrue(RELEASES, "no skew/plugin-*.json: the recorded annotations are missing")
        for ver, a in released():
            self.assertEqual(a["version"], 1, ver)

    def test_annotations_of_released_plugins_are_placed_on(self):
        for ver, a in released():
            with self.subTest(release=ver):
                free = free_bw(a)
                self.assertGreater(free, 1, "%s: the recording should leave room on a disk" % ver)
                failed, unres, passed, prio = self.decide(a, free)
                self.assertEqual(passed, [a["node"]], (failed, unres))
                self.assertEqual([p["Host"] for p in prio], [a["node"]])
                failed, unres, passed, _ = self.decide(a, free + 1)
                self.assertEqual(passed, [])
                self.assertIn("has %d free bandwidth units" % (free + 1), failed.get(a["node"], ""), (failed, unres))

    def test_a_newer_plugin_is_decided_on_as_the_fields_it_shares(self):
        for ver, a in released():
            free = free_bw(a)
            for bw in (1, free // 2 or 1, free, free + 1):
                with self.subTest(release=ver, bw=bw):
                    self.assertEqual(self.decide(newer(a), bw), self.decide(a, bw))

    def test_control_a_changed_known_field_changes_the_decision(self):
        # the comparison above can fail: a known field that differs decides differently
        ver, a = released()[-1]
        b = copy.deepcopy(a)
        for d in b["devices"]:
            d["allocated"][k8s.RES_BW] = d["capacity"][k8s.RES_BW]
        self.assertNotEqual(self.decide(b, 1), self.decide(a, 1))

    def test_an_unknown_version_makes_the_node_unknown_with_the_reason(self):
        ver, a = released()[-1]
        b = dict(a, version=2)
        failed, unres, passed, _ = self.decide(b, 1)
        self.assertEqual(passed, [])
        self.assertIn("version 2 is not supported", unres.get(a["node"], ""), (failed, unres))

    def test_no_published_at_is_never_stale_an_old_one_is(self):
        # plugins older than publishedAt: taken as they are; a live one refreshes it
        ver, a = released()[-1]
        with Extender("--annotation-max-age", "60") as ext:
            old = dict(a)
            old.pop("publishedAt", None)
            stale = dict(a, publishedAt=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600)))
            for ann, placed in ((old, True), (stale, False)):
                node = k8s.node(a["node"], raw_annotation=text(ann))
                st, res, _ = ext.post("filter", k8s.filter_args(k8s.ioqos_pod("db", bw=1), nodes=[node]))
                self.assertEqual(st, 200, res)
                got = [n["metadata"]["name"] for n in res["Nodes"]["items"]]
                self.assertEqual(got, [a["node"]] if placed else [], res)
                if not placed:
                    self.assertIn("stale", res["FailedAndUnresolvableNodes"][a["node"]])


if __name__ == "__main__":
    unittest.main()

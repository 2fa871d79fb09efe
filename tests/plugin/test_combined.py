# SPDX-License-Identifier: Apache-2.0
"""Combined-direction grants (enforcement.combinedDirections): the plugin
re-splits a granted pod's rbps/wbps from the grant monitor's samples so that
read + write stays within the grant (src/grant/dirsplit.c, plugin/daemon/core/combined.c).

The kernel is played by a closed-loop feeder: each pod reads and writes at
min(its demand, the io.max value the plugin put in place), advancing io.stat
(test_monitor.Feeder). So the test sees the loop the real kernel closes:
demand -> achieved -> monitor -> re-split -> io.max -> achieved."""
import json
import os
import subprocess
import time
import unittest

from harness import BW, MIB, PluginTest, iomax_of, write
from test_monitor import DEV, Feeder

CTL = os.environ.get("IOQOS_CTL_BIN", "")
G = 100 * MIB
INF = 10 * G  # a demand above any limit


class LoopFeeder(Feeder):
    """Feeder whose pods achieve min(demand, io.max) per direction."""

    def __init__(self, sys_root):
        super().__init__(sys_root)
        self.demand = {}

    def want(self, cg, r=0.0, w=0.0):
        with self.lock:
            self.demand[cg] = (r, w)

    def advance(self, dt):
        for cg, (r, w) in list(self.demand.items()):
            lim = iomax_of(cg, DEV) or {}  # None also half-way through a write
            rl = lim.get("rbps") or INF
            wl = lim.get("wbps") or INF
            ar, aw = min(r, rl), min(w, wl)
            self.pod(cg, rbps=ar, wbps=aw, riops=ar / MIB, wiops=aw / MIB, stall=0.5 if ar or aw else 0)
        super().advance(dt)


class CombinedBase(PluginTest):
    combined = True

    def setUp(self):
        self.env_args = {"extra_config": {
            "monitor": {"intervalSeconds": 1},
            "enforcement": {"reconcileIntervalSeconds": 1, "combinedDirections": self.combined}}}
        super().setUp()
        self.feed = LoopFeeder(self.env.sysfs_root)
        self.feed.set_disk(300 * MIB, busy=0.5, queue=1.0)  # room: nothing starves
        self.feed.advance(0)
        self.feed.start()
        self.addCleanup(self.feed.stop)

    def grant(self, name, bw):
        uid, ids, _, cg = self.admit(name, bw=bw, atomic=True)
        self.env.kubelet.prestart(BW, ids[BW])
        return uid, cg

    def wait_limits(self, cg, pred, what, timeout=20):
        """Waits for a split (read + write <= the grant) that satisfies pred."""
        deadline = time.monotonic() + timeout
        lim = None
        while time.monotonic() < deadline:
            lim = iomax_of(cg, DEV)
            if (lim and lim["rbps"] and lim["wbps"] and lim["rbps"] + lim["wbps"] <= G
                    and pred(lim["rbps"], lim["wbps"])):
                return lim
            time.sleep(0.1)
        log = "\n".join(l for l in self.env.daemons[-1].text().split("\n")
                        if "re-split" in l or "io.max" in l or "rebuilt" in l)
        self.fail("%s: io.max never got there, last %r; log:\n%s" % (what, lim, log[-6000:]))


class Combined(CombinedBase):
    def test_resplit_follows_demand_and_reconcile_keeps_it(self):
        d = self.start()
        d.wait_log(r"combined-direction grants on")
        _, cg = self.grant("db", bw=100)
        self.assertEqual(iomax_of(cg, DEV), {"rbps": G, "wbps": G, "riops": None, "wiops": None},
                         "PreStart writes the full-grant split")
        # reading only: the read side gets the grant but the write floor
        self.feed.want(cg, r=INF)
        lim = self.wait_limits(cg, lambda r, w: r >= 0.95 * G, "reader")
        self.assertLessEqual(lim["rbps"] + lim["wbps"], G)
        self.assertGreaterEqual(lim["wbps"], 2, "a floor, never shut out")
        self.assertGreaterEqual(d.metric("ioqos_direction_resplits_total", resource="ioqos/bandwidth"), 1)
        # `ioqosctl explain` shows the split as what was written and read back
        if CTL:
            r = subprocess.run([CTL, "explain", "--socket", os.path.join(self.env.state_dir, "plugin.sock"),
                                "--json", "default/db"], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            iomax = {f["file"]: f for f in json.loads(r.stdout)["files"]}["io.max"]
            self.assertIn("rbps=%d wbps=%d" % (lim["rbps"], lim["wbps"]), iomax["written"])
            self.assertIn("rbps=%d wbps=%d" % (lim["rbps"], lim["wbps"]), iomax["readBack"])
        # reconcile keeps the split: it is the desired state, not drift
        n = d.text().count("reconcile pass")
        d.wait_log(r"(?s)(reconcile pass.*){%d}" % (n + 2))
        self.assertEqual(iomax_of(cg, DEV), lim)
        self.assertNotIn("limit drift", d.text())
        self.assertEqual(d.metric("ioqos_limit_drift_total", resource="ioqos/bandwidth"), 0)
        # switches to writing: the write side regains the grant (the feeder
        # follows io.max, so this is the loop the kernel closes)
        self.feed.want(cg, w=INF)
        lim = self.wait_limits(cg, lambda r, w: w >= 0.95 * G, "writer after the switch")
        self.assertLessEqual(lim["rbps"] + lim["wbps"], G)
        # both at once: halves, the sum within the grant
        self.feed.want(cg, r=INF, w=INF)
        lim = self.wait_limits(cg, lambda r, w: abs(r - w) <= 0.05 * G, "reader and writer")
        self.assertLessEqual(lim["rbps"] + lim["wbps"], G)
        # someone else's write is still drift, and the split is what comes back
        write(os.path.join(cg, "io.max"), "%s rbps=%d wbps=max riops=max wiops=max" % (DEV, G))
        d.wait_log(r"limit drift corrected pod=default/db .* found=\"%s rbps=%d wbps=max "
                   r"riops=max wiops=max\"" % (DEV, G))
        got = self.wait_limits(cg, lambda r, w: r + w <= G, "the split back after drift")
        self.assertLessEqual(got["rbps"] + got["wbps"], G)
        self.assertEqual(d.metric("ioqos_direction_resplit_errors_total", resource="ioqos/bandwidth"), 0)

    def test_plugin_restart_starts_from_the_full_grant_split(self):
        d = self.start()
        _, cg = self.grant("db", bw=100)
        self.feed.want(cg, r=INF)
        self.wait_limits(cg, lambda r, w: r >= 0.95 * G and w < 0.1 * G, "reader")
        self.feed.want(cg)  # idle while the plugin is away
        self.assertEqual(d.terminate(), 0)
        d2 = self.start()
        d2.wait_log(r"grant rebuilt from pod resources pod=default/db")
        self.assertNotIn("limit drift", d2.text(), "a restart is not drift")
        # idle: the full-grant split is re-split to halves, then demand decides
        self.feed.want(cg, w=INF)
        lim = self.wait_limits(cg, lambda r, w: w >= 0.95 * G, "writer after the restart")
        self.assertLessEqual(lim["rbps"] + lim["wbps"], G)


class CombinedOff(CombinedBase):
    combined = False

    def test_off_by_default_each_direction_keeps_the_grant(self):
        d = self.start()
        _, cg = self.grant("db", bw=100)
        self.feed.want(cg, r=INF, w=INF)
        n = d.text().count("reconcile pass")
        d.wait_log(r"(?s)(reconcile pass.*){%d}" % (n + 3))
        self.assertEqual(iomax_of(cg, DEV), {"rbps": G, "wbps": G, "riops": None, "wiops": None})
        self.assertNotIn("combined-direction grants on", d.text())
        self.assertEqual(d.metric("ioqos_direction_resplits_total", resource="ioqos/bandwidth"), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)

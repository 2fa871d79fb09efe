# SPDX-License-Identifier: Apache-2.0
"""One bad disk degrades one disk (issue 12 item 9): a selector that gives no
disk, a corrupt calibration entry or a bad io.cost.model line marks only
that disk (or selector) unhealthy, with the reason in the log, the node
annotation, an Event on the node and a metric, while the node's other disks
keep advertising their units to the kubelet stub."""
import json
import os
import unittest

from harness import BW, IOPS, MIB, NODE, PluginTest, fake_disk, ids_of, write

GOOD = {"select": "diska", "capacity": {"bandwidthBytesPerSec": 1000 * MIB, "iops": 100000}}
CAL_B = {"dev": "250:16", "measuredAt": "2026-01-01T00:00:00Z", "dir": "/data", "seconds": 5,
         "seqReadBytesPerSec": 500 * MIB, "seqWriteBytesPerSec": 500 * MIB,
         "randReadIops": 50000, "randWriteIops": 50000}


class DiskFaults(PluginTest):
    env_args = {"disks": (("diska", "250:0"), ("diskb", "250:16"))}

    def configure(self, devices, calibration=None):
        cal = os.path.join(self.env.root, "calibration.json")
        cfg = {"devices": devices, "allocatableFraction": 1.0, "calibrationFile": cal,
               "enforcement": {"reconcileIntervalSeconds": 1}}
        write(self.env.config_path, json.dumps(cfg))
        if calibration is not None:
            write(cal, calibration)
        return cal

    def annotation(self):
        text = self.env.api.annotation(NODE, "ioqos.io/devices")
        return json.loads(text) if text else None

    def wait_annotation(self, pred, what):
        self.env.api.wait(lambda: self.annotation() is not None and pred(self.annotation()), what=what)
        return self.annotation()

    def node_events(self, reason):
        return [e for e in self.env.api.events
                if e["involvedObject"]["kind"] == "Node" and e["reason"] == reason]

    def assert_good_disk_serves(self):
        k = self.env.kubelet
        for res in (BW, IOPS):
            lst = k.wait_list(res, lambda l: len(ids_of(l)) == 1000, what="diska's units")
            self.assertTrue(all(i.startswith("diska-") for i in ids_of(lst)), lst[:3])

    def test_unresolvable_selector_costs_only_itself(self):
        self.configure([GOOD, {"select": "diskz"}])
        d = self.start()  # ready: diska serves
        self.assert_good_disk_serves()
        d.wait_log(r"disk selector gave no disk select=\"diskz\" error=\".*devices\[1\]\.select "
                   r"'diskz': block device diskz not found")
        self.assertEqual(d.metric("ioqos_disk_select_errors", select="diskz"), 1)
        self.assertEqual(d.metric("ioqos_disk_healthy", disk="diska"), 1)
        anno = self.wait_annotation(lambda a: a.get("faults"), "faults in the annotation")
        self.assertEqual([x["name"] for x in anno["devices"]], ["diska"])
        self.assertTrue(anno["devices"][0]["healthy"])
        self.assertEqual(anno["faults"][0]["select"], "diskz")
        self.assertIn("block device diskz not found", anno["faults"][0]["reason"])
        self.env.api.wait(lambda: self.node_events("IoqosDiskSelectFailed"), what="node event")
        ev = self.node_events("IoqosDiskSelectFailed")[0]
        self.assertEqual(ev["type"], "Warning")
        self.assertIn("configured disk 'diskz' is not served", ev["message"])
        # the disk appears: its units join, the fault goes
        fake_disk(self.env.sysfs_root, "diskz", "250:32")
        self.wait_annotation(lambda a: not a.get("faults"), "faults cleared")
        d.wait_log(r"disk selector resolves again select=\"diskz\"")
        self.assertIsNone(d.metric("ioqos_disk_select_errors", select="diskz"))

    def test_corrupt_calibration_entry_at_start(self):
        # diskb's capacity comes from a calibration entry that is corrupt
        bad = dict(CAL_B, seqReadBytesPerSec="fast")
        self.configure([GOOD, {"select": "diskb"}],
                       json.dumps({"version": 1, "disks": {"diskb": bad}}))
        d = self.start()
        self.assert_good_disk_serves()
        self.assertEqual(d.metric("ioqos_disk_healthy", disk="diskb"), 0)
        self.assertEqual(d.metric("ioqos_disk_capacity_error", disk="diskb"), 1)
        self.assertEqual(d.metric("ioqos_disk_capacity_error", disk="diska"), 0)
        anno = self.wait_annotation(lambda a: len(a["devices"]) == 2, "both disks")
        byname = {x["name"]: x for x in anno["devices"]}
        self.assertTrue(byname["diska"]["healthy"])
        self.assertNotIn("reason", byname["diska"])
        self.assertFalse(byname["diskb"]["healthy"])
        self.assertIn("capacity of diskb", byname["diskb"]["reason"])
        self.assertIn("disks.diskb.seqReadBytesPerSec", byname["diskb"]["reason"])
        self.env.api.wait(lambda: self.node_events("IoqosDiskUnhealthy"), what="node event")
        self.assertIn("disk diskb (250:16): capacity of diskb", self.node_events("IoqosDiskUnhealthy")[0]["message"])

    def test_calibration_corrupted_while_serving(self):
        cal = self.configure([GOOD, {"select": "diskb"}],
                             json.dumps({"version": 1, "disks": {"diskb": CAL_B}}))
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(ids_of(l)) == 1500, what="both disks")
        write(cal, "{ not json")
        # diskb's units stay listed (pods may hold them), Unhealthy; diska unaffected
        lst = k.wait_list(BW, lambda l: len(ids_of(l, "Unhealthy")) == 500, what="diskb unhealthy")
        self.assertEqual(len(ids_of(lst)), 1000)
        self.assertTrue(all(i.startswith("diskb-") for i in ids_of(lst, "Unhealthy")))
        d.wait_log(r"disk health changed disk=diskb healthy=false reason=\"capacity of diskb: .*"
                   r"not a JSON object")
        write(cal, json.dumps({"version": 1, "disks": {"diskb": CAL_B}}))
        k.wait_list(BW, lambda l: len(ids_of(l)) == 1500, what="diskb healthy again")
        self.env.api.wait(lambda: self.node_events("IoqosDiskHealthy"), what="recovery event")

    def test_bad_cost_model_line(self):
        self.configure([GOOD, {"select": "diskb"}])
        write(os.path.join(self.env.cgroup_root, "io.cost.model"),
              "250:16 ctrl=user model=linear rbps=12x rseqiops=1 rrandiops=1 wbps=1 wseqiops=1 wrandiops=1\n")
        d = self.start()
        self.assert_good_disk_serves()
        self.assertEqual(d.metric("ioqos_disk_healthy", disk="diskb"), 0)
        anno = self.wait_annotation(lambda a: len(a["devices"]) == 2, "both disks")
        reason = {x["name"]: x.get("reason") for x in anno["devices"]}["diskb"]
        self.assertIn("io.cost.model line for 250:16: bad value 'rbps=12x'", reason)


if __name__ == "__main__":
    unittest.main(verbosity=2)

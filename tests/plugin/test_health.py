# SPDX-License-Identifier: Apache-2.0
"""Unit health in ListAndWatch: a disk that disappears, or loses the
capability to be throttled, turns its units Unhealthy (kubelet stops handing
them out; capacity keeps counting them) and a new message says so; recovery
sends Healthy again."""
import os
import unittest

from harness import BW, IOPS, PluginTest, fake_disk, ids_of, remove_fake_disk, read, write


class Health(PluginTest):
    env_args = {"disks": (("diska", "250:0"), ("diskb", "250:16"))}

    def test_disk_gone_and_back(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(ids_of(l)) == 2000)
        remove_fake_disk(self.env.sysfs_root, "diskb", "250:16")
        for res in (BW, IOPS):
            lst = k.wait_list(res, lambda l: len(ids_of(l, "Unhealthy")) == 1000, what="diskb unhealthy")
            self.assertEqual(len(lst), 2000, "units stay listed, only their health changes")
            self.assertTrue(all(i.startswith("diskb-") for i in ids_of(lst, "Unhealthy")))
            self.assertTrue(all(i.startswith("diska-") for i in ids_of(lst)))
        d.wait_log(r"disk health changed disk=diskb healthy=false reason=\"disk diskb is gone")
        self.assertEqual(d.metric("ioqos_disk_healthy", disk="diskb"), 0)
        fake_disk(self.env.sysfs_root, "diskb", "250:16")
        for res in (BW, IOPS):
            k.wait_list(res, lambda l: len(ids_of(l)) == 2000, what="all healthy again")
        d.wait_log(r"disk health changed disk=diskb healthy=true")
        self.assertEqual(d.metric("ioqos_disk_healthy", disk="diskb"), 1)

    def test_capability_lost_and_back(self):
        d = self.start()
        k = self.env.kubelet
        n_msgs = len(k.plugins[BW].lists)
        k.wait_list(BW, lambda l: len(ids_of(l)) == 2000)
        ctl = os.path.join(self.env.cgroup_root, "cgroup.controllers")
        before = read(ctl)
        write(ctl, "cpuset cpu memory pids\n")  # io controller gone (e.g. bound to v1)
        lst = k.wait_list(BW, lambda l: len(ids_of(l, "Unhealthy")) == 2000, what="all unhealthy")
        self.assertEqual(len(lst), 2000)
        d.wait_log(r"disk health changed disk=diska healthy=false reason=\"cannot enforce limits on "
                   r"diska: io controller not available")
        write(ctl, before)
        k.wait_list(BW, lambda l: len(ids_of(l)) == 2000, what="healthy again")
        self.assertGreaterEqual(len(k.plugins[BW].lists), n_msgs + 2)
        # the annotation follows
        self.env.api.wait(lambda: '"healthy":true' in (self.env.api.annotation("node-a", "ioqos.io/devices") or "")
                          and '"healthy":false' not in self.env.api.annotation("node-a", "ioqos.io/devices"),
                          what="healthy annotation")


class NothingToAdvertise(PluginTest):
    env_args = {"disks": (("diska", "250:0"),), "device_selects": ["diskz"]}

    def test_probe_failure_advertises_nothing_and_says_why_until_fixed(self):
        d = self.env.start_daemon()
        k = self.env.kubelet
        k.wait_registered(BW)
        self.assertEqual(k.wait_list(BW, lambda l: True), [])
        d.wait_log(r"disk selector gave no disk select=\"diskz\" error=.*devices\[0\]\.select 'diskz'")
        code, body = d.http("/readyz")
        self.assertEqual(code, 503)
        self.assertIn("disk probe has not succeeded", body)
        fake_disk(self.env.sysfs_root, "diskz", "250:32")
        lst = k.wait_list(BW, lambda l: len(ids_of(l)) == 1000, what="units once the disk exists")
        self.assertTrue(all(i.startswith("diskz-bw-") for i, _ in lst))
        d.wait_ready()


if __name__ == "__main__":
    unittest.main(verbosity=2)

# SPDX-License-Identifier: Apache-2.0
"""PreStart and release on the host's real cgroup v1 blkio hierarchy: the
daemon runs with --cgroupfs-root /sys/fs/cgroup --sysfs-root /sys and kubelet's
cgroupfs layout below a child cgroup of our own
(/sys/fs/cgroup/blkio/ioqos-test-PID/kubepods/...). Only that child tree is
created and removed; the host's mounts are never touched."""
import os
import re
import time
import unittest

from harness import BW, IOPS, MIB, PluginTest, new_uid, read

BLKIO = "/sys/fs/cgroup/blkio"


def host_disk():
    """A whole disk of this machine (not loop/ram/zram), as (name, 'MAJ:MIN')."""
    for name in sorted(os.listdir("/sys/block")):
        if name.startswith(("loop", "ram", "zram", "dm-", "md", "sr", "nbd")):
            continue
        return name, read("/sys/block/%s/dev" % name).strip()
    return None, None


DISK, DEV = host_disk()
ROOT = "/ioqos-test-%d" % os.getpid()


@unittest.skipUnless(os.path.exists(BLKIO + "/blkio.throttle.read_bps_device") and os.geteuid() == 0
                     and DISK, "needs root and a cgroup v1 blkio hierarchy at " + BLKIO)
class HostBlkio(PluginTest):
    env_args = {"cgroup_root": "/sys/fs/cgroup", "sysfs_root": "/sys", "disks": ((DISK, DEV),),
                "kubelet_cgroup_root": ROOT, "driver": "cgroupfs"}

    def pod_cgroup(self, uid):
        d = os.path.join(BLKIO, ROOT.strip("/"), "kubepods", "burstable", "pod" + uid)
        os.makedirs(d)  # real cgroups: mkdir creates them with every blkio file
        self.addCleanup(self.remove_tree)
        return d

    def remove_tree(self):
        top = os.path.join(BLKIO, ROOT.strip("/"))
        for dirpath, dirnames, _ in sorted(os.walk(top), key=lambda t: -t[0].count("/")):
            os.rmdir(dirpath)

    def test_prestart_limits_and_release_on_real_blkio(self):
        d = self.start()
        k = self.env.kubelet
        tag = DISK
        k.wait_list(BW, lambda l: len(l) == 1000)
        uid, ids, envs, _ = self.admit("db", bw=200, iops=30, create_cgroup=False)
        self.assertEqual(envs["IOQOS_DEVICES"], DISK)
        cg = self.pod_cgroup(uid)
        self.assertEqual(read(cg + "/blkio.throttle.read_bps_device"), "")
        k.prestart(BW, ids[BW])
        self.assertEqual(read(cg + "/blkio.throttle.read_bps_device").strip(), "%s %d" % (DEV, 200 * MIB))
        self.assertEqual(read(cg + "/blkio.throttle.write_bps_device").strip(), "%s %d" % (DEV, 200 * MIB))
        self.assertEqual(read(cg + "/blkio.throttle.read_iops_device").strip(), "%s 3000" % DEV)
        self.assertEqual(read(cg + "/blkio.throttle.write_iops_device").strip(), "%s 3000" % DEV)
        self.assertIn("cgroup blkio limit written cgroup=%s file=blkio.throttle.read_bps_device "
                      "wrote=\"%s %d\" readback=\"%s %d\"" % (cg, DEV, 200 * MIB, DEV, 200 * MIB), d.text())
        self.assertTrue(d.text().count("readback="), d.text())
        # drift: someone lifts the limit; the reconcile loop puts it back
        with open(cg + "/blkio.throttle.read_bps_device", "w") as f:
            f.write("%s 0" % DEV)
        # the drift report: file, device, what was there ("" = no line, the
        # kernel drops a 0), what ioqos wrote; metric; Event on the pod
        d.wait_log(r'limit drift corrected pod=default/db uid=%s cgroup=%s '
                   r'file=blkio.throttle.read_bps_device disk=%s dev=%s found="" wrote="%s %d"'
                   % (uid, re.escape(cg), tag, DEV, DEV, 200 * MIB))
        self.assertEqual(read(cg + "/blkio.throttle.read_bps_device").strip(), "%s %d" % (DEV, 200 * MIB))
        self.assertEqual(d.metric("ioqos_limit_drift_total", resource="ioqos/bandwidth"), 1)
        self.assertEqual(d.metric("ioqos_limit_drift_total", resource="ioqos/iops"), 0)
        api = self.env.api
        api.wait(lambda: [e for e in api.events if e["reason"] == "IoqosLimitDrift"],
                 what="IoqosLimitDrift event")
        # gone from kubelet's list and from the API: limits are cleared on the kernel
        k.remove_pod("default", "db")
        self.env.api.delete("Pod", "default", "db")
        d.wait_log(r"pod gone, limits cleared pod=default/db uid=%s cgroup=%s disk=%s" % (uid, cg, tag))
        for f in ("read_bps", "write_bps", "read_iops", "write_iops"):
            self.assertEqual(read(cg + "/blkio.throttle.%s_device" % f), "", f)
        self.assertEqual(d.terminate(), 0)

    def test_ungranted_pod_bounded_on_real_blkio(self):
        # kubelet's QoS cgroups (cgroupfs driver) exist before the plugin starts
        kubepods = os.path.join(BLKIO, ROOT.strip("/"), "kubepods")
        for q in ("burstable", "besteffort"):
            os.makedirs(os.path.join(kubepods, q))
        self.addCleanup(self.remove_tree)
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        ug = os.path.join(kubepods, "besteffort", "pod" + new_uid())
        os.mkdir(ug)  # a pod without units, unknown to the API and to kubelet's List
        time.sleep(1.5)
        self.assertEqual(read(ug + "/blkio.throttle.write_bps_device"), "", "no grant on the disk yet")
        uid, ids, _, _ = self.admit("db", bw=200, create_cgroup=False)
        cg = self.pod_cgroup(uid)
        k.prestart(BW, ids[BW])
        # whatever db's cgroup had before (an ungranted bound has IOPS too),
        # its grant (bandwidth only) is all it has now
        for f in ("read_iops", "write_iops"):
            self.assertEqual(read(cg + "/blkio.throttle.%s_device" % f), "", f)
        pool = 1000 * MIB - 200 * MIB
        # bounded by the time the grant's PreStart answered
        lines = {}
        for f in ("read_bps", "write_bps", "read_iops", "write_iops"):
            text = read(ug + "/blkio.throttle.%s_device" % f).strip()
            self.assertRegex(text, r"^%s \d+$" % DEV, f)
            lines[f] = int(text.split()[1])
        self.assertEqual(lines["read_bps"], lines["write_bps"])
        self.assertGreaterEqual(lines["write_bps"], MIB)
        self.assertLessEqual(lines["write_bps"], pool)
        self.assertEqual(lines["read_iops"], lines["write_iops"])
        self.assertLessEqual(lines["write_iops"], 100000)
        d.wait_log(r"ungranted bound placed cgroup=%s qos=BestEffort disk=%s rbps=%d wbps=%d "
                   % (ug, DISK, lines["read_bps"], lines["write_bps"]))
        # the granted pod has its grant, the QoS cgroups nothing
        self.assertEqual(read(cg + "/blkio.throttle.write_bps_device").strip(), "%s %d" % (DEV, 200 * MIB))
        self.assertEqual(read(os.path.join(kubepods, "besteffort", "blkio.throttle.write_bps_device")), "")
        # the last grant goes: the bound is cleared on the kernel
        k.remove_pod("default", "db")
        self.env.api.delete("Pod", "default", "db")
        d.wait_log(r"ungranted bounds removed disk=%s pods=1 " % DISK, timeout=10)
        for f in ("read_bps", "write_bps", "read_iops", "write_iops"):
            self.assertEqual(read(ug + "/blkio.throttle.%s_device" % f), "", f)
        self.assertEqual(d.terminate(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)

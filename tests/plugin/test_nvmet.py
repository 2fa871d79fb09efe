# SPDX-License-Identifier: Apache-2.0
"""NVMe-oF target namespaces as QoS consumers (config nvmet, issue 16): the
real daemon over a temp sysfs with an nvmet configfs tree and a cgroup v2
temp tree, the kubelet and API server stand-ins.

The kernels here lack the namespace attribute cgroup_id (Linux 7.5+), so the
configfs tree plays the kernel: plain files for enable, device_path,
buffered_io and cgroup_id (present or absent). What plain files cannot do
(EBUSY from the kernel while enabled) the plugin must never provoke: it
writes cgroup_id only while the namespace is disabled, unless
allowNamespaceRestart. The namespace cgroup is made by the test as a real
mkdir shows it (with its files), since a plain mkdir has no io.max; the
e2e test (tests/e2e/test-nvmet.sh) lets the plugin make it on a real
kernel.

The fake disk fakedisk0 (250:0) has 100 MiB/s and 10000 IOPS, fraction 1.0:
100 bandwidth and 100 IOPS units."""
import json
import os
import re
import subprocess
import time
import unittest

from harness import (BW, IOPS, MIB, NODE, PluginTest, ids_of, iomax_of, read, wait_for, write)

DEV = "250:0"
SUB = "nqn.2014-08.org.example:store"
CAP_BW = 100 * MIB
CAP_IOPS = 10000


def empty_dir(d):
    """Removes the files of a test cgroup directory (not its subdirectories)."""
    for f in os.listdir(d):
        if not os.path.isdir(os.path.join(d, f)):
            os.unlink(os.path.join(d, f))


def nvmet_config(namespaces, **kw):
    cfg = {"namespaces": namespaces}
    cfg.update(kw)
    return {"nvmet": cfg}


class NvmetBase(PluginTest):
    """A temp configfs tree with the nvmet module 'loaded', a block device node
    for fakedisk0, and the fake kernel's helpers."""
    env_args = {"bw_bytes": CAP_BW, "iops": CAP_IOPS,
                "extra_config": nvmet_config([{"subsystem": SUB, "nsid": 1,
                                               "grant": {"bandwidth": 30, "iops": 10}}])}

    def setUp(self):
        super().setUp()
        env = self.env
        self.cfs = os.path.join(env.sysfs_root, "kernel/config/nvmet/subsystems")
        os.makedirs(os.path.join(env.sysfs_root, "module/nvmet"), exist_ok=True)
        os.makedirs(self.cfs, exist_ok=True)
        self.devnode = os.path.join(env.root, "dev", "fakedisk0")
        os.makedirs(os.path.dirname(self.devnode), exist_ok=True)
        os.mknod(self.devnode, 0o600 | 0o060000, os.makedev(250, 0))

    # ---- the fake kernel ----

    def ns_dir(self, nsid, sub=SUB):
        return os.path.join(self.cfs, sub, "namespaces", str(nsid))

    def add_ns(self, nsid, enabled=False, cgroup_id="0", buffered="0", sub=SUB, device=None):
        d = self.ns_dir(nsid, sub)
        write(os.path.join(d, "enable"), "1\n" if enabled else "0\n")
        write(os.path.join(d, "device_path"), (device or self.devnode) + "\n")
        write(os.path.join(d, "buffered_io"), buffered + "\n")
        if cgroup_id is not None:
            write(os.path.join(d, "cgroup_id"), cgroup_id + "\n")

    def attr(self, nsid, name, sub=SUB):
        return read(os.path.join(self.ns_dir(nsid, sub), name)).strip()

    def ns_cgroup(self, nsid, sub=SUB, parent="ioqos-nvmet.slice"):
        return os.path.join(self.env.cgroup_root, parent, "%s-%d" % (sub, nsid))

    def make_cgroup(self, nsid, sub=SUB, parent="ioqos-nvmet.slice"):
        """The namespace cgroup as a real mkdir shows it: with its files."""
        p = os.path.join(self.env.cgroup_root, parent)
        write(os.path.join(p, "cgroup.controllers"), "cpu io memory pids\n")
        write(os.path.join(p, "cgroup.subtree_control"), "io\n")
        d = self.ns_cgroup(nsid, sub, parent)
        for f, v in (("cgroup.controllers", "io\n"), ("io.max", ""), ("io.weight", ""),
                     ("io.stat", "")):
            write(os.path.join(d, f), v)
        return d

    def advertised(self, res):
        p = self.env.kubelet.plugins.get(res)
        return len(ids_of(p.lists[-1])) if p and p.lists else -1

    def wait_advertised(self, bw, iops):
        wait_for(lambda: self.advertised(BW) == bw and self.advertised(IOPS) == iops,
                 what="%d bandwidth and %d IOPS units advertised (now %d, %d)" %
                 (bw, iops, self.advertised(BW), self.advertised(IOPS)))

    def annotation_ns(self, nsid):
        text = self.env.api.annotation(NODE, "ioqos.io/devices") or "{}"
        for ns in json.loads(text).get("nvmet", {}).get("namespaces", []):
            if ns["subsystem"] == SUB and ns["nsid"] == nsid:
                return ns
        return None

    def ctl_explain(self, *args):
        sock = os.path.join(self.env.state_dir, "plugin.sock")
        return subprocess.run([os.environ["IOQOS_CTL_BIN"], "explain", "--socket", sock] + list(args),
                              capture_output=True, text=True, timeout=60)



class NvmetTest(NvmetBase):

    def two_charged(self):
        """One entry for the whole subsystem (10 bandwidth units each),
        namespaces 1 and 2 disabled and charged: (config, cgroup 1, cgroup 2,
        daemon)."""
        cfg = json.loads(read(self.env.config_path))
        cfg["nvmet"]["namespaces"] = [{"subsystem": SUB, "grant": {"bandwidth": 10}}]
        write(self.env.config_path, json.dumps(cfg))
        self.add_ns(1)
        self.add_ns(2)
        cg1, cg2 = self.make_cgroup(1), self.make_cgroup(2)
        d = self.start()
        wait_for(lambda: self.attr(1, "cgroup_id") == str(os.stat(cg1).st_ino) and
                 self.attr(2, "cgroup_id") == str(os.stat(cg2).st_ino), what="both charged")
        return cfg, cg1, cg2, d

    def test_disabled_namespace_is_charged_and_its_units_not_offered(self):
        self.add_ns(1)
        cg = self.make_cgroup(1)
        d = self.start()
        self.wait_advertised(70, 90)
        lim = wait_for(lambda: iomax_of(cg, DEV), what="io.max in the namespace cgroup")
        self.assertEqual(lim, {"rbps": 30 * MIB, "wbps": 30 * MIB, "riops": 1000, "wiops": 1000})
        # share 30/100: a pod's weight for the same units
        self.assertEqual(read(os.path.join(cg, "io.weight")).strip(), DEV + " 3070")
        ino = os.stat(cg).st_ino
        wait_for(lambda: self.attr(1, "cgroup_id") == str(ino), what="cgroup_id = the cgroup's inode")
        d.wait_log(r"nvmet namespace state namespace=%s/1 state=\"cgroup_id set to %d while disabled" % (SUB, ino))
        ns = wait_for(lambda: (self.annotation_ns(1) or {}).get("ioqos"), what="annotation")
        self.assertEqual(ns["verdict"], "enforced")
        self.assertEqual(ns["units"], {"bandwidth": 30, "iops": 10})
        self.assertEqual(ns["cgroup"], cg)
        self.assertEqual(self.attr(1, "enable"), "0", "never enabled by the plugin")
        self.assertGreaterEqual(d.metric("ioqos_nvmet_writes_total"), 2)
        # the next passes change nothing
        time.sleep(2.5)
        self.assertEqual(len(re.findall(r"nvmet namespace state .*cgroup_id set to", d.text())), 1,
                         d.text()[-3000:])

    def test_enabled_namespace_waits_for_next_enable(self):
        self.add_ns(1, enabled=True)
        cg = self.make_cgroup(1)
        d = self.start()
        self.wait_advertised(70, 90)
        d.wait_log(r"nvmet namespace state namespace=%s/1 state=\"will apply at next enable: the namespace is "
                   r"enabled" % SUB)
        wait_for(lambda: iomax_of(cg, DEV), what="limits written meanwhile")
        time.sleep(2.5)
        self.assertEqual(self.attr(1, "cgroup_id"), "0", "an enabled namespace is not touched")
        self.assertEqual(self.attr(1, "enable"), "1")
        self.assertEqual(len(re.findall(r"nvmet namespace state .*will apply at next enable", d.text())),
                         1, "said once")
        # the operator disables it: the next pass sets the ID
        write(os.path.join(self.ns_dir(1), "enable"), "0\n")
        ino = os.stat(cg).st_ino
        wait_for(lambda: self.attr(1, "cgroup_id") == str(ino), what="cgroup_id once disabled")

    def test_restart_when_allowed(self):
        cfg = json.loads(read(self.env.config_path))
        cfg["nvmet"]["allowNamespaceRestart"] = True
        write(self.env.config_path, json.dumps(cfg))
        self.add_ns(1, enabled=True)
        cg = self.make_cgroup(1)
        d = self.start()
        ino = os.stat(cg).st_ino
        wait_for(lambda: self.attr(1, "cgroup_id") == str(ino), what="cgroup_id set")
        d.wait_log(r"nvmet namespace restart subsystem=%s nsid=1 reason=\"set cgroup_id %d" % (SUB, ino))
        d.wait_log(r"nvmet namespace state namespace=%s/1 state=\"restarted and charged to its cgroup" % SUB)
        self.assertEqual(self.attr(1, "enable"), "1", "enabled again")

    def test_cgroup_made_again_is_pointed_at(self):
        self.add_ns(1)
        cg = self.make_cgroup(1)
        d = self.start()
        old = os.stat(cg).st_ino
        wait_for(lambda: self.attr(1, "cgroup_id") == str(old), what="first cgroup_id")
        # someone removes the cgroup and makes it again: a new ID (inode);
        # keep the old directory alive elsewhere so the inode is not reused
        aside = os.path.join(self.env.root, "old-cgroup")
        os.rename(cg, aside)
        self.make_cgroup(1)
        new = os.stat(cg).st_ino
        self.assertNotEqual(new, old)
        wait_for(lambda: self.attr(1, "cgroup_id") == str(new), what="re-pointed cgroup_id")
        d.wait_log(r"cgroup_id set to %d \(was %d: its cgroup was removed or made again\)" % (new, old))
        wait_for(lambda: iomax_of(cg, DEV), what="limits in the new cgroup")

    def test_refusals_take_no_units_and_write_nothing(self):
        cfg = json.loads(read(self.env.config_path))
        cfg["nvmet"]["namespaces"] = [
            {"subsystem": SUB, "nsid": 1, "grant": {"bandwidth": 10}},   # buffered_io
            {"subsystem": SUB, "nsid": 2, "grant": {"bandwidth": 10}},   # not a block device
            {"subsystem": SUB, "nsid": 3, "grant": {"bandwidth": 101}},  # more than the disk
            {"subsystem": "nqn.typo", "grant": {"bandwidth": 1}},        # matches nothing
        ]
        write(self.env.config_path, json.dumps(cfg))
        self.add_ns(1, buffered="1")
        self.add_ns(2, device=os.path.join(self.env.root, "nonexistent"))
        self.add_ns(3)
        d = self.start()
        d.wait_log(r"namespace=%s/1 state=\"refused: buffered_io is set: the kernel refuses to enable "
                   r"a namespace with a cgroup_id and buffered I/O" % SUB)
        d.wait_log(r"namespace=%s/2 state=\"refused: its disk is not known: device_path .*nonexistent: "
                   r"No such file or directory" % SUB)
        d.wait_log(r"namespace=%s/3 state=\"refused: needs 101 bandwidth units of disk fakedisk0, which "
                   r"has 100" % SUB)
        d.wait_log(r"nvmet.namespaces\[3\]: the target has no subsystem nqn.typo")
        self.wait_advertised(100, 100)
        for n in (1, 2, 3):
            self.assertEqual(self.attr(n, "cgroup_id"), "0")
            self.assertFalse(os.path.exists(self.ns_cgroup(n)))
        ns = wait_for(lambda: (self.annotation_ns(1) or {}).get("ioqos"), what="annotation")
        self.assertEqual(ns["verdict"], "refused")
        self.assertNotIn("units", ns)

    def test_kernel_without_cgroup_id_reserves_but_says_not_enforced(self):
        self.add_ns(1, cgroup_id=None)
        cg = self.make_cgroup(1)
        d = self.start()
        self.wait_advertised(70, 90)
        d.wait_log(r"namespace=%s/1 state=\"limits in %s, not enforced: .*no nvmet cgroup_id attribute "
                   r"\(Linux 7.5\+\)" % (SUB, cg))
        wait_for(lambda: iomax_of(cg, DEV), what="limits written")
        self.assertFalse(os.path.exists(os.path.join(self.ns_dir(1), "cgroup_id")),
                         "nothing made up in configfs")
        ns = wait_for(lambda: (self.annotation_ns(1) or {}).get("ioqos"), what="annotation")
        self.assertEqual(ns["verdict"], "uncharged")
        # what an operator checks: ioqosctl explain --nvmet (what the plugin did) ...
        r = self.ctl_explain("--nvmet")
        self.assertEqual(r.returncode, 0, r.stderr)
        for want in ("nvmet target: present (cgroup_id: absent)",
                     "namespace %s/1: disabled, buffered_io off, block device %s" % (SUB, self.devnode),
                     "  cgroup_id:  (this kernel has no such attribute)",
                     "  config:     nvmet.namespaces[0]",
                     "  verdict:    uncharged: nvmet.namespaces[0]: 30 bandwidth and 10 IOPS units",
                     "  units:      30 bandwidth, 10 IOPS of disk fakedisk0 (not offered to pods)",
                     "  cgroup:     " + cg,
                     "  state:      limits in %s, not enforced" % cg):
            self.assertIn(want, r.stdout)
        r = self.ctl_explain("--json", "--nvmet", SUB + "/1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([n["nsid"] for n in json.loads(r.stdout)["namespaces"]], [1])
        r = self.ctl_explain("--nvmet", SUB + "/9")
        self.assertEqual(r.returncode, 1)
        self.assertIn("the nvmet target has no namespace %s/9 (HTTP 404)" % SUB, r.stderr)
        r = self.ctl_explain("--nvmet", SUB + "/x")
        self.assertEqual(r.returncode, 1)
        self.assertIn("want NQN or NQN/NSID", r.stderr)
        # ... and ioqosctl probe (what the config gives, the same rule)
        env = self.env
        r = subprocess.run([os.environ["IOQOS_CTL_BIN"], "probe", "--config", env.config_path,
                            "--sysfs-root", env.sysfs_root, "--cgroupfs-root", env.cgroup_root],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("advertised:    ioqos/bandwidth 70 units, ioqos/iops 90 units", r.stdout)
        self.assertIn("nvmet:         30 bandwidth and 10 IOPS units taken by NVMe-oF namespaces",
                      r.stdout)
        self.assertIn("    ioqos: uncharged: nvmet.namespaces[0]", r.stdout)


    def test_entry_removed(self):
        """An entry removed from the config: where an enabled namespace is
        charged, the cgroup loses its limits and stays; a disabled one's
        cgroup_id is cleared first, so it can be enabled again (the cgroup is
        then removed: rmdir of this plain test directory with files fails,
        tests/e2e/test-nvmet.sh shows it on a real kernel)."""
        cfg, cg1, cg2, d = self.two_charged()
        self.wait_advertised(80, 100)
        d.terminate()
        write(os.path.join(self.ns_dir(2), "enable"), "1\n")  # the initiators use namespace 2
        cfg["nvmet"]["namespaces"] = []
        write(self.env.config_path, json.dumps(cfg))
        d2 = self.start()
        self.wait_advertised(100, 100)
        wait_for(lambda: self.attr(1, "cgroup_id") == "0", what="disabled namespace 1 let go")
        wait_for(lambda: (iomax_of(cg2, DEV) or {}).get("rbps", 1) is None,
                 what="namespace 2's cgroup without limits")
        self.assertEqual(iomax_of(cg2, DEV), {"rbps": None, "wbps": None, "riops": None,
                                              "wiops": None})
        self.assertEqual(self.attr(2, "cgroup_id"), str(os.stat(cg2).st_ino),
                         "an enabled namespace is not touched")
        self.assertEqual(self.attr(2, "enable"), "1")
        d2.wait_log(r"rmdir %s \(an nvmet namespace cgroup no longer configured\)" % re.escape(cg1))
        time.sleep(2.5)  # more passes: the same error is logged once, counted every time
        self.assertEqual(len(re.findall(r"setting not applied error=.*rmdir %s" % re.escape(cg1),
                                        d2.text())), 1)
        self.assertGreaterEqual(d2.metric("ioqos_nvmet_errors_total"), 3)


    def test_parent_changed(self):
        """nvmet.parent changed between two runs: the namespaces move to
        cgroups below the new parent (a disabled one at once, an enabled one
        at its next enable, its old cgroup bounded by the grant meanwhile);
        the old cgroups and the old parent are removed once nothing is
        charged there, which nvmet-parents.json in the state dir remembers
        across the restart. rmdir of these plain test directories works once
        the test has removed their files, as a real cgroup's works once it
        is unused."""
        cfg, old1, old2, d = self.two_charged()
        old_parent = os.path.dirname(old1)
        record = os.path.join(self.env.state_dir, "nvmet-parents.json")
        parents = lambda: json.loads(read(record))["parents"]
        self.assertEqual(parents(), ["ioqos-nvmet.slice"])
        d.terminate()

        write(os.path.join(self.ns_dir(2), "enable"), "1\n")  # the initiators use namespace 2
        new = "storage.slice/nvmet"
        cfg["nvmet"]["parent"] = new
        write(self.env.config_path, json.dumps(cfg))
        new1, new2 = self.make_cgroup(1, parent=new), self.make_cgroup(2, parent=new)
        d2 = self.start()
        wait_for(lambda: self.attr(1, "cgroup_id") == str(os.stat(new1).st_ino),
                 what="disabled namespace 1 pointed at its cgroup below the new parent")
        d2.wait_log(r"nvmet namespace state namespace=%s/2 state=\"will apply at next enable" % SUB)
        self.assertEqual(self.attr(2, "cgroup_id"), str(os.stat(old2).st_ino),
                         "an enabled namespace is not touched")
        self.assertEqual((iomax_of(old2, DEV) or {}).get("rbps"), 10 * MIB,
                         "its old cgroup keeps the grant until it moves")
        self.assertEqual(wait_for(lambda: iomax_of(new2, DEV), what="limits below the new parent")["rbps"],
                         10 * MIB)
        self.assertEqual(parents(), ["ioqos-nvmet.slice", new])
        empty_dir(old1)
        wait_for(lambda: not os.path.exists(old1), what="namespace 1's old cgroup removed")
        d2.wait_log(r"nvmet namespace cgroup removed cgroup=%s cgroup_id_cleared=false "
                    r"reason=\"below an earlier nvmet.parent\"" % re.escape(old1))
        self.assertEqual(self.attr(1, "cgroup_id"), str(os.stat(new1).st_ino), "the move stays")
        self.assertTrue(os.path.isdir(old2), "namespace 2 is still charged there")

        # the operator disables namespace 2: it moves, then the old parent goes
        write(os.path.join(self.ns_dir(2), "enable"), "0\n")
        wait_for(lambda: self.attr(2, "cgroup_id") == str(os.stat(new2).st_ino),
                 what="namespace 2 pointed at its new cgroup")
        empty_dir(old2)
        empty_dir(old_parent)
        wait_for(lambda: not os.path.exists(old_parent), what="the old parent removed")
        d2.wait_log(r"nvmet parent removed cgroup=%s reason=\"nvmet.parent is now %s\"" %
                    (re.escape(old_parent), new))
        self.assertEqual(parents(), [new])
        self.assertTrue(os.path.isdir(new1) and os.path.isdir(new2))

    def test_parent_moved_below_the_old_one(self):
        """The new parent inside the old one: the old parent's namespace
        cgroups go, the way to the new parent stays, and the old parent is
        forgotten, not removed."""
        self.add_ns(1)
        old1 = self.make_cgroup(1)
        old_parent = os.path.dirname(old1)
        d = self.start()
        wait_for(lambda: self.attr(1, "cgroup_id") == str(os.stat(old1).st_ino), what="charged")
        d.terminate()
        cfg = json.loads(read(self.env.config_path))
        new = "ioqos-nvmet.slice/v2"
        cfg["nvmet"]["parent"] = new
        write(self.env.config_path, json.dumps(cfg))
        new1 = self.make_cgroup(1, parent=new)
        d2 = self.start()
        wait_for(lambda: self.attr(1, "cgroup_id") == str(os.stat(new1).st_ino), what="moved")
        empty_dir(old1)
        wait_for(lambda: not os.path.exists(old1), what="the old namespace cgroup removed")
        d2.wait_log(r"nvmet parent let go of cgroup=%s reason=\"nvmet.parent is now %s, below it\"" %
                    (re.escape(old_parent), new))
        record = os.path.join(self.env.state_dir, "nvmet-parents.json")
        self.assertEqual(json.loads(read(record))["parents"], [new])
        time.sleep(2.5)  # more passes: the new parent's directory is never a namespace cgroup
        self.assertTrue(os.path.isdir(new1))
        self.assertNotIn("rmdir %s " % os.path.dirname(new1), d2.text())
        self.assertEqual(self.attr(1, "cgroup_id"), str(os.stat(new1).st_ino))

    def test_damaged_parent_record(self):
        """A damaged nvmet-parents.json is said (once) and rewritten; the
        namespaces are charged as usual."""
        record = os.path.join(self.env.state_dir, "nvmet-parents.json")
        write(record, '{"version":1,"parents":["../../system.slice"]}')
        self.add_ns(1)
        cg = self.make_cgroup(1)
        d = self.start()
        wait_for(lambda: self.attr(1, "cgroup_id") == str(os.stat(cg).st_ino), what="charged")
        d.wait_log(r"nvmet parents not read, cgroups below an earlier nvmet.parent are not removed "
                   r"error=\".*nvmet-parents.json: parents\[0\] must not contain '.' or '..'")
        self.assertEqual(json.loads(read(record))["parents"], ["ioqos-nvmet.slice"])
        time.sleep(2.5)  # more passes
        self.assertEqual(len(re.findall(r"nvmet parents not read", d.text())), 1, "said once")


class NvmetCapacityTest(PluginTest):
    """Pods and namespaces on one disk never oversell it."""
    env_args = {"bw_bytes": CAP_BW, "iops": CAP_IOPS}

    def test_pods_before_namespaces(self):
        env = self.env
        d = self.start()
        uid, ids, _, pod_cg = self.admit("db", bw=80)
        wait_for(lambda: iomax_of(pod_cg, DEV), what="pod limits")
        d.terminate()
        # the storage node gets a namespace of 30 units while the pod holds 80
        os.makedirs(os.path.join(env.sysfs_root, "module/nvmet"), exist_ok=True)
        nsd = os.path.join(env.sysfs_root, "kernel/config/nvmet/subsystems", SUB, "namespaces/1")
        dev = os.path.join(env.root, "dev", "fakedisk0")
        os.makedirs(os.path.dirname(dev), exist_ok=True)
        os.mknod(dev, 0o600 | 0o060000, os.makedev(250, 0))
        for f, v in (("enable", "0"), ("device_path", dev), ("buffered_io", "0"), ("cgroup_id", "0")):
            write(os.path.join(nsd, f), v + "\n")
        cfg = json.loads(read(env.config_path))
        cfg.update(nvmet_config([{"subsystem": SUB, "grant": {"bandwidth": 30}}]))
        write(env.config_path, json.dumps(cfg))
        parent = os.path.join(env.cgroup_root, "ioqos-nvmet.slice")
        write(os.path.join(parent, "cgroup.controllers"), "io\n")
        ncg = os.path.join(parent, SUB + "-1")
        for f in ("cgroup.controllers", "io.max", "io.weight", "io.stat"):
            write(os.path.join(ncg, f), "")
        d2 = self.start()
        # 100 - 30: the pod's 80 exceed what is left, said once with what to expect
        wait_for(lambda: env.kubelet.plugins[BW].lists and
                 len(ids_of(env.kubelet.plugins[BW].lists[-1])) == 70,
                 what="70 bandwidth units advertised")
        d2.wait_log(r"disk oversold by pods and nvmet namespaces disk=fakedisk0 resource=ioqos/bandwidth "
                    r"pods_hold=80 namespaces_hold=30 disk_units=100 reason=\"pods hold units the "
                    r"NVMe-oF namespaces now take: no new pod gets units of this disk until pods "
                    r"release 10\"")
        # the pod keeps its grant; its weight counts the namespaces too (80/100)
        self.assertEqual(iomax_of(pod_cg, DEV)["rbps"], 80 * MIB)
        wait_for(lambda: iomax_of(ncg, DEV), what="namespace limits")
        self.assertEqual(iomax_of(ncg, DEV)["rbps"], 30 * MIB)


V2_DISK = os.environ.get("IOQOS_NVMET_V2_DISK")  # set by tests/e2e/test-nvmet.sh inside the VM
V2_SUB = os.environ.get("IOQOS_NVMET_V2_SUB")
CG2 = "/sys/fs/cgroup"


@unittest.skipUnless(V2_DISK and V2_SUB and os.path.exists(CG2 + "/cgroup.controllers")
                     and os.geteuid() == 0, "runs inside the cgroup v2 VM (tests/e2e/test-nvmet.sh)")
class HostV2(PluginTest):
    """A real nvmet target (tests/e2e/test-nvmet.sh made it: namespace 1 of
    V2_SUB on V2_DISK, enabled) and a real cgroup v2 kernel: the plugin makes
    the namespace cgroup itself, io enabled down to it, the kernel reads the
    limits back; on a kernel without cgroup_id the units are still taken and
    the state says the limits are not enforced. With nvmet.parent changed
    the cgroup is made below the new parent, and the old cgroup and the old
    parent are removed; with the entry gone the cgroup is removed."""
    ROOT = "/ioqos-nvmet-test-%d" % os.getpid()
    env_args = {"cgroup_root": CG2, "sysfs_root": "/sys",
                "disks": ((V2_DISK, read("/sys/block/%s/dev" % V2_DISK).strip() if V2_DISK else ""),),
                "kubelet_cgroup_root": ROOT, "driver": "cgroupfs", "bw_bytes": 200 * MIB,
                "iops": 50000,
                "extra_config": nvmet_config([{"subsystem": V2_SUB or "x", "nsid": 1,
                                               "grant": {"bandwidth": 50}}],
                                             parent="ioqos-nvmet-test.slice")}

    def test_namespace_cgroup_on_a_real_kernel(self):
        dev = read("/sys/block/%s/dev" % V2_DISK).strip()
        top = os.path.join(CG2, self.ROOT.strip("/"))
        write(os.path.join(CG2, "cgroup.subtree_control"), "+io +memory")
        os.makedirs(os.path.join(top, "kubepods"))
        self.addCleanup(lambda: [os.rmdir(p) for p in (os.path.join(top, "kubepods"), top)
                                 if os.path.isdir(p)])
        parent = os.path.join(CG2, "ioqos-nvmet-test.slice")
        cg = os.path.join(parent, "%s-1" % V2_SUB)
        self.addCleanup(lambda: [os.rmdir(p) for p in (cg, parent) if os.path.isdir(p)])
        d = self.start()
        wait_for(lambda: iomax_of(cg, dev), what="io.max of the namespace cgroup", timeout=30)
        self.assertEqual(iomax_of(cg, dev), {"rbps": 50 * MIB, "wbps": 50 * MIB, "riops": None,
                                             "wiops": None}, read(cg + "/io.max"))
        self.assertIn("io", read(parent + "/cgroup.subtree_control"))
        d.wait_log(r"nvmet namespace cgroup created subsystem=%s nsid=1 cgroup=%s" % (V2_SUB, cg))
        wait_for(lambda: len(ids_of(self.env.kubelet.plugins[BW].lists[-1])) == 200 - 50,
                 what="150 of 200 bandwidth units advertised")
        if os.path.exists("/sys/kernel/config/nvmet/subsystems/%s/namespaces/1/cgroup_id" % V2_SUB):
            # a 7.5+ kernel: the namespace is enabled, so the ID waits for the next enable
            d.wait_log(r"namespace=%s/1 state=\"will apply at next enable" % V2_SUB)
        else:
            d.wait_log(r"namespace=%s/1 state=\"limits in %s, not enforced: .*no nvmet cgroup_id "
                       r"attribute" % (V2_SUB, cg))
        d.terminate()
        # nvmet.parent changed: the cgroup made again below the new parent,
        # the old cgroup and the old parent removed (real rmdir)
        cfg = json.loads(read(self.env.config_path))
        old_cg, old_parent = cg, parent
        parent = os.path.join(CG2, "ioqos-nvmet-test2.slice")
        cg = os.path.join(parent, "%s-1" % V2_SUB)
        self.addCleanup(lambda: [os.rmdir(p) for p in (cg, parent) if os.path.isdir(p)])
        cfg["nvmet"]["parent"] = os.path.basename(parent)
        write(self.env.config_path, json.dumps(cfg))
        d1 = self.start()
        try:
            wait_for(lambda: iomax_of(cg, dev), what="io.max below the new parent", timeout=30)
            d1.wait_log(r"nvmet namespace cgroup removed cgroup=%s cgroup_id_cleared=false "
                        r"reason=\"below an earlier nvmet.parent\"" % re.escape(old_cg))
            d1.wait_log(r"nvmet parent removed cgroup=%s reason=\"nvmet.parent is now %s\"" %
                        (re.escape(old_parent), os.path.basename(parent)))
        except AssertionError:
            print("\n".join(ln for ln in d1.text().splitlines() if "nvmet" in ln))
            raise
        self.assertFalse(os.path.exists(old_parent))
        self.assertEqual(iomax_of(cg, dev)["rbps"], 50 * MIB)
        d1.terminate()
        # the entry removed: the cgroup goes, the disk is whole again
        cfg["nvmet"]["namespaces"] = []
        write(self.env.config_path, json.dumps(cfg))
        d2 = self.start()
        try:
            d2.wait_log(r"nvmet namespace cgroup removed cgroup=%s" % cg)
        except AssertionError:
            print("\n".join(ln for ln in d2.text().splitlines() if "nvmet" in ln))
            raise
        self.assertFalse(os.path.exists(cg))
        wait_for(lambda: len(ids_of(self.env.kubelet.plugins[BW].lists[-1])) == 200,
                 what="200 bandwidth units advertised")


if __name__ == "__main__":
    unittest.main(verbosity=2)

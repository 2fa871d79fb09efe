# SPDX-License-Identifier: Apache-2.0
"""Bounds for pods without a grant (nodePolicy.ungranted): on a disk where
some pod holds ioqos units, every other pod cgroup under kubepods gets an
io.max share of the disk's ungranted pool (capacity - held units, or the
configured devices[].ungrantedPool), split by measured demand (io.stat).

Cgroup v2 temp tree (systemd driver layout), the kubelet stand-in and the API
server stand-in. The fake disk is fakedisk0 (250:0) with 1000 MiB/s and
100000 IOPS, allocatableFraction 1.0: the pool is what granted pods do not
hold. Pod cgroups are made aside and renamed into place (as a real mkdir
shows a cgroup with all its files at once); io.stat is replaced at once too.
Plain files are not cgroup files: a truncating write is briefly empty to a
reader, so readers below retry or ask for two empty reads in a row."""
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import unittest

from harness import (BW, IOPS, MIB, PluginTest, fake_disk, iomax_of, new_uid, pod_object, read,
                     remove_fake_disk, rm_pod_cgroup, set_io_stat, unbounded, v2_pod_cgroup, write)
from harness import wait_for as harness_wait_for

DEV = "250:0"
DISK = "fakedisk0"
CAP_BW = 1000 * MIB
CAP_IOPS = 100000
# The harness advertises the whole capacity (allocatableFraction 1.0): no
# headroom, so the pool is the units nobody holds.
def pool_bw(held_units):
    return CAP_BW - held_units * MIB


def pool_iops(held_units):
    return CAP_IOPS - held_units * 100


QOS_NAME = {"guaranteed": "Guaranteed", "burstable": "Burstable", "besteffort": "BestEffort"}


def ug_config(interval_ms=300, enable=True, lend=False, **more):
    """Lending is off unless asked: these classes prove the split of the pool
    nobody holds (their granted pods are idle and would lend); Lending below
    proves what lending adds."""
    ug = {"enable": enable, "intervalMs": interval_ms, "lend": lend}
    ug.update(more)
    return {"nodePolicy": {"ungranted": ug}}


def wait_for(pred, timeout=5.0, what="condition", step=0.02):
    """harness.wait_for with this file's tighter defaults"""
    return harness_wait_for(pred, timeout, what, step)


class UngrantedTest(PluginTest):
    interval_ms = 300
    env_args = {"extra_config": ug_config(300)}

    # ---- pods ----
    def ungranted(self, qos="burstable", name=None, api=True, files=None):
        """A pod without ioqos units: its cgroup (renamed into place), and
        unless api=False its API object and its (deviceless) pod resources
        entry, as kubelet lists every pod. Returns the cgroup dir."""
        uid = new_uid()
        if api:
            name = name or "ug-%s-%s" % (qos, uid[:8])
            self.env.api.put_pod(pod_object(name, uid, qos=QOS_NAME[qos], phase="Running"))
            self.env.kubelet.set_pod("default", name, {"app": {}})
        return v2_pod_cgroup(self.env.cgroup_root, uid, qos, atomic=True, files=files)

    def grant(self, name, bw=200, iops=0, qos="burstable", uid=None):
        """A pod with units up to and including its PreStart; returns (uid, ids, cgroup)."""
        uid, ids, _, cg = self.admit(name, bw=bw, iops=iops, qos=qos, uid=uid, atomic=True)
        self.env.kubelet.prestart(BW if bw else IOPS, ids[BW if bw else IOPS])
        return uid, ids, cg

    def release(self, name):
        """The granted pod goes: out of kubelet's List and the API."""
        self.env.kubelet.remove_pod("default", name)
        self.env.api.delete("Pod", "default", name)

    # ---- io.max ----
    def limits(self, cgs, tries=20):
        """io.max of each cgroup for the disk, in the order given (read the
        one that may be raised first). An empty read (a write in progress)
        is retried."""
        out = []
        for cg in cgs:
            lim = None
            for _ in range(tries):
                lim = iomax_of(cg, DEV)
                if lim is not None:
                    break
                time.sleep(0.005)
            out.append(lim)
        return out

    def bounded(self, cg):
        lim = iomax_of(cg, DEV)
        return lim is not None and lim["wbps"] is not None

    def wait_bounded(self, cgs, timeout=5.0):
        wait_for(lambda: all(self.bounded(c) for c in cgs), timeout,
                 "ungranted bounds on %s" % [os.path.basename(c) for c in cgs])

    def assert_split(self, cgs, pool_bw, pool_iops=pool_iops(0), floor_share=True):
        """Every cgroup has a line with rbps = wbps <= pool (and riops = wiops
        <= the IOPS pool), the caps sum to at most the pool, and none is below
        pool/(4N), the least the spec gives any pod."""
        lims = self.limits(cgs)
        n = len(cgs)
        for cg, lim in zip(cgs, lims):
            self.assertIsNotNone(lim, "no io.max line for %s in %s: %r" %
                                 (DEV, cg, read(os.path.join(cg, "io.max"))))
            self.assertIsNotNone(lim["wbps"], cg)
            self.assertEqual(lim["rbps"], lim["wbps"], cg)
            self.assertLessEqual(lim["wbps"], pool_bw, cg)
            if floor_share:
                self.assertGreaterEqual(lim["wbps"], max(MIB, pool_bw / (4 * n)) * 0.99, cg)
            if pool_iops:
                self.assertIsNotNone(lim["wiops"], cg)
                self.assertEqual(lim["riops"], lim["wiops"], cg)
                self.assertLessEqual(lim["wiops"], pool_iops, cg)
        self.assertLessEqual(sum(l["wbps"] for l in lims), pool_bw, lims)
        if pool_iops:
            self.assertLessEqual(sum(l["wiops"] for l in lims), pool_iops, lims)
        return lims

    def placed(self, d, cg):
        """The `ungranted bound placed` log line of one cgroup, as a dict."""
        m = re.search(r"ungranted bound placed cgroup=(\S*%s) qos=(\w+) disk=(\S+) rbps=(\d+) "
                      r"wbps=(\d+) riops=(\d+|max) wiops=(\d+|max) bytes_before=(\d+) "
                      r"ios_before=(\d+)" % re.escape(os.path.basename(cg)), d.text())
        if not m:
            return None
        keys = ("cgroup", "qos", "disk", "rbps", "wbps", "riops", "wiops", "bytes_before",
                "ios_before")
        return dict(zip(keys, m.groups()))

    def assert_placed_once(self, d, cgs):
        """One `ungranted bound placed` line per cgroup (its first bound)."""
        for cg in cgs:
            n = len(re.findall(r"ungranted bound placed cgroup=\S*%s " % re.escape(os.path.basename(cg)),
                               d.text()))
            self.assertEqual(n, 1, "%d bound placed lines for %s" % (n, cg))

    def explain(self, pod):
        """`ioqosctl explain --json` of the pod: (nodePolicy.ungranted, its view of DISK);
        None without IOQOS_CTL_BIN."""
        if not os.environ.get("IOQOS_CTL_BIN"):
            return None
        r = subprocess.run([os.environ["IOQOS_CTL_BIN"], "explain", "--socket",
                            os.path.join(self.env.state_dir, "plugin.sock"), "--json", pod],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        disks = json.loads(r.stdout)["nodePolicy"]["ungranted"]["pod"]["disks"]
        return json.loads(r.stdout)["nodePolicy"]["ungranted"], [x for x in disks if x["disk"] == DISK][0]

    def one_pod_at_the_whole_pool(self):
        """A granted db and one pod without a grant, bounded at the whole
        pool: (daemon, pool, the pod's cgroup)."""
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        self.grant("db", bw=200)
        pool = pool_bw(200)
        first = self.ungranted("burstable", "first")
        wait_for(lambda: self.bounded(first) and self.limits([first])[0]["wbps"] == pool, 5,
                 "the only pod without a grant at the whole pool")
        return d, pool, first

    def wait_metric(self, d, value, name, timeout=5.0, **labels):
        got = []

        def ok():
            got[:] = [d.metric(name, **labels)]
            return got[0] == value
        try:
            wait_for(ok, timeout, "%s%s == %s" % (name, labels, value), step=0.05)
        except AssertionError:
            self.fail("%s%s: want %s, last seen %s" % (name, labels, value, got[0]))


class Classes(UngrantedTest):
    def test_all_three_qos_classes_share_the_pool(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        cgs = {q: self.ungranted(q) for q in ("guaranteed", "burstable", "besteffort")}
        self.assertTrue(os.path.basename(cgs["guaranteed"]).startswith("kubepods-pod"))
        self.assertEqual(os.path.basename(os.path.dirname(cgs["guaranteed"])), "kubepods.slice")
        _, _, gcg = self.grant("db", bw=200)
        pool = pool_bw(200)
        self.wait_bounded(list(cgs.values()))
        self.assert_split(list(cgs.values()), pool)
        for q, cg in cgs.items():
            p = wait_for(lambda: self.placed(d, cg), 5, "bound placed log of " + q)
            self.assertEqual((p["qos"], p["disk"]), (QOS_NAME[q], DISK), p)
            self.assertEqual(p["cgroup"], cg)
            self.assertEqual(p["rbps"], p["wbps"])
            self.assertLessEqual(int(p["wbps"]), pool)
            self.assertEqual((p["bytes_before"], p["ios_before"]), ("0", "0"))
        # the grant is the granted pod's own, untouched by the pool
        self.assertEqual(read(os.path.join(gcg, "io.max")).strip(),
                         "250:0 rbps=209715200 wbps=209715200 riops=max wiops=max")
        # the QoS cgroups themselves are not limited
        qos = os.path.join(self.env.cgroup_root, "kubepods.slice")
        for sub in ("", "kubepods-burstable.slice", "kubepods-besteffort.slice"):
            self.assertEqual(read(os.path.join(qos, sub, "io.max")), "", sub)
        # a few intervals later: still within the pool
        time.sleep(4 * self.interval_ms / 1000)
        self.assert_split(list(cgs.values()), pool)
        self.assert_placed_once(d, cgs.values())


class FirstAndLastGrant(UngrantedTest):
    env_args = {"extra_config": ug_config(1000)}

    def test_bounds_follow_the_first_and_last_grant(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        cgs = [self.ungranted(q) for q in ("guaranteed", "burstable", "besteffort")]
        # nobody holds units of the disk: nothing is bounded, over several passes
        n = d.text().count("reconcile pass")
        d.wait_log(r"(?s)(reconcile pass.*){%d}" % (n + 2))
        deadline = time.monotonic() + 1.2
        while time.monotonic() < deadline:
            for cg in cgs:
                self.assertEqual(read(os.path.join(cg, "io.max")), "", cg)
            time.sleep(0.05)
        self.assertNotIn("ungranted bound placed", d.text())
        self.assertEqual(d.metric("ioqos_ungranted_pool_bytes_per_second", disk=DISK), 0)
        # the first grant: bounded by the time its PreStart answered
        self.grant("db", bw=200)
        self.assert_split(cgs, pool_bw(200))
        # the last grant goes: every bound placed on the disk is removed
        self.release("db")
        d.wait_log(r'ungranted bounds removed disk=%s pods=3 reason="[^"]+"' % DISK, timeout=10)
        for cg in cgs:
            self.assertTrue(unbounded(iomax_of(cg, DEV)), read(os.path.join(cg, "io.max")))
        self.wait_metric(d, 0, "ioqos_ungranted_pods", disk=DISK)
        self.assertEqual(d.metric("ioqos_ungranted_pool_bytes_per_second", disk=DISK), 0)
        # and they stay off while nobody holds units
        time.sleep(2.2)
        for cg in cgs:
            self.assertTrue(unbounded(iomax_of(cg, DEV)), read(os.path.join(cg, "io.max")))
        self.assert_placed_once(d, cgs)


class Inotify(UngrantedTest):
    interval_ms = 10000
    env_args = {"extra_config": ug_config(10000)}

    def test_new_pod_cgroup_is_bounded_at_once(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        self.grant("db", bw=200)
        pool = pool_bw(200)
        cgs = []
        # one per QoS directory, apart in time; none known to the API or kubelet
        for q in ("burstable", "guaranteed", "besteffort"):
            t0 = time.monotonic()
            cg = self.ungranted(q, api=False)
            wait_for(lambda: self.bounded(cg), 5, "bound on new %s pod cgroup" % q, step=0.01)
            took = time.monotonic() - t0
            self.assertLess(took, 1.0, "%s pod cgroup bounded after %.2f s (interval 10 s)" % (q, took))
            cgs.append(cg)
            # room was made for it: the caps still fit the pool
            self.assert_split(cgs, pool)
            time.sleep(0.4)
        self.assert_placed_once(d, cgs)


class GainsGrant(UngrantedTest):
    def test_grant_replaces_the_ungranted_bound(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        self.grant("db", bw=200)
        other = self.ungranted("besteffort")
        # kubelet creates the pod cgroup before the sandbox: bounded as ungranted first
        uid = new_uid()
        cg = v2_pod_cgroup(self.env.cgroup_root, uid, "burstable", atomic=True)
        self.wait_bounded([cg, other])
        # (a fake cgroupfs file is empty while the plugin rewrites it: limits()
        # retries that, as the kernel's atomic io.max never shows it)
        ug_cap = self.limits([cg])[0]
        self.assertNotEqual(ug_cap["wbps"], 50 * MIB)
        # then its containers start with 50 units
        self.grant("web", bw=50, uid=uid)
        want = {"rbps": 50 * MIB, "wbps": 50 * MIB, "riops": None, "wiops": None}
        self.assertEqual(self.limits([cg])[0], want, read(os.path.join(cg, "io.max")))
        # its PreStart re-split the pool before answering: the pool lost 50 MiB/s
        self.assert_split([other], pool_bw(250))
        # later intervals leave the grant alone
        time.sleep(5 * self.interval_ms / 1000)
        self.assertEqual(self.limits([cg])[0], want, read(os.path.join(cg, "io.max")))
        self.assert_split([other], pool_bw(250))
        self.wait_metric(d, 1, "ioqos_ungranted_pods", disk=DISK)
        self.wait_metric(d, pool_bw(250), "ioqos_ungranted_pool_bytes_per_second", disk=DISK)


class Demand(UngrantedTest):
    def test_busy_pod_gets_more_than_idle_one(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        self.grant("db", bw=200)
        pool = pool_bw(200)
        busy, idle = self.ungranted("burstable", "busy"), self.ungranted("besteffort", "idle")
        self.wait_bounded([busy, idle])
        # busy: does I/O at its cap all the time (as a throttled pod does);
        # idle: none
        total, ios = 0.0, 0.0
        last = time.monotonic()
        deadline = last + 8
        good_since = None
        seen = []
        while time.monotonic() < deadline:
            b, i = self.limits([busy, idle])  # the one going up first
            self.assertIsNotNone(b)
            self.assertIsNotNone(i)
            self.assertLessEqual(b["wbps"] + i["wbps"], pool, (b, i))
            if not seen or seen[-1] != (b["wbps"], i["wbps"]):
                seen.append((b["wbps"], i["wbps"]))
            now = time.monotonic()
            total += b["wbps"] * (now - last)
            ios += (b["wiops"] or 0) * 0.1 * (now - last)
            last = now
            set_io_stat(busy, DEV, wbytes=int(total), wios=int(ios))
            if b["wbps"] > i["wbps"] and b["wbps"] >= pool / 2:
                good_since = good_since or now
                if now - good_since > 3 * self.interval_ms / 1000:
                    break
            else:
                good_since = None
            time.sleep(0.01)
        self.assertIsNotNone(good_since, "caps (busy, idle) over time: %s" % seen)
        b, i = self.assert_split([busy, idle], pool)
        self.assertGreater(b["wbps"], i["wbps"], seen)
        # the idle pod keeps at least a quarter of an equal share
        self.assertGreaterEqual(i["wbps"], pool / 8 * 0.99, seen)
        self.assertGreaterEqual(d.metric("ioqos_ungranted_writes_total"), 3)
        self.assertEqual(d.metric("ioqos_ungranted_failures_total"), 0)
        # at its caps all the time, as a throttled pod is: it never owes
        self.assertEqual(d.metric("ioqos_ungranted_owe_holds_total"), 0)


class NewPodBesideFullPool(UngrantedTest):
    def test_others_are_cut_before_the_new_pod_is_bounded(self):
        """A pod alone holds the whole pool; a second appears. The first is
        cut before the second gets its bound, so from the moment both are
        bounded their caps fit the pool (a reader between the two writes
        once saw 800 + 700 MiB/s of an 800 MiB/s pool)."""
        d, pool, first = self.one_pod_at_the_whole_pool()
        second = self.ungranted("besteffort", "second")
        self.wait_bounded([second])
        b, i = self.limits([first, second])
        self.assertLessEqual(b["wbps"] + i["wbps"], pool, (b, i))
        # the order of the writes, from the plugin's own log
        first_dir, second_dir = os.path.basename(first), os.path.basename(second)
        writes = [ln for ln in d.text().split("\n") if "ungranted cap written" in ln]
        order = [("first" if first_dir in ln else "second" if second_dir in ln else "?",
                  re.search(r"bps=(\S+)", ln).group(1)) for ln in writes]
        at = next(j for j, (who, _) in enumerate(order) if who == "second")
        cuts = [bps for who, bps in order[:at] if who == "first" and bps != "max" and int(bps) < pool]
        self.assertTrue(cuts, "the pod at the whole pool was not cut before the new pod's bound: %s"
                        % order)


class Owes(UngrantedTest):
    def test_a_pod_that_got_through_is_not_written_until_it_paid(self):
        """blk-throttle on 6.1 can let a pod through after a cut (a debt
        carried across the write wraps); every write while it owes lets it
        through again. So a pod that did more since our last write than the
        limits in place allow keeps its io.max until it paid (ioq_ug_owe_judge)."""
        d, pool, first = self.one_pod_at_the_whole_pool()
        t0 = time.monotonic()
        # six seconds of its cap at once: it owes for about six seconds
        set_io_stat(first, DEV, wbytes=6 * pool)
        second = self.ungranted("besteffort", "second")
        self.wait_bounded([second])
        d.wait_log(r"pod owes the kernel, its io\.max is left as it is cgroup=\S*%s disk=\S+ "
                   r"direction=write bytes=%d " % (re.escape(os.path.basename(first)), 6 * pool))
        self.assertEqual(self.limits([first])[0]["wbps"], pool, "written while it owes")
        self.wait_metric(d, 1, "ioqos_ungranted_owing_pods")
        ex = self.explain("default/first")
        if ex:
            self.assertGreaterEqual(ex[1].get("owesKernelSeconds", -1), 0, ex[1])
        self.assertEqual(d.metric("ioqos_ungranted_owe_holds_total"), 1)
        # paid once its cap over the time since the write covers it: then cut. The second pod
        # writes at its cap meanwhile (busy), as a throttled pod does
        paid = re.compile(r"pod paid what it owed, its io\.max is written again cgroup=\S*%s "
                          % re.escape(os.path.basename(first)))
        total, last, deadline = 0.0, time.monotonic(), time.monotonic() + 12
        while not paid.search(d.text()):
            self.assertLess(time.monotonic(), deadline, "never released")
            now = time.monotonic()
            total += (self.limits([second])[0] or {}).get("wbps", 0) * (now - last)
            last = now
            set_io_stat(second, DEV, wbytes=int(total))
            time.sleep(0.05)
        self.assertGreater(time.monotonic() - t0, 5.0, "released before it paid")
        # its io.stat never moved (the kernel held it): held for the most it could owe, which
        # counts what it may have been ahead of the limit before our write too
        text = d.text()
        most = float(re.search(r"pod owes the kernel.* held_for_at_most_s=([0-9.]+)", text).group(1))
        m = re.search(r"pod paid what it owed.* held_s=([0-9.]+) reason=\"([^\"]*)\"", text)
        self.assertGreaterEqual(float(m.group(1)), most - 0.01, text[-3000:])
        self.assertEqual(m.group(2), "the most it could owe is paid at its cap")
        wait_for(lambda: self.limits([first])[0]["wbps"] < pool, 3, "the cut written after the hold")
        # its rate while held is the kernel holding it, not its demand: the first write after the
        # hold gives it an equal share, not the idle pod's quarter (a cut of a busy pod is what
        # can let it through again)
        text = d.text()
        after = text[text.index("pod paid what it owed"):]
        cut = re.search(r"ungranted cap written cgroup=\S*%s disk=\S+ bps=(\d+)" %
                        re.escape(os.path.basename(first)), after)
        self.assertIsNotNone(cut, after)
        self.assertGreaterEqual(int(cut.group(1)), pool / 2 * 0.99, after)
        self.assert_split([first, second], pool)
        self.wait_metric(d, 0, "ioqos_ungranted_owing_pods")
        self.assertEqual(d.metric("ioqos_ungranted_owe_holds_total"), 1)
        ex = self.explain("default/first")
        if ex:
            self.assertNotIn("owesKernelSeconds", ex[1])


class Restart(UngrantedTest):
    def test_bounds_survive_plugin_restarts(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        self.grant("db", bw=200)
        pool = pool_bw(200)
        cgs = [self.ungranted("burstable"), self.ungranted("guaranteed")]
        self.wait_bounded(cgs)
        time.sleep(3 * self.interval_ms / 1000)
        self.assert_split(cgs, pool)
        # watch the files from now on: a bound never goes away, not even for
        # a moment (one empty read can be a write in progress on a plain file;
        # two in a row 10 ms apart cannot)
        stop = threading.Event()
        gaps = []

        def watch():
            empty = {c: 0 for c in cgs}
            while not stop.is_set():
                for c in cgs:
                    text = read(os.path.join(c, "io.max"))
                    lim = iomax_of(c, DEV)
                    if text.strip() == "":
                        empty[c] += 1
                        if empty[c] >= 2:
                            gaps.append((time.monotonic(), c, "empty"))
                        continue
                    empty[c] = 0
                    if lim is not None and unbounded(lim):
                        gaps.append((time.monotonic(), c, text))
                time.sleep(0.01)
        t = threading.Thread(target=watch, daemon=True)
        t.start()
        self.addCleanup(stop.set)
        # an orderly stop (SIGTERM, as at a DaemonSet update), then a kill
        self.assertEqual(d.terminate(), 0)
        for c in cgs:
            self.assertTrue(self.bounded(c), "bound removed on exit: %s" % c)
        d2 = self.start()
        time.sleep(4 * self.interval_ms / 1000)
        self.assert_split(cgs, pool)
        self.wait_metric(d2, 2, "ioqos_ungranted_pods", disk=DISK)
        d2.kill()
        d3 = self.start()
        time.sleep(4 * self.interval_ms / 1000)
        self.wait_metric(d3, 2, "ioqos_ungranted_pods", disk=DISK)
        stop.set()
        t.join(5)
        self.assertEqual(gaps, [], "bounds went away during the restarts")
        self.assert_split(cgs, pool)
        for x in (d, d2, d3):
            self.assertNotIn("ungranted bounds removed", x.text())


class BadPoolConfig(UngrantedTest):
    env_args = {"extra_config": dict(ug_config(300), devices=[{
        "select": DISK, "capacity": {"bandwidthBytesPerSec": CAP_BW, "iops": CAP_IOPS},
        "ungrantedPool": {"bandwidthBytesPerSec": CAP_BW + 1, "iops": 1000}}])}

    def test_pool_larger_than_capacity_is_refused(self):
        d = self.start(ready=False)
        try:
            rc = d.proc.wait(15)
        except Exception:
            self.fail("the daemon kept running with a pool above the capacity; log:\n" + d.text()[-3000:])
        self.assertNotEqual(rc, 0)
        self.assertIn("devices[0].ungrantedPool", d.text())


class VanishingCgroup(UngrantedTest):
    def test_pod_cgroup_gone_between_listing_and_writing(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        self.grant("db", bw=200)
        keep = self.ungranted("burstable")
        self.wait_bounded([keep])
        # pods that come and go at once (a failed sandbox): some vanish before
        # the plugin lists them, some between its listing and its write
        deadline = time.monotonic() + 2.5 * self.interval_ms / 1000 + 0.5
        gone = 0
        while time.monotonic() < deadline or gone < 20:
            q = ("burstable", "besteffort", "guaranteed")[gone % 3]
            cg = v2_pod_cgroup(self.env.cgroup_root, new_uid(), q, atomic=True)
            time.sleep(0.001 * (gone % 5))
            rm_pod_cgroup(self.env.cgroup_root, cg)
            gone += 1
        time.sleep(3 * self.interval_ms / 1000)
        self.assertIsNone(d.proc.poll(), "plugin exited; log:\n" + d.text()[-3000:])
        self.assertEqual(d.http("/readyz")[0], 200)
        # a pod cgroup that went away is no failure (the kernel dropped its limits)
        self.assertEqual(d.metric("ioqos_ungranted_failures_total"), 0)
        self.assertNotIn("ungranted bound not in place", d.text())
        self.assert_split([keep], pool_bw(200))
        self.wait_metric(d, 1, "ioqos_ungranted_pods", disk=DISK)
        # and a new pod is still bounded
        late = self.ungranted("besteffort")
        self.wait_bounded([late])
        self.assert_split([keep, late], pool_bw(200), floor_share=False)


class MissingQosDir(UngrantedTest):
    def test_missing_besteffort_dir_leaves_the_others_bounded(self):
        shutil.rmtree(os.path.join(self.env.cgroup_root, "kubepods.slice", "kubepods-besteffort.slice"))
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        cgs = [self.ungranted("guaranteed"), self.ungranted("burstable")]
        self.grant("db", bw=200)
        self.wait_bounded(cgs)
        self.assert_split(cgs, pool_bw(200))
        time.sleep(2 * self.interval_ms / 1000)
        self.assertIsNone(d.proc.poll())
        lines = [l for l in d.text().splitlines() if
                 "the BestEffort QoS cgroup %s/kubepods.slice/kubepods-besteffort.slice does not exist"
                 % self.env.cgroup_root in l]
        self.assertTrue(lines, "no log line says the BestEffort QoS cgroup is missing:\n" +
                        d.text()[-3000:])
        self.wait_metric(d, 2, "ioqos_ungranted_pods", disk=DISK)


    def test_missing_qos_cgroups_said_once(self):
        """Two notes that hold at once (no Burstable and no BestEffort QoS
        cgroup yet) are each said once, not in turn every interval."""
        for q in ("burstable", "besteffort"):
            shutil.rmtree(os.path.join(self.env.cgroup_root, "kubepods.slice", "kubepods-%s.slice" % q))
        d = self.start()
        d.wait_log(r"ungranted: the BestEffort QoS cgroup .* does not exist \(yet\)")
        time.sleep(6 * self.interval_ms / 1000.0)  # several passes
        said = re.findall(r"ungranted: the (\w+) QoS cgroup \S+ does not exist \(yet\)", d.text())
        self.assertEqual(sorted(said), ["BestEffort", "Burstable"], d.text()[-3000:])


class Disabled(UngrantedTest):
    env_args = {"extra_config": ug_config(300, enable=False)}

    def test_enable_false_bounds_nothing(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        cgs = [self.ungranted(q) for q in ("guaranteed", "burstable", "besteffort")]
        _, _, gcg = self.grant("db", bw=200)
        late = self.ungranted("burstable", api=False)
        n = d.text().count("reconcile pass")
        d.wait_log(r"(?s)(reconcile pass.*){%d}" % (n + 2))
        time.sleep(1.0)
        for cg in cgs + [late]:
            self.assertEqual(read(os.path.join(cg, "io.max")), "", cg)
        self.assertEqual(read(os.path.join(gcg, "io.max")).strip(),
                         "250:0 rbps=209715200 wbps=209715200 riops=max wiops=max")
        self.assertNotIn("ungranted bound placed", d.text())
        self.assertIn(d.metric("ioqos_ungranted_pods", disk=DISK), (None, 0))


class Metrics(UngrantedTest):
    def test_pool_and_pod_gauges(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        first = self.ungranted("burstable")
        # I/O it did before anyone bounded it
        set_io_stat(first, DEV, wbytes=12345, wios=3)
        others = [self.ungranted("guaranteed"), self.ungranted("besteffort")]
        time.sleep(2 * self.interval_ms / 1000)
        self.assertEqual(d.metric("ioqos_ungranted_pool_bytes_per_second", disk=DISK), 0)
        self.assertIn(d.metric("ioqos_ungranted_pods", disk=DISK), (None, 0))
        self.grant("db", bw=200, iops=10)  # 10 x 100 IOPS
        pool_bw_, pool_iops_ = pool_bw(200), pool_iops(10)
        self.assert_split([first] + others, pool_bw_, pool_iops_)
        self.wait_metric(d, pool_bw_, "ioqos_ungranted_pool_bytes_per_second", disk=DISK)
        self.wait_metric(d, pool_iops_, "ioqos_ungranted_pool_iops", disk=DISK)
        self.wait_metric(d, 3, "ioqos_ungranted_pods", disk=DISK)
        p = wait_for(lambda: self.placed(d, first), 5, "bound placed log")
        self.assertEqual((p["bytes_before"], p["ios_before"]), ("12345", "3"), p)
        self.assertEqual(d.metric("ioqos_ungranted_before_bound_max_bytes"), 12345)
        self.assertGreaterEqual(d.metric("ioqos_ungranted_writes_total"), 3)
        self.assertEqual(d.metric("ioqos_ungranted_failures_total"), 0)
        # one more pod, one more bounded
        self.wait_bounded([self.ungranted("besteffort")])
        self.wait_metric(d, 4, "ioqos_ungranted_pods", disk=DISK)


class ConfiguredPool(UngrantedTest):
    env_args = {"extra_config": dict(ug_config(300), devices=[{
        "select": DISK, "capacity": {"bandwidthBytesPerSec": CAP_BW, "iops": CAP_IOPS},
        "ungrantedPool": {"bandwidthBytesPerSec": 100 * MIB, "iops": 500}}])}

    def test_configured_pool_is_the_pool(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        cgs = [self.ungranted(q) for q in ("guaranteed", "burstable", "besteffort")]
        self.grant("db", bw=200)
        self.assert_split(cgs, 100 * MIB, 500)
        self.wait_metric(d, 100 * MIB, "ioqos_ungranted_pool_bytes_per_second", disk=DISK)
        self.wait_metric(d, 500, "ioqos_ungranted_pool_iops", disk=DISK)
        self.wait_metric(d, 3, "ioqos_ungranted_pods", disk=DISK)
        time.sleep(3 * self.interval_ms / 1000)
        self.assert_split(cgs, 100 * MIB, 500)


class HeadroomShare(UngrantedTest):
    # the disk advertises 0.8 of its capacity: 800 bandwidth units and 800
    # IOPS units; pods without a grant share half of the rest (the default
    # headroomShare) plus the units nobody holds
    env_args = {"extra_config": dict(ug_config(300), allocatableFraction=0.8)}

    def test_half_of_the_headroom_plus_unheld_units(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 800)
        cgs = [self.ungranted(q) for q in ("guaranteed", "burstable")]
        self.grant("db", bw=200)
        pool_b = 100 * MIB + (800 - 200) * MIB
        pool_i = 10000 + 80000
        self.assert_split(cgs, pool_b, pool_i)
        self.wait_metric(d, pool_b, "ioqos_ungranted_pool_bytes_per_second", disk=DISK)
        self.wait_metric(d, pool_i, "ioqos_ungranted_pool_iops", disk=DISK)
        # two new pods: an equal share each, the reserve never given out
        for lim in self.limits(cgs):
            self.assertEqual(lim["wbps"], pool_b // 2, lim)


class TinyPool(UngrantedTest):
    env_args = {"extra_config": dict(ug_config(300), devices=[{
        "select": DISK, "capacity": {"bandwidthBytesPerSec": CAP_BW, "iops": CAP_IOPS},
        "ungrantedPool": {"bandwidthBytesPerSec": 2 * MIB, "iops": 20}}])}

    def test_floor_slows_never_freezes(self):
        self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        cgs = [self.ungranted(q) for q in ("guaranteed", "burstable", "besteffort")]
        self.grant("db", bw=200)
        self.wait_bounded(cgs)
        time.sleep(3 * self.interval_ms / 1000)
        # 3 pods, a pool of 2 MiB/s and 20 IOPS: each still gets the floor
        for cg, lim in zip(cgs, self.limits(cgs)):
            self.assertIsNotNone(lim, cg)
            self.assertGreaterEqual(lim["wbps"], MIB, lim)
            self.assertGreaterEqual(lim["wiops"], 10, lim)
            self.assertEqual((lim["rbps"], lim["riops"]), (lim["wbps"], lim["wiops"]), lim)


class NoIopsCapacity(UngrantedTest):
    env_args = {"extra_config": dict(ug_config(300), devices=[{
        "select": DISK, "capacity": {"bandwidthBytesPerSec": CAP_BW}}])}

    def test_no_iops_pool_without_iops_capacity(self):
        d = self.start(ready=False)
        k = self.env.kubelet
        k.wait_registered(BW)
        d.wait_ready()
        k.wait_list(BW, lambda l: len(l) == 1000)
        cgs = [self.ungranted("burstable"), self.ungranted("besteffort")]
        self.grant("db", bw=200)
        self.wait_bounded(cgs)
        lims = self.assert_split(cgs, pool_bw(200), pool_iops=None)
        for lim in lims:
            self.assertEqual((lim["riops"], lim["wiops"]), (None, None), lim)
        self.wait_metric(d, pool_bw(200), "ioqos_ungranted_pool_bytes_per_second", disk=DISK)
        self.assertIn(d.metric("ioqos_ungranted_pool_iops", disk=DISK), (None, 0))




class Lending(UngrantedTest):
    """The idle part of a grant is lent to the pods without a grant and taken
    back between passes when the granted pod wakes up. The pass runs every
    5 s here, the lenders are sampled every 50 ms: a take-back well under 5 s
    can only come from the sampling."""
    interval_ms = 5000
    env_args = {"extra_config": ug_config(5000, lend=True, lendReserve=0.125, lendSampleMs=50)}
    GRANT = 200 * MIB
    LENT = GRANT - GRANT // 8  # all but the reserve (lendReserve 0.125)

    def sum_wbps(self, cgs):
        lims = self.limits(cgs)
        if any(l is None or l["wbps"] is None for l in lims):
            return None
        return sum(l["wbps"] for l in lims)

    def test_idle_grant_is_lent_and_taken_back_when_its_pod_wakes(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        _, _, db = self.grant("db", bw=200)
        set_io_stat(db, DEV)  # the db's counters: nothing done yet
        cgs = [self.ungranted("burstable"), self.ungranted("besteffort")]
        self.wait_bounded(cgs)
        base = pool_bw(200)
        self.assertLessEqual(self.sum_wbps(cgs), base)
        # two quiet passes later the pool is the base plus all but the reserve
        self.wait_metric(d, self.LENT, "ioqos_ungranted_lent_bytes_per_second", timeout=20, disk=DISK)
        self.wait_metric(d, base + self.LENT, "ioqos_ungranted_pool_bytes_per_second", timeout=5, disk=DISK)
        d.wait_log(r'ungranted lending disk=%s lent_bps=%d ' % (DISK, self.LENT), timeout=5)
        wait_for(lambda: (self.sum_wbps(cgs) or 0) > base, 12, "the pods without a grant use the lent part")
        self.assertLessEqual(self.sum_wbps(cgs), base + self.LENT)
        # the grant itself is never touched
        self.assertEqual(read(os.path.join(db, "io.max")).strip(),
                         "250:0 rbps=209715200 wbps=209715200 riops=max wiops=max")
        # the db wakes: writes at 100 MiB/s, its io.stat moving every 10 ms
        stop = threading.Event()
        woke = time.monotonic()

        def writer():
            t0 = time.monotonic()
            while not stop.is_set():
                set_io_stat(db, DEV, wbytes=int((time.monotonic() - t0) * 100 * MIB),
                            wios=int((time.monotonic() - t0) * 100))
                time.sleep(0.01)
        t = threading.Thread(target=writer, daemon=True)
        t.start()
        self.addCleanup(stop.set)
        wait_for(lambda: (self.sum_wbps(cgs) or 1 << 62) <= base, 3, "the lent part taken back", step=0.005)
        took = time.monotonic() - woke
        print("lent capacity taken back %.0f ms after the wake-up (pass interval 5000 ms)" % (took * 1e3))
        self.assertLess(took, 2.5, "taken back after %.2f s: not between passes" % took)
        d.wait_log(r"ungranted lent capacity taken back cgroup=\S*%s disk=%s" % (
            re.escape(os.path.basename(db)), DISK), timeout=5)
        d.wait_log(r"ungranted pool cut disk=%s lent_bps=%d->0 .* reclaim_ms=\d+" % (DISK, self.LENT), timeout=5)
        self.assertEqual(d.metric("ioqos_ungranted_lent_bytes_per_second", disk=DISK), 0)
        self.assertGreaterEqual(d.metric("ioqos_ungranted_reclaims_total"), 1)
        self.assertGreaterEqual(d.metric("ioqos_ungranted_reclaim_seconds_count"), 1)
        # busy at half its grant (it keeps twice its rate): nothing lent at the next passes
        n = d.text().count("ungranted lending disk=")
        time.sleep(2.5 * self.interval_ms / 1000)
        self.assertEqual(d.metric("ioqos_ungranted_lent_bytes_per_second", disk=DISK), 0)
        self.assertEqual(d.text().count("ungranted lending disk="), n, "lent again while the db is busy")
        self.assertLessEqual(self.sum_wbps(cgs), base)
        self.assertEqual(d.metric("ioqos_ungranted_failures_total"), 0)


class LendingBusy(UngrantedTest):
    """Busy is more than io.stat: a granted pod whose memory.stat shows writes
    queued in its page cache (a buffered writer's writes reach io.stat only at
    writeback), or whose tasks wait on I/O (io.pressure "some": a writer
    throttled while dirtying, a latency-bound database), keeps its grant. The
    lent part is taken back between passes although its io.stat is flat."""
    interval_ms = 3000
    env_args = {"extra_config": ug_config(3000, lend=True, lendSampleMs=50)}

    def replace(self, cg, name, text):
        tmp = os.path.join(cg, "." + name + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, os.path.join(cg, name))

    def memstat(self, cg, dirty, writeback=0):
        self.replace(cg, "memory.stat", "anon 0\nfile 0\nfile_dirty %d\nfile_writeback %d\nshmem 0\n" % (
            dirty, writeback))

    def pressure(self, cg, total_us):
        self.replace(cg, "io.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n"
                     "full avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n" % (total_us, total_us // 2))

    def lending(self):
        """An idle granted db (flat io.stat, no page cache, no stall) lending to
        one pod without a grant: (daemon, db cgroup, that pod's cgroup, base pool)."""
        d = self.start()
        self.env.kubelet.wait_list(BW, lambda l: len(l) == 1000)
        _, _, db = self.grant("db", bw=200)
        set_io_stat(db, DEV)
        self.memstat(db, 0)
        self.pressure(db, 1000)
        cg = self.ungranted("burstable")
        base = pool_bw(200)
        self.wait_metric(d, 175 * MIB, "ioqos_ungranted_lent_bytes_per_second", timeout=20, disk=DISK)
        wait_for(lambda: ((self.limits([cg])[0] or {}).get("wbps") or 0) > base, 10, "lent")
        return d, db, cg, base

    def assert_taken_back(self, d, db, cg, base, t0):
        wait_for(lambda: ((self.limits([cg])[0] or {}).get("wbps") or 1 << 62) <= base, 5,
                 "the lent part taken back", step=0.005)
        took = time.monotonic() - t0
        self.assertLess(took, 2.0, "taken back after %.2f s: not between passes (3 s)" % took)
        d.wait_log(r'ungranted lent capacity taken back cgroup=\S*%s disk=%s .*reason="the granted pod waits on I/O '
                   r'or has writes queued in its page cache"' % (re.escape(os.path.basename(db)), DISK), timeout=5)
        # and nothing is lent while it stays so
        time.sleep(2.5 * self.interval_ms / 1000)
        self.assertEqual(d.metric("ioqos_ungranted_lent_bytes_per_second", disk=DISK), 0)

    def test_writes_queued_in_the_page_cache_take_the_grant_back(self):
        d, db, cg, base = self.lending()
        # 100 MiB queued (more than 0.05 s of the 200 MiB/s grant), io.stat flat
        t0 = time.monotonic()
        self.memstat(db, 80 * MIB, 20 * MIB)
        self.assert_taken_back(d, db, cg, base, t0)

    def test_waiting_on_io_takes_the_grant_back(self):
        d, db, cg, base = self.lending()
        # from now on its tasks wait on I/O half of the time; io.stat stays flat
        stop = threading.Event()

        def stall():
            t1 = time.monotonic()
            while not stop.is_set():
                self.pressure(db, 1000 + int((time.monotonic() - t1) * 0.5e6))
                time.sleep(0.01)
        threading.Thread(target=stall, daemon=True).start()
        self.addCleanup(stop.set)
        self.assert_taken_back(d, db, cg, base, time.monotonic())


class LendingRestart(UngrantedTest):
    """A restart while lending: the new process has lent nothing yet, so its
    first pass cuts the caps found in place back to the pool nobody holds."""
    env_args = {"extra_config": ug_config(300, lend=True, lendSampleMs=50)}

    def test_restart_while_lending_cuts_back_to_the_pool(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        _, _, db = self.grant("db", bw=200)
        set_io_stat(db, DEV)
        cg = self.ungranted("burstable")
        base = pool_bw(200)
        wait_for(lambda: ((self.limits([cg])[0] or {}).get("wbps") or 0) > base, 10,
                 "the pod without a grant holds lent capacity")
        self.assertEqual(d.terminate(), 0)
        self.assertGreater(self.limits([cg])[0]["wbps"], base, "the cap in place when the plugin stopped")
        # the db wakes while no plugin runs
        stop = threading.Event()

        def writer():
            t0 = time.monotonic()
            while not stop.is_set():
                set_io_stat(db, DEV, wbytes=int((time.monotonic() - t0) * 150 * MIB))
                time.sleep(0.01)
        t = threading.Thread(target=writer, daemon=True)
        t.start()
        self.addCleanup(stop.set)
        d2 = self.start()
        wait_for(lambda: ((self.limits([cg])[0] or {}).get("wbps") or 1 << 62) <= base, 10,
                 "the cap cut back to the pool after the restart")
        time.sleep(4 * self.interval_ms / 1000)
        self.assertLessEqual(self.limits([cg])[0]["wbps"], base)
        self.assertEqual(d2.metric("ioqos_ungranted_lent_bytes_per_second", disk=DISK), 0)


def memory_files(current, lru=0, limit="max", high="max", dirty=0, writeback=0):
    """The memory controller's files of a pod cgroup (bytes): usage, its file
    LRU (what reclaim of clean page cache frees), memory.max and memory.high."""
    return {"memory.current": "%d\n" % current, "memory.max": "%s\n" % limit, "memory.high": "%s\n" % high,
            "memory.stat": "anon %d\nfile %d\nactive_file %d\ninactive_file %d\nfile_dirty %d\n"
                           "file_writeback %d\nshmem 0\n" % (current - lru, lru, lru // 2, lru - lru // 2, dirty,
                                                              writeback)}


def replace_file(cg, name, text):
    """At once, as the kernel shows a cgroup file: a reader never sees it half-written."""
    tmp = os.path.join(cg, "." + name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(cg, name))


class PageCache(UngrantedTest):
    """The page cache bound (nodePolicy.ungranted.pageCacheBytes): a pod without
    a grant and without a memory limit, bounded on a disk with grants, gets
    memory.high = its memory that reclaim cannot free (memory.current minus its
    file LRU) + pageCacheBytes, following that memory; a pod with a memory
    limit, a granted pod and a pod on a disk without grants are not touched;
    the bound goes with the last grant and survives a restart."""
    env_args = {"extra_config": ug_config(300, pageCacheBytes=32 * MIB)}

    def high(self, cg):
        for _ in range(50):  # a write in progress reads empty
            text = read(os.path.join(cg, "memory.high")).strip()
            if text:
                return text if text == "max" else int(text)
            time.sleep(0.005)
        self.fail("memory.high of %s stays empty" % cg)

    def test_bound_follows_the_pod_and_goes_with_the_last_grant(self):
        d = self.start()
        self.env.kubelet.wait_list(BW, lambda l: len(l) == 1000)
        # before any grant: no bound of any kind
        early = self.ungranted("besteffort", files=memory_files(100 * MIB, lru=30 * MIB))
        time.sleep(3 * self.interval_ms / 1000)
        self.assertEqual(self.high(early), "max", "no disk has grants: nothing is bounded")
        _, _, db = self.grant("db", bw=200)
        for f, t in memory_files(10 * MIB, lru=5 * MIB).items():
            replace_file(db, f, t)
        web = self.ungranted("besteffort", files=memory_files(100 * MIB, lru=30 * MIB))
        limited = self.ungranted("burstable", files=memory_files(100 * MIB, lru=30 * MIB, limit=512 * MIB))
        # pinned 70 MiB + room 32 MiB
        wait_for(lambda: self.high(web) == 102 * MIB, 5, "memory.high of the pod without a grant")
        wait_for(lambda: self.high(early) == 102 * MIB, 5, "memory.high of the pod there before the grant")
        d.wait_log(r"ungranted page cache bound placed cgroup=\S*%s qos=BestEffort memory_high=102.0MiB "
                   r"pinned=70.0MiB room=32.0MiB" % re.escape(os.path.basename(web)), timeout=5)
        self.wait_metric(d, 2, "ioqos_ungranted_page_cache_bounded_pods")
        self.assertEqual(self.high(limited), "max", "a pod with a memory limit has a dirty limit of its own")
        self.assertEqual(self.high(db), "max", "a granted pod's page cache is its grant's")
        d.wait_log(r'ungranted page cache not bounded cgroup=\S*%s reason="it has a memory limit'
                   % re.escape(os.path.basename(limited)), timeout=5)
        # its heap grows by 200 MiB, its page cache shrinks: raised, never holding the heap
        replace_file(web, "memory.stat", memory_files(300 * MIB, lru=10 * MIB)["memory.stat"])
        replace_file(web, "memory.current", "%d\n" % (300 * MIB))
        wait_for(lambda: self.high(web) == 322 * MIB, 5, "memory.high raised with the pod's heap")
        # a small move stays (fewer writes): 5 MiB more heap
        writes = d.metric("ioqos_ungranted_page_cache_writes_total")
        replace_file(web, "memory.current", "%d\n" % (305 * MIB))
        time.sleep(3 * self.interval_ms / 1000)
        self.assertEqual(self.high(web), 322 * MIB)
        self.assertEqual(d.metric("ioqos_ungranted_page_cache_writes_total"), writes)
        # someone else writes it: put back, and said
        replace_file(web, "memory.high", "max\n")
        wait_for(lambda: self.high(web) == 327 * MIB, 5, "memory.high put back")
        d.wait_log(r"ungranted page cache bound drift corrected cgroup=\S*%s ours=322.0MiB found=max"
                   % re.escape(os.path.basename(web)), timeout=5)
        # the last grant goes: every bound of ours is lifted
        self.release("db")
        wait_for(lambda: self.high(web) == "max" and self.high(early) == "max", 10, "memory.high lifted")
        d.wait_log(r'ungranted page cache bound removed cgroup=\S*%s reason="not bounded on any disk'
                   % re.escape(os.path.basename(web)), timeout=5)
        self.wait_metric(d, 0, "ioqos_ungranted_page_cache_bounded_pods")

    def test_restart_keeps_the_bound_and_lifts_it_later(self):
        d = self.start()
        self.env.kubelet.wait_list(BW, lambda l: len(l) == 1000)
        self.grant("db", bw=200)
        web = self.ungranted("burstable", files=memory_files(50 * MIB, lru=10 * MIB))
        wait_for(lambda: self.high(web) == 72 * MIB, 5, "memory.high placed")
        self.assertEqual(d.terminate(), 0)
        d2 = self.start()
        time.sleep(3 * self.interval_ms / 1000)
        self.assertEqual(self.high(web), 72 * MIB, "taken over as it is")
        self.assertNotRegex(d2.text(), r"page cache bound placed cgroup=\S*%s" % re.escape(os.path.basename(web)))
        self.wait_metric(d2, 1, "ioqos_ungranted_page_cache_bounded_pods")
        # and, being ours, lifted with the last grant
        self.release("db")
        wait_for(lambda: self.high(web) == "max", 10, "memory.high lifted after the restart")

    def test_owner_change_is_left_alone_and_garbage_is_refused(self):
        d = self.start()
        self.env.kubelet.wait_list(BW, lambda l: len(l) == 1000)
        self.grant("db", bw=200)
        web = self.ungranted("burstable", files=memory_files(50 * MIB, lru=10 * MIB))
        bad = self.ungranted("burstable", files=dict(memory_files(50 * MIB), **{"memory.current": "lots\n"}))
        wait_for(lambda: self.high(web) == 72 * MIB, 5, "memory.high placed")
        d.wait_log(r"ungranted bound not in place error=\"%s/memory.current: not a byte count" % re.escape(bad),
                   timeout=5)
        self.assertEqual(self.high(bad), "max", "nothing guessed from garbage")
        # kubelet gives it a memory limit and its own memory.high (in-place resize),
        # both at once (the plugin held still meanwhile): ours is not lifted over theirs
        d.proc.send_signal(signal.SIGSTOP)
        try:
            replace_file(web, "memory.max", "%d\n" % (256 * MIB))
            replace_file(web, "memory.high", "%d\n" % (200 * MIB))
        finally:
            d.proc.send_signal(signal.SIGCONT)
        d.wait_log(r"ungranted page cache bound left to its new owner cgroup=\S*%s ours=72.0MiB now=200.0MiB"
                   % re.escape(os.path.basename(web)), timeout=5)
        self.release("db")
        time.sleep(3 * self.interval_ms / 1000)
        self.assertEqual(self.high(web), 200 * MIB)


class PageCachePreStart(UngrantedTest):
    """A granted pod's PreStart waits for a pass: it bounds the others' io.max
    at once but lowers no memory.high below a pod's usage (that write makes the
    kernel reclaim before it returns); the thread's next pass does."""
    interval_ms = 10000
    env_args = {"extra_config": ug_config(10000, pageCacheBytes=32 * MIB)}

    def test_prestart_does_not_wait_for_reclaim(self):
        d = self.start()
        self.env.kubelet.wait_list(BW, lambda l: len(l) == 1000)
        # 500 MiB used, 400 of it page cache: its bound (132 MiB) is below its usage
        big = self.ungranted("burstable", files=memory_files(500 * MIB, lru=400 * MIB))
        small = self.ungranted("burstable", files=memory_files(20 * MIB, lru=10 * MIB))
        uid, ids, _, _ = self.admit("db", bw=200, atomic=True)
        # the db's new cgroup wakes the thread (inotify) for a pass of its own; let
        # it end (the db holds nothing yet: no bound anywhere) before the PreStart
        time.sleep(1.0)
        self.assertEqual(PageCache.high(self, small), "max")
        t0 = time.monotonic()
        self.env.kubelet.prestart(BW, ids[BW])
        # the PreStart's pass: both bounded in io.max, the small one's bound placed
        # (above its usage), the big one's left to the thread
        self.assertTrue(self.bounded(big) and self.bounded(small))
        self.assertEqual(PageCache.high(self, small), 42 * MIB)
        if time.monotonic() - t0 < 5:  # well before the thread's next pass (10 s)
            self.assertEqual(PageCache.high(self, big), "max", "lowered below its usage within a PreStart")
        wait_for(lambda: PageCache.high(self, big) == 132 * MIB, 15, "the thread's pass placed it")


class PageCacheOff(UngrantedTest):
    env_args = {"extra_config": ug_config(300, pageCacheBytes=0)}

    def test_zero_bounds_no_page_cache(self):
        d = self.start()
        self.env.kubelet.wait_list(BW, lambda l: len(l) == 1000)
        self.grant("db", bw=200)
        web = self.ungranted("besteffort", files=memory_files(100 * MIB, lru=30 * MIB))
        self.wait_bounded([web])
        time.sleep(3 * self.interval_ms / 1000)
        self.assertEqual(read(os.path.join(web, "memory.high")).strip(), "max")
        self.assertEqual(d.metric("ioqos_ungranted_page_cache_bounded_pods"), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)


class Burst(UngrantedTest):
    """The opt-in burst (nodePolicy.ungranted.burst annotated): a granted pod
    annotated ioqos.io/burst "true" and busy at its grant gets, above it, what
    the pods without a grant leave of the pool; a pod without a grant that
    becomes busy takes it back at the next pass, down to the grant exactly.
    A pod whose annotation is not "true" never bursts, nor does a pod without
    the annotation. Lending is off: the pool is the units nobody holds."""
    interval_ms = 400
    env_args = {"extra_config": ug_config(400, burst="annotated")}

    def feed(self, cg, mib_s):
        """io.stat of cg moving at mib_s MiB/s (writes) until the test ends"""
        stop = threading.Event()

        def run():
            t0 = time.monotonic()
            while not stop.is_set():
                dt = time.monotonic() - t0
                set_io_stat(cg, DEV, wbytes=int(dt * mib_s * MIB), wios=int(dt * 100))
                time.sleep(0.01)
        threading.Thread(target=run, daemon=True).start()
        self.addCleanup(stop.set)
        return stop

    def wbps(self, cg):
        return (self.limits([cg])[0] or {}).get("wbps") or 0

    def test_burst_above_the_grant_last_in_line(self):
        d = self.start()
        self.env.kubelet.wait_list(BW, lambda l: len(l) == 1000)
        uid, ids, _, db = self.admit("db", bw=200, annotations={"ioqos.io/burst": "true"}, atomic=True)
        self.env.kubelet.prestart(BW, ids[BW])
        uid2, ids2, _, bk = self.admit("bk", bw=100, annotations={"ioqos.io/burst": "yes"}, atomic=True)
        self.env.kubelet.prestart(BW, ids2[BW])
        uid3, ids3, _, plain = self.admit("plain", bw=100, atomic=True)
        self.env.kubelet.prestart(BW, ids3[BW])
        ug = self.ungranted("burstable")
        set_io_stat(ug, DEV)
        self.wait_bounded([ug])
        pool = pool_bw(400)
        # all three granted pods busy at their grants: only the annotated one bursts
        self.feed(db, 200)
        self.feed(bk, 100)
        self.feed(plain, 100)
        wait_for(lambda: self.wbps(db) > 200 * MIB * 1.05, 10, "the annotated pod bursts")
        d.wait_log(r'granted pod bursting cgroup=\S*%s disk=%s extra_bps=\d+ extra_iops=\d+ reason="it uses its '
                   r'grant and the pool has idle capacity"' % (re.escape(os.path.basename(db)), DISK), timeout=5)
        lim_db, lim_ug = self.limits([db, ug])
        extra = lim_db["wbps"] - 200 * MIB
        self.assertEqual(lim_db["rbps"], lim_db["wbps"], lim_db)
        self.assertLessEqual(extra + lim_ug["wbps"], pool, "burst and the bounds together within the pool")
        self.assertGreaterEqual(lim_ug["wbps"], pool / 4 * 0.99, "the pod without a grant keeps its share")
        for cg, g in ((bk, 100), (plain, 100)):
            self.assertEqual(read(os.path.join(cg, "io.max")).strip(),
                             "250:0 rbps=%d wbps=%d riops=max wiops=max" % (g * MIB, g * MIB),
                             "not annotated \"true\": held at its grant")
        wait_for(lambda: d.metric("ioqos_ungranted_bursting_pods", disk=DISK) == 1, 5, "bursting gauge")
        self.assertGreater(d.metric("ioqos_ungranted_burst_bytes_per_second", disk=DISK), 0)
        doc = self.explain("default/db")
        if doc:
            ugdoc, dv = doc
            self.assertEqual(ugdoc["burst"], "annotated")
            self.assertEqual(ugdoc["burstAnnotation"], "true")
            self.assertTrue(dv["mayBurst"])
            self.assertGreater(dv["burstBytesPerSec"], 0)
            ugdoc, dv = self.explain("default/bk")
            self.assertEqual(ugdoc["burstAnnotation"], "invalid")
            self.assertFalse(dv["mayBurst"])
            self.assertEqual(dv["burstBytesPerSec"], 0)
        # reconcile keeps the burst: it is the desired state, not drift
        n = d.text().count("reconcile pass")
        d.wait_log(r"(?s)(reconcile pass.*){%d}" % (n + 2))
        self.assertGreater(self.wbps(db), 200 * MIB)
        self.assertNotIn("limit drift", d.text())
        # the pod without a grant wants the disk: busy at its cap, it takes the
        # burst back at the next pass, and the db is at its grant exactly
        self.feed(ug, 1000)
        t0 = time.monotonic()
        wait_for(lambda: self.wbps(db) == 200 * MIB, 5, "the burst taken back", step=0.01)
        print("burst taken back %.0f ms after the pod without a grant got busy (pass interval %d ms)" % (
            (time.monotonic() - t0) * 1e3, self.interval_ms))
        self.assertEqual(read(os.path.join(db, "io.max")).strip(),
                         "250:0 rbps=209715200 wbps=209715200 riops=max wiops=max", "never below its grant")
        d.wait_log(r'granted pod burst ended cgroup=\S*%s disk=%s reason="pods without a grant or the lenders use '
                   r'the idle capacity"' % (re.escape(os.path.basename(db)), DISK), timeout=5)
        wait_for(lambda: self.wbps(ug) > pool / 2, 5, "the pod without a grant gets the rest")
        time.sleep(3 * self.interval_ms / 1000)
        self.assertEqual(self.wbps(db), 200 * MIB, "no burst while a pod without a grant is busy")
        self.assertEqual(d.metric("ioqos_ungranted_bursting_pods", disk=DISK), 0)
        self.assertEqual(d.metric("ioqos_ungranted_failures_total"), 0)

    def test_iops_grant_bursts_above_its_bandwidth_cap(self):
        # a grant of IOPS units alone is capped in bandwidth at the same share
        # of the disk (200 of 1000 IOPS units: 200 MiB/s); busy at that cap,
        # it bursts above it like a bandwidth grant; its IOPS, far from its
        # grant, get no extra
        d = self.start()
        self.env.kubelet.wait_list(IOPS, lambda l: len(l) == 1000)
        uid, ids, _, db = self.admit("db", iops=200, annotations={"ioqos.io/burst": "true"}, atomic=True)
        self.env.kubelet.prestart(IOPS, ids[IOPS])
        cap = 200 * MIB
        self.assertEqual(read(os.path.join(db, "io.max")).strip(),
                         "250:0 rbps=%d wbps=%d riops=20000 wiops=20000" % (cap, cap))
        ug = self.ungranted("burstable")
        set_io_stat(ug, DEV)
        self.wait_bounded([ug])
        self.feed(db, 200)
        wait_for(lambda: self.wbps(db) > cap * 1.05, 10, "the IOPS-only grant bursts in bandwidth")
        lim_db, lim_ug = self.limits([db, ug])
        self.assertEqual(lim_db["rbps"], lim_db["wbps"], lim_db)
        self.assertEqual((lim_db["riops"], lim_db["wiops"]), (20000, 20000), "no IOPS extra: it uses 100 IOPS")
        # no bandwidth units are held: the pool is the whole bandwidth
        self.assertLessEqual(lim_db["wbps"] - cap + lim_ug["wbps"], pool_bw(0), "within the pool")
        self.feed(ug, 2000)
        wait_for(lambda: self.wbps(db) == cap, 5, "the burst taken back")
        self.assertEqual(read(os.path.join(db, "io.max")).strip(),
                         "250:0 rbps=%d wbps=%d riops=20000 wiops=20000" % (cap, cap), "back to its cap exactly")
        self.assertEqual(d.metric("ioqos_ungranted_failures_total"), 0)

    def bursting_db(self):
        """A granted pod annotated to burst, busy at its 200 MiB/s grant, and
        bursting beside an idle pod without a grant; returns (daemon, cgroup)."""
        d = self.start()
        self.env.kubelet.wait_list(BW, lambda l: len(l) == 1000)
        uid, ids, _, db = self.admit("db", bw=200, annotations={"ioqos.io/burst": "true"}, atomic=True)
        self.env.kubelet.prestart(BW, ids[BW])
        ug = self.ungranted("burstable")
        set_io_stat(ug, DEV)
        self.feed(db, 200)
        wait_for(lambda: self.wbps(db) > 200 * MIB * 1.05, 10, "bursting")
        return d, db

    def test_burst_ends_when_the_disk_is_not_served(self):
        # the disk cannot be enforced any more (the io controller left the
        # root: its units turn Unhealthy): no pool to burst into, so the burst
        # goes at the next pass, not when the grant changes; served again,
        # the pod bursts again
        d, db = self.bursting_db()
        ctl = os.path.join(self.env.cgroup_root, "cgroup.controllers")
        before = read(ctl)
        write(ctl, "cpuset cpu memory pids\n")
        d.wait_log(r"disk health changed disk=%s healthy=false" % DISK, timeout=10)
        wait_for(lambda: self.wbps(db) == 200 * MIB, 5, "the burst ended")
        d.wait_log(r'granted pod burst ended cgroup=\S*%s disk=%s reason="the disk is not served now' % (
            re.escape(os.path.basename(db)), DISK), timeout=5)
        self.assertEqual(read(os.path.join(db, "io.max")).strip(),
                         "250:0 rbps=209715200 wbps=209715200 riops=max wiops=max")
        time.sleep(3 * self.interval_ms / 1000)
        self.assertEqual(self.wbps(db), 200 * MIB, "no burst while the disk is not served")
        self.assertEqual(d.metric("ioqos_ungranted_bursting_pods", disk=DISK), 0)
        write(ctl, before)
        d.wait_log(r"disk health changed disk=%s healthy=true" % DISK, timeout=10)
        wait_for(lambda: self.wbps(db) > 200 * MIB * 1.05, 10, "bursting again")

    def test_burst_cut_on_a_gone_disk_is_kept(self):
        # the device is gone: nothing can be written for it (the kernel drops
        # its lines anyway); the cut is kept as the pod's desired state, said
        # once, and when the device is back the grant alone is written first
        d, db = self.bursting_db()
        remove_fake_disk(self.env.sysfs_root, DISK, DEV)
        d.wait_log(r"disk health changed disk=%s healthy=false" % DISK, timeout=10)
        d.wait_log(r"ungranted bound not in place.*burst: no block device %s" % DEV, timeout=5)
        time.sleep(3 * self.interval_ms / 1000)
        n = len(re.findall(r"burst: no block device", d.text()))
        time.sleep(3 * self.interval_ms / 1000)
        self.assertEqual(len(re.findall(r"burst: no block device", d.text())), n, "the failed cut is not retried")
        seen = []

        def grant_then_burst():
            v = self.wbps(db)
            seen.append(v)
            return 200 * MIB in seen and v > 200 * MIB * 1.05
        fake_disk(self.env.sysfs_root, DISK, DEV)
        wait_for(grant_then_burst, 15, "the grant written when the disk is back, then the burst again", step=0.01)
        self.assertGreaterEqual(min(seen), 200 * MIB, "never below the grant")

    def test_restart_while_bursting_keeps_the_grant(self):
        d, db = self.bursting_db()
        self.assertEqual(d.terminate(), 0)
        self.assertGreater(self.wbps(db), 200 * MIB, "the burst in place when the plugin stopped")
        # the new process knows no burst: it writes the grant (never less),
        # then bursts again once it has measured the pod
        d2 = self.start()
        seen = []

        def watch():
            v = self.wbps(db)
            if v:
                seen.append(v)
            return len(seen) > 3 and v > 200 * MIB * 1.05 and min(seen) == 200 * MIB
        wait_for(watch, 15, "the grant written, then the burst again", step=0.01)
        self.assertGreaterEqual(min(seen), 200 * MIB, "never below the grant: %s" % sorted(set(seen))[:5])
        self.assertEqual(d2.metric("ioqos_ungranted_failures_total"), 0)

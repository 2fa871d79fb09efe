# SPDX-License-Identifier: Apache-2.0
"""The grant monitor (plugin/daemon/core/monitor.c, rule in grant/grantmon.h):
per granted pod and disk, rates from io.stat, the stall share from
io.pressure, the disk's delivery from /sys/class/block/DEV/stat; a pod
starved for monitor.starvedWindowSeconds gets IoqosGrantNotMet (at most one
per monitor.eventIntervalSeconds), IoqosGrantMet when it recovers; no Event
for an idle or at-cap pod, nor for a latency-bound pod below its grant on a
disk with room; the per-pod series exist only while the pod holds a grant.

The kernel's counters are played by a feeder thread that advances each
pod's io.stat and io.pressure and the fake disk's stat file at chosen rates
(files replaced at once with rename, as the kernel shows them)."""
import os
import threading
import time
import unittest

from harness import BW, MIB, PluginTest, write

DEV = "250:0"
DISK = "fakedisk0"
CAP_BW = 1000 * MIB  # the harness's fake disk, allocatableFraction 1.0
WINDOW = 3


def replace(path, text):
    tmp = path + ".tmp"
    write(tmp, text)
    os.rename(tmp, path)


class Feeder(threading.Thread):
    """Advances counters every `tick` s: per pod cgroup (rbps, wbps, riops,
    wiops, stall 0..1) and the disk (bps delivered to everyone, busy, queue)."""

    def __init__(self, sys_root, tick=0.1):
        super().__init__(daemon=True)
        self.tick = tick
        self.lock = threading.Lock()
        self.pods = {}  # cg -> [rate tuple, counters]
        self.disk_rate = (0.0, 0.0, 0.0)
        self.disk = [0.0] * 4  # sectors, ios, io_ticks ms, queue ms
        self.disk_path = os.path.join(sys_root, "class/block", DISK, "stat")
        self.stop_ev = threading.Event()
        self.disk_on = True

    def pod(self, cg, rbps=0.0, wbps=0.0, riops=0.0, wiops=0.0, stall=0.0):
        with self.lock:
            c = self.pods.get(cg, [None, [0.0] * 5])[1]
            self.pods[cg] = [(rbps, wbps, riops, wiops, stall), c]

    def drop(self, cg):
        with self.lock:
            self.pods.pop(cg, None)

    def set_disk(self, bps, busy=1.0, queue=1.0):
        with self.lock:
            self.disk_rate = (bps, busy, queue)

    def advance(self, dt):
        with self.lock:
            for cg, (rate, c) in list(self.pods.items()):
                for i in range(4):
                    c[i] += rate[i] * dt
                c[4] += rate[4] * dt * 1e6
                if not os.path.isdir(cg):
                    continue
                replace(os.path.join(cg, "io.stat"), "%s rbytes=%d wbytes=%d rios=%d wios=%d dbytes=0 dios=0\n"
                        % (DEV, c[0], c[1], c[2], c[3]))
                replace(os.path.join(cg, "io.pressure"),
                        "some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n"
                        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" % c[4])
            if not self.disk_on:
                return
            bps, busy, queue = self.disk_rate
            self.disk[0] += bps * dt / 512
            self.disk[1] += bps * dt / (1 << 20)
            self.disk[2] += busy * dt * 1000
            self.disk[3] += queue * dt * 1000
            replace(self.disk_path, "0 0 0 0 %d 0 %d 0 0 %d %d 0 0 0 0 0 0\n" % (
                self.disk[1], self.disk[0], self.disk[2], self.disk[3]))

    def run(self):
        # advance by the time that really passed: on a busy machine a tick
        # takes longer than `tick`, and the rates must stay what was set
        last = time.monotonic()
        while not self.stop_ev.wait(self.tick):
            now = time.monotonic()
            self.advance(now - last)
            last = now

    def stop(self):
        self.stop_ev.set()
        self.join()


class MonitorTest(PluginTest):
    env_args = {"extra_config": {"monitor": {"intervalSeconds": 1, "starvedWindowSeconds": WINDOW,
                                             "eventIntervalSeconds": 600}}}

    def setUp(self):
        super().setUp()
        self.feed = Feeder(self.env.sysfs_root)
        self.feed.advance(0)
        self.feed.start()
        self.addCleanup(self.feed.stop)

    def grant(self, name, bw):
        uid, ids, _, cg = self.admit(name, bw=bw, atomic=True)
        self.env.kubelet.prestart(BW, ids[BW])
        return uid, cg

    def pod_events(self, name, reason=None):
        return [e for e in self.env.api.events
                if e["involvedObject"]["kind"] == "Pod" and e["involvedObject"]["name"] == name
                and (reason is None or e["reason"] == reason)]

    def wait_verdict(self, d, pod, verdict, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if d.metric("ioqos_pod_grant_verdict", pod=pod, disk=DISK, verdict=verdict) == 1:
                return
            time.sleep(0.2)
        self.fail("pod %s never %s; log:\n%s" % (pod, verdict, d.text()[-3000:]))

    def test_starved_warns_once_recovers_and_rate_limits(self):
        d = self.start()
        _, starve_cg = self.grant("db", bw=100)
        _, idle_cg = self.grant("idle", bw=50)
        _, cap_cg = self.grant("backup", bw=50)
        _, lat_cg = self.grant("latency", bw=100)
        # disk with room (half its capacity): a latency-bound reader stalled
        # all the time below its grant is within, the backup at its cap
        self.feed.set_disk(500 * MIB, busy=1.0, queue=1.0)
        self.feed.pod(starve_cg, rbps=10 * MIB, riops=2560, stall=0.8)
        self.feed.pod(idle_cg)
        self.feed.pod(cap_cg, wbps=50 * MIB, wiops=50, stall=1.0)
        self.feed.pod(lat_cg, rbps=4 * MIB, riops=1000, stall=0.98)
        self.wait_verdict(d, "db", "within")
        self.wait_verdict(d, "idle", "idle")
        self.wait_verdict(d, "backup", "at-cap")
        self.wait_verdict(d, "latency", "within")
        self.assertAlmostEqual(d.metric("ioqos_pod_achieved_bytes_per_second", pod="db", direction="read")
                               / MIB, 10, delta=4)
        self.assertAlmostEqual(d.metric("ioqos_pod_io_stall_ratio", pod="db"), 0.8, delta=0.2)
        time.sleep(WINDOW + 1)
        self.assertEqual(self.env.api.events and [e for e in self.env.api.events
                                                  if e["reason"].startswith("IoqosGrant")], [])

        # an ungranted writer fills the disk: db and the latency-bound pod
        # starve; the backup stays at its cap, idle stays idle
        t0 = time.monotonic()
        self.feed.set_disk(990 * MIB, busy=1.0, queue=30.0)
        self.wait_verdict(d, "db", "starved")
        self.env.api.wait(lambda: self.pod_events("db", "IoqosGrantNotMet"), timeout=WINDOW + 10,
                          what="IoqosGrantNotMet on db")
        took = time.monotonic() - t0
        self.assertGreaterEqual(took, WINDOW - 0.5, "not before the window")
        ev = self.pod_events("db", "IoqosGrantNotMet")[0]
        self.assertEqual(ev["type"], "Warning")
        self.assertRegex(ev["message"], r"^grant not met on disk fakedisk0 for 3s: achieved read "
                         r"\d+\.\d MiB/s \d+ IOPS, write 0\.0 MiB/s 0 IOPS vs grant 100\.0 MiB/s, "
                         r"no IOPS grant per direction; I/O stall \d+% of the time; the disk delivered "
                         r"\d{3,4}\.\d MiB/s .* most likely cause: ungranted I/O")
        d.wait_log(r"grant not met pod=default/db disk=fakedisk0 verdict=starved window=3s .*"
                   r"cause=ungranted event=posted")
        self.env.api.wait(lambda: self.pod_events("latency", "IoqosGrantNotMet"), timeout=10,
                          what="IoqosGrantNotMet on the latency-bound pod too")
        time.sleep(WINDOW + 1)  # still starved: no second Warning for the same stretch
        self.assertEqual(len(self.pod_events("db", "IoqosGrantNotMet")), 1)
        self.assertEqual(self.pod_events("idle"), [])
        self.assertEqual(self.pod_events("backup"), [])

        # the writer stops: recovered
        self.feed.set_disk(500 * MIB, busy=1.0, queue=1.0)
        self.env.api.wait(lambda: self.pod_events("db", "IoqosGrantMet"), timeout=10,
                          what="IoqosGrantMet on db")
        ev = self.pod_events("db", "IoqosGrantMet")[0]
        self.assertEqual(ev["type"], "Normal")
        self.assertIn("grant met again on disk fakedisk0", ev["message"])
        d.wait_log(r"grant recovered pod=default/db disk=fakedisk0 verdict=within")

        # starved again within eventIntervalSeconds: logged, not posted
        self.feed.set_disk(990 * MIB, busy=1.0, queue=30.0)
        d.wait_log(r"grant not met pod=default/db .*event=rate-limited", timeout=WINDOW + 10)
        self.assertEqual(len(self.pod_events("db", "IoqosGrantNotMet")), 1)
        self.assertGreaterEqual(d.metric("ioqos_monitor_events_suppressed_total",
                                         reason="IoqosGrantNotMet"), 1)
        self.assertGreaterEqual(d.metric("ioqos_monitor_events_total", reason="IoqosGrantNotMet"), 2)
        # ... and no IoqosGrantMet follows a Warning that was not posted
        self.feed.set_disk(500 * MIB, busy=1.0, queue=1.0)
        d.wait_log(r"grant recovered pod=default/db", timeout=10)
        time.sleep(1.5)
        self.assertEqual(len(self.pod_events("db", "IoqosGrantMet")), 1)
        self.assertEqual(self.pod_events("idle"), [])
        self.assertEqual(self.pod_events("backup"), [])

        # per-disk series and the cost of the passes
        # (rates from files a python thread advances: on a loaded machine an
        # interval can hold a third more or less than a second of them)
        self.assertAlmostEqual(d.metric("ioqos_disk_io_bytes_per_second", disk=DISK) / MIB, 500, delta=200)
        self.assertGreater(d.metric("ioqos_disk_grant_verdict_seconds_total", disk=DISK, verdict="starved"), 0)
        self.assertGreater(d.metric("ioqos_monitor_passes_total"), 5)
        self.assertIsNotNone(d.metric("ioqos_monitor_cpu_seconds_total"))

        # the backup goes: its series go with it
        self.assertIsNotNone(d.metric("ioqos_pod_achieved_bytes_per_second", pod="backup", direction="write"))
        self.env.kubelet.remove_pod("default", "backup")
        self.env.api.delete("Pod", "default", "backup")
        d.wait_log(r"pod gone, .* pod=default/backup")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and d.metric("ioqos_pod_grant_verdict", pod="backup",
                                                       verdict="at-cap") is not None:
            time.sleep(0.2)
        for fam in ("ioqos_pod_grant_verdict", "ioqos_pod_achieved_bytes_per_second",
                    "ioqos_pod_achieved_iops", "ioqos_pod_io_stall_ratio"):
            self.assertIsNone(d.metric(fam, pod="backup"), fam)
        self.assertEqual(d.metric("ioqos_monitor_pods"), 3)

    def test_disk_under_delivers_warns_the_node(self):
        """Granted pods starve on a disk that is backlogged (busy, 30 requests
        in flight) at 300 of its 1000 MiB/s with nobody else on it: the
        capacity is too high. The pods' Warnings name it, the Node gets
        IoqosDiskUnderDelivers with the calibration command."""
        d = self.start()
        _, a = self.grant("db", bw=400)
        _, b = self.grant("backup", bw=400)
        self.feed.set_disk(300 * MIB, busy=1.0, queue=30.0)
        self.feed.pod(a, rbps=100 * MIB, riops=25600, stall=0.9)
        self.feed.pod(b, wbps=200 * MIB, wiops=200, stall=0.0)  # async writer: no stall, busy
        self.env.api.wait(lambda: [e for e in self.env.api.events if e["reason"] == "IoqosDiskUnderDelivers"],
                          timeout=WINDOW + 10, what="IoqosDiskUnderDelivers on the node")
        ev = [e for e in self.env.api.events if e["reason"] == "IoqosDiskUnderDelivers"][0]
        self.assertEqual(ev["involvedObject"]["kind"], "Node")
        self.assertEqual(ev["type"], "Warning")
        self.assertIn("ioqosctl calibrate --disk fakedisk0", ev["message"])
        self.assertIn("capacity is probably too high", ev["message"])
        self.env.api.wait(lambda: self.pod_events("backup", "IoqosGrantNotMet"), timeout=5,
                          what="IoqosGrantNotMet on the async writer")
        for name in ("db", "backup"):
            self.assertIn("most likely cause: capacity too high", self.pod_events(name, "IoqosGrantNotMet")[0]["message"])
        d.wait_log(r"disk under-delivers disk=fakedisk0 window=3s")
        self.assertEqual(d.metric("ioqos_monitor_events_total", reason="IoqosDiskUnderDelivers"), 1)

    def test_counter_reset_and_missing_stat(self):
        """A re-created cgroup (counters back to 0) and a disk without a stat
        file give unknown intervals, never a false Event; measuring resumes."""
        d = self.start()
        _, cg = self.grant("db", bw=100)
        self.feed.set_disk(990 * MIB, queue=30.0)
        self.feed.pod(cg, rbps=50 * MIB, riops=100, stall=0.5)
        self.wait_verdict(d, "db", "starved")
        # counters reset: one unknown interval, then starved again
        with self.feed.lock:
            self.feed.pods[cg][1] = [0.0] * 5
        d.wait_log(r"went backwards", timeout=5)
        self.wait_verdict(d, "db", "starved")
        # the disk's stat file disappears: no disk evidence, no starvation
        with self.feed.lock:
            self.feed.disk_on = False
            os.unlink(self.feed.disk_path)
        d.wait_log(r"grant monitor: disk fakedisk0 not measured: .*stat")
        self.wait_verdict(d, "db", "within")
        self.assertIsNone(d.metric("ioqos_disk_io_bytes_per_second", disk=DISK))

if __name__ == "__main__":
    unittest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The isolation scenario, run as root inside the cgroup v2 VM (tests/bench/run.sh
starts it with tests/e2e/vm-run; it refuses to run anywhere else).

One VM = one device kind: a managed disk (the one ioqos-plugin advertises) and a
control disk with twice its throttle. For every case (a db workload next to a
backup workload) it runs rounds of stages in rotated order:

  solo          db alone
  contended     db + backup, no QoS
  weight        db io.weight 500, backup 10, iocost enabled on the disk with a 5 ms
                latency target (the published method), written with `ioqosctl apply`
  weight-plain  the same weights without enabling iocost (the published form as
                written; the kernel refuses per-device weights then, the writer falls
                back to the cgroup-wide default, which does nothing without iocost)
  ioqos         grants through the real ioqos-plugin, driven the way kubelet does
                (pod object, GetPreferredAllocation, Allocate, pod resources entry,
                pod cgroup, PreStartContainer, then the container)
  ioqos+pace    the ioqos stage with iocost pacing the whole disk: io.cost.model
                (ctrl=user, linear) at --pace x the disk's capacity (auto: the plugin's
                rule, allocatable fraction + pool of pods without a grant) and io.cost.qos with
                vrate pinned (min=max=100) and a short period (--pace-lat-us): iocost
                then issues the backup's throttled bursts no faster than its weight's
                share of that rate (issue 18, token-bucket disks)
  control       the ioqos stage's limits (written with `ioqosctl apply`) on the
                control disk: the same jobs with the disk never the bottleneck, so
                the db's IOPS there is what the harness (TCG, 2 cores) allows
  ioqos+1u      the ioqos stage plus one pod WITHOUT a grant (Burstable, the
                backup's writer, direct): pod object (no ioqos resources, never
                through Allocate/PreStart), pod cgroup, a sandbox delay, then its
                container; the plugin's ungranted-pod bounds are what holds it
  ioqos+4u      the same with 4 ungranted pods: 2 BestEffort (buffered writers on
                a filesystem disk, else direct) and 2 Burstable (direct)
  neighbours    db and backup granted but idle (no container started), the 4
                ungranted pods of ioqos+4u writing: what pods without a grant get
                (their aggregate against the pool: headroomShare x what the disk does not advertise
                + unheld units, + what the idle grants lend: nodePolicy.ungranted.lend)
  wake-up       the pod of ioqos+1u starts while db and backup are granted but idle and
                writes until the plugin lends it their grants (ioqos_ungranted_lent_* > 0;
                its rate then is the idle-grants figure); then the backup starts, and 2 s
                after its first write the db: the plugin's "ungranted pool cut ...
                reclaim_ms=N" lines say how fast the lent part came back, the db's start
                is timed (wake_transient), and its window is measured as in ioqos+1u
  ioqos+burst   ioqos with the backup annotated ioqos.io/burst "true" (the plugin's
                nodePolicy.ungranted.burst annotated): it starts first, with the db
                granted but idle, and bursts above its grant into what the db lends
                and the pool; then the db starts and the plugin takes the burst back
                (the db's start timed as in wake-up)
  control+1u, control+4u  (optional) the control stage plus the pods of
                ioqos+1u / ioqos+4u, each held at pool/N by `ioqosctl apply`:
                the harness ceiling with those writers' CPU cost under TCG

Each "container" is a fio process started in a container cgroup below its pod
cgroup (kubelet's systemd-driver names). fio's JSON is parsed for the db; the
backup's bandwidth is the pod cgroup's io.stat slope over the db's measured
window (the only honest measure for buffered writes, whose writeback is what
io.max throttles). Results are raw per-run numbers in a JSON file; report.py
turns them into medians, ratios and the table. Nothing here compares a number
with a target.
"""
import argparse
import json
import math
import os
import platform
import shutil
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

sys.dont_write_bytecode = True  # tests/plugin is imported from the shared repository
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CG = "/sys/fs/cgroup"
KUBEPODS = "kubepods.slice"
BURSTABLE = KUBEPODS + "/kubepods-burstable.slice"
BESTEFFORT = KUBEPODS + "/kubepods-besteffort.slice"
NS = "bench"
MIB = 1024 * 1024
IOPS_UNIT = 100  # default unit sizes (config "units" left at defaults)
BW_UNIT = MIB

# db workloads: name -> (fio rw, iodepth). "wal": a write-ahead log, 4k
# sequential buffered writes with fdatasync after each (a commit), on the db's
# file of a filesystem disk: the shape that meets other pods' dirty pages in the
# filesystem's journal and writeback (issue 27); its IOPS are commits per second
DB_WORKLOADS = {
    "randread-qd1": ("randread", 1),
    "randread-qd16": ("randread", 16),
    "randwrite-qd1": ("randwrite", 1),
    "randwrite-qd16": ("randwrite", 16),
    "wal-fsync": ("wal", 1),
}
BACKUP_MODES = ("direct", "buffered")
ALL_STAGES = ("solo", "contended", "weight", "weight-plain", "ioqos", "ioqos+pace", "control",
              "ioqos+1u", "ioqos+4u", "neighbours", "wake-up", "ioqos+burst", "control+1u", "control+4u",
              "ioqos+host")
CONTROL_STAGES = ("control", "control+1u", "control+4u")
BACKUP_JOBS = 4
# stages whose db and backup are granted through the plugin
GRANTED_STAGES = ("ioqos", "ioqos+pace", "ioqos+1u", "ioqos+4u", "neighbours", "wake-up", "ioqos+burst",
                  "ioqos+host")
# the opt-in burst (nodePolicy.ungranted.burst annotated): the backup annotated
# ioqos.io/burst "true" starts first with the db granted but idle, and bursts
# into its lent grant and the pool; then the db starts and takes it back
BURST_STAGE = "ioqos+burst"
# the stage built to break the grants: the ioqos stage plus a direct writer in
# a cgroup outside kubepods (a host process: no pod, so no bound of the
# plugin's node policy holds it); the grant monitor must say so
HOST_STAGE = "ioqos+host"
HOST_CG = "ioqos-bench-host"
MONITOR_REASONS = ("IoqosGrantNotMet", "IoqosGrantMet", "IoqosDiskUnderDelivers")
# stages with pods WITHOUT a grant next to them: (QoS class, writes) per pod;
# "buffered" falls back to direct on a disk without a filesystem (see BACKUP_MODES)
NEIGHBOUR_STAGES = {
    "ioqos+1u": (("Burstable", "direct"),),
    "ioqos+4u": (("BestEffort", "buffered"), ("BestEffort", "buffered"),
                 ("Burstable", "direct"), ("Burstable", "direct")),
    "neighbours": (("BestEffort", "buffered"), ("BestEffort", "buffered"),
                   ("Burstable", "direct"), ("Burstable", "direct")),
}
# the harness ceiling with those pods: on the control disk, each held at an
# equal share of the pool (written with `ioqosctl apply`)
NEIGHBOUR_STAGES["wake-up"] = NEIGHBOUR_STAGES["ioqos+1u"]
NEIGHBOUR_STAGES["control+1u"] = NEIGHBOUR_STAGES["ioqos+1u"]
NEIGHBOUR_STAGES["control+4u"] = NEIGHBOUR_STAGES["ioqos+4u"]
NEIGHBOURS_MAX = max(len(v) for v in NEIGHBOUR_STAGES.values())
NEIGHBOUR_FILE_MIB = 64  # per writer job, on a filesystem disk (4 jobs per pod)
NEIGHBOUR_REGION_MIB = 128  # per writer job on a raw disk, from 6 GiB on

# The weight-only stage: the published weights, and iocost with a 5 ms latency
# target (p95). min/max are left at the kernel's defaults so vrate can follow
# the latency target.
WEIGHT_DB, WEIGHT_BACKUP = 500, 10
IOCOST_QOS = "enable=1 ctrl=user rpct=95.00 rlat=5000 wpct=95.00 wlat=5000"


def log(msg):
    print(msg, flush=True)


def read(path):
    with open(path) as f:
        return f.read()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def quantity(q):
    """A Kubernetes quantity of whole units as the API server writes them
    ("1k", "800", "2M") -> int."""
    mult = {"k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9}
    return int(q[:-1]) * mult[q[-1]] if q and q[-1] in mult else int(q)


def si(n):
    """9800 -> '9.8k'"""
    return "%.1fk" % (n / 1000.0) if n >= 1000 else "%.0f" % n


# ---------------------------------------------------------------- cgroups --

def iostat(cgdir, devno):
    """(rbytes, wbytes, rios, wios) of a cgroup on one disk; zeros if no line."""
    try:
        text = read(os.path.join(cgdir, "io.stat"))
    except OSError:
        return (0, 0, 0, 0)
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == devno:
            kv = dict(x.split("=", 1) for x in f[1:])
            return tuple(int(kv.get(k, 0)) for k in ("rbytes", "wbytes", "rios", "wios"))
    return (0, 0, 0, 0)


def iostat_line(cgdir, devno):
    """The whole io.stat line of a cgroup on one disk ("" if none)."""
    try:
        text = read(os.path.join(cgdir, "io.stat"))
    except OSError:
        return ""
    return next((l for l in text.splitlines() if l.split()[:1] == [devno]), "")


def iomax_line(cgdir, devno):
    for line in read(os.path.join(cgdir, "io.max")).splitlines():
        if line.split()[:1] == [devno]:
            return line.strip()
    return ""


def iomax_field(line, key):
    """wbps etc. of an io.max line: an int, None for 'max' or no line."""
    for kv in line.split()[1:]:
        k, _, v = kv.partition("=")
        if k == key:
            return None if v == "max" else int(v)
    return None


def enable_controllers(path):
    sc = os.path.join(path, "cgroup.subtree_control")
    have = read(sc).split()
    want = [c for c in ("io", "memory") if c not in have]
    if want:
        write(sc, " ".join("+" + c for c in want))


def mkcg(rel):
    """Creates CG/rel, enabling io and memory on every ancestor on the way."""
    p = CG
    for part in rel.strip("/").split("/"):
        enable_controllers(p)
        p = os.path.join(p, part)
        if not os.path.isdir(p):
            os.mkdir(p)
    return p


def rmcg(path):
    """Moves every process out of a cgroup tree (to the root) and removes it."""
    if not os.path.isdir(path):
        return
    for dirpath, _, _ in sorted(os.walk(path), key=lambda t: -t[0].count("/")):
        for _ in range(50):
            pids = read(os.path.join(dirpath, "cgroup.procs")).split()
            for pid in pids:
                try:
                    write(os.path.join(CG, "cgroup.procs"), pid)
                except OSError:
                    pass
            try:
                os.rmdir(dirpath)
                break
            except OSError:
                time.sleep(0.1)


class Pod:
    """A pod as kubelet (systemd driver) lays it out: the pod slice, created
    before any container starts, and one container scope per container."""

    def __init__(self, name, uid=None, qos="Burstable"):
        self.name = name
        self.qos = qos
        self.uid = uid or str(uuid.uuid4())
        u = self.uid.replace("-", "_")
        if qos == "Burstable":
            self.rel = "%s/kubepods-burstable-pod%s.slice" % (BURSTABLE, u)
        elif qos == "BestEffort":
            self.rel = "%s/kubepods-besteffort-pod%s.slice" % (BESTEFFORT, u)
        else:  # Guaranteed pods sit directly in kubepods
            self.rel = "%s/kubepods-pod%s.slice" % (KUBEPODS, u)
        self.dir = os.path.join(CG, self.rel)
        self.container = None

    def create(self):
        mkcg(self.rel)
        enable_controllers(self.dir)
        return self

    def container_dir(self):
        self.container = os.path.join(self.dir, "cri-containerd-%s.scope" % uuid.uuid4().hex)
        os.mkdir(self.container)
        return self.container

    def remove(self):
        rmcg(self.dir)


def spawn_in(cgdir, argv, stdout):
    """Starts argv as a process that enters cgdir before it execs (a container)."""
    return subprocess.Popen(["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgdir] + argv,
                            stdout=stdout, stderr=subprocess.STDOUT)


def cpu_jiffies():
    """(busy, total) jiffies of every CPU together, from /proc/stat's first line:
    the guest's CPU over a stage, which under TCG is what the db competes for."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    return sum(v) - idle, sum(v)


def meminfo_dirty():
    """(Dirty, Writeback) of /proc/meminfo in KiB; (None, None) if unreadable."""
    d = w = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("Dirty:"):
                    d = int(line.split()[1])
                elif line.startswith("Writeback:"):
                    w = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return d, w


# src/grant/ungranted.h: a lender keeps max(lendReserve x grant,
# IOQ_UG_LEND_HEADROOM (2.0) x its rate over the pass it lent at); 20 % less
# here for the offset between the plugin's pass and this sampler's windows
LEND_HEADROOM_SEEN = 1.6


WAKE_SAMPLE_S = 0.05  # io.stat sampling of the wake-up stage: the db's transient
WAKE_WINDOW_S = 0.2   # the db's rate is judged over this sliding window
# stages whose db start is timed (wake_transient): wake-up, and ioqos+1u, the
# same pods with nothing lent, as its reference
WAKE_STAGES = ("wake-up", "ioqos+1u", BURST_STAGE)


def wake_transient(samp, key, t_end, level=0.9):
    """The db's wake-up transient from the Sampler's io.stat samples of its
    cgroup: its first I/O (the last sample before its I/O count moved), its
    steady rate (I/Os per second over the second half of its run, when
    nothing is lent any more: the ioqos+1u situation) and the time from its
    first I/O until a WAKE_WINDOW_S window first runs at >= level x that rate.
    None if it did too little to tell."""
    ios = [(x[0], x[3] + x[4]) for x in samp.samples.get(key, [])]  # reads + writes
    if len(ios) < 4:
        return None
    t0 = next((a[0] for a, b in zip(ios, ios[1:]) if b[1] > a[1]), None)
    if t0 is None:
        return None
    t_mid = t0 + (t_end - t0) / 2.0
    late = [(t, n) for t, n in ios if t_mid <= t <= t_end]
    if len(late) < 2 or late[-1][0] <= late[0][0]:
        return None
    steady = (late[-1][1] - late[0][1]) / (late[-1][0] - late[0][0])
    if steady <= 0:
        return None
    for i, (t, n) in enumerate(ios):
        if t < t0:
            continue
        j = next((k for k in range(i + 1, len(ios)) if ios[k][0] - t >= WAKE_WINDOW_S), None)
        if j is None:
            break
        if (ios[j][1] - n) / (ios[j][0] - t) >= level * steady:
            return {"to_level_ms": max(0.0, (ios[j][0] - t0) * 1000.0), "steady_iops": steady,
                    "first_io_s": t0, "level": level}
    return {"to_level_ms": None, "steady_iops": steady, "first_io_s": t0, "level": level}


def lent_beyond_rule(samp, lent_seen, lenders, t_start):
    """What the plugin lent while the db ran, against what the lending rule
    allows: each lender lends at most grant - headroom x its rate of the pass
    it lent at, a pass within the 4 s before the gauge was read (two quiet
    passes, the scrape's delay); so never the grant of a pod writing at half
    of it or more, whatever the machine's load makes of the pods' rates.
    Returns the worst sample: lent - allowed (<= 0: within the rule)."""
    worst = None
    for t, lent in lent_seen:
        allowed = sum(max(0.0, grant - LEND_HEADROOM_SEEN * (samp.min_rate(k, t - 4.0, t) or 0.0))
                      for k, grant in lenders)
        if worst is None or lent - allowed > worst["bytes"]:
            worst = {"bytes": lent - allowed, "lent_bytes": lent, "allowed_bytes": allowed,
                     "at_s": round(t - t_start, 1)}
    return worst


class Sampler(threading.Thread):
    """io.stat of some cgroups on one disk, every `interval` seconds."""

    def __init__(self, cgdirs, devno, interval=0.2, caps=()):
        super().__init__(daemon=True)
        self.cgdirs, self.devno, self.interval = cgdirs, devno, interval
        self.samples = {k: [] for k in cgdirs}
        # io.max wbps of the cgroups in `caps` (pods without a grant: their
        # bound moves as the plugin re-splits the pool)
        self.caps = {k: [] for k in caps}
        # /proc/meminfo Dirty and Writeback (KiB): what buffered writers have
        # waiting for the disk, node-wide
        self.mem = []
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            t = time.monotonic()
            for k, d in self.cgdirs.items():
                self.samples[k].append((t,) + iostat(d, self.devno))
            self.mem.append((t,) + meminfo_dirty())
            for k in self.caps:
                try:
                    line = iomax_line(self.cgdirs[k], self.devno)
                except OSError:
                    line = ""
                self.caps[k].append((t, iomax_field(line, "wbps")))
            self.halt.wait(self.interval)

    def mem_stats(self, t0, t1):
        """Dirty and Writeback (MiB) over [t0, t1]: max and mean."""
        xs = [(d, w) for t, d, w in self.mem if t0 <= t <= t1 and d is not None]
        if not xs:
            return None
        n = float(len(xs))
        return {"dirty_max_mib": max(d for d, _ in xs) / 1024.0, "dirty_mean_mib": sum(d for d, _ in xs) / n / 1024.0,
                "writeback_max_mib": max(w for _, w in xs) / 1024.0,
                "writeback_mean_mib": sum(w for _, w in xs) / n / 1024.0}

    def cap_mean(self, key, t0, t1):
        """Mean io.max wbps sampled in [t0, t1] (None: no bound seen there)."""
        xs = [c for t, c in self.caps.get(key, []) if t0 <= t <= t1]
        if not xs or any(c is None for c in xs):
            return None
        return sum(xs) / len(xs)

    def caps_sum_max(self, t0, t1):
        """The largest sum of the sampled caps at one sampling instant in [t0, t1]."""
        best = None
        keys = list(self.caps)
        if not keys:
            return None
        for i in range(min(len(self.caps[k]) for k in keys)):
            t = self.caps[keys[0]][i][0]
            if not t0 <= t <= t1:
                continue
            vals = [self.caps[k][i][1] for k in keys]
            if any(v is None for v in vals):
                continue
            best = max(best or 0, sum(vals))
        return best

    def stop(self):
        if self.halt.is_set():
            return
        self.halt.set()
        self.join()
        t = time.monotonic()
        for k, d in self.cgdirs.items():
            self.samples[k].append((t,) + iostat(d, self.devno))

    def at(self, key, t, field):
        """Counter `field` (1=rbytes 2=wbytes 3=rios 4=wios) at time t, interpolated."""
        s = self.samples[key]
        if not s:
            return 0
        if t <= s[0][0]:
            return s[0][field]
        for a, b in zip(s, s[1:]):
            if a[0] <= t <= b[0]:
                if b[0] == a[0]:
                    return b[field]
                return a[field] + (b[field] - a[field]) * (t - a[0]) / (b[0] - a[0])
        return s[-1][field]

    def min_rate(self, key, t0, t1, win=1.0):
        """The lowest rate (bytes/s, the larger of read and write) of any
        win-second window in [t0, t1], interpolated; None if [t0, t1] is shorter."""
        best, t = None, t0
        while t + win <= t1 + 1e-9:
            r = max(self.at(key, t + win, f) - self.at(key, t, f) for f in (1, 2)) / win
            best = r if best is None else min(best, r)
            t += self.interval
        return best

    def last_change(self, key, field):
        """Time of the first sample after the counter's last increase: when the
        cgroup's I/O (of that kind) ended, to the sampling interval."""
        s = self.samples[key]
        for a, b in zip(reversed(s[:-1]), reversed(s)):
            if b[field] > a[field]:
                return b[0]
        return s[-1][0] if s else 0.0

    def first_change(self, key, field):
        """Time of the last sample before the counter first moved."""
        s = self.samples[key]
        for a, b in zip(s, s[1:]):
            if b[field] > a[field]:
                return a[0]
        return s[0][0] if s else 0.0

    def rate(self, key, t0, t1, field):
        return (self.at(key, t1, field) - self.at(key, t0, field)) / (t1 - t0) if t1 > t0 else 0.0


# ------------------------------------------------------------------- disks --

class Disk:
    def __init__(self, dev, mount):
        self.dev = os.path.realpath(dev)
        self.name = os.path.basename(self.dev)
        self.devno = read("/sys/block/%s/dev" % self.name).strip()
        self.mount = mount

    def db_target(self):
        if self.mount:
            return ["--filename=%s/db.dat" % self.mount, "--size=512M"]
        return ["--filename=%s" % self.dev, "--offset=0", "--size=1G"]

    def backup_file(self, k):
        """Where backup job k writes: its own file, or its own 1 GiB region."""
        if self.mount:
            return ["--filename=%s/backup.%d" % (self.mount, k), "--size=256M"]
        return ["--filename=%s" % self.dev, "--offset=%dG" % (2 + k), "--size=1G"]

    def neighbour_file(self, n, k):
        """Where writer job k of ungranted pod n writes: its own (smaller) file,
        or its own region above the db's and the backup's."""
        if self.mount:
            return ["--filename=%s/nb%d.%d" % (self.mount, n, k), "--size=%dM" % NEIGHBOUR_FILE_MIB]
        return ["--filename=%s" % self.dev,
                "--offset=%dM" % (6 * 1024 + (n * BACKUP_JOBS + k) * NEIGHBOUR_REGION_MIB),
                "--size=%dM" % NEIGHBOUR_REGION_MIB]

    def layout(self, cgdir, neighbours=0):
        """Writes the db and backup files once (a filesystem disk), so reads hit
        written blocks and writes overwrite allocated ones; also the files of
        `neighbours` ungranted pods."""
        if not self.mount:
            return
        argv = ["fio", "--rw=write", "--bs=1M", "--direct=1", "--ioengine=libaio", "--iodepth=8",
                "--output-format=json", "--output=/dev/null", "--name=layout-db"] + self.db_target()
        for k in range(BACKUP_JOBS):
            argv += ["--name=layout-backup%d" % k] + self.backup_file(k)
        for n in range(neighbours):
            for k in range(BACKUP_JOBS):
                argv += ["--name=layout-nb%d.%d" % (n, k)] + self.neighbour_file(n, k)
        p = spawn_in(cgdir, argv, subprocess.DEVNULL)
        if p.wait() != 0:
            raise RuntimeError("fio layout failed on %s" % self.dev)
        subprocess.run(["sync"], check=True)


def settle():
    """Between runs: write back what is dirty and drop the page cache and the
    unused inodes. Cgroup writeback charges an inode's writeback to the cgroup
    that owns the inode, and a removed pod's inodes pass to its parent, so a
    backup rewriting files of an earlier stage would be charged to (and limited
    as) someone else until the kernel switches the owner; evicted inodes start
    afresh with the next writer."""
    subprocess.run(["sync"])
    write("/proc/sys/vm/drop_caches", "3")


def iocost_set(disk, line, file="io.cost.qos"):
    """Writes the disk's line of a root iocost file (io.cost.qos or
    io.cost.model); returns what the kernel then holds for it."""
    path = os.path.join(CG, file)
    write(path, "%s %s" % (disk.devno, line))
    for l in read(path).splitlines():
        if l.split()[:1] == [disk.devno]:
            return l.strip()
    return ""


def iocost_pace(a, disk):
    """iocost as a pacer of the whole disk: its cost model says the disk does
    pace x capacity, vrate pinned at 100 %, a period of 2 x the latency target."""
    bw, iops = int(a.pace_value * a.capacity_bw), int(a.pace_value * a.capacity_iops)
    model = iocost_set(disk, "ctrl=user model=linear rbps=%d rseqiops=%d rrandiops=%d wbps=%d wseqiops=%d "
                       "wrandiops=%d" % (bw, iops, iops, bw, iops, iops), file="io.cost.model")
    qos = iocost_set(disk, "enable=1 ctrl=user rpct=95.00 rlat=%d wpct=95.00 wlat=%d min=100.00 max=100.00"
                     % (a.pace_lat_us, a.pace_lat_us))
    return model, qos


# ------------------------------------------------------------------ plugin --

class Cluster:
    """The real ioqos-plugin against the kubelet stand-in of tests/plugin and
    the API server stand-in of tests/support, set up by tests/plugin/harness.py
    (python3-grpcio over unix sockets; the daemon's libcurl client talks to the
    API stand-in), on the VM's real cgroup v2 root and sysfs."""

    def __init__(self, args, disk):
        self.start(args, disk, args.fraction, args.reconcile, "info", args.plugin_log)

    def plugin_config(self, args, disk):
        """The plugin's config beyond the Env's defaults (a subclass's scenario
        overrides it)."""
        extra = {"allocatableFraction": self.fraction,
                 # the grant monitor: a short window, every Event posted
                 "monitor": {"intervalSeconds": 1, "starvedWindowSeconds": args.monitor_window,
                             "eventIntervalSeconds": 0}}
        # bounds for pods without a grant (node policy; the plugin's default is
        # on): written explicitly when asked for or when a stage has such pods
        if args.ungranted != "default":
            extra["nodePolicy"] = {"ungranted": {"enable": args.ungranted == "on"}}
            if args.headroom_share != 0.5:  # the plugin's default
                extra["nodePolicy"]["ungranted"]["headroomShare"] = args.headroom_share
        if args.page_cache_bytes >= 0:
            # the page cache bound of pods without a grant (memory.high)
            ug = extra.setdefault("nodePolicy", {}).setdefault("ungranted", {})
            ug["pageCacheBytes"] = args.page_cache_bytes
        if BURST_STAGE in args.stage_list and args.ungranted != "off":
            # only the burst stage annotates a pod: the other stages are as before
            ug = extra.setdefault("nodePolicy", {}).setdefault("ungranted", {})
            ug["burst"] = "annotated"
        if args.plugin_pace:
            # the token-bucket recipe as deployed (docs/enforcement.md): the plugin
            # itself writes iocost's model at the pace, for every stage of this VM
            extra.setdefault("nodePolicy", {})["iocost"] = {"enable": True, "ctrl": "user",
                                                            "pace": args.plugin_pace}
        if args.ungranted_pool:
            # a fixed pool for the pods without a grant (devices[].ungrantedPool)
            extra["devices"] = [{"select": disk.dev,
                                 "capacity": {"bandwidthBytesPerSec": self.cap_bw, "iops": self.cap_iops},
                                 "ungrantedPool": {"bandwidthBytesPerSec": args.ungranted_pool}}]
        return extra

    def start(self, args, disk, fraction, reconcile_s, log_level, plugin_log):
        """Starts the plugin with plugin_config() and waits for its units."""
        self.make_env(args, disk, fraction, reconcile_s, plugin_log)
        self.start_daemon(log_level)

    def make_env(self, args, disk, fraction, reconcile_s, plugin_log):
        """The kubelet and API server stand-ins and the plugin's config."""
        os.environ["IOQOS_PLUGIN_BIN"] = args.plugin
        os.environ["IOQOS_PROTO_PY_DIR"] = args.proto_py
        sys.path.insert(0, args.proto_py)
        sys.path.insert(0, os.path.join(REPO, "tests", "plugin"))
        import harness  # noqa: E402  (tests/plugin: Env, Daemon, pod_object)
        self.h = harness
        self.disk = disk
        self.cap_bw, self.cap_iops, self.fraction = args.capacity_bw, args.capacity_iops, fraction
        extra = self.plugin_config(args, disk)
        self.config_extra = extra
        self.args_plugin_log = plugin_log
        self.env = harness.Env(
            bw_bytes=self.cap_bw, iops=self.cap_iops, disks=(), cgroup_root=CG, sysfs_root="/sys",
            kubelet_cgroup_root="/", driver="systemd", device_selects=[disk.dev],
            reconcile_s=reconcile_s, extra_config=extra)
        self.kubelet, self.api = self.env.kubelet, self.env.api

    def start_daemon(self, log_level):
        """The device-plugin mode: registered, its units listed."""
        harness = self.h
        self.daemon = self.env.start_daemon(extra=["--log-level", log_level])
        self.kubelet.wait_registered(harness.BW, timeout=60)
        self.kubelet.wait_registered(harness.IOPS, timeout=60)
        self.daemon.wait_ready(timeout=60)
        self.units = {}
        for res in (harness.BW, harness.IOPS):
            lst = self.kubelet.wait_list(res, lambda l: len(l) > 0, timeout=60)
            self.units[res] = [i for i, h in lst if h == "Healthy"]

    def allocatable(self, res):
        return len(self.units[res])

    def admit(self, pod, bw, iops, annotations=None):
        """Admission as kubelet does it, up to (not including) the pod cgroup:
        the pod object, then per resource GetPreferredAllocation + Allocate,
        then the pod resources entry. Returns ({res: ids}, allocate envs)."""
        h, k = self.h, self.kubelet
        self.api.put_pod(h.pod_object(pod.name, pod.uid, bw=bw, iops=iops, ns=NS,
                                      qos="Burstable", annotations=annotations))
        ids, envs = {}, {}
        for res, n in ((h.BW, bw), (h.IOPS, iops)):
            if not n:
                continue
            taken = set(i for _, _, c in k.pod_resources for r in c.values() for i in r.get(res, []))
            avail = [i for i in self.units[res] if i not in taken]
            pref = k.preferred(res, avail, size=n)
            chosen = list(pref.container_responses[0].deviceIDs)
            if len(chosen) != n:
                raise RuntimeError("GetPreferredAllocation gave %d of %d %s units" % (len(chosen), n, res))
            a = k.allocate(res, chosen)
            ids[res] = chosen
            envs.update(dict(a.container_responses[0].envs))
        k.set_pod(NS, pod.name, {"app": ids})
        return ids, envs

    def prestart(self, ids):
        for res, lst in ids.items():
            self.kubelet.prestart(res, lst)

    def admit_ungranted(self, pod, phase="Pending"):
        """A pod that asks for nothing, as kubelet knows it: the pod object on
        the node with no ioqos resources and an entry in the pod resources List
        with no devices; never through Allocate or PreStartContainer."""
        self.api.put_pod(self.h.pod_object(pod.name, pod.uid, ns=NS, qos=pod.qos, phase=phase))
        self.kubelet.set_pod(NS, pod.name, {"app": {}})

    def forget(self, pods):
        """Pods gone from kubelet and the API server (no grant to release)."""
        for p in pods:
            self.kubelet.remove_pod(NS, p.name)
            self.api.delete_pod(NS, p.name)

    def events_count(self):
        return len(self.api.events)

    def monitor_events(self, since):
        """The grant monitor's Events created after the first `since` ones."""
        return [{"reason": e["reason"], "type": e["type"], "object": e["involvedObject"]["kind"],
                 "name": e["involvedObject"].get("name"), "message": e.get("message", "")}
                for e in self.api.events[since:] if e.get("reason") in MONITOR_REASONS]

    def explain(self, ctl, pod):
        """`ioqosctl explain --json` of a granted pod on the real kernel, checked
        against the kernel's own io.max line: the plugin's record of what it
        wrote and read back must be what is in place. Raises on a mismatch
        (the stage fails); returns a short record."""
        sock = os.path.join(self.env.state_dir, "plugin.sock")
        t0 = time.monotonic()
        r = subprocess.run([ctl, "explain", "--socket", sock, "--json", "%s/%s" % (NS, pod.name)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        ms = (time.monotonic() - t0) * 1000.0
        if r.returncode != 0:
            raise RuntimeError("ioqosctl explain %s failed (%d): %s" % (pod.name, r.returncode, r.stderr))
        doc = json.loads(r.stdout)
        files = [f for f in doc.get("files", []) if f.get("file") == "io.max"]
        live = iomax_line(pod.dir, self.disk.devno)
        if not doc.get("granted") or not files or \
                any(iomax_field(files[0]["readBack"], k) != iomax_field(live, k)
                    for k in ("rbps", "wbps", "riops", "wiops")):
            raise RuntimeError("ioqosctl explain %s: granted=%s io.max read back %r, the kernel has %r" % (
                pod.name, doc.get("granted"), files and files[0].get("readBack"), live))
        mon = doc.get("monitor", {})
        return {"ms": ms, "io.max": files[0]["readBack"], "written_at": files[0].get("writtenAt"),
                "disk": doc["grants"][0]["disk"], "reason": doc["grants"][0]["reason"]["summary"],
                "cgroup_how": doc["cgroup"].get("how"),
                "monitor": [d.get("verdict") for d in mon.get("disks", [])] if mon.get("monitored")
                else mon.get("reason")}

    def verdict_seconds(self):
        """{verdict: pod-seconds} the monitor counted on the disk so far."""
        return {v: self.daemon.metric("ioqos_disk_grant_verdict_seconds_total", disk=self.disk.name,
                                      verdict=v) or 0.0
                for v in ("idle", "within", "at-cap", "starved", "unknown")}

    def log_offset(self):
        try:
            return os.path.getsize(self.daemon.log_path)
        except OSError:
            return 0

    def log_since(self, offset):
        try:
            with open(self.daemon.log_path, errors="replace") as f:
                f.seek(offset)
                return f.read()
        except OSError:
            return ""

    def metrics(self, names):
        """{name: value} of the plugin's /metrics (disk-labelled ones for our disk)."""
        out = {}
        for n in names:
            try:
                v = self.daemon.metric(n, disk=self.disk.name)
                if v is None:
                    v = self.daemon.metric(n)
            except OSError:
                v = None
            out[n] = v
        return out

    def release(self, pods):
        for p in pods:
            self.kubelet.remove_pod(NS, p.name)
            self.api.delete_pod(NS, p.name)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            left = [self.daemon.metric(name, disk=self.disk.name)
                    for name in ("ioqos_disk_allocated_bytes_per_second", "ioqos_disk_allocated_iops")]
            if all(not v for v in left) and all(not iomax_line(p.dir, self.disk.devno) for p in pods
                                                 if os.path.isdir(p.dir)):
                return True
            time.sleep(0.2)
        log("warning: the plugin did not release the grants within 30 s")
        return False

    def close(self):
        rc = self.daemon.terminate()
        if self.args_plugin_log:  # before Env.close removes its directory
            try:
                shutil.copyfile(self.daemon.log_path, self.args_plugin_log)
            except OSError as e:
                log("warning: plugin log not kept: %s" % e)
        self.env.close()
        return rc


class DraCluster(Cluster):
    """The same plugin in --mode=dra (docs/dra.md): it publishes a ResourceSlice
    and kubelet (tests/plugin/dra_kubelet.py) prepares each pod's claim before
    the sandbox, where the device-plugin run has Allocate + PreStartContainer.
    A claim is written to the API stand-in as kube-scheduler would allocate it:
    the pod's units as consumed capacity of the disk's device. Everything after
    the grant is in place (enforcement, node policy, monitor, explain) is the
    same code in both modes."""

    def start_daemon(self, log_level):
        """The DRA mode: registered by the DRA kubelet stand-in, the disk's
        device in the slice."""
        harness, disk = self.h, self.disk
        from dra_kubelet import DraKubelet  # noqa: E402  (after harness: proto modules)
        registry = os.path.join(self.env.root, "plugins_registry")
        self.daemon = self.env.start_daemon(extra=[
            "--log-level", log_level, "--mode=dra",
            "--kubelet-plugins-dir", os.path.join(self.env.root, "plugins"),
            "--kubelet-registry-dir", registry])
        self.dra = DraKubelet(registry)
        self.dra.register(timeout=60)
        self.daemon.wait_ready(timeout=60)
        self.claims = {}
        self.units = {}
        deadline = time.monotonic() + 60
        while not self.units and time.monotonic() < deadline:
            for sl in self.api.slices(driver="ioqos.io"):
                for dev in sl["spec"]["devices"]:
                    if dev["attributes"]["disk"]["string"] == disk.name:
                        self.units = {harness.BW: quantity(dev["capacity"]["bandwidth"]["value"]),
                                      harness.IOPS: quantity(dev["capacity"]["iops"]["value"])}
                        self.device = dev["name"]
            time.sleep(0.1)
        if not self.units:
            raise RuntimeError("no ResourceSlice device for %s within 60 s" % disk.name)

    def allocatable(self, res):
        return self.units[res]

    def admit(self, pod, bw, iops):
        """The pod object and its claim, allocated and reserved for it; kubelet
        lists the pod without devices. Returns (the claim, no envs)."""
        h = self.h
        self.api.put_pod(h.pod_object(pod.name, pod.uid, ns=NS, qos="Burstable"))
        consumed = {}
        if bw:
            consumed["bandwidth"] = str(bw)
        if iops:
            consumed["iops"] = str(iops)
        name, uid = pod.name + "-disk", str(uuid.uuid4())
        self.api.put_claim({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NS, "uid": uid},
            "spec": {"devices": {"requests": [{"name": "disk", "exactly": {
                "deviceClassName": "ioqos-disk", "capacity": {"requests": consumed}}}]}},
            "status": {"allocation": {"devices": {"results": [{
                "request": "disk", "driver": "ioqos.io", "pool": h.NODE, "device": self.device,
                "shareID": uid[:8], "consumedCapacity": consumed}]}},
                "reservedFor": [{"resource": "pods", "name": pod.name, "uid": pod.uid}]}})
        self.kubelet.set_pod(NS, pod.name, {"app": {}})
        self.claims[pod.name] = (NS, uid, name)
        return [(NS, uid, name)], {}

    def prestart(self, ids):
        """NodePrepareResources: what kubelet calls before the sandbox."""
        got = self.dra.prepare(ids)
        bad = {u: r["error"] for u, r in got.items() if r["error"]}
        if bad:
            raise RuntimeError("NodePrepareResources failed: %s" % bad)

    def release(self, pods):
        for p in pods:
            c = self.claims.pop(p.name, None)
            if c:
                errs = {u: e for u, e in self.dra.unprepare([c]).items() if e}
                if errs:
                    log("warning: NodeUnprepareResources failed: %s" % errs)
                self.api.delete_claim(c[0], c[2])
        return super().release(pods)

    def close(self):
        self.dra.close()
        return super().close()


def ctl_apply(args, cgdir, disk, **kv):
    cmd = [args.ioqosctl, "apply", "--cgroup", cgdir, "--device", disk.devno]
    for k, v in kv.items():
        cmd += ["--" + k.replace("_", "-")] + ([] if v is True else [str(v)])
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stdout))
    return r.stdout


def kv_fields(text):
    """key=value pairs of a log line (values may be double-quoted)."""
    out = {}
    for m in re.finditer(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', text):
        out[m.group(1)] = m.group(2).strip('"')
    return out


def ungranted_log(text):
    """The plugin's ungranted-pod lines: bounds placed (one per pod cgroup and
    disk, with bytes_before = what io.stat showed just before) and removed."""
    placed, removed = [], []
    for line in text.splitlines():
        i = line.find("ungranted bound placed")
        if i >= 0:
            f = kv_fields(line[i + len("ungranted bound placed"):])
            for k in ("bytes_before", "ios_before"):
                if k in f:
                    try:
                        f[k] = int(f[k])
                    except ValueError:
                        pass
            placed.append(f)
            continue
        i = line.find("ungranted bounds removed")
        if i >= 0:
            removed.append(kv_fields(line[i + len("ungranted bounds removed"):]))
    return {"placed": placed, "removed": removed}


UNGRANTED_METRICS = ("ioqos_ungranted_pool_bytes_per_second", "ioqos_ungranted_pool_iops",
                     "ioqos_ungranted_pods", "ioqos_ungranted_before_bound_max_bytes",
                     "ioqos_ungranted_writes_total", "ioqos_ungranted_failures_total",
                     "ioqos_ungranted_lent_bytes_per_second", "ioqos_ungranted_lent_iops",
                     "ioqos_ungranted_reclaims_total", "ioqos_ungranted_owe_holds_total")
LENT = "ioqos_ungranted_lent_bytes_per_second"
BURST = "ioqos_ungranted_burst_bytes_per_second"


def burst_phase(cl, backup, disk, grant, wait_s=30.0, measure_s=3.0):
    """The burst stage before the db starts: waits until the plugin lets the
    backup burst (its burst gauge > 0), then measures what the backup writes
    (io.stat slope over measure_s) and its io.max."""
    out = {"grant_bytes": grant}
    out["burst_bytes"], out["burst_after_s"] = wait_gauge(cl, BURST, wait_s)
    if not out["burst_bytes"]:
        log("warning: %s: the backup did not burst within %.0f s" % (BURST_STAGE, wait_s))
        return out
    time.sleep(1.0)  # the burst written at the pass
    x = iostat(backup.dir, disk.devno)
    t1 = time.monotonic()
    time.sleep(measure_s)
    y = iostat(backup.dir, disk.devno)
    out["backup_bytes_per_s"] = (y[1] - x[1]) / (time.monotonic() - t1)
    out["burst_bytes"] = cl.metrics((BURST,)).get(BURST) or 0
    out["iomax"] = iomax_line(backup.dir, disk.devno)
    return out


def head_start(pod, disk, wait_s=60.0, settle_s=2.0):
    """Waits until `pod` writes (io.stat), then settle_s more: seconds from
    the call to its first write, or None if it wrote nothing within wait_s."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < wait_s:
        if iostat(pod.dir, disk.devno)[1] > 0:
            first = time.monotonic() - t0
            time.sleep(settle_s)
            return first
        time.sleep(0.05)
    log("warning: %s wrote nothing within %.0f s" % (pod.name, wait_s))
    return None


def wait_gauge(cl, name, wait_s):
    """Waits up to wait_s for the plugin's gauge `name` (our disk) to be > 0:
    (its value, seconds waited), or (0, None)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < wait_s:
        v = cl.metrics((name,)).get(name) or 0
        if v > 0:
            return v, time.monotonic() - t0
        time.sleep(0.2)
    return 0, None


def lending_phase(cl, nbs, disk, wait_s=30.0, measure_s=3.0):
    """The wake-up stage before the granted pods start: waits until the plugin
    lends the idle grants (its lent gauge > 0), then measures what the pods
    without a grant write with the lent part (io.stat slope over measure_s)."""
    out = {}
    out["lent_bytes"], out["lent_after_s"] = wait_gauge(cl, LENT, wait_s)
    if not out["lent_bytes"]:
        log("warning: wake-up: nothing lent within %.0f s" % wait_s)
        return out
    time.sleep(1.0)  # the caps raised at the pass that lent
    a = [iostat(nb.dir, disk.devno) for nb in nbs]
    t1 = time.monotonic()
    time.sleep(measure_s)
    b = [iostat(nb.dir, disk.devno) for nb in nbs]
    dt = time.monotonic() - t1
    out["nb_bytes_per_s"] = sum((y[1] - x[1]) for x, y in zip(a, b)) / dt
    out["pool_bytes"] = cl.metrics(("ioqos_ungranted_pool_bytes_per_second",)).get(
        "ioqos_ungranted_pool_bytes_per_second")
    out["caps"] = [iomax_line(nb.dir, disk.devno) for nb in nbs]
    return out


# -------------------------------------------------------------------- fio --

def fio_db(args, disk, rw, qd, out, rate_iops=0, runtime=None):
    rate = ["--rate_iops=%d" % rate_iops] if rate_iops else []
    if rw == "wal":
        if not disk.mount:
            raise RuntimeError("the wal-fsync db needs a filesystem disk (virtio), %s has none" % disk.dev)
        io = ["--rw=write", "--direct=0", "--ioengine=psync", "--fdatasync=1"]
    else:
        io = ["--rw=" + rw, "--direct=1", "--ioengine=libaio", "--iodepth=%d" % qd]
    return ["fio", "--name=db", "--bs=4k"] + io + rate + ["--time_based", "--runtime=%g" % (runtime or args.runtime),
            "--ramp_time=%g" % args.ramp, "--lat_percentiles=1", "--norandommap",
            "--randrepeat=0", "--output-format=json", "--output=" + out] + disk.db_target()


def fio_writers(disk, mode, files, seconds, out, name="backup", target=None):
    """1 MiB sequential writers, one job per file/region in `files`, reported
    as one group. target(k): fio's file options of job k (default: the
    backup's file k)."""
    io = (["--direct=1", "--ioengine=libaio", "--iodepth=4"] if mode == "direct"
          else ["--direct=0", "--ioengine=psync"])
    argv = ["fio", "--rw=write", "--bs=1M", "--group_reporting", "--time_based",
            "--runtime=%g" % seconds, "--output-format=json", "--output=" + out] + io
    for k in files:
        argv += ["--name=%s%d" % (name, k)] + (target or disk.backup_file)(k)
    return argv


def fio_backup(args, disk, mode, out):
    return fio_writers(disk, mode, range(BACKUP_JOBS), args.ramp + args.runtime + 30, out)


def parse_db(path, rw):
    d = json.load(open(path))
    j = d["jobs"][0]
    s = j["read" if rw == "randread" else "write"]
    lat = s["lat_ns"]
    pct = lat.get("percentile", {})  # absent when fio measured no I/O

    def us(v):
        return None if v is None else v / 1000.0
    out = {"iops": s["iops"], "bw_bytes": s["bw_bytes"], "lat_mean_us": us(lat.get("mean")),
           "lat_p99_us": us(pct.get("99.000000")), "lat_p50_us": us(pct.get("50.000000")),
           "runtime_ms": j["job_runtime"], "error": j["error"]}
    if rw == "wal":  # the commit: fdatasync's own latency
        sl = j.get("sync", {}).get("lat_ns", {})
        sp = sl.get("percentile", {})
        out.update({"sync_mean_us": us(sl.get("mean")), "sync_p99_us": us(sp.get("99.000000")),
                    "sync_max_us": us(sl.get("max"))})
    return out


# ---------------------------------------------------------------- scenario --

class Scenario:
    def __init__(self, args):
        self.args = args
        self.disk = Disk(args.disk, args.mount)
        self.ctl = Disk(args.control_disk, args.control_mount)
        self.tmp = "/tmp/bench"
        os.makedirs(self.tmp, exist_ok=True)
        self.cluster = None
        self.errors = 0
        self.results = {"meta": {}, "cases": [], "accuracy": [], "overhead": []}

    # -- setup --
    def setup(self):
        a = self.args
        mkcg(BURSTABLE)
        mkcg(BESTEFFORT)  # kubelet creates both QoS cgroups before any pod
        nmax = max([len(NEIGHBOUR_STAGES[s]) for s in a.stage_list if s in NEIGHBOUR_STAGES]
                   + [1 if HOST_STAGE in a.stage_list else 0])
        nctl = max([len(NEIGHBOUR_STAGES[s]) for s in a.stage_list if s in NEIGHBOUR_STAGES
                    and s in CONTROL_STAGES] or [0])
        for d in (self.disk, self.ctl):
            if a.nonrot and os.path.exists("/sys/block/%s/queue/rotational" % d.name):
                write("/sys/block/%s/queue/rotational" % d.name, "0")
        if a.dirty_bytes:
            write("/proc/sys/vm/dirty_background_bytes", str(a.dirty_bytes // 4))
            write("/proc/sys/vm/dirty_bytes", str(a.dirty_bytes))
        setup_pod = Pod("setup").create()
        log("preparing disks: laying out the db and backup files")
        for d in (self.disk, self.ctl) if any(s in CONTROL_STAGES for s in a.stage_list) else (self.disk,):
            d.layout(setup_pod.container_dir(), neighbours=nmax if d is self.disk else nctl)
        setup_pod.remove()
        log("starting ioqos-plugin (kubelet and API server stand-ins)")
        t = time.monotonic()
        self.cluster = (DraCluster if a.grant_via == "dra" else Cluster)(a, self.disk)
        h = self.cluster.h
        log("plugin registered in %.1f s: %d ioqos/bandwidth units (MiB/s) and %d ioqos/iops units "
            "(100 IOPS) on %s (capacity %d MiB/s, %d IOPS, allocatable fraction %g)" % (
                time.monotonic() - t, self.cluster.allocatable(h.BW), self.cluster.allocatable(h.IOPS),
                self.disk.name, a.capacity_bw // MIB, a.capacity_iops, a.fraction))
        self.results["meta"] = {
            "kind": a.kind, "kernel": platform.release(), "cpus": os.cpu_count(),
            "disk": {"name": self.disk.name, "devno": self.disk.devno, "fs": bool(self.disk.mount),
                     "rotational": read("/sys/block/%s/queue/rotational" % self.disk.name).strip(),
                     "scheduler": read("/sys/block/%s/queue/scheduler" % self.disk.name).strip()},
            "control_disk": {"name": self.ctl.name, "devno": self.ctl.devno},
            "capacity_bw_bytes": a.capacity_bw, "capacity_iops": a.capacity_iops,
            "control_throttle_factor": a.control_factor,
            "allocatable_fraction": a.fraction,
            "grant_via": a.grant_via,
            "units": {"bw": self.cluster.allocatable(h.BW), "iops": self.cluster.allocatable(h.IOPS)},
            "runtime_s": a.runtime, "ramp_s": a.ramp, "rounds": a.rounds,
            "db_grant_factor": a.db_grant_factor, "backup_jobs": BACKUP_JOBS,
            "db_demand_fraction": a.db_demand, "db_demand_iops": a.db_demand_iops,
            "iocost_qos": IOCOST_QOS, "weights": [WEIGHT_DB, WEIGHT_BACKUP],
            "pace": a.pace_value, "pace_setting": a.pace, "pace_lat_us": a.pace_lat_us,
            "plugin_pace": a.plugin_pace or None,
            "device_latency_us": a.device_latency_us,
            "ungranted": {"config": self.cluster.config_extra.get("nodePolicy"),
                          "sandbox_delay_s": a.sandbox_delay,
                          "neighbours": {s: NEIGHBOUR_STAGES[s] for s in a.stage_list if s in NEIGHBOUR_STAGES}},
            "dirty_bytes": a.dirty_bytes, "fio": subprocess.run(["fio", "--version"], stdout=subprocess.PIPE,
                                                                text=True).stdout.strip(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }

    # -- one stage --
    def stage(self, case, stage, rnd):
        a, cl = self.args, self.cluster
        rw, qd = DB_WORKLOADS[case["db"]]
        mode = case["backup"]
        disk = self.ctl if stage in CONTROL_STAGES else self.disk
        db, backup = Pod("db"), Pod("backup")
        pods = [db] if stage == "solo" else [db, backup]
        granted = stage in GRANTED_STAGES
        # the pods without a grant (only in their own stages)
        nspec = [(q, m if (m == "direct" or disk.mount) else "direct")
                 for q, m in NEIGHBOUR_STAGES.get(stage, ())]
        nbs = [Pod("nb%d" % i, qos=q) for i, (q, _) in enumerate(nspec)]
        idle = stage == "neighbours"  # db and backup granted, their containers never start
        g = case["grants"]
        res = {"stage": stage, "round": rnd, "disk": disk.name}
        log_off = cl.log_offset() if cl else 0
        ev0 = cl.events_count() if cl and granted else 0
        vs0 = cl.verdict_seconds() if cl and granted else None
        host = stage == HOST_STAGE
        # as long as check_robust.py waits for the monitor's Event: the host
        # writer's first I/O (up to ~5 s after the db's start under TCG on a
        # loaded machine), then the window + 10 s (the disk reaches "full"
        # only in some seconds there). window + 4 ended the stage before
        # that: the Event failed to come in 5 of 7 runs on a loaded machine
        runtime = max(a.runtime, a.monitor_window + 14) if host else a.runtime
        procs, samp = [], None
        try:
            if stage == "ioqos+pace":
                res["iocost_model"], res["iocost_qos"] = iocost_pace(a, disk)
            if granted:
                t_adm = time.monotonic()
                ids = {}
                ids[db.name], env_db = cl.admit(db, g["db_bw_units"], g["db_iops_units"])
                ids[backup.name], env_bk = cl.admit(
                    backup, g["backup_bw_units"], 0,
                    annotations={"ioqos.io/burst": "true"} if stage == BURST_STAGE else None)
                res["allocate_env"] = {"db": env_db, "backup": env_bk}
                for p in pods:  # kubelet: pod cgroup (EnsureExists) before the containers
                    p.create()
                before = {p.name: iomax_line(p.dir, disk.devno) for p in pods}
                enf = {}
                for p in pods:
                    t0 = time.monotonic()
                    cl.prestart(ids[p.name])
                    t1 = time.monotonic()
                    # the moment PreStartContainer returned: what is in place, what ran
                    st = iostat(p.dir, disk.devno)
                    enf[p.name] = {"prestart_ms": (t1 - t0) * 1000.0, "iomax_before": before[p.name],
                                   "iomax_at_return": iomax_line(p.dir, disk.devno),
                                   "bytes_before_limit": st[0] + st[1],
                                   "procs_at_return": len(read(os.path.join(p.dir, "cgroup.procs")).split())}
                res["admission_ms"] = (time.monotonic() - t_adm) * 1000.0
                res["enforce"] = enf
            else:
                for p in pods:
                    p.create()
                if stage == "weight":
                    res["iocost_qos"] = iocost_set(disk, IOCOST_QOS)
                if stage in ("weight", "weight-plain"):
                    ctl_apply(a, db.dir, disk, weight=WEIGHT_DB)
                    ctl_apply(a, backup.dir, disk, weight=WEIGHT_BACKUP)
                    res["io_weight"] = {p.name: read(os.path.join(p.dir, "io.weight")).strip() for p in pods}
                if stage in CONTROL_STAGES:
                    ctl_apply(a, db.dir, disk, rbps=g["db_bw_units"] * BW_UNIT, wbps=g["db_bw_units"] * BW_UNIT,
                              riops=g["db_iops_units"] * IOPS_UNIT, wiops=g["db_iops_units"] * IOPS_UNIT)
                    ctl_apply(a, backup.dir, disk, rbps=g["backup_bw_units"] * BW_UNIT,
                              wbps=g["backup_bw_units"] * BW_UNIT)
            res["iomax"] = {p.name: iomax_line(p.dir, disk.devno) for p in pods}

            # the pods without a grant, as kubelet runs a pod that asks for
            # nothing: pod object, pod cgroup, the sandbox's delay, the container
            if nbs:
                res["neighbours"] = []
                # the plugin's pool (grant/ungranted.h): a share of what the
                # disk does not advertise plus the units nobody holds
                adv = int(a.capacity_bw * a.fraction // BW_UNIT)
                res["pool_bytes"] = a.ungranted_pool or int(
                    (a.capacity_bw - adv * BW_UNIT) * a.headroom_share
                    + (adv - g["db_bw_units"] - g["backup_bw_units"]) * BW_UNIT)
                res["pool_iops"] = a.capacity_iops - g["db_iops_units"] * IOPS_UNIT
                for i, (nb, (qos, nmode)) in enumerate(zip(nbs, nspec)):
                    t0 = time.monotonic()
                    cl.admit_ungranted(nb)
                    nb.create()
                    if stage in CONTROL_STAGES:
                        share = res["pool_bytes"] // len(nbs)
                        ctl_apply(a, nb.dir, disk, rbps=share, wbps=share)
                    time.sleep(a.sandbox_delay)
                    st = iostat(nb.dir, disk.devno)
                    line = iomax_line(nb.dir, disk.devno)
                    out = os.path.join(self.tmp, "nb%d.log" % i)
                    procs.append(spawn_in(nb.container_dir(), fio_writers(
                        disk, nmode, range(BACKUP_JOBS), a.ramp + a.runtime + 60, "/dev/null", name=nb.name,
                        target=lambda k, i=i: disk.neighbour_file(i, k)), open(out, "w")))
                    cl.admit_ungranted(nb, phase="Running")
                    res["neighbours"].append({
                        "name": nb.name, "qos": qos, "mode": nmode, "cgroup": nb.rel,
                        "iomax_at_start": line, "bytes_at_start": st[0] + st[1],
                        "start_ms": (time.monotonic() - t0) * 1000.0})

                # fio takes seconds to start under TCG: the granted pods' containers
                # (and the clock of the neighbours stage) start once every pod
                # without a grant is writing
                t0 = time.monotonic()
                waiting = list(zip(nbs, res["neighbours"]))
                while waiting and time.monotonic() - t0 < 60:
                    time.sleep(0.1)
                    for nb, r in list(waiting):
                        if iostat(nb.dir, disk.devno)[1] > 0:
                            r["first_io_s"] = time.monotonic() - t0
                            waiting.remove((nb, r))
                res["neighbours_started_s"] = time.monotonic() - t0
                if waiting:
                    log("warning: %s wrote nothing within 60 s" % ", ".join(nb.name for nb, _ in waiting))
                if stage == "wake-up":
                    res["lending"] = lending_phase(cl, nbs, disk)

            # the containers
            cgs = {p.name: p.dir for p in pods + nbs}
            if host:
                cgs["host"] = mkcg(HOST_CG)
            # the db's start is timed the same way in ioqos+1u (nothing lent): the
            # wake-up's reference, which holds what fio's start-up and the disk add
            samp = Sampler(cgs, disk.devno, caps=[nb.name for nb in nbs],
                           interval=WAKE_SAMPLE_S if stage in WAKE_STAGES else 0.2)
            samp.start()
            dbjson = os.path.join(self.tmp, "db.json")
            # what the guest's CPUs and the plugin did over the stage (under TCG
            # the db's IOPS are CPU as much as disk; in the control stages the plugin runs
            # but the disk is not its)
            cpu0 = cpu_jiffies()
            plug0 = cl.daemon.metric("process_cpu_seconds_total") if cl else None
            t_start = time.monotonic()
            if stage != "solo" and not idle:
                bk = spawn_in(backup.container_dir(), fio_backup(a, disk, mode, os.path.join(self.tmp, "bk.json")),
                              open(os.path.join(self.tmp, "bk.log"), "w"))
                procs.append(bk)
            if host:
                procs.append(spawn_in(cgs["host"], fio_writers(
                    disk, "direct", range(BACKUP_JOBS), a.ramp + runtime + 60, "/dev/null", name="host",
                    target=lambda k: disk.neighbour_file(0, k)), open(os.path.join(self.tmp, "host.log"), "w")))
            if stage == "wake-up":
                # the db wakes alone: the backup first takes its own lent part back
                # (and fio's start-up under TCG, seconds of CPU, is over before the
                # db's clock starts: started together, the two made the db's start
                # look 0.8 s long with nothing lent at all, in ioqos+1u)
                res["backup_head_start_s"] = head_start(backup, disk)
            if stage == BURST_STAGE:
                res["burst"] = burst_phase(cl, backup, disk, g["backup_bw_units"] * BW_UNIT)
            if idle:
                time.sleep(a.ramp + a.runtime)
                rc = 0
            else:
                dbp = spawn_in(db.container_dir(), fio_db(a, disk, rw, qd, dbjson, g["db_rate_iops"], runtime),
                               open(os.path.join(self.tmp, "db.log"), "w"))
                # watch the monitor's Events while the db runs: when the first
                # IoqosGrantNotMet came, counted from the host writer's start
                deadline = time.monotonic() + a.ramp + runtime + 120
                next_m = 0
                lent_seen = []
                while dbp.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.2)
                    if cl and granted and time.monotonic() >= next_m:
                        # what the monitor saw of the disk, once a second
                        next_m = time.monotonic() + 1.0
                        res.setdefault("monitor_disk", []).append(
                            [round(time.monotonic() - t_start, 1)] + [cl.daemon.metric(n, disk=disk.name) for n in (
                                "ioqos_disk_io_bytes_per_second", "ioqos_disk_granted_io_bytes_per_second",
                                "ioqos_disk_busy_ratio", "ioqos_disk_inflight_requests")])
                        if stage == BURST_STAGE:
                            res.setdefault("burst_seen", []).append(
                                [round(time.monotonic() - t_start, 1), cl.daemon.metric(BURST, disk=disk.name)])
                        if stage == "wake-up":
                            # what is lent while the db runs, held against the
                            # lending rule after the stage (lent_beyond_rule)
                            lent = cl.daemon.metric("ioqos_ungranted_lent_bytes_per_second",
                                                    disk=disk.name)
                            if dbp.poll() is None:
                                lent_seen.append((time.monotonic(), lent or 0.0))
                    if cl and granted and "monitor_not_met_at" not in res and any(
                            e["reason"] == "IoqosGrantNotMet" for e in cl.monitor_events(ev0)):
                        res["monitor_not_met_at"] = time.monotonic()
                rc = dbp.wait(timeout=max(1.0, deadline - time.monotonic()))
            t_end = time.monotonic()
            cpu1 = cpu_jiffies()
            res["cpu"] = {"window_s": round(t_end - t_start, 2), "ncpu": os.cpu_count(),
                          "guest_busy": round((cpu1[0] - cpu0[0]) / max(1, cpu1[1] - cpu0[1]), 3)}
            if plug0 is not None:
                plug1 = cl.daemon.metric("process_cpu_seconds_total")
                if plug1 is not None:
                    res["cpu"]["plugin_s"] = round(plug1 - plug0, 2)
            if "monitor_not_met_at" in res:
                # counted from when the granted backup (and, in the host stage,
                # the host writer) had started writing: fio takes seconds to
                # start under TCG
                t0 = max([samp.first_change(k, 2) for k in ("backup", "host") if k in cgs] or [t_start])
                res["monitor_first_not_met_s"] = res.pop("monitor_not_met_at") - t0
            if cl and granted and not idle:  # what the plugin says, against the kernel
                res["explain"] = {p.name: cl.explain(a.ioqosctl, p) for p in pods}
            if cl and granted:
                res["monitor"] = {"window_s": a.monitor_window, "events": cl.monitor_events(ev0),
                                  "verdict_seconds": {v: x - vs0[v] for v, x in cl.verdict_seconds().items()}}
            if nbs:  # while they still write
                res["metrics"] = cl.metrics(UNGRANTED_METRICS)
            if stage in WAKE_STAGES and not idle:
                res["wake_transient"] = wake_transient(samp, "db", t_end)
            if stage == "wake-up":
                res["lent_beyond_rule"] = lent_beyond_rule(samp, lent_seen, [
                    ("db", g["db_bw_units"] * BW_UNIT), ("backup", g["backup_bw_units"] * BW_UNIT)], t_start)
                # what the plugin says of taking the lent part back
                res["reclaim_ms"] = [float(m) for m in re.findall(
                    r'ungranted pool cut"? disk=%s .*?reclaim_ms=(\d+)' % re.escape(disk.name),
                    cl.log_since(log_off))]
            if stage in ("weight", "ioqos+pace"):
                # iocost's own view while the jobs still run: the weights in place and
                # io.stat's cost.* fields (usage, wait, indebt, indelay in µs)
                res["iocost_stat"] = {p.name: {"io.weight": read(os.path.join(p.dir, "io.weight")).strip(),
                                               "io.stat": iostat_line(p.dir, disk.devno)} for p in pods}
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            samp.stop()
            if rc != 0:
                raise RuntimeError("db fio failed (%d): %s" % (rc, read(os.path.join(self.tmp, "db.log"))[-2000:]))
            if idle:
                # no db: the measured window is the last `runtime` seconds
                w1 = t_end
                w0 = w1 - a.runtime
                res["window_s"] = [w0 - t_start, w1 - t_start]
                res["backup"] = {"bw_bytes": samp.rate("backup", w0, w1, 2)}
                res["db_idle"] = {"bytes": sum(samp.at("db", w1, f) - samp.at("db", w0, f) for f in (1, 2))}
            else:
                res["db"] = parse_db(dbjson, rw)
                # the db's measured window: the last `runtime` seconds of its I/O
                iof = 3 if rw == "randread" else 4
                w1 = min(t_end, samp.last_change("db", iof))
                w0 = w1 - a.runtime
                res["window_s"] = [w0 - t_start, w1 - t_start]
                res["db"]["iostat_iops"] = samp.rate("db", w0, w1, iof)
            if stage != "solo" and not idle:
                res["backup"] = {"bw_bytes": samp.rate("backup", w0, w1, 2)}
                if granted:
                    # the backup's first second of I/O, against what its grant allows
                    t0 = samp.first_change("backup", 2)
                    res["enforce"]["backup"]["first_second_bytes"] = (
                        samp.at("backup", t0 + 1.0, 2) - samp.at("backup", t0, 2))
            for nb, r in zip(nbs, res.get("neighbours", [])):
                r["bw_bytes"] = samp.rate(nb.name, w0, w1, 2)
                r["cap_mean_bytes"] = samp.cap_mean(nb.name, w0, w1)
                r["iomax_end"] = iomax_line(nb.dir, disk.devno)
            res["meminfo"] = samp.mem_stats(w0, w1)
            if nbs:
                res["neighbours_bw_bytes"] = sum(r["bw_bytes"] for r in res["neighbours"])
                res["caps_sum_max_bytes"] = samp.caps_sum_max(w0, w1)
            return res
        finally:
            for p in procs:  # a failed run: no writer may outlive its stage
                if p.poll() is None:
                    p.kill()
                    p.wait()
            if samp:
                samp.stop()
            # limits off first, so leftover dirty pages of a buffered backup
            # drain at disk speed before the next stage
            if granted and cl:
                res["released"] = cl.release(pods + nbs)
            elif nbs and cl:
                cl.forget(nbs)
            if nbs:
                # the last grant went: every bound on the disk must be gone
                res["neighbours_iomax_after_release"] = [iomax_line(nb.dir, disk.devno) for nb in nbs
                                                        if os.path.isdir(nb.dir)]
            if stage in CONTROL_STAGES:
                for p in pods + nbs:
                    if os.path.isdir(p.dir):
                        ctl_apply(a, p.dir, disk, clear=True)
            if stage in ("weight", "ioqos+pace"):
                res["iocost_off"] = iocost_set(disk, "enable=0")
            if stage == "ioqos+pace":
                iocost_set(disk, "ctrl=auto", file="io.cost.model")
            for p in pods + nbs:
                p.remove()
            if host:
                rmcg(os.path.join(CG, HOST_CG))
            if cl:
                # what the plugin's ungranted-pod bounds did during this stage
                # (in a stage without such pods: nothing, or a bound on a granted
                # pod's cgroup in the moment before its PreStartContainer)
                ul = ungranted_log(cl.log_since(log_off))
                names = {os.path.basename(p.dir): p.name for p in pods + nbs}
                for f in ul["placed"]:
                    cg = f.get("cgroup", "")
                    f["pod"] = next((n for b, n in names.items() if b in cg), None)
                res["ungranted_log"] = ul
            settle()

    def report_stage(self, label, r):
        def us(v):
            return "–" if v is None else "%.0f us" % v
        if "db" in r:
            db = r["db"]
            line = "%s %-12s db %s IOPS, lat mean %s, p99 %s" % (
                label, r["stage"] + ":", si(db["iops"]), us(db["lat_mean_us"]), us(db["lat_p99_us"]))
        else:
            line = "%s %-12s db and backup granted, idle" % (label, r["stage"] + ":")
        if "backup" in r:
            line += "; backup %.0f MiB/s" % (r["backup"]["bw_bytes"] / MIB)
        if r.get("neighbours"):
            bb = [f.get("bytes_before") for f in r.get("ungranted_log", {}).get("placed", [])
                  if f.get("pod", "") and f["pod"].startswith("nb")]
            line += "; %d without a grant: %s MiB/s (together %.0f, pool %.0f)" % (
                len(r["neighbours"]), "/".join("%.0f" % (n["bw_bytes"] / MIB) for n in r["neighbours"]),
                r["neighbours_bw_bytes"] / MIB, r["pool_bytes"] / MIB)
            line += "; bytes before their bound: %s" % (max(bb) if bb else "no bound logged")
        log(line)

    # -- sizing: what the db needs --
    def size_case(self, case):
        """What the db needs, and the grants. Two solo runs of the db, closed-loop
        (they also warm the disk); the higher one counts. Its demand is at most db_demand of the disk:
        if the closed-loop db goes faster than that (null_blk: I/O costs nothing),
        it runs rate-limited at that demand in every stage of the case (fio
        rate_iops; only then, since fio's pacing itself costs IOPS under TCG),
        and a second solo run measures the need with that limit.
        db grant = need x db_grant_factor rounded up to whole units (a grant is a
        cap too, so a grant of exactly the measured need would clip the db at
        that one run's noise); backup = the remaining bandwidth units."""
        a, h = self.args, self.cluster.h
        rw, qd = DB_WORKLOADS[case["db"]]

        def solo(rate):
            p = Pod("db-sizing").create()
            out = os.path.join(self.tmp, "sizing.json")
            saved = a.runtime
            a.runtime = a.sizing_runtime
            try:
                rc = spawn_in(p.container_dir(), fio_db(a, self.disk, rw, qd, out, rate),
                              subprocess.DEVNULL).wait()
            finally:
                a.runtime = saved
                p.remove()
            if rc != 0:
                raise RuntimeError("sizing fio failed")
            return parse_db(out, rw)["iops"]
        closed = need = max(solo(0), solo(0))
        rate = 0
        if a.db_demand_iops and closed > a.db_demand_iops:
            rate = a.db_demand_iops
            need = solo(rate)
        f = a.db_grant_factor
        bw_all, iops_all = self.cluster.allocatable(h.BW), self.cluster.allocatable(h.IOPS)
        db_iops = min(iops_all, int(math.ceil(need * f / IOPS_UNIT)))
        db_bw = min(bw_all - 1, int(math.ceil(need * f * 4096 / BW_UNIT)))
        g = {"db_closed_loop_iops": closed, "db_rate_iops": rate, "db_need_iops": need,
             "db_iops_units": db_iops, "db_bw_units": db_bw, "backup_bw_units": bw_all - db_bw,
             "clipped": db_bw < math.ceil(need * f * 4096 / BW_UNIT) or db_iops < math.ceil(need * f / IOPS_UNIT)}
        return g

    def run_case(self, db, backup, stages):
        a = self.args
        case = {"device": a.kind, "db": db, "backup": backup, "name": "%s %s + backup %s" % (a.kind, db, backup)}
        case["grants"] = self.size_case(case)
        g = case["grants"]
        log("== %s: db needs %s IOPS%s -> grant %d MiB/s + %d IOPS; backup grant %d MiB/s%s" % (
            case["name"], si(g["db_need_iops"]),
            " (closed-loop %s IOPS, more than a %g share of the disk: paced at %s)" % (
                si(g["db_closed_loop_iops"]), a.db_demand, si(g["db_rate_iops"])) if g["db_rate_iops"] else "",
            g["db_bw_units"], g["db_iops_units"] * IOPS_UNIT,
            g["backup_bw_units"], " (clipped to what the disk has)" if g["clipped"] else ""))
        case["runs"] = []
        self.results["cases"].append(case)
        for r in range(a.rounds):
            order = stages[r % len(stages):] + stages[:r % len(stages)]
            for pos, st in enumerate(order):
                label = "[%s r%d/%d]" % (case["name"], r + 1, a.rounds)
                try:
                    res = self.stage(case, st, r)
                except Exception as e:  # one failed run must not lose the others
                    res = {"stage": st, "round": r, "error": "%s: %s" % (type(e).__name__, e)}
                    self.errors += 1
                    log("%s %s: FAILED: %s" % (label, st, res["error"]))
                res["position"] = pos
                case["runs"].append(res)
                if "error" not in res:
                    self.report_stage(label, res)
                self.save()

    # -- io.max accuracy: one granted backup alone, through the plugin --
    def accuracy(self):
        a, cl = self.args, self.cluster
        units = cl.allocatable(cl.h.BW) // 2
        for r in range(a.rounds):
            for mode in (BACKUP_MODES if r % 2 == 0 else BACKUP_MODES[::-1]):
                if mode not in a.backup_modes:
                    continue
                p = Pod("backup")
                ids, _ = cl.admit(p, units, 0)
                p.create()
                t0 = time.monotonic()
                cl.prestart(ids)
                st = iostat(p.dir, self.disk.devno)
                enf = {"prestart_ms": (time.monotonic() - t0) * 1000.0,
                       "iomax_at_return": iomax_line(p.dir, self.disk.devno), "bytes_before_limit": st[0] + st[1]}
                samp = Sampler({"b": p.dir}, self.disk.devno)
                samp.start()
                pr = spawn_in(p.container_dir(), fio_backup(a, self.disk, mode, os.path.join(self.tmp, "acc.json")),
                              subprocess.DEVNULL)
                time.sleep(a.ramp + a.runtime)
                t_end = time.monotonic()
                pr.send_signal(signal.SIGTERM)
                pr.wait()
                samp.stop()
                rate = samp.rate("b", t_end - a.runtime, t_end, 2)
                t0 = samp.first_change("b", 2)
                first = samp.at("b", t0 + 1.0, 2) - samp.at("b", t0, 2)
                enf["first_second_bytes"] = first
                granted = units * BW_UNIT
                self.results["accuracy"].append({"mode": mode, "round": r, "granted_bytes": granted,
                                                 "achieved_bytes": rate, "enforce": enf})
                log("[accuracy r%d/%d] backup %s alone, grant %d MiB/s: %.1f MiB/s (%.3f); "
                    "bytes before the limit: %d" % (r + 1, a.rounds, mode, units, rate / MIB, rate / granted,
                                                    enf["bytes_before_limit"]))
                cl.release([p])
                p.remove()
                settle()
        self.save()

    # -- overhead: grants summing to capacity vs no QoS --
    def overhead(self):
        """Two backup pods (1 MiB sequential direct writes); with QoS each holds
        io.max = half the capacity (written with the ioqos writer), so the grants
        sum to the capacity; without QoS nothing is set. Aggregate throughput."""
        a = self.args
        half = a.capacity_bw // 2
        for r in range(a.rounds):
            for qos in ((False, True) if r % 2 == 0 else (True, False)):
                pods = [Pod("w1").create(), Pod("w2").create()]
                if qos:
                    for p in pods:
                        ctl_apply(a, p.dir, self.disk, wbps=half)
                samp = Sampler({p.name: p.dir for p in pods}, self.disk.devno)
                samp.start()
                procs = []
                for i, p in enumerate(pods):
                    procs.append(spawn_in(p.container_dir(), fio_writers(
                        self.disk, "direct", (2 * i, 2 * i + 1), a.ramp + a.runtime + 30, "/dev/null",
                        name=p.name), subprocess.DEVNULL))
                time.sleep(a.ramp + a.runtime)
                t_end = time.monotonic()
                for pr in procs:
                    pr.send_signal(signal.SIGTERM)
                for pr in procs:
                    pr.wait()
                samp.stop()
                agg = sum(samp.rate(p.name, t_end - a.runtime, t_end, 2) for p in pods)
                self.results["overhead"].append({"qos": qos, "round": r, "aggregate_bytes": agg,
                                                 "grant_each_bytes": half if qos else None})
                log("[overhead r%d/%d] 2 writers, %s: aggregate %.1f MiB/s" % (
                    r + 1, a.rounds, "io.max = capacity/2 each" if qos else "no QoS", agg / MIB))
                for p in pods:
                    p.remove()
                settle()
        self.save()

    def save(self):
        tmp = self.args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.results, f, indent=1, sort_keys=True)
        os.replace(tmp, self.args.out)

    def close(self):
        if self.cluster:
            rc = self.cluster.close()
            self.results["meta"]["plugin_exit"] = rc
        if self.args.dirty_bytes:
            write("/proc/sys/vm/dirty_background_ratio", "10")
            write("/proc/sys/vm/dirty_ratio", "20")
        rmcg(os.path.join(CG, KUBEPODS))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", required=True, help="device kind label (nullb, virtio)")
    ap.add_argument("--disk", required=True, help="managed disk (/dev/X)")
    ap.add_argument("--mount", help="its filesystem (files instead of the raw disk)")
    ap.add_argument("--control-disk", required=True, help="the same disk kind with the throttle doubled")
    ap.add_argument("--control-mount")
    ap.add_argument("--control-factor", type=float, default=2.0, help="(recorded) control throttle factor")
    ap.add_argument("--capacity-bw", type=int, required=True, help="disk capacity, bytes/s (its throttle)")
    ap.add_argument("--capacity-iops", type=int, required=True, help="disk capacity, IOPS")
    ap.add_argument("--fraction", type=float, default=0.8, help="allocatableFraction (default 0.8)")
    ap.add_argument("--db", default=",".join(DB_WORKLOADS), help="db workloads (comma list)")
    ap.add_argument("--backup-modes", default="direct,buffered")
    ap.add_argument("--cases", help="explicit DB+MODE list, e.g. randread-qd1+direct,randwrite-qd1+buffered")
    ap.add_argument("--stages", default=",".join(ALL_STAGES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=float, default=8.0, help="measured seconds per stage")
    ap.add_argument("--ramp", type=float, default=2.0, help="seconds before the db's measurement starts")
    ap.add_argument("--sizing-runtime", type=float, default=3.0)
    ap.add_argument("--db-grant-factor", type=float, default=1.1)
    ap.add_argument("--db-demand", type=float, default=0.25,
                    help="the db's demand: at most this fraction of the disk's IOPS (fio rate_iops); 0 = unbounded")
    ap.add_argument("--pace", default="auto",
                    help="ioqos+pace: iocost's model at this fraction of the disk's capacity; auto (the "
                    "default, as nodePolicy.iocost.pace: auto) = the allocatable fraction + the pool of "
                    "pods without a grant (headroomShare x the rest; none with --ungranted off)")
    ap.add_argument("--plugin-pace", default="",
                    help="the plugin paces the managed disk itself in every stage (nodePolicy.iocost: enable, "
                    "ctrl user, pace: this value, auto or a number in (0, 1]): the token-bucket recipe as "
                    "deployed; not with the stages that write iocost themselves (weight, weight-plain, ioqos+pace)")
    ap.add_argument("--device-latency-us", type=int, default=0,
                    help="(recorded) the disks' completion latency (null_blk timer mode), 0 = none")
    ap.add_argument("--pace-lat-us", type=int, default=2000,
                    help="ioqos+pace: iocost's latency target (its period is twice this)")
    ap.add_argument("--reconcile", type=int, default=10, help="plugin reconcile interval (s)")
    ap.add_argument("--monitor-window", type=int, default=5,
                    help="the plugin's monitor.starvedWindowSeconds (Events counted per stage)")
    ap.add_argument("--ungranted", choices=("auto", "on", "off", "default"), default="auto",
                    help="the plugin's bounds for pods without a grant (config nodePolicy.ungranted.enable): "
                         "on/off write it, default leaves it out (the plugin's default), auto = on when a stage "
                         "has pods without a grant, else default")
    ap.add_argument("--headroom-share", type=float, default=0.5,
                    help="nodePolicy.ungranted.headroomShare: the part of what the disk does not advertise "
                         "that pods without a grant share (the plugin's default is 0.5)")
    ap.add_argument("--ungranted-pool", type=int, default=0,
                    help="bytes/s: a fixed pool for pods without a grant (devices[].ungrantedPool); "
                         "0 = the plugin's default (capacity minus held units)")
    ap.add_argument("--page-cache-bytes", type=int, default=-1,
                    help="nodePolicy.ungranted.pageCacheBytes (0: no page cache bound; default: the plugin's)")
    ap.add_argument("--sandbox-delay", type=float, default=0.2,
                    help="seconds between an ungranted pod's cgroup and its container (the sandbox start)")
    ap.add_argument("--dirty-bytes", type=int, default=64 * MIB,
                    help="vm.dirty_bytes during the run (background = 1/4); 0 keeps the kernel's ratios")
    ap.add_argument("--nonrot", action="store_true", help="mark the disks non-rotational (iocost SSD model)")
    ap.add_argument("--accuracy", action="store_true", help="also the io.max accuracy runs")
    ap.add_argument("--overhead", action="store_true", help="also the overhead runs")
    ap.add_argument("--grant-via", choices=("device-plugin", "dra"), default="device-plugin",
                    help="how grants reach the plugin: Allocate + PreStartContainer, or the plugin "
                         "in --mode=dra with claims prepared by NodePrepareResources")
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--ioqosctl", required=True)
    ap.add_argument("--proto-py", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--plugin-log", help="keep the plugin's log here")
    a = ap.parse_args()
    if not os.environ.get("IOQOS_E2E_VM"):
        sys.exit("isolation.py runs inside the VM (tests/bench/run.sh starts it)")
    a.backup_modes = a.backup_modes.split(",")
    a.db_demand_iops = int(a.db_demand * a.capacity_iops)
    stages = a.stage_list = [s for s in a.stages.split(",") if s]
    for s in stages:
        if s not in ALL_STAGES:
            sys.exit("unknown stage " + s)
    if a.plugin_pace:
        if a.plugin_pace != "auto":
            try:
                pace = float(a.plugin_pace)
                if not 0 < pace <= 1:
                    raise ValueError
            except ValueError:
                sys.exit("--plugin-pace: auto or a number in (0, 1], not %r" % a.plugin_pace)
            a.plugin_pace = pace  # the config takes the number
        clash = [s for s in stages if s in ("weight", "weight-plain", "ioqos+pace")]
        if clash:
            sys.exit("--plugin-pace: the plugin owns iocost on the disk; stages %s write it too" % ",".join(clash))
    if a.ungranted == "auto":
        a.ungranted = "on" if any(s in NEIGHBOUR_STAGES for s in stages) else "default"
    # auto, as the plugin's nodePolicy.iocost.pace: auto (ioq_ug_bounded_fraction):
    # the grants plus, with the policy for pods without a grant on (the plugin's
    # default), their pool when every unit is held
    if a.pace == "auto":
        pool = 0.0
        if a.ungranted != "off":
            pool = a.ungranted_pool / a.capacity_bw if a.ungranted_pool else a.headroom_share * (1 - a.fraction)
        a.pace_value = min(1.0, a.fraction + pool)
    else:
        try:
            a.pace_value = float(a.pace)
        except ValueError:
            sys.exit("--pace: a number in (0, 1] or auto, not %r" % a.pace)
    if not 0 < a.pace_value <= 1:
        sys.exit("--pace: %g is not in (0, 1]" % a.pace_value)
    if a.cases:
        cases = [tuple(c.split("+")) for c in a.cases.split(",") if c]
    else:
        cases = [(d, m) for m in a.backup_modes for d in a.db.split(",") if d]
    for d, m in cases:
        if d not in DB_WORKLOADS or m not in BACKUP_MODES:
            sys.exit("unknown case %s+%s" % (d, m))
    sc = Scenario(a)
    try:
        sc.setup()
        for d, m in cases:
            sc.run_case(d, m, stages)
        if a.accuracy:
            sc.accuracy()
        if a.overhead:
            sc.overhead()
    finally:
        sc.results["meta"]["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        sc.results["meta"]["failed_runs"] = sc.errors
        sc.close()
        sc.save()
    if sc.errors:
        sys.exit("isolation.py: %d run(s) failed (their errors are in the JSON)" % sc.errors)


if __name__ == "__main__":
    main()

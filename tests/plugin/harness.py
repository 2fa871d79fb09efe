# SPDX-License-Identifier: Apache-2.0
"""Test harness for ioqos-plugin integration tests: temp trees (sysfs,
cgroup v2 layout, kubelet dirs), the two stand-ins, and the daemon process.

Environment (set by CMake): IOQOS_PLUGIN_BIN (the daemon), IOQOS_PROTO_PY_DIR
(python modules generated from proto/). Run the tests with /usr/bin/python3
(Debian's grpcio)."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.environ.get("IOQOS_PROTO_PY_DIR", ""))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from apiserver import ApiServer  # noqa: E402  (tests/support)
from kubelet_stub import Kubelet  # noqa: E402
import logfmt  # noqa: E402  (tests/support)

BIN = os.environ.get("IOQOS_PLUGIN_BIN", "")
BW = "ioqos/bandwidth"
IOPS = "ioqos/iops"
MIB = 1024 * 1024
NODE = "node-a"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(pred, timeout=10.0, what="condition", step=0.05):
    """pred()'s first true value, polled every `step` s for `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(step)


def fake_disk(sys_root, name, majmin, sched="[none] mq-deadline"):
    """A whole disk in a fake sysfs, laid out like the kernel's."""
    d = os.path.join(sys_root, "devices/virtual/block", name)
    write(os.path.join(d, "dev"), majmin + "\n")
    write(os.path.join(d, "queue/scheduler"), sched + "\n")
    write(os.path.join(d, "queue/rotational"), "0\n")
    write(os.path.join(d, "queue/logical_block_size"), "512\n")
    os.makedirs(os.path.join(d, "slaves"), exist_ok=True)
    for link in (os.path.join(sys_root, "class/block", name), os.path.join(sys_root, "dev/block", majmin)):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if not os.path.lexists(link):
            os.symlink("../../devices/virtual/block/" + name, link)


def remove_fake_disk(sys_root, name, majmin):
    os.unlink(os.path.join(sys_root, "class/block", name))
    os.unlink(os.path.join(sys_root, "dev/block", majmin))
    shutil.rmtree(os.path.join(sys_root, "devices/virtual/block", name))


def v2_tree(cg):
    """A cgroup v2 node as kubelet (systemd driver) leaves it."""
    write(os.path.join(cg, "cgroup.controllers"), "cpuset cpu io memory pids\n")
    write(os.path.join(cg, "cgroup.subtree_control"), "cpu io memory pids\n")
    write(os.path.join(cg, "io.stat"), "")
    for d in ("kubepods.slice", "kubepods.slice/kubepods-burstable.slice",
              "kubepods.slice/kubepods-besteffort.slice"):
        write(os.path.join(cg, d, "cgroup.controllers"), "cpu io memory pids\n")
        write(os.path.join(cg, d, "cgroup.subtree_control"), "cpu io memory pids\n")
        write(os.path.join(cg, d, "io.max"), "")
        write(os.path.join(cg, d, "io.weight"), "default 100\n")


def v2_pod_cgroup_dir(cg, uid, qos="burstable"):
    """Where kubelet (systemd driver) puts the pod cgroup of a QoS class."""
    u = uid.replace("-", "_")
    if qos == "guaranteed":
        return os.path.join(cg, "kubepods.slice", "kubepods-pod%s.slice" % u)
    return os.path.join(cg, "kubepods.slice", "kubepods-%s.slice" % qos,
                        "kubepods-%s-pod%s.slice" % (qos, u))


def v2_pod_cgroup(cg, uid, qos="burstable", atomic=False, files=None):
    """The pod cgroup kubelet creates before PreStartContainer (systemd driver).
    atomic: as a real cgroup mkdir, which shows the directory with all its
    files at once and says IN_CREATE to an inotify watch on the parent: built
    aside, renamed into place (IN_MOVED_TO), then a file is made and removed
    in the parent for the IN_CREATE. A watcher never sees it half-made.
    files: more files and their content (e.g. the memory controller's)."""
    d = v2_pod_cgroup_dir(cg, uid, qos)
    final, d = d, (os.path.join(cg, ".staging", os.path.basename(d)) if atomic else d)
    write(os.path.join(d, "cgroup.controllers"), "cpu io memory pids\n")
    # Plain files do not behave like cgroup files: a write does not merge
    # per-device lines (ioq_write_file truncates, the kernel merges).
    # Start empty so the first write reads back as the kernel would show it.
    write(os.path.join(d, "io.max"), "")
    write(os.path.join(d, "io.weight"), "")
    write(os.path.join(d, "io.stat"), "")
    for name, text in (files or {}).items():
        write(os.path.join(d, name), text)
    if atomic:
        os.rename(d, final)
        poke = os.path.join(os.path.dirname(final), ".ioqos-test-created")
        write(poke, "")
        os.unlink(poke)
    return final


def rm_pod_cgroup(cg, cg_dir):
    """Removes a pod cgroup (below cgroup root cg) at once, as rmdir of a
    real cgroup does: a watcher never sees it without its files (renamed
    aside, then deleted)."""
    aside = os.path.join(cg, ".staging", "gone-" + os.path.basename(cg_dir))
    os.makedirs(os.path.dirname(aside), exist_ok=True)
    os.rename(cg_dir, aside)
    shutil.rmtree(aside)


def iomax_of(cg_dir, majmin):
    """The io.max limits of one device in a pod cgroup, parsed: None when the
    file has no line for it, else {"rbps", "wbps", "riops", "wiops"} with an
    int or None for "max". Tolerates a missing file (None), other devices'
    lines and junk after the fields."""
    try:
        text = read(os.path.join(cg_dir, "io.max"))
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        f = line.split()
        if not f or f[0] != majmin:
            continue
        out = {"rbps": None, "wbps": None, "riops": None, "wiops": None}
        for kv in f[1:]:
            k, _, v = kv.partition("=")
            if k in out:
                try:
                    out[k] = None if v == "max" else int(v)
                except ValueError:  # read half-way through a write
                    return None
        return out
    return None


def unbounded(lim):
    """True when an iomax_of() result places no limit (no line or all max)."""
    return lim is None or all(v is None for v in lim.values())


def set_io_stat(cg_dir, majmin, rbytes=0, wbytes=0, rios=0, wios=0):
    """Replaces a pod cgroup's io.stat at once (rename), so a reader never
    sees it empty half-way through the write."""
    tmp = os.path.join(cg_dir, ".io.stat.tmp")
    write(tmp, "%s rbytes=%d wbytes=%d rios=%d wios=%d dbytes=0 dios=0\n" %
          (majmin, rbytes, wbytes, rios, wios))
    os.rename(tmp, os.path.join(cg_dir, "io.stat"))


def pod_object(name, uid, bw=0, iops=0, ns="default", phase="Pending", qos="Burstable",
               annotations=None, node=NODE):
    limits = {}
    if bw:
        limits[BW] = str(bw)
    if iops:
        limits[IOPS] = str(iops)
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": ns, "uid": uid, "annotations": annotations or {}},
        "spec": {"nodeName": node, "containers": [
            {"name": "app", "image": "busybox", "resources": {"limits": limits, "requests": limits}}]},
        "status": {"phase": phase, "qosClass": qos},
    }


class Daemon:
    """One ioqos-plugin process; log lines go to a file the test can read."""

    def __init__(self, env, extra=(), wrapper=()):
        self.env = env
        self.log_path = os.path.join(env.root, "plugin-%d.log" % time.monotonic_ns())
        self.metrics_port = free_port()
        args = list(wrapper) + [BIN,
                                "--device-plugin-dir", env.dp_dir,
                                "--state-dir", env.state_dir,
                                "--pod-resources-socket", env.podres_sock,
                                "--node-name", NODE,
                                "--kube-api-server", env.api.url,
                                "--cgroupfs-root", env.cgroup_root,
                                "--sysfs-root", env.sysfs_root,
                                "--kubelet-cgroup-root", env.kubelet_cgroup_root,
                                "--cgroup-driver", env.driver,
                                "--metrics-address", "127.0.0.1:%d" % self.metrics_port,
                                "--log-level", "debug"]
        if env.config_path:
            args += ["--config", env.config_path]
        args += list(extra)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)

    def text(self):
        """The log, each logfmt line with its msg unquoted (logfmt.legacy): what
        the tests' patterns are written against."""
        return "\n".join(logfmt.legacy(ln) for ln in read(self.log_path).split("\n"))

    def wait_log(self, pattern, timeout=20.0):
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while time.monotonic() < deadline:
            m = rx.search(self.text())
            if m:
                return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError("log never matched %r (exit=%s); log:\n%s" %
                             (pattern, self.proc.poll(), self.text()[-4000:]))

    def http(self, path, timeout=5):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.metrics_port, path),
                                        timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metric(self, name, **labels):
        """Value of one sample in /metrics (None if absent)."""
        _, text = self.http("/metrics")
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$", line)
            if not m or m.group(1) != name:
                continue
            got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            if all(got.get(k) == str(v) for k, v in labels.items()):
                return float(m.group(3))
        return None

    def wait_ready(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                last = self.http("/readyz", timeout=2)
                if last[0] == 200:
                    return
            except OSError as e:
                last = e
            time.sleep(0.1)
        raise AssertionError("daemon never ready: %s; log:\n%s" % (last, self.text()[-4000:]))

    def terminate(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.log.close()
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


class Env:
    """Temp dirs + kubelet and API server stand-ins. Default: a fake disk
    'fakedisk0' (250:0) on a fake cgroup v2 tree, systemd driver."""

    def __init__(self, bw_bytes=1000 * MIB, iops=100000, disks=(("fakedisk0", "250:0"),),
                 fail_open=False, reconcile_s=1, cgroup_root=None, sysfs_root=None,
                 kubelet_cgroup_root="/", driver="systemd", device_selects=None,
                 extra_config=None):
        self.root = tempfile.mkdtemp(prefix="ioqos-plugin-test-")
        self.dp_dir = os.path.join(self.root, "device-plugins")
        os.makedirs(self.dp_dir)
        self.state_dir = os.path.join(self.root, "state")  # the plugin creates it
        self.podres_sock = os.path.join(self.root, "pod-resources", "kubelet.sock")
        os.makedirs(os.path.dirname(self.podres_sock))
        self.sysfs_root = sysfs_root or os.path.join(self.root, "sys")
        self.cgroup_root = cgroup_root or os.path.join(self.root, "cgroup")
        self.kubelet_cgroup_root = kubelet_cgroup_root
        self.driver = driver
        self.disks = list(disks)
        if not sysfs_root:
            for name, mm in disks:
                fake_disk(self.sysfs_root, name, mm)
        if not cgroup_root:
            v2_tree(self.cgroup_root)
        selects = device_selects or [name for name, _ in disks]
        cfg = {"devices": [{"select": s, "capacity": {"bandwidthBytesPerSec": bw_bytes, "iops": iops}}
                           for s in selects],
               "allocatableFraction": 1.0,
               "enforcement": {"failOpen": fail_open, "reconcileIntervalSeconds": reconcile_s}}
        if extra_config:
            cfg.update(extra_config)
        self.config_path = os.path.join(self.root, "config.json")
        write(self.config_path, json.dumps(cfg))
        self.kubelet = Kubelet(self.dp_dir, self.podres_sock).start()
        self.api = ApiServer().start()
        self.api.set_node({"kind": "Node", "apiVersion": "v1",
                           "metadata": {"name": NODE, "annotations": {}}})
        self.daemons = []

    def start_daemon(self, extra=(), wrapper=()):
        d = Daemon(self, extra, wrapper)
        self.daemons.append(d)
        return d

    def close(self):
        for d in self.daemons:
            if d.proc.poll() is None:
                d.kill()
            elif not d.log.closed:
                d.log.close()
        self.kubelet.stop()
        self.api.stop()
        if not os.environ.get("IOQOS_TEST_KEEP"):
            shutil.rmtree(self.root, ignore_errors=True)


def new_uid():
    return str(uuid.uuid4())


def ids_of(lst, health="Healthy"):
    return [i for i, h in lst if h == health]


class PluginTest(unittest.TestCase):
    """Base: one Env per test, closed afterwards."""
    env_args = {}

    def setUp(self):
        if not BIN or not os.access(BIN, os.X_OK):
            self.fail("IOQOS_PLUGIN_BIN not set or not executable: %r" % BIN)
        self.env = Env(**self.env_args)
        self.addCleanup(self.env.close)

    def start(self, extra=(), wrapper=(), ready=True):
        d = self.env.start_daemon(extra, wrapper)
        if ready:
            self.env.kubelet.wait_registered(BW)
            self.env.kubelet.wait_registered(IOPS)
            d.wait_ready()
        return d

    def admit(self, name, bw=0, iops=0, qos="burstable", annotations=None, ns="default",
              create_cgroup=True, uid=None, atomic=False):
        """What kubelet and the API server do for a new pod up to PreStart:
        the pod object, preferred allocation + Allocate per resource, the
        pod resources entry and the pod cgroup. Returns (uid, ids by resource,
        allocate envs, cgroup dir). uid: a pod whose cgroup exists already
        (none is created then, its dir is returned); atomic: see v2_pod_cgroup."""
        env, k = self.env, self.env.kubelet
        existing = uid is not None
        if existing:
            create_cgroup = False
        uid = uid or new_uid()
        env.api.put_pod(pod_object(name, uid, bw=bw, iops=iops, ns=ns, annotations=annotations,
                                   qos={"burstable": "Burstable", "guaranteed": "Guaranteed",
                                        "besteffort": "BestEffort"}[qos]))
        ids, envs = {}, {}
        for res, n in ((BW, bw), (IOPS, iops)):
            if not n:
                continue
            taken = set(i for _, _, c in k.pod_resources for r in c.values() for i in r.get(res, []))
            # the resource's first list may still be on its way (both resources register
            # apart; seen under ASan on a busy machine): wait for it as kubelet would
            lst = k.wait_list(res, lambda l: len(l) > 0)
            avail = [i for i in ids_of(lst) if i not in taken]
            # the plugin answers from its pod cache: wait until it has the pod
            pref = None
            deadline = time.monotonic() + 10
            while True:
                pref = k.preferred(res, avail, size=n)
                if not annotations or "ioqos.io/disk" not in annotations or time.monotonic() > deadline:
                    break
                chosen = list(pref.container_responses[0].deviceIDs)
                if chosen and chosen[0].startswith(annotations["ioqos.io/disk"] + "-"):
                    break
                time.sleep(0.1)
            chosen = list(pref.container_responses[0].deviceIDs)
            self.assertEqual(len(chosen), n)
            a = k.allocate(res, chosen)
            ids[res] = chosen
            envs.update(dict(a.container_responses[0].envs))
        k.set_pod(ns, name, {"app": ids})
        if create_cgroup:
            cg = v2_pod_cgroup(env.cgroup_root, uid, qos, atomic=atomic)
        else:
            cg = v2_pod_cgroup_dir(env.cgroup_root, uid, qos) if existing else None
        return uid, ids, envs, cg

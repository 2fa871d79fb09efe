#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ioqosctl probe / calibrate against this real machine.

- probe --json: the default disk must be the disk behind /var/lib/kubelet
  (or its nearest existing parent), computed independently here from stat()
  and sysfs; every field an operator reads is present.
- CLI: unknown flags, missing values and bad values exit 2 with a message.
- calibrate: a short run saves a file the probe then reads; Ctrl-C (SIGINT)
  in the middle leaves no temporary file behind; tmpfs (no O_DIRECT) fails
  with a clear message.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

CTL = sys.argv.pop(1) if len(sys.argv) > 1 else "ioqosctl"


def run(*args, **kw):
    return subprocess.run([CTL, *args], capture_output=True, text=True, timeout=120, **kw)


def disk_behind(path):
    while not os.path.exists(path):
        path = os.path.dirname(path)
    st = os.stat(path)
    mm = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
    real = os.path.realpath("/sys/dev/block/" + mm)
    name = os.path.basename(real)
    if os.path.exists(os.path.join(real, "partition")):
        name = os.path.basename(os.path.dirname(real))
    return name


class Probe(unittest.TestCase):
    def test_probe_json_root_disk(self):
        r = run("probe", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertIn(out["cgroup"]["version"], (1, 2))
        self.assertEqual(len(out["disks"]), 1)
        d = out["disks"][0]
        self.assertEqual(d["name"], disk_behind("/var/lib/kubelet"), d)
        with open("/sys/class/block/%s/dev" % d["name"]) as f:
            self.assertEqual(d["dev"], f.read().strip())
        for k in ("class", "selectedBy", "resolution", "throttle", "leaves", "enforceable",
                  "capabilities", "missing", "capacity", "units"):
            self.assertIn(k, d)
        self.assertEqual(d["class"], "default")
        self.assertIn("/var/lib/kubelet", d["selectedBy"])
        # every missing capability says why
        for cap, why in d["missing"].items():
            self.assertTrue(why, cap)
        if out["cgroup"]["version"] == 1:
            self.assertIn("blkio.throttle", d["capabilities"])
            self.assertIn("buffered-writes", d["missing"])
        print("probe of this machine:", json.dumps(d, indent=1))

    def test_probe_text(self):
        r = run("probe")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("disk %s" % disk_behind("/var/lib/kubelet"), r.stdout)
        self.assertIn("enforceable:", r.stdout)

    def test_probe_cgroupfs_root_and_deprecated_spelling(self):
        """--cgroupfs-root names the mount (as in the plugin); the former
        --cgroup-root still works and warns on stderr."""
        r = run("probe", "--json", "--cgroupfs-root", "/sys/fs/cgroup")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("deprecated", r.stderr)
        new = json.loads(r.stdout)
        r = run("probe", "--json", "--cgroup-root", "/sys/fs/cgroup")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ioqosctl probe: warning: --cgroup-root is deprecated and will be removed: "
                      "use --cgroupfs-root", r.stderr)
        self.assertEqual(json.loads(r.stdout)["cgroup"], new["cgroup"])
        # both spellings reach the same code: a tree without cgroups fails alike
        with tempfile.TemporaryDirectory() as empty:
            a = run("probe", "--cgroupfs-root", empty)
            b = run("probe", "--cgroup-root", empty)
        self.assertEqual(a.returncode, 1, a.stderr)
        self.assertEqual(b.returncode, 1, b.stderr)
        self.assertIn(empty, a.stderr)
        self.assertIn(a.stderr.strip(), b.stderr)
        r = run("probe", "--help")
        self.assertIn("--cgroupfs-root DIR", r.stdout)

    def test_probe_config_errors(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            # one bad selector next to a good one: the good disk is still
            # reported (issue 12 item 9), the error named, the exit status 1
            f.write('{"devices": [{"select": "nosuchdisk0"}, {"select": "/var/lib/kubelet"}]}')
            f.flush()
            r = run("probe", "--config", f.name)
            self.assertEqual(r.returncode, 1)
            self.assertIn("devices[0].select 'nosuchdisk0'", r.stderr)
            self.assertIn("not found", r.stderr)
            self.assertIn("disk %s" % disk_behind("/var/lib/kubelet"), r.stdout)
            self.assertIn("selector 'nosuchdisk0': ERROR:", r.stdout)
        r = run("probe", "--config", "/nonexistent.json")
        self.assertEqual(r.returncode, 1)
        self.assertIn("/nonexistent.json", r.stderr)


class Cli(unittest.TestCase):
    def test_usage_errors(self):
        for args, want in [(["probe", "--bogus"], "unknown option '--bogus'"),
                           (["probe", "--config"], "option '--config' needs a value"),
                           (["probe", "extra"], "unexpected argument 'extra'"),
                           (["calibrate"], "--dir PATH is required"),
                           (["calibrate", "--dir", "/tmp", "--seconds", "0"], "--seconds: '0' is not an integer in [1, 600]"),
                           (["calibrate", "--dir", "/tmp", "--seconds", "5x"], "is not an integer"),
                           (["frobnicate"], "unknown command 'frobnicate'")]:
            r = run(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(want, r.stderr, args)

    def test_help(self):
        for cmd in ("probe", "calibrate"):
            r = run(cmd, "--help")
            self.assertEqual(r.returncode, 0)
            self.assertIn("usage: ioqosctl " + cmd, r.stdout)
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        for cmd in ("probe", "calibrate", "cgroup-path", "apply", "show"):
            self.assertIn(cmd, r.stdout)


class Calibrate(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir="/var/tmp", prefix="ioqos-cal-")

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.dir])

    def test_short_run_saves_and_probe_reads(self):
        out = os.path.join(self.dir, "state", "cal.json")
        r = run("calibrate", "--dir", self.dir, "--seconds", "1", "--output", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.listdir(self.dir), ["state"], "temp file left behind")
        cal = json.load(open(out))
        disk = disk_behind(self.dir)
        entry = cal["disks"][disk]
        for k in ("seqReadBytesPerSec", "seqWriteBytesPerSec", "randReadIops", "randWriteIops"):
            self.assertGreater(entry[k], 0, k)
        self.assertIn("sequential write", r.stderr)  # progress lines
        cfg = os.path.join(self.dir, "cfg.json")
        with open(cfg, "w") as f:
            json.dump({"calibrationFile": out, "devices": [{"select": self.dir}]}, f)
        p = json.loads(run("probe", "--json", "--config", cfg).stdout)
        d = p["disks"][0]
        self.assertIn("calibration", d["capacity"]["source"])
        bw = min(entry["seqReadBytesPerSec"], entry["seqWriteBytesPerSec"])
        self.assertEqual(d["capacity"]["bandwidthBytesPerSec"], bw)
        if d["enforceable"]:
            self.assertEqual(d["units"]["ioqos/bandwidth"], int(bw * 0.8 // 1048576))
        print("calibration of %s: %s" % (disk, json.dumps(entry)))

    def test_ctrl_c_leaves_nothing(self):
        p = subprocess.Popen([CTL, "calibrate", "--dir", self.dir, "--seconds", "30", "--no-save"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # wait until the run is under way (first progress line)
        deadline = time.time() + 20
        line = ""
        while time.time() < deadline and "sequential write" not in line:
            line = p.stderr.readline()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("interrupted", err)
        self.assertEqual(os.listdir(self.dir), [])

    def test_tmpfs_is_refused_clearly(self):
        d = tempfile.mkdtemp(dir="/dev/shm", prefix="ioqos-cal-")
        try:
            r = run("calibrate", "--dir", d, "--seconds", "1", "--no-save")
            self.assertEqual(r.returncode, 1)
            self.assertIn("tmpfs", r.stderr)
            self.assertEqual(os.listdir(d), [])
        finally:
            os.rmdir(d)


if __name__ == "__main__":
    unittest.main(verbosity=2)

# SPDX-License-Identifier: Apache-2.0
"""Every binary reports the one version CMake's project(VERSION) defines:
`NAME VERSION` from --version, and ioqos_build_info{binary,version} 1 on the
daemons' /metrics (issue 14 item 1).

Environment (set by CMake): IOQOS_EXPECT_VERSION (PROJECT_VERSION),
IOQOS_PLUGIN_BIN, IOQOS_EXT_BIN, IOQOS_CTL_BIN, IOQOS_PROTO_PY_DIR. Run with
/usr/bin/python3 (the plugin's kubelet stand-in needs Debian's grpcio)."""
import os
import re
import subprocess
import sys
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "plugin"))  # the plugin harness

from harness import PluginTest, free_port  # noqa: E402

VERSION = os.environ.get("IOQOS_EXPECT_VERSION", "")
BINS = {"ioqos-plugin": os.environ.get("IOQOS_PLUGIN_BIN", ""),
        "ioqos-scheduler-ext": os.environ.get("IOQOS_EXT_BIN", ""),
        "ioqosctl": os.environ.get("IOQOS_CTL_BIN", "")}
SAMPLE = re.compile(r'^ioqos_build_info\{([^}]*)\} (\S+)$', re.M)


def build_info(text):
    """The ioqos_build_info samples of a /metrics text: [(labels, value)]."""
    out = []
    for labels, value in SAMPLE.findall(text):
        out.append((dict(re.findall(r'(\w+)="([^"]*)"', labels)), value))
    return out


class Version(unittest.TestCase):
    def test_version_is_the_cmake_version(self):
        self.assertRegex(VERSION, r"^\d+\.\d+\.\d+$", "IOQOS_EXPECT_VERSION not set by CMake")
        for name, path in BINS.items():
            with self.subTest(binary=name):
                r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stdout, "%s %s\n" % (name, VERSION))
                self.assertEqual(r.stderr, "")

    def test_help_lists_version(self):
        # a user finds the flag where the other flags are
        for name, path in BINS.items():
            with self.subTest(binary=name):
                r = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=20)
                self.assertIn("--version", r.stdout + r.stderr)


class BuildInfo(PluginTest):
    def check(self, text, binary):
        self.assertEqual(build_info(text), [({"binary": binary, "version": VERSION}, "1")])
        self.assertRegex(text, r"(?m)^# TYPE ioqos_build_info gauge$")

    def test_plugin(self):
        d = self.start()
        status, text = d.http("/metrics")
        self.assertEqual(status, 200)
        self.check(text, "ioqos-plugin")

    def test_extender(self):
        port, mport = free_port(), free_port()
        log = open(os.path.join(self.env.root, "extender.log"), "w")
        p = subprocess.Popen([BINS["ioqos-scheduler-ext"], "--no-kube", "--listen", "127.0.0.1:%d" % port,
                              "--metrics-listen", "127.0.0.1:%d" % mport], stdout=log, stderr=subprocess.STDOUT)

        def stop():
            p.terminate()
            p.wait(timeout=30)
            log.close()
        self.addCleanup(stop)
        text, deadline = None, time.monotonic() + 30
        while text is None and time.monotonic() < deadline and p.poll() is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=5) as r:
                    text = r.read().decode()
            except OSError:
                time.sleep(0.1)
        self.assertIsNotNone(text, "the extender never served /metrics (exit %s)" % p.poll())
        self.check(text, "ioqos-scheduler-ext")


if __name__ == "__main__":
    unittest.main(verbosity=2)

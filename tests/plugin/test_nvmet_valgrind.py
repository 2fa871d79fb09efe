# SPDX-License-Identifier: Apache-2.0
"""The NVMe-oF namespace passes (config nvmet, test_nvmet.py's fake kernel)
under valgrind memcheck. Its own file so the sanitizer run (make test's
ASan/UBSan part, ctest -E valgrind) leaves it out: valgrind cannot run an
ASan binary."""
import json
import os
import shutil
import unittest

from harness import BW, MIB, read, wait_for, write
from test_nvmet import SUB, NvmetBase, empty_dir

VALGRIND = shutil.which("valgrind")


@unittest.skipUnless(VALGRIND, "valgrind not installed")
class Valgrind(NvmetBase):
    """The nvmet passes under valgrind memcheck: a charged, a waiting, a
    refused and an unconfigured namespace, an entry matching nothing,
    explain requests (good, filtered, unknown, malformed), the cgroup made
    again, then SIGTERM; then a second run with nvmet.parent changed (the
    record read, a namespace moved, an old cgroup kept with its grant and
    one removed). Each: exit 0, no memcheck errors, no definitely lost
    bytes."""

    def test_no_definite_leaks(self):
        cfg = json.loads(read(self.env.config_path))
        cfg["nvmet"]["namespaces"] = [{"subsystem": SUB, "nsid": 1, "grant": {"bandwidth": 10}},
                                      {"subsystem": SUB, "nsid": 2, "limits": {"rbps": 5 * MIB}},
                                      {"subsystem": SUB, "nsid": 3, "grant": {"iops": 1}},
                                      {"subsystem": "nqn.typo", "grant": {"bandwidth": 1}}]
        cfg["enforcement"]["reconcileIntervalSeconds"] = 1
        write(self.env.config_path, json.dumps(cfg))
        self.add_ns(1)
        self.add_ns(2, enabled=True)
        self.add_ns(3, buffered="1")
        self.add_ns(4)
        cg1 = self.make_cgroup(1)
        self.make_cgroup(2)
        memcheck = [VALGRIND, "--leak-check=full", "--show-leak-kinds=definite",
                    "--errors-for-leak-kinds=definite", "--error-exitcode=99", "--num-callers=30"]
        d = self.env.start_daemon(wrapper=memcheck)
        self.env.kubelet.wait_registered(BW, timeout=120)
        d.wait_ready(timeout=120)
        wait_for(lambda: self.attr(1, "cgroup_id") == str(os.stat(cg1).st_ino), timeout=60,
                 what="namespace 1 charged")
        d.wait_log(r"namespace=%s/2 state=\"will apply at next enable" % SUB, timeout=60)
        for args, rc in ((["--nvmet"], 0), (["--json", "--nvmet", SUB], 0), (["--nvmet", SUB + "/9"], 1),
                         (["--nvmet", SUB + "/0"], 1)):
            r = self.ctl_explain(*args)
            self.assertEqual(r.returncode, rc, (args, r.stdout, r.stderr))
        os.rename(cg1, os.path.join(self.env.root, "old-cgroup"))
        self.make_cgroup(1)
        wait_for(lambda: self.attr(1, "cgroup_id") == str(os.stat(cg1).st_ino), timeout=60,
                 what="namespace 1 re-pointed")
        rc = d.terminate(timeout=120)
        self.assertEqual(rc, 0, "valgrind exit %d:\n%s" % (rc, d.text()[-6000:]))
        self.assertNotRegex(d.text(), r"definitely lost: [1-9]")
        self.assertIn("HEAP SUMMARY", d.text(), "memcheck ran")

        old1 = cg1
        cfg["nvmet"]["parent"] = "storage.slice/nvmet"
        write(self.env.config_path, json.dumps(cfg))
        new1 = self.make_cgroup(1, parent="storage.slice/nvmet")
        self.make_cgroup(2, parent="storage.slice/nvmet")
        d = self.env.start_daemon(wrapper=memcheck)
        self.env.kubelet.wait_registered(BW, timeout=120)
        d.wait_ready(timeout=120)
        wait_for(lambda: self.attr(1, "cgroup_id") == str(os.stat(new1).st_ino), timeout=60,
                 what="namespace 1 moved below the new parent")
        empty_dir(old1)
        wait_for(lambda: not os.path.exists(old1), timeout=60, what="its old cgroup removed")
        rc = d.terminate(timeout=120)
        self.assertEqual(rc, 0, "valgrind exit %d:\n%s" % (rc, d.text()[-6000:]))
        self.assertNotRegex(d.text(), r"definitely lost: [1-9]")
        self.assertIn("HEAP SUMMARY", d.text(), "memcheck ran")


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""One integration run of the daemon under valgrind memcheck: the kubelet
contract (register, list, preferred allocation, allocate, bad input,
PreStart with enforcement, kubelet restart) then SIGTERM. The run must end
with exit 0, no memcheck errors and no definitely lost bytes."""
import re
import shutil
import time
import unittest

import grpc

from harness import BW, IOPS, PluginTest, free_port, ids_of
from test_http_slow import Trickler, get

VALGRIND = shutil.which("valgrind")


@unittest.skipUnless(VALGRIND, "valgrind not installed")
class Valgrind(PluginTest):
    def test_no_definite_leaks(self):
        k = self.env.kubelet
        health_port = free_port()
        d = self.env.start_daemon(extra=["--health-address", "127.0.0.1:%d" % health_port,
                                         "--http-request-timeout", "3"],
                                  wrapper=[VALGRIND, "--leak-check=full", "--show-leak-kinds=definite",
                                           "--errors-for-leak-kinds=definite", "--error-exitcode=99",
                                           "--num-callers=30"])
        k.wait_registered(BW, timeout=120)
        k.wait_registered(IOPS, timeout=120)
        d.wait_ready(timeout=120)
        lst = k.wait_list(BW, lambda l: len(l) == 1000, timeout=60)
        r = k.preferred(BW, ids_of(lst), size=20, timeout=60)
        self.assertEqual(len(r.container_responses[0].deviceIDs), 20)
        with self.assertRaises(grpc.RpcError):
            k.raw(BW, "Allocate", b"\xff\x00garbage", timeout=60)
        with self.assertRaises(grpc.RpcError):
            k.allocate(BW, ["fakedisk0-bw-1", "fakedisk0-bw-1"], timeout=60)
        uid, ids, envs, cg = self.admit("db", bw=20, iops=5)
        k.prestart(BW, ids[BW], timeout=60)
        with self.assertRaises(grpc.RpcError):
            k.prestart(BW, ["fakedisk0-bw-999"], timeout=60)  # not listed: error + event
        self.env.api.wait(lambda: self.env.api.events, timeout=60, what="event")
        self.assertEqual(d.http("/metrics", timeout=30)[0], 200)
        # slow clients: per-IP refusals, a deadline cut, the probe listener;
        # one slow socket stays open through shutdown
        t = Trickler(d.metrics_port, ["127.0.0.1"] * 6, period=0.5)
        self.addCleanup(t.close)
        self.assertEqual(get(health_port, "/healthz", timeout=30)[0], 200)
        until = time.monotonic() + 60
        while len(t.closed_after) + t.refused < 6 and time.monotonic() < until:
            time.sleep(0.2)
        self.assertEqual(len(t.closed_after) + t.refused, 6, "2 refused per IP, 4 cut at the deadline")
        t.close()
        t2 = Trickler(health_port, ["127.0.0.1"], period=0.5)
        self.addCleanup(t2.close)
        k.restart()
        k.wait_registered(BW, count=2, timeout=120)
        k.wait_registered(IOPS, count=2, timeout=120)
        k.remove_pod("default", "db")
        self.env.api.delete("Pod", "default", "db")
        d.wait_log(r"pod gone", timeout=60)
        rc = d.terminate(timeout=120)
        log = d.text()
        summary = re.findall(r"==\d+== (?:ERROR SUMMARY|   definitely lost).*", log)
        self.assertEqual(rc, 0, "exit %d; %s\n%s" % (rc, summary, log[-6000:]))
        self.assertRegex(log, r"ERROR SUMMARY: 0 errors")
        m = re.search(r"definitely lost: ([\d,]+) bytes", log)
        self.assertTrue(m is None or m.group(1) == "0", summary)


if __name__ == "__main__":
    unittest.main(verbosity=2)

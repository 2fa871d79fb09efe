# SPDX-License-Identifier: Apache-2.0
"""One integration run of the daemon under valgrind memcheck: the kubelet
contract (register, list, preferred allocation, allocate, bad input,
PreStart with enforcement, kubelet restart), init container grants (a
restored state file, an ambiguous init-only PreStart), explain requests
(good and garbage) then SIGTERM. The run must end
with exit 0, no memcheck errors and no definitely lost bytes."""
import json
import os
import re
import shutil
import time
import unittest

import grpc

from harness import BW, IOPS, PluginTest, free_port, ids_of, new_uid, pod_object, v2_pod_cgroup, write
from test_explain import raw_get
from test_http_slow import Trickler, get

VALGRIND = shutil.which("valgrind")


@unittest.skipUnless(VALGRIND, "valgrind not installed")
class Valgrind(PluginTest):
    def test_no_definite_leaks(self):
        k = self.env.kubelet
        # init container grants a previous instance saved, for a pod now gone
        write(os.path.join(self.env.state_dir, "init-grants.json"), json.dumps({"version": 1, "pods": [{
            "uid": new_uid(), "namespace": "default", "name": "gone", "cgroup": "/nonexistent",
            "cgroupVersion": 2, "grant": [{"disk": "fakedisk0", "dev": "250:0", "bandwidth": 2, "iops": 0}],
            "initUnits": {BW: ["fakedisk0-bw-900", "fakedisk0-bw-901"]}, "initGuess": [BW]}]}))
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
        sock = os.path.join(self.env.state_dir, "plugin.sock")
        st, body = raw_get(sock, "/v1/explain?pod=default/db")
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body)["files"][0]["file"], "io.max")
        self.assertEqual(raw_get(sock, "/v1/explain?uid=" + uid)[0], 200)
        self.assertEqual(raw_get(sock, "/v1/explain?pod=default/nosuch")[0], 404)
        self.assertEqual(raw_get(sock, "/v1/explain?pod=%zz")[0], 400)
        raw_get(sock, "/v1/explain?pod=" + "x" * 60000)
        # an init-only start two pending pods could have asked for
        for name in ("i1", "i2"):
            uid2 = new_uid()
            pod = pod_object(name, uid2)
            pod["spec"]["initContainers"] = [{"name": "load", "resources": {
                "limits": {BW: "3"}, "requests": {BW: "3"}}}]
            self.env.api.put_pod(pod)
            k.set_pod("default", name, {"app": {}})
            v2_pod_cgroup(self.env.cgroup_root, uid2)
        k.prestart(BW, ["fakedisk0-bw-950", "fakedisk0-bw-951", "fakedisk0-bw-952"], timeout=60)
        d.wait_log(r"limiting every one of them", timeout=60)
        d.wait_log(r"init container grant restored pod=default/gone", timeout=60)
        d.wait_log(r"pod gone, its cgroup too pod=default/gone", timeout=60)
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

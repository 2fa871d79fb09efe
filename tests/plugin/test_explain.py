# SPDX-License-Identifier: Apache-2.0
"""`ioqosctl explain` and the plugin's explain socket (GET /v1/explain).

The daemon runs against the kubelet and API server stand-ins over a fake
cgroup v2 tree; ioqosctl (IOQOS_CTL_BIN) talks to the daemon's unix socket
with libcurl. A granted pod shows its units, disk, the reason, the cgroup
path and each file written with its read-back value; a pod without a grant
shows the node policy (the ungranted pool and its bound); an unknown pod is
a clear error with exit status 1; the socket is 0600 and a non-root client
is refused; garbage requests get 4xx and the plugin keeps serving."""
import http.client
import json
import os
import socket
import stat
import subprocess
import time
import unittest

from harness import BW, IOPS, MIB, PluginTest, iomax_of, new_uid, pod_object, v2_pod_cgroup, wait_for

CTL = os.environ.get("IOQOS_CTL_BIN", "")
DEV = "250:0"
DISK = "fakedisk0"


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s


def raw_get(path, target, method="GET"):
    """(status, body) of one request on the unix socket; status None when the
    server closed the connection without an answer."""
    c = UnixHTTP(path)
    try:
        c.request(method, target)
        r = c.getresponse()
        return r.status, r.read().decode(errors="replace")
    except (http.client.HTTPException, ConnectionError) as e:
        return None, str(e)
    finally:
        c.close()


class ExplainTest(PluginTest):
    # lending off: the pool checked below is what nobody holds (the granted pod is idle and
    # would lend; test_ungranted.py proves lending, test_ctl_explain_render its rendering)
    env_args = {"extra_config": {"nodePolicy": {"ungranted": {"enable": True, "intervalMs": 200,
                                                              "lend": False},
                                                "qosClassWeights": {"besteffort": 10}}}}

    def setUp(self):
        super().setUp()
        if not CTL or not os.access(CTL, os.X_OK):
            self.fail("IOQOS_CTL_BIN not set or not executable: %r" % CTL)
        self.sock = os.path.join(self.env.state_dir, "plugin.sock")  # the default

    def ctl(self, *args, user=None):
        pre = None
        if user is not None:
            def pre():
                os.setgid(user)
                os.setuid(user)
        return subprocess.run([CTL, "explain", "--socket", self.sock] + list(args),
                              capture_output=True, text=True, timeout=60, preexec_fn=pre)

    def explain_json(self, pod):
        r = self.ctl("--json", pod)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def granted_pod(self):
        uid, ids, _, cg = self.admit("db", bw=100, iops=5)
        self.env.kubelet.prestart(BW, ids[BW])
        return uid, ids, cg

    def test_granted_pod(self):
        d = self.start()
        self.assertEqual(stat.S_IMODE(os.lstat(self.sock).st_mode), 0o600)
        uid, ids, cg = self.granted_pod()
        lim = iomax_of(cg, DEV)
        self.assertEqual(lim["rbps"], 100 * MIB)

        doc = self.explain_json("default/db")
        self.assertTrue(doc["granted"])
        self.assertEqual(doc["pod"]["uid"], uid)
        self.assertEqual(doc["pod"]["qosClass"], "Burstable")
        rows = {(c["container"], c["resource"]): c for c in doc["containers"]}
        self.assertEqual(rows[("app", BW)]["units"], 100)
        self.assertEqual(rows[("app", BW)]["disk"], DISK)
        self.assertEqual(rows[("app", IOPS)]["units"], 5)
        g = doc["grants"][0]
        self.assertEqual(g["disk"], DISK)
        self.assertEqual(g["device"], DEV)
        self.assertEqual(g["units"], {BW: 100, IOPS: 5})
        self.assertEqual(g["limits"]["rbps"], 100 * MIB)
        self.assertEqual(g["limits"]["wiops"], 500)
        # the one pending pod asked: the preferred-allocation decision is known
        self.assertIn("placement", [p["how"] for p in g["reason"]["preferredAllocation"]])
        self.assertIn("placement policy", g["reason"]["summary"])
        self.assertEqual(doc["cgroup"]["path"], cg)
        self.assertIn("derived from QoS class Burstable", doc["cgroup"]["how"])
        files = {f["file"]: f for f in doc["files"]}
        iomax = files["io.max"]
        self.assertEqual(iomax["path"], os.path.join(cg, "io.max"))
        self.assertIn("rbps=%d" % (100 * MIB), iomax["readBack"])
        self.assertIn("rbps=%d" % (100 * MIB), iomax["written"])
        self.assertGreater(iomax["writtenAt"], time.time() - 120)
        self.assertGreaterEqual(iomax["verifiedAt"], iomax["writtenAt"])
        self.assertIsInstance(doc["events"], list)
        # the grant monitor's view, once it has taken the pod in (1 s interval)
        mon = wait_for(lambda: self.explain_json("default/db")["monitor"].get("monitored") and
                       self.explain_json("default/db")["monitor"], what="the monitor's view")
        self.assertTrue(mon["enabled"])
        self.assertEqual(mon["disks"][0]["disk"], DISK)
        self.assertEqual(mon["disks"][0]["grant"]["rbps"], 100 * MIB)

        # the screen
        r = self.ctl("default/db")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        print(out)
        for want in ("Pod:      default/db", "app", BW, DISK, "why this disk:", cg,
                     "derived from QoS class Burstable", os.path.join(cg, "io.max"), "wrote \"",
                     "read back \"", "rbps=%d" % (100 * MIB), "Monitor:  every 1 s", "  %s: " % DISK, "Events",
                     "Node policy"):
            self.assertIn(want, out)

        # cost, printed (not asserted): the whole round trip of the CLI
        ts = []
        for _ in range(5):
            t0 = time.monotonic()
            self.explain_json("default/db")
            ts.append((time.monotonic() - t0) * 1000)
        print("ioqosctl explain --json round trip: median %.1f ms, max %.1f ms (5 runs)" %
              (sorted(ts)[2], max(ts)))
        # by UID: the same pod
        self.assertEqual(self.explain_json(uid)["pod"]["name"], "db")

        # a reconcile pass finds the limits in place: the write time stays,
        # the read-back time moves
        t0 = iomax["writtenAt"]
        wait_for(lambda: {f["file"]: f for f in self.explain_json("default/db")["files"]}["io.max"]
                 ["verifiedAt"] > iomax["verifiedAt"], what="a later read-back")
        self.assertEqual({f["file"]: f for f in self.explain_json("default/db")["files"]}
                         ["io.max"]["writtenAt"], t0)
        d.terminate()
        self.assertFalse(os.path.exists(self.sock), "socket not removed on exit")

    def test_pod_without_grant_and_events(self):
        self.start()
        self.granted_pod()  # the pool is active on the disk only while units are held
        uid = new_uid()
        self.env.api.put_pod(pod_object("web", uid, phase="Running", qos="BestEffort"))
        # 100 MiB used, 30 MiB of it page cache; no memory limit
        mem = {"memory.current": "%d\n" % (100 * MIB), "memory.max": "max\n", "memory.high": "max\n",
               "memory.stat": "anon %d\nfile %d\nactive_file %d\ninactive_file %d\nfile_dirty %d\n"
                              "file_writeback %d\n" % (70 * MIB, 30 * MIB, 20 * MIB, 10 * MIB, 3 * MIB, 1 * MIB)}
        v2_pod_cgroup(self.env.cgroup_root, uid, "besteffort", atomic=True, files=mem)

        def bounded():
            doc = self.explain_json("default/web")
            pod = doc["nodePolicy"]["ungranted"].get("pod", {})
            ds = pod.get("disks", [])
            return doc if ds and ds[0].get("bounded") and pod.get("pageCache", {}).get("bounded") else None
        doc = wait_for(bounded, what="the ungranted pod's bound")
        self.assertFalse(doc["granted"])
        self.assertEqual(doc["grants"], [])
        self.assertEqual(doc["files"], [])
        ug = doc["nodePolicy"]["ungranted"]
        self.assertTrue(ug["enable"])
        disk = ug["pod"]["disks"][0]
        self.assertEqual(disk["disk"], DISK)
        self.assertTrue(disk["active"])
        self.assertEqual(disk["poolBytesPerSec"], 1000 * MIB - 100 * MIB)
        self.assertGreater(disk["capBytesPerSec"], 0)
        self.assertEqual(doc["nodePolicy"]["qosClassWeights"]["BestEffort"], 10)
        # its page cache bound: memory.high = 70 MiB it cannot give back + 64 MiB (the default room)
        pc = ug["pod"]["pageCache"]
        self.assertEqual(pc["memoryHighBytes"], 134 * MIB)
        self.assertEqual(pc["roomBytes"], 64 * MIB)
        self.assertEqual(pc["pinnedBytes"], 70 * MIB)
        self.assertEqual(pc["dirtyBytes"] + pc["writebackBytes"], 4 * MIB)
        r = self.ctl("default/web")
        self.assertEqual(r.returncode, 0, r.stderr)
        print(r.stdout)
        for want in ("Node policy (this pod has no grant)", "pool 900 MiB/s", "this pod's bound",
                     "this pod's page cache: bounded, memory.high 134 MiB (its other memory + 64 MiB); "
                     "4 MiB dirty or under writeback",
                     "BestEffort 10 (this pod: BestEffort)",
                     "none: the pod requests no ioqos units"):
            self.assertIn(want, r.stdout)

        # a pod whose PreStart fails (no cgroup) gets an Event; explain lists it
        uid2, ids2, _, _ = self.admit("nocg", bw=10, create_cgroup=False)
        try:
            self.env.kubelet.prestart(BW, ids2[BW], timeout=30)
        except Exception:  # noqa: BLE001  (the failure is the point)
            pass
        evs = wait_for(lambda: self.explain_json("default/nocg")["events"], what="an event")
        self.assertEqual(evs[0]["type"], "Warning")
        self.assertTrue(evs[0]["reason"])
        r = self.ctl("default/nocg")
        self.assertIn(evs[0]["reason"], r.stdout)

    def test_errors_and_garbage(self):
        d = self.start()
        r = self.ctl("default/nosuchpod")
        self.assertEqual(r.returncode, 1)
        self.assertIn("not found", r.stderr)
        self.assertIn("default/nosuchpod", r.stderr)
        r = self.ctl("--json", "default/nosuchpod")
        self.assertEqual(r.returncode, 1)
        self.assertIn("error", json.loads(r.stdout))
        # a pod of another node is not explained here (nor fetched into this
        # node's pod cache, where GetPreferredAllocation looks for candidates)
        self.env.api.put_pod(pod_object("elsewhere", new_uid(), bw=10, node="node-b"))
        time.sleep(0.5)
        r = self.ctl("default/elsewhere")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("not found on node node-a", r.stderr)
        # usage errors
        self.assertEqual(self.ctl("not-a-uid").returncode, 2)
        self.assertEqual(self.ctl().returncode, 2)
        # no socket
        r = subprocess.run([CTL, "explain", "--socket", "/nonexistent/x.sock", "default/db"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no explain socket", r.stderr)

        # garbage on the socket: 4xx, and the plugin keeps serving
        cases = [
            ("/v1/explain?pod=" + "a" * 100000, (400, 404, 413, 414, 431, None)),
            ("/v1/explain?pod=%zz%", (400,)),
            ("/v1/explain?pod=default/a/b", (400,)),
            ("/v1/explain?uid=not-a-uid", (400,)),
            ("/v1/explain", (400,)),
            ("/v1/explain?pod=default/x&uid=" + new_uid(), (400,)),
            ("/metrics", (404,)),
            ("/v2/explain?pod=default/db", (404,)),
            ("/../../etc/passwd", (404,)),
        ]
        for target, want in cases:
            st, body = raw_get(self.sock, target)
            self.assertIn(st, want, "%s -> %s %s" % (target[:60], st, body[:200]))
        st, _ = raw_get(self.sock, "/v1/explain?pod=default/db", method="POST")
        self.assertEqual(st, 405)
        st, body = raw_get(self.sock, "/v1/explain?pod=default/nosuchpod")
        self.assertEqual(st, 404)
        self.assertIn("not found", json.loads(body)["error"])
        self.granted_pod()
        st, body = raw_get(self.sock, "/v1/explain?pod=default%2Fdb")
        self.assertEqual(st, 200, body)
        self.assertTrue(json.loads(body)["granted"])
        self.assertIsNone(d.proc.poll())

    def test_socket_root_only(self):
        d = self.start()
        self.granted_pod()
        st = os.lstat(self.sock)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        self.assertEqual(st.st_uid, os.geteuid())
        if os.geteuid() != 0:
            self.skipTest("needs root to run a client as another user")
        # let 'nobody' reach the directory: only the socket's own mode stops it
        os.chmod(self.env.root, 0o755)
        os.chmod(self.env.state_dir, 0o755)
        r = self.ctl("default/db", user=65534)
        self.assertEqual(r.returncode, 1)
        self.assertIn("permission denied", r.stderr)
        self.assertIn("kubectl", r.stderr)
        # a raw connect as nobody is refused by the kernel
        pid = os.fork()
        if pid == 0:  # child: connect as nobody, exit 0 if refused
            try:
                os.setgid(65534)
                os.setuid(65534)
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(self.sock)
                    os._exit(1)
                except PermissionError:
                    os._exit(0)
            except BaseException:  # noqa: BLE001
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, "non-root connect not refused")
        self.assertEqual(self.ctl("default/db").returncode, 0)
        d.terminate()

    def test_socket_path_checks(self):
        # a stale socket (nobody listens) is replaced
        os.makedirs(self.env.state_dir, exist_ok=True)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(self.sock)
        s.close()
        d = self.start()
        d.wait_log(r"explain socket: stale socket replaced")
        self.assertEqual(self.ctl("default/nosuchpod").returncode, 1)
        # a second plugin on the same socket is refused (its own device
        # plugin sockets differ: another --device-plugin-dir)
        other = os.path.join(self.env.root, "dp2")
        os.makedirs(other)
        d2 = self.env.start_daemon(extra=("--device-plugin-dir", other))
        self.assertNotEqual(d2.proc.wait(30), 0)
        self.assertIn("another process serves it", d2.text())
        self.assertTrue(os.path.exists(self.sock))
        d.terminate()
        self.assertFalse(os.path.exists(self.sock))
        if os.geteuid() != 0:
            return
        # a socket owned by another user is not taken over
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(self.sock)
        s.close()
        os.chown(self.sock, 65534, 65534)
        d3 = self.env.start_daemon()
        self.assertNotEqual(d3.proc.wait(30), 0)
        self.assertIn("owned by uid 65534", d3.text())
        self.assertTrue(os.path.exists(self.sock))
        # off disables it
        os.unlink(self.sock)
        d4 = self.start(extra=("--explain-socket", "off"))
        self.assertFalse(os.path.exists(self.sock))
        d4.terminate()


if __name__ == "__main__":
    unittest.main()

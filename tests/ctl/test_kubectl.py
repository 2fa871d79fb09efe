#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kubectl ioqos (the ioqosctl binary run as kubectl-ioqos) against the API
server stand-in (tests/support/apiserver.py) over its real libcurl client.

- nodes: a node with the plugin's annotation (a healthy and an unhealthy
  disk, with the reason), one without it ("no ioqos plugin"), one whose
  annotation does not parse (shown with the codec's error, the rest listed),
  one whose annotation is stale; aligned columns; -o json parses and says the
  same; hostile control characters never reach the terminal.
- pods: ioqos pods only, in the context's namespace, -n, -A; the disk from
  ioqos.io/disk or the only disk of the class; the grant "held" once the node
  annotation lists the pod's UID; unscheduled, node without plugin.
- pagination: --chunk-size N reads every page through continue tokens.
- errors: 403 names the permission (list nodes / list pods), 401, an API
  server that is not there, no credentials at all; exit statuses.
- credentials: --kubeconfig, KUBECONFIG, ~/.kube/config, --context (two
  API servers, each context reaches its own).
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from apiserver import ApiServer, Failure  # noqa: E402

CTL = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else shutil.which("ioqosctl")
BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None  # for cmake --install
MiB = 1 << 20
TOKEN = "s3cret-token"


def utc(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def anno(node, disks, pods=(), published=None):
    a = {"version": 1, "node": node, "units": {"ioqos/bandwidth": MiB, "ioqos/iops": 100},
         "devices": disks, "pods": list(pods)}
    if published is not None:
        a["publishedAt"] = utc(published)
    return json.dumps(a, separators=(",", ":"))


def disk(name, cls="default", healthy=True, cap=(1000, 200), alloc=(0, 0), reason=None):
    d = {"name": name, "dev": "8:%d" % (ord(name[-1]) % 16), "class": cls, "healthy": healthy,
         "capacity": {"ioqos/bandwidth": cap[0], "ioqos/iops": cap[1]},
         "allocated": {"ioqos/bandwidth": alloc[0], "ioqos/iops": alloc[1]},
         "capabilities": ["io.max", "io.weight"]}
    if reason:
        d["reason"] = reason
    return d


def node(name, annotation=None):
    md = {"name": name, "labels": {"kubernetes.io/hostname": name}}
    if annotation is not None:
        md["annotations"] = {"ioqos.io/devices": annotation}
    return {"kind": "Node", "metadata": md, "status": {"images": [{"names": ["x" * 200]}] * 20}}


def pod(ns, name, uid, node_name=None, bw=None, iops=None, disk_name=None, cls=None, phase="Running"):
    lim = {}
    if bw:
        lim["ioqos/bandwidth"] = str(bw)
    if iops:
        lim["ioqos/iops"] = str(iops)
    ann = {}
    if disk_name:
        ann["ioqos.io/disk"] = disk_name
    if cls:
        ann["ioqos.io/class"] = cls
    p = {"kind": "Pod", "metadata": {"namespace": ns, "name": name, "uid": uid, "annotations": ann},
         "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"limits": lim, "requests": dict(lim)}}]},
         "status": {"phase": phase}}
    if node_name:
        p["spec"]["nodeName"] = node_name
    return p


def kubeconfig(path, contexts, current):
    """contexts: name -> (server, token, namespace or None)"""
    lines = ["apiVersion: v1", "kind: Config", "current-context: %s" % current, "contexts:"]
    for n, (_, _, ns) in contexts.items():
        lines += ["- name: %s" % n, "  context:", "    cluster: c-%s" % n, "    user: u-%s" % n]
        if ns:
            lines.append("    namespace: %s" % ns)
    lines.append("clusters:")
    for n, (server, _, _) in contexts.items():
        lines += ["- name: c-%s" % n, "  cluster:", "    server: %s" % server]
    lines.append("users:")
    for n, (_, tok, _) in contexts.items():
        lines += ["- name: u-%s" % n, "  user:", "    token: %s" % tok]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def without_ages(out):
    """-o json of nodes without ageSeconds: two runs a second apart agree."""
    doc = json.loads(out)
    for n in doc["nodes"]:
        n.pop("ageSeconds", None)
    return doc


def cells(line):
    """(start column, text) of each cell of a table line: cells are split by
    three or more spaces (a cell holds at most single spaces)."""
    return [(m.start(), m.group(0)) for m in re.finditer(r"\S+(?: \S+)*", line)]


class Kubectl(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ioqos-kubectl-")
        # the kubectl plugin: the same binary under the name kubectl looks for on PATH
        cls.bindir = os.path.join(cls.tmp, "bin")
        os.mkdir(cls.bindir)
        cls.plugin = os.path.join(cls.bindir, "kubectl-ioqos")
        os.symlink(CTL, cls.plugin)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.now = int(time.time())
        self.api = ApiServer(token=TOKEN).start()
        self.home = tempfile.mkdtemp(dir=self.tmp)
        self.kc = os.path.join(self.home, "kc.yaml")
        kubeconfig(self.kc, {"main": (self.api.url, TOKEN, "team-a")}, "main")
        a = self.api
        a.set_node(node("node-a", anno("node-a", [
            disk("nvme0n1", alloc=(300, 5)),
            disk("sdb", cls="slow", healthy=False, cap=(200, 0),
                 reason="capacity of sdb: /var/lib/ioqos/calibration.json: not a JSON object")],
            pods=["uid-db", "uid-backup"], published=self.now - 30)))
        a.set_node(node("node-b"))
        a.set_node(node("node-c", "{\"version\":1,\"devices\":"))
        a.set_node(node("node-d", anno("node-d", [disk("vda", cap=(80, 10))], published=self.now - 3600)))
        a.set_node(node("node-e", anno("node-e", [disk("vda", cls="fast"), disk("vdb", cls="fast")],
                                       published=self.now - 5)))
        a.put_pod(pod("team-a", "db", "uid-db", "node-a", bw=200, disk_name="nvme0n1"))
        a.put_pod(pod("team-a", "web", "uid-web", "node-a"))  # no ioqos request: not listed
        a.put_pod(pod("team-a", "pending", "uid-pending", bw=50, phase="Pending"))
        a.put_pod(pod("team-b", "backup", "uid-backup", "node-a", bw=100, iops=5))
        a.put_pod(pod("team-b", "orphan", "uid-orphan", "node-b", bw=10))
        a.put_pod(pod("team-b", "fresh", "uid-fresh", "node-e", iops=3, cls="fast"))
        a.put_pod(pod("team-c", "done", "uid-done", "node-a", bw=10, phase="Succeeded"))

    def tearDown(self):
        self.api.stop()

    def run_plugin(self, *args, env=None, kubeconfig=True, exe=None):
        e = {"PATH": os.environ.get("PATH", ""), "HOME": self.home,
             "IOQOS_KUBE_ALLOW_INSECURE_TOKEN": "1"}
        e.update(env or {})
        argv = [exe or self.plugin, *args]
        if kubeconfig:
            argv += ["--kubeconfig", self.kc]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=e)

    def table(self, out):
        lines = out.rstrip("\n").split("\n")
        head = cells(lines[0])
        rows = []
        for ln in lines[1:]:
            c = cells(ln)
            self.assertEqual([s for s, _ in c], [s for s, _ in head], "column starts of %r vs header %r" % (ln, lines[0]))
            self.assertFalse(ln.endswith(" "), "trailing blank: %r" % ln)
            rows.append(dict(zip([h for _, h in head], [t for _, t in c])))
        return rows

    # ---- nodes ----
    def test_nodes_table(self):
        r = self.run_plugin("nodes")
        self.assertEqual(r.returncode, 0, r.stderr)
        print(r.stdout)
        rows = self.table(r.stdout)
        by = {(x["NODE"], x["DISK"]): x for x in rows}
        a = by[("node-a", "nvme0n1")]
        self.assertEqual((a["CLASS"], a["HEALTHY"], a["BW-CAP"], a["BW-ALLOC"], a["BW-FREE"]),
                         ("default", "true", "1000MiB/s", "300MiB/s", "700MiB/s"))
        self.assertEqual((a["IOPS-CAP"], a["IOPS-ALLOC"], a["IOPS-FREE"], a["REASON"]), ("20000", "500", "19500", "<none>"))
        self.assertRegex(a["PUBLISHED"], r"^\d+s$")  # 30 s old when the test started
        self.assertTrue(30 <= int(a["PUBLISHED"][:-1]) < 120, a["PUBLISHED"])
        s = by[("node-a", "sdb")]
        self.assertEqual((s["CLASS"], s["HEALTHY"]), ("slow", "false"))
        self.assertIn("calibration.json: not a JSON object", s["REASON"])
        self.assertEqual(by[("node-b", "-")]["REASON"], "no ioqos plugin")
        bad = by[("node-c", "-")]["REASON"]
        self.assertTrue(bad.startswith("invalid: annotation ioqos.io/devices: invalid JSON"), bad)
        self.assertEqual(by[("node-d", "vda")]["PUBLISHED"], "60m (stale)")
        self.assertEqual([x["NODE"] for x in rows], ["node-a", "node-a", "node-b", "node-c", "node-d", "node-e", "node-e"])

    def test_nodes_json_matches(self):
        r = self.run_plugin("nodes", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        nodes = {n["name"]: n for n in out["nodes"]}
        self.assertEqual(sorted(nodes), ["node-a", "node-b", "node-c", "node-d", "node-e"])
        a = nodes["node-a"]
        self.assertTrue(a["plugin"])
        self.assertEqual(a["publishedAt"], utc(self.now - 30))
        self.assertFalse(a["stale"])
        d = {x["name"]: x for x in a["disks"]}
        self.assertEqual(d["nvme0n1"]["capacity"], {"ioqos/bandwidth": 1000, "ioqos/iops": 200})
        self.assertEqual(d["nvme0n1"]["free"], {"ioqos/bandwidth": 700, "ioqos/iops": 195})
        self.assertEqual(d["nvme0n1"]["bandwidthBytesPerSecond"],
                         {"capacity": 1000 * MiB, "allocated": 300 * MiB, "free": 700 * MiB})
        self.assertEqual(d["nvme0n1"]["iops"], {"capacity": 20000, "allocated": 500, "free": 19500})
        self.assertFalse(d["sdb"]["healthy"])
        self.assertIn("not a JSON object", d["sdb"]["reason"])
        self.assertNotIn("reason", d["nvme0n1"])
        self.assertEqual(nodes["node-b"], {"name": "node-b", "plugin": False})
        self.assertIn("invalid JSON", nodes["node-c"]["error"])
        self.assertTrue(nodes["node-d"]["stale"])

    def test_hostile_reason_cannot_reach_the_terminal(self):
        self.api.set_node(node("node-x", anno("node-x", [disk("sda", healthy=False, reason="bad\n\x1b[2Jdisk\tX")],
                                              published=self.now)))
        r = self.run_plugin("nodes")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("\x1b", r.stdout)
        self.assertIn("bad??[2Jdisk?X", r.stdout)
        self.table(r.stdout)

    def test_nodes_pagination(self):
        for i in range(7):
            self.api.set_node(node("node-p%d" % i))
        one = self.run_plugin("nodes", "--chunk-size", "0", "-o", "json")
        self.assertEqual(one.returncode, 0, one.stderr)
        before = len(self.api.requests)
        r = self.run_plugin("nodes", "--chunk-size", "3", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        gets = [q["path"] for q in self.api.requests[before:] if q["path"].startswith("/api/v1/nodes")]
        # 12 nodes, 3 per page: 4 pages, each after the first with the previous continue token
        self.assertEqual(len(gets), 4, gets)
        self.assertTrue(all("limit=3" in g for g in gets), gets)
        self.assertNotIn("continue=", gets[0])
        self.assertTrue(all("continue=" in g for g in gets[1:]), gets)
        self.assertEqual(without_ages(r.stdout), without_ages(one.stdout))
        self.assertEqual(len(json.loads(r.stdout)["nodes"]), 5 + 7)

    def test_failure_on_a_later_page(self):
        """The second page fails: nothing half-printed, the error says why."""
        real = self.api._list
        pages = []

        def flaky(kind, ns, q):
            pages.append(q.get("continue"))
            if q.get("continue"):
                raise Failure(500, "etcd timeout")
            return real(kind, ns, q)
        self.api._list = flaky
        for fmt in ("table", "json"):
            del pages[:]
            r = self.run_plugin("nodes", "--chunk-size", "2", "-o", fmt)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertEqual(r.stdout, "")
            self.assertIn("cannot list nodes: GET /api/v1/nodes?limit=2&continue=", r.stderr)
            self.assertIn("HTTP 500: etcd timeout", r.stderr)
            self.assertEqual(len(pages), 2)
            self.assertIsNone(pages[0])

    # ---- pods ----
    def test_pods_context_namespace_and_rows(self):
        r = self.run_plugin("pods")
        self.assertEqual(r.returncode, 0, r.stderr)
        print(r.stdout)
        rows = self.table(r.stdout)
        self.assertEqual([(x["NAMESPACE"], x["NAME"]) for x in rows], [("team-a", "db"), ("team-a", "pending")])
        db = rows[0]
        self.assertEqual((db["NODE"], db["PHASE"], db["BANDWIDTH"], db["IOPS"], db["CLASS"], db["DISK"], db["GRANT"]),
                         ("node-a", "Running", "200 (200MiB/s)", "-", "default", "nvme0n1", "held"))
        self.assertEqual((rows[1]["NODE"], rows[1]["BANDWIDTH"], rows[1]["GRANT"]), ("-", "50 units", "unscheduled"))
        self.assertTrue(any(q["path"].startswith("/api/v1/namespaces/team-a/pods?") for q in self.api.requests))

    def test_pods_namespace_flag_and_all(self):
        r = self.run_plugin("pods", "-n", "team-b")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = {x["NAME"]: x for x in self.table(r.stdout)}
        self.assertEqual(sorted(rows), ["backup", "fresh", "orphan"])
        b = rows["backup"]
        # no ioqos.io/disk: the only disk of class default on node-a
        self.assertEqual((b["BANDWIDTH"], b["IOPS"], b["DISK"], b["GRANT"]),
                         ("100 (100MiB/s)", "5 (500 IOPS)", "nvme0n1", "held"))
        self.assertEqual((rows["orphan"]["DISK"], rows["orphan"]["GRANT"]), ("-", "node has no ioqos plugin"))
        self.assertEqual((rows["fresh"]["CLASS"], rows["fresh"]["DISK"], rows["fresh"]["GRANT"]),
                         ("fast", "one of 2", "not reported yet"))
        r = self.run_plugin("pods", "-A")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = self.table(r.stdout)
        self.assertEqual([(x["NAMESPACE"], x["NAME"]) for x in rows],
                         [("team-a", "db"), ("team-a", "pending"), ("team-b", "backup"), ("team-b", "fresh"),
                          ("team-b", "orphan"), ("team-c", "done")])
        self.assertEqual(rows[-1]["GRANT"], "ended")
        self.assertTrue(any(q["path"].startswith("/api/v1/pods?") for q in self.api.requests))
        r = self.run_plugin("pods", "-n", "nothing-here")
        self.assertEqual((r.returncode, r.stdout), (0, ""))
        self.assertIn("No ioqos pods found in nothing-here namespace.", r.stderr)
        r = self.run_plugin("pods", "-n", "nothing-here", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), {"namespace": "nothing-here", "nodesListed": True, "pods": []})

    def test_pods_json_and_pagination(self):
        before = len(self.api.requests)
        r = self.run_plugin("pods", "-A", "-o", "json", "--chunk-size", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertIsNone(out["namespace"])
        self.assertTrue(out["nodesListed"])
        pods = {p["name"]: p for p in out["pods"]}
        self.assertEqual(sorted(pods), ["backup", "db", "done", "fresh", "orphan", "pending"])
        b = pods["backup"]
        self.assertEqual((b["namespace"], b["uid"], b["node"], b["phase"], b["class"]),
                         ("team-b", "uid-backup", "node-a", "Running", "default"))
        self.assertEqual(b["units"], {"ioqos/bandwidth": 100, "ioqos/iops": 5})
        self.assertEqual((b["bandwidthBytesPerSecond"], b["iops"]), (100 * MiB, 500))
        self.assertEqual((b["disk"], b["diskSource"], b["diskHealthy"], b["grant"], b["held"]),
                         ("nvme0n1", "only disk of its class", True, "held", True))
        self.assertEqual((pods["db"]["diskSource"], pods["pending"]["node"], pods["pending"]["held"]),
                         ("annotation", None, False))
        paths = [q["path"] for q in self.api.requests[before:]]
        pod_gets = [p for p in paths if p.startswith("/api/v1/pods")]
        # 8 pods, 2 per page: 4 pages
        self.assertEqual(len(pod_gets), 4, pod_gets)
        self.assertTrue(all("continue=" in p for p in pod_gets[1:]), pod_gets)
        self.assertEqual(len([p for p in paths if p.startswith("/api/v1/nodes")]), 3)  # 5 nodes

    def test_invalid_pod_request_is_shown(self):
        p = pod("team-a", "broken", "uid-broken", "node-a", bw=10)
        p["spec"]["containers"][0]["resources"]["limits"]["ioqos/bandwidth"] = "lots"
        self.api.put_pod(p)
        r = self.run_plugin("pods")
        self.assertEqual(r.returncode, 0, r.stderr)
        row = {x["NAME"]: x for x in self.table(r.stdout)}["broken"]
        self.assertTrue(row["GRANT"].startswith("invalid request: "), row)

    # ---- errors ----
    def test_forbidden_names_the_permission(self):
        self.api.inject(method="GET", path=r"/api/v1/nodes$", status=403,
                        message='nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope')
        r = self.run_plugin("nodes", "-o", "json")
        self.assertEqual((r.returncode, r.stdout), (1, ""))  # a script gets a whole document or none
        r = self.run_plugin("nodes")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertIn("kubectl ioqos nodes: cannot list nodes: forbidden (HTTP 403): your user lacks the "
                      "permission 'list' on 'nodes' (cluster-wide)", r.stderr)
        self.assertIn('User "alice" cannot list resource "nodes"', r.stderr)
        # pods still list without node access, and say what is missing
        r = self.run_plugin("pods")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warning: cannot list nodes: forbidden (HTTP 403)", r.stderr)
        rows = {x["NAME"]: x for x in self.table(r.stdout)}
        self.assertEqual((rows["db"]["DISK"], rows["db"]["GRANT"]), ("nvme0n1", "unknown (cannot list nodes)"))
        self.api.inject(method="GET", path=r"/api/v1/namespaces/team-a/pods$", status=403, message="no")
        r = self.run_plugin("pods")
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot list pods in namespace team-a: forbidden (HTTP 403): your user lacks the permission "
                      "'list' on 'pods' in namespace team-a", r.stderr)
        self.api.inject(method="GET", path=r"/api/v1/pods$", status=403, message="no")
        r = self.run_plugin("pods", "-A")
        self.assertEqual(r.returncode, 1)
        self.assertIn("'list' on 'pods' (cluster-wide, for --all-namespaces)", r.stderr)

    def test_unauthorized_and_unreachable(self):
        kubeconfig(self.kc, {"main": (self.api.url, "wrong", None)}, "main")
        r = self.run_plugin("nodes")
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot list nodes: unauthorized (HTTP 401)", r.stderr)
        self.assertIn("kubeconfig %s (--kubeconfig), context main" % self.kc, r.stderr)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        kubeconfig(self.kc, {"main": ("http://127.0.0.1:%d" % port, TOKEN, None)}, "main")
        r = self.run_plugin("nodes", "--request-timeout", "3s")
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot list nodes: API server http://127.0.0.1:%d (from kubeconfig" % port, r.stderr)
        self.assertIn("not reachable", r.stderr)

    def test_no_credentials_and_usage(self):
        r = self.run_plugin("nodes", kubeconfig=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no Kubernetes credentials", r.stderr)
        self.assertIn("%s/.kube/config does not exist" % self.home, r.stderr)
        # in a pod (no kubeconfig anywhere): the service account, as kubectl
        r = self.run_plugin("nodes", kubeconfig=False,
                            env={"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("/var/run/secrets/kubernetes.io/serviceaccount/token", r.stderr)
        for args, msg in ((["pods", "-n", "a", "-A"], "exclude each other"),
                          (["pods", "-o", "yaml"], "is not 'json' or 'table'"),
                          (["nodes", "-A"], "unknown option '-A'"),
                          (["pods", "-n", "Not_A_NS"], "is not a namespace name"),
                          (["nodes", "extra"], "unexpected argument 'extra'"),
                          (["nodes", "--request-timeout", "2h"], "--request-timeout: '2h' is not an integer"),
                          (["nodes", "--request-timeout", "61m"], "is not an integer in [1, 60]"),
                          (["frobnicate"], "unknown command 'frobnicate'")):
            r = self.run_plugin(*args, kubeconfig=False)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(msg, r.stderr)
        r = self.run_plugin("nodes", "--kubeconfig", os.path.join(self.home, "missing"), kubeconfig=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("missing", r.stderr)

    # ---- credentials ----
    def test_kubeconfig_selection(self):
        other = ApiServer(token="tok-2").start()
        try:
            other.set_node(node("other-node"))
            both = {"main": (self.api.url, TOKEN, "team-a"), "second": (other.url, "tok-2", "team-b")}
            # ~/.kube/config when nothing else is given
            os.makedirs(os.path.join(self.home, ".kube"))
            kubeconfig(os.path.join(self.home, ".kube", "config"), both, "second")
            r = self.run_plugin("nodes", kubeconfig=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("other-node", r.stdout)
            # --context picks the other context of the same file
            r = self.run_plugin("nodes", "--context", "main", kubeconfig=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("node-a", r.stdout)
            self.assertNotIn("other-node", r.stdout)
            # its namespace is the default one of pods
            r = self.run_plugin("pods", "--context", "second", kubeconfig=False)
            self.assertEqual((r.returncode, r.stdout), (0, ""))
            self.assertIn("in team-b namespace", r.stderr)
            # KUBECONFIG beats ~/.kube/config, --kubeconfig beats KUBECONFIG
            kc2 = os.path.join(self.home, "env.yaml")
            kubeconfig(kc2, both, "main")
            r = self.run_plugin("nodes", env={"KUBECONFIG": kc2}, kubeconfig=False)
            self.assertIn("node-a", r.stdout)
            kc3 = os.path.join(self.home, "flag.yaml")
            kubeconfig(kc3, both, "second")
            r = self.run_plugin("nodes", "--kubeconfig", kc3, env={"KUBECONFIG": kc2}, kubeconfig=False)
            self.assertIn("other-node", r.stdout)
            r = self.run_plugin("nodes", "--context", "nope", kubeconfig=False)
            self.assertEqual(r.returncode, 1)
            self.assertIn("no entry named 'nope'", r.stderr)
        finally:
            other.stop()

    def test_through_kubectl(self):
        """kubectl's own plugin lookup: kubectl-ioqos on PATH answers `kubectl ioqos`."""
        kubectl = shutil.which("kubectl")
        if not kubectl:
            self.skipTest("kubectl is not installed")
        env = {"PATH": self.bindir + os.pathsep + os.environ.get("PATH", "")}
        r = self.run_plugin("plugin", "list", env=env, kubeconfig=False, exe=kubectl)
        self.assertIn(self.plugin, r.stdout + r.stderr)
        r = self.run_plugin("ioqos", "pods", "-A", "-o", "json", env=env, exe=kubectl)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(json.loads(r.stdout)["pods"]), 6)
        r = self.run_plugin("ioqos", "nodes", "--context", "nope", env=env, exe=kubectl)
        self.assertEqual(r.returncode, 1)
        self.assertIn("kubectl ioqos nodes: ", r.stderr)

    def test_cmake_install_puts_the_plugin_name_next_to_ioqosctl(self):
        if not BUILD:
            self.skipTest("no build directory given")
        dest = tempfile.mkdtemp(dir=self.tmp)
        r = subprocess.run(["cmake", "--install", BUILD, "--prefix", "/usr/local"], capture_output=True,
                           text=True, timeout=120, env=dict(os.environ, DESTDIR=dest))
        self.assertEqual(r.returncode, 0, r.stderr)
        link = os.path.join(dest, "usr/local/bin/kubectl-ioqos")
        self.assertEqual(os.readlink(link), "ioqosctl")  # relative: the pair moves together
        r = subprocess.run([link, "--version"], capture_output=True, text=True)
        self.assertTrue(r.stdout.startswith("kubectl-ioqos "), r.stdout)

    def test_same_binary_as_ioqosctl(self):
        """ioqosctl nodes / pods are the same commands; the plugin name serves
        only those, and says so in --help."""
        r = self.run_plugin("nodes", "-o", "json", exe=CTL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(without_ages(r.stdout), without_ages(self.run_plugin("nodes", "-o", "json").stdout))
        h = self.run_plugin("--help", kubeconfig=False)
        self.assertEqual(h.returncode, 0)
        self.assertIn("usage: kubectl ioqos COMMAND", h.stdout)
        self.assertNotIn("calibrate  ", h.stdout)
        h = self.run_plugin("--help", kubeconfig=False, exe=CTL)
        self.assertIn("nodes", h.stdout)
        self.assertIn("pods", h.stdout)
        v = self.run_plugin("--version", kubeconfig=False)
        self.assertTrue(v.stdout.startswith("kubectl-ioqos "), v.stdout)
        h = self.run_plugin("pods", "--help", kubeconfig=False)
        self.assertIn("usage: kubectl ioqos pods", h.stdout)
        self.assertIn("'list' on 'pods'", h.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)

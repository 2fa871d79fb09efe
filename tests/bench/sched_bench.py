#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Scheduling benchmark: the real upstream kube-scheduler calling ioqos-scheduler-ext.

Run through tests/bench/sched_bench.sh, which builds (or finds cached) the upstream
components, starts the control plane (tests/cluster/controlplane.sh) and the extender's
certificates, then runs this driver. The driver:

  * starts ioqos-scheduler-ext (mutual TLS, node cache by list+watch, binds) and a second
    kube-scheduler (profile ioqos-scheduler, the extender with nodeCacheCapable: true,
    filter + prioritize + bind, as manifests/overlays/second-scheduler) on the host;
  * creates N fake Nodes (no kubelet): the ioqos.io/devices annotation (2 disks), status
    capacity/allocatable (cpu, memory, pods, ioqos/bandwidth, ioqos/iops) and Ready=True
    through nodes/status, and a Lease in kube-node-lease that a heartbeat thread renews
    (--lease-interval) so the node lifecycle controller keeps them Ready and untainted;
    the pods also tolerate every taint, as a safety net;
  * per round, for (a) pods requesting ioqos/bandwidth 1..10 (through the extender) and
    (b) the same pods without ioqos resources (the extender is not interested, kube-scheduler
    binds them itself), creates P pods as fast as it can (--create-threads) and records
    when each gets spec.nodeName (a watch); rounds rotate the order of a and b;
  * scrapes the extender's /metrics (ioqos_extender_request_duration_seconds) and the
    scheduler's /metrics before and after each run and reports quantiles of the deltas.

Nothing is asserted about timings; a run that does not bind all its pods within its timeout
is an error (exit 1).
"""
import argparse
import http.client
import json
import os
import re
import signal
import ssl
import statistics
import subprocess
import sys
import threading
import time

NS = "ioqos-sched-bench"
SCHED_NAME = "ioqos-scheduler"
PAUSE = "registry.k8s.io/pause:3.10.2"
DISK_UNITS = 800  # per disk, 2 disks per node: never the limit at these pod counts


class ApiError(Exception):
    def __init__(self, status, body):
        self.status = status
        try:
            msg = json.loads(body).get("message", body)
        except ValueError:
            msg = body
        super().__init__("HTTP %d: %s" % (status, str(msg)[:400]))


class Api:
    """JSON over HTTPS to the apiserver with the admin certificate; one keep-alive
    connection per thread."""

    def __init__(self, port, pki):
        self.port = port
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        self.local = threading.local()

    def new_conn(self, timeout=30):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=timeout)

    def call(self, method, path, body=None, ctype="application/json", ok=()):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = ctype
        for attempt in range(3):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = self.new_conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                r = conn.getresponse()
                raw = r.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise
                time.sleep(0.2)
        if r.status >= 300 and r.status not in ok:
            raise ApiError(r.status, raw.decode(errors="replace"))
        return r.status, (json.loads(raw) if raw else None)

    def get(self, path):
        return self.call("GET", path)[1]


def status_200(conn, path):
    """GET path on conn (then closed): did it answer 200?"""
    try:
        conn.request("GET", path)
        return conn.getresponse().status == 200
    finally:
        conn.close()


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def now_micro():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


def parallel(items, fn, threads):
    """fn(item) over items on threads; the first exception is raised."""
    items = list(items)
    lock = threading.Lock()
    errs = []
    idx = [0]

    def worker():
        while True:
            with lock:
                if errs or idx[0] >= len(items):
                    return
                it = items[idx[0]]
                idx[0] += 1
            try:
                fn(it)
            except Exception as e:  # noqa: BLE001 (reported below)
                with lock:
                    errs.append(e)
                return

    ts = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, min(threads, len(items))))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        raise errs[0]


# ---------------------------------------------------------------- Prometheus text

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """{(name, frozenset(labels)): value}"""
    out = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        m = LINE.match(line)
        if not m:
            continue
        labels = frozenset(LABEL.findall(m.group(2) or ""))
        try:
            out[(m.group(1), labels)] = float(m.group(3))
        except ValueError:
            pass
    return out


def hist(before, after, name, **match):
    """Delta histogram of series `name` whose labels include `match`, summed over the
    other labels: ([(le, cumulative count)...] sorted, count, sum)."""
    buckets = {}
    cnt = tot = 0.0
    want = set(match.items())
    for (n, labels), v in after.items():
        if not want <= set(labels):
            continue
        d = v - before.get((n, labels), 0.0)
        if n == name + "_bucket":
            le = dict(labels)["le"]
            le = float("inf") if le == "+Inf" else float(le)
            buckets[le] = buckets.get(le, 0.0) + d
        elif n == name + "_count":
            cnt += d
        elif n == name + "_sum":
            tot += d
    return sorted(buckets.items()), cnt, tot


def quantile(h, q):
    """histogram_quantile as Prometheus computes it (linear within the bucket); None
    without observations; the largest finite bound if it falls in +Inf."""
    buckets, cnt, _ = h
    if cnt <= 0 or not buckets:
        return None
    rank = q * buckets[-1][1]
    prev_le, prev_c = 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if le == float("inf"):
                return prev_le
            if c == prev_c:
                return le
            return prev_le + (le - prev_le) * (rank - prev_c) / (c - prev_c)
        prev_le, prev_c = le, c
    return prev_le


def counter(before, after, name, **match):
    want = set(match.items())
    return sum(v - before.get(k, 0.0) for k, v in after.items() if k[0] == name and want <= set(k[1]))


def gauge(m, name, **match):
    want = set(match.items())
    vals = [v for k, v in m.items() if k[0] == name and want <= set(k[1])]
    return sum(vals) if vals else None


# ---------------------------------------------------------------- processes

class Proc:
    def __init__(self, name, argv, logdir):
        self.name = name
        self.log = os.path.join(logdir, name + ".log")
        self.f = open(self.log, "w")
        # dies with this driver even if it is killed (parent-death signal)
        self.p = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--"] + argv,
                                  stdout=self.f, stderr=subprocess.STDOUT)

    def alive(self):
        return self.p.poll() is None

    def tail(self, n=30):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError as e:
            return str(e)

    def stop(self):
        if self.alive():
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.f.close()


class Failure(Exception):
    pass


class Bench:
    def __init__(self, a):
        self.a = a
        self.api = Api(a.apiserver_port, a.pki)
        self.procs = []
        self.nodes = []
        self.node_lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.hb_errors = 0
        self.hb_renewals = 0
        self.hb_max_cycle = 0.0
        self.mctx = ssl.create_default_context()
        self.mctx.check_hostname = False
        self.mctx.verify_mode = ssl.CERT_NONE  # the scheduler's self-signed serving cert
        self.mctx.load_cert_chain(os.path.join(a.pki, "admin.crt"), os.path.join(a.pki, "admin.key"))
        self.seq = 0

    # -------------------------------------------------------------- helpers
    def log(self, msg):
        print("sched-bench: %s %s" % (time.strftime("%H:%M:%S"), msg), flush=True)

    def check_procs(self):
        for p in self.procs:
            if not p.alive():
                raise Failure("%s exited (code %s); last lines of %s:\n%s"
                              % (p.name, p.p.returncode, p.log, p.tail()))

    def wait(self, what, secs, fn, interval=0.2):
        end = time.monotonic() + secs
        last = None
        while time.monotonic() < end:
            self.check_procs()
            try:
                r = fn()
                if r:
                    return r
                last = None
            except Exception as e:  # noqa: BLE001 (retried; the last one is reported)
                last = e
            time.sleep(interval)
        raise Failure("%s: not after %d s%s" % (what, secs, " (last error: %s)" % last if last else ""))

    def ext_metrics(self):
        c = http.client.HTTPConnection("127.0.0.1", self.a.ext_metrics_port, timeout=10)
        try:
            c.request("GET", "/metrics")
            r = c.getresponse()
            body = r.read().decode()
            if r.status != 200:
                raise Failure("extender /metrics: HTTP %d" % r.status)
            return parse_metrics(body)
        finally:
            c.close()

    def sched_metrics(self):
        c = http.client.HTTPSConnection("127.0.0.1", self.a.sched_port, context=self.mctx, timeout=10)
        try:
            c.request("GET", "/metrics")
            r = c.getresponse()
            body = r.read().decode()
            if r.status != 200:
                raise Failure("kube-scheduler /metrics: HTTP %d: %s" % (r.status, body[:200]))
            return parse_metrics(body)
        finally:
            c.close()

    # -------------------------------------------------------------- components
    def start_extender(self):
        a = self.a
        argv = [a.extender,
                "--listen=127.0.0.1:%d" % a.ext_port,
                "--metrics-listen=127.0.0.1:%d" % a.ext_metrics_port,
                "--tls-cert=%s/server.crt" % a.certs, "--tls-key=%s/server.key" % a.certs,
                "--tls-client-ca=%s/ca.crt" % a.certs, "--tls-client-subject=ioqos-scheduler",
                "--scheduler-name=" + SCHED_NAME,
                "--policy=least-allocated", "--assume-ttl=3600",
                "--threads=%d" % a.ext_threads, "--max-connections=256", "--max-request-bytes=256Mi",
                "--idle-timeout=30", "--shutdown-grace=2", "--kube-timeout=3",
                "--node-cache=true", "--log-level=info",
                # the fake nodes' publishedAt is set once, at creation
                "--annotation-max-age=%d" % a.annotation_max_age,
                "--kubeconfig=%s/admin.kubeconfig" % a.pki]
        self.procs.append(Proc("ioqos-scheduler-ext", argv, a.logdir))

        self.wait("extender /readyz", 60, lambda: status_200(
            http.client.HTTPConnection("127.0.0.1", a.ext_metrics_port, timeout=2), "/readyz"))

    def start_scheduler(self):
        a = self.a
        cfg = os.path.join(a.rundir, "ioqos-scheduler-config.yaml")
        with open(cfg, "w") as f:
            f.write("""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %(pki)s/scheduler.kubeconfig
  qps: %(qps)s
  burst: %(burst)d
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: %(name)s
extenders:
  - urlPrefix: "https://127.0.0.1:%(port)d/"
    filterVerb: filter
    prioritizeVerb: prioritize
    weight: 1
    bindVerb: "%(bind)s"
    nodeCacheCapable: true
    httpTimeout: 15s
    enableHTTPS: true
    tlsConfig:
      certFile: %(certs)s/client.crt
      keyFile: %(certs)s/client.key
      caFile: %(certs)s/ca.crt
    ignorable: false
    managedResources:
      - name: ioqos/bandwidth
        ignoredByScheduler: false
      - name: ioqos/iops
        ignoredByScheduler: false
""" % dict(pki=a.pki, qps=a.qps, burst=int(max(a.qps, 1) * 2), name=SCHED_NAME, port=a.ext_port,
                bind="" if a.no_ext_bind else "bind",
                certs=a.certs))
        kc = os.path.join(a.pki, "scheduler.kubeconfig")
        argv = [os.path.join(a.bin, "kube-scheduler"), "--config=" + cfg,
                "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
                "--bind-address=127.0.0.1", "--secure-port=%d" % a.sched_port, "--v=1"]
        self.procs.append(Proc("ioqos-kube-scheduler", argv, a.logdir))

        self.wait("kube-scheduler /healthz", 90, lambda: status_200(
            http.client.HTTPSConnection("127.0.0.1", a.sched_port, context=self.mctx, timeout=2), "/healthz"))
        self.wait("kube-scheduler /metrics (admin certificate)", 30, self.sched_metrics)

    def stop_all(self):
        self.stop_ev.set()
        for p in reversed(self.procs):
            if p.alive():
                try:
                    p.p.send_signal(signal.SIGCONT)  # in case a backlog run was interrupted
                except OSError:
                    pass
            p.stop()

    # -------------------------------------------------------------- nodes
    def node_obj(self, name):
        devs = []
        for i, (dev, majmin) in enumerate((("nvme0n1", "259:0"), ("nvme1n1", "259:1"))):
            devs.append({"name": dev, "dev": majmin, "class": "default", "healthy": True,
                         "capacity": {"ioqos/bandwidth": DISK_UNITS, "ioqos/iops": 500},
                         "allocated": {"ioqos/bandwidth": 0, "ioqos/iops": 0},
                         "capabilities": ["io.max", "io.weight", "buffered-writes"]})
        anno = {"version": 1, "node": name,
                "units": {"ioqos/bandwidth": 1048576, "ioqos/iops": 100},
                "devices": devs, "publishedAt": now_rfc3339()}
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name,
                             "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                        "kubernetes.io/arch": "amd64", "ioqos-bench": "1"},
                             "annotations": {"ioqos.io/devices": json.dumps(anno, separators=(",", ":"))}},
                "spec": {}}

    def node_status(self):
        res = {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "100Gi",
               "ioqos/bandwidth": str(2 * DISK_UNITS), "ioqos/iops": "1000"}
        t = now_rfc3339()
        return {"status": {"capacity": res, "allocatable": res,
                           "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                           "message": "fake node of the scheduling benchmark",
                                           "lastHeartbeatTime": t, "lastTransitionTime": t}],
                           "nodeInfo": {"kubeletVersion": "v1.37.2", "operatingSystem": "linux",
                                        "architecture": "amd64", "machineID": "", "systemUUID": "",
                                        "bootID": "", "kernelVersion": "", "osImage": "fake",
                                        "containerRuntimeVersion": "fake://1", "kubeProxyVersion": ""}}}

    def create_node(self, name):
        st, _ = self.api.call("POST", "/api/v1/nodes", self.node_obj(name), ok=(409,))
        if st == 409:  # left from an earlier stage of this run: recreate its state
            self.api.call("PATCH", "/api/v1/nodes/" + name,
                          {"metadata": {"annotations": self.node_obj(name)["metadata"]["annotations"]}},
                          ctype="application/merge-patch+json")
        self.api.call("PATCH", "/api/v1/nodes/%s/status" % name, self.node_status(),
                      ctype="application/merge-patch+json")
        # the TaintNodesByCondition admission plugin gave the new Node
        # node.kubernetes.io/not-ready:NoSchedule; the node lifecycle controller would
        # lift it only at its client rate (~20 nodes/s, well into the runs at 1000 nodes)
        self.api.call("PATCH", "/api/v1/nodes/" + name, {"spec": {"taints": None}},
                      ctype="application/merge-patch+json")
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": name, "namespace": "kube-node-lease"},
                 "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now_micro()}}
        self.api.call("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease,
                      ok=(409,))

    def ensure_nodes(self, n):
        have = len(self.nodes)
        if n <= have:
            return
        names = ["bench-node-%05d" % i for i in range(have, n)]
        t0 = time.monotonic()
        parallel(names, self.create_node, 8)
        with self.node_lock:
            self.nodes.extend(names)
        self.log("created %d fake nodes in %.1f s (now %d)" % (len(names), time.monotonic() - t0, n))

    def heartbeat(self):
        """Renew every node's Lease once per --lease-interval, spread evenly."""
        conn_api = Api(self.a.apiserver_port, self.a.pki)
        while not self.stop_ev.is_set():
            with self.node_lock:
                names = list(self.nodes)
            if not names:
                self.stop_ev.wait(1)
                continue
            t0 = time.monotonic()
            step = self.a.lease_interval / len(names)
            for i, name in enumerate(names):
                if self.stop_ev.is_set():
                    return
                try:
                    conn_api.call("PATCH", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"
                                  + name, {"spec": {"renewTime": now_micro()}},
                                  ctype="application/merge-patch+json")
                    self.hb_renewals += 1
                except Exception:  # noqa: BLE001 (counted and reported)
                    self.hb_errors += 1
                delay = t0 + (i + 1) * step - time.monotonic()
                if delay > 0:
                    self.stop_ev.wait(delay)
            self.hb_max_cycle = max(self.hb_max_cycle, time.monotonic() - t0)

    def wait_caches(self, n):
        self.wait("extender node cache at %d nodes" % n, 120,
                  lambda: gauge(self.ext_metrics(), "ioqos_extender_node_cache_nodes") == n)
        self.wait("kube-scheduler cache at %d nodes" % n, 120,
                  lambda: gauge(self.sched_metrics(), "scheduler_cache_size", type="nodes") == n)

    def tainted_nodes(self):
        items = self.api.get("/api/v1/nodes?labelSelector=ioqos-bench%3D1")["items"]
        bad = {}
        for nd in items:
            for t in nd["spec"].get("taints") or []:
                bad[t["key"]] = bad.get(t["key"], 0) + 1
            for c in nd.get("status", {}).get("conditions") or []:
                if c["type"] == "Ready" and c["status"] != "True":
                    bad["Ready=" + c["status"]] = bad.get("Ready=" + c["status"], 0) + 1
        return bad

    # -------------------------------------------------------------- pods
    def setup_namespace(self):
        self.api.call("POST", "/api/v1/namespaces",
                      {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, ok=(409,))
        # the ServiceAccount admission plugin needs it; the controller makes it too
        self.api.call("POST", "/api/v1/namespaces/%s/serviceaccounts" % NS,
                      {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
                      ok=(409,))

    def pod_obj(self, name, run_id, kind, i):
        # both kinds vary the same way (cpu 10m..100m), so kube-scheduler's
        # opportunistic batching (identical consecutive pods) treats them alike
        units = 1 + (i * 7) % 10  # 1..10
        req = {"cpu": "%dm" % (10 * units), "memory": "16Mi"}
        lim = {}
        if kind == "ioqos":
            req["ioqos/bandwidth"] = str(units)
            lim["ioqos/bandwidth"] = str(units)
        res = {"requests": req}
        if lim:
            res["limits"] = lim
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": NS,
                             "labels": {"ioqos-bench": "1", "run": run_id}},
                "spec": {"schedulerName": SCHED_NAME, "terminationGracePeriodSeconds": 0,
                         "automountServiceAccountToken": False, "enableServiceLinks": False,
                         "tolerations": [{"operator": "Exists"}],
                         "containers": [{"name": "c", "image": PAUSE, "resources": res}]}}

    def delete_pods(self):
        self.api.call("DELETE", "/api/v1/namespaces/%s/pods?gracePeriodSeconds=0&labelSelector=ioqos-bench%%3D1"
                      % NS, ok=(404,))

        def gone():
            return not self.api.get("/api/v1/namespaces/%s/pods?limit=1" % NS)["items"]
        self.wait("benchmark pods deleted", 120, gone, interval=0.5)

        # the extender drops a placement when its sweep (every 5 s) finds the pod gone
        def unassumed():
            return gauge(self.ext_metrics(), "ioqos_extender_assumed_placements") == 0
        try:
            self.wait("extender assumed placements back to 0", 60, unassumed, interval=0.5)
        except Failure as e:
            self.log("warning: %s" % e)

    def sched_proc(self):
        return self.procs[1]

    def run_one(self, n, kind, pods, label, mode):
        """Create `pods` pods of `kind` as fast as possible; returns the measurements.
        stream: with the scheduler running; backlog: with the scheduler stopped (SIGSTOP),
        then measured from its SIGCONT."""
        self.seq += 1
        run_id = "r%d" % self.seq
        names = ["%s-%s-%04d" % (kind, run_id, i) for i in range(pods)]
        created = {}
        bound = {}
        done = threading.Event()
        watch_err = []
        lst = self.api.get("/api/v1/namespaces/%s/pods?limit=1" % NS)
        rv = lst["metadata"]["resourceVersion"]
        started = threading.Event()
        wconn = self.api.new_conn(timeout=None)

        def watcher():
            try:
                wconn.request("GET", "/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s"
                              "&labelSelector=run%%3D%s&timeoutSeconds=%d"
                              % (NS, rv, run_id, int(self.a.run_timeout) + 30),
                              headers={"Accept": "application/json"})
                r = wconn.getresponse()
                if r.status != 200:
                    raise ApiError(r.status, r.read().decode(errors="replace"))
                started.set()
                while True:
                    line = r.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    t = time.monotonic()
                    if ev.get("type") == "ERROR":
                        raise Failure("pod watch: %s" % ev.get("object", {}).get("message"))
                    obj = ev.get("object", {})
                    nm = obj.get("metadata", {}).get("name")
                    if nm and obj.get("spec", {}).get("nodeName") and nm not in bound:
                        bound[nm] = (t, obj["spec"]["nodeName"])
                        if len(bound) >= pods:
                            done.set()
                            return
            except Exception as e:  # noqa: BLE001 (reported by the main thread)
                if not done.is_set():
                    watch_err.append(e)
            finally:
                started.set()
                done.set()

        em0, sm0 = self.ext_metrics(), self.sched_metrics()
        wt = threading.Thread(target=watcher, daemon=True)
        wt.start()
        if not started.wait(30) or watch_err:
            raise Failure("pod watch did not start: %s" % (watch_err or "timeout"))

        objs = [(nm, self.pod_obj(nm, run_id, kind, i)) for i, nm in enumerate(names)]
        path = "/api/v1/namespaces/%s/pods" % NS

        def create(item):
            nm, obj = item
            created[nm] = time.monotonic()
            self.api.call("POST", path, obj)

        sched = self.sched_proc().p
        if mode == "backlog":
            os.kill(sched.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            parallel(objs, create, self.a.create_threads)
            t_created = time.monotonic()
        finally:
            if mode == "backlog":
                time.sleep(0.5)  # the last creations reach the scheduler's watch
                os.kill(sched.pid, signal.SIGCONT)
        create_s = t_created - t0
        if mode == "backlog":
            t0 = time.monotonic()
            created = {nm: t0 for nm in names}
        deadline = t0 + self.a.run_timeout
        while not done.wait(0.5):
            self.check_procs()
            if time.monotonic() > deadline:
                break
        try:
            wconn.sock and wconn.sock.shutdown(2)
        except OSError:
            pass
        wconn.close()
        time.sleep(0.3)  # the extender records a bind after kube-scheduler's watch may see it
        t_end = max([b[0] for b in bound.values()] or [time.monotonic()])
        em1, sm1 = self.ext_metrics(), self.sched_metrics()
        if watch_err:
            raise Failure("pod watch failed: %s" % watch_err[0])
        if len(bound) < pods:
            unb = [nm for nm in names if nm not in bound][:3]
            detail = ""
            try:
                p = self.api.get("/api/v1/namespaces/%s/pods/%s" % (NS, unb[0]))
                detail = json.dumps(p.get("status", {}))[:600]
            except Exception as e:  # noqa: BLE001
                detail = str(e)
            raise Failure("%s: only %d of %d pods bound within %d s; e.g. %s: %s\nextender log:\n%s\n"
                          "kube-scheduler log:\n%s"
                          % (label, len(bound), pods, self.a.run_timeout, unb[0], detail,
                             self.procs[0].tail(15), self.procs[1].tail(15)))

        lat = sorted(bound[nm][0] - created[nm] for nm in names)
        per_node = {}
        for _, node in bound.values():
            per_node[node] = per_node.get(node, 0) + 1
        ms = lambda v: None if v is None else round(v * 1000, 3)  # noqa: E731
        ext = {}
        for verb in ("filter", "prioritize", "bind"):
            h = hist(em0, em1, "ioqos_extender_request_duration_seconds", verb=verb)
            ext[verb] = {"count": int(h[1]), "p50_ms": ms(quantile(h, 0.5)), "p99_ms": ms(quantile(h, 0.99)),
                         "mean_ms": ms(h[2] / h[1]) if h[1] else None}
        sp = {"profile": SCHED_NAME}
        att = hist(sm0, sm1, "scheduler_scheduling_attempt_duration_seconds", result="scheduled", **sp)
        alg = hist(sm0, sm1, "scheduler_scheduling_algorithm_duration_seconds")
        bnd = hist(sm0, sm1, "scheduler_framework_extension_point_duration_seconds",
                   extension_point="Bind", status="Success", **sp)
        res = {
            "nodes": n, "kind": kind, "mode": mode, "pods": pods,
            "bound_before_resume": sum(1 for b in bound.values() if b[0] < t0),
            "create_s": round(create_s, 3),
            "create_per_s": round(pods / create_s, 1),
            "sched_s": round(t_end - t0, 3),
            "sched_per_s": round(pods / (t_end - t0), 1),
            "e2e_ms": {"p50": ms(lat[len(lat) // 2]), "p99": ms(lat[min(len(lat) - 1, int(0.99 * len(lat)))]),
                       "max": ms(lat[-1])},
            "nodes_used": len(per_node), "max_pods_per_node": max(per_node.values()),
            "extender": ext,
            "extender_binds": {r: int(counter(em0, em1, "ioqos_extender_binds_total", result=r))
                               for r in ("bound", "error")},
            "extender_requests_non_200": int(sum(
                v - em0.get(k, 0.0) for k, v in em1.items()
                if k[0] == "ioqos_extender_requests_total" and dict(k[1]).get("verb") in ("filter", "prioritize", "bind")
                and dict(k[1]).get("code") != "200")),
            "scheduler": {
                "attempt_p50_ms": ms(quantile(att, 0.5)), "attempt_p99_ms": ms(quantile(att, 0.99)),
                "algorithm_p50_ms": ms(quantile(alg, 0.5)), "algorithm_p99_ms": ms(quantile(alg, 0.99)),
                "bind_plugin_count": int(bnd[1]), "bind_plugin_p99_ms": ms(quantile(bnd, 0.99)),
                "attempts": {r: int(counter(sm0, sm1, "scheduler_schedule_attempts_total", result=r, **sp))
                             for r in ("scheduled", "unschedulable", "error")},
                "batch_attempts": {r: int(counter(sm0, sm1, "scheduler_batch_attempts_total", result=r, **sp))
                                   for r in ("no_hint", "hint_used", "hint_not_used")},
            },
        }
        return res

    # -------------------------------------------------------------- the whole run
    def wait_untainted(self):
        """No benchmark node may carry a taint or be not Ready when the runs start (the
        lifecycle controller would change them during a run)."""
        t0 = time.monotonic()
        try:
            self.wait("fake nodes Ready and untainted", 120, lambda: not self.tainted_nodes(), interval=1)
            self.log("fake nodes Ready and untainted after %.1f s" % (time.monotonic() - t0))
        except Failure as e:
            self.log("warning: %s: %s (the benchmark pods tolerate every taint)" % (e, self.tainted_nodes()))

    def run(self):
        a = self.a
        t_start = time.monotonic()
        load0 = os.getloadavg()
        self.setup_namespace()
        self.start_extender()
        self.start_scheduler()
        hb = threading.Thread(target=self.heartbeat, daemon=True)
        hb.start()
        results = []
        for n in a.nodes:
            self.ensure_nodes(n)
            self.wait_caches(n)
            self.wait_untainted()
            if a.warmup:
                for kind in ("ioqos", "plain"):
                    self.run_one(n, kind, a.warmup, "warm-up", "stream")
                    self.delete_pods()
            per_mode = {m: [] for m in a.modes}
            for r in range(a.rounds):
                order = ("ioqos", "plain") if r % 2 == 0 else ("plain", "ioqos")
                for mode in a.modes:
                    rr = {}
                    for kind in order:
                        label = "%d nodes, round %d, %s, %s" % (n, r + 1, mode, kind)
                        m = self.run_one(n, kind, a.pods, label, mode)
                        rr[kind] = m
                        self.log("%-36s %6.1f pods/s (created %4.0f/s), lat p50 %6.0f ms, attempt p99 %s, "
                                 "ext filter/prio/bind p99 %s/%s/%s ms, batch hints %d"
                                 % (label, m["sched_per_s"], m["create_per_s"], m["e2e_ms"]["p50"],
                                    m["scheduler"]["attempt_p99_ms"],
                                    m["extender"]["filter"]["p99_ms"], m["extender"]["prioritize"]["p99_ms"],
                                    m["extender"]["bind"]["p99_ms"],
                                    m["scheduler"]["batch_attempts"]["hint_used"]))
                        self.delete_pods()
                    rr["ratio"] = round(rr["ioqos"]["sched_per_s"] / rr["plain"]["sched_per_s"], 3)
                    per_mode[mode].append(rr)
            taints = self.tainted_nodes()
            if taints:
                self.log("warning: fake nodes not Ready/untainted at the end of the %d-node stage: %s"
                         % (n, taints))
            results.append({"nodes": n,
                            "modes": {m: {"rounds": rs, "median": self.medians(rs)} for m, rs in per_mode.items()},
                            "not_ready_or_tainted_at_end": taints})
        out = {
            "benchmark": "scheduling throughput, real kube-scheduler + ioqos-scheduler-ext",
            "kubernetes": "v1.37.2",
            "config": {"nodes": a.nodes, "pods": a.pods, "rounds": a.rounds, "warmup": a.warmup,
                       "modes": a.modes, "create_threads": a.create_threads, "extender_threads": a.ext_threads,
                       "extender_binds": not a.no_ext_bind, "scheduler_qps": a.qps,
                       "lease_interval_s": a.lease_interval, "cpus": os.cpu_count(),
                       "pods_spec": "cpu 10m..100m, memory 16Mi; (a) also ioqos/bandwidth 1..10 units "
                                    "(request = limit), (b) no ioqos resources; schedulerName ioqos-scheduler",
                       "extender": "mutual TLS, nodeCacheCapable: true, filter + prioritize + bind, "
                                   "2 disks x 800 units per node"},
            "results": results,
            "heartbeat": {"lease_renewals": self.hb_renewals, "errors": self.hb_errors,
                          "slowest_cycle_s": round(self.hb_max_cycle, 1)},
            "loadavg_start": [round(x, 2) for x in load0],
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
            "wall_s": round(time.monotonic() - t_start, 1),
        }
        return out

    @staticmethod
    def medians(rounds):
        def med(vals):
            vals = [v for v in vals if v is not None]
            return round(statistics.median(vals), 3) if vals else None
        out = {}
        for kind in ("ioqos", "plain"):
            rs = [r[kind] for r in rounds]
            out[kind] = {
                "sched_per_s": med([r["sched_per_s"] for r in rs]),
                "create_per_s": med([r["create_per_s"] for r in rs]),
                "lat_p50_ms": med([r["e2e_ms"]["p50"] for r in rs]),
                "lat_p99_ms": med([r["e2e_ms"]["p99"] for r in rs]),
                "attempt_p99_ms": med([r["scheduler"]["attempt_p99_ms"] for r in rs]),
                "algorithm_p99_ms": med([r["scheduler"]["algorithm_p99_ms"] for r in rs]),
                "ext_filter_p50_ms": med([r["extender"]["filter"]["p50_ms"] for r in rs]),
                "ext_filter_p99_ms": med([r["extender"]["filter"]["p99_ms"] for r in rs]),
                "ext_prioritize_p50_ms": med([r["extender"]["prioritize"]["p50_ms"] for r in rs]),
                "ext_prioritize_p99_ms": med([r["extender"]["prioritize"]["p99_ms"] for r in rs]),
                "ext_bind_p50_ms": med([r["extender"]["bind"]["p50_ms"] for r in rs]),
                "ext_bind_p99_ms": med([r["extender"]["bind"]["p99_ms"] for r in rs]),
                "bind_plugin_p99_ms": med([r["scheduler"]["bind_plugin_p99_ms"] for r in rs]),
            }
        out["ratio"] = med([r["ratio"] for r in rounds])
        return out


def table(out):
    f = lambda v: "-" if v is None else ("%.1f" % v if isinstance(v, float) else str(v))  # noqa: E731
    fmt = "%5s %-7s %-13s %7s %8s %8s %8s %8s %8s %8s %8s %8s"
    lines = [fmt % ("nodes", "mode", "kind", "sched/s", "create/s", "lat p50", "attempt", "algo",
                    "ext filt", "ext prio", "ext bind", "binder"),
             fmt % ("", "", "", "", "", "", "p99", "p99", "p99", "p99", "p99", "p99")]
    for r in out["results"]:
        for mode, md in r["modes"].items():
            md = md["median"]
            for kind, name in (("ioqos", "(a) ioqos"), ("plain", "(b) plain")):
                m = md[kind]
                lines.append(fmt % (r["nodes"], mode, name, f(m["sched_per_s"]),
                                    f(m["create_per_s"]) if mode == "stream" else "-",
                                    f(m["lat_p50_ms"]), f(m["attempt_p99_ms"]), f(m["algorithm_p99_ms"]),
                                    f(m["ext_filter_p99_ms"]), f(m["ext_prioritize_p99_ms"]),
                                    f(m["ext_bind_p99_ms"]), f(m["bind_plugin_p99_ms"])))
            per = " ".join("%.2f" % rr["ratio"] for rr in r["modes"][mode]["rounds"])
            lines.append("%5s %-7s %-13s %7s  (rounds: %s)" % (r["nodes"], mode, "ratio (a)/(b)",
                                                             "%.3f" % md["ratio"], per))
    c = out["config"]
    lines.append("%d CPUs; extender: --threads %d, %s; scheduler qps %s; pods per run %d"
                 % (c["cpus"], c["extender_threads"],
                    "filter + prioritize + bind" if c["extender_binds"] else "filter + prioritize only (--no-ext-bind)",
                    c["scheduler_qps"], c["pods"]))
    lines.append("Medians over %d round(s); times in ms. stream: pods created as fast as %d client threads can "
                 "while the scheduler runs," % (out["config"]["rounds"], out["config"]["create_threads"]))
    lines.append("sched/s = pods / (last bind - first create), lat = create sent -> spec.nodeName seen; backlog: "
                 "pods created with the scheduler")
    lines.append("SIGSTOPped, sched/s and lat from its SIGCONT. attempt/algo: kube-scheduler's "
                 "scheduling_attempt/algorithm_duration_seconds;")
    lines.append("ext *: the extender's ioqos_extender_request_duration_seconds (bind = GET + PATCH pod, POST "
                 "binding); binder: kube-scheduler's Bind extension point")
    lines.append("(DefaultBinder, (b) only). Quantiles of histograms are bucket-interpolated (buckets ..10, 25, "
                 "50, 100, 250 ms..).")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rundir", required=True)
    ap.add_argument("--pki", required=True)
    ap.add_argument("--certs", required=True, help="extender-certs.sh output dir")
    ap.add_argument("--bin", required=True, help="upstream binaries (kube-scheduler)")
    ap.add_argument("--extender", required=True, help="ioqos-scheduler-ext binary")
    ap.add_argument("--apiserver-port", type=int, default=17443)
    ap.add_argument("--ext-port", type=int, default=17450)
    ap.add_argument("--ext-metrics-port", type=int, default=17451)
    ap.add_argument("--sched-port", type=int, default=17452)
    ap.add_argument("--nodes", default="100,1000")
    ap.add_argument("--pods", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="stream,backlog")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--create-threads", type=int, default=8)
    ap.add_argument("--ext-threads", type=int, default=4, help="extender --threads (manifest: 4)")
    ap.add_argument("--no-ext-bind", action="store_true",
                    help="no bindVerb: kube-scheduler binds (a) itself (diagnosis: filter + prioritize only)")
    ap.add_argument("--qps", type=float, default=1000)
    ap.add_argument("--lease-interval", type=float, default=20)
    ap.add_argument("--annotation-max-age", type=int, default=7200)
    ap.add_argument("--run-timeout", type=float, default=0, help="per run; default 60 s + 0.5 s per pod")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    a.nodes = sorted(int(x) for x in a.nodes.split(",") if x)
    a.modes = [m for m in a.modes.split(",") if m]
    if not a.modes or set(a.modes) - {"stream", "backlog"}:
        ap.error("--modes: stream and/or backlog")
    if not a.run_timeout:
        a.run_timeout = 60 + 0.5 * a.pods
    a.logdir = os.path.join(a.rundir, "logs")
    os.makedirs(a.logdir, exist_ok=True)

    b = Bench(a)

    def on_term(sig, _frame):
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, on_term)
    rc = 0
    try:
        out = b.run()
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        print()
        print(table(out))
        print("heartbeat: %d lease renewals, %d errors; load average %s -> %s; driver wall time %.0f s"
              % (out["heartbeat"]["lease_renewals"], out["heartbeat"]["errors"],
                 out["loadavg_start"], out["loadavg_end"], out["wall_s"]))
        print("written: %s" % a.out)
    except Failure as e:
        print("sched-bench: FAILED: %s" % e, file=sys.stderr)
        rc = 1
    except (ApiError, OSError, http.client.HTTPException) as e:
        print("sched-bench: FAILED: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        for p in b.procs:
            print("---- last lines of %s\n%s" % (p.log, p.tail(15)), file=sys.stderr)
        rc = 1
    finally:
        b.stop_all()
    return rc


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The cluster scenarios: ioqos installed from manifests/ into a real
Kubernetes (upstream kube-apiserver, kube-scheduler, kube-controller-manager,
kubelet, containerd, runc), asserted from the node. Run by node.sh inside the
VM; tests/cluster/run.sh starts everything.

  scenarios.py [--list] [NAME...]

Prints one line per check and "N passed, N failed" at the end; exit 1 when a
check failed. The install runs first whatever NAMEs are given.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kube import (API, BUILD, DEVNO, NODE, ROOT, RUN, Api, ApiError, StartSampler,  # noqa: E402
                  container_id, dev_line, emptydir_file, ensure_namespace, events_for, http_get,
                  kubectl, metric, pod_cgroup, pod_path, read, tools_pod, wait, wait_pod_phase)
import scenario_helm  # noqa: E402

MIB = 1 << 20
SYS = "ioqos-system"
RESULTS = {"passed": 0, "failed": 0}


def check(cond, what, detail=""):
    if cond:
        RESULTS["passed"] += 1
        print("  ok    %s" % what, flush=True)
    else:
        RESULTS["failed"] += 1
        print("  FAIL  %s%s" % (what, (": " + detail) if detail else ""), flush=True)
    return cond


def ioqosctl():
    for p in glob.glob(os.path.join(BUILD, "**", "ioqosctl"), recursive=True):
        if os.access(p, os.X_OK) and "CMakeFiles" not in p:
            return p
    raise AssertionError("ioqosctl not found under %s" % BUILD)


def ready_pod(selector):
    pods = API.get("/api/v1/namespaces/%s/pods" % SYS, labelSelector=selector)["items"]
    for p in pods:
        if p["metadata"].get("deletionTimestamp"):
            continue
        for c in p["status"].get("conditions", []):
            if c["type"] == "Ready" and c["status"] == "True":
                return p
    return None


def node_obj(name=NODE):
    return API.get("/api/v1/nodes/" + name)


def allocatable_bw():
    return int(node_obj()["status"].get("allocatable", {}).get("ioqos/bandwidth", "0"))


# ---- install ------------------------------------------------------------------------
def install():
    """As docs/operations.md's quick start: capacity, the extender's certificates,
    then kubectl apply -k of the second-scheduler overlay (1.37)."""
    ctl = ioqosctl()
    # step 3 of the quick start, done before the DaemonSet starts so no restart is
    # needed: /var/lib/kubelet is its own disk here, so measure it (docs: Capacity)
    r = subprocess.run([ctl, "calibrate", "--dir", "/var/lib/kubelet", "--output",
                        "/var/lib/ioqos/calibration.json", "--seconds", "3"],
                       capture_output=True, text=True, timeout=300)
    if not check(r.returncode == 0, "ioqosctl calibrate on the node's kubelet disk",
                 (r.stderr or r.stdout)[-800:]):
        raise AssertionError("calibration failed")
    print("    " + r.stdout.strip().replace("\n", "\n    "), flush=True)
    certs = os.path.join(RUN, "extender-certs")
    subprocess.run(["sh", os.path.join(ROOT, "scripts/extender-certs.sh"), "-o", certs],
                   check=True, capture_output=True, timeout=120)
    ensure_namespace(SYS)
    kubectl("apply", "-f", os.path.join(certs, "secrets.yaml"))
    r = kubectl("apply", "-k", os.path.join(ROOT, "manifests/overlays/second-scheduler"), check=False)
    check(r.returncode == 0, "kubectl apply -k manifests/overlays/second-scheduler",
          (r.stderr or r.stdout).strip()[-1500:])
    if r.returncode != 0:
        raise AssertionError("install failed")
    plugin = wait("the ioqos-plugin pod Ready", lambda: ready_pod("app.kubernetes.io/name=ioqos-plugin"),
                  timeout=300)
    check(plugin["spec"]["nodeName"] == NODE, "ioqos-plugin runs on node %s" % NODE)
    wait("node allocatable ioqos/bandwidth > 0", lambda: allocatable_bw() > 0, timeout=120)
    # the scenarios hold up to 30 units at once (a grant of 20, two of 5)
    check(allocatable_bw() >= 40, "the node advertises >= 40 ioqos/bandwidth units",
          "%d: calibrate measured the 200 MiB/s disk far lower (a host too loaded for TCG?)" % allocatable_bw())
    ann = node_obj()["metadata"].get("annotations", {}).get("ioqos.io/devices")
    check(bool(ann), "the plugin published the ioqos.io/devices annotation", str(ann))
    print("    allocatable ioqos/bandwidth: %d, annotation: %s" % (allocatable_bw(), (ann or "")[:300]),
          flush=True)
    wait("the extender Ready", lambda: ready_pod("app.kubernetes.io/name=ioqos-scheduler-ext"), timeout=300)
    wait("the second kube-scheduler Ready", lambda: ready_pod("app.kubernetes.io/name=ioqos-scheduler"),
         timeout=300)
    check(True, "extender and ioqos-scheduler Ready")


def scrape(selector, port):
    """/metrics of the Ready pod of selector. On a loaded machine (TCG) a
    liveness probe can restart a pod now and then: wait for it to be back."""
    def get():
        p = ready_pod(selector)
        if not p:
            return None
        try:
            return http_get("http://%s:%d/metrics" % (p["status"]["podIP"], port))
        except OSError:
            return None
    return wait("/metrics of the Ready %s pod" % selector, get, timeout=240, interval=1)


def extender_metrics():
    return scrape("app.kubernetes.io/name=ioqos-scheduler-ext", 9465)


def plugin_metrics():
    return scrape("app.kubernetes.io/name=ioqos-plugin", 9464)


# ---- 1: a granted pod, placed by the real scheduler through the extender -----------------
GRANT = 20
# busybox dd, direct: the container's first I/O; the rate comes from the pod
# cgroup's io.stat (the kernel's count), sampled from the node
WRITER = ("cat /proc/uptime > /data/t0; dd if=/dev/zero of=/data/f bs=1M count=%d oflag=direct && "
          "cat /proc/uptime > /data/t1 && touch /data/done; exec sleep 100000")


def check_writer_rate(pod, sampler, limit, what):
    """The steady rate of the pod's writes on the disk (io.stat wbytes between
    20 % and 80 % of the total) against limit. Above 1.10 always fails: the
    grant is a cap. The floor is only 0.50: under TCG on a loaded host the
    writer itself can be starved of CPU below its limit (0.81 measured once
    with a compile beside it, 0.99 on a quiet machine); how close a pod gets to
    its grant is make bench's question, not this test's."""
    uid = pod["metadata"]["uid"]
    wait("the writer in %s to finish" % pod["metadata"]["name"],
         lambda: os.path.exists(emptydir_file(uid, "done")), timeout=240)
    time.sleep(0.2)
    sampler.stop.set()
    sampler.join()
    pts = [(t, int(dev_line(st).get("wbytes", 0))) for t, _, st, _ in sampler.samples if st]
    total = pts[-1][1] if pts else 0
    lo = next((p for p in pts if p[1] >= 0.2 * total), None)
    hi = next((p for p in pts if p[1] >= 0.8 * total), None)
    if not total or not lo or not hi or hi[0] <= lo[0]:
        check(False, what, "too few io.stat samples (%d, %d bytes)" % (len(pts), total))
        return
    rate = (hi[1] - lo[1]) / (hi[0] - lo[0])
    # the writer's own view: its bytes over its wall time (/proc/uptime, 10 ms)
    t0 = float(read(emptydir_file(uid, "t0")).split()[0])
    t1 = float(read(emptydir_file(uid, "t1")).split()[0])
    own = total / (t1 - t0) if t1 > t0 else 0
    check(0.50 <= rate / limit <= 1.10, "%s: %.1f MiB/s of %.0f (%.3f by the pod cgroup's io.stat, %.3f by the writer)"
          % (what, rate / MIB, limit / MIB, rate / limit, own / limit))


def start_and_sample(ns, pod):
    created = API.create(pod_path(ns), pod)
    sampler = StartSampler(created["metadata"]["uid"])
    sampler.start()
    return created, sampler


def check_before_first_io(ns, name, sampler, want):
    """want(io.max dict) -> (ok, detail). The sample that first lists the
    container's cgroup was taken after io.max and io.stat were read."""
    p = wait_pod_phase(ns, name, ("Running", "Succeeded"))
    cid = container_id(p)
    first = wait("the sampler to see container %s" % cid, lambda: sampler.first_with(cid), timeout=30)
    iomax = dev_line(first[1])
    ok, detail = want(iomax)
    check(ok, "%s/%s: pod cgroup io.max in place before the container existed" % (ns, name),
          "%s (io.max: %r)" % (detail, first[1]))
    st = dev_line(first[2])
    done = int(st.get("rbytes", 0)) + int(st.get("wbytes", 0))
    check(done == 0, "%s/%s: the pod cgroup's io.stat shows no I/O on %s before that" % (ns, name, DEVNO),
          "io.stat: %r" % first[2])
    return p


FAKE = "ioqos-fake-node"


def add_fake_node():
    """A second Node with room on its disk (no kubelet behind it): kube-scheduler
    scores nodes, and so calls the extender's prioritize, only when more than one
    node is feasible. Its disk is nearly sold, so the extender scores it low."""
    try:
        API.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": FAKE, "labels": {"kubernetes.io/os": "linux", "kubernetes.io/hostname": FAKE}}})
    except ApiError as e:
        if e.status != 409:
            raise
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    res = {"cpu": "8", "memory": "32Gi", "pods": "110", "ioqos/bandwidth": "1000", "ioqos/iops": "100"}
    API.patch("/api/v1/nodes/%s/status" % FAKE, {"status": {
        "capacity": res, "allocatable": res,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake",
                        "lastHeartbeatTime": now, "lastTransitionTime": now}]}})
    anno = {"version": 1, "node": FAKE, "units": {"ioqos/bandwidth": MIB, "ioqos/iops": 100},
            "devices": [{"name": "vdz", "dev": "254:16", "class": "default", "healthy": True,
                         "capacity": {"ioqos/bandwidth": 1000, "ioqos/iops": 100},
                         "allocated": {"ioqos/bandwidth": 950, "ioqos/iops": 0},
                         "capabilities": ["io.max", "buffered-writes"]}],
            "publishedAt": now}
    API.patch("/api/v1/nodes/" + FAKE, {"metadata": {"annotations": {
        "ioqos.io/devices": json.dumps(anno, separators=(",", ":"))}}})


def scenario_granted(ns="ioqos-s1"):
    ensure_namespace(ns)
    add_fake_node()
    before = extender_metrics()
    pod = tools_pod("db", WRITER % 60, bandwidth=GRANT)
    # the fake node has no kubelet: its taints are tolerated so it stays feasible
    # (and prioritize is called), and the real node is preferred so it wins
    # whatever the scores
    pod["spec"]["tolerations"] = [{"operator": "Exists"}]
    pod["spec"]["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100, "preference": {"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE]}]}}]}}
    created, sampler = start_and_sample(ns, pod)
    check(created["spec"].get("schedulerName") == "ioqos-scheduler",
          "the MutatingAdmissionPolicy sent the pod to ioqos-scheduler",
          "schedulerName %r" % created["spec"].get("schedulerName"))
    grant = GRANT * MIB

    def want(m):
        return (m.get("wbps") == str(grant) and m.get("rbps") == str(grant),
                "want rbps=wbps=%d" % grant)
    p = check_before_first_io(ns, "db", sampler, want)
    check(p["spec"].get("nodeName") == NODE, "placed on %s" % NODE)
    disk = p["metadata"].get("annotations", {}).get("ioqos.io/disk")
    check(bool(disk), "the extender's bind recorded the disk (ioqos.io/disk)", repr(p["metadata"].get("annotations")))
    ev = events_for(ns, "db")
    sched = [e for e in ev if e.get("reason") == "Scheduled"]
    src = sched and (sched[0].get("reportingComponent") or sched[0].get("source", {}).get("component"))
    check(src == "ioqos-scheduler", "Scheduled by ioqos-scheduler", repr(src))
    after = extender_metrics()
    API.delete("/api/v1/nodes/" + FAKE)
    for verb in ("filter", "prioritize", "bind"):
        b = metric(before, "ioqos_extender_requests_total", {"verb": verb, "code": "200"}) or 0
        a = metric(after, "ioqos_extender_requests_total", {"verb": verb, "code": "200"}) or 0
        check(a > b, "the extender answered %s for it (%d -> %d)" % (verb, b, a))
    check_writer_rate(p, sampler, grant, "a direct writer in the pod is held to its grant")


# ---- 2: a pod that fits no disk ---------------------------------------------------------
def scenario_unfit():
    ns = "ioqos-s2"
    ensure_namespace(ns)
    pod = tools_pod("nowhere", "sleep 5", bandwidth=10, annotations={"ioqos.io/class": "nonexistent"})
    API.create(pod_path(ns), pod)

    def failed_event():
        for e in events_for(ns, "nowhere"):
            if e.get("reason") == "FailedScheduling" and "no disk in class nonexistent" in e.get("message", ""):
                return e
        return None
    try:
        e = wait("a FailedScheduling event with the extender's reason", failed_event, timeout=120)
        check(True, "FailedScheduling names the extender's reason: %s" % e["message"][:200])
    except AssertionError as err:
        msgs = [x.get("message") for x in events_for(ns, "nowhere")]
        check(False, "FailedScheduling names the extender's reason", "%s; events: %r" % (err, msgs))
    p = API.get(pod_path(ns, "nowhere"))
    check(p["status"].get("phase") == "Pending" and not p["spec"].get("nodeName"), "the pod stays Pending")
    API.delete("/api/v1/namespaces/" + ns, grace=0)


# ---- 3: ResourceQuota on requests.ioqos/bandwidth ------------------------------------
def scenario_quota():
    ns = "ioqos-s3"
    ensure_namespace(ns)
    API.create("/api/v1/namespaces/%s/resourcequotas" % ns, {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "disk-io"},
        "spec": {"hard": {"requests.ioqos/bandwidth": "100"}}})
    wait("the quota controller to fill status.hard",
         lambda: API.get("/api/v1/namespaces/%s/resourcequotas/disk-io" % ns).get("status", {}).get("hard"),
         timeout=60)
    for name, bw in (("q60", 60), ("q40", 40)):
        try:
            API.create(pod_path(ns), tools_pod(name, "sleep 100000", bandwidth=bw, emptydir=False))
            check(True, "quota 100 admits %s (%d)" % (name, bw))
        except ApiError as e:
            check(False, "quota 100 admits %s (%d)" % (name, bw), str(e))
    try:
        API.create(pod_path(ns), tools_pod("q1", "sleep 1", bandwidth=1, emptydir=False))
        check(False, "the third pod is refused by the quota", "it was admitted")
    except ApiError as e:
        check(e.status == 403 and "exceeded quota" in e.message,
              "the third pod is refused: %s" % e.message[:200], "HTTP %d" % e.status)
    q = API.get("/api/v1/namespaces/%s/resourcequotas/disk-io" % ns)
    used = wait("quota status.used 100", lambda: (API.get("/api/v1/namespaces/%s/resourcequotas/disk-io" % ns)
                                                 ["status"].get("used", {}).get("requests.ioqos/bandwidth")
                                                 == "100"), timeout=60)
    check(used, "quota status.used requests.ioqos/bandwidth = 100", repr(q.get("status")))
    # Admission is the quota's whole job; whether 100 more units fit the node
    # depends on the capacity calibrate measured (lower on a loaded host), so the
    # pods are not waited for (placement is the granted scenario's).
    API.delete("/api/v1/namespaces/" + ns, grace=0)


# ---- 4: the shipped admission policies -------------------------------------------
def plugin_token():
    p = wait("a Ready plugin pod", lambda: ready_pod("app.kubernetes.io/name=ioqos-plugin"), timeout=240)
    files = glob.glob("/var/lib/kubelet/pods/%s/volumes/kubernetes.io~projected/*/token" % p["metadata"]["uid"])
    if not files:
        raise AssertionError("no projected token in the plugin pod's volumes")
    return read(files[0]).strip()


def scenario_admission():
    ns = "ioqos-s4"
    ensure_namespace(ns)
    pod = tools_pod("explicit-default", "sleep 1", bandwidth=1, scheduler="default-scheduler", emptydir=False)
    created = API.create(pod_path(ns), pod)
    check(created["spec"]["schedulerName"] == "ioqos-scheduler",
          "schedulerName default-scheduler + ioqos/* is mutated to ioqos-scheduler",
          created["spec"]["schedulerName"])
    try:
        API.create(pod_path(ns), tools_pod("other", "sleep 1", bandwidth=1, scheduler="other-scheduler",
                                           emptydir=False))
        check(False, "a pod with ioqos/* and another scheduler is rejected", "admitted")
    except ApiError as e:
        check(e.status in (403, 422) and "spec.schedulerName is other-scheduler" in e.message,
              "a pod with ioqos/* and another scheduler is rejected: %s" % e.message[:160], str(e))
    plain = API.create(pod_path(ns), tools_pod("plain", "sleep 1", scheduler="other-scheduler", emptydir=False))
    check(plain["spec"]["schedulerName"] == "other-scheduler", "pods without ioqos/* are left alone")
    # the plugin's own credentials: the token kubelet projected into its pod
    # (bound to that pod and node), used against another Node
    try:
        API.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                     "metadata": {"name": "ioqos-other-node"}})
    except ApiError as e:
        if e.status != 409:
            raise
    as_plugin = Api(token=plugin_token())
    own = node_obj()["metadata"]["annotations"]["ioqos.io/devices"]
    try:
        as_plugin.patch("/api/v1/nodes/" + NODE, {"metadata": {"annotations": {"ioqos.io/devices": own}}})
        check(True, "the plugin's token may patch its own node's annotation")
    except ApiError as e:
        check(False, "the plugin's token may patch its own node's annotation", str(e))
    try:
        as_plugin.patch("/api/v1/nodes/ioqos-other-node",
                        {"metadata": {"annotations": {"ioqos.io/devices": own}}})
        check(False, "the plugin cannot patch another node", "the patch was accepted")
    except ApiError as e:
        check(e.status in (403, 422), "the plugin cannot patch another node: HTTP %d %s" % (e.status, e.message[:160]))
    API.delete("/api/v1/nodes/ioqos-other-node")
    API.delete("/api/v1/namespaces/" + ns, grace=0)


# ---- 6: a pod without a grant is bounded before its first I/O ----------------------------
def scenario_ungranted():
    ns = "ioqos-s6"
    ensure_namespace(ns)
    pod = tools_pod("batch", WRITER % 16)
    created, sampler = start_and_sample(ns, pod)

    def want(m):
        w = m.get("wbps")
        return (w is not None and w != "max", "want a finite wbps (the pool's share)")
    check_before_first_io(ns, "batch", sampler, want)
    sampler.stop.set()
    API.delete("/api/v1/namespaces/" + ns, grace=0)


# ---- 8: kubectl ioqos and ioqosctl explain --------------------------------------------
def scenario_ctl():
    ctl = ioqosctl()
    # the build's kubectl-ioqos symlink beside ioqosctl, found by kubectl on PATH
    bindir = os.path.dirname(ctl)
    env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"])
    r = subprocess.run(["kubectl", "ioqos", "nodes"], capture_output=True, text=True, env=env, timeout=120)
    check(r.returncode == 0 and NODE in r.stdout and "default" in r.stdout,
          "kubectl ioqos nodes lists %s's disk" % NODE, (r.stdout + r.stderr)[-600:])
    print("    " + r.stdout.strip().replace("\n", "\n    "), flush=True)
    r = subprocess.run(["kubectl", "ioqos", "pods", "-A"], capture_output=True, text=True, env=env, timeout=120)
    check(r.returncode == 0 and "db" in r.stdout, "kubectl ioqos pods lists ioqos-s1/db", (r.stdout + r.stderr)[-600:])
    print("    " + r.stdout.strip().replace("\n", "\n    "), flush=True)
    def explain():
        # retried while the plugin is (re)starting: its socket is made at start
        r = subprocess.run([ctl, "explain", "--socket", "/var/lib/ioqos/plugin.sock", "ioqos-s1/db"],
                           capture_output=True, text=True, timeout=60)
        return r if r.returncode == 0 or "no explain socket" not in r.stderr else None
    try:
        r = wait("the plugin's explain socket", explain, timeout=240, interval=2)
    except AssertionError:
        r = subprocess.run([ctl, "explain", "--socket", "/var/lib/ioqos/plugin.sock", "ioqos-s1/db"],
                           capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and str(GRANT) in r.stdout, "ioqosctl explain ioqos-s1/db (the plugin's socket)",
          (r.stdout + r.stderr)[-800:])
    print("    " + r.stdout.strip().replace("\n", "\n    ")[:1500], flush=True)


# ---- 7: restarts ---------------------------------------------------------------------------
class IoMaxWatch:
    """io.max of a pod cgroup every 50 ms; any change is recorded."""

    def __init__(self, cg):
        import threading
        self.cg = cg
        self.first = read(cg + "/io.max")
        self.changes = []
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            v = read(self.cg + "/io.max")
            if v != self.first and (not self.changes or self.changes[-1][1] != v):
                self.changes.append((time.monotonic(), v))
            time.sleep(0.05)

    def done(self):
        self.stop.set()
        self.t.join()
        return self.changes


def kubelet_restart():
    n = os.path.join(RUN, "node")
    pid = int(read(os.path.join(n, "kubelet.pid")))
    argv = json.loads(read(os.path.join(n, "kubelet.argv")))
    os.kill(pid, signal.SIGTERM)
    for _ in range(200):
        try:
            os.kill(pid, 0)
            time.sleep(0.1)
        except ProcessLookupError:
            break
    log = open(os.path.join(RUN, "logs", "node-kubelet.log"), "a")
    p = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
    with open(os.path.join(n, "kubelet.pid"), "w") as f:
        f.write(str(p.pid))


def scenario_restarts():
    db = API.get(pod_path("ioqos-s1", "db"))
    cg = pod_cgroup(db["metadata"]["uid"])
    if not check(cg is not None, "ioqos-s1/db's pod cgroup exists"):
        return
    watch = IoMaxWatch(cg)
    grant_line = dev_line(watch.first)
    print("    db io.max: %s" % watch.first.strip(), flush=True)

    # kubelet restarted: it deletes the device-plugin sockets; the plugin sees
    # that and registers again (one more registration per resource)
    regs0 = metric(plugin_metrics(), "ioqos_kubelet_registrations_total") or 0
    alloc0 = allocatable_bw()
    kubelet_restart()
    wait("node Ready after the kubelet restart", lambda: any(
        c["type"] == "Ready" and c["status"] == "True" for c in node_obj()["status"]["conditions"]), timeout=300)
    regs = wait("the plugin to register again", lambda: (lambda v: v if v and v >= regs0 + 2 else None)(
        metric(plugin_metrics(), "ioqos_kubelet_registrations_total")), timeout=180)
    check(True, "kubelet restarted: the plugin registered both resources again (registrations %d -> %d)"
          % (regs0, regs))
    wait("allocatable ioqos/bandwidth back at %d" % alloc0, lambda: allocatable_bw() == alloc0, timeout=120)
    check(True, "the restarted kubelet reports allocatable ioqos/bandwidth %d again" % alloc0)
    ns = "ioqos-s7"
    ensure_namespace(ns)
    API.create(pod_path(ns), tools_pod("after-kubelet", "sleep 100000", bandwidth=5, emptydir=False))
    wait_pod_phase(ns, "after-kubelet", ("Running",))
    check(True, "a granted pod is admitted by the restarted kubelet")

    # the plugin pod deleted: the DaemonSet's new pod adopts the grants from the kernel
    old = wait("a Ready plugin pod", lambda: ready_pod("app.kubernetes.io/name=ioqos-plugin"), timeout=240)
    API.delete(pod_path(SYS, old["metadata"]["name"]))
    wait("a new ioqos-plugin pod Ready", lambda: (lambda p: p and p["metadata"]["uid"] != old["metadata"]["uid"] and p)(
        ready_pod("app.kubernetes.io/name=ioqos-plugin")), timeout=300)
    check(True, "the DaemonSet replaced the plugin pod")
    time.sleep(3)  # one reconcile interval of the new plugin
    # the extender restarted: it rebuilds its placements from the pods' annotations
    old = wait("a Ready extender pod", lambda: ready_pod("app.kubernetes.io/name=ioqos-scheduler-ext"),
               timeout=240)
    API.delete(pod_path(SYS, old["metadata"]["name"]))
    wait("a new extender pod Ready", lambda: (lambda p: p and p["metadata"]["uid"] != old["metadata"]["uid"] and p)(
        ready_pod("app.kubernetes.io/name=ioqos-scheduler-ext")), timeout=300)
    API.create(pod_path(ns), tools_pod("after-extender", "sleep 100000", bandwidth=5, emptydir=False))
    p = wait_pod_phase(ns, "after-extender", ("Running",))
    check(bool(p["metadata"].get("annotations", {}).get("ioqos.io/disk")),
          "the restarted extender places and binds a new pod")
    changes = watch.done()
    check(not changes, "db's io.max was never lifted or lowered through the three restarts (sampled every 50 ms)",
          "changes: %r" % changes[:5])
    check(dev_line(read(cg + "/io.max")) == grant_line, "db's io.max still carries its grant")
    API.delete("/api/v1/namespaces/" + ns, grace=0)


# ---- 5: DRA mode: the real kube-scheduler allocates, the real kubelet prepares ------------
def claims_file():
    return read("/var/lib/ioqos/dra-claims.json") or ""


def scenario_dra():
    """The node moves from device-plugin mode to DRA (docs: overlays/dra README,
    "Migration"): its device-plugin pods go, the device-plugin DaemonSet goes,
    the node is labelled ioqos.io/mode=dra and overlays/dra is applied."""
    for ns in ("ioqos-s1", "ioqos-s7"):
        API.delete("/api/v1/namespaces/" + ns, grace=0)
    kubectl("-n", SYS, "delete", "daemonset", "ioqos-plugin", "--wait=true", timeout=300)
    wait("the device-plugin pod gone", lambda: not API.get(
        "/api/v1/namespaces/%s/pods" % SYS, labelSelector="app.kubernetes.io/instance=default")["items"],
        timeout=180)
    API.patch("/api/v1/nodes/" + NODE, {"metadata": {"labels": {"ioqos.io/mode": "dra"}}})
    r = kubectl("apply", "-k", os.path.join(ROOT, "manifests/overlays/dra"), check=False)
    if not check(r.returncode == 0, "kubectl apply -k manifests/overlays/dra", (r.stderr or r.stdout)[-1500:]):
        return
    wait("the ioqos-plugin-dra pod Ready", lambda: ready_pod("app.kubernetes.io/instance=dra"), timeout=300)

    def node_slice():
        for sl in API.get("/apis/resource.k8s.io/v1/resourceslices")["items"]:
            if sl["spec"].get("driver") == "ioqos.io" and sl["spec"].get("nodeName") == NODE:
                return sl
        return None
    sl = wait("the driver's ResourceSlice for %s" % NODE, node_slice, timeout=180)
    dev = sl["spec"]["devices"][0]
    check("bandwidth" in dev.get("capacity", {}), "the ResourceSlice offers consumable bandwidth capacity",
          json.dumps(dev)[:400])
    ns = "ioqos-s5"
    ensure_namespace(ns)
    API.create("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaimtemplates" % ns, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "disk-bw"},
        "spec": {"spec": {"devices": {"requests": [{"name": "disk", "exactly": {
            "deviceClassName": "ioqos-default", "allocationMode": "ExactCount", "count": 1,
            "capacity": {"requests": {"bandwidth": str(GRANT)}}}}]}}}})
    pod = tools_pod("dra-db", WRITER % 40)
    pod["spec"]["resourceClaims"] = [{"name": "disk", "resourceClaimTemplateName": "disk-bw"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "disk"}]
    created, sampler = start_and_sample(ns, pod)
    grant = GRANT * MIB

    def want(m):
        return (m.get("wbps") == str(grant) and m.get("rbps") == str(grant),
                "want rbps=wbps=%d (the claim's %d units)" % (grant, GRANT))
    p = check_before_first_io(ns, "dra-db", sampler, want)
    st = p["status"].get("resourceClaimStatuses") or []
    claim_name = st[0]["resourceClaimName"] if st else None
    claim = API.get("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s" % (ns, claim_name))
    res = claim["status"]["allocation"]["devices"]["results"][0]
    check(res.get("driver") == "ioqos.io" and res.get("consumedCapacity", {}).get("bandwidth") == str(GRANT),
          "kube-scheduler allocated the claim from the ResourceSlice (consumed bandwidth %s)"
          % res.get("consumedCapacity", {}).get("bandwidth"), json.dumps(res)[:400])
    uid = claim["metadata"]["uid"]
    check(uid in claims_file(), "the plugin recorded the prepared claim (dra-claims.json)")
    check_writer_rate(p, sampler, grant, "a direct writer in the DRA pod is held to its claim")
    API.delete(pod_path(ns, "dra-db"))
    wait("the pod gone", lambda: not _exists(pod_path(ns, "dra-db")), timeout=180)
    ok = wait("the claim unprepared (gone from dra-claims.json)", lambda: uid not in claims_file(), timeout=120)
    check(ok, "deleting the pod unprepared its claim")
    API.delete("/api/v1/namespaces/" + ns, grace=0)


def _exists(path):
    try:
        API.get(path)
        return True
    except ApiError as e:
        if e.status == 404:
            return False
        raise


SCENARIOS = [
    ("granted", scenario_granted),
    ("admission", scenario_admission),
    ("unfit", scenario_unfit),
    ("quota", scenario_quota),
    ("ungranted", scenario_ungranted),
    ("ctl", scenario_ctl),
    ("restarts", scenario_restarts),
    ("dra", scenario_dra),  # it moves the node to DRA mode
    # last: it replaces the kustomize install with the Helm chart (scenario_helm.py)
    ("helm", lambda: scenario_helm.run(sys.modules[__name__])),
]


def keep_pod_logs(scenario):
    """The ioqos pods' container logs as they are when a scenario fails: a later
    scenario (the DRA overlay) replaces those pods, and the node's /var/log/pods copy
    at the end would no longer hold them."""
    dst = os.path.join(RUN, "logs", "failed-%s" % scenario)
    try:
        for name in os.listdir("/var/log/pods"):
            if name.startswith(SYS + "_"):
                shutil.copytree(os.path.join("/var/log/pods", name), os.path.join(dst, name),
                                dirs_exist_ok=True)
        print("    pod logs kept: %s" % dst, flush=True)
    except OSError as e:
        print("    pod logs not kept: %s" % e, flush=True)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--list"]:
        print("\n".join(n for n, _ in SCENARIOS))
        return 0
    unknown = [a for a in args if a not in dict(SCENARIOS)]
    if unknown:
        print("scenarios: unknown %s (known: %s)" % (", ".join(unknown), ", ".join(n for n, _ in SCENARIOS)),
              file=sys.stderr)
        return 2
    if not DEVNO:
        print("scenarios: IOQOS_E2E_DISK_KUBELET_DEVNO is not set (run through tests/cluster/run.sh)",
              file=sys.stderr)
        return 2
    # ctl and restarts look at the granted scenario's pod
    if any(a in ("ctl", "restarts") for a in args) and "granted" not in args:
        args.append("granted")
    todo = [(n, f) for n, f in SCENARIOS if not args or n in args]
    t0 = time.monotonic()
    print("== install", flush=True)
    try:
        install()
    except Exception as e:  # noqa: BLE001 - every scenario needs the install
        check(False, "install", "%s\n%s" % (e, traceback.format_exc()))
        todo = []
    for name, fn in todo:
        t = time.monotonic()
        print("== %s" % name, flush=True)
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - report and go on with the next scenario
            check(False, "scenario %s raised" % name, "%s\n%s" % (e, traceback.format_exc()))
            keep_pod_logs(name)
        print("   (%s: %.0f s)" % (name, time.monotonic() - t), flush=True)
    print("cluster scenarios: %.0f s" % (time.monotonic() - t0))
    print("%d passed, %d failed" % (RESULTS["passed"], RESULTS["failed"]))
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())

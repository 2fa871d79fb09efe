# SPDX-License-Identifier: Apache-2.0
"""A small client for the test cluster's real kube-apiserver (admin
certificate), plus the node-side helpers the scenarios share: kubectl, waits,
pod cgroups and the sampler that proves a limit was in place before a
container's first I/O. Runs on the node (in the VM), where the cgroup files
are."""
import http.client
import json
import os
import re
import ssl
import subprocess
import threading
import time
import urllib.parse

RUN = os.environ["IOQOS_CLUSTER_RUN"]
BUILD = os.environ.get("IOQOS_CLUSTER_BUILD", "")
PKI = os.path.join(RUN, "pki")
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NODE = os.environ.get("IOQOS_CLUSTER_NODE", "ioqos-e2e")
DEVNO = os.environ.get("IOQOS_E2E_DISK_KUBELET_DEVNO", "")
CGROOT = "/sys/fs/cgroup"


class ApiError(Exception):
    def __init__(self, status, body):
        self.status = status
        self.body = body
        try:
            self.message = json.loads(body).get("message", body)
        except ValueError:
            self.message = body
        super().__init__("HTTP %d: %s" % (status, self.message))


class Api:
    """JSON over HTTPS to the apiserver at 10.0.2.2 (the host's loopback)."""

    def __init__(self, kubeconfig=None, token=None):
        port = int(os.environ.get("IOQOS_CLUSTER_APISERVER_PORT", "16443"))
        self.host, self.port = "10.0.2.2", port
        self.ctx = ssl.create_default_context(cafile=os.path.join(PKI, "ca.crt"))
        self.token = token
        if token is None:
            self.ctx.load_cert_chain(os.path.join(PKI, "admin.crt"), os.path.join(PKI, "admin.key"))

    def call(self, method, path, body=None, ctype="application/json", timeout=60):
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = ctype
        try:
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            raw = r.read().decode()
        finally:
            conn.close()
        if r.status >= 300:
            raise ApiError(r.status, raw)
        return json.loads(raw) if raw else None

    def get(self, path, **q):
        if q:
            path += "?" + urllib.parse.urlencode(q)
        return self.call("GET", path)

    def create(self, path, obj):
        return self.call("POST", path, obj)

    def delete(self, path, grace=None):
        q = "" if grace is None else "?gracePeriodSeconds=%d" % grace
        try:
            return self.call("DELETE", path + q)
        except ApiError as e:
            if e.status != 404:
                raise
            return None

    def patch(self, path, obj, kind="merge"):
        ctype = {"merge": "application/merge-patch+json",
                 "strategic": "application/strategic-merge-patch+json"}[kind]
        return self.call("PATCH", path, obj, ctype)


API = Api()


def kubectl(*args, stdin=None, check=True, timeout=180):
    r = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("kubectl %s failed (%d): %s" % (" ".join(args), r.returncode,
                                                             (r.stderr or r.stdout).strip()))
    return r


def wait(what, fn, timeout=180, interval=0.5):
    """Poll fn until it returns something truthy; that value is returned."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = fn()
            if v:
                return v
        except ApiError as e:
            last = e
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ds waiting for %s%s" %
                                 (timeout, what, (" (last error: %s)" % last) if last else ""))
        time.sleep(interval)


def pod_path(ns, name=""):
    return "/api/v1/namespaces/%s/pods%s" % (ns, "/" + name if name else "")


def ensure_namespace(ns, labels=None):
    try:
        API.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": ns, "labels": labels or {}}})
    except ApiError as e:
        if e.status != 409:
            raise
    # pods need the namespace's default ServiceAccount (the controller-manager makes it)
    wait("ServiceAccount %s/default" % ns,
         lambda: API.get("/api/v1/namespaces/%s/serviceaccounts/default" % ns), timeout=60)


def delete_namespace(ns):
    API.delete("/api/v1/namespaces/" + ns, grace=0)


def tools_pod(name, command, bandwidth=None, iops=None, annotations=None, scheduler=None,
              requests_cpu="10m", emptydir=True):
    """A pod of the test-tools image (busybox), restartPolicy Never."""
    res = {"requests": {"cpu": requests_cpu, "memory": "16Mi"}, "limits": {"memory": "256Mi"}}
    for k, v in (("ioqos/bandwidth", bandwidth), ("ioqos/iops", iops)):
        if v is not None:
            res["requests"][k] = str(v)
            res["limits"][k] = str(v)
    spec = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 1,
        "containers": [{
            "name": "app", "image": "localhost/ioqos-test-tools:1", "imagePullPolicy": "Never",
            "command": ["/bin/sh", "-c", command], "resources": res,
        }],
    }
    if emptydir:
        spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        spec["volumes"] = [{"name": "data", "emptyDir": {}}]
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}


def wait_pod_phase(ns, name, phases, timeout=300):
    def check():
        p = API.get(pod_path(ns, name))
        ph = p["status"].get("phase")
        if ph in phases:
            return p
        if ph == "Failed" and "Failed" not in phases:
            raise AssertionError("pod %s/%s failed: %s" % (ns, name, json.dumps(p["status"])[:800]))
        return None
    return wait("pod %s/%s in %s" % (ns, name, "/".join(phases)), check, timeout=timeout)


def events_for(ns, name):
    ev = API.get("/api/v1/namespaces/%s/events" % ns,
                 fieldSelector="involvedObject.name=%s" % name)
    return ev.get("items", [])


def pod_cgroup(uid):
    """The pod's cgroup dir (cgroupfs driver: kubepods[/burstable|/besteffort]/pod<uid>)."""
    for qos in ("", "burstable/", "besteffort/"):
        d = "%s/kubepods/%spod%s" % (CGROOT, qos, uid)
        if os.path.isdir(d):
            return d
    return None


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def dev_line(text, devno=None):
    """The MAJ:MIN line of io.max / io.stat as a dict ({} when absent)."""
    devno = devno or DEVNO
    for line in (text or "").splitlines():
        f = line.split()
        if f and f[0] == devno:
            return dict(kv.split("=", 1) for kv in f[1:] if "=" in kv)
    return {}


class StartSampler(threading.Thread):
    """Samples a pod's cgroup every few ms from the moment it exists: io.max
    and io.stat are read BEFORE the children are listed, so a sample that
    lists the container's cgroup proves what io.max said before that cgroup
    (and so the container's first instruction) existed."""

    def __init__(self, uid, timeout=300):
        super().__init__(daemon=True)
        self.uid = uid
        self.samples = []
        self.stop = threading.Event()
        self.timeout = timeout

    def run(self):
        deadline = time.monotonic() + self.timeout
        d = None
        while not self.stop.is_set() and time.monotonic() < deadline:
            if d is None:
                d = pod_cgroup(self.uid)
                if d is None:
                    time.sleep(0.005)
                    continue
            iomax = read(d + "/io.max")
            iostat = read(d + "/io.stat")
            try:
                children = [c for c in os.listdir(d) if os.path.isdir(os.path.join(d, c))]
            except OSError:
                break  # the pod cgroup is gone
            self.samples.append((time.monotonic(), iomax, iostat, children))
            time.sleep(0.005)

    def first_with(self, container_id):
        for s in self.samples:
            if container_id in s[3]:
                return s
        return None


def container_id(pod, name="app"):
    for cs in pod["status"].get("containerStatuses", []):
        if cs["name"] == name and cs.get("containerID"):
            return cs["containerID"].split("://", 1)[1]
    return None


def emptydir_file(uid, rel, vol="data"):
    return "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~empty-dir/%s/%s" % (uid, vol, rel)


def http_get(url, timeout=10):
    import urllib.request
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def metric(text, name, labels=None):
    """Sum of the samples of metric name whose labels include labels."""
    total = 0.0
    found = False
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)', line)
        if not m or m.group(1) != name:
            continue
        lab = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        if labels and any(lab.get(k) != v for k, v in labels.items()):
            continue
        total += float(m.group(4))
        found = True
    return total if found else None

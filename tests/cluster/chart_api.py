#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The Helm chart against a real kube-apiserver v1.37.2 (the test cluster's
control plane on the host, no node): what `helm template` cannot tell. The
server validates every object the chart sends (CEL of the admission
policies, DeviceClasses, MutatingAdmissionPolicy v1, Service IPs), Helm's
release bookkeeping runs for real (install, upgrade, rollback, uninstall),
and `lookup` sees the cluster (kept certificates, the namespace's Pod
Security labels).

  chart_api.py BINDIR HELM      (ctest cluster.chart; BINDIR from build-components.sh)

Prints one line per check; exit 1 when one failed.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CHART = os.path.join(ROOT, "manifests", "chart")
NS = "ioqos-system"
# apart from cluster.scenarios' ports (16443..16447), in case both ever run at once
PORT = int(os.environ.get("IOQOS_CHART_APISERVER_PORT", "16543"))
FAILED = []
# kinds the chart makes without a namespace: uninstall must leave none of them
CLUSTER_KINDS = ("clusterroles", "clusterrolebindings", "validatingadmissionpolicies",
                 "validatingadmissionpolicybindings", "mutatingadmissionpolicies",
                 "mutatingadmissionpolicybindings", "deviceclasses")


def check(cond, what, detail=""):
    print(("  ok    %s" if cond else "  FAIL  %s") % what + ("" if cond or not detail else ": " + detail), flush=True)
    if not cond:
        FAILED.append(what)
    return cond


class Cluster:
    def __init__(self, bindir, helm):
        self.bin, self.helm_bin = bindir, helm
        self.run_dir = tempfile.mkdtemp(prefix="ioqos-chart-api.")
        self.env = dict(os.environ, IOQOS_CLUSTER_APISERVER_PORT=str(PORT),
                        KUBECONFIG=os.path.join(self.run_dir, "pki", "admin.kubeconfig"),
                        PATH=bindir + ":" + os.environ["PATH"],
                        HELM_CACHE_HOME=os.path.join(self.run_dir, "helm", "cache"),
                        HELM_CONFIG_HOME=os.path.join(self.run_dir, "helm", "config"),
                        HELM_DATA_HOME=os.path.join(self.run_dir, "helm", "data"))

    def sh(self, *cmd, timeout=300):
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, env=self.env)

    def start(self):
        url = "https://127.0.0.1:%d" % PORT
        r = self.sh(os.path.join(HERE, "pki.sh"), os.path.join(self.run_dir, "pki"), url, url, "ioqos-e2e")
        if r.returncode != 0:
            raise AssertionError("pki.sh: " + r.stderr[-800:])
        r = self.sh(os.path.join(HERE, "controlplane.sh"), "start", self.run_dir, self.bin, timeout=600)
        if r.returncode != 0:
            raise AssertionError("controlplane.sh start: " + r.stderr[-1500:])

    def stop(self, keep):
        self.sh(os.path.join(HERE, "controlplane.sh"), "stop", self.run_dir)
        if keep:
            print("run directory kept: %s (logs/)" % self.run_dir)
        else:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def kubectl(self, *args, stdin=None):
        return subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True, timeout=120,
                              env=self.env)

    def helm(self, *args):
        return self.sh(self.helm_bin, *args, timeout=600)

    def get(self, *args):
        r = self.kubectl("get", "-o", "json", *args)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def rendered(self, sets, ns=NS):
        """(kind, namespace, name) of every object the chart renders with sets."""
        args = []
        for s in sets:
            args += ["--set", s]
        r = self.helm("template", "ioqos", CHART, "-n", ns, *args)
        if r.returncode != 0:
            raise AssertionError("helm template: " + r.stderr[-800:])
        import yaml  # PyYAML, as the host's manifest checks use
        return [(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
                for o in yaml.safe_load_all(r.stdout) if o]


def ioqos_cluster_objects(c):
    out = []
    for kind in CLUSTER_KINDS:
        d = c.get(kind, "-l", "app.kubernetes.io/part-of=ioqos")
        out += ["%s/%s" % (kind, i["metadata"]["name"]) for i in (d or {}).get("items", [])]
    return out


def install_case(c, name, sets, tls_generated=False):
    """Install with sets, find every rendered object on the server, uninstall."""
    args = []
    for s in sets:
        args += ["--set", s]
    r = c.helm("install", "ioqos", CHART, "-n", NS, *args)
    if not check(r.returncode == 0 and "STATUS: deployed" in r.stdout,
                 "%s: helm install, every object accepted by kube-apiserver" % name, (r.stderr or r.stdout)[-1200:]):
        c.helm("uninstall", "ioqos", "-n", NS)
        return
    missing = []
    objs = c.rendered(sets)
    check(len(objs) >= 10, "%s: the chart renders its objects (%d)" % (name, len(objs)))
    for kind, ns, obj in objs:
        a = ["-n", ns] if ns else []
        if c.get(kind, obj, *a) is None:
            missing.append("%s %s/%s" % (kind, ns, obj))
    check(not missing, "%s: every object the chart renders is on the server" % name, repr(missing[:6]))
    r = c.helm("uninstall", "ioqos", "-n", NS, "--wait", "--timeout", "2m")
    check(r.returncode == 0, "%s: helm uninstall" % name, r.stderr[-600:])
    left = ioqos_cluster_objects(c)
    check(not left, "%s: uninstall leaves no cluster-scoped ioqos object" % name, repr(left))


def secret_data(c, name):
    d = c.get("secret", name, "-n", NS)
    return d and d.get("data")


def upgrade_and_rollback(c):
    sets = ["--set", "scheduler.wiring=second-scheduler", "--set", "tls.generate=true"]
    r = c.helm("install", "ioqos", CHART, "-n", NS, *sets)
    if not check(r.returncode == 0, "second scheduler with generated certificates: helm install",
                 (r.stderr or r.stdout)[-800:]):
        return
    srv, cli = secret_data(c, "ioqos-scheduler-ext-tls"), secret_data(c, "ioqos-scheduler-ext-client")
    crt = base64.b64decode(srv["tls.crt"]).decode() if srv else ""
    p = subprocess.run(["openssl", "x509", "-noout", "-subject", "-ext", "subjectAltName"], input=crt,
                       capture_output=True, text=True, timeout=30)
    check("DNS:ioqos-scheduler-ext.ioqos-system.svc" in p.stdout, "the generated server certificate names the Service",
          p.stdout + p.stderr)

    def image(kind, name):
        d = c.get(kind, name, "-n", NS)
        return d and d["spec"]["template"]["spec"]["containers"][0]["image"]
    before = image("daemonset", "ioqos-plugin")
    # A tag no release will have; built from parts so manifests.version does not read it as a stale copy.
    new_tag = ".".join(["9"] * 3) + "-upgrade"
    r = c.helm("upgrade", "ioqos", CHART, "-n", NS, "--reuse-values", "--set", "image.tag=" + new_tag)
    check(r.returncode == 0, "helm upgrade --reuse-values to a new image tag", r.stderr[-600:])
    check(image("daemonset", "ioqos-plugin") == "localhost/ioqos:" + new_tag and
          image("deployment", "ioqos-scheduler-ext") == "localhost/ioqos:" + new_tag,
          "the DaemonSet and the extender carry the new image")
    check(secret_data(c, "ioqos-scheduler-ext-tls") == srv and secret_data(c, "ioqos-scheduler-ext-client") == cli,
          "the upgrade kept both certificates (read back with lookup, not made anew)")
    r = c.helm("rollback", "ioqos", "1", "-n", NS)
    check(r.returncode == 0, "helm rollback ioqos 1", r.stderr[-600:])
    check(image("daemonset", "ioqos-plugin") == before, "the rollback restored the first image", str(before))
    check(secret_data(c, "ioqos-scheduler-ext-tls") == srv, "the rollback kept the certificates")
    h = c.helm("history", "ioqos", "-n", NS, "-o", "json")
    revs = [x.get("status") for x in json.loads(h.stdout)] if h.returncode == 0 else []
    check(revs == ["superseded", "superseded", "deployed"], "the release history: install, upgrade, rollback", repr(revs))
    c.helm("uninstall", "ioqos", "-n", NS, "--wait", "--timeout", "2m")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    bindir, helm = sys.argv[1], sys.argv[2]
    for p in (os.path.join(bindir, "kube-apiserver"), helm):
        if not os.access(p, os.X_OK):
            print("chart_api: %s is not executable" % p, file=sys.stderr)
            return 1
    c = Cluster(bindir, helm)
    try:
        c.start()
        print("== the chart against kube-apiserver (https://127.0.0.1:%d)" % PORT, flush=True)
        r = c.kubectl("create", "namespace", NS)
        check(r.returncode == 0, "namespace %s" % NS, r.stderr)
        # the chart's NOTES read the namespace back: unlabelled, they say what to label
        r = c.helm("install", "ioqos", CHART, "-n", NS, "--dry-run=server")
        check(r.returncode == 0 and "pod-security.kubernetes.io/enforce=privileged" in r.stdout,
              "NOTES (dry run against the server) warn about the namespace's missing Pod Security label",
              (r.stderr or r.stdout)[-600:])
        c.kubectl("label", "namespace", NS, "pod-security.kubernetes.io/enforce=privileged",
                  "pod-security.kubernetes.io/warn=privileged")
        r = c.helm("install", "ioqos", CHART, "-n", NS, "--dry-run=server")
        check(r.returncode == 0 and "enforce=privileged" not in r.stdout,
              "NOTES are quiet about a labelled namespace", r.stdout[-400:])
        install_case(c, "defaults", [])
        install_case(c, "second scheduler, generated certificates, dashboard",
                     ["scheduler.wiring=second-scheduler", "tls.generate=true", "monitoring.dashboard=true"])
        install_case(c, "DRA mode with nvmet", ["mode=dra", "plugin.nvmetConfigfs=true"])
        install_case(c, "in place (a Service IP in this cluster's range), a node pool",
                     ["scheduler.wiring=in-place", "scheduler.inPlace.serviceIP=10.0.0.88", "plugin.pools[0].name=fast"])
        # control: the server validates what the chart sends (kubeadm's default IP is
        # outside this cluster's 10.0.0.0/24)
        r = c.helm("install", "ioqos", CHART, "-n", NS, "--set", "scheduler.wiring=in-place")
        check(r.returncode != 0 and "10.96.0.88" in r.stderr,
              "control: kube-apiserver refuses a Service IP outside its range", (r.stderr or r.stdout)[-400:])
        c.helm("uninstall", "ioqos", "-n", NS, "--wait", "--timeout", "2m")
        upgrade_and_rollback(c)
    except (AssertionError, subprocess.TimeoutExpired, OSError, ValueError) as e:
        check(False, "chart_api", str(e))
    finally:
        c.stop(keep=bool(FAILED) or bool(os.environ.get("IOQOS_TEST_KEEP")))
    print("%d failed" % len(FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())

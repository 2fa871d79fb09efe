# SPDX-License-Identifier: Apache-2.0
"""The cluster scenario "helm" (issue 31): ioqos moved from its kustomize
install to the Helm chart (manifests/chart), then upgraded, its extender rolled
while pods are being scheduled, rolled back and uninstalled, with a granted pod
and a pod without a grant doing I/O throughout. Their pod cgroups' io.max are
read every 50 ms: the granted pod's must never change (not lifted, not
lowered), the other's must never lose its bound.

Run by scenarios.py (last: it removes the kustomize install); its helpers are
passed in as S, the scenarios module, so checks are counted in one place.
"""
import json
import os
import subprocess
import threading
import time

import yaml

from kube import (API, NODE, ROOT, RUN, dev_line, ensure_namespace, kubectl, metric,  # noqa: E402
                  pod_cgroup, pod_path, read, tools_pod, wait, wait_pod_phase)

MIB = 1 << 20
SYS = "ioqos-system"
CHART = os.path.join(ROOT, "manifests", "chart")
NS = "ioqos-h2"
DB_GRANT = 20
# the db writes at its grant for as long as the scenario runs; batch (no grant)
# as fast as its bound lets it
LOOP_WRITER = "while :; do dd if=/dev/zero of=/data/f bs=1M count=32 oflag=direct 2>/dev/null; done"
PLUGIN = "app.kubernetes.io/name=ioqos-plugin"
EXTENDER = "app.kubernetes.io/name=ioqos-scheduler-ext"


def helm(*args, timeout=600):
    exe = os.environ.get("IOQOS_HELM", "")
    if not exe or not os.access(exe, os.X_OK):
        raise AssertionError("IOQOS_HELM is %r, not an executable helm (run through tests/cluster/run.sh)" % exe)
    home = os.path.join(RUN, "helm")
    env = dict(os.environ, HELM_CACHE_HOME=home + "/cache", HELM_CONFIG_HOME=home + "/config",
               HELM_DATA_HOME=home + "/data")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout, env=env)


def remove_kustomize_install(S):
    """docs/operations.md, "From kustomize to Helm": Helm adopts no object another
    tool made. Everything the overlays applied goes but the Namespace (and with it
    the PodSecurity label), then the Secrets, which the chart generates here.
    Returns the image the overlays ran (localhost/ioqos:VERSION, the chart's
    default too: manifests.version holds both to CMakeLists.txt)."""
    docs = []
    for ov in ("overlays/dra", "overlays/second-scheduler"):
        out = kubectl("kustomize", os.path.join(ROOT, "manifests", ov)).stdout
        docs += [d for d in yaml.safe_load_all(out) if d and d.get("kind") != "Namespace"]
    r = kubectl("delete", "--ignore-not-found", "--wait=true", "-f", "-",
                stdin=yaml.safe_dump_all(docs), check=False, timeout=300)
    S.check(r.returncode == 0, "the kustomize install removed (%d objects, the Namespace kept)" % len(docs),
            (r.stderr or r.stdout)[-800:])
    kubectl("-n", SYS, "delete", "secret", "--ignore-not-found", "ioqos-scheduler-ext-tls",
            "ioqos-scheduler-ext-client")
    wait("no pod left in %s" % SYS, lambda: not API.get("/api/v1/namespaces/%s/pods" % SYS)["items"], timeout=300)
    # back to device-plugin mode (the dra scenario labelled the node)
    API.patch("/api/v1/nodes/" + NODE, {"metadata": {"labels": {"ioqos.io/mode": None}}})
    return next(d["spec"]["template"]["spec"]["containers"][0]["image"] for d in docs
                if d["kind"] == "DaemonSet" and d["metadata"]["name"] == "ioqos-plugin")


def pod_uids(selector):
    """The uids of the pods of selector in ioqos-system now (the ones a roll replaces)."""
    return {p["metadata"]["uid"] for p in API.get("/api/v1/namespaces/%s/pods" % SYS,
                                                  labelSelector=selector)["items"]}


def ready_new(S, selector, old_uids, image=None):
    """A Ready pod of selector that is none of old_uids (and runs image)."""
    def get():
        p = S.ready_pod(selector)
        if not p or p["metadata"]["uid"] in old_uids:
            return None
        if image and p["spec"]["containers"][0]["image"] != image:
            return None
        return p
    return get


def reconcile_passes(S, n, timeout=180):
    """n more reconcile passes of the Ready plugin without a failed one: the
    plugin found every listed pod's grant in place (its own count)."""
    m0 = S.plugin_metrics()
    ok0 = metric(m0, "ioqos_reconcile_ok_total") or 0
    fail0 = metric(m0, "ioqos_reconcile_failed_total") or 0

    def more():
        m = S.plugin_metrics()
        ok = metric(m, "ioqos_reconcile_ok_total") or 0
        return (ok, metric(m, "ioqos_reconcile_failed_total") or 0) if ok >= ok0 + n else None
    ok, fail = wait("%d reconcile passes of the plugin" % n, more, timeout=timeout, interval=1)
    return fail - fail0, ok - ok0


def disk_capacity(S):
    ann = json.loads(S.node_obj()["metadata"]["annotations"]["ioqos.io/devices"])
    return {d["name"]: d["capacity"].get("ioqos/bandwidth", 0) for d in ann["devices"]}


def placements(S):
    """Units of ioqos/bandwidth of the node's live pods, summed per disk
    (ioqos.io/disk, the extender's bind), and pods without that annotation."""
    per, unplaced = {}, []
    for p in API.get("/api/v1/pods", fieldSelector="spec.nodeName=" + NODE)["items"]:
        if p["status"].get("phase") in ("Succeeded", "Failed") or p["metadata"].get("deletionTimestamp"):
            continue
        units = sum(int(c["resources"].get("requests", {}).get("ioqos/bandwidth", "0"))
                    for c in p["spec"]["containers"])
        if not units:
            continue
        disk = p["metadata"].get("annotations", {}).get("ioqos.io/disk")
        if not disk:
            unplaced.append(p["metadata"]["name"])
            continue
        per[disk] = per.get(disk, 0) + units
    return per, unplaced


def check_placements(S, what):
    cap = disk_capacity(S)
    per, unplaced = placements(S)
    over = {d: (u, cap.get(d)) for d, u in per.items() if cap.get(d) is None or u > cap[d]}
    S.check(not over and not unplaced, "%s: no disk holds more units than it has (%s)" % (
        what, ", ".join("%s %d of %s" % (d, u, cap.get(d)) for d, u in sorted(per.items()))),
        "over: %r, bound without a disk: %r" % (over, unplaced))


def tag_image(src, dst):
    """The same image under a new tag (the upgrade's "new image, same code")."""
    r = subprocess.run(["ctr", "--address", "/run/containerd/containerd.sock", "-n", "k8s.io",
                        "images", "tag", "--force", src, dst], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("ctr images tag %s %s: %s" % (src, dst, r.stderr.strip()))


def bound_values(watch):
    """Every io.max value batch's cgroup showed, its wbps on the disk."""
    vals = [watch.first] + [v for _, v in watch.changes]
    return [dev_line(v).get("wbps") for v in vals]


def run(S):
    image = remove_kustomize_install(S)

    # -- install: the chart with the second scheduler and generated certificates
    sets = ["--set", "scheduler.wiring=second-scheduler", "--set", "tls.generate=true"]
    r = helm("install", "ioqos", CHART, "-n", SYS, *sets)
    if not S.check(r.returncode == 0, "helm install ioqos manifests/chart (second scheduler, generated certificates)",
                   (r.stderr or r.stdout)[-1500:]):
        return
    plugin = wait("the chart's ioqos-plugin pod Ready", lambda: S.ready_pod(PLUGIN), timeout=300)
    S.check(plugin["spec"]["containers"][0]["image"] == image, "the chart runs %s" % image,
            plugin["spec"]["containers"][0]["image"])
    wait("node allocatable ioqos/bandwidth > 0", lambda: S.allocatable_bw() > 0, timeout=180)
    wait("the extender Ready", lambda: S.ready_pod(EXTENDER), timeout=300)
    wait("the second kube-scheduler Ready", lambda: S.ready_pod("app.kubernetes.io/name=ioqos-scheduler"),
         timeout=300)
    # the first scenario again, on the chart's install
    S.scenario_granted("ioqos-h1")
    API.delete("/api/v1/namespaces/ioqos-h1", grace=0)

    # -- a granted writer and a writer without a grant, running throughout
    ensure_namespace(NS)
    API.create(pod_path(NS), tools_pod("db", LOOP_WRITER, bandwidth=DB_GRANT))
    API.create(pod_path(NS), tools_pod("batch", LOOP_WRITER))
    cgs = {}
    for name in ("db", "batch"):
        p = wait_pod_phase(NS, name, ("Running",))
        cgs[name] = pod_cgroup(p["metadata"]["uid"])
    if not S.check(all(cgs.values()), "the db's and batch's pod cgroups exist", repr(cgs)):
        return
    db_watch, batch_watch = S.IoMaxWatch(cgs["db"]), S.IoMaxWatch(cgs["batch"])
    grant = DB_GRANT * MIB
    S.check(dev_line(db_watch.first).get("wbps") == str(grant), "db's io.max carries its grant (wbps=%d)" % grant,
            db_watch.first)
    print("    db io.max: %s    batch io.max: %s" % (db_watch.first.strip(), batch_watch.first.strip()), flush=True)

    # -- 1: helm upgrade to a new image (same code, new tag): the DaemonSet rolls
    new_tag = image.rsplit(":", 1)[1] + "-upgrade"
    tag_image(image, "localhost/ioqos:" + new_tag)
    old = pod_uids(PLUGIN)
    t = time.monotonic()
    r = helm("upgrade", "ioqos", CHART, "-n", SYS, "--reuse-values", "--set", "image.tag=" + new_tag)
    S.check(r.returncode == 0, "helm upgrade --reuse-values --set image.tag=%s" % new_tag, r.stderr[-800:])
    wait("the plugin pod on the new image Ready",
         ready_new(S, PLUGIN, old, "localhost/ioqos:" + new_tag), timeout=300)
    fails, passes = reconcile_passes(S, 2)
    S.check(fails == 0, "the upgraded plugin rolled in %.0f s; %d reconcile passes since, none failed"
            % (time.monotonic() - t, passes), "%d failed" % fails)
    ns7 = "ioqos-h3"
    ensure_namespace(ns7)
    API.create(pod_path(ns7), tools_pod("after-upgrade", "sleep 100000", bandwidth=5, emptydir=False))
    wait_pod_phase(ns7, "after-upgrade", ("Running",))
    S.check(True, "a granted pod is admitted right after the upgrade")

    # -- 2: the extender rolls while three granted pods are being scheduled
    old_ext = pod_uids(EXTENDER)
    res = {}

    def upgrade_extender():
        res["r"] = helm("upgrade", "ioqos", CHART, "-n", SYS, "--reuse-values", "--set", "extender.logLevel=debug")
    th = threading.Thread(target=upgrade_extender)
    th.start()
    names = ["during-roll-%d" % i for i in range(3)]
    for n in names:
        API.create(pod_path(ns7), tools_pod(n, "sleep 100000", bandwidth=5, emptydir=False))
        time.sleep(1)
    th.join()
    S.check(res["r"].returncode == 0, "helm upgrade --set extender.logLevel=debug", res["r"].stderr[-800:])
    ext = wait("a new extender pod Ready", ready_new(S, EXTENDER, old_ext), timeout=300)
    S.check("--log-level=debug" in " ".join(ext["spec"]["containers"][0].get("args", [])) or
            "debug" in json.dumps(ext["spec"]["containers"][0]),
            "the new extender pod carries the new value")
    for n in names:
        p = wait_pod_phase(ns7, n, ("Running",))
        S.check(bool(p["metadata"].get("annotations", {}).get("ioqos.io/disk")),
                "%s, scheduled while the extender rolled, was placed on a disk (ioqos.io/disk)" % n)
    check_placements(S, "after the extender's roll")

    # -- 4: helm rollback to the first release
    old = pod_uids(PLUGIN)
    r = helm("rollback", "ioqos", "1", "-n", SYS)
    S.check(r.returncode == 0, "helm rollback ioqos 1", r.stderr[-800:])
    wait("the plugin pod back on %s Ready" % image, ready_new(S, PLUGIN, old, image), timeout=300)
    fails, passes = reconcile_passes(S, 2)
    S.check(fails == 0, "the rolled-back plugin: %d reconcile passes, none failed" % passes, "%d failed" % fails)
    API.create(pod_path(ns7), tools_pod("after-rollback", "sleep 100000", bandwidth=5, emptydir=False))
    p = wait_pod_phase(ns7, "after-rollback", ("Running",))
    S.check(bool(p["metadata"].get("annotations", {}).get("ioqos.io/disk")),
            "a granted pod is placed and admitted right after the rollback")
    check_placements(S, "after the rollback")
    h = helm("history", "ioqos", "-n", SYS, "-o", "json")
    revs = json.loads(h.stdout) if h.returncode == 0 else []
    S.check([x.get("status") for x in revs][-1:] == ["deployed"] and len(revs) == 4,
            "helm history: install, two upgrades, the rollback deployed", h.stdout[-400:] + h.stderr[-400:])

    # the cgroups, sampled every 50 ms since before the upgrade
    db_changes, batch_changes = db_watch.done(), batch_watch.done()
    S.check(not db_changes, "db's io.max was never lifted or lowered through upgrade, extender roll and rollback "
            "(%d s sampled every 50 ms)" % (time.monotonic() - t), "changes: %r" % db_changes[:5])
    wb = bound_values(batch_watch)
    finite = [int(v) for v in wb if v and v.isdigit()]
    cap_bytes = max(disk_capacity(S).values()) * MIB
    S.check(len(finite) == len(wb) and finite and max(finite) <= cap_bytes,
            "batch (no grant) stayed bounded throughout: wbps took %d values, %.1f-%.1f MiB/s (disk %d MiB/s)"
            % (len(wb), min(finite or [0]) / MIB, max(finite or [0]) / MIB, cap_bytes // MIB),
            "values: %r" % wb[:10])

    # -- uninstall: the limits of running pods stay (docs/operations.md, "Removal")
    r = helm("uninstall", "ioqos", "-n", SYS, "--wait", "--timeout", "5m")
    S.check(r.returncode == 0, "helm uninstall", r.stderr[-800:])
    wait("the chart's pods gone", lambda: not API.get("/api/v1/namespaces/%s/pods" % SYS)["items"], timeout=300)
    S.check(dev_line(read(cgs["db"] + "/io.max")).get("wbps") == str(grant),
            "after uninstall the running db keeps its io.max (what stays in the kernel)")
    left = [n for n in ("ioqos-scheduler-ext-tls", "ioqos-scheduler-ext-client") if S._exists(
        "/api/v1/namespaces/%s/secrets/%s" % (SYS, n))]
    S.check(not left, "uninstall removed the generated Secrets", repr(left))
    for ns in (NS, ns7):
        API.delete("/api/v1/namespaces/" + ns, grace=0)


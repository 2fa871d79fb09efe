#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks of manifests/ (kustomize base, overlays, examples), the scheduler
configurations, and the image's runtime closure.

    check_manifests.py render
    check_manifests.py rbac
    check_manifests.py admission
    check_manifests.py scheduler
    check_manifests.py scheduler-policy      (schedulerName admission policies)
    check_manifests.py workloads
    check_manifests.py flags BINARY PATH     (ioqos-plugin / ioqos-scheduler-ext)
    check_manifests.py node-config IOQOSCTL
    check_manifests.py examples
    check_manifests.py image BINARY_PATH...
    check_manifests.py docs
    check_manifests.py version
    check_manifests.py docs-values           (values docs quote vs rendered manifests)

DRA mode (manifests/overlays/dra, docs/dra.md) is covered by the same
commands: render (resource.k8s.io/v1 fields of DeviceClasses, claim
templates and pod claims; the overlay's README links), rbac (the DRA
ClusterRole exactly where a plugin runs with --mode=dra, and the code's
resource.k8s.io calls), admission (ResourceSlice writes held to the node;
the optional claim cap), workloads (kubelet's DRA directories, one mode per
node beside every device-plugin install), examples (claims as grants, a
quota of devices) and node-config (the disk classes DeviceClasses select).

Each check first proves on a deliberately broken input that it can fail
(a "control"), then checks the real manifests. Exit 0 all good, 1 a check
failed, 77 kubectl is missing (ctest reports the test as skipped).
"""
import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MANIFESTS = os.path.join(REPO, "manifests")
RESOURCES = ("ioqos/bandwidth", "ioqos/iops")
BINARIES = ("ioqos-plugin", "ioqos-scheduler-ext", "ioqosctl")
BIN_DIR = "/usr/local/bin/"

# The least-privilege lists (issue 7, narrowed by issue 12 item 12), as
# (apiGroup, resource, verb). code_grants() derives the same sets from the
# API calls in each binary's sources: RBAC must be exactly what the code uses.
def _grants(spec):
    return {(g, r, v) for g, r, verbs in spec for v in verbs}

RBAC_EXPECTED = {
    "ioqos-plugin": _grants([
        ("", "pods", ["get", "list", "watch"]),
        ("", "nodes", ["get", "list", "watch", "patch"]),
        ("", "events", ["create"]),
    ]),
    "ioqos-scheduler-ext": _grants([
        ("", "nodes", ["list", "watch"]),
        ("", "pods", ["get", "list", "patch"]),
        ("", "pods/binding", ["create"]),
    ]),
}
# where each service account's binary keeps its Kubernetes API calls
SA_SOURCES = {"ioqos-plugin": ["plugin/daemon"], "ioqos-scheduler-ext": ["scheduler-ext"]}
# kubectl ioqos (plugin/ctl: ioqosctl run as kubectl-ioqos) calls the API with
# the credentials of the person at the keyboard (kubeconfig), never with a
# service account of the manifests: its calls are not counted for any of them
# (SA_SOURCES does not scan plugin/ctl) and must be exactly what
# docs/operations.md tells users to grant (the ioqos-viewer ClusterRole there).
USER_SOURCES = {"kubectl ioqos": ["plugin/ctl"]}
USER_RBAC_EXPECTED = {"kubectl ioqos": _grants([("", "nodes", ["list"]), ("", "pods", ["list"])])}
USER_RBAC_DOC = ("docs/operations.md", "ioqos-viewer")
# the client library: paths come from its callers (the informer's, the Event's)
LIBRARY_SOURCES = ["src/kube"]
# The second kube-scheduler: the built-in roles of a kube-scheduler, plus at
# most its own leader-election lease.
SCHEDULER_SA = "ioqos-scheduler"
SCHEDULER_BUILTINS = {"system:kube-scheduler", "system:volume-scheduler",
                      "extension-apiserver-authentication-reader"}
SCHEDULER_OWN_MAX = _grants([("coordination.k8s.io", "leases", ["create", "get", "update"])])

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def ok(msg):
    print("ok:   " + msg)


def finish():
    if failures:
        print("\n%d check(s) failed" % len(failures))
        sys.exit(1)
    print("\nall checks passed")
    sys.exit(0)


class Broken(Exception):
    pass


def control(name, fn, *args):
    """fn(*args) must report at least one problem (a list of strings)."""
    problems = fn(*args)
    if problems:
        ok("control '%s' is caught: %s" % (name, problems[0]))
    else:
        fail("control '%s': the check did not notice a deliberately broken input" % name)


# ---------------------------------------------------------------- rendering

def kubectl():
    k = shutil.which("kubectl")
    if not k:
        print("SKIP: kubectl is not installed (docs/operations.md says how to get it); "
              "the manifests cannot be rendered")
        sys.exit(77)
    return k


# The Helm chart: Go templates, not YAML, and its files/ links back to
# manifests/ (glob would follow them); check_chart.py checks it.
CHART = os.path.join(MANIFESTS, "chart")


def in_chart(path):
    return path == CHART or path.startswith(CHART + os.sep)


def kustomization_dirs():
    dirs = sorted(os.path.dirname(p) for p in
                  glob.glob(os.path.join(MANIFESTS, "**", "kustomization.yaml"), recursive=True)
                  if not in_chart(p))
    if not dirs:
        raise SystemExit("no kustomization.yaml under %s" % MANIFESTS)
    return dirs


_render_cache = {}


def render(d):
    """Rendered objects of one kustomization directory (list of dicts)."""
    if d not in _render_cache:
        p = subprocess.run([kubectl(), "kustomize", d], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise Broken("kubectl kustomize %s: %s" % (rel(d), p.stderr.strip()[-800:]))
        docs = [x for x in yaml.safe_load_all(p.stdout) if x is not None]
        _render_cache[d] = docs
    return _render_cache[d]


def rel(p):
    return os.path.relpath(p, REPO)


def all_renders():
    out = {}
    for d in kustomization_dirs():
        try:
            out[d] = render(d)
        except Broken as e:
            fail(str(e))
    return out


def pod_specs(obj):
    """(where, pod spec) of every pod template in an object."""
    k = obj.get("kind")
    spec = obj.get("spec") or {}
    name = "%s/%s" % (k, (obj.get("metadata") or {}).get("name"))
    if k == "Pod":
        yield name, spec
    elif k in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        yield name, (spec.get("template") or {}).get("spec") or {}
    elif k == "CronJob":
        yield name, ((((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {})
                     .get("spec") or {})


def containers(pspec):
    for key in ("initContainers", "containers"):
        for c in pspec.get(key) or []:
            yield key, c


def cmd_render():
    dirs = kustomization_dirs()
    renders = all_renders()
    classes = dra_overlay_classes()
    for d, docs in renders.items():
        if not docs and is_component(d):
            # only transforms what includes it (manifests/base/image: the
            # tag; overlays/dra/migration: the device-plugin DaemonSets)
            ok("%s: a Component without objects of its own" % rel(d))
            continue
        problems = object_problems(docs) + dra_object_problems(docs, classes)
        for p in problems:
            fail("%s: %s" % (rel(d), p))
        if not problems:
            ok("%s renders: %d objects" % (rel(d), len(docs)))
    # every file parses, and every file is used by some kustomization (or is
    # the in-place scheduler configuration, a file for kube-scheduler --config)
    used = set()
    for d in dirs:
        k = yaml.safe_load(open(os.path.join(d, "kustomization.yaml")))
        for key in ("resources", "components"):
            for r in k.get(key) or []:
                used.add(os.path.normpath(os.path.join(d, r)))
        for gen in (k.get("configMapGenerator") or []) + (k.get("secretGenerator") or []):
            for f in gen.get("files") or []:
                used.add(os.path.normpath(os.path.join(d, f.split("=", 1)[-1])))
        for p in k.get("patches") or []:
            if "path" in p:
                used.add(os.path.normpath(os.path.join(d, p["path"])))
    for f in sorted(glob.glob(os.path.join(MANIFESTS, "**", "*"), recursive=True)):
        if os.path.isdir(f) or in_chart(f):
            continue
        if f.endswith(".md"):
            # an overlay's README: its links and the files it names resolve
            for x in doc_problems(f, open(f).read()):
                fail(x)
            continue
        try:
            if f.endswith(".json"):
                json.load(open(f))
            elif f.endswith((".yaml", ".yml")):
                docs = [x for x in yaml.safe_load_all(open(f)) if x is not None]
                if not docs:
                    fail("%s: no YAML document" % rel(f))
            else:
                fail("%s: neither YAML nor JSON" % rel(f))
                continue
        except (ValueError, yaml.YAMLError) as e:
            fail("%s does not parse: %s" % (rel(f), e))
            continue
        base = os.path.basename(f)
        if base == "kustomization.yaml" or f in used or base == "kube-scheduler-config.yaml":
            continue
        fail("%s is not used by any kustomization" % rel(f))
    ok("every file under manifests/ parses and is used (%d kustomizations)" % len(dirs))
    # control: a kustomization naming a missing file must not render
    with tempfile.TemporaryDirectory() as t:
        with open(os.path.join(t, "kustomization.yaml"), "w") as fh:
            fh.write("resources:\n  - missing.yaml\n")
        try:
            render(t)
            fail("control: kubectl kustomize accepted a missing resource")
        except Broken as e:
            ok("control 'missing resource' is caught: %s" % str(e).splitlines()[0][:100])
    control("duplicate object", object_problems,
            [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}] * 2)
    dra_render_controls(classes)
    finish()


def dra_render_controls(classes):
    """The DRA objects of overlays/dra and examples/dra, each broken once."""
    ok("resource.k8s.io objects checked against %s; ioqos DeviceClasses: %s; device attributes: %s" % (
        dra_facts()["api"], ", ".join(sorted(classes)), ", ".join(sorted(dra_facts()["attributes"]))))
    if not classes:
        fail("overlays/dra defines no DeviceClass")
    good = render(os.path.join(MANIFESTS, "examples", "dra")) + list(classes.values())
    if dra_object_problems(good, classes):
        return  # reported above, with the render it belongs to

    def broken(fn):
        b = copy.deepcopy(good)
        for o in b:
            fn(o)
        return b

    def first_exact(o):
        return o["spec"]["spec"]["devices"]["requests"][0]["exactly"]

    def on(kind, fn):
        return lambda o: fn(o) if o["kind"] == kind else None
    for what, fn in (
            ("DeviceClass with a namespace", on("DeviceClass", lambda o: o["metadata"].__setitem__("namespace", "ioqos-dra-demo"))),
            ("DeviceClass of any driver", on("DeviceClass", lambda o: o["spec"].__setitem__("selectors", [{"cel": {"expression": "true"}}]))),
            ("selector on an attribute the devices lack", on("DeviceClass", lambda o: o["spec"]["selectors"].append(
                {"cel": {"expression": 'device.attributes["ioqos.io"].model == "x"'}}))),
            ("capacity named ioqos/bandwidth", on("ResourceClaimTemplate", lambda o: first_exact(o)["capacity"].__setitem__(
                "requests", {"ioqos/bandwidth": "200"}))),
            ("capacity named with the driver's domain", on("ResourceClaimTemplate", lambda o: first_exact(o)["capacity"].__setitem__(
                "requests", {"ioqos.io/bandwidth": "200"}))),
            ("fractional units", on("ResourceClaimTemplate", lambda o: first_exact(o)["capacity"].__setitem__(
                "requests", {"bandwidth": "0.5"}))),
            ("count with allocationMode All", on("ResourceClaimTemplate", lambda o: first_exact(o).__setitem__("allocationMode", "All"))),
            ("v1beta1 field deviceClassName on the request", on("ResourceClaimTemplate", lambda o: o["spec"]["spec"]["devices"]["requests"][0].__setitem__(
                "deviceClassName", "ioqos-fast"))),
            ("unknown DeviceClass", on("ResourceClaimTemplate", lambda o: first_exact(o).__setitem__("deviceClassName", "ioqos-nvme"))),
            ("claim template in resource.k8s.io/v1beta2", on("ResourceClaimTemplate", lambda o: o.__setitem__("apiVersion", "resource.k8s.io/v1beta2"))),
            ("shared ResourceClaim", on("Pod", lambda o: o["spec"]["resourceClaims"].__setitem__(
                0, {"name": "disk-io", "resourceClaimName": "shared"}))),
            ("template missing", on("Pod", lambda o: o["spec"]["resourceClaims"][0].__setitem__("resourceClaimTemplateName", "nosuch"))),
            ("container claim not in the pod", on("Pod", lambda o: o["spec"]["containers"][0]["resources"].__setitem__(
                "claims", [{"name": "other"}]))),
            ("claims and ioqos/bandwidth in one pod", on("Pod", lambda o: o["spec"]["containers"][0]["resources"]["requests"].__setitem__(
                "ioqos/bandwidth", "200")))):
        control(what, dra_object_problems, broken(fn), classes)
    control("a ResourceClaim of its own", dra_object_problems, good + [{
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ioqos-dra-demo"},
        "spec": {"devices": {"requests": [{"name": "disk", "exactly": {"deviceClassName": "ioqos-disk",
                                                                       "capacity": {"requests": {"bandwidth": "10"}}}}]}}}], classes)


def object_problems(docs):
    problems, seen = [], set()
    if not docs:
        problems.append("renders no object")
    for o in docs:
        md = o.get("metadata") or {}
        if not o.get("apiVersion") or not o.get("kind") or not md.get("name"):
            problems.append("object without apiVersion/kind/metadata.name: %s" % str(o)[:120])
            continue
        key = (o["apiVersion"].split("/")[0] if "/" in o["apiVersion"] else "", o["kind"],
               md.get("namespace", ""), md["name"])
        if key in seen:
            problems.append("duplicate object %s" % (key,))
        seen.add(key)
    return problems


# ----------------------------------------------------------------- DRA mode

# ioqos-plugin --mode=dra (docs/dra.md, manifests/overlays/dra). The driver
# name, API version and capacity names are the C code's; the attribute names
# are those src/dra/draslice.c publishes.
DRA_HEADER = "src/dra/draslice.h"
DRA_GROUP = "resource.k8s.io"
DRA_OVERLAY = os.path.join(MANIFESTS, "overlays", "dra")
# the Component a device-plugin install adds while the cluster migrates
DRA_MIGRATION = os.path.join(DRA_OVERLAY, "migration")
# the Component storage nodes add: the host's configfs, writable (issue 16)
NVMET_COMPONENT = os.path.join(MANIFESTS, "overlays", "nvmet")
DRA_MODE_LABEL = "ioqos.io/mode"  # node label: device-plugin | dra
# what DRA mode needs beyond RBAC_EXPECTED (overlays/dra/plugin-dra-rbac.yaml):
# the publisher lists its node's slices (no watch: it republishes on a
# timer), creates, updates (PUT) and deletes them (drapub.c); prepare GETs
# each claim (draprepare.c). Compared with the code like RBAC_EXPECTED.
RBAC_DRA_EXTRA = {"ioqos-plugin": _grants([
    (DRA_GROUP, "resourceslices", ["list", "create", "update", "delete"]),
    (DRA_GROUP, "resourceclaims", ["get"]),
])}
# kubelet's directories for DRA drivers: the flags must name them, each
# mounted at the same path (kubelet dials the endpoint path the driver
# reports); the DRA socket is DIR/<driver>/dra.sock
DRA_DIRS = {"kubelet-plugins-dir": "/var/lib/kubelet/plugins",
            "kubelet-registry-dir": "/var/lib/kubelet/plugins_registry"}
UNIX_PATH_MAX = 108  # sun_path, with its NUL

# resource.k8s.io/v1 (k8s.io/api/resource/v1) and core/v1 fields of the
# objects the manifests use; kubectl kustomize checks none of them
DEVICE_CLASS_SPEC = {"selectors", "config", "extendedResourceName"}
DEVICE_SELECTOR = {"cel"}
CEL_SELECTOR = {"expression"}
CLAIM_TEMPLATE_SPEC = {"metadata", "spec"}
CLAIM_SPEC = {"devices"}
DEVICE_CLAIM = {"requests", "constraints", "config"}
DEVICE_REQUEST = {"name", "exactly", "firstAvailable"}
EXACT_REQUEST = {"deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                 "tolerations", "capacity"}
SUB_REQUEST = {"name", "deviceClassName", "selectors", "allocationMode", "count", "tolerations",
               "capacity"}
CAPACITY_REQUIREMENTS = {"requests"}
ALLOCATION_MODES = ("ExactCount", "All")
MAX_REQUESTS = 32
POD_RESOURCE_CLAIM = {"name", "resourceClaimName", "resourceClaimTemplateName"}
CONTAINER_CLAIM = {"name", "request"}
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# device.attributes["ioqos.io"].class (or ['ioqos.io']), device.capacity[...]
CEL_DEVICE_FIELD = re.compile(r"""device\.(attributes|capacity)\[\s*["']([^"']+)["']\s*\]\.(\w+)""")
CEL_CLASS_EQ = re.compile(r"""device\.attributes\[\s*["']([^"']+)["']\s*\]\.class\s*==\s*["']([^"']*)["']""")

_dra = {}


def dra_facts():
    """driver, api, capacities (bandwidth, iops: the order of RESOURCES) and
    attributes of the devices ioqos-plugin publishes, from the C sources."""
    if not _dra:
        slice_c = open(os.path.join(REPO, "src", "dra", "draslice.c")).read()
        caps_c = open(os.path.join(REPO, "src", "cgroup", "caps.c")).read()
        literal = set(re.findall(r'json_object_object_add\(attrs, "(\w+)"', slice_c))
        m = re.search(r"g_cap_names\[[^\]]*\] = \{([^}]*)\}", caps_c)
        # one bool per capability, named as cap_attr_name() does: io.bfq.weight -> ioBfqWeight
        caps = [re.sub(r"[.-](.)", lambda x: x.group(1).upper(), c)
                for c in re.findall(r'"([^"]+)"', m.group(1))] if m else []
        if len(literal) < 7 or not caps or "cap_attr_name(ioq_cap_name(" not in slice_c:
            raise Broken("src/dra/draslice.c: found attributes %s and capabilities %s: the parser of "
                         "this check is stale" % (sorted(literal), caps))
        _dra.update(driver=c_define(DRA_HEADER, "IOQ_DRA_DRIVER"),
                    api=c_define(DRA_HEADER, "IOQ_DRA_API_VERSION"),
                    capacities=(c_define(DRA_HEADER, "IOQ_DRA_CAP_BANDWIDTH"),
                                c_define(DRA_HEADER, "IOQ_DRA_CAP_IOPS")),
                    attributes=literal | set(caps))
    return _dra


def plugin_daemonsets(docs):
    """[(DaemonSet, container, {flag: value}, mode)] for each ioqos-plugin container."""
    out = []
    for o in docs:
        if o.get("kind") != "DaemonSet":
            continue
        for c in ((o.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []:
            argv = argv_of(c)
            if argv and os.path.basename(argv[0]) == "ioqos-plugin":
                f = flag_values(argv[1:])
                out.append((o, c, f, f.get("mode") or "device-plugin"))
    return out


def plugin_modes(docs):
    return {m for _, _, _, m in plugin_daemonsets(docs)}


def unknown_fields(where, obj, allowed, api="resource.k8s.io/v1"):
    if not isinstance(obj, dict):
        return ["%s is not a mapping" % where]
    return ["%s: field %s does not exist in %s" % (where, k, api) for k in sorted(set(obj) - allowed)]


def cel_problems(where, sel, facts):
    """A DeviceSelector: only cel.expression, and the ioqos.io attributes and
    capacities it reads exist on the devices."""
    p = unknown_fields(where + " selector", sel, DEVICE_SELECTOR)
    cel = (sel or {}).get("cel") if isinstance(sel, dict) else None
    p += unknown_fields(where + " selector cel", cel, CEL_SELECTOR)
    expr = (cel or {}).get("expression") if isinstance(cel, dict) else None
    if not isinstance(expr, str) or not expr.strip():
        return p + ["%s: a selector without a CEL expression" % where]
    for what, domain, name in CEL_DEVICE_FIELD.findall(expr):
        if domain != facts["driver"]:
            continue
        known = facts["attributes"] if what == "attributes" else set(facts["capacities"])
        if name not in known:
            p.append("%s: device.%s[\"%s\"].%s: the ioqos devices have no such %s (%s)" % (
                where, what, domain, name, what[:-1] if what == "attributes" else what,
                ", ".join(sorted(known))))
    return p


def selects_driver(sel, driver):
    expr = ((sel or {}).get("cel") or {}).get("expression") or ""
    return re.search(r"""device\.driver\s*==\s*["']%s["']""" % re.escape(driver), expr) is not None


def device_classes_of(docs):
    return {o["metadata"]["name"]: o for o in docs if o.get("kind") == "DeviceClass"}


def dra_overlay_classes():
    """The DeviceClasses of overlays/dra and of its optional Components."""
    out = {}
    for d in kustomization_dirs():
        if d == DRA_OVERLAY or d.startswith(DRA_OVERLAY + os.sep):
            out.update(device_classes_of(render(d)))
    return out


def claim_units(v):
    """A capacity request in whole units (int), None if it is not a whole number."""
    try:
        return qty(v)
    except ValueError:
        return None


def request_alternatives(r):
    """(suffix, request, its fields) of a DeviceRequest: exactly, or each firstAvailable subrequest."""
    if isinstance(r.get("exactly"), dict):
        return [("", r["exactly"], EXACT_REQUEST)]
    return [("/%s" % (s.get("name") if isinstance(s, dict) else "?"), s, SUB_REQUEST)
            for s in r.get("firstAvailable") or []]


def claim_spec_problems(where, spec, facts, classes):
    """A ResourceClaimSpec against resource.k8s.io/v1, and the ioqos rules for
    requests of an ioqos DeviceClass (classes: name -> DeviceClass):
    capacities named as the devices name them (bandwidth, iops: no domain,
    they are in the driver's), whole positive units, an exact count."""
    p = unknown_fields(where + " spec", spec, CLAIM_SPEC)
    dev = (spec or {}).get("devices") or {}
    p += unknown_fields(where + " spec.devices", dev, DEVICE_CLAIM)
    reqs = dev.get("requests") or [] if isinstance(dev, dict) else []
    if not reqs:
        p.append("%s: no spec.devices.requests" % where)
    if len(reqs) > MAX_REQUESTS:
        p.append("%s: %d requests, the API allows %d" % (where, len(reqs), MAX_REQUESTS))
    names = set()
    for r in reqs:
        n = r.get("name") if isinstance(r, dict) else None
        w = "%s request %s" % (where, n)
        p += unknown_fields(w, r, DEVICE_REQUEST)
        if not isinstance(r, dict):
            continue
        if not isinstance(n, str) or not DNS_LABEL.match(n):
            p.append("%s: name is not a DNS label" % w)
        if n in names:
            p.append("%s: a second request of that name" % w)
        names.add(n)
        if ("exactly" in r) == ("firstAvailable" in r):
            p.append("%s: exactly one of exactly and firstAvailable" % w)
        for suffix, x, fields in request_alternatives(r):
            wx = w + suffix
            p += unknown_fields(wx, x, fields)
            if not isinstance(x, dict):
                continue
            if fields is SUB_REQUEST and not DNS_LABEL.match(str(x.get("name"))):
                p.append("%s: subrequest name is not a DNS label" % wx)
            cls = x.get("deviceClassName")
            if not cls:
                p.append("%s: no deviceClassName (required)" % wx)
            elif cls not in classes:
                p.append("%s: DeviceClass %s is not one the manifests define (%s)" % (wx, cls, ", ".join(sorted(classes))))
            mode = x.get("allocationMode", "ExactCount")
            if mode not in ALLOCATION_MODES:
                p.append("%s: allocationMode %r is neither of %s" % (wx, mode, list(ALLOCATION_MODES)))
            count = x.get("count")
            if count is not None and mode != "ExactCount":
                p.append("%s: count is for allocationMode ExactCount only" % wx)
            if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
                p.append("%s: count %r is not a positive integer" % (wx, count))
            for s in x.get("selectors") or []:
                p += cel_problems(wx, s, facts)
            cap = x.get("capacity")
            if cap is None:
                if cls in classes:
                    p.append("%s: asks an ioqos disk for no capacity (capacity.requests.%s / .%s)" % ((wx,) + tuple(facts["capacities"])))
                continue
            p += unknown_fields(wx + " capacity", cap, CAPACITY_REQUIREMENTS)
            creq = cap.get("requests") if isinstance(cap, dict) else None
            if not isinstance(creq, dict) or not creq:
                p.append("%s: capacity without requests" % wx)
                continue
            if cls in classes and mode != "ExactCount":
                p.append("%s: a capacity request with allocationMode All takes a share of every disk of the node" % wx)
            for cname, v in creq.items():
                if cls in classes and cname not in facts["capacities"]:
                    p.append("%s: capacity %s: the ioqos devices have %s (no domain: they are the driver's)" % (
                        wx, cname, " and ".join(facts["capacities"])))
                u = claim_units(v)
                if u is None or u <= 0:
                    p.append("%s: capacity %s: %r is not a positive whole number of units" % (wx, cname, v))
    return p


def dra_object_problems(docs, classes):
    """The resource.k8s.io objects and pod claims of one render, field by
    field (resource.k8s.io/v1), and the ioqos rules: DeviceClasses select
    driver ioqos.io and are cluster-scoped; claims come from templates, one
    claim per pod (ioqos-plugin refuses a claim reserved for several pods,
    and a ResourceClaim of its own is shared by every pod that names it).
    classes: the DeviceClasses the manifests define (name -> object)."""
    facts = dra_facts()
    p = []
    templates = {(o["metadata"].get("namespace"), o["metadata"]["name"]): o
                 for o in docs if o.get("kind") == "ResourceClaimTemplate"}
    for o in docs:
        k, md = o.get("kind"), o.get("metadata") or {}
        where = "%s/%s" % (k, md.get("name"))
        if str(o.get("apiVersion", "")).startswith(DRA_GROUP + "/") and o.get("apiVersion") != facts["api"]:
            p.append("%s: apiVersion %s, the driver speaks %s" % (where, o.get("apiVersion"), facts["api"]))
        if k == "DeviceClass":
            if md.get("namespace"):
                p.append("%s: DeviceClasses are cluster-scoped, this one has namespace %s "
                         "(a kustomization's namespace: applies to kinds kustomize does not know)" % (where, md["namespace"]))
            spec = o.get("spec") or {}
            p += unknown_fields(where + " spec", spec, DEVICE_CLASS_SPEC)
            sels = spec.get("selectors") or []
            for s in sels:
                p += cel_problems(where, s, facts)
            if not any(selects_driver(s, facts["driver"]) for s in sels):
                p.append("%s: no selector requires device.driver == \"%s\" (it would select other drivers' devices)" % (where, facts["driver"]))
            ern = spec.get("extendedResourceName")
            if ern is not None and ern not in RESOURCES:
                p.append("%s: extendedResourceName %s is not one of %s" % (where, ern, list(RESOURCES)))
        elif k == "ResourceClaimTemplate":
            spec = o.get("spec") or {}
            p += unknown_fields(where + " spec", spec, CLAIM_TEMPLATE_SPEC)
            p += claim_spec_problems(where, spec.get("spec") or {}, facts, classes)
        elif k == "ResourceClaim":
            p += claim_spec_problems(where, o.get("spec") or {}, facts, classes)
            p.append("%s: a ResourceClaim of its own is shared by every pod that names it, and "
                     "ioqos-plugin prepares a claim for one pod only: ship a ResourceClaimTemplate" % where)
        for w, ps in pod_specs(o):
            p += pod_claim_problems(w, ps, md.get("namespace"), templates)
    return p


def pod_claim_problems(where, ps, ns, templates):
    p = []
    names = set()
    for pc in ps.get("resourceClaims") or []:
        p += unknown_fields(where + " resourceClaims[]", pc, POD_RESOURCE_CLAIM, "core/v1")
        if not isinstance(pc, dict):
            continue
        names.add(pc.get("name"))
        if ("resourceClaimName" in pc) == ("resourceClaimTemplateName" in pc):
            p.append("%s: claim %s needs exactly one of resourceClaimName and resourceClaimTemplateName" % (where, pc.get("name")))
        if "resourceClaimName" in pc:
            p.append("%s: claim %s names ResourceClaim %s, shared by every pod that names it (ioqos-plugin "
                     "refuses a claim of several pods): use resourceClaimTemplateName" % (where, pc.get("name"), pc["resourceClaimName"]))
        t = pc.get("resourceClaimTemplateName")
        if t and (ns, t) not in templates:
            p.append("%s: claim %s: ResourceClaimTemplate %s is not in the same kustomization and namespace" % (where, pc.get("name"), t))
    mixed = False
    for _, c in containers(ps):
        res = c.get("resources") or {}
        for cc in res.get("claims") or []:
            p += unknown_fields("%s container %s resources.claims[]" % (where, c.get("name")), cc, CONTAINER_CLAIM, "core/v1")
            if isinstance(cc, dict) and cc.get("name") not in names:
                p.append("%s container %s: claim %s is not in the pod's resourceClaims" % (where, c.get("name"), cc.get("name")))
        if any(r in (res.get(k) or {}) for k in ("requests", "limits") for r in RESOURCES):
            mixed = True
    if mixed and names:
        p.append("%s: both ioqos/* resources and ResourceClaims: a pod is served by one mode, "
                 "and a node runs one (it would fit no node)" % where)
    return p


def dra_pod_grants(docs, classes):
    """{where: {resource: units}} and {class: devices} of the pods whose
    claims come from templates asking ioqos DeviceClasses for capacity:
    units per pod (amount x count; a firstAvailable request counts its
    largest alternative), devices for all replicas."""
    facts = dra_facts()
    templates = {(o["metadata"].get("namespace"), o["metadata"]["name"]): o
                 for o in docs if o.get("kind") == "ResourceClaimTemplate"}
    pods, devices = {}, {}
    for o in docs:
        for where, ps in pod_specs(o):
            need = {r: 0 for r in RESOURCES}
            for pc in ps.get("resourceClaims") or []:
                t = templates.get(((o.get("metadata") or {}).get("namespace"), pc.get("resourceClaimTemplateName")))
                if not t:
                    continue
                for r in ((((t.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or []):
                    best, best_cls, best_n = None, None, 0
                    for _, x, _ in request_alternatives(r):
                        if x.get("deviceClassName") not in classes:
                            continue
                        n = x.get("count", 1) if x.get("allocationMode", "ExactCount") == "ExactCount" else 1
                        creq = (x.get("capacity") or {}).get("requests") or {}
                        units = {res: (claim_units(creq.get(cap, 0)) or 0) * n
                                 for res, cap in zip(RESOURCES, facts["capacities"])}
                        if best is None or sum(units.values()) > sum(best.values()):
                            best, best_cls, best_n = units, x["deviceClassName"], n
                    if best is None:
                        continue
                    for res in RESOURCES:
                        need[res] += best[res]
                    devices[best_cls] = devices.get(best_cls, 0) + best_n * replicas_of(o)
            if any(need.values()):
                pods[where] = need
    return pods, devices


def replicas_of(o):
    spec = o.get("spec") or {}
    if o.get("kind") in ("Deployment", "StatefulSet", "ReplicaSet"):
        return spec.get("replicas", 1)
    if o.get("kind") == "Job":
        return spec.get("parallelism", 1)
    return 1


# --------------------------------------------------------------------- RBAC

def sa_grants(docs):
    """{sa name: (set of grants, set of built-in role names, [problems])}."""
    roles = {}
    for o in docs:
        if o["kind"] in ("Role", "ClusterRole"):
            ns = o["metadata"].get("namespace", "") if o["kind"] == "Role" else ""
            roles[(o["kind"], ns, o["metadata"]["name"])] = o.get("rules") or []
    out = {}
    for o in docs:
        if o["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ref = o["roleRef"]
        bns = o["metadata"].get("namespace", "")
        key = (ref["kind"], bns if ref["kind"] == "Role" else "", ref["name"])
        for s in o.get("subjects") or []:
            if s.get("kind") != "ServiceAccount":
                out.setdefault("%s:%s" % (s.get("kind"), s.get("name")), (set(), set(), []))[2].append(
                    "binding %s names a %s subject" % (o["metadata"]["name"], s.get("kind")))
                continue
            g, builtins, probs = out.setdefault(s["name"], (set(), set(), []))
            if key not in roles:
                builtins.add(ref["name"])
                continue
            for r in roles[key]:
                if r.get("nonResourceURLs"):
                    probs.append("%s grants nonResourceURLs" % ref["name"])
                for grp in r.get("apiGroups") or [""]:
                    for res in r.get("resources") or []:
                        for v in r.get("verbs") or []:
                            if "*" in (grp, res, v):
                                probs.append("%s grants a wildcard (%s %s %s)" % (ref["name"], grp, res, v))
                            g.add((grp, res, v))
    return out


def rbac_problems(docs):
    problems = []
    grants = sa_grants(docs)
    for sa, (g, builtins, probs) in sorted(grants.items()):
        problems += ["%s: %s" % (sa, p) for p in probs]
        if sa in RBAC_EXPECTED:
            want = expected_grants(sa, docs)
            if builtins:
                problems.append("%s is bound to roles outside the manifests: %s" % (sa, sorted(builtins)))
            for extra in sorted(g - want):
                problems.append("%s is granted %s beyond the issue's list" % (sa, fmt_grant(extra)))
            for missing in sorted(want - g):
                problems.append("%s lacks %s (the component needs it)" % (sa, fmt_grant(missing)))
        elif sa == SCHEDULER_SA:
            for b in sorted(builtins - SCHEDULER_BUILTINS):
                problems.append("%s is bound to unexpected role %s" % (sa, b))
            for extra in sorted(g - SCHEDULER_OWN_MAX):
                problems.append("%s is granted %s beyond its leader-election lease" % (sa, fmt_grant(extra)))
        else:
            problems.append("unexpected subject %s has RBAC bindings" % sa)
    # the workloads run as the accounts checked above
    runs_as = {"DaemonSet": "ioqos-plugin", "Deployment": None}
    for o in docs:
        for where, ps in pod_specs(o):
            if o["kind"] not in runs_as or o["metadata"].get("namespace") != "ioqos-system":
                continue
            sa = ps.get("serviceAccountName")
            if o["kind"] == "DaemonSet" and sa != "ioqos-plugin":
                problems.append("%s runs as %s, not ioqos-plugin" % (where, sa))
            if sa and sa not in grants and sa not in RBAC_EXPECTED:
                problems.append("%s runs as %s, which has no RBAC in the manifests" % (where, sa))
    return problems


def expected_grants(sa, docs):
    """RBAC_EXPECTED, plus RBAC_DRA_EXTRA in a render that runs the plugin in DRA mode."""
    want = set(RBAC_EXPECTED[sa])
    if "dra" in plugin_modes(docs):
        want |= RBAC_DRA_EXTRA.get(sa, set())
    return want


# ioq_kube_* calls, and the extender's budget-charged GET wrapper (podsync.c)
API_CALL = re.compile(r'(?:ioq_kube_|\bext_kube_|\bctl_kube_)(get_json_until|get_json|get_filtered|merge_patch|send_json|do|list)\s*\(')
# the core group (/api/v1/...) and named groups (/apis/resource.k8s.io/v1/...)
API_PATH = re.compile(r'"(/apis?/[^"?]*)')


def path_parts(path):
    """(API group, [resource, name, subresource...]) of an API path, the
    namespace dropped: '/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s'
    -> ('resource.k8s.io', ['resourceclaims', '%s'])."""
    parts = [x for x in path.split("/") if x]
    if parts[:1] == ["api"]:
        group, parts = "", parts[2:]
    else:
        group, parts = (parts[1] if len(parts) > 1 else "?"), parts[3:]
    if parts[:1] == ["namespaces"] and len(parts) >= 3:
        parts = parts[2:]
    return group, parts or ["?"]


def path_resource(path):
    """'/api/v1/namespaces/%s/pods/%s/binding' -> 'pods/binding'."""
    parts = path_parts(path)[1]
    res = parts[0]
    return res + "/" + parts[2] if len(parts) >= 3 else res


def path_group(path):
    return path_parts(path)[0]


def is_collection(path):
    """'/api/v1/pods' and '/api/v1/namespaces/%s/pods' name no object."""
    return len(path_parts(path)[1]) == 1


def call_verb(text, name):
    """Kubernetes verb of the API call `name` starting at text (the call's
    own text, arguments included)."""
    if name in ("get_json", "get_json_until", "get_filtered"):
        return "get"
    if name == "merge_patch":
        return "patch"
    if name == "list":  # ctl_kube_list: every page of a collection
        return "list"
    m = re.match(r'(?:ioq|ext)_kube_\w+\s*\([^,]+,\s*"(\w+)"', text)
    method = m.group(1) if m else "?"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete",
            "GET": "get"}.get(method, "?" + method)


C_STRING = r'"((?:[^"\\\n]|\\.)*)"'


def expand_path_macros(text):
    """C text with every `#define NAME "literal"` substituted into its uses
    (the #define lines themselves dropped) and adjacent literals joined
    ("/apis/x" "/%s" -> "/apis/x/%s"): the paths as the calls get them."""
    rx_def = re.compile(r'^[ \t]*#define[ \t]+(\w+)[ \t]+%s[ \t]*$' % C_STRING, re.M)
    defs = dict(rx_def.findall(text))
    text = rx_def.sub("", text)
    if defs:
        text = re.sub(r"\b(%s)\b" % "|".join(map(re.escape, defs)), lambda m: '"%s"' % defs[m.group(1)], text)
    joined = re.compile(C_STRING + r"\s*" + C_STRING)
    while True:
        t = joined.sub(lambda m: '"%s%s"' % (m.group(1), m.group(2)), text)
        if t == text:
            return text
        text = t


def code_grants(text):
    """(apiGroup, resource, verb) of every API request in C source text: each
    "/api/v1/..." or "/apis/GROUP/VERSION/..." path literal (#define'd
    literals substituted) is paired with the call whose arguments hold it, or
    with the first API call after it (paths are built with snprintf just
    before the call), or, written into a struct member (snprintf(d->path,
    ...)), with every call that passes that member; informers list and watch
    their collection, ioq_kube_post_event creates events."""
    text = expand_path_macros(text)
    g, probs = set(), []
    for m in re.finditer(r'ioq_kube_informer_start\s*\([^,]+,\s*"([^"]+)"', text):
        grp, res = path_group(m.group(1)), path_resource(m.group(1))
        g |= {(grp, res, "list"), (grp, res, "watch")}
    if re.search(r'\bioq_kube_post_event\s*\(', text):
        g.add(("", "events", "create"))
    for m in API_PATH.finditer(text):
        before = text[max(0, m.start() - 200):m.start()]
        if re.search(r'ioq_kube_informer_start\s*\([^,]+,\s*$', before):
            continue
        stmt = text[text.rfind(";", 0, m.start()) + 1:m.start()]
        member = re.search(r"\bsnprintf\s*\(\s*[A-Za-z_]\w*(?:\s*(?:->|\.)\s*\w+)*\s*(?:->|\.)\s*(\w+)\s*,", stmt)
        inside = [c for c in API_CALL.finditer(text, max(0, m.start() - 300), m.start())
                  if ";" not in text[c.end():m.start()]]
        if member:
            calls = [c for c in API_CALL.finditer(text)
                     if re.search(r"(?:->|\.)\s*%s\b" % member.group(1), text[c.end():text.find(";", c.end())])]
            if not calls:
                probs.append("path %s is written into .%s, which no API call passes" % (m.group(1), member.group(1)))
        elif inside:
            calls = inside[-1:]
        else:
            call = API_CALL.search(text, m.end())
            if not call or call.start() - m.end() > 1500:
                probs.append("path %s is not followed by an API call" % m.group(1))
                continue
            calls = [call]
        for call in calls:
            v = call_verb(text[call.start():call.start() + 300], call.group(1))
            # a GET of a collection (no object name after the resource) is a list
            if v == "get" and is_collection(m.group(1)):
                v = "list"
            g.add((path_group(m.group(1)), path_resource(m.group(1)), v))
    return g, probs


def sources_text(dirs):
    text = ""
    for d in dirs:
        for f in sorted(glob.glob(os.path.join(REPO, d, "**", "*.c"), recursive=True)):
            text += open(f).read() + "\n"
    return text


def dirs_code_grants(dirs):
    return code_grants(sources_text(dirs))


def sa_code_grants(sa):
    return dirs_code_grants(SA_SOURCES[sa])


def unattributed_callers():
    """C files outside tests that call the API but belong to no service
    account, no user-run tool and not the client library: their calls would
    be in no RBAC list at all."""
    known = [d for ds in list(SA_SOURCES.values()) + list(USER_SOURCES.values()) for d in ds]
    known += LIBRARY_SOURCES
    out = []
    for top in ("src", "plugin", "scheduler-ext"):
        for f in sorted(glob.glob(os.path.join(REPO, top, "**", "*.c"), recursive=True)):
            r = rel(f)
            if any(r == d or r.startswith(d + "/") for d in known):
                continue
            text = open(f).read()
            if API_PATH.search(text) or API_CALL.search(text):
                out.append(r)
    return out


def documented_role_grants(doc, name):
    """(apiGroup, resource, verb) of the ClusterRole `name` shown in a yaml
    block of doc; None if the doc shows none."""
    text = open(os.path.join(REPO, doc)).read()
    for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S):
        for o in yaml.safe_load_all(block):
            if isinstance(o, dict) and o.get("kind") == "ClusterRole" and \
                    (o.get("metadata") or {}).get("name") == name:
                return {(g, r, v) for rule in o.get("rules") or [] for g in rule.get("apiGroups") or []
                        for r in rule.get("resources") or [] for v in rule.get("verbs") or []}
    return None


def user_rbac_problems():
    p = []
    for user, want in USER_RBAC_EXPECTED.items():
        used, probs = dirs_code_grants(USER_SOURCES[user])
        p += ["%s sources: %s" % (user, x) for x in probs]
        if used != want:
            p.append("%s: the code uses %s, the documented permissions are %s" % (
                user, sorted(fmt_grant(x) for x in used), sorted(fmt_grant(x) for x in want)))
        doc, role = USER_RBAC_DOC
        shown = documented_role_grants(doc, role)
        if shown != want:
            p.append("%s: the ClusterRole %s in %s grants %s, the code needs %s" % (
                user, role, doc, sorted(fmt_grant(x) for x in shown or ()), sorted(fmt_grant(x) for x in want)))
    for sa, dirs in SA_SOURCES.items():
        for d in dirs:
            if any(d == u or d.startswith(u + "/") or u.startswith(d + "/")
                   for us in USER_SOURCES.values() for u in us):
                p.append("%s scans %s, where a user-run tool's calls are" % (sa, d))
    p += ["%s calls the Kubernetes API but no RBAC list covers it (SA_SOURCES / USER_SOURCES)" % f
          for f in unattributed_callers()]
    return p


def fmt_grant(g):
    return "%s %s%s" % (g[2], (g[0] + "/") if g[0] else "", g[1])


def cmd_rbac():
    renders = all_renders()
    base = render(os.path.join(MANIFESTS, "base"))
    seen_sas = set()
    for d, docs in renders.items():
        problems = rbac_problems(docs)
        for p in problems:
            fail("%s: %s" % (rel(d), p))
        seen_sas |= set(sa_grants(docs))
        if not problems:
            ok("%s: RBAC within the issue's list" % rel(d))
    for sa in RBAC_EXPECTED:
        if sa not in seen_sas:
            fail("no RBAC for %s anywhere" % sa)
    # the lists are what the code does: no verb without a call, no call without a verb
    for sa, want in RBAC_EXPECTED.items():
        used, probs = sa_code_grants(sa)
        for x in probs:
            fail("%s sources: %s" % (sa, x))
        # both modes' calls are in one binary: the code is compared with both lists
        want = want | RBAC_DRA_EXTRA.get(sa, set())
        if used != want:
            fail("%s: the code uses %s, RBAC grants %s" % (
                sa, sorted(fmt_grant(x) for x in used), sorted(fmt_grant(x) for x in want)))
        else:
            ok("%s: RBAC is exactly the API calls of %s: %s" % (
                sa, ", ".join(SA_SOURCES[sa]), ", ".join(sorted(fmt_grant(x) for x in used))))
    # the kubectl plugin's calls are the user's: exactly the documented role, never an SA's
    probs = user_rbac_problems()
    for x in probs:
        fail(x)
    if not probs:
        ok("kubectl ioqos: the API calls of %s are the user's, exactly %s's ClusterRole %s: %s" % (
            ", ".join(d for ds in USER_SOURCES.values() for d in ds), USER_RBAC_DOC[0], USER_RBAC_DOC[1],
            ", ".join(sorted(fmt_grant(x) for w in USER_RBAC_EXPECTED.values() for x in w))))
    control("a GET of pods by name in kubectl ioqos", lambda: [] if code_grants(
        'const char *p = "/api/v1/namespaces/%s/pods/%s";\n'
        'ioq_kube_get_json(k, p, &o, NULL, e);')[0] <= USER_RBAC_EXPECTED["kubectl ioqos"]
        else ["pods get is used but not documented"])
    control("a paged list of secrets", lambda: [] if code_grants(
        'const char *p = "/api/v1/secrets";\n'
        'ctl_kube_list(k, p, &f, rules, 1, fn, ud, &st, NULL, e);')[0] <= USER_RBAC_EXPECTED["kubectl ioqos"]
        else ["secrets list is used but not documented"])
    control("a GET the plugin has no verb for", lambda: [] if code_grants(
        'snprintf(path, sizeof path, "/api/v1/namespaces/%s/secrets/%s", ns, n);\n'
        'ioq_kube_get_json(k, path, &o, NULL, e);')[0] - RBAC_EXPECTED["ioqos-plugin"] == set()
        else ["secrets get is used but not granted"])
    control("a list of claims the plugin has no verb for", lambda: [] if code_grants(
        'snprintf(path, sizeof path, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims", ns);\n'
        'ioq_kube_get_json(k, path, &o, NULL, e);')[0] - RBAC_EXPECTED["ioqos-plugin"] - RBAC_DRA_EXTRA["ioqos-plugin"] == set()
        else ["resourceclaims list is used but not granted"])
    granted = RBAC_EXPECTED["ioqos-plugin"] | RBAC_DRA_EXTRA["ioqos-plugin"]
    control("a POST through a #define'd path", lambda: sorted(fmt_grant(x) for x in code_grants(
        '#define CLAIMS "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims"\n'
        'snprintf(path, sizeof path, CLAIMS, ns);\n'
        'if (ioq_kube_send_json(k, "POST", path, "application/json", w, &o, NULL, e) < 0) return -1;\n')[0] - granted))
    control("a list through a path kept in a struct member", lambda: sorted(fmt_grant(x) for x in code_grants(
        'static int f(struct d *d) { return ioq_kube_get_json_until(k, d->lp, &st, &o, NULL, e); }\n'
        'void init(struct d *d) { snprintf(d->lp, sizeof d->lp, "/apis/resource.k8s.io/v1" "/deviceclasses?x=%s", s); }\n'
        )[0] - granted))
    control("a slice patch read as a core-group grant", lambda: [] if code_grants(
        'snprintf(path, sizeof path, "/apis/resource.k8s.io/v1/resourceslices/%s", n);\n'
        'ioq_kube_merge_patch(k, path, body, e);')[0] <= RBAC_DRA_EXTRA["ioqos-plugin"]
        else ["resourceslices patch is used but not granted"])
    # DRA mode: its ClusterRole where the plugin runs with --mode=dra, nowhere else
    dra = render(DRA_OVERLAY)
    if "dra" not in plugin_modes(dra):
        fail("%s runs no plugin with --mode=dra" % rel(DRA_OVERLAY))
    bad = copy.deepcopy(dra)
    for o in bad:
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "ioqos-plugin-dra":
            o["rules"] = [r for r in o["rules"] if r["resources"] != ["resourceclaims"]]
    control("DRA plugin cannot read claims", rbac_problems, bad)
    control("DRA role in a device-plugin install", rbac_problems, copy.deepcopy(base) + [
        o for o in dra if o["kind"] in ("ClusterRole", "ClusterRoleBinding") and o["metadata"]["name"] == "ioqos-plugin-dra"])
    # controls: one extra verb, one missing verb, a wildcard, an extra binding
    bad = copy.deepcopy(base)
    for o in bad:
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "ioqos-plugin":
            o["rules"][1]["verbs"].append("update")
    control("plugin may update nodes", rbac_problems, bad)
    bad = copy.deepcopy(base)
    for o in bad:
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "ioqos-plugin":
            o["rules"][1]["verbs"].append("delete")
    control("plugin may delete nodes (unused)", rbac_problems, bad)
    bad = copy.deepcopy(base)
    for o in bad:
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "ioqos-scheduler-ext":
            o["rules"] = [r for r in o["rules"] if r["resources"] != ["pods/binding"]]
    control("extender cannot bind", rbac_problems, bad)
    bad = copy.deepcopy(base)
    for o in bad:
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "ioqos-scheduler-ext":
            o["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]})
    control("extender reads secrets", rbac_problems, bad)
    bad = copy.deepcopy(base) + [{
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "x"}, "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "ioqos-plugin", "namespace": "ioqos-system"}]}]
    control("plugin is cluster-admin", rbac_problems, bad)
    finish()


# ------------------------------------------------- admission policies

NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"


def c_define(header, name):
    m = re.search(r'#define %s "([^"]+)"' % name, open(os.path.join(REPO, header)).read())
    if not m:
        raise SystemExit("%s: no #define %s" % (header, name))
    return m.group(1)


def admission_problems(docs):
    """Every patch/update RBAC grants an ioqos service account is narrowed by
    a ValidatingAdmissionPolicy (bound with Deny, failing closed) that matches
    that account's user name and keeps it to its own annotation; the plugin's
    also pins the node to the token's node-name claim. The CEL itself is not
    evaluated here (no CEL implementation among the test dependencies)."""
    p = []
    own = {"ioqos-plugin": c_define("src/grant/nodeanno.h", "IOQ_NODE_ANNOTATION"),
           "ioqos-scheduler-ext": c_define("src/grant/nodeanno.h", "IOQ_POD_DISK_ANNOTATION")}
    policies = {o["metadata"]["name"]: o for o in docs if o["kind"] == "ValidatingAdmissionPolicy"}
    bound = {}
    for b in (o for o in docs if o["kind"] == "ValidatingAdmissionPolicyBinding"):
        spec = b.get("spec") or {}
        if spec.get("validationActions") != ["Deny"]:
            p.append("binding %s: validationActions %s, want [Deny]" % (b["metadata"]["name"], spec.get("validationActions")))
        if spec.get("paramRef") or spec.get("matchResources"):
            p.append("binding %s narrows its policy (paramRef/matchResources)" % b["metadata"]["name"])
        bound[spec.get("policyName")] = b
    for pol in policies:
        if pol not in bound:
            p.append("policy %s has no binding: it is never enforced" % pol)
    for sa_obj in (o for o in docs if o["kind"] == "ServiceAccount" and o["metadata"]["name"] in own):
        sa, ns = sa_obj["metadata"]["name"], sa_obj["metadata"].get("namespace")
        user = "system:serviceaccount:%s:%s" % (ns, sa)
        grants = sa_grants(docs).get(sa, (set(), set(), []))[0]
        writes = {(g, r, v) for (g, r, v) in grants
                  if v in ("patch", "update") and (g, r) != (DRA_GROUP, "resourceslices")}
        p += slice_policy_problems(sa, user, grants, policies)
        for grp, res, verb in sorted(writes):
            cover = []
            for name, pol in policies.items():
                spec = pol.get("spec") or {}
                conds = " ".join(c.get("expression", "") for c in spec.get("matchConditions") or [])
                rules = (spec.get("matchConstraints") or {}).get("resourceRules") or []
                if user in conds and any(res in (r.get("resources") or []) and "UPDATE" in (r.get("operations") or [])
                                         and grp in (r.get("apiGroups") or [""]) for r in rules):
                    cover.append((name, spec))
            if not cover:
                p.append("%s may %s %s but no admission policy matching user %s narrows it" % (sa, verb, res, user))
                continue
            for name, spec in cover:
                text = json.dumps(spec.get("validations") or []) + json.dumps(spec.get("variables") or [])
                if spec.get("failurePolicy") != "Fail":
                    p.append("policy %s: failurePolicy %s, want Fail" % (name, spec.get("failurePolicy")))
                if own[sa] not in text:
                    p.append("policy %s does not name %s's own annotation %s" % (name, sa, own[sa]))
                if "oldObject" not in text:
                    p.append("policy %s never compares with oldObject: it cannot tell what changed" % name)
                if sa == "ioqos-plugin" and (NODE_NAME_EXTRA not in text or "object.metadata.name" not in text):
                    p.append("policy %s does not tie the node to the token's %s" % (name, NODE_NAME_EXTRA))
    return p


VERB_OPERATION = {"create": "CREATE", "update": "UPDATE", "patch": "UPDATE", "delete": "DELETE"}


def slice_policy_problems(sa, user, grants, policies):
    """DRA mode: RBAC lets the plugin write every ResourceSlice of the
    cluster; each create, update and delete it may do is held by a policy
    (failing closed) to slices of its driver whose spec.nodeName and pool are
    the node in its token (overlays/dra/resourceslice-policy.yaml)."""
    ops = {VERB_OPERATION[v] for (g, r, v) in grants
           if (g, r) == (DRA_GROUP, "resourceslices") and v in VERB_OPERATION}
    if not ops:
        return []
    p, covered = [], set()
    driver = dra_facts()["driver"]
    for name, pol in sorted(policies.items()):
        spec = pol.get("spec") or {}
        conds = " ".join(c.get("expression", "") for c in spec.get("matchConditions") or [])
        rules = [r for r in (spec.get("matchConstraints") or {}).get("resourceRules") or []
                 if "resourceslices" in (r.get("resources") or []) and DRA_GROUP in (r.get("apiGroups") or [])]
        mine = ops & {o for r in rules for o in r.get("operations") or []}
        if user not in conds or not mine:
            continue
        covered |= mine
        text = json.dumps(spec.get("validations") or []) + json.dumps(spec.get("variables") or [])
        if spec.get("failurePolicy") != "Fail":
            p.append("policy %s: failurePolicy %s, want Fail" % (name, spec.get("failurePolicy")))
        for need, why in ((NODE_NAME_EXTRA, "the token's node"), ("spec.nodeName", "the slice's node"),
                          ("pool.name", "the slice's pool"), ("'%s'" % driver, "the driver"),
                          ("oldObject", "the slice being updated or deleted")):
            if need not in text:
                p.append("policy %s never looks at %s (%s): a plugin could write another node's or driver's "
                         "slices" % (name, why, need))
    for op in sorted(ops - covered):
        p.append("%s may %s resourceslices (%s) but no admission policy matching user %s holds it to its node" % (
            sa, op, DRA_GROUP, user))
    return p


def cmd_admission():
    n = 0
    for d in kustomization_dirs():
        try:
            docs = render(d)
        except Broken as e:
            fail(str(e))
            continue
        if not find(docs, "Namespace", "ioqos-system"):
            continue  # parts (base/plugin, examples) carry no RBAC to narrow
        n += 1
        probs = admission_problems(docs)
        if not any(o["kind"] == "ValidatingAdmissionPolicy" for o in docs):
            probs.append("no ValidatingAdmissionPolicy")
        for x in probs:
            fail("%s: %s" % (rel(d), x))
        if not probs:
            ok("%s: every node/pod patch of the ioqos accounts is held to its own annotation%s" % (
                rel(d), ", every ResourceSlice write to the plugin's node" if "dra" in plugin_modes(docs) else ""))
    if not n:
        fail("no full install rendered")
    base = render(os.path.join(MANIFESTS, "base"))
    control("no admission policy", admission_problems,
            [o for o in base if not o["kind"].startswith("ValidatingAdmissionPolicy")])
    control("policy not bound", admission_problems,
            [o for o in base if o["kind"] != "ValidatingAdmissionPolicyBinding"])
    bad = copy.deepcopy(base)
    for o in bad:
        if o["kind"] == "ServiceAccount":
            o["metadata"]["namespace"] = "elsewhere"
    control("policy names another namespace's account", admission_problems, bad)
    bad = copy.deepcopy(base)
    for o in bad:
        if o["kind"] == "ValidatingAdmissionPolicy" and "plugin" in o["metadata"]["name"]:
            o["spec"]["validations"] = [v for v in o["spec"]["validations"] if NODE_NAME_EXTRA not in v["expression"]]
            o["spec"]["variables"] = []
    control("plugin may patch any node", admission_problems, bad)
    bad = copy.deepcopy(base)
    for o in bad:
        if o["kind"] == "ValidatingAdmissionPolicyBinding":
            o["spec"]["validationActions"] = ["Audit"]
    control("policy only audits", admission_problems, bad)
    # DRA mode: the plugin's ResourceSlice writes
    dra = render(DRA_OVERLAY)
    control("no ResourceSlice policy", admission_problems,
            [o for o in dra if o["metadata"]["name"] != "ioqos-plugin-own-resourceslices"])
    bad = copy.deepcopy(dra)
    for o in bad:
        if o["kind"] == "ValidatingAdmissionPolicy" and o["metadata"]["name"] == "ioqos-plugin-own-resourceslices":
            o["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = ["CREATE", "UPDATE"]
    control("slice deletes not held", admission_problems, bad)
    bad = copy.deepcopy(dra)
    for o in bad:
        if o["kind"] == "ValidatingAdmissionPolicy" and o["metadata"]["name"] == "ioqos-plugin-own-resourceslices":
            o["spec"]["validations"] = [v for v in o["spec"]["validations"] if "pool" not in v["expression"]]
    control("slice pool not tied to the node", admission_problems, bad)
    claim_cap_checks()
    finish()


def claim_cap_problems(docs):
    """overlays/dra/claim-cap: a policy, bound with Deny and failing closed,
    on the creation of ResourceClaims and ResourceClaimTemplates, that
    compares the bandwidth capacity requests with a cap."""
    p = []
    cap = dra_facts()["capacities"][0]
    pols = [o for o in docs if o["kind"] == "ValidatingAdmissionPolicy"]
    if len(pols) != 1:
        return ["%d ValidatingAdmissionPolicies, want 1" % len(pols)]
    spec, name = pols[0].get("spec") or {}, pols[0]["metadata"]["name"]
    rules = (spec.get("matchConstraints") or {}).get("resourceRules") or []
    for res in ("resourceclaims", "resourceclaimtemplates"):
        if not any(res in (r.get("resources") or []) and DRA_GROUP in (r.get("apiGroups") or [])
                   and "CREATE" in (r.get("operations") or []) for r in rules):
            p.append("%s does not check the creation of %s" % (name, res))
    if spec.get("failurePolicy") != "Fail":
        p.append("%s: failurePolicy %s, want Fail" % (name, spec.get("failurePolicy")))
    text = json.dumps(spec.get("variables") or []) + json.dumps(spec.get("validations") or [])
    for need in ("capacity.requests", "'%s'" % cap, "firstAvailable", "object.spec.spec", "count"):
        if need not in text:
            p.append("%s never looks at %s" % (name, need))
    if not any(v.get("messageExpression") or v.get("message") for v in spec.get("validations") or []):
        p.append("%s denies without a message" % name)
    b = [o for o in docs if o["kind"] == "ValidatingAdmissionPolicyBinding" and (o.get("spec") or {}).get("policyName") == name]
    if not b or b[0]["spec"].get("validationActions") != ["Deny"]:
        p.append("%s is not bound with validationActions [Deny]" % name)
    return p


def claim_cap_checks():
    d = os.path.join(DRA_OVERLAY, "claim-cap")
    docs = render(d)
    probs = claim_cap_problems(docs)
    for x in probs:
        fail("%s: %s" % (rel(d), x))
    if not probs:
        ok("%s: claims and claim templates are held to a bandwidth cap (optional, not in overlays/dra)" % rel(d))
    if any(o["kind"] == "ValidatingAdmissionPolicy" and o["metadata"]["name"] == docs[0]["metadata"]["name"]
           for o in render(DRA_OVERLAY)):
        fail("%s: the optional claim cap is part of overlays/dra itself" % rel(d))
    bad = copy.deepcopy(docs)
    for o in bad:
        if o["kind"] == "ValidatingAdmissionPolicy":
            o["spec"]["matchConstraints"]["resourceRules"][0]["resources"] = ["resourceclaims"]
    control("claim templates not capped", claim_cap_problems, bad)
    control("claim cap not bound", claim_cap_problems, [o for o in docs if o["kind"] == "ValidatingAdmissionPolicy"])


# -------------------------------------------------------- scheduler config

# kubescheduler.config.k8s.io/v1 ExtenderTLSConfig (docs/extender.md)
TLS_CONFIG_FIELDS = {"insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData"}


def scheduler_problems(cfg, where, expect_host=None, expect_port=None, profile=None):
    p = []
    if cfg.get("apiVersion") != "kubescheduler.config.k8s.io/v1":
        p.append("%s: apiVersion is %r, not kubescheduler.config.k8s.io/v1" % (where, cfg.get("apiVersion")))
    if cfg.get("kind") != "KubeSchedulerConfiguration":
        p.append("%s: kind is %r" % (where, cfg.get("kind")))
    exts = cfg.get("extenders") or []
    mine = [e for e in exts if any((m or {}).get("name") in RESOURCES for m in e.get("managedResources") or [])]
    if len(mine) != 1:
        return p + ["%s: %d extenders manage ioqos resources (want 1)" % (where, len(mine))]
    e = mine[0]
    required = {"urlPrefix": str, "filterVerb": str, "prioritizeVerb": str, "bindVerb": str,
                "weight": int, "nodeCacheCapable": bool, "httpTimeout": str, "ignorable": bool,
                "managedResources": list}
    for k, t in required.items():
        if k not in e:
            p.append("%s: extender has no %s" % (where, k))
        elif not isinstance(e[k], t) or (t is int and isinstance(e[k], bool)):
            p.append("%s: extender %s is %r, not a %s" % (where, k, e[k], t.__name__))
    allowed = set(required) | {"preemptVerb", "enableHTTPS", "tlsConfig"}
    # mutual TLS with the extender: HTTPS, a client certificate, and a CA
    # (without caFile kube-scheduler sets Insecure and verifies nothing)
    if e.get("enableHTTPS") is not True:
        p.append("%s: enableHTTPS is not true (the extender takes mutual TLS only)" % where)
    tls = e.get("tlsConfig")
    if not isinstance(tls, dict):
        p.append("%s: extender has no tlsConfig (client certificate)" % where)
    else:
        unknown = set(tls) - TLS_CONFIG_FIELDS
        if unknown:
            p.append("%s: tlsConfig fields %s do not exist in ExtenderTLSConfig" % (where, sorted(unknown)))
        for f in ("cert", "key", "ca"):
            if not (tls.get(f + "File") or tls.get(f + "Data")):
                p.append("%s: tlsConfig has no %sFile" % (where, f))
        if tls.get("insecure"):
            p.append("%s: tlsConfig.insecure skips verifying the extender" % where)
    for k in e:
        if k not in allowed:
            p.append("%s: extender field %s does not exist in kubescheduler.config.k8s.io/v1" % (where, k))
    for verb, path in (("filterVerb", "filter"), ("prioritizeVerb", "prioritize"), ("bindVerb", "bind")):
        if e.get(verb) != path:
            p.append("%s: %s is %r; ioqos-scheduler-ext serves /%s" % (where, verb, e.get(verb), path))
    if isinstance(e.get("weight"), int) and e["weight"] <= 0:
        p.append("%s: weight must be positive with a prioritizeVerb" % where)
    if isinstance(e.get("httpTimeout"), str) and not re.fullmatch(r"(\d+(\.\d+)?(ms|s|m))+", e["httpTimeout"]):
        p.append("%s: httpTimeout %r is not a duration" % (where, e["httpTimeout"]))
    names = [(m or {}).get("name") for m in e.get("managedResources") or []]
    if sorted(names) != sorted(RESOURCES):
        p.append("%s: managedResources are %s, want exactly %s" % (where, names, list(RESOURCES)))
    for m in e.get("managedResources") or []:
        if set(m) - {"name", "ignoredByScheduler"}:
            p.append("%s: managedResources entry has unknown fields %s" % (where, sorted(set(m) - {"name", "ignoredByScheduler"})))
    if e.get("ignorable") is not False:
        p.append("%s: ignorable should be false (fail closed for pods with grants)" % where)
    binders = [x for x in exts if x.get("bindVerb")]
    if len(binders) > 1:
        p.append("%s: %d extenders bind; kube-scheduler allows one" % (where, len(binders)))
    m = re.fullmatch(r"(https?)://([^/:]+):(\d+)/?", str(e.get("urlPrefix", "")))
    if not m:
        p.append("%s: urlPrefix %r is not http(s)://HOST:PORT/" % (where, e.get("urlPrefix")))
    else:
        if (m.group(1) == "https") != bool(e.get("enableHTTPS")):
            p.append("%s: urlPrefix scheme and enableHTTPS disagree" % where)
        if expect_host and m.group(2) != expect_host:
            p.append("%s: urlPrefix host %s, but the extender is reached at %s" % (where, m.group(2), expect_host))
        if expect_port and int(m.group(3)) != expect_port:
            p.append("%s: urlPrefix port %s, but the Service listens on %s" % (where, m.group(3), expect_port))
    if profile:
        names = [pr.get("schedulerName") for pr in cfg.get("profiles") or []]
        if profile not in names:
            p.append("%s: no profile named %s (profiles: %s)" % (where, profile, names))
    return p


def find(docs, kind, name=None, namespace=None):
    for o in docs:
        md = o.get("metadata") or {}
        if o.get("kind") == kind and (name is None or md.get("name") == name) and \
                (namespace is None or md.get("namespace") == namespace):
            return o
    return None


def extender_service(docs):
    svc = find(docs, "Service", "ioqos-scheduler-ext", "ioqos-system")
    if not svc:
        raise Broken("no Service ioqos-system/ioqos-scheduler-ext")
    return svc


def cmd_scheduler():
    # in place: the file for the cluster's kube-scheduler, reaching the
    # extender by the fixed cluster IP of the overlay's Service
    d = os.path.join(MANIFESTS, "overlays", "in-place-scheduler")
    f = os.path.join(d, "kube-scheduler-config.yaml")
    cfg = yaml.safe_load(open(f))
    docs = render(d)
    svc = extender_service(docs)
    ip = svc["spec"].get("clusterIP")
    if not ip:
        fail("%s: the Service has no fixed clusterIP for a host-network kube-scheduler" % rel(d))
    port = svc["spec"]["ports"][0]["port"]
    probs = scheduler_problems(cfg, rel(f), ip, port, "default-scheduler")
    for p in probs:
        fail(p)
    if not probs:
        ok("%s: extender %s, both resources managed" % (rel(f), cfg["extenders"][0]["urlPrefix"]))
    if not (cfg.get("clientConnection") or {}).get("kubeconfig"):
        fail("%s: clientConnection.kubeconfig unset (a static-pod scheduler has no in-cluster account)" % rel(f))

    # second scheduler: its configuration comes from a generated ConfigMap,
    # mounted where the Deployment's --config points
    d = os.path.join(MANIFESTS, "overlays", "second-scheduler")
    docs = render(d)
    svc = extender_service(docs)
    dep = find(docs, "Deployment", "ioqos-scheduler", "ioqos-system")
    if not dep:
        fail("%s: no Deployment ioqos-scheduler" % rel(d))
        finish()
    ps = dep["spec"]["template"]["spec"]
    c = ps["containers"][0]
    argv = (c.get("command") or []) + (c.get("args") or [])
    conf = [a.split("=", 1)[1] for a in argv if a.startswith("--config=")]
    if len(conf) != 1:
        fail("%s: kube-scheduler has no single --config=FILE" % rel(d))
        finish()
    cfg_text = None
    for vm in c.get("volumeMounts") or []:
        if conf[0].startswith(vm["mountPath"].rstrip("/") + "/"):
            vol = next(v for v in ps["volumes"] if v["name"] == vm["name"])
            cm = find(docs, "ConfigMap", vol.get("configMap", {}).get("name"), "ioqos-system")
            key = conf[0][len(vm["mountPath"].rstrip("/")) + 1:]
            if cm and key in (cm.get("data") or {}):
                cfg_text = cm["data"][key]
    if cfg_text is None:
        fail("%s: --config %s is not a key of a mounted ConfigMap" % (rel(d), conf[0]))
        finish()
    cfg2 = yaml.safe_load(cfg_text)
    for key in ("certFile", "keyFile", "caFile"):
        path = ((cfg2.get("extenders") or [{}])[0].get("tlsConfig") or {}).get(key, "")
        vm = next((vm for vm in c.get("volumeMounts") or []
                   if path.startswith(vm["mountPath"].rstrip("/") + "/")), None)
        vol = next((v for v in ps["volumes"] if vm and v["name"] == vm["name"]), {})
        if (vol.get("secret") or {}).get("secretName") != "ioqos-scheduler-ext-client":
            fail("%s: tlsConfig.%s %r is not in the mounted Secret ioqos-scheduler-ext-client" % (rel(d), key, path))
    host = "%s.%s.svc" % (svc["metadata"]["name"], svc["metadata"]["namespace"])
    probs = scheduler_problems(cfg2, rel(d) + " (ConfigMap)", host, svc["spec"]["ports"][0]["port"],
                               "ioqos-scheduler")
    le = cfg2.get("leaderElection") or {}
    if le.get("leaderElect") and (le.get("resourceName") in (None, "kube-scheduler")):
        probs.append("%s: the second scheduler would fight the main one for lease kube-scheduler" % rel(d))
    # its lease is the one the Role grants
    role = find(docs, "Role", "ioqos-scheduler-leader-election", le.get("resourceNamespace"))
    if le.get("leaderElect") and (not role or not any(le.get("resourceName") in (r.get("resourceNames") or [])
                                                      for r in role["rules"])):
        probs.append("%s: no Role grants lease %s/%s" % (rel(d), le.get("resourceNamespace"), le.get("resourceName")))
    for p in probs:
        fail(p)
    if not probs:
        ok("%s: second scheduler 'ioqos-scheduler' calls %s" % (rel(d), cfg2["extenders"][0]["urlPrefix"]))
    # the examples for it ask for that scheduler, everywhere
    ex = render(os.path.join(MANIFESTS, "examples", "second-scheduler"))
    n = 0
    for o in ex:
        for where, ps in pod_specs(o):
            n += 1
            if ps.get("schedulerName") != "ioqos-scheduler":
                fail("examples/second-scheduler: %s has schedulerName %r" % (where, ps.get("schedulerName")))
    ok("examples/second-scheduler: %d pod templates ask for ioqos-scheduler" % n)

    # controls
    bad = copy.deepcopy(cfg)
    bad["extenders"][0]["managedResources"] = [{"name": "ioqos/bandwidth"}]
    control("iops not managed", scheduler_problems, bad, "control", ip, port)
    bad = copy.deepcopy(cfg)
    del bad["extenders"][0]["nodeCacheCapable"]
    control("nodeCacheCapable missing", scheduler_problems, bad, "control", ip, port)
    bad = copy.deepcopy(cfg)
    bad["extenders"][0]["urlPrefix"] = "https://10.0.0.1:8888/"
    control("urlPrefix not the Service IP", scheduler_problems, bad, "control", ip, port)
    bad = copy.deepcopy(cfg)
    bad["apiVersion"] = "kubescheduler.config.k8s.io/v1beta3"
    control("old API version", scheduler_problems, bad, "control", ip, port)
    bad = copy.deepcopy(cfg)
    del bad["extenders"][0]["tlsConfig"]
    control("scheduler presents no client certificate", scheduler_problems, bad, "control", ip, port)
    bad = copy.deepcopy(cfg)
    bad["extenders"][0]["enableHTTPS"] = False
    bad["extenders"][0]["urlPrefix"] = bad["extenders"][0]["urlPrefix"].replace("https:", "http:")
    control("plain HTTP to the extender", scheduler_problems, bad, "control", ip, port)
    finish()


# ------------------------------------- second scheduler: schedulerName policies

SECOND_SCHEDULER_DIRS = {"second-scheduler": True, "second-scheduler-1.35": False}  # dir: has the MAP
# MutatingAdmissionPolicy is GA (admissionregistration.k8s.io/v1) from this minor
MAP_V1_MINOR = 36


def scheduler_config_of(docs):
    """(KubeSchedulerConfiguration, kube-scheduler container) of the second
    scheduler's Deployment: the ConfigMap key its --config names."""
    dep = find(docs, "Deployment", "ioqos-scheduler", "ioqos-system")
    if not dep:
        raise Broken("no Deployment ioqos-system/ioqos-scheduler")
    ps = dep["spec"]["template"]["spec"]
    c = ps["containers"][0]
    conf = [a.split("=", 1)[1] for a in argv_of(c) if a.startswith("--config=")]
    for vm in c.get("volumeMounts") or []:
        mp = vm["mountPath"].rstrip("/") + "/"
        if conf and conf[0].startswith(mp):
            vol = next(v for v in ps["volumes"] if v["name"] == vm["name"])
            cm = find(docs, "ConfigMap", (vol.get("configMap") or {}).get("name"), "ioqos-system")
            if cm and conf[0][len(mp):] in (cm.get("data") or {}):
                return yaml.safe_load(cm["data"][conf[0][len(mp):]]), c
    raise Broken("the second scheduler's --config is not a key of a mounted ConfigMap")


def image_minor(image):
    m = re.search(r":v1\.(\d+)\.\d+$", image or "")
    return int(m.group(1)) if m else None


def pods_create_rule(spec):
    rules = (spec.get("matchConstraints") or {}).get("resourceRules") or []
    return any("pods" in (r.get("resources") or []) and "CREATE" in (r.get("operations") or [])
               and "" in (r.get("apiGroups") or []) for r in rules)


def matches_ioqos_pods(spec):
    """The match condition names the ioqos/ prefix in requests and limits of
    containers and init containers (kube-scheduler's IsInterested)."""
    text = " ".join(c.get("expression", "") for c in spec.get("matchConditions") or [])
    return all(s in text for s in ("'ioqos/'", "containers", "initContainers", "requests", "limits"))


def scheduler_name_policy_problems(docs, want_mutating):
    """The second scheduler's profile name is what the admission policies
    require (VAP, Deny) and set (MAP, Kubernetes 1.36+), and what the
    extender binds; the MAP exists exactly where the API server has it."""
    p = []
    try:
        cfg, c = scheduler_config_of(docs)
    except Broken as e:
        return [str(e)]
    names = [pr.get("schedulerName") for pr in cfg.get("profiles") or []]
    if len(names) != 1 or not names[0]:
        return ["the second scheduler has profiles %s, want one named" % names]
    name = names[0]
    quoted = "'%s'" % name
    ext = find(docs, "Deployment", "ioqos-scheduler-ext", "ioqos-system")
    served = [a.split("=", 1)[1] for a in argv_of(ext["spec"]["template"]["spec"]["containers"][0])
              if a.startswith("--scheduler-name=")] if ext else []
    if (served or ["ioqos-scheduler"]) != [name]:
        p.append("the extender binds pods of %s, the second scheduler is %s" % (served or ["ioqos-scheduler (default)"], name))
    vaps = [o for o in docs if o["kind"] == "ValidatingAdmissionPolicy" and pods_create_rule(o.get("spec") or {})
            and matches_ioqos_pods(o.get("spec") or {})]
    if len(vaps) != 1:
        p.append("%d ValidatingAdmissionPolicies check the schedulerName of ioqos pods, want 1" % len(vaps))
    for v in vaps:
        spec = v["spec"]
        if spec.get("failurePolicy") != "Fail":
            p.append("policy %s: failurePolicy %s, want Fail" % (v["metadata"]["name"], spec.get("failurePolicy")))
        vals = spec.get("validations") or []
        if not any("object.spec.schedulerName" in x.get("expression", "") and quoted in x.get("expression", "")
                   and x.get("messageExpression") for x in vals):
            p.append("policy %s does not require schedulerName %s with a message" % (v["metadata"]["name"], name))
        b = [o for o in docs if o["kind"] == "ValidatingAdmissionPolicyBinding"
             and (o.get("spec") or {}).get("policyName") == v["metadata"]["name"]]
        if not b or b[0]["spec"].get("validationActions") != ["Deny"]:
            p.append("policy %s is not bound with validationActions [Deny]" % v["metadata"]["name"])
    maps = [o for o in docs if o["kind"] == "MutatingAdmissionPolicy"]
    minor = image_minor(c.get("image"))
    if want_mutating:
        if minor is not None and minor < MAP_V1_MINOR:
            p.append("kube-scheduler %s with a MutatingAdmissionPolicy v1, which needs 1.%d" % (c.get("image"), MAP_V1_MINOR))
        if len(maps) != 1:
            p.append("%d MutatingAdmissionPolicies, want 1 setting schedulerName" % len(maps))
        for m in maps:
            spec = m.get("spec") or {}
            if m.get("apiVersion") != "admissionregistration.k8s.io/v1":
                p.append("%s: apiVersion %s, want admissionregistration.k8s.io/v1 (GA in 1.%d)" % (m["metadata"]["name"], m.get("apiVersion"), MAP_V1_MINOR))
            if spec.get("failurePolicy") != "Fail":
                p.append("%s: failurePolicy %s, want Fail" % (m["metadata"]["name"], spec.get("failurePolicy")))
            if not pods_create_rule(spec) or not matches_ioqos_pods(spec):
                p.append("%s does not match the creation of pods that request ioqos/*" % m["metadata"]["name"])
            conds = " ".join(x.get("expression", "") for x in spec.get("matchConditions") or [])
            if "'default-scheduler'" not in conds:
                p.append("%s may override a scheduler the pod names (match default-scheduler only)" % m["metadata"]["name"])
            muts = spec.get("mutations") or []
            if not any(x.get("patchType") == "ApplyConfiguration" and
                       re.search(r"schedulerName:\s*%s" % re.escape(quoted),
                                 (x.get("applyConfiguration") or {}).get("expression", "")) for x in muts):
                p.append("%s does not set schedulerName %s" % (m["metadata"]["name"], name))
            if not any(o["kind"] == "MutatingAdmissionPolicyBinding" and
                       (o.get("spec") or {}).get("policyName") == m["metadata"]["name"] for o in docs):
                p.append("%s has no binding: it never runs" % m["metadata"]["name"])
    else:
        if minor is None or minor >= MAP_V1_MINOR:
            p.append("kube-scheduler %s in the overlay for clusters before 1.%d" % (c.get("image"), MAP_V1_MINOR))
        if maps or any(o["kind"] == "MutatingAdmissionPolicyBinding" for o in docs):
            p.append("a MutatingAdmissionPolicy in the overlay for clusters that lack its v1 API")
    return p


def cmd_scheduler_policy():
    for d, mutating in SECOND_SCHEDULER_DIRS.items():
        path = os.path.join(MANIFESTS, "overlays", d)
        probs = scheduler_name_policy_problems(render(path), mutating)
        for x in probs:
            fail("%s: %s" % (rel(path), x))
        if not probs:
            ok("%s: ioqos pods are %s schedulerName ioqos-scheduler" %
               (rel(path), "given and held to" if mutating else "held to"))
    # the cluster's own scheduler calls the extender in place: nothing to redirect
    inplace = render(os.path.join(MANIFESTS, "overlays", "in-place-scheduler"))
    if any(o["kind"] == "MutatingAdmissionPolicy" or
           (o["kind"] == "ValidatingAdmissionPolicy" and matches_ioqos_pods(o.get("spec") or {})) for o in inplace):
        fail("overlays/in-place-scheduler: a schedulerName policy where default-scheduler calls the extender")
    else:
        ok("overlays/in-place-scheduler: no schedulerName policy (default-scheduler calls the extender)")
    good = render(os.path.join(MANIFESTS, "overlays", "second-scheduler"))
    old = render(os.path.join(MANIFESTS, "overlays", "second-scheduler-1.35"))
    control("no mutating policy", scheduler_name_policy_problems,
            [o for o in good if o["kind"] != "MutatingAdmissionPolicy"], True)
    control("mutating policy on 1.35", scheduler_name_policy_problems,
            old + [o for o in good if o["kind"].startswith("MutatingAdmissionPolicy")], False)
    bad = copy.deepcopy(good)
    for o in bad:
        if o["kind"] == "MutatingAdmissionPolicy":
            o["spec"]["mutations"][0]["applyConfiguration"]["expression"] = \
                "Object{spec: Object.spec{schedulerName: 'other'}}"
    control("mutating policy sets another name", scheduler_name_policy_problems, bad, True)
    bad = copy.deepcopy(good)
    for o in bad:
        if o["kind"] == "MutatingAdmissionPolicy":
            o["spec"]["matchConditions"] = [x for x in o["spec"]["matchConditions"] if "default-scheduler" not in x["expression"]]
    control("mutating policy overrides any scheduler", scheduler_name_policy_problems, bad, True)
    bad = copy.deepcopy(old)
    for o in bad:
        if o["kind"] == "ValidatingAdmissionPolicyBinding":
            o["spec"]["validationActions"] = ["Warn"]
    control("schedulerName only warned", scheduler_name_policy_problems, bad, False)
    bad = copy.deepcopy(old)
    for o in bad:
        if o["kind"] == "ValidatingAdmissionPolicy" and matches_ioqos_pods(o.get("spec") or {}):
            o["spec"]["matchConditions"][0]["expression"] = "object.spec.containers.exists(c, has(c.resources))"
    control("policy blind to init containers", scheduler_name_policy_problems, bad, False)
    bad = copy.deepcopy(good)
    for o in bad:
        if o["kind"] == "ConfigMap" and "scheduler-config.yaml" in (o.get("data") or {}):
            o["data"]["scheduler-config.yaml"] = o["data"]["scheduler-config.yaml"].replace(
                "schedulerName: ioqos-scheduler", "schedulerName: io-scheduler")
    control("profile renamed, policies not", scheduler_name_policy_problems, bad, True)
    finish()


# --------------------------------------------- workloads (DaemonSet, Deployment)

def argv_of(c):
    return (c.get("command") or []) + (c.get("args") or [])


def flag_values(argv):
    """{flag: value} for --flag=value and --flag value; value None for a bare flag."""
    out, i = {}, 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            if "=" in a:
                k, v = a[2:].split("=", 1)
                out[k] = v
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out[a[2:]] = argv[i + 1]
                i += 1
            else:
                out[a[2:]] = None
        i += 1
    return out


def mount_for(c, ps, path):
    """(volumeMount, volume) whose mountPath contains path, deepest first."""
    best = None
    for vm in c.get("volumeMounts") or []:
        mp = vm["mountPath"].rstrip("/") or "/"
        if path == mp or path.startswith(mp + "/"):
            if not best or len(mp) > len(best[0]["mountPath"]):
                vol = next((v for v in ps.get("volumes") or [] if v["name"] == vm["name"]), None)
                best = (vm, vol)
    return best


def host_path_of(c, ps, path):
    m = mount_for(c, ps, path)
    if not m or not m[1] or "hostPath" not in m[1]:
        return None
    vm, vol = m
    mp = vm["mountPath"].rstrip("/")
    return vol["hostPath"]["path"].rstrip("/") + path[len(mp):], vm


def plugin_problems(ds, docs, nvmet=False):
    where = "DaemonSet/%s" % ds["metadata"]["name"]
    p = []
    ps = ds["spec"]["template"]["spec"]
    c = next((c for c in ps["containers"] if argv_of(c) and argv_of(c)[0] == BIN_DIR + "ioqos-plugin"), None)
    if not c:
        return ["%s: no container runs %sioqos-plugin" % (where, BIN_DIR)]
    f = flag_values(argv_of(c)[1:])
    mode = f.get("mode") or "device-plugin"
    if mode not in ("device-plugin", "dra"):
        p.append("%s: --mode=%s is neither device-plugin nor dra" % (where, mode))
    p += plugin_privilege_problems(where, ps, c, mode == "dra", nvmet)
    if mode == "dra":
        p += dra_plugin_problems(where, ds, ps, c, f)
    if nvmet:
        # the plugin reads and writes configfs at <--sysfs-root>/kernel/config
        cfs = os.path.join(f.get("sysfs-root") or "/sys", "kernel/config")
        hp = host_path_of(c, ps, cfs)
        if not hp or hp[0] != "/sys/kernel/config" or hp[1].get("readOnly"):
            p.append("%s: %s (configfs, for nvmet cgroup_id) is not the host's /sys/kernel/config, "
                     "writable (mounted: %s)" % (where, cfs, hp and hp[0]))
    if ps.get("priorityClassName") != "system-node-critical":
        p.append("%s: priorityClassName is %r" % (where, ps.get("priorityClassName")))
    if not any(t.get("operator") == "Exists" and not t.get("key") for t in ps.get("tolerations") or []):
        p.append("%s: does not tolerate every taint" % where)
    env = {e["name"]: e for e in c.get("env") or []}
    if (env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")) != "spec.nodeName":
        p.append("%s: NODE_NAME does not come from the downward API spec.nodeName" % where)
    if not (c.get("resources") or {}).get("requests"):
        p.append("%s: no resource requests" % where)
    # kubelet's directories and the host's sysfs / cgroupfs, at the paths the flags name
    want = {
        "device-plugin-dir": "/var/lib/kubelet/device-plugins",
        "pod-resources-socket": "/var/lib/kubelet/pod-resources/kubelet.sock",
        "cgroupfs-root": "/sys/fs/cgroup",
        "sysfs-root": "/sys",
    }
    for flag, host in want.items():
        v = f.get(flag)
        if not v:
            p.append("%s: --%s not set" % (where, flag))
            continue
        hp = host_path_of(c, ps, v)
        if not hp or hp[0] != host:
            p.append("%s: --%s=%s is not the host's %s (mounted: %s)" % (where, flag, v, host, hp and hp[0]))
        elif flag in ("device-plugin-dir", "cgroupfs-root") and hp[1].get("readOnly"):
            p.append("%s: --%s is mounted read-only" % (where, flag))
    # the config file comes from a ConfigMap; the kubelet root dir it names is
    # the host's, at the same path (mountinfo resolution inside the container)
    cfg_path = f.get("config")
    cfg = None
    m = mount_for(c, ps, cfg_path) if cfg_path else None
    if not m or not m[1] or "configMap" not in m[1]:
        p.append("%s: --config=%s is not in a mounted ConfigMap" % (where, cfg_path))
    else:
        cm = find(docs, "ConfigMap", m[1]["configMap"]["name"], ds["metadata"].get("namespace"))
        key = cfg_path[len(m[0]["mountPath"].rstrip("/")) + 1:]
        if not cm or key not in (cm.get("data") or {}):
            p.append("%s: ConfigMap %s has no key %s" % (where, m[1]["configMap"]["name"], key))
        else:
            cfg = yaml.safe_load(cm["data"][key])
    if cfg is not None:
        root = cfg.get("kubeletRootDir", "/var/lib/kubelet")
        hp = host_path_of(c, ps, root)
        if not hp or hp[0] != root:
            p.append("%s: kubeletRootDir %s is not the host's, mounted at the same path" % (where, root))
        cal = os.path.dirname(cfg.get("calibrationFile", "/var/lib/ioqos/calibration.json"))
        hp = host_path_of(c, ps, cal)
        if not hp or hp[1].get("readOnly"):
            p.append("%s: calibration directory %s is not a writable host directory" % (where, cal))
    # the explain socket of `ioqosctl explain` (default <state-dir>/plugin.sock)
    # in a writable host directory, so root on the node reaches it too
    xs = f.get("explain-socket") or os.path.join(f.get("state-dir") or "/var/lib/ioqos", "plugin.sock")
    if xs != "off":
        hp = host_path_of(c, ps, os.path.dirname(xs))
        if not hp or hp[1].get("readOnly"):
            p.append("%s: --explain-socket %s is not in a writable host directory" % (where, xs))
    # metrics and probes on the pod IP (downward API), not on every address;
    # probes on the health listener when there is one, else the metrics port
    ports = {pt.get("name"): pt["containerPort"] for pt in c.get("ports") or []}
    for flag in ("metrics-address", "health-address"):
        a = f.get(flag)
        if not a:
            continue
        if a.rsplit(":", 1)[0] != "$(POD_IP)":
            p.append("%s: --%s=%s does not listen on $(POD_IP)" % (where, flag, a))
        elif (env.get("POD_IP", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")) != "status.podIP":
            p.append("%s: --%s uses $(POD_IP) but env POD_IP is not status.podIP" % (where, flag))
        if int(a.rsplit(":", 1)[1]) not in ports.values():
            p.append("%s: --%s port is not a containerPort" % (where, flag))
    addr = f.get("health-address") or f.get("metrics-address", "127.0.0.1:9464")
    port = int(addr.rsplit(":", 1)[1]) if addr else None
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        hg = (c.get(probe) or {}).get("httpGet") or {}
        pp = ports.get(hg.get("port"), hg.get("port"))
        if hg.get("path") != path or pp != port:
            p.append("%s: %s is not GET %s on the probe port %s" % (where, probe, path, port))
    return p


# Least privilege of the plugin (issue 12 item 12): uid 0 without any
# capability, and only these host paths, each with the access it needs
# (docs/operations.md "Security" says what each is for):
#   "rw" writable, "ro" read-only, "rro" read-only recursively (submounts too)
PLUGIN_CAPS_ADD = set()  # none: root owns every file it writes (tests/kernel/v1-nocaps.sh)
PLUGIN_HOST_PATHS = {
    "/sys/fs/cgroup": "rw",                   # io.max / blkio.throttle.* of pod cgroups
    "/sys": "rro",                            # block devices, schedulers
    "/var/lib/kubelet": "rro",                # the kubelet root's disk, via mountinfo
    "/var/lib/kubelet/device-plugins": "rw",  # kubelet.sock + the plugin's own sockets
    "/var/lib/kubelet/pod-resources": "ro",   # connect to the pod resources socket
    "/dev/disk": "ro",                        # /dev/disk/by-* selectors
    "/var/lib/ioqos": "rw",                   # calibration results, state
}
# and in DRA mode (overlays/dra): the driver's own directory under kubelet's
# plugins/ (not the other drivers' sockets beside it) and the registry
PLUGIN_HOST_PATHS_DRA = {
    "/var/lib/kubelet/plugins/ioqos.io": "rw",   # dra.sock, kubelet dials it
    "/var/lib/kubelet/plugins_registry": "rw",   # ioqos.io-reg.sock, kubelet's plugin watcher
}


# and with the storage-node Component (overlays/nvmet): the kernel target's
# configfs, where the plugin writes a namespace's cgroup_id
PLUGIN_HOST_PATHS_NVMET = {
    "/sys/kernel/config": "rw",
}


def mount_access(vm):
    if not vm.get("readOnly"):
        return "rw"
    return "rro" if vm.get("recursiveReadOnly") in ("Enabled", "IfPossible") else "ro"


def dra_plugin_problems(where, ds, ps, c, f):
    """--mode=dra: kubelet's DRA directories from the flags, each the host's
    at the same path and writable, socket paths that fit a sockaddr_un, and
    only nodes labelled for DRA mode (one mode per node)."""
    p = []
    driver = dra_facts()["driver"]
    socks = {"kubelet-plugins-dir": os.path.join(f.get("kubelet-plugins-dir") or "", driver, "dra.sock"),
             "kubelet-registry-dir": os.path.join(f.get("kubelet-registry-dir") or "", driver + "-reg.sock")}
    for flag, host in DRA_DIRS.items():
        v = f.get(flag)
        if not v:
            p.append("%s: --%s not set" % (where, flag))
            continue
        if v.rstrip("/") != host:
            p.append("%s: --%s=%s is not kubelet's %s" % (where, flag, v, host))
        sock = socks[flag]
        hp = host_path_of(c, ps, os.path.dirname(sock))
        if not hp or hp[0] != os.path.dirname(sock):
            p.append("%s: %s is not the host's directory at the same path (mounted: %s): kubelet "
                     "would dial a socket that is not there" % (where, os.path.dirname(sock), hp and hp[0]))
        elif hp[1].get("readOnly"):
            p.append("%s: %s is mounted read-only" % (where, os.path.dirname(sock)))
        if len(sock) >= UNIX_PATH_MAX:
            p.append("%s: socket %s is longer than a unix socket path can be" % (where, sock))
    sel = ps.get("nodeSelector") or {}
    if sel.get(DRA_MODE_LABEL) != "dra":
        p.append("%s: runs in DRA mode on nodes not labelled %s=dra (nodeSelector %s): a node may "
                 "then run both modes" % (where, DRA_MODE_LABEL, sel))
    return p


def plugin_privilege_problems(where, ps, c, dra=False, nvmet=False):
    p = []
    sc = c.get("securityContext") or {}
    psc = ps.get("securityContext") or {}
    if sc.get("privileged"):
        p.append("%s: container is privileged" % where)
    if sc.get("allowPrivilegeEscalation") is not False:
        p.append("%s: allowPrivilegeEscalation is not false" % where)
    if not sc.get("readOnlyRootFilesystem"):
        p.append("%s: root filesystem is writable" % where)
    caps = sc.get("capabilities") or {}
    if "ALL" not in (caps.get("drop") or []):
        p.append("%s: capabilities do not drop ALL" % where)
    extra = set(caps.get("add") or []) - PLUGIN_CAPS_ADD
    if extra:
        p.append("%s: adds capabilities %s beyond %s" % (where, sorted(extra), sorted(PLUGIN_CAPS_ADD)))
    seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        p.append("%s: seccomp profile is %r, not RuntimeDefault" % (where, seccomp))
    for k in ("hostPID", "hostIPC", "hostNetwork"):
        if ps.get(k):
            p.append("%s: %s is set" % (where, k))
    vols = {v["name"]: v for v in ps.get("volumes") or []}
    for vm in c.get("volumeMounts") or []:
        hp = (vols.get(vm["name"]) or {}).get("hostPath")
        if not hp:
            continue
        path = hp["path"].rstrip("/") or "/"
        allowed = dict(PLUGIN_HOST_PATHS, **(PLUGIN_HOST_PATHS_DRA if dra else {}),
                       **(PLUGIN_HOST_PATHS_NVMET if nvmet else {}))
        want = allowed.get(path)
        if want is None:
            p.append("%s: host path %s is not one the plugin needs%s (%s)" % (
                where, path, " in this mode" if path in PLUGIN_HOST_PATHS_DRA else
                " without overlays/nvmet" if path in PLUGIN_HOST_PATHS_NVMET else "", sorted(allowed)))
        elif mount_access(vm) != want:
            p.append("%s: host path %s is mounted %s, want %s" % (where, path, mount_access(vm), want))
        if vm.get("mountPropagation") not in (None, "None"):
            p.append("%s: host path %s has mountPropagation %s" % (where, path, vm["mountPropagation"]))
    return p


def extender_problems(dep, docs):
    where = "Deployment/%s" % dep["metadata"]["name"]
    p = []
    ps = dep["spec"]["template"]["spec"]
    c = next((c for c in ps["containers"] if argv_of(c) and argv_of(c)[0] == BIN_DIR + "ioqos-scheduler-ext"), None)
    if not c:
        return ["%s: no container runs %sioqos-scheduler-ext" % (where, BIN_DIR)]
    if ps.get("serviceAccountName") != "ioqos-scheduler-ext":
        p.append("%s: runs as %r" % (where, ps.get("serviceAccountName")))
    if dep["spec"].get("replicas") != 1 or (dep["spec"].get("strategy") or {}).get("type") != "Recreate":
        p.append("%s: must be one replica with strategy Recreate (assumed placements live in memory)" % where)
    f = flag_values(argv_of(c)[1:])
    port = int(f.get("listen", ":8888").rsplit(":", 1)[1])
    ports = {pt.get("name"): pt["containerPort"] for pt in c.get("ports") or []}
    if port not in ports.values():
        p.append("%s: --listen port %d is not a containerPort" % (where, port))
    svc = find(docs, "Service", dep["metadata"]["name"], dep["metadata"].get("namespace"))
    if not svc:
        p.append("%s: no Service of the same name" % where)
    else:
        sel = svc["spec"].get("selector") or {}
        labels = dep["spec"]["template"]["metadata"].get("labels") or {}
        if not sel or any(labels.get(k) != v for k, v in sel.items()):
            p.append("%s: Service selector %s does not select the pods" % (where, sel))
        for sp in svc["spec"]["ports"]:
            tp = sp.get("targetPort", sp["port"])
            if ports.get(tp, tp) != port:
                p.append("%s: Service port %s targets %s, the extender listens on %d" % (where, sp["port"], tp, port))
    # probes on the metrics listener: the scheduling port serves the verbs only
    mport = int(f.get("metrics-listen", ":9465").rsplit(":", 1)[1])
    if mport == port or mport not in ports.values():
        p.append("%s: --metrics-listen port %d is not a containerPort of its own" % (where, mport))
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        hg = (c.get(probe) or {}).get("httpGet") or {}
        if hg.get("path") != path or ports.get(hg.get("port"), hg.get("port")) != mport:
            p.append("%s: %s is not GET %s on the metrics port %d" % (where, probe, path, mport))
    # mutual TLS on by default, its files from a mounted Secret
    for flag in ("tls-cert", "tls-key", "tls-client-ca", "tls-client-subject"):
        if not f.get(flag):
            p.append("%s: --%s is not set (the scheduling port takes mutual TLS only)" % (where, flag))
        elif flag != "tls-client-subject":
            vm = next((vm for vm in c.get("volumeMounts") or []
                       if f[flag].startswith(vm["mountPath"].rstrip("/") + "/")), None)
            vol = next((v for v in ps.get("volumes") or [] if vm and v["name"] == vm["name"]), {})
            if not (vol.get("secret") or {}).get("secretName"):
                p.append("%s: --%s %s is not in a mounted Secret" % (where, flag, f[flag]))
    p += netpol_problems(dep, docs, port, ports)
    # one placement function: the extender's policy is the nodes' policy
    for o in docs:
        if o["kind"] == "ConfigMap" and "config.yaml" in (o.get("data") or {}):
            pol = yaml.safe_load(o["data"]["config.yaml"]).get("placementPolicy", "least-allocated")
            if pol != f.get("policy", "least-allocated"):
                p.append("%s: --policy=%s but ConfigMap %s has placementPolicy %s" %
                         (where, f.get("policy"), o["metadata"]["name"], pol))
    return p


def netpol_problems(dep, docs, port, ports):
    """A NetworkPolicy selects the extender pods and admits the scheduling
    port only from named sources."""
    where = "Deployment/%s" % dep["metadata"]["name"]
    labels = dep["spec"]["template"]["metadata"].get("labels") or {}
    pols = [o for o in docs if o["kind"] == "NetworkPolicy"
            and o["metadata"].get("namespace") == dep["metadata"].get("namespace")
            and all(labels.get(k) == v for k, v in
                    ((o["spec"].get("podSelector") or {}).get("matchLabels") or {}).items())
            and "Ingress" in (o["spec"].get("policyTypes") or ["Ingress"])]
    if not pols:
        return ["%s: no NetworkPolicy restricts ingress to the extender" % where]
    p = []
    admitted = 0
    for pol in pols:
        for rule in pol["spec"].get("ingress") or []:
            rports = [ports.get(x.get("port"), x.get("port")) for x in rule.get("ports") or []]
            if rule.get("ports") and port not in rports:
                continue
            if not rule.get("from"):
                p.append("%s: NetworkPolicy/%s admits anyone to the scheduling port %d" %
                         (where, pol["metadata"]["name"], port))
            else:
                admitted += 1
    if not admitted and not p:
        p.append("%s: no NetworkPolicy rule admits the scheduler to port %d" % (where, port))
    return p


def workload_problems(docs, nvmet=False):
    p = []
    n_ds = n_ext = 0
    for o in docs:
        if o["kind"] == "DaemonSet":
            n_ds += 1
            p += plugin_problems(o, docs, nvmet)
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "ioqos-scheduler-ext":
            n_ext += 1
            p += extender_problems(o, docs)
    if not n_ds:
        p.append("no plugin DaemonSet")
    modes = plugin_modes(docs)
    # a complete install (with the namespace) has the extender too; parts
    # such as base/plugin hold the DaemonSet alone. In DRA mode kube-scheduler
    # allocates the claims itself: no extender, no second scheduler
    if len(modes) > 1:
        p.append("plugin DaemonSets in both modes in one install: one install, one mode (overlays/dra/README.md)")
    elif modes == {"dra"}:
        for o in docs:
            if o["kind"] in ("Deployment", "Service", "NetworkPolicy", "ServiceAccount") and \
                    o["metadata"]["name"] in ("ioqos-scheduler-ext", SCHEDULER_SA):
                p.append("%s/%s in a DRA-mode install, which needs no extender or scheduler" % (o["kind"], o["metadata"]["name"]))
            if o["kind"] == "ConfigMap" and any("KubeSchedulerConfiguration" in str(v) for v in (o.get("data") or {}).values()):
                p.append("ConfigMap/%s: a scheduler configuration in a DRA-mode install" % o["metadata"]["name"])
    elif find(docs, "Namespace", "ioqos-system") and n_ext != 1:
        p.append("a full install needs the extender Deployment, found %d" % n_ext)
    return p


def mode_split_problems(dra_docs, dp_docs, with_migration):
    """A DRA install (overlays/dra) applied beside a device-plugin install
    while a cluster migrates: their DaemonSets have different names (else
    applying one replaces the other), the objects both have are the same
    (else each apply undoes the other), and with the migration Component
    no node runs both modes (their nodeSelectors differ on one label)."""
    p = []
    dra_ds = [o for o, _, _, m in plugin_daemonsets(dra_docs) if m == "dra"]
    dp_ds = [o for o, _, _, m in plugin_daemonsets(dp_docs) if m != "dra"]

    def key(o):
        md = o["metadata"]
        return (o["apiVersion"].split("/")[0] if "/" in o["apiVersion"] else "", o["kind"], md.get("namespace", ""), md["name"])
    dp = {key(o): o for o in dp_docs}
    for o in dra_docs:
        k = key(o)
        if k in dp and o["kind"] == "DaemonSet":
            p.append("DaemonSet %s is in both installs: applying one replaces the other's" % o["metadata"]["name"])
        elif k in dp and dp[k] != o:
            p.append("%s %s differs between the installs: applying one undoes the other" % (o["kind"], o["metadata"]["name"]))
    if with_migration:
        for a in dra_ds:
            for b in dp_ds:
                sa = a["spec"]["template"]["spec"].get("nodeSelector") or {}
                sb = b["spec"]["template"]["spec"].get("nodeSelector") or {}
                if not any(k in sb and sb[k] != v for k, v in sa.items()):
                    p.append("DaemonSets %s and %s may both run on one node (nodeSelectors %s, %s)" % (
                        a["metadata"]["name"], b["metadata"]["name"], sa, sb))
            if not dp_ds:
                p.append("no device-plugin DaemonSet to compare with")
    return p


def render_with_component(d, component):
    """d's render with a Component added (a kustomization in a temporary
    directory naming both)."""
    with tempfile.TemporaryDirectory() as t:
        with open(os.path.join(t, "kustomization.yaml"), "w") as fh:
            fh.write("resources:\n  - %s\ncomponents:\n  - %s\n" % (os.path.relpath(d, t), os.path.relpath(component, t)))
        return render(t)


def render_with_migration(d):
    return render_with_component(d, DRA_MIGRATION)


def mode_split_checks():
    """overlays/dra beside every device-plugin install (README.md, "Migration")."""
    dra = render(DRA_OVERLAY)
    installs = [d for d in kustomization_dirs() if not is_component(d) and d != DRA_OVERLAY
                and find(render(d), "Namespace", "ioqos-system") and plugin_modes(render(d)) == {"device-plugin"}]
    if not installs:
        fail("no device-plugin install to check overlays/dra against")
    for d in installs:
        probs = mode_split_problems(dra, render(d), False)
        probs += ["with %s: %s" % (rel(DRA_MIGRATION), x) for x in mode_split_problems(dra, render_with_migration(d), True)]
        for x in probs:
            fail("%s beside %s: %s" % (rel(DRA_OVERLAY), rel(d), x))
        if not probs:
            ok("%s beside %s: own DaemonSet, shared objects identical; with %s no node runs both modes" % (
                rel(DRA_OVERLAY), rel(d), rel(DRA_MIGRATION)))
    base = render(os.path.join(MANIFESTS, "base"))
    mig = render_with_migration(os.path.join(MANIFESTS, "base"))
    bad = copy.deepcopy(dra)
    for o in bad:
        if o["kind"] == "DaemonSet":
            o["metadata"]["name"] = "ioqos-plugin"
    control("DRA DaemonSet named as the device-plugin one", mode_split_problems, bad, base, False)
    bad = copy.deepcopy(dra)
    for o in bad:
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "ioqos-plugin":
            o["rules"][0]["verbs"].append("delete")
    control("shared ClusterRole changed by the DRA install", mode_split_problems, bad, base, False)
    control("device-plugin install without the migration Component", mode_split_problems, dra, base, True)
    bad = copy.deepcopy(dra)
    for o in bad:
        if o["kind"] == "DaemonSet":
            o["spec"]["template"]["spec"]["nodeSelector"].pop(DRA_MODE_LABEL)
    control("DRA DaemonSet on every node", mode_split_problems, bad, mig, True)


def is_component(d):
    """A kustomize Component (manifests/monitoring): an add-on without the
    workloads, checked where it is used (tests/monitoring)."""
    with open(os.path.join(d, "kustomization.yaml")) as f:
        return (yaml.safe_load(f) or {}).get("kind") == "Component"


def cmd_workloads():
    for d in kustomization_dirs():
        if os.sep + "examples" in d[len(MANIFESTS):] or is_component(d):
            continue
        try:
            docs = render(d)
        except Broken as e:
            fail(str(e))
            continue
        probs = workload_problems(docs)
        for x in probs:
            fail("%s: %s" % (rel(d), x))
        if not probs:
            ok("%s: plugin DaemonSet(s) and extender Deployment wired right" % rel(d) if plugin_modes(docs) != {"dra"} else
               "%s: plugin DaemonSet(s) wired right for DRA mode, no extender or scheduler" % rel(d))
    base = render(os.path.join(MANIFESTS, "base"))

    def mutate(kind, fn):
        b = copy.deepcopy(base)
        for o in b:
            if o["kind"] == kind:
                fn(o)
        return b

    def plugin_container(o):
        return o["spec"]["template"]["spec"]["containers"][0]
    control("cgroup root not the host's", workload_problems, mutate("DaemonSet", lambda o: plugin_container(o)["args"].__setitem__(
        [i for i, a in enumerate(plugin_container(o)["args"]) if a.startswith("--cgroupfs-root")][0], "--cgroupfs-root=/sys/fs/cgroup")))
    control("explain socket not on the host", workload_problems, mutate("DaemonSet", lambda o: plugin_container(o)["args"].append(
        "--explain-socket=/tmp/plugin.sock")))
    control("metrics on every address", workload_problems, mutate("DaemonSet", lambda o: plugin_container(o)["args"].__setitem__(
        [i for i, a in enumerate(plugin_container(o)["args"]) if a.startswith("--metrics-address")][0], "--metrics-address=:9464")))
    control("probes on the metrics port", workload_problems, mutate("DaemonSet", lambda o: plugin_container(o)["livenessProbe"]["httpGet"].__setitem__("port", "metrics")))
    control("NODE_NAME missing", workload_problems, mutate("DaemonSet", lambda o: plugin_container(o).__setitem__("env", [])))
    control("kubelet root not mounted", workload_problems, mutate("DaemonSet", lambda o: plugin_container(o).__setitem__(
        "volumeMounts", [m for m in plugin_container(o)["volumeMounts"] if m["mountPath"] != "/var/lib/kubelet"])))
    control("extender policy differs", workload_problems, mutate("Deployment", lambda o: o["spec"]["template"]["spec"]["containers"][0]["args"].append("--policy=balanced")))
    control("two extender replicas", workload_problems, mutate("Deployment", lambda o: o["spec"].__setitem__("replicas", 2)))
    # least privilege of the plugin
    control("plugin privileged", workload_problems, mutate("DaemonSet", lambda o: plugin_container(o)["securityContext"].__setitem__("privileged", True)))
    control("plugin adds SYS_ADMIN", workload_problems, mutate("DaemonSet", lambda o: plugin_container(o)["securityContext"]["capabilities"].__setitem__("add", ["SYS_ADMIN"])))
    control("plugin keeps its capabilities", workload_problems, mutate("DaemonSet", lambda o: plugin_container(o)["securityContext"].pop("capabilities")))
    control("sysfs mounted writable", workload_problems, mutate("DaemonSet", lambda o: [m.pop("readOnly", None) for m in plugin_container(o)["volumeMounts"] if m["mountPath"] == "/host/sys"]))
    control("kubelet root not recursively read-only", workload_problems, mutate("DaemonSet", lambda o: [m.pop("recursiveReadOnly", None) for m in plugin_container(o)["volumeMounts"] if m["mountPath"] == "/var/lib/kubelet"]))
    control("host root mounted", workload_problems, mutate("DaemonSet", lambda o: (
        o["spec"]["template"]["spec"]["volumes"].append({"name": "host", "hostPath": {"path": "/"}}),
        plugin_container(o)["volumeMounts"].append({"name": "host", "mountPath": "/host"}))))
    # the storage-node Component on each kind of install: configfs writable
    # at --sysfs-root/kernel/config, nothing else added
    for d in (os.path.join(MANIFESTS, "base"), DRA_OVERLAY):
        docs = render_with_component(d, NVMET_COMPONENT)
        probs = workload_problems(docs, nvmet=True)
        for x in probs:
            fail("%s with %s: %s" % (rel(d), rel(NVMET_COMPONENT), x))
        if not probs:
            ok("%s with %s: the host's configfs writable where the plugin reads sysfs" % (rel(d), rel(NVMET_COMPONENT)))
    control("nvmet.namespaces without overlays/nvmet (configfs read-only)",
            lambda docs: workload_problems(docs, nvmet=True), base)
    control("overlays/nvmet's configfs mount beside a plain install",
            workload_problems, render_with_component(os.path.join(MANIFESTS, "base"), NVMET_COMPONENT))
    # no container of any manifest is privileged
    for d in kustomization_dirs():
        for o in render(d):
            for where, ps in pod_specs(o):
                for _, c in containers(ps):
                    if (c.get("securityContext") or {}).get("privileged"):
                        fail("%s: %s container %s is privileged" % (rel(d), where, c.get("name")))

    def ext_container(o):
        return o["spec"]["template"]["spec"]["containers"][0]
    control("extender without client certificates", workload_problems, mutate("Deployment", lambda o: ext_container(o).__setitem__(
        "args", [a for a in ext_container(o)["args"] if not a.startswith("--tls-client-ca")])))
    control("probe on the scheduling port", workload_problems, mutate("Deployment", lambda o: ext_container(o)["livenessProbe"]["httpGet"].__setitem__("port", "https")))
    control("no NetworkPolicy", workload_problems, [o for o in base if o["kind"] != "NetworkPolicy"])
    control("scheduling port open to all", workload_problems, mutate("NetworkPolicy", lambda o: o["spec"]["ingress"][0].pop("from")))
    # DRA mode (overlays/dra)
    dra = render(DRA_OVERLAY)

    def dra_mutate(fn):
        b = copy.deepcopy(dra)
        for o in b:
            if o["kind"] == "DaemonSet":
                fn(o, o["spec"]["template"]["spec"], plugin_container(o))
        return b
    control("DRA socket directory at another path inside", workload_problems, dra_mutate(lambda o, ps, c: [
        m.__setitem__("mountPath", "/plugins") for m in c["volumeMounts"] if m["name"] == "dra-plugin"]))
    control("registry mounted read-only", workload_problems, dra_mutate(lambda o, ps, c: [
        m.__setitem__("readOnly", True) for m in c["volumeMounts"] if m["name"] == "plugins-registry"]))
    control("all of kubelet's plugins/ mounted", workload_problems, dra_mutate(lambda o, ps, c: [
        v["hostPath"].__setitem__("path", "/var/lib/kubelet/plugins") for v in ps["volumes"] if v["name"] == "dra-plugin"]))
    control("--kubelet-plugins-dir left out", workload_problems, dra_mutate(lambda o, ps, c: c.__setitem__(
        "args", [a for a in c["args"] if not a.startswith("--kubelet-plugins-dir")])))
    control("DRA DaemonSet not held to DRA nodes", workload_problems, dra_mutate(lambda o, ps, c: ps["nodeSelector"].pop(DRA_MODE_LABEL)))
    control("extender in a DRA install", lambda: [x for x in workload_problems(dra + [o for o in base if o["kind"] == "Deployment"])
                                                  if "DRA-mode" in x])
    control("registry mounted in device-plugin mode", workload_problems, mutate("DaemonSet", lambda o: (
        o["spec"]["template"]["spec"]["volumes"].append({"name": "r", "hostPath": {"path": "/var/lib/kubelet/plugins_registry"}}),
        plugin_container(o)["volumeMounts"].append({"name": "r", "mountPath": "/var/lib/kubelet/plugins_registry"}))))
    mode_split_checks()
    finish()


# ------------------------------------------------------------------- flags

def help_flags(binary_path):
    p = subprocess.run([binary_path, "--help"], capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        raise SystemExit("%s --help exited %d: %s" % (binary_path, p.returncode, p.stderr))
    text = p.stdout + p.stderr
    return set(re.findall(r"(?<![\w-])--([a-z0-9][a-z0-9-]*)", text)), text


def used_flags(docs, binary):
    """[(where, flag)] and [(where, env name)] for containers running binary."""
    flags, envs = [], []
    for o in docs:
        for where, ps in pod_specs(o):
            for _, c in containers(ps):
                argv = argv_of(c)
                if not argv or os.path.basename(argv[0]) != binary:
                    continue
                if argv[0] != BIN_DIR + binary:
                    flags.append((where, "(command %s is not %s%s)" % (argv[0], BIN_DIR, binary)))
                for a in argv[1:]:
                    if a.startswith("--"):
                        flags.append((where, a[2:].split("=", 1)[0]))
                # a variable only expanded into the args ($(POD_IP)) is
                # Kubernetes' business, not the binary's
                expanded = set(re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", " ".join(argv)))
                for e in c.get("env") or []:
                    if e["name"] not in expanded:
                        envs.append((where, e["name"]))
    return flags, envs


def deprecated_flags(help_text):
    """Former spellings --help still accepts ("deprecated: --old, env OLD")."""
    return (set(re.findall(r"deprecated: --([a-z0-9-]+)", help_text)),
            set(re.findall(r"deprecated: --[a-z0-9-]+, env ([A-Z0-9_]+)", help_text)))


def flag_problems(docs, binary, known, help_text):
    flags, envs = used_flags(docs, binary)
    old_flags, old_envs = deprecated_flags(help_text)
    p = ["%s: --%s is not in `%s --help`" % (w, f, binary) for w, f in flags if f not in known]
    p += ["%s: --%s is a deprecated spelling (see `%s --help`)" % (w, f, binary)
          for w, f in flags if f in old_flags]
    p += ["%s: env %s is a deprecated spelling (see `%s --help`)" % (w, e, binary)
          for w, e in envs if e in old_envs]
    p += ["%s: env %s is not in `%s --help`" % (w, e, binary) for w, e in envs
          if not re.search(r"\b%s\b" % re.escape(e), help_text)]
    return p, len(flags)


def cmd_flags(binary, path):
    known, text = help_flags(path)
    if not known:
        fail("%s --help lists no --flags" % binary)
        finish()
    total = 0
    for d in kustomization_dirs():
        try:
            docs = render(d)
        except Broken as e:
            fail(str(e))
            continue
        probs, n = flag_problems(docs, binary, known, text)
        total += n
        for x in probs:
            fail("%s: %s" % (rel(d), x))
    if total == 0:
        fail("no manifest runs %s: nothing was checked" % binary)
    else:
        ok("%d uses of %s flags in the manifests, all in its --help" % (total, binary))
    # the scheduler configuration's verbs are paths the extender says it serves
    if binary == "ioqos-scheduler-ext":
        for verb in ("filter", "prioritize", "bind", "healthz", "readyz", "metrics"):
            if not re.search(r"/%s\b" % verb, text):
                fail("ioqos-scheduler-ext --help does not mention /%s" % verb)
    # docs/configuration.md documents exactly the flags the binary has
    conf = open(os.path.join(REPO, "docs", "configuration.md")).read()
    sec = re.search(r"^## %s flags\n(.*?)(?=^## )" % re.escape(binary), conf, re.S | re.M)
    if not sec:
        fail("docs/configuration.md has no section '## %s flags'" % binary)
    else:
        documented = set(re.findall(r"`--([a-z0-9-]+)", sec.group(1)))
        for f in sorted(documented - known):
            fail("docs/configuration.md documents --%s, which `%s --help` does not list" % (f, binary))
        for f in sorted(known - documented - {"help", "version"}):
            fail("docs/configuration.md does not document %s --%s" % (binary, f))
        if documented <= known and not (known - documented - {"help", "version"}):
            ok("docs/configuration.md documents the %d flags of %s" % (len(documented), binary))
    fake = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [
        {"name": "c", "command": [BIN_DIR + binary], "args": ["--no-such-flag-ioqos=1"]}]}}]
    control("unknown flag", lambda: flag_problems(fake, binary, known, text)[0])
    old_flags, _ = deprecated_flags(text)
    for old in sorted(old_flags):
        stale = copy.deepcopy(fake)
        stale[0]["spec"]["containers"][0]["args"] = ["--%s=/x" % old]
        control("deprecated --%s" % old, lambda: flag_problems(stale, binary, known, text)[0])
    finish()


# ------------------------------------------------------------ node config

VALIDATION = re.compile(r": line \d+: invalid (JSON|YAML)|trailing data after the JSON|"
                        r"^ioqosctl probe: [^:]+: (line \d+: )?(\(top level\)|[A-Za-z][A-Za-z0-9_.\[\]]*): ", re.M)
DISK_MISSING = re.compile(r"not found|No such file|does not exist|not a block device|no mount", re.I)


def probe(ioqosctl, text):
    # .yaml, as the DaemonSet mounts it (YAML reads the JSON controls too)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        fh.write(text)
        path = fh.name
    try:
        r = subprocess.run([ioqosctl, "probe", "--json", "--config", path], capture_output=True,
                           text=True, timeout=60)
    finally:
        os.unlink(path)
    msg = (r.stderr or "").replace(path, "CONFIG")
    return r.returncode, msg, r.stdout


def classify(ioqosctl, text):
    """'ok', 'disk' (a configured disk is absent here: fine) or 'invalid'."""
    rc, msg, _ = probe(ioqosctl, text)
    if rc == 0:
        return "ok", ""
    if VALIDATION.search(msg) or not DISK_MISSING.search(msg):
        return "invalid", msg.strip()
    return "disk", msg.strip()


def cmd_node_config(ioqosctl):
    configs = {}
    for d in kustomization_dirs():
        try:
            docs = render(d)
        except Broken as e:
            fail(str(e))
            continue
        for o in docs:
            if o["kind"] == "ConfigMap" and "config.yaml" in (o.get("data") or {}):
                configs[o["data"]["config.yaml"]] = "%s ConfigMap %s" % (rel(d), o["metadata"]["name"])
    if not configs:
        fail("no node configuration (ConfigMap key config.yaml) in the manifests")
    for text, where in configs.items():
        kind, msg = classify(ioqosctl, text)
        if kind == "invalid":
            fail("%s: ioqosctl probe rejects it: %s" % (where, msg))
        else:
            ok("%s: accepted by ioqosctl probe%s" % (where, "" if kind == "ok" else
                                                     " (a configured disk is absent here: %s)" % msg[:120]))
    # controls: the classifier tells validation errors from absent disks
    # (on the built-in defaults, so a broken manifest cannot mislead them)
    base = {}
    bad = dict(base, allocatableFractoin=0.5)
    k, m = classify(ioqosctl, json.dumps(bad))
    (ok if k == "invalid" else fail)("control 'misspelt field' is %s: %s" % (k, m[:120]))
    k, m = classify(ioqosctl, json.dumps(dict(base, units={"iops": "100"})))
    (ok if k == "invalid" else fail)("control 'string where a number belongs' is %s: %s" % (k, m[:120]))
    k, m = classify(ioqosctl, "{\"devices\": [")
    (ok if k == "invalid" else fail)("control 'truncated JSON' is %s: %s" % (k, m[:120]))
    k, m = classify(ioqosctl, json.dumps(dict(base, devices=[{"select": "nvme99n9", "class": "fast"}])))
    (ok if k == "disk" else fail)("control 'absent disk' is %s: %s" % (k, m[:120]))
    # the classes pods name exist in some node configuration
    classes = {"default"}
    for text in configs:
        c = yaml.safe_load(text)
        classes.add("default")
        classes |= {d.get("class", "default") for d in c.get("devices") or []}
        for pool in c.get("pools") or []:
            classes |= {d.get("class", "default") for d in pool.get("devices") or []}
    for d in kustomization_dirs():
        for o in render(d):
            for where, ps in list(pod_specs(o)) + list(vm_pod(o)):
                ann = annotations_of(o, where)
                cl = ann.get("ioqos.io/class")
                if cl and cl not in classes:
                    fail("%s: %s asks for class %s, which no node configuration defines (%s)" %
                         (rel(d), where, cl, sorted(classes)))
    ok("every ioqos.io/class named by a pod exists: %s" % sorted(classes))
    # DRA mode: the disk classes the DeviceClasses select (attribute class)
    dcs = dra_overlay_classes()
    probs = device_class_class_problems(dcs, classes)
    for x in probs:
        fail(x)
    if not probs:
        ok("every disk class a DeviceClass selects exists: %s" % ", ".join(
            "%s=%s" % (n, c) for n, c in sorted(device_class_disk_classes(dcs).items())))
    control("DeviceClass for a class no node has", device_class_class_problems, dict(dcs, **{"ioqos-nvme": {
        "kind": "DeviceClass", "metadata": {"name": "ioqos-nvme"}, "spec": {"selectors": [{"cel": {
            "expression": 'device.driver == "ioqos.io" && device.attributes["ioqos.io"].class == "nvme"'}}]}}}), classes)
    finish()


def device_class_disk_classes(dcs):
    """{DeviceClass: disk class} for the DeviceClasses that select one."""
    out = {}
    driver = dra_facts()["driver"]
    for name, o in dcs.items():
        for sel in (o.get("spec") or {}).get("selectors") or []:
            for domain, cl in CEL_CLASS_EQ.findall(((sel or {}).get("cel") or {}).get("expression") or ""):
                if domain == driver:
                    out[name] = cl
    return out


def device_class_class_problems(dcs, classes):
    return ["DeviceClass %s selects disk class %s, which no node configuration defines (%s)" % (n, c, sorted(classes))
            for n, c in sorted(device_class_disk_classes(dcs).items()) if c not in classes]


# ---------------------------------------------------------------- examples

def vm_pod(o):
    if o.get("kind") == "VirtualMachine":
        tspec = ((o.get("spec") or {}).get("template") or {}).get("spec") or {}
        yield "VirtualMachine/%s" % o["metadata"]["name"], {
            "containers": [{"name": "compute", "resources": (tspec.get("domain") or {}).get("resources") or {}}]}


def annotations_of(o, where):
    if o["kind"] == "Pod":
        return o["metadata"].get("annotations") or {}
    spec = o.get("spec") or {}
    if o["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return ((spec.get("template") or {}).get("metadata") or {}).get("annotations") or {}


def qty(v):
    """Integer value of a quantity for an extended resource (they are integers)."""
    s = str(v)
    m = re.fullmatch(r"(\d+)(k|M|G|Ki|Mi|Gi)?", s)
    if not m:
        raise ValueError("quantity %r is not an integer" % s)
    mult = {None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    return int(m.group(1)) * mult[m.group(2)]


def grant_problems(docs):
    """requests == limits for ioqos resources in every container; returns
    (problems, {where: pod grant per resource}) with the pod's effective need
    (max of each init container and the sum of app containers)."""
    p, pods = [], {}
    for o in docs:
        for where, ps in list(pod_specs(o)) + list(vm_pod(o)):
            eff = {r: 0 for r in RESOURCES}
            apps = {r: 0 for r in RESOURCES}
            for key, c in containers(ps):
                res = c.get("resources") or {}
                req, lim = res.get("requests") or {}, res.get("limits") or {}
                for r in RESOURCES:
                    if r not in req and r not in lim:
                        continue
                    if req.get(r) is None or lim.get(r) is None:
                        p.append("%s container %s: %s needs both request and limit (equal)" % (where, c.get("name"), r))
                        continue
                    try:
                        a, b = qty(req[r]), qty(lim[r])
                    except ValueError as e:
                        p.append("%s container %s: %s: %s" % (where, c.get("name"), r, e))
                        continue
                    if a != b:
                        p.append("%s container %s: %s request %s != limit %s" % (where, c.get("name"), r, req[r], lim[r]))
                    if a <= 0:
                        p.append("%s container %s: %s must be positive" % (where, c.get("name"), r))
                    if key == "initContainers":
                        eff[r] = max(eff[r], a)
                    else:
                        apps[r] += a
            need = {r: max(eff[r], apps[r]) for r in RESOURCES}
            if any(need.values()):
                pods[where] = need
    return p, pods


DEVICE_QUOTA = re.compile(r"^(.+)\.deviceclass\.resource\.k8s\.io/devices$")


def dra_quota_problems(rq, devices, classes):
    """A quota for DRA claims counts devices per ioqos DeviceClass
    (<class>.deviceclass.resource.k8s.io/devices), covers every class the
    examples claim from, and the examples fit it; requests.ioqos/* keys
    would suggest a bound they are not (claims request no extended resource)."""
    p, counted = [], {}
    name = rq["metadata"]["name"]
    for k, v in (rq["spec"].get("hard") or {}).items():
        if "ioqos/" in k:
            p.append("ResourceQuota %s: %s does not see DRA claims (they request no extended resource)" % (name, k))
        m = DEVICE_QUOTA.match(k)
        if m and m.group(1) not in classes:
            p.append("ResourceQuota %s: %s names a DeviceClass the manifests do not define" % (name, k))
        elif m:
            counted[m.group(1)] = qty(v)
    if not counted:
        p.append("ResourceQuota %s counts no ioqos devices (<class>.deviceclass.resource.k8s.io/devices)" % name)
    for cls, n in sorted(devices.items()):
        if cls not in counted:
            p.append("ResourceQuota %s does not count the examples' devices of class %s" % (name, cls))
        elif n > counted[cls]:
            p.append("the examples claim %d devices of %s, over their own quota %d" % (n, cls, counted[cls]))
    return p


def cmd_examples():
    d = os.path.join(MANIFESTS, "examples")
    dirs = [x for x in kustomization_dirs() if x.startswith(d)]
    classes = dra_overlay_classes()
    total = 0
    for x in dirs:
        docs = render(x)
        probs, pods = grant_problems(docs)
        dra_pods, devices = dra_pod_grants(docs, classes)
        for q in probs:
            fail("%s: %s" % (rel(x), q))
        total += len(pods) + len(dra_pods)
        if not probs and pods:
            ok("%s: %d workloads with grants, requests == limits" % (rel(x), len(pods)))
        if dra_pods:
            ok("%s: %d workloads with ResourceClaims for ioqos capacity: %s" % (rel(x), len(dra_pods), ", ".join(
                "%s %s" % (w, {k: v for k, v in n.items() if v}) for w, n in sorted(dra_pods.items()))))
        # every workload example has a grant
        for o in docs:
            for where, _ in list(pod_specs(o)) + list(vm_pod(o)):
                if where not in pods and where not in dra_pods:
                    fail("%s: %s has no ioqos grant" % (rel(x), where))
        # DRA examples: the quota counts devices
        if dra_pods and not pods:
            for rq in [o for o in docs if o["kind"] == "ResourceQuota"]:
                qp = dra_quota_problems(rq, devices, classes)
                for q in qp:
                    fail("%s: %s" % (rel(x), q))
                if not qp:
                    ok("%s: ResourceQuota %s counts devices, the examples (%s) fit" % (rel(x), rq["metadata"]["name"], devices))
            continue
        # quota: requests. keys only, both resources, and the examples fit
        for rq in [o for o in docs if o["kind"] == "ResourceQuota"]:
            hard = rq["spec"]["hard"]
            for k in hard:
                if "ioqos/" in k and not k.startswith("requests."):
                    fail("%s: quota key %s: extended resources allow only requests.*" % (rel(x), k))
            for r in RESOURCES:
                if "requests." + r not in hard:
                    fail("%s: ResourceQuota %s has no requests.%s" % (rel(x), rq["metadata"]["name"], r))
                else:
                    used = sum(v[r] for v in pods.values())
                    if used > qty(hard["requests." + r]):
                        fail("%s: the examples need %d %s, over their own quota %s" % (rel(x), used, r, hard["requests." + r]))
            ok("%s: ResourceQuota %s: %s" % (rel(x), rq["metadata"]["name"],
                                              {k: v for k, v in hard.items() if "ioqos/" in k}))
        for lr in [o for o in docs if o["kind"] == "LimitRange"]:
            for item in lr["spec"]["limits"]:
                for r in RESOURCES:
                    dflt, dreq = (item.get("default") or {}).get(r), (item.get("defaultRequest") or {}).get(r)
                    if (dflt is None) != (dreq is None) or (dflt is not None and qty(dflt) != qty(dreq)):
                        fail("%s: LimitRange %s: default and defaultRequest of %s differ" % (rel(x), lr["metadata"]["name"], r))
                    mx = (item.get("max") or {}).get(r)
                    if mx is not None and dflt is None:
                        fail("%s: LimitRange %s: max %s without a default forces every container to name it" % (rel(x), lr["metadata"]["name"], r))
                    if mx is not None:
                        for o in docs:
                            for where, ps in pod_specs(o):
                                for _, c in containers(ps):
                                    v = ((c.get("resources") or {}).get("limits") or {}).get(r)
                                    if v is not None and qty(v) > qty(mx):
                                        fail("%s: %s exceeds LimitRange max %s=%s" % (rel(x), where, r, mx))
            ok("%s: LimitRange %s consistent" % (rel(x), lr["metadata"]["name"]))
    if not total:
        fail("no example workload with a grant")
    kinds = {o["kind"] for x in dirs for o in render(x)}
    for k in ("ResourceQuota", "LimitRange", "StatefulSet", "CronJob", "Pod", "VirtualMachine", "ResourceClaimTemplate"):
        if k not in kinds:
            fail("examples have no %s" % k)
    # controls
    bad = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"ioqos/bandwidth": "200"}, "limits": {"ioqos/bandwidth": "100"}}}]}}]
    control("request != limit", lambda: grant_problems(bad)[0])
    bad[0]["spec"]["containers"][0]["resources"] = {"requests": {"ioqos/iops": "5"}}
    control("request without limit", lambda: grant_problems(bad)[0])
    dra = render(os.path.join(d, "dra"))
    _, devices = dra_pod_grants(dra, classes)
    quota = next(o for o in dra if o["kind"] == "ResourceQuota")
    bad = copy.deepcopy(quota)
    bad["spec"]["hard"] = {k: "1" for k in bad["spec"]["hard"]}
    control("DRA examples over their device quota", dra_quota_problems, bad, devices, classes)
    bad = copy.deepcopy(quota)
    bad["spec"]["hard"] = {"requests.ioqos/bandwidth": "1000"}
    control("DRA quota on requests.ioqos/bandwidth", dra_quota_problems, bad, devices, classes)
    # each replica has a claim of its own: five workers need five devices
    control("five workers, four devices of their class", dra_quota_problems, quota, dra_pod_grants(
        [o if o["kind"] != "Deployment" else dict(o, spec=dict(o["spec"], replicas=5)) for o in dra], classes)[1], classes)
    finish()


# -------------------------------------------------------------------- docs

DOCS = ("operations.md", "configuration.md", "architecture.md")


def slug(heading):
    """GitHub's anchor for a heading."""
    h = heading.strip().lower().replace("`", "")
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    out, fence = set(), False
    for line in open(path):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


def doc_problems(path, text):
    p = []
    base = os.path.dirname(path)
    body = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", body):
        if re.match(r"[a-z]+:", target):
            continue
        f, _, anchor = target.partition("#")
        fp = os.path.normpath(os.path.join(base, f)) if f else path
        if not os.path.exists(fp):
            p.append("%s: link to %s: no such file" % (rel(path), target))
        elif anchor and fp.endswith(".md") and anchor not in anchors(fp):
            p.append("%s: link to %s: no such heading in %s" % (rel(path), target, rel(fp)))
    for ref in set(re.findall(r"`((?:manifests|scripts|docs|tests)/[^`\s]*|Containerfile)`", text)):
        if not os.path.exists(os.path.join(REPO, ref.rstrip("/"))):
            p.append("%s: names %s, which does not exist" % (rel(path), ref))
    return p


def config_keys():
    """Every field name the config parser accepts (the allowed-key lists of
    src/config/*.c)."""
    src = "".join(open(f).read() for f in sorted(glob.glob(os.path.join(REPO, "src", "config", "*.c"))))
    keys = set()
    for lst in re.findall(r"static const char \*const \w+\[\] = \{([^}]*)\}", src):
        keys |= set(re.findall(r'"([A-Za-z]+)"', lst))
    keys -= {"least", "most", "balanced"}
    return keys


def cmd_docs():
    for name in DOCS:
        path = os.path.join(REPO, "docs", name)
        if not os.path.exists(path):
            fail("docs/%s is missing" % name)
            continue
        probs = doc_problems(path, open(path).read())
        for x in probs:
            fail(x)
        if not probs:
            ok("docs/%s: links, anchors and named files resolve" % name)
    conf = open(os.path.join(REPO, "docs", "configuration.md")).read()
    keys = config_keys()
    if len(keys) < 20:
        fail("found only %d config fields in src/config/: the parser of this check is stale" % len(keys))
    code_spans = " ".join(re.findall(r"`([^`]*)`", conf))
    missing = sorted(k for k in keys if not re.search(r"\b%s\b" % k, code_spans))
    for k in missing:
        fail("docs/configuration.md does not document config field %s" % k)
    if not missing:
        ok("docs/configuration.md documents all %d config fields of src/config/" % len(keys))
    control("broken link", doc_problems, os.path.join(REPO, "docs", "operations.md"),
            "see [x](configuration.md#no-such-heading) and `manifests/no-such-file.yaml`")
    finish()


# -------------------------------------- values the docs quote vs the manifests

VALUE_DOCS = ("README.md", "docs/extender.md", "docs/operations.md", "docs/configuration.md")


def duration_s(s):
    """Seconds of a Go duration like 15s, 1m30s, 500ms (None if not one)."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", s or "")
    if not parts or "".join(a + b for a, b in parts) != s:
        return None
    return sum(float(a) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[b] for a, b in parts)


def manifest_facts():
    """What the rendered manifests say: extender entries of both scheduler
    modes, namespaces, Services, ports, scheduler names, kube-scheduler tags."""
    f = {"namespaces": set(), "services": set(), "ports": set(), "tags": set(),
         "profiles": set(), "served": set(), "kube_timeout": set()}
    for d in kustomization_dirs():
        for o in render(d):
            md = o.get("metadata") or {}
            if o["kind"] == "Namespace":
                f["namespaces"].add(md["name"])
            if md.get("namespace"):
                f["namespaces"].add(md["namespace"])
            if o["kind"] == "Service":
                f["services"].add((md["name"], md.get("namespace")))
                for sp in o["spec"].get("ports") or []:
                    f["ports"].update(x for x in (sp.get("port"), sp.get("targetPort")) if isinstance(x, int))
            for _, ps in pod_specs(o):
                for _, c in containers(ps):
                    f["ports"].update(cp["containerPort"] for cp in c.get("ports") or [])
                    for pr in ("livenessProbe", "readinessProbe", "startupProbe"):
                        port = ((c.get(pr) or {}).get("httpGet") or {}).get("port")
                        if isinstance(port, int):
                            f["ports"].add(port)
                    argv = argv_of(c)
                    for a in argv:
                        m = re.match(r"--[a-z-]*(?:listen|address)=\S*:(\d+)$", a)
                        if m:
                            f["ports"].add(int(m.group(1)))
                    if "kube-scheduler" in (c.get("image") or ""):
                        f["tags"].add(c["image"].rsplit(":", 1)[1])
                    if argv and os.path.basename(argv[0]) == "ioqos-scheduler-ext":
                        names = [a.split("=", 1)[1] for a in argv if a.startswith("--scheduler-name=")]
                        f["served"].update(names or ["ioqos-scheduler"])
                        kt = flag_values(argv[1:]).get("kube-timeout")
                        f["kube_timeout"].add(int(kt) if kt else 10)
    second = scheduler_config_of(render(os.path.join(MANIFESTS, "overlays", "second-scheduler")))[0]
    inplace = yaml.safe_load(open(os.path.join(MANIFESTS, "overlays", "in-place-scheduler", "kube-scheduler-config.yaml")))
    f["configs"] = {"second": second, "in-place": inplace}
    for cfg in f["configs"].values():
        f["profiles"].update(p.get("schedulerName") for p in cfg.get("profiles") or [])
    f["extenders"] = {k: next(e for e in cfg["extenders"] if e.get("managedResources"))
                      for k, cfg in f["configs"].items()}
    return f


def extender_for(url, facts):
    """The manifests' extender entry a quoted urlPrefix stands for."""
    host = re.sub(r"^https?://([^/:]+).*", r"\1", url)
    return facts["extenders"]["in-place" if re.fullmatch(r"[\d.]+", host) else "second"]


def doc_value_problems(texts, facts):
    p = []
    exts = facts["extenders"]
    timeouts = {e.get("httpTimeout") for e in exts.values()}
    if len(timeouts) != 1:
        p.append("manifests: the two scheduler modes use httpTimeout %s" % sorted(timeouts))
    # bind: up to four API calls, each bounded by --kube-timeout
    for t in timeouts:
        for kt in facts["kube_timeout"]:
            if (duration_s(t) or 0) <= 4 * kt:
                p.append("manifests: httpTimeout %s does not cover bind's four API calls of --kube-timeout=%d" % (t, kt))
    for name, text in texts.items():
        # whole KubeSchedulerConfigurations in code blocks
        for block in re.findall(r"```ya?ml\n(.*?)```", text, re.S):
            try:
                cfg = yaml.safe_load(block)
            except yaml.YAMLError:
                continue
            if not isinstance(cfg, dict) or cfg.get("kind") != "KubeSchedulerConfiguration":
                continue
            for e in cfg.get("extenders") or []:
                ref = extender_for(str(e.get("urlPrefix", "")), facts)
                for k, v in e.items():
                    want = ref.get(k)
                    if k == "urlPrefix":
                        v, want = str(v).rstrip("/"), str(want).rstrip("/")
                    if v != want:
                        p.append("%s: KubeSchedulerConfiguration example has %s: %s, the manifests %s" % (name, k, v, want))
            for pr in cfg.get("profiles") or []:
                if pr.get("schedulerName") not in facts["profiles"]:
                    p.append("%s: example profile %s is no scheduler of the manifests" % (name, pr.get("schedulerName")))
        # inline values
        for v in re.findall(r"httpTimeout(?::|`\s*\|)\s*`?(\d[\w.]*)", text):
            if v not in timeouts:
                p.append("%s: quotes httpTimeout %s, the manifests use %s" % (name, v, sorted(timeouts)))
        for u in re.findall(r"(https?://(?:ioqos-scheduler-ext[\w.-]*|\d+\.\d+\.\d+\.\d+):\d+/?)", text):
            if u.rstrip("/") != str(extender_for(u, facts)["urlPrefix"]).rstrip("/"):
                p.append("%s: quotes urlPrefix %s, the manifests %s" % (name, u, extender_for(u, facts)["urlPrefix"]))
        for kt in re.findall(r"--kube-timeout[= ](\d+)|manifests use (\d+)", text):
            v = int(kt[0] or kt[1])
            if v not in facts["kube_timeout"]:
                p.append("%s: quotes --kube-timeout %d, the manifests use %s" % (name, v, sorted(facts["kube_timeout"])))
        for ns in re.findall(r"kubectl\b[^\n`|]*?(?:-n|--namespace)[= ]([a-z0-9][a-z0-9-]*)", text) + \
                re.findall(r"namespace `([a-z0-9-]+)`", text):
            if ns not in facts["namespaces"] | {"kube-system"}:
                p.append("%s: quotes namespace %s, the manifests have %s" % (name, ns, sorted(facts["namespaces"])))
        for svc, ns in re.findall(r"\b([a-z0-9-]+)\.([a-z0-9-]+)\.svc\b", text):
            if (svc, ns) not in facts["services"]:
                p.append("%s: quotes Service %s.%s.svc, the manifests have %s" % (name, svc, ns, sorted(facts["services"])))
        for port in re.findall(r"\bports? (\d{3,5})\b", text):
            if int(port) not in facts["ports"]:
                p.append("%s: quotes port %s, the manifests use %s" % (name, port, sorted(facts["ports"])))
        for s in re.findall(r"schedulerName:\s*([a-z0-9-]+)", text):
            if s not in facts["profiles"]:
                p.append("%s: quotes schedulerName %s, the manifests' schedulers are %s" % (name, s, sorted(facts["profiles"])))
        for s in re.findall(r"--scheduler-name[= ]([a-z0-9-]+)", text):
            if s not in facts["served"]:
                p.append("%s: quotes --scheduler-name=%s, the manifests' extender serves %s" % (name, s, sorted(facts["served"])))
        for tag in re.findall(r"kube-scheduler[:` ]+(v1\.\d+\.\d+)", text):
            if tag not in facts["tags"]:
                p.append("%s: quotes kube-scheduler %s, the overlays ship %s" % (name, tag, sorted(facts["tags"])))
    return p


def cmd_docs_values():
    facts = manifest_facts()
    texts = {}
    for d in VALUE_DOCS:
        texts[d] = open(os.path.join(REPO, d)).read()
    probs = doc_value_problems(texts, facts)
    for x in probs:
        fail(x)
    if not probs:
        ok("%s quote the manifests' timeouts, namespaces, ports, URLs, scheduler names and tags" % ", ".join(VALUE_DOCS))
    # each extraction can catch a wrong value
    for what, text in (
            ("example timeout", "```yaml\nkind: KubeSchedulerConfiguration\nextenders:\n"
                                "  - urlPrefix: \"https://ioqos-scheduler-ext.ioqos-system.svc:8888\"\n    httpTimeout: 5s\n```"),
            ("table timeout", "| `httpTimeout` | `5s` | ... |"),
            ("urlPrefix", "`https://ioqos-scheduler-ext.ioqos-system.svc:8443/`"),
            ("kube-timeout", "the manifests use 7"),
            ("namespace", "kubectl -n ioqos get pods"),
            ("Service", "https://ioqos-scheduler-ext.ioqos.svc"),
            ("port", "extender: port 9999, plain HTTP"),
            ("schedulerName", "spec:\n  schedulerName: ioqos\n"),
            ("served name", "--scheduler-name=my-scheduler"),
            ("kube-scheduler tag", "kube-scheduler `v1.31.0`")):
        control("docs quote a wrong %s" % what, doc_value_problems, {"control": text}, facts)
    bad = copy.deepcopy(facts)
    bad["kube_timeout"] = {5}
    control("httpTimeout shorter than bind's API calls", doc_value_problems, {}, bad)
    finish()


# ------------------------------------------------------------------- image

def cmd_image(paths):
    cf = os.path.join(REPO, "Containerfile")
    script = os.path.join(REPO, "scripts", "image", "check-closure.sh")
    text = open(cf).read()
    # (the version label and tags: cmd_version)
    # every binary the manifests run is one the image installs
    m = re.search(r'ARG BINARIES="([^"]+)"', text)
    shipped = set(m.group(1).split()) if m else set()
    if shipped != set(BINARIES):
        fail("Containerfile BINARIES %s != %s" % (sorted(shipped), list(BINARIES)))
    else:
        ok("Containerfile ships %s" % ", ".join(BINARIES))
    r = subprocess.run(["sh", script, "--containerfile", cf] + paths, capture_output=True, text=True, timeout=120)
    print(r.stdout.rstrip())
    if r.returncode != 0:
        fail("runtime closure incomplete: %s" % "; ".join(
            [l for l in r.stdout.splitlines() if "PROBLEM" in l] + [r.stderr.strip()]))
    else:
        ok("runtime closure of %d binaries complete" % len(paths))
    # control: without libjson-c5 (every binary loads it) the closure breaks
    with tempfile.TemporaryDirectory() as t:
        bad = os.path.join(t, "Containerfile")
        with open(bad, "w") as fh:
            fh.write(text.replace("libjson-c5 ", "").replace("libjson-c5\n", "\n"))
        r = subprocess.run(["sh", script, "--containerfile", bad] + paths[:1], capture_output=True, text=True, timeout=120)
        if r.returncode == 1 and "libjson-c5" in r.stdout:
            ok("control 'libjson-c5 not installed' is caught")
        else:
            fail("control: the closure check passed without libjson-c5 (rc %d)" % r.returncode)
    finish()


# ----------------------------------------------------------------- version

# The release is chosen once, project(VERSION) in CMakeLists.txt (issue 14
# item 1). The binaries get it from CMake, the image from scripts/image/build.sh
# (--build-arg VERSION, checked in the Containerfile's build stage); the
# manifests cannot read CMake, so their one copy (the base kustomization's
# newTag) is compared here, and every other copy is an error.
VERSION_COPIES = {  # file -> the lines allowed to spell the version out
    "CMakeLists.txt": r"^project\(ioqos VERSION ",
    "manifests/base/image/kustomization.yaml": r"^    newTag: ",
    # Helm needs both in Chart.yaml itself; cmd_version compares them
    "manifests/chart/Chart.yaml": r"^(version|appVersion): ",
    "CHANGELOG.md": r"",  # the history names every release
}
VERSION_SKIP_DIRS = {"__pycache__", "bench-results", "Testing", "corpus"}
# Go modules' pins of upstream components (tests/cluster/gomod): other projects' versions
VERSION_SKIP_FILES = {"go.mod", "go.sum"}


def project_version():
    m = re.search(r"^project\(ioqos VERSION (\d+\.\d+\.\d+)[ )]",
                  open(os.path.join(REPO, "CMakeLists.txt")).read(), re.M)
    if not m:
        raise Broken("CMakeLists.txt: no project(ioqos VERSION X.Y.Z ...)")
    return m.group(1)


def ioqos_tags(kustomization_text):
    """newTag of every images: entry named localhost/ioqos."""
    k = yaml.safe_load(kustomization_text) or {}
    return [i.get("newTag") for i in k.get("images") or [] if i.get("name") == "localhost/ioqos"]


def version_copies(relpath, text, ver):
    """Lines of one file that spell out a release: the current version, or an
    ioqos image or archive with any X.Y.Z (a stale copy), unless allowed."""
    allowed = VERSION_COPIES.get(relpath)
    rx = re.compile(r"(?<![\d.])%s(?![\d.])|ioqos[:-]v?\d+\.\d+\.\d+" % re.escape(ver))
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if rx.search(line) and not (allowed is not None and re.search(allowed, line)):
            out.append("%s:%d: a hand-written version: %s" % (relpath, n, line.strip()[:100]))
    return out


def text_files():
    for d, dirs, files in os.walk(REPO):
        r = os.path.relpath(d, REPO)
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x not in VERSION_SKIP_DIRS
                         and not (r == "." and x.startswith("build")))
        for f in sorted(files):
            p = os.path.join(d, f)
            if os.path.islink(p) or not os.path.isfile(p) or f in VERSION_SKIP_FILES:
                continue
            try:
                with open(p, encoding="utf-8") as fh:
                    yield rel(p), fh.read()
            except UnicodeDecodeError:
                continue  # binary


def containerfile_problems(text, build_sh):
    p = []
    if 'org.opencontainers.image.version="${VERSION}"' not in text:
        p.append("Containerfile: the version label is not ${VERSION}")
    if not re.search(r'if \[ -z "\$VERSION" \] \|\| \[ "\$VERSION" != "\$want" \]', text):
        p.append("Containerfile: the build stage does not refuse a VERSION other than CMakeLists.txt's")
    if '--build-arg VERSION="$VERSION"' not in build_sh or \
            "VERSION=$(sed -n 's/^project(ioqos VERSION" not in build_sh:
        p.append("scripts/image/build.sh does not pass CMakeLists.txt's version as --build-arg VERSION")
    return p


def cmd_version():
    ver = project_version()
    tag_file = os.path.join(MANIFESTS, "base", "image", "kustomization.yaml")
    try:
        tags = ioqos_tags(open(tag_file).read())
    except OSError as e:
        tags = ["(%s)" % e.strerror]
    if tags != [ver]:
        fail("%s: images localhost/ioqos newTag %s, CMakeLists.txt says %s" % (rel(tag_file), tags, ver))
    else:
        ok("%s newTag %s = project(VERSION)" % (rel(tag_file), ver))
    chart_file = os.path.join(MANIFESTS, "chart", "Chart.yaml")
    chart = yaml.safe_load(open(chart_file))
    got = (str(chart.get("version")), str(chart.get("appVersion")))
    if got != (ver, ver):
        fail("%s: version %s, appVersion %s; CMakeLists.txt says %s (both are the release)" %
             (rel(chart_file), got[0], got[1], ver))
    else:
        ok("%s version and appVersion %s = project(VERSION)" % (rel(chart_file), ver))
    n, bad = 0, 0
    for d in kustomization_dirs():
        for o in render(d):
            for where, ps in pod_specs(o):
                for _, c in containers(ps):
                    img = c.get("image", "")
                    if not img.startswith("localhost/ioqos"):
                        continue
                    n += 1
                    if img != "localhost/ioqos:" + ver:
                        bad += 1
                        fail("%s: %s uses image %s, the build makes localhost/ioqos:%s" % (rel(d), where, img, ver))
    if n == 0:
        fail("no rendered container runs localhost/ioqos: the check of the tag is stale")
    elif not bad:
        ok("all %d ioqos containers of the rendered kustomizations run localhost/ioqos:%s" % (n, ver))
    build_sh = open(os.path.join(REPO, "scripts", "image", "build.sh")).read()
    cf = open(os.path.join(REPO, "Containerfile")).read()
    probs = containerfile_problems(cf, build_sh)
    for x in probs:
        fail(x)
    if not probs:
        ok("the image is tagged and labelled with CMakeLists.txt's version")
    n, copies = 0, []
    for path, text in text_files():
        n += 1
        copies += version_copies(path, text, ver)
    for x in copies:
        fail(x)
    if not copies:
        ok("no hand-written version in %d text files (allowed: %s)" % (n, ", ".join(sorted(VERSION_COPIES))))
    if not os.path.exists(os.path.join(REPO, "CHANGELOG.md")) or \
            not re.search(r"^## \[%s\]" % re.escape(ver), open(os.path.join(REPO, "CHANGELOG.md")).read(), re.M):
        fail("CHANGELOG.md has no '## [%s]' section" % ver)
    else:
        ok("CHANGELOG.md describes %s" % ver)
    control("newTag behind CMake", lambda: ([] if ioqos_tags(
        "images:\n  - name: localhost/ioqos\n    newTag: 0.0.9\n") == [ver] else ["tag 0.0.9"]))
    control("version in a doc", version_copies, "docs/operations.md",
            "kubectl debug node/N --image=localhost/ioqos:%s\n" % ver, ver)
    control("stale image archive", version_copies, "README.md", "ctr import ioqos" + "-0.0.1.tar\n", ver)
    control("label written by hand", containerfile_problems,
            cf.replace('"${VERSION}"', '"%s"' % ver), build_sh)
    finish()


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    try:
        if cmd == "render":
            cmd_render()
        elif cmd == "rbac":
            cmd_rbac()
        elif cmd == "admission":
            cmd_admission()
        elif cmd == "scheduler":
            cmd_scheduler()
        elif cmd == "scheduler-policy":
            cmd_scheduler_policy()
        elif cmd == "workloads":
            cmd_workloads()
        elif cmd == "flags" and len(args) == 2:
            cmd_flags(*args)
        elif cmd == "node-config" and len(args) == 1:
            cmd_node_config(args[0])
        elif cmd == "examples":
            cmd_examples()
        elif cmd == "docs":
            cmd_docs()
        elif cmd == "docs-values":
            cmd_docs_values()
        elif cmd == "image" and args:
            cmd_image(args)
        elif cmd == "version":
            cmd_version()
        else:
            raise SystemExit(__doc__)
    except Broken as e:
        fail(str(e))
        finish()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks of the Helm chart (manifests/chart) with a real helm built from source.

    check_chart.py HELM lint       helm lint, plain and --strict, for every case below
    check_chart.py HELM compare    helm template against kubectl kustomize, case by case
    check_chart.py HELM values     what the values do beyond the overlays, and what they refuse
    check_chart.py HELM tls        the certificates tls.generate makes

"compare" is what keeps the two ways to install from drifting: for each
case a set of values and the kustomization it stands for are rendered, and
every object must be the same on both sides after only these differences,
each for a reason:
  - the chart adds Helm's labels (app.kubernetes.io/managed-by, helm.sh/chart);
  - kustomize's generated ConfigMaps carry a content hash in their name, the
    chart's a checksum/config annotation on the pod template instead (both
    roll the pods when the config changes);
  - kustomize sets metadata.namespace on kinds it does not know to be
    cluster-scoped (admission policies); the API server ignores it;
  - the chart creates no Namespace: Helm's release lives in it, so it exists
    before the chart's objects do (docs/operations.md says how to label it);
  - a node config is compared as the plugin reads it: a field left out is
    its default (manifests/base/plugin/node-config.yaml holds every default);
  - CEL expressions are compared without their whitespace runs: kustomize
    turns a folded scalar's line break before a more-indented line into two
    (a blank line, nothing to CEL), Helm keeps one.
Each check also proves on a broken input that it can fail (a "control").
Exit 0 all good, 1 a check failed, 77 kubectl is missing.
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

# the report helpers and the kubectl lookup of the kustomize checks
from check_manifests import Broken, fail, finish, kubectl, ok  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MANIFESTS = os.path.join(REPO, "manifests")
CHART = os.path.join(MANIFESTS, "chart")
NS = "ioqos-system"
HELM_LABELS = ("app.kubernetes.io/managed-by", "helm.sh/chart")
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
                  "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
                  "MutatingAdmissionPolicyBinding", "DeviceClass"}
def fast_pool_config():
    return yaml.safe_load(open(os.path.join(MANIFESTS, "overlays", "device-classes", "fast-pool",
                                            "node-config.yaml")))


# (name, values, kustomization): a kustomization is a directory under
# manifests/, or a dict written to a temporary one (paths in it relative to
# manifests/, made relative to the temporary directory)
CASES = [
    ("default", {}, "."),
    ("dra", {"mode": "dra"}, "overlays/dra"),
    ("second-scheduler", {"scheduler": {"wiring": "second-scheduler"}}, "overlays/second-scheduler"),
    ("second-scheduler-1.35",
     {"scheduler": {"wiring": "second-scheduler",
                    "secondScheduler": {"tag": "v1.35.9", "mutatingPolicy": False}}},
     "overlays/second-scheduler-1.35"),
    ("in-place", {"scheduler": {"wiring": "in-place"}}, "overlays/in-place-scheduler"),
    ("device-classes", {"plugin": {"pools": [{"name": "fast", "config": "FAST_POOL"}]}},
     "overlays/device-classes"),
    ("nvmet", {"plugin": {"nvmetConfigfs": True}},
     {"resources": ["base"], "components": ["overlays/nvmet"]}),
    ("monitoring", {"monitoring": {"podMonitors": True, "prometheusRule": True, "dashboard": True}},
     {"resources": ["base"], "components": ["monitoring"]}),
    ("image", {"image": {"repository": "registry.example.com/ioqos", "tag": "1.2.3"}},
     {"resources": ["base"],
      "images": [{"name": "localhost/ioqos", "newName": "registry.example.com/ioqos", "newTag": "1.2.3"}]}),
    ("dra+nvmet+monitoring",
     {"mode": "dra", "plugin": {"nvmetConfigfs": True},
      "monitoring": {"podMonitors": True, "prometheusRule": True, "dashboard": True}},
     {"resources": ["overlays/dra"], "components": ["overlays/nvmet", "monitoring"]}),
]


def case_values(values):
    v = copy.deepcopy(values)
    for p in (v.get("plugin") or {}).get("pools") or []:
        if p.get("config") == "FAST_POOL":
            p["config"] = fast_pool_config()
    return v


# ------------------------------------------------------------------ rendering

def run(cmd, timeout=120, **kw):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise Broken("%s: no answer in %d s" % (" ".join(cmd[:3]), timeout))


def values_file(tmp, values, name="values.yaml"):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        yaml.safe_dump(values, f)
    return path


def helm_template(helm, values, ns=NS, chart=CHART, extra=()):
    """Objects `helm template` renders with these values (a list of dicts)."""
    with tempfile.TemporaryDirectory() as tmp:
        p = run([helm, "template", "ioqos", chart, "-n", ns, "-f", values_file(tmp, values)] + list(extra))
    if p.returncode != 0:
        raise Broken("helm template: %s" % p.stderr.strip()[-1200:])
    return [o for o in yaml.safe_load_all(p.stdout) if o]


def kustomize(spec):
    if isinstance(spec, str):
        p = run([kubectl(), "kustomize", os.path.join(MANIFESTS, spec)])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            k = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
            for key in ("resources", "components"):
                if key in spec:
                    k[key] = [os.path.relpath(os.path.join(MANIFESTS, r), tmp) for r in spec[key]]
            if "images" in spec:
                k["images"] = spec["images"]
            values_file(tmp, k, "kustomization.yaml")
            p = run([kubectl(), "kustomize", tmp])
    if p.returncode != 0:
        raise Broken("kubectl kustomize %s: %s" % (spec, p.stderr.strip()[-800:]))
    return [o for o in yaml.safe_load_all(p.stdout) if o]


# -------------------------------------------------------------- normalising

HASHED = re.compile(r"^(.*)-[a-z0-9]{10}$")


def merged(base, over):
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merged(base.get(k), v) if k in base else v
        return out
    return over


def config_defaults():
    return yaml.safe_load(open(os.path.join(MANIFESTS, "base", "plugin", "node-config.yaml")))


CEL_KEYS = ("expression", "messageExpression")


def cel_whitespace(x):
    if isinstance(x, dict):
        return {k: (" ".join(v.split()) if k in CEL_KEYS and isinstance(v, str) else cel_whitespace(v))
                for k, v in x.items()}
    if isinstance(x, list):
        return [cel_whitespace(v) for v in x]
    return x


def normalise(objs, side):
    """The objects as comparable dicts keyed by (kind, namespace, name)."""
    objs = copy.deepcopy(objs)
    renames = {}
    if side == "kustomize":
        # generated ConfigMaps: name-<hash> -> name (and every reference)
        for o in objs:
            if o["kind"] == "ConfigMap":
                m = HASHED.match(o["metadata"]["name"])
                if m and o["metadata"]["name"] not in ("ioqos-dashboard",):
                    renames[o["metadata"]["name"]] = m.group(1)
                    o["metadata"]["name"] = m.group(1)
    out = {}
    defaults = config_defaults()
    for o in objs:
        md = o.setdefault("metadata", {})
        labels = md.get("labels") or {}
        for k in HELM_LABELS:
            labels.pop(k, None)
        if labels:
            md["labels"] = labels
        else:
            md.pop("labels", None)
        if o["kind"] in CLUSTER_SCOPED:
            md.pop("namespace", None)
        if o["kind"] == "ConfigMap":
            for k, v in list((o.get("data") or {}).items()):
                if k.endswith((".yaml", ".yml")):
                    d = yaml.safe_load(v)
                    if isinstance(d, dict) and d.get("kind") == "NodeConfiguration":
                        d = merged(defaults, d)
                    o["data"][k] = d
                elif k.endswith(".json"):
                    o["data"][k] = json.loads(v)
        tmpl = (o.get("spec") or {}).get("template")
        if isinstance(tmpl, dict):
            ann = (tmpl.get("metadata") or {}).get("annotations") or {}
            ann.pop("checksum/config", None)
            if not ann and "metadata" in tmpl:
                tmpl["metadata"].pop("annotations", None)
            ps = tmpl.get("spec") or {}
            for v in ps.get("volumes") or []:
                if "configMap" in v:
                    v["configMap"]["name"] = renames.get(v["configMap"]["name"], v["configMap"]["name"])
            ps["volumes"] = sorted(ps.get("volumes") or [], key=lambda v: v["name"])
            for c in ps.get("containers") or []:
                c["volumeMounts"] = sorted(c.get("volumeMounts") or [], key=lambda m: m["mountPath"])
        o = cel_whitespace(o)
        key = (o["kind"], md.get("namespace", ""), md["name"])
        if key in out:
            raise Broken("%s %s/%s rendered twice" % key)
        out[key] = o
    return out


def differences(a, b, path=""):
    """Paths where a and b differ, with both values (at most a few)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append("%s.%s only in the chart: %s" % (path, k, json.dumps(b[k])[:160]))
            elif k not in b:
                out.append("%s.%s only in kustomize: %s" % (path, k, json.dumps(a[k])[:160]))
            else:
                out += differences(a[k], b[k], "%s.%s" % (path, k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, "%s[%d]" % (path, i))
        return out
    if a != b:
        return ["%s: kustomize %s, chart %s" % (path or ".", json.dumps(a)[:160], json.dumps(b)[:160])]
    return []


def compare(kust, chart):
    """Problems between two renders (lists of objects)."""
    k = normalise([o for o in kust if o["kind"] != "Namespace"], "kustomize")
    c = normalise(chart, "chart")
    probs = []
    for key in sorted(set(k) | set(c)):
        name = "%s %s" % (key[0], "/".join(x for x in key[1:] if x))
        if key not in c:
            probs.append("%s: kustomize renders it, the chart does not" % name)
        elif key not in k:
            probs.append("%s: the chart renders it, kustomize does not" % name)
        else:
            probs += ["%s: %s" % (name, d) for d in differences(k[key], c[key])[:8]]
    return probs


# ------------------------------------------------------------------- checks

def cmd_compare(helm):
    for name, values, spec in CASES:
        try:
            probs = compare(kustomize(spec), helm_template(helm, case_values(values)))
        except Broken as e:
            fail("%s: %s" % (name, e))
            continue
        for p in probs:
            fail("%s: %s" % (name, p))
        if not probs:
            ok("%s: the chart with %s renders the objects of %s" %
               (name, json.dumps(values) if values else "its defaults",
                spec if isinstance(spec, str) else json.dumps(spec)))
    # the packaged chart (files/ stored as copies, not links) renders the same
    with tempfile.TemporaryDirectory() as tmp:
        p = run([helm, "package", CHART, "-d", tmp])
        tgz = [os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".tgz")]
        if p.returncode != 0 or len(tgz) != 1:
            fail("helm package: rc %d %s" % (p.returncode, p.stderr.strip()[-400:]))
        else:
            try:
                v = case_values(CASES[5][1])
                probs = compare(helm_template(helm, v), helm_template(helm, v, chart=tgz[0]))
                for x in probs:
                    fail("packaged chart: %s" % x)
                if not probs:
                    ok("the packaged chart (%s) renders what the directory does" % os.path.basename(tgz[0]))
            except Broken as e:
                fail("packaged chart: %s" % e)
    # controls: the comparison sees a changed field, a missing and an extra object
    base = kustomize(".")
    chart = helm_template(helm, {})
    bad = copy.deepcopy(chart)
    for o in bad:
        if o["kind"] == "DaemonSet":
            o["spec"]["template"]["spec"]["containers"][0]["args"][0] = "--config=/elsewhere.yaml"
    (ok if compare(base, bad) else fail)("control: a changed DaemonSet argument is a difference")
    (ok if compare(base, [o for o in chart if o["kind"] != "Service"]) else fail)(
        "control: an object the chart lacks is a difference")
    extra = chart + [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": NS}}]
    (ok if compare(base, extra) else fail)("control: an object only the chart has is a difference")
    cfg = copy.deepcopy(chart)
    for o in cfg:
        if o["kind"] == "ConfigMap" and "config.yaml" in o.get("data", {}):
            o["data"]["config.yaml"] = o["data"]["config.yaml"].replace("allocatableFraction: 0.8",
                                                                        "allocatableFraction: 0.7")
    (ok if compare(base, cfg) else fail)("control: a node config field off its default is a difference")
    # another namespace: every ioqos-system of the manifests follows the release
    try:
        objs = helm_template(helm, {"scheduler": {"wiring": "second-scheduler"}}, ns="storage-qos")
        text = yaml.safe_dump_all(objs)
        if "ioqos-system" in text:
            fail("release namespace storage-qos: 'ioqos-system' is still in the render: %s" %
                 [l.strip() for l in text.splitlines() if "ioqos-system" in l][:4])
        wrong = ["%s %s in %s" % (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
                 for o in objs if o["kind"] not in CLUSTER_SCOPED and
                 o["metadata"].get("namespace") not in ("storage-qos", "kube-system")]
        if wrong:
            fail("release namespace storage-qos: objects elsewhere: %s" % wrong)
        if not [o for o in objs if "system:serviceaccount:storage-qos:ioqos-plugin" in json.dumps(o)]:
            fail("release namespace storage-qos: no admission policy names the plugin's service account there")
        if "ioqos-system" not in text and not wrong:
            ok("in release namespace storage-qos every namespace, subject, CEL user name and "
               "Service DNS name follows it (kube-system's RoleBinding stays)")
    except Broken as e:
        fail("release namespace storage-qos: %s" % e)
    finish()


def lint_cases():
    yield "defaults", {}
    for name, values, _ in CASES:
        if values:
            yield name, case_values(values)
    yield "tls.generate", {"tls": {"generate": True}, "scheduler": {"wiring": "in-place"}}


def cmd_lint(helm):
    with tempfile.TemporaryDirectory() as tmp:
        for name, values in lint_cases():
            for strict in ([], ["--strict"]):
                p = run([helm, "lint", CHART, "-n", NS, "-f", values_file(tmp, values)] + strict)
                errs = [l for l in p.stdout.splitlines() if l.startswith(("[ERROR]", "[WARNING]"))]
                if p.returncode != 0 or errs:
                    fail("helm lint %s(%s): rc %d %s" % (" ".join(strict) + " " if strict else "", name,
                                                         p.returncode, (errs or [p.stderr.strip()])[:5]))
                else:
                    ok("helm lint %s(%s)" % (" ".join(strict) + " " if strict else "", name))
        # control: lint fails on a chart with a broken template
        broken = os.path.join(tmp, "broken")
        shutil.copytree(CHART, broken, symlinks=False)
        with open(os.path.join(broken, "templates", "plugin.yaml"), "a") as f:
            f.write("\n{{ .Values.plugin.nosuch.field }}\n")
        p = run([helm, "lint", broken, "-n", NS])
        (ok if p.returncode != 0 else fail)("control: helm lint fails on a template that cannot render")
    finish()


# values that must be refused, with a word the error must contain
REFUSED = [
    ("a misspelt top-level key", {"monitorng": {"dashboard": True}}, "monitorng"),
    ("a misspelt nested key", {"plugin": {"resorces": {}}}, "resorces"),
    ("an unknown mode", {"mode": "cdi"}, "mode"),
    ("an unknown scheduler wiring", {"scheduler": {"wiring": "inplace"}}, "wiring"),
    ("a pool name that is no DNS label", {"plugin": {"pools": [{"name": "Fast_1"}]}}, "name"),
    ("a pool named twice", {"plugin": {"pools": [{"name": "fast"}, {"name": "fast"}]}}, "twice"),
    ("a pool placing with another policy",
     {"plugin": {"pools": [{"name": "fast", "config": {"placementPolicy": "most-allocated"}}]}},
     "placementPolicy"),
    ("a node config with an unknown top-level field", {"plugin": {"config": {"allocatableFractoin": 0.5}}},
     "allocatableFractoin"),
    ("a log level the binaries do not have", {"plugin": {"logLevel": "verbose"}}, "logLevel"),
    ("an in-place scheduler without a Service IP", {"scheduler": {"wiring": "in-place", "inPlace": {"serviceIP": ""}}},
     "serviceIP"),
    ("a zero certificate validity", {"tls": {"generate": True, "validityDays": 0}}, "validityDays"),
]


def objects_by(objs):
    return {(o["kind"], o["metadata"]["name"]): o for o in objs}


def c_strings(path, array):
    """The strings of one `static const char *const ARRAY[] = {...}` in a source file."""
    m = re.search(r"\b%s\[\] = \{([^}]*)\}" % re.escape(array), open(os.path.join(REPO, path)).read())
    if not m:
        raise Broken("%s: no array %s (this check's reading of the code is stale)" % (path, array))
    return re.findall(r'"([^"]*)"', m.group(1))


def schema_problems(schema):
    """Where values.schema.json and the code disagree on the words they accept."""
    p = []
    d = schema["definitions"]
    top = c_strings("src/config/config_root.c", "keys")
    if sorted(d["nodeConfig"]["properties"]) != sorted(top):
        p.append("values.schema.json nodeConfig fields %s, the parser's top level (src/config/config_root.c) %s"
                 % (sorted(d["nodeConfig"]["properties"]), sorted(top)))
    pol = c_strings("src/config/config_root.c", "g_policy_names")
    if d["nodeConfig"]["properties"]["placementPolicy"]["enum"] != pol:
        p.append("values.schema.json placementPolicy %s, src/config/config_root.c %s" %
                 (d["nodeConfig"]["properties"]["placementPolicy"]["enum"], pol))
    lv = c_strings("src/base/log_emit.c", "g_levels")
    if d["logLevel"]["enum"] != lv:
        p.append("values.schema.json logLevel %s, src/base/log_emit.c %s" % (d["logLevel"]["enum"], lv))
    return p


def cmd_values(helm):
    schema = json.load(open(os.path.join(CHART, "values.schema.json")))
    try:
        probs = schema_problems(schema)
    except Broken as e:
        probs = [str(e)]
    for x in probs:
        fail(x)
    if not probs:
        ok("values.schema.json accepts the config fields, placement policies and log levels the code does")
    bad = copy.deepcopy(schema)
    bad["definitions"]["nodeConfig"]["properties"].pop("nvmet")
    (ok if schema_problems(bad) else fail)("control: a config field missing from the schema is a difference")
    for what, values, word in REFUSED:
        try:
            helm_template(helm, values)
            fail("%s: helm template accepted %s" % (what, json.dumps(values)))
        except Broken as e:
            msg = str(e)
            (ok if word in msg else fail)("%s is refused%s: %s" % (
                what, "" if word in msg else " but the message does not name %r" % word, msg.splitlines()[-1][-200:]))
    # the Kubernetes version decides too: 1.35 has no MutatingAdmissionPolicy v1
    ss = {"scheduler": {"wiring": "second-scheduler"}}
    try:
        helm_template(helm, ss, extra=("--kube-version", "v1.35.9"))
        fail("the second scheduler's mutating policy on Kubernetes 1.35: helm template accepted it")
    except Broken as e:
        (ok if "mutatingPolicy needs Kubernetes 1.36+" in str(e) else fail)(
            "the mutating policy is refused on Kubernetes 1.35, saying what to set: %s" % str(e)[-160:])
    try:
        kinds = [o["kind"] for o in helm_template(
            helm, {"scheduler": {"wiring": "second-scheduler", "secondScheduler": {"mutatingPolicy": False}}},
            extra=("--kube-version", "v1.35.9"))]
        (ok if "MutatingAdmissionPolicy" not in kinds else fail)(
            "on Kubernetes 1.35 with mutatingPolicy=false the chart renders without it")
    except Broken as e:
        fail("second scheduler on Kubernetes 1.35 without the mutating policy: %s" % e)
    # values the overlays have no counterpart for: they land where they should
    v = {"imagePullSecrets": [{"name": "regcred"}],
         "plugin": {"logLevel": "debug", "tolerations": [{"key": "storage", "operator": "Exists"}],
                    "resources": {"limits": {"memory": "256Mi"}}, "priorityClassName": "io-critical",
                    "config": {"placementPolicy": "most-allocated"}},
         "extender": {"logLevel": "warn", "resources": {"limits": {"memory": "1Gi"}},
                      "nodeSelector": {"node-role.kubernetes.io/control-plane": ""}}}
    try:
        objs = objects_by(helm_template(helm, v))
        ds = objs[("DaemonSet", "ioqos-plugin")]["spec"]["template"]["spec"]
        ext = objs[("Deployment", "ioqos-scheduler-ext")]["spec"]["template"]["spec"]
        cfg = yaml.safe_load(objs[("ConfigMap", "ioqos-node-config")]["data"]["config.yaml"])
        checks = [
            ("plugin pull secret", ds.get("imagePullSecrets") == [{"name": "regcred"}]),
            ("extender pull secret", ext.get("imagePullSecrets") == [{"name": "regcred"}]),
            ("plugin --log-level=debug", "--log-level=debug" in ds["containers"][0]["args"]),
            ("extender --log-level=warn", "--log-level=warn" in ext["containers"][0]["args"]),
            ("plugin tolerations", ds["tolerations"] == [{"key": "storage", "operator": "Exists"}]),
            # Helm merges maps given in values over the defaults
            ("plugin resources", ds["containers"][0]["resources"] ==
             {"requests": {"cpu": "20m", "memory": "32Mi"}, "limits": {"memory": "256Mi"}}),
            ("plugin priority class", ds["priorityClassName"] == "io-critical"),
            ("extender resources", ext["containers"][0]["resources"]["limits"] == {"memory": "1Gi"}),
            ("extender nodeSelector", ext["nodeSelector"] ==
             {"kubernetes.io/os": "linux", "node-role.kubernetes.io/control-plane": ""}),
            ("one placement policy: the extender's --policy follows the node config",
             "--policy=most-allocated" in ext["containers"][0]["args"] and
             cfg["placementPolicy"] == "most-allocated"),
        ]
        for what, good in checks:
            (ok if good else fail)("values: %s" % what)
    except (Broken, KeyError) as e:
        fail("values: %s" % e)
    # a pool config merges over plugin.config, and the DaemonSets split the nodes
    try:
        objs = objects_by(helm_template(helm, {"plugin": {"poolLabel": "example.com/disks", "pools": [
            {"name": "fast", "config": {"allocatableFraction": 0.7}}, {"name": "archive"}]}}))
        fast = yaml.safe_load(objs[("ConfigMap", "ioqos-node-config-fast")]["data"]["config.yaml"])
        dflt = objs[("DaemonSet", "ioqos-plugin")]["spec"]["template"]["spec"]
        arch = objs[("DaemonSet", "ioqos-plugin-archive")]["spec"]["template"]["spec"]
        expr = dflt["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"][0]["matchExpressions"]
        checks = [
            ("pool config merged over plugin.config",
             fast["allocatableFraction"] == 0.7 and fast["units"]["iops"] == 100),
            ("the default DaemonSet stays off both pools",
             expr == [{"key": "example.com/disks", "operator": "NotIn", "values": ["fast", "archive"]}]),
            ("pool archive's DaemonSet on its nodes, with its ConfigMap",
             arch["nodeSelector"] == {"kubernetes.io/os": "linux", "example.com/disks": "archive"} and
             [x for x in arch["volumes"] if x["name"] == "config"][0]["configMap"]["name"] ==
             "ioqos-node-config-archive"),
        ]
        for what, good in checks:
            (ok if good else fail)("pools: %s" % what)
        a = helm_template(helm, {})
        b = helm_template(helm, {"plugin": {"config": {"allocatableFraction": 0.7}}})
        ck = [[o["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
               for o in objs_ if o["kind"] == "DaemonSet"] for objs_ in (a, b)]
        (ok if ck[0] != ck[1] else fail)("a changed node config changes the DaemonSet's pod template (a rollout)")
    except (Broken, KeyError, IndexError) as e:
        fail("pools: %s" % e)
    # NOTES.txt: the next step for each way to install
    # (values, a phrase NOTES must hold, or with "!" must not)
    for values, want in [({}, "calibrate"), ({}, "scheduler.wiring"), ({"mode": "dra"}, "ioqos.io/mode=dra"),
                         ({"mode": "dra"}, "!extender-certs.sh"),
                         ({"scheduler": {"wiring": "in-place"}}, "kube-scheduler-config.yaml"),
                         ({"scheduler": {"wiring": "in-place"}}, "-i 10.96.0.88"),
                         ({}, "scripts/extender-certs.sh"), ({"tls": {"generate": True}}, "!extender-certs.sh")]:
        with tempfile.TemporaryDirectory() as tmp:
            p = run([helm, "install", "ioqos", CHART, "-n", NS, "--dry-run=client", "-f", values_file(tmp, values)])
        notes = p.stdout.split("NOTES:", 1)[-1] if "NOTES:" in p.stdout else ""
        good = (want[1:] not in notes) if want.startswith("!") else (want in notes)
        (ok if p.returncode == 0 and notes and good else fail)(
            "NOTES with %s %s %r%s" % (json.dumps(values) if values else "the defaults",
                                       "do not name" if want.startswith("!") else "name", want.lstrip("!"),
                                       "" if p.returncode == 0 else ": " + p.stderr.strip()[-300:]))
    finish()


def openssl(*args, data=None):
    p = subprocess.run(["openssl"] + list(args), input=data, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def cmd_tls(helm):
    import base64
    if not shutil.which("openssl"):
        fail("openssl is not installed: the generated certificates cannot be checked")
        finish()
    try:
        objs = objects_by(helm_template(helm, {"tls": {"generate": True}, "scheduler": {"wiring": "in-place"}},
                                        ns="storage-qos"))
        srv = objs[("Secret", "ioqos-scheduler-ext-tls")]
        cli = objs[("Secret", "ioqos-scheduler-ext-client")]
    except (Broken, KeyError) as e:
        fail("tls.generate: %s" % e)
        finish()
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for name, s in (("server", srv), ("client", cli)):
            if s.get("type") != "kubernetes.io/tls":
                fail("%s Secret: type %s, not kubernetes.io/tls" % (name, s.get("type")))
            for k in ("tls.crt", "tls.key", "ca.crt"):
                path = os.path.join(tmp, "%s-%s" % (name, k))
                with open(path, "wb") as f:
                    f.write(base64.b64decode(s["data"][k]))
                files[name, k] = path
        (ok if open(files["server", "ca.crt"], "rb").read() == open(files["client", "ca.crt"], "rb").read()
         else fail)("both Secrets carry the one CA")
        for name, purpose in (("server", "sslserver"), ("client", "sslclient")):
            rc, out = openssl("verify", "-purpose", purpose, "-CAfile", files[name, "ca.crt"], files[name, "tls.crt"])
            (ok if rc == 0 else fail)("the %s certificate verifies against the CA for %s: %s" % (
                name, purpose, out.strip()[-200:]))
            rc, crt_mod = openssl("x509", "-noout", "-pubkey", "-in", files[name, "tls.crt"])
            rc2, key_mod = openssl("pkey", "-pubout", "-in", files[name, "tls.key"])
            (ok if rc == 0 and rc2 == 0 and crt_mod == key_mod else fail)("the %s key matches its certificate" % name)
        rc, out = openssl("x509", "-noout", "-subject", "-ext", "subjectAltName", "-in", files["server", "tls.crt"])
        want = ["CN = ioqos-scheduler-ext.storage-qos.svc", "DNS:ioqos-scheduler-ext.storage-qos.svc",
                "DNS:ioqos-scheduler-ext.storage-qos.svc.cluster.local", "IP Address:10.96.0.88"]
        missing = [w for w in want if w not in out]
        (ok if rc == 0 and not missing else fail)("server certificate names the Service and its IP%s" % (
            ": missing %s in %s" % (missing, out.strip()) if missing else ""))
        rc, out = openssl("x509", "-noout", "-subject", "-in", files["client", "tls.crt"])
        # the extender's --tls-client-subject=ioqos-scheduler requires this CN
        (ok if rc == 0 and re.search(r"CN ?= ?ioqos-scheduler$", out.strip()) else fail)(
            "client certificate CN is ioqos-scheduler: %s" % out.strip())
        # control: a certificate from another CA does not verify
        rc, _ = openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=other", "-days", "1",
                        "-keyout", os.path.join(tmp, "o.key"), "-out", os.path.join(tmp, "o.crt"))
        rc, out = openssl("verify", "-CAfile", os.path.join(tmp, "o.crt"), files["client", "tls.crt"])
        (ok if rc != 0 else fail)("control: the client certificate does not verify against another CA")
    # generate off: no Secret, the Deployments name the operator's Secrets
    try:
        objs = objects_by(helm_template(helm, {"scheduler": {"wiring": "second-scheduler"},
                                               "tls": {"serverSecret": "my-ext-tls", "clientSecret": "my-client"}}))
        secrets = [k for k in objs if k[0] == "Secret"]
        ext = objs[("Deployment", "ioqos-scheduler-ext")]["spec"]["template"]["spec"]["volumes"]
        sch = objs[("Deployment", "ioqos-scheduler")]["spec"]["template"]["spec"]["volumes"]
        (ok if not secrets else fail)("tls.generate false: the chart makes no Secret (%s)" % secrets)
        (ok if {"name": "tls", "secret": {"secretName": "my-ext-tls", "defaultMode": 288}} in ext and
         {"name": "extender-client-tls", "secret": {"secretName": "my-client", "defaultMode": 288}} in sch
         else fail)("existing Secrets: the extender and the second scheduler mount the ones named")
    except (Broken, KeyError) as e:
        fail("tls existing Secrets: %s" % e)
    finish()


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("lint", "compare", "values", "tls"):
        print(__doc__)
        sys.exit(2)
    helm = sys.argv[1]
    if not os.access(helm, os.X_OK):
        fail("%s is not an executable helm (tests/manifests/helm/build-helm.sh builds it)" % helm)
        finish()
    kubectl()
    try:
        {"lint": cmd_lint, "compare": cmd_compare, "values": cmd_values, "tls": cmd_tls}[sys.argv[2]](helm)
    except Broken as e:
        fail(str(e))
        finish()


if __name__ == "__main__":
    main()

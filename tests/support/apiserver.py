#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the Kubernetes API server, for tests (python http.server).

Serves core/v1 pods, nodes and events, and resource.k8s.io/v1 resourceslices
(cluster-scoped) and resourceclaims, from memory with the wire behaviour ioqos
relies on; the code under test talks to it with its real libcurl client:

- list: GET /api/v1/RES, /api/v1/namespaces/NS/RES (and the same under
  /apis/resource.k8s.io/v1), limit/continue pagination, fieldSelector (a=b,
  a==b, a!=b, comma-separated; dotted paths such as spec.nodeName; for the
  resource.k8s.io kinds only the field labels the real server supports, 400
  otherwise)
- watch: the same with watch=1: chunked {"type":..,"object":..} lines from
  resourceVersion on (none or 0: the current objects as ADDED first), BOOKMARK
  events every second with allowWatchBookmarks=true, an ERROR event with a 410
  Status for a resourceVersion older than the last compaction (compact() ends
  the open streams), the end of the stream at timeoutSeconds
- get: GET .../RES/NAME
- create: POST .../RES (409 if the name is taken; metadata.generateName:
  the name is that + 5 random characters; creationTimestamp set)
- replace: PUT .../RES/NAME (404 if absent, 409 Conflict for a
  metadata.resourceVersion or uid that is not the stored one; uid and
  creationTimestamp kept)
- delete: DELETE .../RES/NAME (200 with the object; 409 for DeleteOptions
  preconditions that fail)
- resource.k8s.io only: metadata.generation (1 at create, +1 when the spec
  changes), ResourceSlice validation (422: driver, pool, node selection,
  device names, limits; driver and nodeName immutable) and quantities in
  canonical form ("1000" -> "1k": capacity values and request policies, on
  every store, test helpers included), as the real server does
- merge patch: PATCH .../RES/NAME, application/merge-patch+json only (RFC 7386;
  415 otherwise, 422 if the patch changes metadata.uid)
- pods/binding: POST .../pods/NAME/binding (409 for a UID precondition that
  fails or a pod already bound)
- a bearer token check (token=...), a log of every request, failure and delay
  injection (inject())

In-process use (Python tests):

    api = ApiServer(token=None).start()     # api.url
    api.put({"kind": "Pod", "metadata": {...}, ...})   # ADDED / MODIFIED event
    api.delete("Pod", "ns", "name"); api.compact(); api.close_watches()
    api.inject(path="/api/v1/nodes/", method="PATCH", status=500, count=2)
    api.slices(node="node-a", driver="ioqos.io"); api.put_claim(claim)
    api.delete_claim("ns", "name")
    api.wait(lambda: api.events, what="an event"); api.stop()

State the tests read: nodes (name -> Node) and pods ((namespace, name) -> Pod)
are the live stores (objects[KIND] for any kind, keyed the same way); events
(the Event objects created, in order), patches ((namespace, name, patch) for
namespaced objects, (name, patch) for cluster-scoped ones), bindings
((namespace, name, uid, node)), requests ([{"method","path","body",
"contentType"}]); slices(node, driver) and claim(ns, name) read the
resource.k8s.io stores.

As a process (tests/kube/test_kube_client.c):

    apiserver.py [--port 0] [--token T] [--port-file F]
                 [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]]

prints "listening on PORT" (and writes PORT to --port-file) when ready, and
serves these besides the API (no token, never logged nor failed):

  POST   /_admin/objects            body: an object with its kind -> create/replace
  GET    /_admin/objects            every object
  DELETE /_admin/objects/KIND/NS/NAME      (NS "-" for cluster-scoped kinds)
  POST   /_admin/compact            forget history: watches from older versions get 410
  POST   /_admin/fail               body: {"path_prefix": "...", "status": 500, "count": N,
                                     "delay": seconds before the answer (default 0),
                                     "watch": true (only watch requests; default: any)}
  POST   /_admin/unfail             remove every injected failure
  POST   /_admin/watch-mode         body: {"mode": "normal" | "error" | "close" | "stall",
                                     "code": 500}: new watches send one ERROR event with that
                                     code and end, or end at once with nothing in them, or
                                     send nothing at all (no bookmark either) on an open
                                     connection until close-watches
  POST   /_admin/close-watches      end every open watch stream now
  GET    /_admin/requests           the request log
  GET    /_admin/events             the events created
"""
import argparse
import bisect
import copy
import json
import os
import random
import re
import ssl
import sys
import threading
import time
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cvwait import cv_wait  # noqa: E402

# URL path prefix of an API group -> (apiVersion, {resource name: (kind, namespaced)})
GROUPS = {
    ("api", "v1"): ("v1", {"pods": ("Pod", True), "nodes": ("Node", False), "events": ("Event", True)}),
    ("apis", "resource.k8s.io", "v1"): ("resource.k8s.io/v1", {
        "resourceslices": ("ResourceSlice", False), "resourceclaims": ("ResourceClaim", True)}),
}
RESOURCES = GROUPS[("api", "v1")][1]  # the core group
KINDS = {kind: (res, namespaced) for _, group in GROUPS.values() for res, (kind, namespaced) in group.items()}
API_VERSIONS = {kind: api_version for api_version, group in GROUPS.values() for kind, _ in group.values()}
# the field labels of fieldSelector (kinds not listed: any path, unchecked)
FIELD_LABELS = {"ResourceSlice": {"metadata.name", "spec.nodeName", "spec.driver"},
                "ResourceClaim": {"metadata.name", "metadata.namespace"}}
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # what the real server's generateName suffix is made of
SI_SUFFIXES = ["", "k", "M", "G", "T", "P", "E"]
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_DEVICES, MAX_ATTRS_CAPS = 128, 32  # per ResourceSlice, per device
REASONS = {400: "BadRequest", 401: "Unauthorized", 404: "NotFound", 405: "MethodNotAllowed",
           409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid",
           500: "InternalError"}
MERGE_PATCH = "application/merge-patch+json"


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch; returns a new value, target is left alone."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def status(code, message, reason=None):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason or REASONS.get(code) or HTTPStatus(code).phrase.replace(" ", ""),
            "code": code}


def selector_match(obj, sel):
    """fieldSelector terms: path=value, path==value, path!=value."""
    for term in filter(None, (sel or "").split(",")):
        neg = "!=" in term
        f, v = re.split(r"!=|==|=", term, maxsplit=1)
        cur = obj
        for part in f.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        if ((cur if isinstance(cur, str) else "") == v) == neg:
            return False
    return True


def check_field_labels(kind, sel):
    """400, as the real server answers, for a fieldSelector naming a field
    the kind does not index (kinds without a FIELD_LABELS entry: unchecked)."""
    labels = FIELD_LABELS.get(kind)
    for term in filter(None, (sel or "").split(",")):
        f = re.split(r"!=|==|=", term, maxsplit=1)[0]
        if labels is not None and f not in labels:
            raise Failure(400, 'field label not supported: %s' % f)
        if f == term:
            raise Failure(400, "invalid selector: '%s'; can't understand '%s'" % (sel, term))


def resource_of(kind):
    """The qualified resource name of a kind, as error messages say it: "pods",
    "resourceslices.resource.k8s.io"."""
    group = API_VERSIONS[kind].rpartition("/")[0]
    return KINDS[kind][0] + ("." + group if group else "")


def canonical_quantity(q):
    """A plain non-negative integer quantity in the real server's canonical
    form: multiples of 1000 with an SI suffix ("2000" -> "2k", "1500" stays,
    "0" stays). Anything else is returned as it is."""
    if isinstance(q, int) and not isinstance(q, bool) and q >= 0:
        q = str(q)
    if not isinstance(q, str) or not q.isascii() or not q.isdigit():
        return q
    v, exp = int(q), 0
    while v and v % 1000 == 0 and exp + 1 < len(SI_SUFFIXES):
        v, exp = v // 1000, exp + 1
    return "%d%s" % (v, SI_SUFFIXES[exp])


def canonical_slice(obj):
    """Canonicalises the quantities of a ResourceSlice in place: each
    spec.devices[].capacity[*] value and requestPolicy (default, validValues,
    validRange min/max/step)."""
    for dev in ((obj.get("spec") or {}).get("devices") or []):
        for cap in ((dev.get("capacity") if isinstance(dev, dict) else None) or {}).values():
            if not isinstance(cap, dict):
                continue
            if "value" in cap:
                cap["value"] = canonical_quantity(cap["value"])
            pol = cap.get("requestPolicy")
            if not isinstance(pol, dict):
                continue
            if "default" in pol:
                pol["default"] = canonical_quantity(pol["default"])
            if isinstance(pol.get("validValues"), list):
                pol["validValues"] = [canonical_quantity(v) for v in pol["validValues"]]
            rng = pol.get("validRange")
            if isinstance(rng, dict):
                for k in ("min", "max", "step"):
                    if k in rng:
                        rng[k] = canonical_quantity(rng[k])
    return obj


def slice_errors(obj, old=None):
    """What the real server's validation refuses in a ResourceSlice (a subset):
    a list of "field: problem" strings, empty when it is valid. old: the
    stored slice of an update (driver and nodeName are immutable)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return ["spec: Required value"]
    errs = []
    if not spec.get("driver"):
        errs.append("spec.driver: Required value")
    pool = spec.get("pool")
    if not isinstance(pool, dict) or not pool.get("name"):
        errs.append("spec.pool.name: Required value")
    else:
        count = pool.get("resourceSliceCount")
        if not isinstance(count, int) or count <= 0:
            errs.append("spec.pool.resourceSliceCount: Invalid value: %r: must be greater than zero" % (count,))
        if not isinstance(pool.get("generation", 0), int) or pool.get("generation", 0) < 0:
            errs.append("spec.pool.generation: Invalid value: must be greater than or equal to 0")
    chosen = [f for f in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection") if spec.get(f)]
    if len(chosen) != 1:
        errs.append("spec: Invalid value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                    "`perDeviceNodeSelection` is required (got %s)" % (", ".join(chosen) or "none"))
    devices = spec.get("devices") or []
    if not isinstance(devices, list):
        return errs + ["spec.devices: Invalid value: not a list"]
    if len(devices) > MAX_DEVICES:
        errs.append("spec.devices: Too many: %d: must have at most %d items" % (len(devices), MAX_DEVICES))
    seen = set()
    for i, dev in enumerate(devices):
        name = dev.get("name") if isinstance(dev, dict) else None
        if not isinstance(name, str) or not name:
            errs.append("spec.devices[%d].name: Required value" % i)
            continue
        if len(name) > 63 or not DNS_LABEL.match(name):
            errs.append("spec.devices[%d].name: Invalid value: %r: not a DNS label" % (i, name))
        if name in seen:
            errs.append("spec.devices[%d].name: Duplicate value: %r" % (i, name))
        seen.add(name)
        n = len(dev.get("attributes") or {}) + len(dev.get("capacity") or {})
        if n > MAX_ATTRS_CAPS:
            errs.append("spec.devices[%d]: Invalid value: %d attributes and capacities, at most %d"
                        % (i, n, MAX_ATTRS_CAPS))
    if old is not None:
        for f in ("driver", "nodeName"):
            if spec.get(f) != (old.get("spec") or {}).get(f):
                errs.append("spec.%s: Invalid value: %r: field is immutable" % (f, spec.get(f)))
    return errs


class Failure(Exception):
    """An API error answer: a Status object with its HTTP code."""

    def __init__(self, code, message, reason=None):
        super().__init__(message)
        self.code, self.body = code, status(code, message, reason)


class _Knob:
    """A test-settable attribute that stands for one injection rule: setting it
    replaces the rule (a false value removes it), reading it gives the rule's
    `field` (what is left of its count, its delay or its status)."""

    def __init__(self, field, unset, method=None, path="", **fixed):
        self.field, self.unset, self.method, self.path, self.fixed = field, unset, method, path, fixed

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, api, owner=None):
        if api is None:
            return self
        rule = api._knobs.get(self.name)
        return rule[self.field] if rule else self.unset

    def __set__(self, api, value):
        with api.cv:
            old = api._knobs.pop(self.name, None)
            api.rules = [r for r in api.rules if r is not old]
            if value:
                args = dict(self.fixed, **{self.field: value})
                api._knobs[self.name] = api.inject(method=self.method, path=self.path, **args)


class ApiServer:
    def __init__(self, token=None, admin=False, port=0, bookmark_interval=1.0, tls_cert=None,
                 tls_key=None, tls_client_ca=None):
        self.token = token
        self.admin = admin
        self.bookmark_interval = bookmark_interval
        self.cv = threading.Condition()  # an RLock: wait() predicates may call back in
        self.rv = 1000
        self.min_rv = 0          # watches from an older resourceVersion get 410 Gone
        self.objects = {kind: {} for kind in KINDS}  # kind -> key -> object
        self.nodes = self.objects["Node"]  # name -> Node
        self.pods = self.objects["Pod"]    # (namespace, name) -> Pod
        self.history = []        # (rv, type, kind, object), in rv order
        self.history_rvs = []    # their rvs, for bisect
        self.patches = []
        self.bindings = []
        self.requests = []
        self.rules = []          # injected failures and delays, see inject()
        self._knobs = {}
        self.watch_gen = 0       # close_watches() ends the streams of older generations
        # how new watch streams behave: "normal"; "error" (one ERROR event
        # with watch_error_code, then the end); "close" (ends at once, empty);
        # "stall" (headers, then silence on an open connection: a hung server)
        self.watch_mode, self.watch_error_code = "normal", 500
        self.stopping = False
        self.httpd = _Server(("127.0.0.1", port), _Handler)
        self.httpd.api = self
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        if tls_cert:
            # HTTPS; with tls_client_ca a client certificate from that CA is
            # required (the handshake fails without one), its CN logged
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tls_cert, tls_key)
            if tls_client_ca:
                ctx.load_verify_locations(tls_client_ca)
                ctx.verify_mode = ssl.CERT_REQUIRED
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
            self.url = "https://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        with self.cv:
            self.stopping = True
            self.cv.notify_all()
        if self.thread.is_alive():
            self.httpd.shutdown()
        self.httpd.server_close()

    # ---- the store; every change is a watch event ----
    @staticmethod
    def _key(kind, ns, name):
        return (ns or "", name) if KINDS[kind][1] else name

    def _record(self, etype, kind, obj):
        self.history.append((self.rv, etype, kind, copy.deepcopy(obj)))
        self.history_rvs.append(self.rv)
        self.cv.notify_all()

    def put(self, obj, kind=None):
        """Creates or replaces an object (ADDED or MODIFIED); returns a copy."""
        with self.cv:
            obj = copy.deepcopy(obj)
            kind = kind or obj["kind"]
            obj.setdefault("kind", kind)
            obj.setdefault("apiVersion", API_VERSIONS[kind])
            md = obj.setdefault("metadata", {})
            self.rv += 1
            md["resourceVersion"] = str(self.rv)
            md.setdefault("uid", "%08x-0000-4000-8000-%012x" % (self.rv, self.rv))
            if kind == "ResourceSlice":
                canonical_slice(obj)
            store = self.objects[kind]
            key = self._key(kind, md.get("namespace"), md["name"])
            etype = "MODIFIED" if key in store else "ADDED"
            store[key] = obj
            self._record(etype, kind, obj)
            return copy.deepcopy(obj)

    def delete(self, kind, ns, name):
        """Removes an object (DELETED); returns it, or None if there was none."""
        with self.cv:
            obj = self.objects[kind].pop(self._key(kind, ns, name), None)
            if obj is None:
                return None
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self._record("DELETED", kind, obj)
            return copy.deepcopy(obj)

    def _stored(self, kind, ns, name):
        return self.objects[kind].get(self._key(kind, ns, name))

    def get(self, kind, ns, name):
        """A copy of one object, or None. The server's GET of one object goes
        through here (and only that: a test may wrap it to fake a stale read)."""
        with self.cv:
            return copy.deepcopy(self._stored(kind, ns, name))

    def compact(self):
        """Forgets history and ends the open watch streams: watches from any
        older resourceVersion get 410 Gone (an ERROR event), so their clients
        list again."""
        with self.cv:
            self.rv += 1
            self.min_rv = self.rv
            self.history, self.history_rvs = [], []
            self.close_watches()

    def close_watches(self):
        """Ends every open watch stream (clients reconnect from their version)."""
        with self.cv:
            self.watch_gen += 1
            self.cv.notify_all()

    @property
    def events(self):
        """The Event objects created, in order."""
        with self.cv:
            return list(self.objects["Event"].values())

    # ---- injection ----
    def inject(self, path="", method=None, status=None, delay=0.0, count=None, message="injected failure",
               watch=None):
        """Requests whose method is `method` (None: any) and whose URL path
        matches the regular expression `path` from its start wait `delay`
        seconds, then get `status` (if set) as a Status with `message`. Applies
        to the next `count` of them (None: until removed from api.rules);
        watch=True: only to watch requests, False: only to others.
        Returns the rule (a dict; its "count" is what is left)."""
        rule = {"path": re.compile(path), "method": method, "status": status, "delay": delay,
                "count": count, "message": message, "watch": watch}
        with self.cv:
            self.rules.append(rule)
        return rule

    # shortcuts the tests set as attributes
    delay = _Knob("delay", 0)  # every request
    pod_get_delay = _Knob("delay", 0, "GET", r"/api/v1/namespaces/[^/]+/pods/[^/]+$")
    fail_patch = _Knob("count", 0, "PATCH", r"/api/v1/nodes/", status=500)
    fail_lists = _Knob("count", 0, "GET", r"/api/v1/nodes$", status=500)
    binding_status = _Knob("status", None, "POST", r"/api/v1/namespaces/[^/]+/pods/[^/]+/binding$",
                           message="binding refused by test")

    # ---- helpers for tests ----
    def count(self, method, prefix):
        """Requests seen with this method and a path (with query) starting with prefix."""
        with self.cv:
            return sum(1 for r in self.requests if r["method"] == method and r["path"].startswith(prefix))

    def annotation(self, node, key):
        with self.cv:
            return self.nodes[node]["metadata"].get("annotations", {}).get(key)

    def wait(self, pred, timeout=20.0, what="condition"):
        """Waits until pred() (called with the lock held) is true."""
        cv_wait(self.cv, pred, timeout, what, "API server stand-in")

    # thin adapters for the names the tests use
    def put_pod(self, pod):
        return self.put(pod, "Pod")

    add_pod = put_pod

    def set_node(self, node):
        return self.put(node, "Node")

    def delete_pod(self, ns, name):
        return self.delete("Pod", ns, name)

    def delete_node(self, name):
        return self.delete("Node", None, name)

    def pod(self, ns, name):
        return self.get("Pod", ns, name)

    def slices(self, node=None, driver=None):
        """Copies of the stored ResourceSlices (by name), those of one
        spec.nodeName and/or spec.driver if given."""
        with self.cv:
            return [copy.deepcopy(o) for _, o in sorted(self.objects["ResourceSlice"].items())
                    if (node is None or (o.get("spec") or {}).get("nodeName") == node)
                    and (driver is None or (o.get("spec") or {}).get("driver") == driver)]

    def put_slice(self, obj):
        return self.put(obj, "ResourceSlice")

    def delete_slice(self, name):
        return self.delete("ResourceSlice", None, name)

    def put_claim(self, obj):
        """Stores a ResourceClaim as given (status.allocation, reservedFor: as
        the scheduler writes them), unvalidated; returns the stored copy."""
        return self.put(obj, "ResourceClaim")

    def claim(self, ns, name):
        return self.get("ResourceClaim", ns, name)

    def delete_claim(self, ns, name):
        return self.delete("ResourceClaim", ns, name)

    expire_watches = compact

    # ---- serving ----
    def _before(self, method, path, body, headers, client_cn=None):
        """Logs the request, checks the token, applies injected rules; raises Failure."""
        url = urllib.parse.urlsplit(path)
        upath = url.path
        is_watch = dict(urllib.parse.parse_qsl(url.query)).get("watch") in ("1", "true")
        with self.cv:
            self.requests.append({"method": method, "path": path, "body": body.decode(errors="replace"),
                                  "contentType": headers.get("Content-Type", ""),
                                  "clientCN": client_cn})
            self.cv.notify_all()
            if self.token is not None and headers.get("Authorization") != "Bearer " + self.token:
                raise Failure(401, "Unauthorized")
            hits = []
            for r in self.rules:
                if (r["count"] is None or r["count"] > 0) and r["method"] in (None, method) \
                        and r["watch"] in (None, is_watch) and r["path"].match(upath):
                    if r["count"] is not None:
                        r["count"] -= 1
                    hits.append(r)
        delay = sum(r["delay"] for r in hits)
        if delay:
            time.sleep(delay)
        for r in hits:
            if r["status"]:
                raise Failure(r["status"], r["message"])

    def _route(self, parts):
        """/api/v1/[namespaces/NS/]RES[/NAME[/SUB]] (or /apis/GROUP/VERSION/...)
        -> (kind, ns, name, sub)."""
        for prefix, (_, resources) in GROUPS.items():
            if tuple(parts[:len(prefix)]) == prefix:
                rest = parts[len(prefix):]
                break
        else:
            raise Failure(404, "the server could not find the requested resource")
        ns = None
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        if not rest or rest[0] not in resources or len(rest) > 3:
            raise Failure(404, "the server could not find the requested resource")
        kind, namespaced = resources[rest[0]]
        if (ns is not None and not namespaced) or (ns is None and namespaced and len(rest) > 1):
            raise Failure(404, "the server could not find the requested resource")
        return kind, ns, (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)

    def _handle(self, method, kind, ns, name, sub, q, body, headers):
        """One non-watch request, with the lock held: (code, answer)."""
        res = resource_of(kind)
        if name is None:
            if method == "GET":
                return 200, self._list(kind, ns, q)
            if method == "POST" and (ns is not None or not KINDS[kind][1]):
                return 201, self._create(kind, ns, json.loads(body))
            raise Failure(405, "method %s not allowed on %s" % (method, res))
        if sub == "binding" and kind == "Pod" and method == "POST":
            return 201, self._bind(ns, name, json.loads(body))
        if sub is not None:
            raise Failure(404, "the server could not find the requested resource")
        if method == "PATCH":
            ct = headers.get("Content-Type", "")
            if ct != MERGE_PATCH:
                raise Failure(415, "the body of the request was in an unknown format (%s); "
                                   "accepted: %s" % (ct, MERGE_PATCH))
        obj = self.get(kind, ns, name) if method == "GET" else self._stored(kind, ns, name)
        if obj is None:
            raise Failure(404, '%s "%s" not found' % (res, name))
        if method == "GET":
            return 200, obj
        if method == "PATCH":
            patch = json.loads(body)
            uid = (patch.get("metadata") or {}).get("uid")
            if uid and uid != obj["metadata"].get("uid"):
                raise Failure(422, "metadata.uid: field is immutable")
            new = merge_patch(copy.deepcopy(obj), patch)
            self._validate(kind, new, obj)
            self.patches.append(((ns, name) if KINDS[kind][1] else (name,)) + (patch,))
            return 200, self.put(new, kind)
        if method == "PUT":
            return 200, self._replace(kind, ns, name, obj, json.loads(body))
        if method == "DELETE":
            opts = json.loads(body) if body.strip() else {}
            pre = (opts or {}).get("preconditions") or {}
            md = obj["metadata"]
            if pre.get("uid") and pre["uid"] != md.get("uid"):
                raise Failure(409, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                              % (pre["uid"], md.get("uid")), "Conflict")
            if pre.get("resourceVersion") and pre["resourceVersion"] != md.get("resourceVersion"):
                raise Failure(409, "Precondition failed: ResourceVersion in precondition: %s, "
                                   "ResourceVersion in object meta: %s"
                              % (pre["resourceVersion"], md.get("resourceVersion")), "Conflict")
            return 200, self.delete(kind, ns, name)
        raise Failure(405, "method %s not allowed on %s" % (method, res))

    @staticmethod
    def _versioned(kind):
        """Kinds outside the core group get metadata.generation."""
        return API_VERSIONS[kind] != "v1"

    def _validate(self, kind, obj, old=None):
        """Raises 422 Invalid for what the real server refuses; bumps
        metadata.generation of an update whose spec changed."""
        if kind == "ResourceSlice":
            errs = slice_errors(obj, old)
            if errs:
                raise Failure(422, '%s.%s "%s" is invalid: %s' % (
                    kind, API_VERSIONS[kind].rpartition("/")[0], obj["metadata"].get("name", ""),
                    "; ".join(errs)), "Invalid")
        if self._versioned(kind) and old is not None:
            gen = old["metadata"].get("generation", 1)
            spec_old, spec_new = old.get("spec"), obj.get("spec")
            if kind == "ResourceSlice":  # compare what would be stored
                spec_old = canonical_slice(copy.deepcopy(old)).get("spec")
                spec_new = canonical_slice(copy.deepcopy(obj)).get("spec")
            obj["metadata"]["generation"] = gen + 1 if spec_new != spec_old else gen

    def _create(self, kind, ns, obj):
        """POST: a new object; generateName, creationTimestamp, generation."""
        md = obj.setdefault("metadata", {})
        if ns is not None:
            md["namespace"] = ns
        if not md.get("name") and md.get("generateName"):
            base = md["generateName"][:58]  # the real server keeps names within 63
            while True:
                md["name"] = base + "".join(random.choice(NAME_CHARS) for _ in range(5))
                if self._stored(kind, ns, md["name"]) is None:
                    break
        if not md.get("name"):
            raise Failure(422, "metadata.name: Required value: name or generateName is required", "Invalid")
        if self._stored(kind, ns, md["name"]) is not None:
            raise Failure(409, '%s "%s" already exists' % (resource_of(kind), md["name"]), "AlreadyExists")
        md["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if self._versioned(kind):
            md["generation"] = 1
        self._validate(kind, obj)
        return self.put(obj, kind)

    def _replace(self, kind, ns, name, cur, obj):
        """PUT: replaces the stored object `cur`; 409 for a stale resourceVersion."""
        md = obj.setdefault("metadata", {})
        if md.get("name") != name:
            raise Failure(400, "the name of the object (%s) does not match the name on the URL (%s)"
                          % (md.get("name", ""), name))
        if ns is not None:
            if md.get("namespace") not in (None, "", ns):
                raise Failure(400, "the namespace of the provided object does not match the namespace "
                                   "sent on the request")
            md["namespace"] = ns
        cmd = cur["metadata"]
        if md.get("uid") and md["uid"] != cmd.get("uid"):
            raise Failure(409, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                          % (md["uid"], cmd.get("uid")), "Conflict")
        if md.get("resourceVersion") and md["resourceVersion"] != cmd.get("resourceVersion"):
            raise Failure(409, 'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                               'please apply your changes to the latest version and try again'
                          % (resource_of(kind), name), "Conflict")
        md["uid"] = cmd.get("uid")
        for k in ("creationTimestamp", "generation"):
            if k in cmd:
                md[k] = cmd[k]
            else:
                md.pop(k, None)
        self._validate(kind, obj, cur)
        return self.put(obj, kind)

    def _bind(self, ns, name, b):
        pod = copy.deepcopy(self._stored("Pod", ns, name))
        if pod is None:
            raise Failure(404, 'pods "%s" not found' % name)
        target = b.get("target") or {}
        if b.get("kind") != "Binding" or target.get("kind") != "Node" or not target.get("name"):
            raise Failure(400, "not a Binding to a Node")
        uid = (b.get("metadata") or {}).get("uid")
        if uid and uid != pod["metadata"].get("uid"):
            raise Failure(409, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                          % (uid, pod["metadata"].get("uid")))
        bound = (pod.get("spec") or {}).get("nodeName")
        if bound:
            raise Failure(409, "pod %s is already assigned to node %s" % (name, bound))
        pod.setdefault("spec", {})["nodeName"] = target["name"]
        self.put(pod, "Pod")
        self.bindings.append((ns, name, uid, target["name"]))
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    @staticmethod
    def _matches(obj, ns, sel):
        return (ns is None or obj["metadata"].get("namespace") == ns) and selector_match(obj, sel)

    def _list(self, kind, ns, q):
        """One page, sorted by key; the continue token carries the first page's
        resourceVersion (as the real API's snapshot does) and the last key."""
        sel, limit = q.get("fieldSelector"), int(q.get("limit") or 0)
        rv, after = self.rv, None
        if q.get("continue"):
            rv, after = json.loads(q["continue"])
            after = tuple(after) if isinstance(after, list) else after
        keys = sorted(k for k, o in self.objects[kind].items()
                      if (after is None or k > after) and self._matches(o, ns, sel))
        page = keys[:limit] if limit else keys
        meta = {"resourceVersion": str(rv)}
        if len(page) < len(keys):
            meta["continue"] = json.dumps([rv, page[-1]], separators=(",", ":"))
        return {"kind": kind + "List", "apiVersion": API_VERSIONS[kind], "metadata": meta,
                "items": [self.objects[kind][k] for k in page]}

    def _watch(self, h, kind, ns, q):
        sel = q.get("fieldSelector")
        since = int(q.get("resourceVersion") or 0)
        deadline = time.monotonic() + float(q.get("timeoutSeconds") or 300)
        bookmarks = q.get("allowWatchBookmarks") in ("1", "true")
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.close_connection = True
        with self.cv:
            gen = self.watch_gen
            mode, code = self.watch_mode, self.watch_error_code
            first, expired = [], None
            if not since:  # no version: the current state first, as ADDED
                first = [("ADDED", json.dumps(o)) for o in self._list(kind, ns, {"fieldSelector": sel})["items"]]
                since = self.rv
            elif since < self.min_rv:
                expired = "too old resource version: %d (%d)" % (since, self.min_rv)
        next_bookmark = time.monotonic() + self.bookmark_interval
        try:
            if mode == "stall":
                with self.cv:
                    while not self.stopping and self.watch_gen == gen and time.monotonic() < deadline:
                        self.cv.wait(0.2)
            if mode != "normal":
                if mode == "error":
                    h.chunk(json.dumps({"type": "ERROR", "object": status(code, "injected watch error")}))
                h.wfile.write(b"0\r\n\r\n")
                h.wfile.flush()
                return
            for t, o in first:
                h.chunk('{"type":"%s","object":%s}' % (t, o))
            if expired:
                h.chunk(json.dumps({"type": "ERROR", "object": status(410, expired)}))
            while not expired:
                with self.cv:
                    if self.stopping or self.watch_gen != gen or time.monotonic() >= deadline:
                        break
                    i = bisect.bisect_right(self.history_rvs, since)
                    if i == len(self.history):
                        self.cv.wait(min(0.2, max(0.0, next_bookmark - time.monotonic()))
                                     if bookmarks else 0.2)
                        if self.watch_gen != gen:
                            break
                        i = bisect.bisect_right(self.history_rvs, since)
                    new = [(t, json.dumps(o)) for _, t, k, o in self.history[i:]
                           if k == kind and self._matches(o, ns, sel)]
                    if i < len(self.history):
                        since = self.history_rvs[-1]
                    current = self.rv
                for t, o in new:
                    h.chunk('{"type":"%s","object":%s}' % (t, o))
                if bookmarks and time.monotonic() >= next_bookmark:
                    # every change up to `current` was in `new`: the stream is there
                    since = max(since, current)
                    h.chunk(json.dumps({"type": "BOOKMARK", "object": {
                        "kind": kind, "apiVersion": API_VERSIONS[kind],
                        "metadata": {"resourceVersion": str(since)}}}))
                    next_bookmark = time.monotonic() + self.bookmark_interval
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _admin(self, method, parts, body):
        """The /_admin protocol of the process mode: (code, answer)."""
        with self.cv:
            if parts == ["objects"] and method == "POST":
                return 200, self.put(json.loads(body))
            if parts == ["objects"] and method == "GET":
                return 200, [o for store in self.objects.values() for o in store.values()]
            if parts[:1] == ["objects"] and method == "DELETE" and len(parts) == 4:
                obj = self.delete(parts[1], None if parts[2] == "-" else parts[2], parts[3])
                return (200, obj) if obj else (404, {})
            if parts == ["compact"]:
                self.compact()
                return 200, {"minRV": self.min_rv}
            if parts == ["fail"]:
                f = json.loads(body)
                self.inject(path=re.escape(f["path_prefix"]), status=int(f.get("status", 500)),
                            count=int(f.get("count", 1)), watch=f.get("watch"),
                            delay=float(f.get("delay", 0)))
                return 200, {}
            if parts == ["unfail"]:
                self.rules = []
                return 200, {}
            if parts == ["watch-mode"]:
                f = json.loads(body)
                self.watch_mode = f["mode"]
                self.watch_error_code = int(f.get("code", 500))
                return 200, {}
            if parts == ["close-watches"]:
                self.close_watches()
                return 200, {}
            if parts == ["requests"]:
                return 200, self.requests
            if parts == ["events"]:
                return 200, self.events
        return 404, status(404, "unknown admin path")

    def serve(self, h, method):
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        url = urllib.parse.urlsplit(h.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        parts = [p for p in url.path.split("/") if p]
        try:
            if self.admin and parts[:1] == ["_admin"]:
                code, obj = self._admin(method, parts[1:], body)
                return h.send_json(code, json.dumps(obj))
            self._before(method, h.path, body, h.headers, client_cn=_client_cn(h))
            kind, ns, name, sub = self._route(parts)
            if method == "GET" and name is None:
                check_field_labels(kind, q.get("fieldSelector"))
            if method == "GET" and name is None and q.get("watch") in ("1", "true"):
                return self._watch(h, kind, ns, q)
            with self.cv:
                code, obj = self._handle(method, kind, ns, name, sub, q, body, h.headers)
                data = json.dumps(obj)
        except Failure as f:
            code, data = f.code, json.dumps(f.body)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            code, data = 400, json.dumps(status(400, "bad request: %s" % exc))
        h.send_json(code, data)


def _client_cn(h):
    """The CN of the client certificate of a TLS connection, else None."""
    getpeercert = getattr(h.connection, "getpeercert", None)
    cert = getpeercert() if getpeercert else None
    for rdn in (cert or {}).get("subject", ()):
        for k, v in rdn:
            if k == "commonName":
                return v
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_json(self, code, data):
        # the API server's encoder ends every JSON reply with a newline
        body = data.encode() + b"\n"
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunk(self, line):
        data = (line + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self):
        self.server.api.serve(self, "GET")

    def do_POST(self):
        self.server.api.serve(self, "POST")

    def do_PATCH(self):
        self.server.api.serve(self, "PATCH")

    def do_PUT(self):
        self.server.api.serve(self, "PUT")

    def do_DELETE(self):
        self.server.api.serve(self, "DELETE")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # a client going away mid-stream (a daemon killed) is not an error here
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token")
    ap.add_argument("--port-file")
    ap.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    ap.add_argument("--tls-key")
    ap.add_argument("--tls-client-ca", help="require a client certificate from this CA")
    a = ap.parse_args()
    api = ApiServer(token=a.token, admin=True, port=a.port, tls_cert=a.tls_cert, tls_key=a.tls_key,
                    tls_client_ca=a.tls_client_ca)
    port = api.httpd.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.rename(a.port_file + ".tmp", a.port_file)
    print("listening on %d" % port, flush=True)
    api.httpd.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

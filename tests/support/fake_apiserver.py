#!/usr/bin/python3
"""A small stand-in for the Kubernetes API server, for tests.

Serves core/v1 pods, nodes and events from memory with the wire behaviour
ioqos relies on: list (limit/continue pagination, fieldSelector on
spec.nodeName and metadata.name), get, merge-patch (RFC 7386), create,
pods/binding, and watch streams (chunked JSON lines, resourceVersion,
bookmarks, 410 Gone for a too-old resourceVersion). Bearer-token checking is
optional (--token). Tests drive it through /_admin endpoints:

  POST   /_admin/objects            body: object with kind Pod|Node -> create/replace (emits ADDED/MODIFIED)
  DELETE /_admin/objects/KIND/NS/NAME                              (emits DELETED; NS "-" for nodes)
  POST   /_admin/compact            forget history: watches from older rvs get 410
  POST   /_admin/fail               body: {"path_prefix": "...", "status": 500, "count": N}
  POST   /_admin/close-watches      end every open watch stream now
  GET    /_admin/requests           every request seen: [{"method","path","body"}]
  GET    /_admin/events             events created

Usage: fake_apiserver.py [--port 0] [--token T] [--port-file F]
Prints "listening on PORT" (and writes PORT to --port-file) when ready.
"""
import argparse
import json
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class Store:
    def __init__(self):
        self.lock = threading.Condition()
        self.rv = 100
        self.objs = {}  # (kind, ns, name) -> obj
        self.history = []  # (rv, type, kind, obj)
        self.min_rv = 0
        self.events = []
        self.requests = []
        self.failures = []  # [prefix, status, count]
        self.watch_gen = 0

    def key(self, obj):
        md = obj.get("metadata", {})
        return (obj["kind"], md.get("namespace", "") if obj["kind"] != "Node" else "", md["name"])

    def put(self, obj, etype=None):
        with self.lock:
            self.rv += 1
            obj = json.loads(json.dumps(obj))
            md = obj.setdefault("metadata", {})
            md["resourceVersion"] = str(self.rv)
            md.setdefault("uid", "%08x-0000-4000-8000-%012x" % (self.rv, self.rv))
            k = self.key(obj)
            t = etype or ("MODIFIED" if k in self.objs else "ADDED")
            self.objs[k] = obj
            self.history.append((self.rv, t, obj["kind"], obj))
            self.lock.notify_all()
            return obj

    def delete(self, kind, ns, name):
        with self.lock:
            obj = self.objs.pop((kind, ns, name), None)
            if obj is None:
                return None
            self.rv += 1
            obj = dict(obj)
            obj["metadata"] = dict(obj["metadata"], resourceVersion=str(self.rv))
            self.history.append((self.rv, "DELETED", kind, obj))
            self.lock.notify_all()
            return obj


STORE = Store()
TOKEN = None


def selector_match(obj, sel):
    if not sel:
        return True
    for term in sel.split(","):
        if "!=" in term:
            f, v = term.split("!=", 1)
            neg = True
        else:
            f, v = term.split("=", 1)
            neg = False
        cur = obj
        for part in f.split("."):
            cur = cur.get(part, {}) if isinstance(cur, dict) else {}
        cur = cur if isinstance(cur, str) else ""
        if (cur == v) == neg:
            return False
    return True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def status(self, code, reason, msg):
        self.send_json(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                              "message": msg, "reason": reason, "code": code})

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def route(self, method):
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        body = self.read_body()
        parts = [p for p in url.path.split("/") if p]
        if parts[:1] != ["_admin"]:
            with STORE.lock:
                STORE.requests.append({"method": method, "path": self.path,
                                       "body": body.decode(errors="replace"),
                                       "contentType": self.headers.get("Content-Type", "")})
            if TOKEN is not None and self.headers.get("Authorization") != "Bearer " + TOKEN:
                return self.status(401, "Unauthorized", "Unauthorized")
            with STORE.lock:
                for f in STORE.failures:
                    if url.path.startswith(f[0]) and f[2] > 0:
                        f[2] -= 1
                        return self.status(f[1], "InternalError", "injected failure")
        try:
            return self.dispatch(method, parts, q, body)
        except (ValueError, KeyError) as exc:
            return self.status(400, "BadRequest", "bad request: %s" % exc)

    def dispatch(self, method, parts, q, body):
        if parts[:1] == ["_admin"]:
            return self.admin(method, parts[1:], body)
        # /api/v1/nodes[/NAME] ; /api/v1/pods ; /api/v1/namespaces/NS/pods[/NAME[/binding]] ; events
        if parts[:2] != ["api", "v1"]:
            return self.status(404, "NotFound", "unknown path")
        rest = parts[2:]
        ns = None
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        if not rest:
            return self.status(404, "NotFound", "unknown path")
        res = rest[0]
        kind = {"pods": "Pod", "nodes": "Node", "events": "Event"}.get(res)
        if kind is None:
            return self.status(404, "NotFound", "unknown resource %s" % res)
        if kind == "Event":
            if method == "POST":
                ev = json.loads(body)
                with STORE.lock:
                    STORE.events.append(ev)
                return self.send_json(201, ev)
            return self.send_json(200, {"kind": "EventList", "items": STORE.events})
        if len(rest) == 1:
            if method == "GET" and q.get("watch") in ("1", "true"):
                return self.watch(kind, ns, q)
            if method == "GET":
                return self.list(kind, ns, q)
            return self.status(405, "MethodNotAllowed", "method not allowed")
        name = rest[1]
        key = (kind, ns or "", name)
        if len(rest) == 3 and rest[2] == "binding" and method == "POST":
            b = json.loads(body)
            target = b.get("target", {}).get("name")
            with STORE.lock:
                pod = STORE.objs.get(key)
                if pod is None:
                    return self.status(404, "NotFound", 'pods "%s" not found' % name)
                if pod.get("spec", {}).get("nodeName"):
                    return self.status(409, "Conflict", "pod %s is already assigned to node %s"
                                       % (name, pod["spec"]["nodeName"]))
                pod = json.loads(json.dumps(pod))
                pod.setdefault("spec", {})["nodeName"] = target
            STORE.put(pod)
            return self.send_json(201, {"kind": "Status", "status": "Success", "code": 201})
        with STORE.lock:
            obj = STORE.objs.get(key)
        if obj is None:
            return self.status(404, "NotFound", '%ss "%s" not found' % (res[:-1], name))
        if method == "GET":
            return self.send_json(200, obj)
        if method == "PATCH":
            ct = self.headers.get("Content-Type", "")
            if ct != "application/merge-patch+json":
                return self.status(415, "UnsupportedMediaType", "unsupported patch type %s" % ct)
            patched = merge_patch(obj, json.loads(body))
            return self.send_json(200, STORE.put(patched))
        return self.status(405, "MethodNotAllowed", "method not allowed")

    def list(self, kind, ns, q):
        sel = q.get("fieldSelector")
        with STORE.lock:
            items = [o for (k, n, _), o in sorted(STORE.objs.items())
                     if k == kind and (ns is None or n == ns) and selector_match(o, sel)]
            rv = str(STORE.rv)
        start = int(q.get("continue") or 0)
        limit = int(q.get("limit") or 0)
        page = items[start:start + limit] if limit else items[start:]
        meta = {"resourceVersion": rv}
        if limit and start + limit < len(items):
            meta["continue"] = str(start + limit)
        self.send_json(200, {"kind": kind + "List", "apiVersion": "v1", "metadata": meta,
                             "items": page})

    def watch(self, kind, ns, q):
        sel = q.get("fieldSelector")
        rv = int(q.get("resourceVersion") or 0)
        timeout = float(q.get("timeoutSeconds") or 300)
        bookmarks = q.get("allowWatchBookmarks") in ("1", "true")
        with STORE.lock:
            too_old = rv and rv < STORE.min_rv
            gen = STORE.watch_gen
        if too_old:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.chunk({"type": "ERROR", "object": {"kind": "Status", "code": 410,
                                                   "reason": "Expired",
                                                   "message": "too old resource version"}})
            self.chunk_end()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deadline = time.time() + timeout
        last = rv
        next_bookmark = time.time() + 1.0
        try:
            while time.time() < deadline:
                with STORE.lock:
                    evs = [(r, t, o) for (r, t, k, o) in STORE.history
                           if r > last and k == kind
                           and (ns is None or o["metadata"].get("namespace") == ns)]
                    if STORE.watch_gen != gen:
                        break
                    if not evs:
                        STORE.lock.wait(0.2)
                for r, t, o in evs:
                    last = r
                    if selector_match(o, sel):
                        self.chunk({"type": t, "object": o})
                if bookmarks and time.time() >= next_bookmark:
                    next_bookmark = time.time() + 1.0
                    self.chunk({"type": "BOOKMARK", "object": {
                        "kind": kind, "apiVersion": "v1",
                        "metadata": {"resourceVersion": str(last)}}})
            self.chunk_end()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def chunk(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def chunk_end(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def admin(self, method, parts, body):
        if parts == ["objects"] and method == "POST":
            return self.send_json(200, STORE.put(json.loads(body)))
        if parts[:1] == ["objects"] and method == "DELETE" and len(parts) == 4:
            kind, ns, name = parts[1], parts[2], parts[3]
            obj = STORE.delete(kind, "" if ns == "-" else ns, name)
            return self.send_json(200 if obj else 404, obj or {})
        if parts == ["compact"]:
            with STORE.lock:
                STORE.min_rv = STORE.rv + 1
                STORE.history = []
                STORE.rv += 1
            return self.send_json(200, {"minRV": STORE.min_rv})
        if parts == ["fail"]:
            f = json.loads(body)
            with STORE.lock:
                STORE.failures.append([f["path_prefix"], int(f.get("status", 500)),
                                       int(f.get("count", 1))])
            return self.send_json(200, {})
        if parts == ["close-watches"]:
            with STORE.lock:
                STORE.watch_gen += 1
                STORE.lock.notify_all()
            return self.send_json(200, {})
        if parts == ["requests"]:
            with STORE.lock:
                return self.send_json(200, STORE.requests)
        if parts == ["events"]:
            with STORE.lock:
                return self.send_json(200, STORE.events)
        if parts == ["objects"] and method == "GET":
            with STORE.lock:
                return self.send_json(200, list(STORE.objs.values()))
        return self.status(404, "NotFound", "unknown admin path")

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_PATCH(self):
        self.route("PATCH")

    def do_PUT(self):
        self.route("PUT")

    def do_DELETE(self):
        self.route("DELETE")


def main():
    global TOKEN
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token")
    ap.add_argument("--port-file")
    a = ap.parse_args()
    TOKEN = a.token
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(str(port))
        import os
        os.rename(a.port_file + ".tmp", a.port_file)
    print("listening on %d" % port, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

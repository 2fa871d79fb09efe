"""A Kubernetes API server stand-in for ioqos-plugin tests (python http.server).

Serves what the plugin uses, with the API's wire shapes:
- GET  /api/v1/pods?fieldSelector=spec.nodeName=N[&limit&continue]  (PodList)
- GET  /api/v1/pods?watch=1&resourceVersion=RV...  (chunked stream of
  {"type":..,"object":..} lines; BOOKMARK events; a resourceVersion older than
  the compaction point gets an ERROR event with a 410 Status)
- GET  /api/v1/namespaces/NS/pods/NAME
- PATCH /api/v1/nodes/NAME  (application/merge-patch+json, RFC 7386)
- POST /api/v1/namespaces/NS/events

Knobs for fault injection: `delay` (seconds before every answer), `fail_patch`
(number of node PATCHes to answer 500), `fail_get` (pod GETs answer 500).
"""
import copy
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
            "reason": reason, "code": code}


class ApiServer:
    def __init__(self, node="node-a"):
        self.cv = threading.Condition()
        self.rv = 1
        self.compacted = 0
        self.pods = {}      # (ns, name) -> pod
        self.log = []       # (rv, type, pod) for watches
        self.nodes = {node: {"kind": "Node", "apiVersion": "v1",
                             "metadata": {"name": node, "annotations": {}}}}
        self.patches = []   # (node, patch body)
        self.events = []    # posted Event objects
        self.requests = []  # (method, path)
        self.delay = 0.0
        self.fail_patch = 0
        self.fail_get = False
        self.closing = False
        self.httpd = None

    # ---- state the tests change ----
    def put_pod(self, pod):
        with self.cv:
            self.rv += 1
            pod = copy.deepcopy(pod)
            pod.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
            key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            kind = "MODIFIED" if key in self.pods else "ADDED"
            self.pods[key] = pod
            self.log.append((self.rv, kind, pod))
            self.cv.notify_all()

    def delete_pod(self, ns, name):
        with self.cv:
            pod = self.pods.pop((ns, name), None)
            if pod is None:
                return
            self.rv += 1
            pod = copy.deepcopy(pod)
            pod["metadata"]["resourceVersion"] = str(self.rv)
            self.log.append((self.rv, "DELETED", pod))
            self.cv.notify_all()

    def compact(self):
        """Forget history: watches from older versions get 410 Gone."""
        with self.cv:
            self.compacted = self.rv
            self.log = []
            self.cv.notify_all()

    def annotation(self, node, key):
        with self.cv:
            return self.nodes[node]["metadata"].get("annotations", {}).get(key)

    def wait(self, pred, timeout=20.0, what="condition"):
        deadline = time.monotonic() + timeout
        with self.cv:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("API server stand-in: timed out waiting for " + what)
                self.cv.wait(min(left, 0.2))

    # ---- server ----
    def start(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def _send(self, code, obj):
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n) or b"null")

            def do_GET(self):
                api._record("GET", self.path)
                if api.delay:
                    time.sleep(api.delay)
                u = urllib.parse.urlparse(self.path)
                q = dict(urllib.parse.parse_qsl(u.query))
                parts = u.path.strip("/").split("/")
                if u.path == "/api/v1/pods":
                    sel = q.get("fieldSelector", "")
                    node = sel.split("=", 1)[1] if sel.startswith("spec.nodeName=") else None
                    if q.get("watch") in ("1", "true"):
                        return self._watch(node, int(q.get("resourceVersion") or 0),
                                           float(q.get("timeoutSeconds") or 300))
                    with api.cv:
                        items = [copy.deepcopy(p) for p in api.pods.values()
                                 if node is None or p.get("spec", {}).get("nodeName") == node]
                        rv = api.rv
                    return self._send(200, {"kind": "PodList", "apiVersion": "v1",
                                            "metadata": {"resourceVersion": str(rv)},
                                            "items": items})
                if len(parts) == 6 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods":
                    if api.fail_get:
                        return self._send(500, status(500, "InternalError", "injected failure"))
                    with api.cv:
                        pod = copy.deepcopy(api.pods.get((parts[3], parts[5])))
                    if pod is None:
                        return self._send(404, status(404, "NotFound",
                                                      'pods "%s" not found' % parts[5]))
                    return self._send(200, pod)
                self._send(404, status(404, "NotFound", "no route " + u.path))

            def _watch(self, node, since, timeout):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

                def chunk(obj):
                    data = (json.dumps(obj) + "\n").encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()

                deadline = time.monotonic() + timeout
                try:
                    with api.cv:
                        if since < api.compacted:
                            chunk({"type": "ERROR", "object": status(
                                410, "Expired", "too old resource version: %d (%d)" % (since, api.compacted))})
                            self.wfile.write(b"0\r\n\r\n")
                            return
                    last_bookmark = time.monotonic()
                    while not api.closing and time.monotonic() < deadline:
                        with api.cv:
                            if since < api.compacted:
                                chunk({"type": "ERROR", "object": status(410, "Expired", "compacted")})
                                break
                            new = [(rv, t, p) for rv, t, p in api.log if rv > since]
                            if not new:
                                api.cv.wait(0.2)
                                new = [(rv, t, p) for rv, t, p in api.log if rv > since]
                            cur = api.rv
                        for rv, t, p in new:
                            since = rv
                            if node is None or p.get("spec", {}).get("nodeName") == node:
                                chunk({"type": t, "object": p})
                        if time.monotonic() - last_bookmark > 1.0:
                            chunk({"type": "BOOKMARK", "object": {
                                "kind": "Pod", "apiVersion": "v1",
                                "metadata": {"resourceVersion": str(max(cur, since))}}})
                            last_bookmark = time.monotonic()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

            def do_PATCH(self):
                api._record("PATCH", self.path)
                if api.delay:
                    time.sleep(api.delay)
                parts = self.path.strip("/").split("/")
                body = self._body()
                if self.headers.get("Content-Type") != "application/merge-patch+json":
                    return self._send(415, status(415, "UnsupportedMediaType",
                                                  "want application/merge-patch+json"))
                if len(parts) != 4 or parts[:3] != ["api", "v1", "nodes"]:
                    return self._send(404, status(404, "NotFound", "no route " + self.path))
                with api.cv:
                    if api.fail_patch > 0:
                        api.fail_patch -= 1
                        api.cv.notify_all()
                        return self._send(500, status(500, "InternalError", "injected failure"))
                    node = api.nodes.get(parts[3])
                    if node is None:
                        return self._send(404, status(404, "NotFound", "node " + parts[3]))
                    api.nodes[parts[3]] = merge_patch(node, body)
                    api.patches.append((parts[3], body))
                    api.cv.notify_all()
                    out = copy.deepcopy(api.nodes[parts[3]])
                self._send(200, out)

            def do_POST(self):
                api._record("POST", self.path)
                parts = self.path.strip("/").split("/")
                body = self._body()
                if len(parts) == 5 and parts[4] == "events":
                    with api.cv:
                        api.events.append(body)
                        api.cv.notify_all()
                    return self._send(201, body)
                self._send(404, status(404, "NotFound", "no route " + self.path))

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                # a client going away mid-stream (daemon killed) is not an error here
                import sys
                if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                    super().handle_error(request, client_address)

        self.httpd = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.httpd.server_address[1]

    def _record(self, method, path):
        with self.cv:
            self.requests.append((method, path))

    def stop(self):
        self.closing = True
        with self.cv:
            self.cv.notify_all()
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()

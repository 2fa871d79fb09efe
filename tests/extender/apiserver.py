"""A small local stand-in for the Kubernetes API server: nodes (paginated
list, chunked watch with bookmarks and 410 Gone), pods (get, merge patch,
binding). Enough for the extender's node cache and bind verb; the code under
test talks to it with its real libcurl client."""
import bisect
import copy
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


class FakeAPI:
    def __init__(self, token="test-token"):
        self.token = token
        self.lock = threading.Condition()
        self.rv = 1000
        self.nodes = {}
        self.pods = {}
        self.events = []          # (rv, type, obj), in rv order
        self.event_rvs = []       # their rvs, for bisect
        self.min_watch_rv = 0     # watches from an older rv get 410 Gone
        self.bindings = []        # (ns, name, uid, node)
        self.patches = []         # (ns, name, patch)
        self.requests = []        # (method, path)
        self.fail_lists = 0       # answer this many node lists with 500
        self.pod_get_delay = 0.0  # seconds, to hold a bind in progress
        self.binding_status = None  # force an HTTP status for bindings
        self.stopping = False
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        self.srv.shutdown()
        self.srv.server_close()

    # ---- state changes (each one is a watch event) ----
    def _bump(self, obj):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return self.rv

    def set_node(self, n):
        with self.lock:
            n = copy.deepcopy(n)
            typ = "MODIFIED" if n["metadata"]["name"] in self.nodes else "ADDED"
            rv = self._bump(n)
            self.nodes[n["metadata"]["name"]] = n
            self.events.append((rv, typ, copy.deepcopy(n)))
            self.event_rvs.append(rv)
            self.lock.notify_all()

    def delete_node(self, name):
        with self.lock:
            n = self.nodes.pop(name)
            rv = self._bump(n)
            self.events.append((rv, "DELETED", n))
            self.event_rvs.append(rv)
            self.lock.notify_all()

    def expire_watches(self):
        """Compacts history: watches from any older resourceVersion get 410."""
        with self.lock:
            self.rv += 1
            self.min_watch_rv = self.rv
            self.events.clear()
            self.event_rvs.clear()
            self.lock.notify_all()

    def add_pod(self, p):
        with self.lock:
            p = copy.deepcopy(p)
            self._bump(p)
            self.pods[(p["metadata"]["namespace"], p["metadata"]["name"])] = p

    def pod(self, ns, name):
        with self.lock:
            return copy.deepcopy(self.pods.get((ns, name)))

    def count(self, method, prefix):
        with self.lock:
            return sum(1 for m, p in self.requests if m == method and p.startswith(prefix))

    # ---- HTTP ----
    def _handler(self):
        api = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _send(self, status, obj):
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _status(self, code, reason, msg):
                self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                  "message": msg, "reason": reason, "code": code})

            def _auth(self):
                if api.token and self.headers.get("Authorization") != "Bearer " + api.token:
                    self._status(401, "Unauthorized", "Unauthorized")
                    return False
                return True

            def _body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n)) if n else None

            def do_GET(self):
                u = urllib.parse.urlparse(self.path)
                q = urllib.parse.parse_qs(u.query)
                with api.lock:
                    api.requests.append(("GET", self.path))
                if not self._auth():
                    return
                parts = u.path.strip("/").split("/")
                if u.path == "/api/v1/nodes":
                    if q.get("watch") == ["1"] or q.get("watch") == ["true"]:
                        return self._watch(q)
                    return self._list(q)
                if len(parts) == 4 and parts[:3] == ["api", "v1", "nodes"]:
                    with api.lock:
                        n = copy.deepcopy(api.nodes.get(parts[3]))
                    if not n:
                        return self._status(404, "NotFound", 'nodes "%s" not found' % parts[3])
                    return self._send(200, n)
                if len(parts) == 6 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods":
                    if api.pod_get_delay:
                        time.sleep(api.pod_get_delay)
                    p = api.pod(parts[3], parts[5])
                    if not p:
                        return self._status(404, "NotFound", 'pods "%s" not found' % parts[5])
                    return self._send(200, p)
                self._status(404, "NotFound", "no route " + u.path)

            def _list(self, q):
                with api.lock:
                    if api.fail_lists > 0:
                        api.fail_lists -= 1
                        return self._status(500, "InternalError", "etcd is sad")
                    names = sorted(api.nodes)
                    limit = int(q.get("limit", ["0"])[0]) or len(names) or 1
                    start = int(q.get("continue", ["0"])[0])
                    page = [copy.deepcopy(api.nodes[n]) for n in names[start:start + limit]]
                    meta = {"resourceVersion": str(api.rv)}
                    if start + limit < len(names):
                        meta["continue"] = str(start + limit)
                self._send(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": meta, "items": page})

            def _chunk(self, obj):
                data = (json.dumps(obj) + "\n").encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def _watch(self, q):
                since = int(q.get("resourceVersion", ["0"])[0] or 0)
                timeout = float(q.get("timeoutSeconds", ["300"])[0])
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                deadline = time.time() + timeout
                try:
                    with api.lock:
                        if since < api.min_watch_rv:
                            self._chunk({"type": "ERROR", "object": {
                                "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
                                "reason": "Expired", "message": "too old resource version: %d (%d)" % (since, api.min_watch_rv)}})
                            self.wfile.write(b"0\r\n\r\n")
                            return
                        last_bookmark = time.time()
                        while not api.stopping and time.time() < deadline:
                            if since < api.min_watch_rv:
                                break  # history compacted under us: end the stream
                            # events are in rv order: send only the new tail
                            i = bisect.bisect_right(api.event_rvs, since)
                            for rv, typ, obj in api.events[i:]:
                                self._chunk({"type": typ, "object": obj})
                                since = rv
                            if time.time() - last_bookmark > 1.0:
                                self._chunk({"type": "BOOKMARK", "object": {
                                    "kind": "Node", "apiVersion": "v1",
                                    "metadata": {"resourceVersion": str(api.rv)}}})
                                since = max(since, api.rv)
                                last_bookmark = time.time()
                            api.lock.wait(0.2)
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_PATCH(self):
                with api.lock:
                    api.requests.append(("PATCH", self.path))
                if not self._auth():
                    return
                parts = self.path.strip("/").split("/")
                if self.headers.get("Content-Type") != "application/merge-patch+json":
                    return self._status(415, "UnsupportedMediaType", "want merge patch")
                patch = self._body()
                if len(parts) == 6 and parts[4] == "pods":
                    with api.lock:
                        p = api.pods.get((parts[3], parts[5]))
                        if not p:
                            return self._status(404, "NotFound", "pod not found")
                        uid = patch.get("metadata", {}).get("uid")
                        if uid and uid != p["metadata"]["uid"]:
                            return self._status(422, "Invalid", "metadata.uid: field is immutable")
                        api.patches.append((parts[3], parts[5], patch))
                        merged = merge_patch(p, patch)
                        api._bump(merged)
                        api.pods[(parts[3], parts[5])] = merged
                        out = copy.deepcopy(merged)
                    return self._send(200, out)
                self._status(404, "NotFound", "no route")

            def do_POST(self):
                with api.lock:
                    api.requests.append(("POST", self.path))
                if not self._auth():
                    return
                parts = self.path.strip("/").split("/")
                body = self._body()
                if len(parts) == 7 and parts[4] == "pods" and parts[6] == "binding":
                    ns, name = parts[3], parts[5]
                    with api.lock:
                        if api.binding_status:
                            return self._status(api.binding_status, "InternalError", "binding refused by test")
                        p = api.pods.get((ns, name))
                        if not p:
                            return self._status(404, "NotFound", "pod not found")
                        if body.get("kind") != "Binding" or body["target"].get("kind") != "Node":
                            return self._status(400, "BadRequest", "not a Binding")
                        uid = body["metadata"].get("uid")
                        if uid and uid != p["metadata"]["uid"]:
                            return self._status(409, "Conflict", "Precondition failed: UID in precondition: %s, UID in object meta: %s" % (uid, p["metadata"]["uid"]))
                        if p["spec"].get("nodeName"):
                            return self._status(409, "Conflict", "pod %s is already assigned to node %s" % (name, p["spec"]["nodeName"]))
                        p["spec"]["nodeName"] = body["target"]["name"]
                        api.bindings.append((ns, name, uid, body["target"]["name"]))
                    return self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})
                self._status(404, "NotFound", "no route")

        return H

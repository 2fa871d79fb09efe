# SPDX-License-Identifier: Apache-2.0
"""Runs the real ioqos-scheduler-ext binary and talks HTTP to it."""
import http.client
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import logfmt  # noqa: E402  (tests/support)

BIN = os.environ.get("IOQOS_EXT_BIN", "")
TOKEN = "test-token"  # what Extender(api=...) hands the binary; ApiServer(token=TOKEN) checks it


class Extender:
    def __init__(self, *args, api=None, token=TOKEN, env=None, wrapper=None, client_cert=None,
                 ca=None):
        """client_cert: (cert, key) files the client presents over TLS; ca: the
        CA file that verifies the server (None = no verification)."""
        if not BIN or not os.access(BIN, os.X_OK):
            raise RuntimeError("IOQOS_EXT_BIN does not name the built ioqos-scheduler-ext")
        self.args = list(args)
        if "--listen" not in self.args:
            self.args = ["--listen", "127.0.0.1:0"] + self.args
        if "--metrics-listen" not in self.args:
            self.args = ["--metrics-listen", "127.0.0.1:0"] + self.args
        if "--log-level" not in self.args:
            self.args = ["--log-level", "debug"] + self.args
        self.tmp = tempfile.TemporaryDirectory(prefix="ioqos-ext-")
        if api is not None:
            tok = os.path.join(self.tmp.name, "token")
            with open(tok, "w") as f:
                f.write(token + "\n")
            self.args += ["--kube-api-server", api.url, "--kube-token-file", tok]
        elif "--no-kube" not in self.args and "--kubeconfig" not in self.args and \
                "KUBECONFIG" not in (env or {}):
            self.args.append("--no-kube")
        e = dict(os.environ)
        e.pop("KUBERNETES_SERVICE_HOST", None)
        if api is not None:  # the stand-in is plain http: opt in to sending the token
            e["IOQOS_KUBE_ALLOW_INSECURE_TOKEN"] = "1"
        e.update(env or {})
        # wrapper: a command the binary runs under (a list), e.g. one that
        # moves it into a memory cgroup first
        wrapper = (wrapper or []) + os.environ.get("IOQOS_EXT_WRAPPER", "").split()
        self.wrapped = bool(wrapper)
        self.wrapper = " ".join(wrapper)
        self.proc = subprocess.Popen(wrapper + [BIN] + self.args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=e)
        self.lines = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        m = self.wait_log(r"serving .* port=(\d+) .*metrics_port=(\d+)", 60 if wrapper else 10)
        self.port = int(m.group(1))
        self.metrics_port = int(m.group(2))
        self.tls = "--tls-cert" in self.args
        self.client_cert = client_cert
        self.ca = ca

    def _read(self):
        for raw in self.proc.stderr:
            with self.cond:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_log(self, pattern, timeout=10):
        """Waits for a log line matching pattern (a wait, not a timing check)."""
        rx = re.compile(pattern)
        deadline = time.time() + timeout
        seen = 0
        with self.cond:
            while True:
                for line in self.lines[seen:]:
                    m = rx.search(logfmt.legacy(line))
                    if m:
                        return m
                seen = len(self.lines)
                left = deadline - time.time()
                # the process may have exited with lines still in the pipe:
                # give up early only once the reader has seen the pipe's end
                if left <= 0 or (not self.reader.is_alive() and seen == len(self.lines)):
                    raise AssertionError("no log line /%s/; log:\n%s" % (pattern, "\n".join(self.lines[-40:])))
                self.cond.wait(min(left, 0.2))

    def log(self):
        with self.cond:
            return "\n".join(self.lines)

    def tls_context(self, client_cert=None):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        if self.ca:
            ctx.load_verify_locations(self.ca)
        else:
            ctx.verify_mode = ssl.CERT_NONE
        if client_cert:
            ctx.load_cert_chain(*client_cert)
        return ctx

    def conn(self, timeout=30, client_cert="default"):
        """A connection to the scheduling port (client_cert: (cert, key),
        None for none, "default" for the one given to the constructor)."""
        if client_cert == "default":
            client_cert = self.client_cert
        if self.tls:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                               context=self.tls_context(client_cert))
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def metrics_conn(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None):
        """Returns (status, parsed JSON or text, raw bytes)."""
        c = conn or self.conn()
        if isinstance(body, (dict, list)):
            body = json.dumps(body, separators=(",", ":")).encode()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        raw = r.read()
        if conn is None:
            c.close()
        try:
            val = json.loads(raw)
        except ValueError:
            val = raw.decode(errors="replace")
        return r.status, val, raw

    def post(self, verb, body, **kw):
        return self.request("POST", "/" + verb, body, **kw)

    def get(self, path):
        """GET on the probes/metrics listener."""
        return self.request("GET", path, conn=self.metrics_conn())

    def metric(self, name):
        """Value of one sample line, e.g. 'ioqos_extender_assumed_placements'."""
        st, text, _ = self.get("/metrics")
        for line in text.splitlines():
            if not line.startswith("#") and line.rsplit(" ", 1)[0] == name:
                return float(line.rsplit(" ", 1)[1])
        raise AssertionError("metric %s not found in:\n%s" % (name, text))

    def wait_until(self, fn, timeout=20, what="condition"):
        deadline = time.time() + timeout
        while True:
            v = fn()
            if v:
                return v
            if time.time() > deadline:
                raise AssertionError("gave up waiting for %s; log:\n%s" % (what, "\n".join(self.lines[-30:])))
            time.sleep(0.05)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.reader.join(10)
        self.proc.stderr.close()
        self.tmp.cleanup()
        if rc != 0 and sig == signal.SIGTERM:
            # a graceful stop exits 0; under valgrind or ASan a leak or memory
            # error makes it non-zero
            raise AssertionError("extender exited %d on SIGTERM%s; log:\n%s"
                                 % (rc, " under " + self.wrapper if self.wrapped else "",
                                    self.log()[-6000:]))
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()

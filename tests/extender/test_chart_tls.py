# SPDX-License-Identifier: Apache-2.0
"""The certificates the Helm chart generates (tls.generate=true), used by the
real extender exactly as its Deployment in the chart starts it: a client
that trusts the chart's CA reaches it under the Service's name with the
chart's client certificate; another CA's certificate is refused.

Run: IOQOS_EXT_BIN=build/scheduler-ext/ioqos-scheduler-ext IOQOS_HELM=path/to/helm \
     /usr/bin/python3 -m unittest -v test_chart_tls
"""
import base64
import json
import os
import socket
import ssl
import subprocess
import tempfile
import unittest

import yaml

import k8s
from extproc import Extender

HERE = os.path.dirname(os.path.abspath(__file__))
CHART = os.path.join(HERE, "..", "..", "manifests", "chart")
NS = "ioqos-system"
SERVICE = "ioqos-scheduler-ext.%s.svc" % NS  # the second scheduler's urlPrefix host


def render(tmp, tag):
    """The chart's extender arguments and its two Secrets' files (under tmp/tag)."""
    helm = os.environ.get("IOQOS_HELM", "")
    if not os.access(helm, os.X_OK):
        raise unittest.SkipTest("IOQOS_HELM is not an executable helm") if not helm else \
            AssertionError("IOQOS_HELM=%s is not executable" % helm)
    r = subprocess.run([helm, "template", "ioqos", CHART, "-n", NS, "--set", "tls.generate=true",
                        "--set", "scheduler.wiring=second-scheduler"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("helm template: " + r.stderr[-800:])
    objs = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(r.stdout) if o}
    d = os.path.join(tmp, tag)
    os.makedirs(d)
    files = {}
    for secret, short in (("ioqos-scheduler-ext-tls", "server"), ("ioqos-scheduler-ext-client", "client")):
        for k, v in objs[("Secret", secret)]["data"].items():
            p = os.path.join(d, "%s-%s" % (short, k))
            with open(p, "wb") as f:
                f.write(base64.b64decode(v))
            files[short, k] = p
    args = objs[("Deployment", "ioqos-scheduler-ext")]["spec"]["template"]["spec"]["containers"][0]["args"]
    return args, files


class ChartTLS(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="ioqos-chart-tls-")
        cls.args, cls.files = render(cls.tmp.name, "release")
        # a second render makes another CA: its client certificate must not pass
        _, cls.other = render(cls.tmp.name, "other")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def start(self):
        """The extender with the Deployment's own TLS flags, the files from the Secrets."""
        mount = {"/etc/ioqos-ext/tls/tls.crt": self.files["server", "tls.crt"],
                 "/etc/ioqos-ext/tls/tls.key": self.files["server", "tls.key"],
                 "/etc/ioqos-ext/tls/ca.crt": self.files["server", "ca.crt"]}
        args = []
        for a in self.args:
            name, _, val = a.partition("=")
            if name.startswith("--tls-"):
                args.append("%s=%s" % (name, mount.get(val, val)))
        self.assertIn("--tls-client-subject=ioqos-scheduler", args, "the chart's extender checks the client's CN")
        self.assertEqual(len(args), 4, args)
        return Extender(*args, client_cert=(self.files["client", "tls.crt"], self.files["client", "tls.key"]),
                        ca=self.files["client", "ca.crt"])

    def filter_status(self, ext, cert):
        """HTTP status of a filter request over TLS made as kube-scheduler's Go
        client makes it: the certificate in the handshake, no TLS 1.3
        post-handshake authentication. (Python's http.client offers that
        extension, and with these RSA certificates GnuTLS then fails the
        handshake: "received handshake message out of context". Go's crypto/tls
        never offers it; a Go client run by hand against these certificates got
        the same answers as this one.)"""
        ctx = ssl.create_default_context(cafile=self.files["client", "ca.crt"])
        if cert:
            ctx.load_cert_chain(*cert)
        body = json.dumps(k8s.filter_args(k8s.ioqos_pod("db", bw=1), nodes=[])).encode()
        req = (b"POST /filter HTTP/1.1\r\nHost: %s:8888\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (SERVICE.encode(), len(body))) + body
        try:
            with socket.create_connection(("127.0.0.1", ext.port), timeout=10) as s:
                with ctx.wrap_socket(s, server_hostname=SERVICE) as t:
                    t.sendall(req)
                    head = t.recv(64).decode("latin-1")
        except (ssl.SSLError, ConnectionError) as e:
            return "refused: %s" % e
        return int(head.split()[1]) if head.startswith("HTTP/1.1 ") else head

    def test_the_chart_certificates_work_together(self):
        with self.start() as ext:
            # as kube-scheduler dials it: the Service's name, verified against the client's ca.crt
            ctx = ssl.create_default_context(cafile=self.files["client", "ca.crt"])
            ctx.load_cert_chain(self.files["client", "tls.crt"], self.files["client", "tls.key"])
            with socket.create_connection(("127.0.0.1", ext.port), timeout=10) as s:
                with ctx.wrap_socket(s, server_hostname=SERVICE) as t:
                    self.assertTrue(t.getpeercert())
            self.assertEqual(self.filter_status(ext, (self.files["client", "tls.crt"],
                                                      self.files["client", "tls.key"])), 200)
            # controls: no certificate, and the client certificate of another release's CA
            self.assertEqual(self.filter_status(ext, None), 403)
            self.assertEqual(self.filter_status(ext, (self.other["client", "tls.crt"],
                                                      self.other["client", "tls.key"])), 403)
            ext.wait_log(r"client certificate refused")
            # and the server does not pass for another name
            ctx2 = ssl.create_default_context(cafile=self.files["client", "ca.crt"])
            with socket.create_connection(("127.0.0.1", ext.port), timeout=10) as s:
                with self.assertRaises(ssl.SSLCertVerificationError):
                    ctx2.wrap_socket(s, server_hostname="ioqos-scheduler-ext.elsewhere.svc")


if __name__ == "__main__":
    unittest.main()

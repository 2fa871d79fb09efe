# SPDX-License-Identifier: Apache-2.0
"""Both log formats of the real ioqos-scheduler-ext binary (issue 14 item 4):
every line it prints parses, as logfmt (a strict parser, tests/support/logfmt.py)
or with json.loads, hostile request values stay inside their own field, and the
two formats carry the same fields."""
import json
import os
import subprocess
import sys
import unittest

import extproc
import k8s

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import logfmt  # noqa: E402

# What a kube-scheduler (or whoever reaches the port) may put in a pod name:
# quotes, a fake field, a newline, a backslash, unicode, a control byte.
HOSTILE = "db \"x\" uid=forged level=error\n\\ é ✓\x01"
LONG = "n" * 40000  # the extender refuses it; its error quotes a bounded part


def session(*args, env=None):
    """Runs the binary through one fixed set of requests; returns its stderr lines."""
    ext = extproc.Extender(*args, env=env)
    try:
        nodes = [k8s.node("n", [k8s.disk("sda", 100)])]
        st, _, _ = ext.post("filter", k8s.filter_args(k8s.ioqos_pod(HOSTILE, bw=10, ns="ns é"), nodes))
        assert st == 200, st
        ext.post("filter", k8s.filter_args(k8s.ioqos_pod(LONG, bw=10), nodes))
        ext.request("POST", "/filter", b"\xff\xfe\x00\x01")
        ext.request("POST", "/bind", json.dumps({"PodName": HOSTILE, "PodNamespace": "a b",
                                                 "PodUID": "u\"", "Node": "n\n"}).encode())
        ext.post("filter", k8s.filter_args(k8s.ioqos_pod("ok", bw=10), [
            k8s.node("m", raw_annotation='{"version":1,"devices":[{"name":"a b\\"=\\n"}]}')]))
    finally:
        rc = ext.stop()
    assert rc == 0, "exit code %d:\n%s" % (rc, ext.log())
    return list(ext.lines)


class LogFormats(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.text = session("--log-format", "text")
        cls.json = session(env={"IOQOS_LOG_FORMAT": "json"})

    def records(self, lines, parse):
        out = []
        for line in lines:
            try:
                rec = parse(line)
            except ValueError as e:
                self.fail("line does not parse (%s): %r" % (e, line))
            self.assertEqual([k for k, _ in rec][:3], ["time", "level", "msg"], line)
            self.assertRegex(dict(rec)["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertIn(dict(rec)["level"], ("error", "warn", "info", "debug"))
            out.append(rec)
        self.assertGreaterEqual(len(out), 7, "\n".join(lines))
        return out

    def check(self, recs):
        filters = [dict(r) for r in recs if dict(r)["msg"] == "filter"]
        self.assertEqual([f["pod"] for f in filters][0], "ns é/db \"x\" uid=forged level=error\n\\ é ✓\x01")
        self.assertEqual(filters[0]["nodes"], "1")
        self.assertNotIn("uid", filters[0], "an argument invented a field")
        refused = [dict(r) for r in recs if dict(r)["msg"] == "request refused"]
        self.assertEqual(len(refused), 3, refused)  # long name, not JSON, bad bind
        self.assertIn("PodName: 'db \\\"x\\\" uid=forged", refused[2]["reply"])

    def test_text_is_logfmt(self):
        self.check(self.records(self.text, logfmt.parse))
        for line in self.text:
            self.assertLess(len(line.encode()), 128 * 1024)

    def test_json_is_one_object_per_line(self):
        recs = self.records(self.json, lambda s: list(json.loads(s).items()))
        for r in recs:
            for k, v in r:
                self.assertIsInstance(v, str, "%s is a string" % k)
        self.check(recs)

    def test_same_fields_in_both(self):
        def shape(recs):
            return sorted((dict(r)["msg"], tuple(k for k, _ in r)) for r in recs)
        self.assertEqual(shape(self.records(self.text, logfmt.parse)),
                         shape(self.records(self.json, lambda s: list(json.loads(s).items()))))

    def test_bad_format_is_refused(self):
        for args, env, want in ((["--log-format", "yaml"], {}, "--log-format: 'yaml' is not text or json"),
                                ([], {"IOQOS_LOG_FORMAT": "JSON"}, "IOQOS_LOG_FORMAT: --log-format: 'JSON' is not text")):
            r = subprocess.run([extproc.BIN, "--no-kube"] + args, env=dict(os.environ, **env),
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(want, r.stderr)


if __name__ == "__main__":
    unittest.main()

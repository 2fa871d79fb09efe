# SPDX-License-Identifier: Apache-2.0
"""ioqos-plugin's log in both formats (issue 14 item 4): a pod admitted and
started, its limits written and reconciled, then SIGTERM; every line the
daemon printed parses as logfmt (tests/support/logfmt.py, a strict parser)
or with json.loads, and both runs carry the same fields."""
import json
import os
import sys
import unittest

from harness import BW, IOPS, PluginTest, read

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import logfmt  # noqa: E402


class PluginLogs(PluginTest):
    def run_daemon(self, fmt):
        d = self.start(extra=["--log-format", fmt])
        self.env.kubelet.wait_list(IOPS, lambda l: len(l) == 1000)
        uid, ids, _, cg = self.admit("db", bw=200, iops=50)
        self.env.kubelet.prestart(BW, ids[BW])
        d.wait_log(r"reconcile pass pods=1")
        self.assertEqual(d.terminate(), 0)
        raw = read(d.log_path).splitlines()
        parse = logfmt.parse if fmt == "text" else (lambda s: list(json.loads(s).items()))
        recs = []
        for line in raw:
            try:
                rec = parse(line)
            except ValueError as e:
                self.fail("%s line does not parse (%s): %r" % (fmt, e, line))
            self.assertEqual([k for k, _ in rec][:3], ["time", "level", "msg"], line)
            recs.append(rec)
        self.assertGreater(len(recs), 10)
        by_msg = {}
        for r in recs:
            by_msg.setdefault(dict(r)["msg"], dict(r))
        done = by_msg["prestart done"]
        self.assertEqual((done["resource"], done["pod"], done["uid"]), (BW, "default/db", uid))
        w = by_msg["cgroup io.max written"]
        self.assertEqual(w["cgroup"], cg)
        self.assertEqual(w["wrote"], "250:0 rbps=209715200 wbps=209715200 riops=5000 wiops=5000")
        return sorted(set((dict(r)["msg"], tuple(k for k, _ in r)) for r in recs))

    def test_text_and_json_parse_with_the_same_fields(self):
        text = self.run_daemon("text")
        self.env = type(self.env)(**self.env_args)  # a fresh node for the second run
        self.addCleanup(self.env.close)
        js = self.run_daemon("json")
        # the same events in both runs carry the same keys
        common = set(m for m, _ in text) & set(m for m, _ in js)
        self.assertIn("prestart done", common)
        self.assertEqual([t for t in text if t[0] in common], [j for j in js if j[0] in common])


if __name__ == "__main__":
    unittest.main(verbosity=2)

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Prints the ioqos.io/devices annotation a plugin binary publishes, with the
test harness of the tree it was built from: two disks, one pod granted 200
bandwidth units on the first. skew/README.md: how a release's annotation is
recorded.

  IOQOS_PLUGIN_BIN=TREE_BUILD/plugin/.../ioqos-plugin IOQOS_PROTO_PY_DIR=TREE_BUILD/proto/python \\
      /usr/bin/python3 capture.py TREE/tests/plugin > skew/plugin-VERSION.json
"""
import json
import sys
import time
import unittest

if len(sys.argv) != 2:
    sys.exit(__doc__)
sys.path.insert(0, sys.argv[1])
import harness  # noqa: E402  (that tree's harness)
import test_ungranted as t  # noqa: E402

OUT = {}


class Capture(t.UngrantedTest):
    env_args = {"extra_config": t.ug_config(300),
                "disks": (("fakedisk0", "250:0"), ("fakedisk1", "250:16"))}

    def test_capture(self):
        self.start()
        uid, _, _ = self.grant("db", bw=200)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            txt = self.env.api.annotation(harness.NODE, "ioqos.io/devices")
            if txt and uid in (json.loads(txt).get("pods") or []):
                OUT["annotation"] = json.loads(txt)
                return
            time.sleep(0.2)
        self.fail("the plugin did not publish the granted pod in 30 s")


if __name__ == "__main__":
    r = unittest.main(argv=[sys.argv[0]], exit=False, verbosity=0).result
    if not r.wasSuccessful() or "annotation" not in OUT:
        sys.exit(1)
    print(json.dumps(OUT["annotation"], indent=1, sort_keys=True))

# SPDX-License-Identifier: Apache-2.0
"""One DaemonSet, several node pools (issue 14 item 5): the node
configuration, in YAML, holds pools selected by node labels; the plugin reads
its Node (GET /api/v1/nodes/NAME from the API server stand-in) and serves the
disks of the first pool whose matchLabels the Node carries, else the top
level. A Node it cannot read stops it with the reason: a pool's disks are
never guessed. A relabelled Node moves to its new pool at run time (issue 30
item 5): the plugin watches its Node."""
import json
import os
import re
import time
import unittest

from harness import BW, IOPS, MIB, NODE, PluginTest, ids_of, read, wait_for, write

# The pieces of the two config files below: a top level, and the pool "fast"
# with another disk.
HEAD = """\
apiVersion: ioqos.io/v1alpha1
kind: NodeConfiguration
allocatableFraction: 1.0
"""
TOP_DEVICES = """\
devices:                     # nodes of no pool
  - select: fakedisk0
    capacity: {bandwidthBytesPerSec: %(bw)d, iops: 1000}
"""
FAST_POOL = """\
  - name: fast
    nodeSelector:
      matchLabels:
        ioqos.io/pool: fast
    devices:
      - select: fakedisk1
        class: fast
        capacity: {bandwidthBytesPerSec: %(bw)d, iops: 2000}
"""
BW_ARG = {"bw": 10 * MIB}
CONFIG = (HEAD + "enforcement:\n  reconcileIntervalSeconds: 1\n" + TOP_DEVICES + "pools:\n" +
          FAST_POOL) % BW_ARG


class NodePools(PluginTest):
    env_args = {"disks": (("fakedisk0", "250:0"), ("fakedisk1", "250:1"))}

    def use_yaml(self, labels):
        path = os.path.join(self.env.root, "config.yaml")
        write(path, CONFIG)
        self.env.config_path = path
        meta = {"name": NODE, "annotations": {}}
        if labels is not None:
            meta["labels"] = labels
        self.env.api.set_node({"kind": "Node", "apiVersion": "v1", "metadata": meta})

    def disks_served(self):
        k = self.env.kubelet
        out = {}
        for res in (BW, IOPS):
            units = ids_of(k.wait_list(res, lambda l: len(l) > 0, what="units"))
            out[res] = sorted({i.rsplit("-", 2)[0] for i in units}), len(units)
        return out

    def test_matching_pool(self):
        self.use_yaml({"ioqos.io/pool": "fast", "kubernetes.io/os": "linux"})
        d = self.start()
        self.assertEqual(self.disks_served(), {BW: (["fakedisk1"], 10), IOPS: (["fakedisk1"], 20)})
        d.wait_log(r"config pool selected by the labels of the node pool=fast node=node-a pools=1")
        self.assertTrue(self.env.api.count("GET", "/api/v1/nodes/" + NODE) >= 1)
        self.assertNotIn("has no apiVersion/kind", d.text())

    def test_no_matching_pool(self):
        self.use_yaml({"ioqos.io/pool": "slow"})
        d = self.start()
        self.assertEqual(self.disks_served(), {BW: (["fakedisk0"], 10), IOPS: (["fakedisk0"], 10)})
        d.wait_log(r"no pool matches the labels of node node-a \(1 pools\): the top level applies")

    def test_node_without_labels(self):
        self.use_yaml(None)
        self.start()
        self.assertEqual(self.disks_served()[BW], (["fakedisk0"], 10))

    def test_unreadable_node_stops_the_plugin(self):
        self.use_yaml({"ioqos.io/pool": "fast"})
        self.env.api.delete_node(NODE)
        d = self.start(ready=False)
        self.assertEqual(d.proc.wait(30), 1)
        d.wait_log(r"cannot run: config .*config.yaml has pools: reading the labels of node node-a: "
                   r"GET /api/v1/nodes/node-a: HTTP 404")

    def test_kubeconfig(self):
        # issue 14 item 6: --kubeconfig instead of --kube-api-server (the
        # harness's flag emptied: an empty one is unset); the Node's labels
        # come through the kubeconfig's server
        self.use_yaml({"ioqos.io/pool": "fast"})
        kc = os.path.join(self.env.root, "kubeconfig")
        write(kc, "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                  "contexts: [{name: t, context: {cluster: c}}]\n"
                  "clusters: [{name: c, cluster: {server: '%s'}}]\n" % self.env.api.url)
        d = self.start(extra=["--kube-api-server", "", "--kubeconfig", kc])
        self.assertEqual(self.disks_served()[BW], (["fakedisk1"], 10))
        d.wait_log(r"config pool selected .*pool=fast")

    def test_config_without_pools_never_reads_the_node(self):
        # the harness's JSON config: no pools, no GET of the Node; no
        # apiVersion/kind either: read, with a warning
        d = self.start()
        self.assertEqual(self.env.api.count("GET", "/api/v1/nodes/" + NODE), 0)
        d.wait_log(r"level=warn .*config .*config.json has no apiVersion/kind: read as ioqos.io/v1alpha1 "
                   r"NodeConfiguration")


# The top level and "fast" with node policies, and a pool that differs in a
# setting only a restart changes. A long reconcile interval in "fast": a
# pool change must not wait for the next pass.
RELABEL_CONFIG = (HEAD + """\
enforcement:
  reconcileIntervalSeconds: 2
nodePolicy:
  qosClassWeights: {besteffort: 20}
""" + TOP_DEVICES + "pools:\n" + FAST_POOL + """\
    enforcement: {reconcileIntervalSeconds: 60}
    nodePolicy:
      qosClassWeights: {besteffort: 50}
  - name: storage
    nodeSelector:
      matchLabels:
        ioqos.io/pool: storage
    enforcement: {reconcileIntervalSeconds: 60, ioWeight: false}
    devices:
      - select: fakedisk1
        capacity: {bandwidthBytesPerSec: %(bw)d, iops: 3000}
""") % BW_ARG
BESTEFFORT = "kubepods.slice/kubepods-besteffort.slice"
WAIT_S = 10  # a relabel applies at once: well inside the 60 s reconcile interval of "fast"


class NodePoolRelabel(PluginTest):
    env_args = {"disks": (("fakedisk0", "250:0"), ("fakedisk1", "250:1"))}

    def setUp(self):
        super().setUp()
        path = os.path.join(self.env.root, "config.yaml")
        write(path, RELABEL_CONFIG)
        self.env.config_path = path
        self.env.api.set_node({"kind": "Node", "apiVersion": "v1",
                               "metadata": {"name": NODE, "annotations": {},
                                            "labels": {"ioqos.io/pool": "fast",
                                                       "kubernetes.io/os": "linux"}}})

    def relabel(self, **labels):
        """`kubectl label node`: the stored Node (the plugin's annotation
        included) with other labels; a watch sees it MODIFIED."""
        node = self.env.api.get("Node", None, NODE)
        node["metadata"]["labels"] = dict(labels, **{"kubernetes.io/os": "linux"})
        self.env.api.set_node(node)

    def served(self, disk, units):
        """Waits until the kubelet's last lists are `units` healthy units of
        `disk` only, per resource."""
        for res, n in ((BW, units[0]), (IOPS, units[1])):
            self.env.kubelet.wait_list(
                res, lambda l: sorted(ids_of(l)) and {i.rsplit("-", 2)[0] for i in ids_of(l)} == {disk}
                and len(ids_of(l)) == n, timeout=WAIT_S, what="%d healthy units of %s" % (n, disk))

    def annotated(self, *devices):
        """Waits until the node annotation lists exactly `devices`, each
        (name, class, healthy)."""
        def ok():
            text = self.env.api.nodes[NODE]["metadata"].get("annotations", {}).get("ioqos.io/devices")
            devs = json.loads(text)["devices"] if text else []
            return [(d["name"], d["class"], d["healthy"]) for d in devs] == list(devices)
        self.env.api.wait(ok, timeout=WAIT_S, what="annotation devices %s" % (devices,))

    def weight(self, line):
        """Waits until the BestEffort QoS cgroup's io.weight holds `line`
        (the node policy of the pool in force)."""
        path = os.path.join(self.env.cgroup_root, BESTEFFORT, "io.weight")
        wait_for(lambda: line in read(path).splitlines(), timeout=WAIT_S, what="%s in %s" % (line, path))

    def node_events(self, reason):
        return [e for e in self.env.api.events
                if e["involvedObject"]["kind"] == "Node" and e["reason"] == reason]

    def test_relabel_moves_the_node_to_its_new_pool_and_back(self):
        d = self.start()
        self.served("fakedisk1", (10, 20))
        self.weight("250:1 50")

        # out of every pool: the top level's disk, class and weight
        self.relabel()
        d.wait_log(r'level=info node pool changed from="fast" to="\(top level\)" node=node-a '
                   r'labels="kubernetes.io/os=linux"', timeout=WAIT_S)
        self.served("fakedisk0", (10, 10))
        self.weight("250:0 20")
        self.env.api.wait(lambda: self.node_events("IoqosNodePoolChanged"), timeout=WAIT_S,
                          what="the pool change Event on the Node")
        ev = self.node_events("IoqosNodePoolChanged")[0]
        self.assertEqual((ev["type"], ev["involvedObject"]["name"]), ("Normal", NODE))
        self.assertIn("now select ioqos node pool (top level) (was fast)", ev["message"])
        # the fast pool's disk, no longer selected: Unhealthy first (kubelet
        # stops allocating it), then, as no pod holds its units, dropped at
        # the next probe: the top level's 2 s interval is in force too
        d.wait_log(r"disk health changed disk=fakedisk1 healthy=false reason=\"not selected by node "
                   r"pool \(top level\), in force since the node was relabelled\"")
        d.wait_log(r"disk no longer managed disk=fakedisk1 dev=250:1 reason=\"not selected by node pool "
                   r"\(top level\), in force since the node was relabelled, and no pod holds its units\"",
                   timeout=WAIT_S)
        for res in (BW, IOPS):
            self.env.kubelet.wait_list(res, lambda l: len(l) == 10 and len(ids_of(l)) == 10,
                                       timeout=WAIT_S, what="fakedisk0's units alone")
        self.annotated(("fakedisk0", "default", True))

        # and back: the fast pool again, as at start
        self.relabel(**{"ioqos.io/pool": "fast"})
        d.wait_log(r'node pool changed from="\(top level\)" to="fast" node=node-a '
                   r'labels="ioqos.io/pool=fast,kubernetes.io/os=linux"', timeout=WAIT_S)
        self.served("fakedisk1", (10, 20))
        self.weight("250:1 50")
        self.annotated(("fakedisk0", "default", False), ("fakedisk1", "fast", True))
        self.env.api.wait(lambda: len(self.node_events("IoqosNodePoolChanged")) == 2, timeout=WAIT_S,
                          what="the second pool change Event")
        self.assertIn("now select ioqos node pool fast (was (top level))",
                      self.node_events("IoqosNodePoolChanged")[1]["message"])
        # one line per change: the plugin's own annotation patches (Node
        # MODIFIED events too) are not label changes
        self.assertEqual(len(re.findall(r"node pool changed", d.text())), 2)
        self.assertIn("node labels watched: a relabel that selects another pool applies it node=node-a",
                      d.text())

    def test_pool_that_needs_a_restart_is_not_applied(self):
        d = self.start()
        self.served("fakedisk1", (10, 20))
        self.relabel(**{"ioqos.io/pool": "storage"})
        d.wait_log(r"level=warn node pool change needs a restart: the pool in force stays, whole, until "
                   r'the plugin restarts from="fast" to="storage" node=node-a '
                   r'labels="ioqos.io/pool=storage,kubernetes.io/os=linux" restart_only=enforcement.ioWeight',
                   timeout=WAIT_S)
        self.env.api.wait(lambda: self.node_events("IoqosNodePoolRestartNeeded"), timeout=WAIT_S,
                          what="the restart-needed Event on the Node")
        ev = self.node_events("IoqosNodePoolRestartNeeded")[0]
        self.assertEqual(ev["type"], "Warning")
        self.assertIn("select ioqos node pool storage, which differs from pool fast in settings fixed "
                      "at start (enforcement.ioWeight): fast stays in force until the ioqos-plugin "
                      "pod restarts", ev["message"])
        # nothing of it applied: a pool put in force is probed within a second
        # (the test above); the storage pool's 30 IOPS units never come
        time.sleep(2)
        self.assertEqual([len(ids_of(l)) for l in self.env.kubelet.plugins[IOPS].lists
                          if len(ids_of(l)) != 20], [])
        self.relabel(**{"ioqos.io/pool": "fast"})
        d.wait_log(r'node pool stays: the labels select the pool in force again pool="fast"', timeout=WAIT_S)
        self.served("fakedisk1", (10, 20))
        self.weight("250:1 50")
        self.assertNotIn("node pool changed", d.text())
        self.assertEqual(self.node_events("IoqosNodePoolChanged"), [])

    def test_restarted_plugin_takes_the_new_pool(self):
        # what the restart-needed Event asks for: a new instance reads the labels at start
        d = self.start()
        self.served("fakedisk1", (10, 20))
        self.relabel(**{"ioqos.io/pool": "storage"})
        d.wait_log(r"node pool change needs a restart", timeout=WAIT_S)
        self.assertEqual(d.terminate(), 0)
        d = self.start()
        d.wait_log(r"config pool selected by the labels of the node pool=storage node=node-a")
        self.served("fakedisk1", (10, 30))


if __name__ == "__main__":
    unittest.main(verbosity=2)

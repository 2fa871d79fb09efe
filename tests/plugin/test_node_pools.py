# SPDX-License-Identifier: Apache-2.0
"""One DaemonSet, several node pools (issue 14 item 5): the node
configuration, in YAML, holds pools selected by node labels; the plugin reads
its Node (GET /api/v1/nodes/NAME from the API server stand-in) and serves the
disks of the first pool whose matchLabels the Node carries, else the top
level. A Node it cannot read stops it with the reason: a pool's disks are
never guessed."""
import os
import unittest

from harness import BW, IOPS, MIB, NODE, PluginTest, ids_of, write

CONFIG = """\
apiVersion: ioqos.io/v1alpha1
kind: NodeConfiguration
allocatableFraction: 1.0
enforcement:
  reconcileIntervalSeconds: 1
devices:                     # nodes of no pool
  - select: fakedisk0
    capacity: {bandwidthBytesPerSec: %(bw)d, iops: 1000}
pools:
  - name: fast
    nodeSelector:
      matchLabels:
        ioqos.io/pool: fast
    devices:
      - select: fakedisk1
        class: fast
        capacity: {bandwidthBytesPerSec: %(bw)d, iops: 2000}
""" % {"bw": 10 * MIB}


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


if __name__ == "__main__":
    unittest.main(verbosity=2)

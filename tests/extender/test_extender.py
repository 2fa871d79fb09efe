# SPDX-License-Identifier: Apache-2.0
"""Integration tests of ioqos-scheduler-ext: the real binary over real HTTP,
with kube-scheduler-shaped requests, and a local API-server stand-in for the
node cache and bind (the extender uses its real libcurl client).

Run: IOQOS_EXT_BIN=build/scheduler-ext/ioqos-scheduler-ext \
     /usr/bin/python3 -m unittest -v test_extender
"""
import copy
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import k8s
from extproc import BIN, TOKEN, Extender

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from apiserver import ApiServer  # noqa: E402  (tests/support)
import logfmt  # noqa: E402  (tests/support)

BW, IOPS = k8s.RES_BW, k8s.RES_IOPS


def names(result):
    if result.get("NodeNames") is not None:
        return list(result["NodeNames"])
    return [n["metadata"]["name"] for n in result["Nodes"]["items"]]


class FullNodeMode(unittest.TestCase):
    """nodeCacheCapable: false - kube-scheduler sends whole Node objects."""

    @classmethod
    def setUpClass(cls):
        cls.ext = Extender()
        cls.nodes = [
            k8s.node("roomy", [k8s.disk("nvme0n1", 2000, alloc_bw=350)]),
            k8s.node("tight", [k8s.disk("nvme0n1", 1000, alloc_bw=880, dev="259:0"),
                               k8s.disk("nvme1n1", 1000, alloc_bw=900, dev="259:1")]),
            k8s.node("bare"),  # no plugin there
            k8s.node("broken", raw_annotation='{"version":1,"devices":[{"name":"sda"}]}'),
            k8s.node("slow", [k8s.disk("sda", 500, cls="slow")]),
            k8s.node("sick", [k8s.disk("sda", 500, healthy=False)]),
        ]

    @classmethod
    def tearDownClass(cls):
        cls.ext.stop()

    def filter(self, pod, nodes=None):
        st, res, _ = self.ext.post("filter", k8s.filter_args(pod, nodes=nodes or self.nodes))
        self.assertEqual(st, 200, res)
        self.assertEqual(res["Error"], "")
        return res

    def test_filter_by_free_units_with_reasons(self):
        res = self.filter(k8s.ioqos_pod("db", bw=200))
        self.assertEqual(names(res), ["roomy"])
        self.assertIsNone(res["NodeNames"])
        self.assertEqual(res["FailedNodes"]["tight"],
                         "no disk in class default has 200 free bandwidth units; best: nvme0n1 with 120")
        self.assertIn("healthy", res["FailedNodes"]["sick"])
        un = res["FailedAndUnresolvableNodes"]
        self.assertIn("no ioqos.io/devices annotation", un["bare"])
        self.assertIn("devices[0].healthy", un["broken"])
        self.assertIn("no disk in class default", un["slow"])
        self.assertEqual(len(res["FailedNodes"]) + len(un) + 1, len(self.nodes))

    def test_passed_nodes_are_echoed_whole(self):
        # kube-scheduler uses the Node objects it gets back
        res = self.filter(k8s.ioqos_pod("db", bw=100))
        got = {n["metadata"]["name"]: n for n in res["Nodes"]["items"]}
        self.assertEqual(set(got), {"roomy", "tight"})
        self.assertEqual(got["roomy"], self.nodes[0])

    def test_class_annotation(self):
        res = self.filter(k8s.ioqos_pod("arch", bw=300, cls="slow"))
        self.assertEqual(names(res), ["slow"])
        self.assertIn("no disk in class slow", res["FailedAndUnresolvableNodes"]["roomy"])

    def test_bandwidth_and_iops_from_one_disk(self):
        n = k8s.node("split", [k8s.disk("a", 1000, cap_iops=10, alloc_iops=10),   # bw yes, iops no
                               k8s.disk("b", 100, cap_iops=50, dev="8:16")])       # iops yes, bw no
        res = self.filter(k8s.ioqos_pod("x", bw=200, iops=5), [n])
        self.assertEqual(names(res), [])
        self.assertIn("no disk in class default has 200 free bandwidth units and 5 free iops units",
                      res["FailedNodes"]["split"])
        res = self.filter(k8s.ioqos_pod("x", bw=100, iops=5), [n])
        self.assertEqual(names(res), ["split"])

    def test_sidecars_and_init_containers(self):
        # app 100 + sidecar 50 run together; the init after the sidecar uses 120 + 50 = 170
        pod = k8s.pod("mig", containers=[k8s.container("app", bw=100)],
                      init=[k8s.container("proxy", bw=50, sidecar=True), k8s.container("migrate", bw=120)])
        exact = k8s.node("exact", [k8s.disk("sda", 170)])
        short = k8s.node("short", [k8s.disk("sda", 169)])
        res = self.filter(pod, [exact, short])
        self.assertEqual(names(res), ["exact"])
        self.assertIn("170 free bandwidth units; best: sda with 169", res["FailedNodes"]["short"])

    def test_pod_without_ioqos_passes_untouched(self):
        res = self.filter(k8s.pod("web"))
        self.assertEqual(names(res), [n["metadata"]["name"] for n in self.nodes])
        self.assertEqual(res["FailedNodes"], {})
        self.assertEqual(res["FailedAndUnresolvableNodes"], {})
        st, prio, _ = self.ext.post("prioritize", k8s.filter_args(k8s.pod("web"), nodes=self.nodes))
        self.assertEqual(st, 200)
        self.assertTrue(all(h["Score"] == 0 for h in prio))

    def test_prioritize_least_allocated(self):
        st, prio, _ = self.ext.post("prioritize", k8s.filter_args(k8s.ioqos_pod("db", bw=100), nodes=self.nodes))
        self.assertEqual(st, 200, prio)
        scores = {h["Host"]: h["Score"] for h in prio}
        self.assertEqual(len(prio), len(self.nodes))
        # roomy: (350+100)/2000 -> 7.75 -> 8; tight: best disk (880+100)/1000 -> 0.2 -> 0
        self.assertEqual(scores["roomy"], 8)
        self.assertEqual(scores["tight"], 0)
        for n in ("bare", "broken", "slow", "sick"):
            self.assertEqual(scores[n], 0)

    def test_prioritize_policies(self):
        nodes = [k8s.node("busy", [k8s.disk("sda", 1000, alloc_bw=600)]),
                 k8s.node("idle", [k8s.disk("sda", 1000)])]
        args = k8s.filter_args(k8s.ioqos_pod("db", bw=100), nodes=nodes)
        for policy, want in (("most-allocated", {"busy": 7, "idle": 1}),
                             ("least-allocated", {"busy": 3, "idle": 9})):
            with Extender("--policy", policy) as ext:
                st, prio, _ = ext.post("prioritize", args)
                self.assertEqual({h["Host"]: h["Score"] for h in prio}, want, policy)

    def test_any_key_casing(self):
        args = k8s.filter_args(k8s.ioqos_pod("db", bw=200), nodes=self.nodes)
        lower = {"pod": args["Pod"], "nodes": args["Nodes"], "nodenames": None}
        st, res, _ = self.ext.post("filter", lower)
        self.assertEqual(st, 200, res)
        self.assertEqual(names(res), ["roomy"])

    def test_many_nodes_one_request(self):
        nodes = [k8s.node("w%04d" % i, [k8s.disk("sda", 1000, alloc_bw=(i * 7) % 1000)]) for i in range(2000)]
        res = self.filter(k8s.ioqos_pod("db", bw=500), nodes)
        want = ["w%04d" % i for i in range(2000) if (i * 7) % 1000 <= 500]
        self.assertEqual(names(res), want)
        self.assertEqual(len(res["FailedNodes"]), 2000 - len(want))


class NamesMode(unittest.TestCase):
    """nodeCacheCapable: true - names only; the extender's own node cache
    follows the API server by list+watch."""

    def setUp(self):
        self.api = ApiServer(token=TOKEN).start()

    def tearDown(self):
        self.api.stop()

    def args(self, pod, names_):
        return k8s.filter_args(pod, names=names_)

    def test_paginated_list_then_filter(self):
        for i in range(1203):  # three pages of 500
            self.api.set_node(k8s.node("n%04d" % i, [k8s.disk("sda", 1000, alloc_bw=i % 1000)]))
        with Extender(api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="node cache sync")
            self.assertEqual(ext.metric("ioqos_extender_node_cache_nodes"), 1203)
            self.assertGreaterEqual(self.api.count("GET", "/api/v1/nodes?limit=500&continue="), 2)
            st, res, _ = ext.post("filter", self.args(k8s.ioqos_pod("db", bw=990), ["n0005", "n0995", "ghost"]))
            self.assertEqual(st, 200, res)
            self.assertIsNone(res["Nodes"])
            self.assertEqual(res["NodeNames"], ["n0005"])
            self.assertIn("best: sda with 5", res["FailedNodes"]["n0995"])
            self.assertIn("not in the ioqos extender's node cache", res["FailedAndUnresolvableNodes"]["ghost"])
            st, prio, _ = ext.post("prioritize", self.args(k8s.ioqos_pod("db", bw=100), ["n0000", "n0500", "ghost"]))
            self.assertEqual(prio, [{"Host": "n0000", "Score": 9}, {"Host": "n0500", "Score": 4},
                                    {"Host": "ghost", "Score": 0}])

    def test_kubeconfig(self):
        """--kubeconfig, or KUBECONFIG, instead of the --kube-* flags (issue 14 item 6)"""
        self.api.set_node(k8s.node("n1", [k8s.disk("sda", 1000)]))
        with tempfile.TemporaryDirectory() as d:
            kc = os.path.join(d, "kubeconfig")
            with open(kc, "w") as f:
                f.write("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                        "contexts: [{name: t, context: {cluster: c, user: u}}]\n"
                        "clusters: [{name: c, cluster: {server: '%s'}}]\n"
                        "users: [{name: u, user: {token: %s}}]\n" % (self.api.url, TOKEN))
            insecure = {"IOQOS_KUBE_ALLOW_INSECURE_TOKEN": "1"}  # the stand-in is plain http
            for args, env in ((["--kubeconfig", kc], insecure), ([], dict(insecure, KUBECONFIG=kc))):
                with Extender(*args, env=env) as ext:
                    ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="node cache sync")
                    self.assertEqual(ext.metric("ioqos_extender_node_cache_nodes"), 1)

    def test_watch_add_modify_delete(self):
        self.api.set_node(k8s.node("a", [k8s.disk("sda", 1000, alloc_bw=900)]))
        with Extender(api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="sync")
            pod = k8s.ioqos_pod("db", bw=500)

            def passed(n):
                return ext.post("filter", self.args(pod, [n]))[1]["NodeNames"] == [n]

            self.assertFalse(passed("a"))
            self.api.set_node(k8s.node("a", [k8s.disk("sda", 1000, alloc_bw=100)]))   # MODIFIED
            ext.wait_until(lambda: passed("a"), what="MODIFIED seen")
            self.api.set_node(k8s.node("b", [k8s.disk("sda", 1000)]))                 # ADDED
            ext.wait_until(lambda: passed("b"), what="ADDED seen")
            self.api.delete_node("a")                                                  # DELETED
            ext.wait_until(lambda: "a" in ext.post("filter", self.args(pod, ["a"]))[1]["FailedAndUnresolvableNodes"],
                           what="DELETED seen")
            # a status-only change (heartbeat) keeps the parsed state
            n = k8s.node("b", [k8s.disk("sda", 1000)])
            n["status"]["conditions"][1]["lastHeartbeatTime"] = "2024-05-01T10:09:00Z"
            self.api.set_node(n)
            self.assertTrue(passed("b"))

    def test_relist_after_410_gone(self):
        self.api.set_node(k8s.node("a", [k8s.disk("sda", 1000, alloc_bw=900)]))
        with Extender(api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="sync")
            lists = ext.metric("ioqos_extender_node_cache_lists_total")
            self.api.expire_watches()  # history compacted: the watch must start over with a list
            self.api.nodes["a"] = k8s.node("a", [k8s.disk("sda", 1000)])  # changed without an event
            ext.wait_until(lambda: ext.metric("ioqos_extender_node_cache_lists_total") > lists, what="re-list")
            st, res, _ = ext.post("filter", self.args(k8s.ioqos_pod("db", bw=500), ["a"]))
            self.assertEqual(res["NodeNames"], ["a"])

    def test_not_synced_until_the_api_answers(self):
        self.api.fail_lists = 3
        self.api.set_node(k8s.node("a", [k8s.disk("sda", 1000)]))
        with Extender(api=self.api) as ext:
            st, res, _ = ext.post("filter", self.args(k8s.ioqos_pod("db", bw=1), ["a"]))
            if st == 200 and res["Error"]:  # still retrying (the usual case)
                self.assertIn("not synced", res["Error"])
                self.assertEqual(ext.get("/readyz")[0], 503)
                st, res, _ = ext.post("prioritize", self.args(k8s.ioqos_pod("db", bw=1), ["a"]))
                self.assertEqual(st, 503)
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, timeout=30, what="sync after retries")
            self.assertEqual(ext.post("filter", self.args(k8s.ioqos_pod("db", bw=1), ["a"]))[1]["NodeNames"], ["a"])
            ext.wait_log(r"kube list/watch failed")

    def test_pod_without_ioqos_needs_no_cache(self):
        with Extender() as ext:  # no API at all
            st, res, _ = ext.post("filter", self.args(k8s.pod("web"), ["x", "y"]))
            self.assertEqual((st, res["NodeNames"], res["Error"]), (200, ["x", "y"], ""))
            st, res, _ = ext.post("filter", self.args(k8s.ioqos_pod("db", bw=1), ["x"]))
            self.assertEqual(st, 200)
            self.assertIn("no node cache", res["Error"])

    def test_odd_names_are_escaped(self):
        odd = ['a"b', "c\\d", "e\x01f", "g/h", "\u00fc", "plain-1.example"]
        with Extender() as ext:
            for verb in ("filter", "prioritize"):
                st, res, raw = ext.post(verb, self.args(k8s.pod("web"), odd))
                self.assertEqual(st, 200, raw)
                got = res["NodeNames"] if verb == "filter" else [h["Host"] for h in res]
                self.assertEqual(got, odd)

    def test_wrong_token_is_reported(self):
        with Extender(api=self.api, token="wrong") as ext:
            ext.wait_log(r"kube list/watch failed .*401")
            self.assertEqual(ext.get("/readyz")[0], 503)


class Bind(unittest.TestCase):
    """bindVerb: disk choice, pod annotation, pods/binding, assumed placements."""

    def setUp(self):
        self.api = ApiServer(token=TOKEN).start()

    def tearDown(self):
        self.api.stop()

    def bind(self, ext, pod, node):
        m = pod["metadata"]
        return ext.post("bind", {"PodName": m["name"], "PodNamespace": m["namespace"],
                                 "PodUID": m["uid"], "Node": node})

    def test_bind_annotates_binds_and_assumes(self):
        self.api.set_node(k8s.node("w1", [k8s.disk("nvme0n1", 1000, alloc_bw=700),
                                          k8s.disk("nvme1n1", 1000, alloc_bw=200, dev="259:1")]))
        pod = k8s.ioqos_pod("db", bw=300, ns="prod")
        self.api.add_pod(pod)
        with Extender(api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="sync")
            st, res, _ = self.bind(ext, pod, "w1")
            self.assertEqual((st, res), (200, {"Error": ""}))
            got = self.api.pod("prod", "db")
            self.assertEqual(got["metadata"]["annotations"]["ioqos.io/disk"], "nvme1n1")
            self.assertEqual(got["spec"]["nodeName"], "w1")
            self.assertEqual(self.api.bindings, [("prod", "db", pod["metadata"]["uid"], "w1")])
            self.assertEqual(self.api.patches[0][2]["metadata"]["uid"], pod["metadata"]["uid"])
            self.assertEqual(ext.metric("ioqos_extender_assumed_placements"), 1)
            # the next pod sees the assumed 300 units on nvme1n1: 1000-200-300 = 500 left there
            st, res, _ = ext.post("filter", k8s.filter_args(k8s.ioqos_pod("next", bw=501), names=["w1"]))
            self.assertIn("best: nvme1n1 with 500", res["FailedNodes"]["w1"])
            # the plugin reports the pod: allocated includes it, the assumption goes
            self.api.set_node(k8s.node("w1", [k8s.disk("nvme0n1", 1000, alloc_bw=700),
                                              k8s.disk("nvme1n1", 1000, alloc_bw=500, dev="259:1")]))
            node = self.api.nodes["w1"]
            anno = json.loads(node["metadata"]["annotations"]["ioqos.io/devices"])
            anno["pods"] = [pod["metadata"]["uid"]]
            node = copy.deepcopy(node)
            node["metadata"]["annotations"]["ioqos.io/devices"] = json.dumps(anno)
            self.api.set_node(node)
            ext.wait_until(lambda: ext.metric("ioqos_extender_assumed_placements") == 0, what="confirmation")
            st, res, _ = ext.post("filter", k8s.filter_args(k8s.ioqos_pod("next", bw=500), names=["w1"]))
            self.assertEqual(res["NodeNames"], ["w1"], "counted once, not twice")
            self.assertEqual(ext.metric('ioqos_extender_binds_total{result="bound"}'), 1)

    def test_pod_get_is_charged_to_the_parse_budget(self):
        # a pod whose object is mostly small JSON objects (a tenant can put
        # 1.5 MB of managedFields-like data in it): ~40 KB of text is ~13 MB of
        # json-c tree, more than the whole 8 MiB budget: refused, not parsed
        self.api.set_node(k8s.node("w1", [k8s.disk("sda", 1000)]))
        pod = k8s.ioqos_pod("fat", bw=10)
        pod["metadata"]["managedFields"] = [{} for _ in range(14000)]
        self.api.add_pod(pod)
        small = k8s.ioqos_pod("db", bw=10)
        self.api.add_pod(small)
        with Extender("--max-request-memory", "8Mi", api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="sync")
            st, res, _ = self.bind(ext, pod, "w1")
            self.assertEqual(st, 200)
            self.assertIn("needs more than 7340032 bytes of memory to parse", res["Error"])
            self.assertEqual(self.api.bindings, [])
            # the bind request's own body is returned just after its reply
            ext.wait_until(lambda: ext.metric("ioqos_extender_request_parse_memory_bytes") == 0,
                           what="all parse memory returned")
            self.assertEqual(self.bind(ext, small, "w1")[1], {"Error": ""})

    def test_assumption_expires(self):
        self.api.set_node(k8s.node("w1", [k8s.disk("sda", 1000)]))
        pod = k8s.ioqos_pod("db", bw=600)
        self.api.add_pod(pod)
        with Extender("--assume-ttl", "1", api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="sync")
            self.assertEqual(self.bind(ext, pod, "w1")[1], {"Error": ""})
            ext.wait_until(lambda: ext.metric("ioqos_extender_assumed_placements") == 0, what="expiry")
            ext.wait_log(r"assumed placement expired after --assume-ttl node=w1 pod=default/db disk=sda")

    def test_concurrent_binds_on_one_node(self):
        # two disks of 500 units; 10 pods of 200: exactly 4 fit (2 per disk)
        self.api.set_node(k8s.node("hot", [k8s.disk("a", 500), k8s.disk("b", 500, dev="8:16")]))
        pods = [k8s.ioqos_pod("p%d" % i, bw=200) for i in range(10)]
        for p in pods:
            self.api.add_pod(p)
        with Extender("--threads", "8", api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="sync")
            results = [None] * len(pods)
            start = threading.Barrier(len(pods))

            def go(i):
                start.wait()
                results[i] = self.bind(ext, pods[i], "hot")

            ts = [threading.Thread(target=go, args=(i,)) for i in range(len(pods))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            ok = [i for i, r in enumerate(results) if r[1] == {"Error": ""}]
            failed = [r[1]["Error"] for r in results if r[1] != {"Error": ""}]
            self.assertEqual(len(ok), 4, results)
            for msg in failed:
                self.assertIn("no disk fits any more", msg)
            per_disk = {}
            for i in ok:
                d = self.api.pod("default", "p%d" % i)["metadata"]["annotations"]["ioqos.io/disk"]
                per_disk[d] = per_disk.get(d, 0) + 200
            self.assertEqual(per_disk, {"a": 400, "b": 400})
            self.assertEqual(len(self.api.bindings), 4)
            self.assertEqual(ext.metric("ioqos_extender_assumed_placements"), 4)

    def test_bind_errors_are_returned(self):
        self.api.set_node(k8s.node("w1", [k8s.disk("sda", 1000)]))
        pod = k8s.ioqos_pod("db", bw=100)
        self.api.add_pod(pod)
        with Extender(api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="sync")
            st, res, _ = ext.post("bind", {"PodName": "nope", "PodNamespace": "default", "PodUID": "x", "Node": "w1"})
            self.assertEqual(st, 200)
            self.assertIn("not found", res["Error"])
            st, res, _ = ext.post("bind", {"PodName": "db", "PodNamespace": "default", "PodUID": "other-uid", "Node": "w1"})
            self.assertIn("pod was recreated", res["Error"])
            st, res, _ = ext.post("bind", {"PodName": "db", "PodNamespace": "default", "PodUID": pod["metadata"]["uid"], "Node": "ghost"})
            self.assertIn("node ghost is not in the node cache", res["Error"])
            # the API refuses the binding: the assumption is rolled back
            self.api.binding_status = 500
            st, res, _ = self.bind(ext, pod, "w1")
            self.assertIn("binding refused by test", res["Error"])
            self.assertEqual(ext.metric("ioqos_extender_assumed_placements"), 0)
            self.api.binding_status = None
            big = k8s.ioqos_pod("big", bw=1001)
            self.api.add_pod(big)
            self.assertIn("no disk in class default has 1001 free", self.bind(ext, big, "w1")[1]["Error"])
            self.assertEqual(self.bind(ext, pod, "w1")[1], {"Error": ""})
            disk = self.api.pod("default", "db")["metadata"]["annotations"]["ioqos.io/disk"]
            patches = len(self.api.patches)
            # a retried bind leaves the bound pod, its disk and its assumption alone
            self.assertIn("already bound to node w1", self.bind(ext, pod, "w1")[1]["Error"])
            self.assertEqual(len(self.api.patches), patches)
            self.assertEqual(self.api.pod("default", "db")["metadata"]["annotations"]["ioqos.io/disk"], disk)
            self.assertEqual(ext.metric("ioqos_extender_assumed_placements"), 1)
            self.assertEqual(ext.metric('ioqos_extender_binds_total{result="error"}'), 6)
            # bound by someone else between our read and our binding: the API says 409
            other = k8s.ioqos_pod("race", bw=100)
            self.api.add_pod(other)
            orig = self.api.get

            def pod_unbound(kind, ns, name):  # the stand-in hides nodeName from the GET
                p = orig(kind, ns, name)
                if p and name == "race":
                    p["spec"].pop("nodeName", None)
                return p

            self.api.pods[("default", "race")]["spec"]["nodeName"] = "elsewhere"
            self.api.get = pod_unbound
            self.assertIn("already assigned to node elsewhere", self.bind(ext, other, "w1")[1]["Error"])
            self.api.get = orig
            self.assertEqual(ext.metric("ioqos_extender_assumed_placements"), 1, "rolled back")

    def test_binding_without_reply_keeps_the_assumption(self):
        # the API commits the binding but answers after the extender gave up:
        # the pod runs on the disk, so its units must stay counted
        self.api.set_node(k8s.node("w1", [k8s.disk("sda", 1000)]))
        pod = k8s.ioqos_pod("db", bw=600)
        self.api.add_pod(pod)
        with Extender("--kube-timeout", "3", api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="sync")
            self.api.inject(path=r"/api/v1/namespaces/default/pods/db/binding$", method="POST",
                            delay=6, count=1)
            st, res, _ = self.bind(ext, pod, "w1")
            self.assertEqual(st, 200)
            self.assertIn("timed out", res["Error"].lower())
            ext.wait_until(lambda: self.api.bindings, what="the late binding")
            self.assertEqual(ext.metric("ioqos_extender_assumed_placements"), 1)
            ext.wait_log(r"binding outcome unknown, keeping the assumed placement")
            st, res, _ = ext.post("filter", k8s.filter_args(k8s.ioqos_pod("next", bw=401), names=["w1"]))
            self.assertIn("best: sda with 400", res["FailedNodes"]["w1"])
            # the pod itself, asked about again, does not compete with its own placement
            st, res, _ = ext.post("filter", k8s.filter_args(pod, names=["w1"]))
            self.assertEqual(res["NodeNames"], ["w1"], res)

    def test_bind_refuses_what_kube_scheduler_would_never_ask(self):
        # /bind acts with the extender's pods/binding permission: it binds only
        # pods of a scheduler it serves that request ioqos resources
        self.api.set_node(k8s.node("w1", [k8s.disk("sda", 1000)]))
        web = k8s.pod("web")
        other = k8s.ioqos_pod("other", bw=100, scheduler="default-scheduler")
        db = k8s.ioqos_pod("db", bw=100)
        for p in (web, other, db):
            self.api.add_pod(p)
        with Extender(api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="sync")
            err = self.bind(ext, web, "w1")[1]["Error"]
            self.assertIn("pod requests no ioqos resource", err)
            err = self.bind(ext, other, "w1")[1]["Error"]
            self.assertIn("pod has schedulerName default-scheduler, which this extender does not serve", err)
            err = self.bind(ext, db, "ghost")[1]["Error"]
            self.assertIn("node ghost is not in the node cache", err)
            self.assertEqual((self.api.bindings, self.api.patches), ([], []))
            self.assertEqual(self.bind(ext, db, "w1")[1], {"Error": ""})
            self.assertEqual(ext.metric('ioqos_extender_binds_total{result="error"}'), 3)
        # the in-place overlay serves the default scheduler too
        with Extender("--scheduler-name", "ioqos-scheduler", "--scheduler-name", "default-scheduler",
                      api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="sync")
            self.assertEqual(self.bind(ext, other, "w1")[1], {"Error": ""})
            self.assertIn("pod requests no ioqos resource", self.bind(ext, web, "w1")[1]["Error"])

    def test_filter_body_cannot_drop_assumed_placements(self):
        # a forged Node in a full-node /filter body lists the bound pod in its
        # annotation: only the node cache may confirm a placement
        self.api.set_node(k8s.node("w1", [k8s.disk("sda", 1000)]))
        pod = k8s.ioqos_pod("db", bw=600)
        self.api.add_pod(pod)
        with Extender(api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="sync")
            self.assertEqual(self.bind(ext, pod, "w1")[1], {"Error": ""})
            self.assertEqual(ext.metric("ioqos_extender_assumed_placements"), 1)
            forged = k8s.node("w1", raw_annotation=k8s.annotation("w1", [k8s.disk("sda", 1000)],
                                                                  pods=[pod["metadata"]["uid"]]))
            st, res, _ = ext.post("filter", k8s.filter_args(k8s.ioqos_pod("x", bw=10), nodes=[forged]))
            self.assertEqual(st, 200, res)
            self.assertEqual(ext.metric("ioqos_extender_assumed_placements"), 1)
            st, res, _ = ext.post("filter", k8s.filter_args(k8s.ioqos_pod("next", bw=401), names=["w1"]))
            self.assertIn("best: sda with 400", res["FailedNodes"]["w1"], "still counted")

    def test_bind_without_node_cache_is_refused(self):
        # the extender's RBAC is nodes list/watch only: bind reads nodes from
        # its node cache, never with a GET
        self.api.set_node(k8s.node("w1", [k8s.disk("sda", 1000)]))
        pod = k8s.ioqos_pod("db", bw=100)
        self.api.add_pod(pod)
        with Extender("--node-cache=false", api=self.api) as ext:
            err = self.bind(ext, pod, "w1")[1]["Error"]
            self.assertIn("bind needs the node cache (run with --node-cache=true)", err)
            self.assertEqual(self.api.count("GET", "/api/v1/nodes"), 0)
            self.assertIsNone(self.api.pod("default", "db")["spec"].get("nodeName"))

    def test_bind_needs_the_api(self):
        with Extender() as ext:
            st, res, _ = ext.post("bind", {"PodName": "a", "PodNamespace": "b", "PodUID": "c", "Node": "d"})
            self.assertEqual(st, 200)
            self.assertIn("without Kubernetes API access", res["Error"])


class Assumed(unittest.TestCase):
    """Assumed placements last until the node reports the pod or the pod
    ends, and are rebuilt after a restart (issue 12 item 3)."""

    def setUp(self):
        self.api = ApiServer(token=TOKEN).start()

    def tearDown(self):
        self.api.stop()

    def set_node(self, name, disks, pods=None, published=True):
        n = k8s.node(name, raw_annotation=k8s.annotation(
            name, disks, pods=pods, published=time.time() if published else None))
        self.api.set_node(n)

    def bound_pod(self, name, node, disk, bw, phase="Pending"):
        pod = k8s.ioqos_pod(name, bw=bw)
        pod["metadata"].setdefault("annotations", {})["ioqos.io/disk"] = disk
        pod["spec"]["nodeName"] = node
        pod["status"]["phase"] = phase
        self.api.add_pod(pod)
        return pod

    def free_on(self, ext, node, bw=1):
        """The free units the extender sees on node's best disk (from the reason)."""
        st, res, _ = ext.post("filter", k8s.filter_args(k8s.ioqos_pod("probe", bw=10000), names=[node]))
        return res["FailedNodes"][node]

    def test_rebuilt_after_restart_from_bound_pods(self):
        self.set_node("w1", [k8s.disk("sda", 1000)], pods=[])
        self.set_node("old", [k8s.disk("sda", 1000)], published=False)  # plugin without the marker
        self.set_node("w2", [k8s.disk("sda", 1000, alloc_bw=300)], pods=[])
        db = self.bound_pod("db", "w1", "sda", 600)            # bound, not counted: rebuilt
        self.bound_pod("done", "w1", "sda", 100, phase="Succeeded")  # ended: not
        self.bound_pod("legacy", "old", "sda", 500)            # node cannot say: not
        counted = self.bound_pod("counted", "w2", "sda", 300)  # already in allocated: not
        self.set_node("w2", [k8s.disk("sda", 1000, alloc_bw=300)], pods=[counted["metadata"]["uid"]])
        plain = k8s.ioqos_pod("nodisk", bw=50)                 # no ioqos.io/disk: not
        plain["spec"]["nodeName"] = "w1"
        self.api.add_pod(plain)
        with Extender(api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="ready")
            ext.wait_log(r"assumed placements rebuilt from bound pods pods=5 placements=1")
            ext.wait_log(r"assumed placement rebuilt node=w1 pod=default/db disk=sda bandwidth=600")
            self.assertEqual(ext.metric("ioqos_extender_assumed_placements"), 1)
            self.assertIn("best: sda with 400", self.free_on(ext, "w1"))
            self.assertIn("best: sda with 1000", self.free_on(ext, "old"))
            self.assertIn("best: sda with 700", self.free_on(ext, "w2"))
            # the plugin reports db: counted once, in allocated
            self.set_node("w1", [k8s.disk("sda", 1000, alloc_bw=600)], pods=[db["metadata"]["uid"]])
            ext.wait_until(lambda: ext.metric("ioqos_extender_assumed_placements") == 0, what="confirmation")
            self.assertIn("best: sda with 400", self.free_on(ext, "w1"))

    def test_binds_wait_for_the_rebuild(self):
        self.set_node("w1", [k8s.disk("sda", 1000)], pods=[])
        pod = k8s.ioqos_pod("db", bw=100)
        self.api.add_pod(pod)
        rule = self.api.inject(path=r"/api/v1/pods$", method="GET", status=500, count=2)
        with Extender(api=self.api) as ext:
            ext.wait_log(r"rebuilding assumed placements failed, binds wait")
            m = pod["metadata"]
            args = {"PodName": m["name"], "PodNamespace": m["namespace"], "PodUID": m["uid"], "Node": "w1"}
            if ext.get("/readyz")[0] == 503:
                st, res, _ = ext.post("bind", args)
                self.assertIn("still rebuilding its assumed placements", res["Error"])
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, timeout=30, what="rebuilt")
            self.assertEqual(rule["count"], 0)
            self.assertEqual(ext.post("bind", args)[1], {"Error": ""})

    def test_kept_until_the_pod_ends(self):
        self.set_node("w1", [k8s.disk("sda", 1000)], pods=[])
        pods = [k8s.ioqos_pod(n, bw=100) for n in ("a", "b", "c")]
        for p in pods:
            self.api.add_pod(p)
        with Extender(api=self.api) as ext:
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="ready")
            for p in pods:
                m = p["metadata"]
                st, res, _ = ext.post("bind", {"PodName": m["name"], "PodNamespace": m["namespace"],
                                               "PodUID": m["uid"], "Node": "w1"})
                self.assertEqual(res, {"Error": ""})
            self.assertIn("best: sda with 700", self.free_on(ext, "w1"))
            # a is deleted, b fails: their placements go; c stays (no TTL)
            self.api.delete_pod("default", "a")
            b = self.api.pod("default", "b")
            b["status"]["phase"] = "Failed"
            self.api.put_pod(b)
            ext.wait_log(r'assumed placement dropped node=w1 pod=default/a reason="pod deleted"', timeout=30)
            ext.wait_log(r'assumed placement dropped node=w1 pod=default/b reason="pod Failed"', timeout=30)
            self.assertEqual(ext.metric("ioqos_extender_assumed_placements"), 1)
            self.assertIn("best: sda with 900", self.free_on(ext, "w1"))


class BadInput(unittest.TestCase):
    """Every bad request gets a clear 4xx or Error, never a crash or a hang,
    and the next request is served."""

    @classmethod
    def setUpClass(cls):
        cls.ext = Extender("--max-request-bytes", "64Ki", "--max-request-memory", "8Mi",
                           "--idle-timeout", "2", "--threads", "2")
        cls.good = k8s.filter_args(k8s.ioqos_pod("db", bw=10), nodes=[k8s.node("n", [k8s.disk("sda", 100)])])

    @classmethod
    def tearDownClass(cls):
        rc = cls.ext.stop()
        assert rc == 0, "extender exit code %d" % rc

    def assert_served(self):
        st, res, _ = self.ext.post("filter", self.good)
        self.assertEqual((st, names(res)), (200, ["n"]))

    def expect(self, verb, body, status, text):
        st, res, raw = self.ext.request("POST", "/" + verb, body)
        self.assertEqual(st, status, raw[:300])
        self.assertIsInstance(res, dict, raw[:300])
        self.assertIn(text, res["Error"])
        self.assert_served()

    def test_not_json(self):
        self.expect("filter", b"hello", 400, "not valid JSON")
        self.expect("filter", b"\xff\xfe\x00\x01", 400, "not valid JSON")
        self.expect("prioritize", b"{\"Pod\":{},\"NodeNames\":[\"a\"]}}", 400, "data after the JSON value")
        self.expect("filter", b"", 400, "body is empty")
        self.expect("bind", b"   ", 400, "truncated")

    def test_truncated(self):
        body = json.dumps(self.good).encode()
        for cut in (1, len(body) // 2, len(body) - 1):
            self.expect("filter", body[:cut], 400, "truncated JSON")

    def test_wrong_shapes(self):
        pod = k8s.ioqos_pod("db", bw=10)
        self.expect("filter", [], 400, "must be a JSON object")
        self.expect("filter", {"Nodes": {"items": []}}, 400, "Pod: is missing")
        self.expect("filter", {"Pod": "db", "NodeNames": []}, 400, "Pod: must be a Pod object")
        self.expect("filter", {"Pod": pod}, 400, "neither Nodes nor NodeNames")
        self.expect("prioritize", {"Pod": pod, "NodeNames": [1]}, 400, "NodeNames[0]")
        self.expect("filter", {"Pod": pod, "Nodes": {"items": [{"metadata": {}}]}}, 400, "Nodes.items[0]: node has no metadata.name")
        bad = k8s.ioqos_pod("db", bw=10)
        bad["spec"]["containers"][0]["resources"]["limits"][BW] = "ten"
        self.expect("filter", {"Pod": bad, "NodeNames": []}, 400, 'resources.limits["ioqos/bandwidth"]')
        self.expect("bind", {"PodName": "a/../b", "PodNamespace": "x", "Node": "n"}, 400, "not a valid Kubernetes name")
        self.expect("bind", {"PodName": "a"}, 400, "PodNamespace: is missing")

    def test_deep_nesting(self):
        self.expect("filter", b"[" * 5000 + b"]" * 5000, 400, "not valid JSON")

    def test_too_large_with_content_length(self):
        big = b'{"Pod":{},"NodeNames":["' + b"x" * 70000 + b'"]}'
        st, res, _ = self.ext.request("POST", "/filter", big)
        self.assertEqual(st, 413)
        self.assertIn("larger than 65536 bytes", res["Error"])
        self.assert_served()

    def test_tree_memory_is_bounded(self):
        # 60 KiB of "{}," is within the byte limit but would be ~18 MiB of
        # json-c objects: refused before it is parsed
        body = b'{"Pod":{},"NodeNames":[' + b"{}," * 20000 + b'{}]}'
        st, res, _ = self.ext.request("POST", "/filter", body)
        self.assertEqual(st, 413)
        self.assertIn("needs more than 7340032 bytes of memory to parse", res["Error"])
        self.assert_served()

    def test_memory_held_by_others_gives_503(self):
        # client A holds ~5 MiB of the 8 MiB parse budget with a half-sent body
        a = socket.create_connection(("127.0.0.1", self.ext.port), timeout=30)
        part = b'{"Pod":{},"NodeNames":[' + b"{}," * 5800
        a.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 60000\r\n\r\n" + part)
        # A's bytes must be reserved before B starts: else B (first) takes the
        # memory and A is the one refused (seen under valgrind on a slow machine)
        held = 5800 * 960

        def a_holds():
            a.sendall(b" ")  # A stays active (--idle-timeout 2)
            return self.ext.metric("ioqos_extender_request_parse_memory_bytes") >= held
        self.ext.wait_until(a_holds, timeout=60, what="A's partial body holding its parse memory")
        # B needs another ~5 MiB: not now
        body_b = b'{"Pod":{},"NodeNames":[' + b"{}," * 5800 + b"{}]}"
        st, res = None, None
        deadline = time.monotonic() + 30  # until A's bytes have reached the server (slow under ASan/load)
        while time.monotonic() < deadline:
            st, res, _ = self.ext.request("POST", "/filter", body_b)
            if st == 503:
                break
            # A stays busy while B waits (else --idle-timeout drops it first
            # when valgrind or load make each try slow): a byte of whitespace
            a.sendall(b" ")
            time.sleep(0.1)
        self.assertEqual(st, 503, res)
        self.assertIn("too many large requests in progress", res["Error"])
        self.assert_served()  # small requests still go through
        # A goes idle and is dropped (--idle-timeout 2): its memory is returned
        try:
            self.assertEqual(a.recv(100), b"")
        except ConnectionResetError:
            pass
        a.close()
        self.ext.wait_until(
            lambda: self.ext.metric("ioqos_extender_request_parse_memory_bytes") == 0,
            timeout=30, what="A's parse memory returned")
        st, res, _ = self.ext.request("POST", "/filter", body_b)
        self.assertEqual(st, 400, res)  # parsed now (and refused for its content)
        self.assertIn("NodeNames[0]", res["Error"])
        self.assertEqual(self.ext.metric('ioqos_extender_rejected_requests_total{reason="busy"}'), 1)

    def test_too_large_chunked(self):
        s = socket.create_connection(("127.0.0.1", self.ext.port), timeout=10)
        s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b" " * 16384
        try:
            for _ in range(6):  # 96 KiB of whitespace
                s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            s.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = b""
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                reply += d
        except (ConnectionResetError, socket.timeout):
            pass
        s.close()
        self.assertTrue(reply.startswith(b"HTTP/1.1 413"), reply[:200])
        self.assert_served()

    def test_slow_client_does_not_block_others(self):
        slow = socket.create_connection(("127.0.0.1", self.ext.port), timeout=30)
        slow.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"Pod\":")
        for _ in range(5):  # both worker threads stay free for others
            self.assert_served()
        # the idle connection is closed by the server (--idle-timeout 2)
        try:
            self.assertEqual(slow.recv(100), b"")
        except ConnectionResetError:
            pass
        slow.close()
        self.assert_served()

    def test_methods_and_paths(self):
        st, res, _ = self.ext.request("GET", "/filter")
        self.assertEqual(st, 405)
        st, res, _ = self.ext.request("POST", "/healthz", b"{}")
        self.assertEqual(st, 404)
        st, res, _ = self.ext.request("POST", "/nope", b"{}")
        self.assertEqual(st, 404)
        st, res, _ = self.ext.request("DELETE", "/filter")
        self.assertEqual(st, 405)
        self.assert_served()
        # any urlPrefix path works: the verb is the last segment
        st, res, _ = self.ext.request("POST", "/scheduler/ioqos/filter", self.good)
        self.assertEqual((st, names(res)), (200, ["n"]))

    def test_keep_alive_after_errors(self):
        c = self.ext.conn()
        for body in (b"{", b"[]", json.dumps(self.good).encode()):
            st, res, _ = self.ext.request("POST", "/filter", body, conn=c)
        self.assertEqual(st, 200)
        c.close()

    def test_garbage_request_line(self):
        s = socket.create_connection(("127.0.0.1", self.ext.port), timeout=10)
        s.sendall(b"\x16\x03\x01\x02\x00garbage\r\n\r\n")
        s.recv(1000)
        s.close()
        self.assert_served()


class Server(unittest.TestCase):

    def test_endpoints(self):
        with Extender() as ext:
            self.assertEqual(ext.get("/healthz")[:2], (200, "ok\n"))
            self.assertEqual(ext.get("/readyz")[:2], (200, "ok\n"))
            ext.post("filter", k8s.filter_args(k8s.ioqos_pod("db", bw=10), nodes=[k8s.node("n")]))
            # a request is counted when libmicrohttpd completes it, which can
            # be just after the client has its reply (slow under valgrind)
            deadline = time.monotonic() + 10
            while True:
                st, text, _ = ext.get("/metrics")
                done = 'ioqos_extender_requests_total{verb="filter",code="200"} 1\n' in text
                if done or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            self.assertEqual(st, 200)
            for name in ("ioqos_extender_requests_total{verb=\"filter\",code=\"200\"} 1",
                         "ioqos_extender_request_duration_seconds_count{verb=\"filter\"} 1",
                         "ioqos_extender_filter_nodes_total{result=\"unresolvable\"} 1",
                         "ioqos_extender_pods_total{verb=\"filter\",kind=\"ioqos\"} 1",
                         "ioqos_extender_assumed_placements 0",
                         "ioqos_extender_node_cache_enabled 0"):
                self.assertIn(name + "\n", text)

    def test_probes_and_metrics_only_on_their_own_listener(self):
        with Extender() as ext:
            self.assertNotEqual(ext.port, ext.metrics_port)
            for path in ("/metrics", "/healthz", "/readyz"):
                self.assertEqual(ext.request("GET", path)[0], 404, path)  # scheduling port
                self.assertEqual(ext.get(path)[0], 200, path)              # metrics port
            c = ext.metrics_conn()
            st, _, _ = ext.request("POST", "/filter", k8s.filter_args(k8s.pod("web"), names=["a"]), conn=c)
            self.assertEqual(st, 404)
            c.close()
            self.assertEqual(ext.post("filter", k8s.filter_args(k8s.pod("web"), names=["a"]))[0], 200)

    def test_tls(self):
        with tempfile.TemporaryDirectory() as d:
            cert, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                            "-out", cert, "-days", "1", "-subj", "/CN=ioqos-ext"],
                           check=True, capture_output=True)
            with Extender("--tls-cert", cert, "--tls-key", key) as ext:
                ext.wait_log(r"tls=on")
                st, res, _ = ext.post("filter", k8s.filter_args(k8s.pod("web"), names=["a"]))
                self.assertEqual((st, res["NodeNames"]), (200, ["a"]))
                # plain HTTP to the TLS port fails; the server goes on
                s = socket.create_connection(("127.0.0.1", ext.port), timeout=10)
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                try:
                    s.recv(100)
                except ConnectionResetError:
                    pass
                s.close()
                self.assertEqual(ext.get("/healthz")[0], 200)
            bad = subprocess.run([BIN, "--no-kube", "--tls-cert", cert, "--tls-key", cert,
                                  "--listen", "127.0.0.1:0"], capture_output=True, timeout=20)
            self.assertEqual(bad.returncode, 1)
            self.assertIn(b"TLS: certificate and key:", bad.stderr)

    def test_sigterm_finishes_requests_in_progress(self):
        api = ApiServer(token=TOKEN).start()
        try:
            api.set_node(k8s.node("w1", [k8s.disk("sda", 1000)]))
            pod = k8s.ioqos_pod("db", bw=100)
            api.add_pod(pod)
            api.pod_get_delay = 1.5
            ext = Extender("--shutdown-grace", "20", api=api)
            ext.wait_until(lambda: ext.get("/readyz")[0] == 200, what="node cache synced")
            result = {}

            def bind():
                result["r"] = ext.post("bind", {"PodName": "db", "PodNamespace": "default",
                                                "PodUID": pod["metadata"]["uid"], "Node": "w1"})

            t = threading.Thread(target=bind)
            t.start()
            ext.wait_until(lambda: api.count("GET", "/api/v1/namespaces/default/pods/db") == 1, what="bind started")
            ext.proc.send_signal(signal.SIGTERM)
            ext.wait_log("shutting down signal=SIGTERM")
            t.join(30)
            self.assertEqual(result["r"][1], {"Error": ""})
            self.assertEqual(ext.proc.wait(30), 0)
            ext.wait_log("stopped")
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", ext.port), timeout=5)
            ext.stop()
        finally:
            api.stop()

    def test_ipv6_listen_serves_both_families(self):
        try:
            socket.socket(socket.AF_INET6).close()
        except OSError:
            self.skipTest("no IPv6 on this machine")
        import http.client
        ext = Extender("--listen", "[::]:0")
        try:
            body = json.dumps(k8s.filter_args(k8s.pod("web"), names=["a"]))
            for host in ("127.0.0.1", "::1"):
                c = http.client.HTTPConnection(host, ext.port, timeout=10)
                c.request("POST", "/filter", body=body)
                self.assertEqual(c.getresponse().status, 200, host)
                c.close()
        finally:
            ext.stop()

    def test_usage(self):
        r = subprocess.run([BIN, "--help"], capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 0)
        helptext = r.stdout.decode()
        flags = sorted(set(w.rstrip(",") for w in helptext.split() if w.startswith("--")))
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "extender.md")) as f:
            doc = f.read()
        for f in flags:
            self.assertIn("`" + f, doc, "flag %s is not documented in docs/extender.md" % f)
        for args, msg in ((["--bogus"], b"unknown flag '--bogus'"), (["--threads", "x"], b"--threads"),
                          (["--listen", "nowhere"], b"has no port")):
            r = subprocess.run([BIN, "--no-kube"] + args, capture_output=True, timeout=10)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn(msg, r.stderr)

    def test_in_cluster_without_service_account(self):
        # KUBERNETES_SERVICE_HOST set but no token files: a clear error, exit 1
        r = subprocess.run([BIN, "--listen", "127.0.0.1:0"], capture_output=True, timeout=10,
                           env={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443",
                                "PATH": os.environ.get("PATH", "")})
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"token file", r.stderr)


CERTS_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                            "extender-certs.sh")


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


def client_cert(d, name, cn, ca_dir=None, eku="clientAuth"):
    """A client certificate (cert, key) with subject CN=cn, issued by the CA
    in ca_dir (ca.crt/ca.key), or by a new CA of its own when ca_dir is None."""
    if ca_dir is None:
        ca_dir = os.path.join(d, name + "-ca")
        os.makedirs(ca_dir)
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other CA",
                "-keyout", os.path.join(ca_dir, "ca.key"), "-out", os.path.join(ca_dir, "ca.crt"))
    key, csr, crt, ext = (os.path.join(d, name + s) for s in (".key", ".csr", ".crt", ".ext"))
    with open(ext, "w") as f:
        f.write("extendedKeyUsage=%s\n" % eku)
    openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", "/O=ioqos/CN=" + cn, "-keyout", key,
            "-out", csr)
    openssl("x509", "-req", "-days", "1", "-in", csr, "-CA", os.path.join(ca_dir, "ca.crt"),
            "-CAkey", os.path.join(ca_dir, "ca.key"), "-CAcreateserial", "-extfile", ext, "-out", crt)
    return crt, key


class SecretDir:
    """Files laid out as kubelet mounts a Secret: tls.crt -> ..data/tls.crt,
    ..data -> ..<timestamp>; update() swaps ..data atomically."""

    def __init__(self, path):
        self.path = path
        self.n = 0
        os.makedirs(path)

    def update(self, files):
        self.n += 1
        gen = "..gen%d" % self.n
        os.makedirs(os.path.join(self.path, gen))
        for name, src in files.items():
            with open(src, "rb") as f, open(os.path.join(self.path, gen, name), "wb") as g:
                g.write(f.read())
        tmp = os.path.join(self.path, "..data_tmp")
        os.symlink(gen, tmp)
        os.rename(tmp, os.path.join(self.path, "..data"))
        for name in files:
            link = os.path.join(self.path, name)
            if not os.path.islink(link):
                os.symlink(os.path.join("..data", name), link)

    def file(self, name):
        return os.path.join(self.path, name)


class Auth(unittest.TestCase):
    """Mutual TLS on the scheduling port (issue 12 item 1) and TLS files
    reloaded when they change (item 11), with certificates made by
    scripts/extender-certs.sh."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ioqos-auth-")
        self.d = self.tmp.name
        self.certs = os.path.join(self.d, "certs")
        subprocess.run(["sh", CERTS_SCRIPT, "-o", self.certs], check=True, capture_output=True)
        self.secret = SecretDir(os.path.join(self.d, "secret"))
        self.publish()

    def tearDown(self):
        self.tmp.cleanup()

    def publish(self):
        self.secret.update({"tls.crt": os.path.join(self.certs, "server.crt"),
                            "tls.key": os.path.join(self.certs, "server.key"),
                            "ca.crt": os.path.join(self.certs, "ca.crt")})

    def start(self, *extra):
        good = (os.path.join(self.certs, "client.crt"), os.path.join(self.certs, "client.key"))
        # the scheduler's client cert is read once here: later runs of the
        # script rewrite the files
        keep = os.path.join(self.d, "scheduler-client")
        os.makedirs(keep, exist_ok=True)
        kept = []
        for src in good:
            dst = os.path.join(keep, os.path.basename(src))
            with open(src, "rb") as f, open(dst, "wb") as g:
                g.write(f.read())
            kept.append(dst)
        return Extender("--tls-cert", self.secret.file("tls.crt"), "--tls-key", self.secret.file("tls.key"),
                        "--tls-client-ca", self.secret.file("ca.crt"), *extra,
                        client_cert=tuple(kept), ca=os.path.join(self.certs, "ca.crt"))

    def outcome(self, ext, cert):
        """HTTP status of a filter request presenting cert, or the TLS error."""
        body = k8s.filter_args(k8s.pod("web"), names=["a"])
        try:
            return ext.request("POST", "/filter", body, conn=ext.conn(client_cert=cert))[0]
        except (ssl.SSLError, ConnectionError) as e:
            return "refused: %s" % e

    def test_client_certificates_are_required_and_checked(self):
        other_ca = client_cert(self.d, "stranger", "ioqos-scheduler")  # right CN, another CA
        wrong_cn = client_cert(self.d, "tenant", "tenant-pod", ca_dir=self.certs)
        server_only = client_cert(self.d, "server-use", "ioqos-scheduler", ca_dir=self.certs, eku="serverAuth")
        with self.start("--tls-client-subject", "ioqos-scheduler") as ext:
            ext.wait_log(r"client_certs=required")
            self.assertEqual(self.outcome(ext, ext.client_cert), 200)
            self.assertEqual(self.outcome(ext, None), 403)
            ext.wait_log(r'request refused reason=client_cert .*error="no client certificate presented"')
            self.assertEqual(self.outcome(ext, other_ca), 403)
            ext.wait_log(r'request refused reason=client_cert .*error="client certificate refused: '
                         r'The certificate is NOT trusted')
            self.assertEqual(self.outcome(ext, wrong_cn), 403)
            ext.wait_log(r"client certificate CN 'tenant-pod' is not 'ioqos-scheduler'")
            self.assertEqual(self.outcome(ext, server_only), 403, "a certificate not for client auth")
            for path in ("bind", "prioritize"):  # every verb, not only filter
                st, res, _ = ext.request("POST", "/" + path, {"PodName": "a", "PodNamespace": "b", "Node": "c"},
                                         conn=ext.conn(client_cert=None))
                self.assertEqual(st, 403, path)
                self.assertIn("no client certificate", res["Error"])
            self.assertEqual(self.outcome(ext, ext.client_cert), 200)
        # the whole subject, when the value has '='
        with self.start("--tls-client-subject", "CN=ioqos-scheduler,O=ioqos") as ext:
            self.assertEqual(self.outcome(ext, ext.client_cert), 200)
            self.assertEqual(self.outcome(ext, wrong_cn), 403)
        # any certificate of the CA without --tls-client-subject
        with self.start() as ext:
            self.assertEqual(self.outcome(ext, wrong_cn), 200)
            self.assertEqual(self.outcome(ext, other_ca), 403)
        r = subprocess.run([BIN, "--no-kube", "--tls-client-ca", self.secret.file("ca.crt")],
                           capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--tls-client-ca needs --tls-cert and --tls-key", r.stderr)
        r = subprocess.run([BIN, "--no-kube", "--tls-client-subject", "x"], capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--tls-client-subject needs --tls-client-ca", r.stderr)
        # a client CA file that holds no certificate: refused at start
        r = subprocess.run([BIN, "--no-kube", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                            "--tls-cert", self.secret.file("tls.crt"), "--tls-key", self.secret.file("tls.key"),
                            "--tls-client-ca", self.secret.file("tls.key")], capture_output=True, timeout=20)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"TLS: client CA: no certificate in the file", r.stderr)

    def served_cert(self, ext):
        ctx = ext.tls_context(ext.client_cert)
        try:
            with socket.create_connection(("127.0.0.1", ext.port), timeout=10) as s:
                with ctx.wrap_socket(s) as t:
                    return t.getpeercert(binary_form=True)
        except OSError as e:
            raise AssertionError("%s; log:\n%s" % (e, ext.log()))

    def pem_der(self, path):
        with open(path) as f:
            return ssl.PEM_cert_to_DER_cert(f.read())

    def test_rotated_files_are_served_without_refusing_a_connection(self):
        with self.start("--threads", "2") as ext:
            threads = lambda: len(os.listdir("/proc/%d/task" % ext.proc.pid))  # noqa: E731
            before = threads()
            first = self.pem_der(os.path.join(self.certs, "server.crt"))
            self.assertEqual(self.served_cert(ext), first)
            kept = ext.conn()  # a keep-alive connection from before the rotation
            self.assertEqual(ext.request("POST", "/filter", k8s.filter_args(k8s.pod("w"), names=["a"]),
                                         conn=kept)[0], 200)
            # clients connect all through the rotation: none may be refused
            stop = threading.Event()
            results = []

            def hammer():
                while not stop.is_set():
                    t0 = time.monotonic()
                    results.append((self.outcome(ext, ext.client_cert), time.monotonic() - t0))
            t = threading.Thread(target=hammer)
            t.start()
            try:
                # a file that disappears is reported, and the loaded ones kept
                key = os.path.realpath(self.secret.file("tls.key"))
                os.rename(key, key + ".away")
                ext.wait_log(r"TLS files not readable, serving the ones loaded before", timeout=20)
                self.assertEqual(self.served_cert(ext), first)
                os.rename(key + ".away", key)
                # a half-done rotation (new certificate, old key) is not loaded
                subprocess.run(["sh", CERTS_SCRIPT, "-o", self.certs], check=True, capture_output=True)
                second = self.pem_der(os.path.join(self.certs, "server.crt"))
                self.assertNotEqual(first, second)
                with open(os.path.join(self.certs, "server.crt"), "rb") as f:
                    newcert = f.read()
                with open(self.secret.file("tls.crt"), "r+b") as f:  # in place, as a careless copy does
                    f.truncate(0)
                    f.write(newcert)
                ext.wait_log(r"TLS files changed but were not loaded", timeout=20)
                self.assertEqual(self.served_cert(ext), first)
                # then the whole Secret is swapped, as kubelet does
                self.publish()
                ext.wait_log(r"TLS certificate reloaded", timeout=20)
                self.assertEqual(self.served_cert(ext), second)
                time.sleep(0.5)
            finally:
                stop.set()
                t.join(30)
            bad = [r for r in results if r[0] != 200]
            self.assertEqual(bad, [], "connections refused during the rotation")
            self.assertGreater(len(results), 10)
            sys.stderr.write("\n  rotation: %d connections, none refused, slowest %.1f ms\n"
                             % (len(results), 1000 * max(r[1] for r in results)))
            # the connection opened before the rotation is still served
            self.assertEqual(ext.request("POST", "/filter", k8s.filter_args(k8s.pod("w"), names=["a"]),
                                         conn=kept)[0], 200)
            kept.close()
            # the retired server is stopped once its connections are gone
            ext.wait_until(lambda: threads() == before, what="the old server's threads to end")
            # a new CA: the old client certificate is refused from now on
            subprocess.run(["sh", CERTS_SCRIPT, "-o", self.certs, "--new-ca"], check=True, capture_output=True)
            self.publish()
            ext.wait_until(lambda: self.outcome(ext, ext.client_cert) == 403, what="the new client CA")
            fresh = (os.path.join(self.certs, "client.crt"), os.path.join(self.certs, "client.key"))
            ext.ca = os.path.join(self.certs, "ca.crt")
            self.assertEqual(self.outcome(ext, fresh), 200)


class RefusalLogs(unittest.TestCase):
    """A client repeating a refusal cannot grow the log without bound (issue
    30 item 6): every refused request is counted in the metric, but each
    reason writes at most one warn line per 10 s, the number held back
    going out with its next line, in a summary once the window is over, and
    at exit."""

    N = 200
    HOLD = 4  # --max-connections-per-ip: 127.0.0.1 keeps spare slots for the test's own requests

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ioqos-refusal-")
        self.certs = os.path.join(self.tmp.name, "certs")
        subprocess.run(["sh", CERTS_SCRIPT, "-o", self.certs], check=True, capture_output=True)

    def tearDown(self):
        self.tmp.cleanup()

    @staticmethod
    def warn_lines(ext, reason):
        """The warn lines about one reason: (msg, suppressed) each."""
        out = []
        for line in list(ext.lines):
            rec = dict(logfmt.parse(line))
            if rec["level"] == "warn" and rec.get("reason") == reason:
                out.append((rec["msg"], int(rec["suppressed"])))
        return out

    def accounted(self, ext, reason):
        """Refusals of one reason the log tells of: each warn line is one,
        and each line (a summary too) counts those held back before it."""
        return sum((msg == "request refused") + held for msg, held in self.warn_lines(ext, reason))

    def held_connections(self, ext, good):
        """HOLD connections from 127.0.0.2, each served once and kept open:
        that address has no slot left (served first, so none of them is the
        one refused when the server accepts queued connections out of order)."""
        import http.client
        held = []
        for _ in range(self.HOLD):
            c = http.client.HTTPSConnection("127.0.0.1", ext.port, timeout=30,
                                            source_address=("127.0.0.2", 0),
                                            context=ext.tls_context(good))
            held.append(c)
            st, _, _ = ext.request("POST", "/filter", k8s.filter_args(k8s.pod("w"), names=["a"]), conn=c)
            self.assertEqual(st, 200)
        return held

    def refused_connection(self, ext):
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        s.settimeout(10)
        s.connect(("127.0.0.1", ext.port))
        try:
            got = s.recv(100)
        except ConnectionResetError:
            got = b""
        s.close()
        self.assertEqual(got, b"", "a connection over the per-address limit was served")

    def test_each_reason_logs_once_per_window_and_counts_every_refusal(self):
        ca = os.path.join(self.certs, "ca.crt")
        good = (os.path.join(self.certs, "client.crt"), os.path.join(self.certs, "client.key"))
        start = time.monotonic()
        ext = Extender("--log-level", "info", "--tls-cert", os.path.join(self.certs, "server.crt"),
                       "--tls-key", os.path.join(self.certs, "server.key"), "--tls-client-ca", ca,
                       "--max-connections-per-ip", str(self.HOLD), client_cert=good, ca=ca)
        held = []
        try:
            # N requests without a client certificate, on one kept-alive connection
            c = ext.conn(client_cert=None)
            for _ in range(self.N):
                self.assertEqual(ext.request("GET", "/filter", conn=c)[0], 403)
            c.close()
            # N connections over the per-address limit, closed at accept
            held = self.held_connections(ext, good)
            for _ in range(self.N):
                self.refused_connection(ext)
            self.assertEqual(ext.metric('ioqos_extender_rejected_requests_total{reason="client_cert"}'), self.N)
            ext.wait_until(lambda: ext.metric(
                'ioqos_extender_rejected_requests_total{reason="connection_limit"}') == self.N,
                what="every refused connection counted")
            # the summaries come once the window after the first line is over
            for reason in ("client_cert", "connection_limit"):
                ext.wait_until(lambda: self.accounted(ext, reason) == self.N, timeout=40,
                               what="the %s refusals held back told in a summary" % reason)
            # a summary is its window's line: the next refusals are held back until exit
            c = ext.conn(client_cert=None)
            for _ in range(5):
                self.assertEqual(ext.request("GET", "/filter", conn=c)[0], 403)
            c.close()
        finally:
            for h in held:
                h.close()
            ext.stop()
        elapsed = time.monotonic() - start
        self.assertEqual(self.accounted(ext, "client_cert"), self.N + 5, ext.log())
        self.assertEqual(self.accounted(ext, "connection_limit"), self.N, ext.log())
        stop_at = next(i for i, line in enumerate(ext.lines) if 'msg="shutting down"' in line)
        self.assertTrue(any('msg="more requests refused" reason=client_cert suppressed=5 ' in line
                            for line in ext.lines[stop_at:]), ext.log())
        # one line per reason and window (+ the one at exit), not one per refusal
        for reason in ("client_cert", "connection_limit"):
            lines = self.warn_lines(ext, reason)
            self.assertLessEqual(len(lines), 2 + int(elapsed / 10), lines)
            self.assertEqual(lines[0], ("request refused", 0), lines)
        self.assertNotIn("level=debug", ext.log())


if __name__ == "__main__":
    unittest.main()

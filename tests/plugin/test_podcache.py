#!/usr/bin/python3
"""The pod cache under hostile pods (issue 12 item 4): the daemon runs in a
child cgroup of the host's cgroup v1 memory controller with the Deployment's
128 MiB limit, and the API server stand-in serves a tenant pod of ~1.4 MB
made of many small objects (30 000 env entries and their managedFields).
Read whole with json-c that pod was >100 MB of tree and the daemon was
OOM-killed in a loop; read through the streaming filter it costs its few
fields. Also: a pod whose ioqos-read fields alone exceed the budget is kept
by name, counted and refused, never acted on."""
import json
import os
import sys
import time
import unittest
import uuid

from harness import BW, MIB, PluginTest, new_uid, pod_object, v2_pod_cgroup

MEMCG = "/sys/fs/cgroup/memory"
LIMIT = 128 * MIB


def env_bomb_pod(name, uid, n_env=22000, bw=0):
    """A pod of one container with n_env env entries and the managedFields
    an apply of them leaves: ~1.4 MB of compact JSON (the API server's),
    almost all of it small objects."""
    pod = pod_object(name, uid, bw=bw)
    pod["spec"]["containers"][0]["env"] = [{"name": "E%d" % i} for i in range(n_env)]
    fields = {'k:{"name":"E%d"}' % i: {".": {}, "f:name": {}} for i in range(n_env)}
    pod["metadata"]["managedFields"] = [{
        "manager": "kubectl", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:env": fields}}}}}]
    return pod


class MemCgroup:
    """A child of the host's cgroup v1 memory controller, removed after."""

    def __init__(self, limit):
        if not os.path.isdir(MEMCG):
            raise unittest.SkipTest("no cgroup v1 memory controller at " + MEMCG)
        self.path = os.path.join(MEMCG, "ioqos-test-" + uuid.uuid4().hex[:8])
        os.mkdir(self.path)
        with open(os.path.join(self.path, "memory.limit_in_bytes"), "w") as f:
            f.write(str(limit))

    def wrapper(self):
        # joins before exec, so everything the daemon allocates is charged here
        return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', self.path]

    def read(self, name):
        with open(os.path.join(self.path, name)) as f:
            return f.read().strip()

    def remove(self, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.rmdir(self.path)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


class PodCacheMemory(PluginTest):
    def memcg(self):
        cg = MemCgroup(LIMIT)
        self.addCleanup(cg.remove)
        return cg

    def test_env_bomb_pod_under_128mib(self):
        api = self.env.api
        # a tenant's two pods: read whole, each was ~80 MB of json-c tree
        big = env_bomb_pod("tenant-bomb", new_uid(), bw=100)
        size = len(json.dumps(big, separators=(",", ":")))  # as the API server sends it
        self.assertGreater(size, 1300 * 1000)
        api.put_pod(big)
        api.put_pod(env_bomb_pod("tenant-bomb-2", new_uid()))
        for i in range(45):  # three list pages of 20
            api.put_pod(pod_object("small-%d" % i, new_uid(), bw=10))
        cg = self.memcg()
        d = self.start(wrapper=cg.wrapper(), ready=False)
        self.addCleanup(d.kill)
        # synced with every pod: the small ones and the big ones
        d.wait_log(r"pod cache listed pods=47\b", timeout=60)
        self.assertEqual(api.count("GET", "/api/v1/pods?limit=20&"), 3)
        # a watch event of the big pod is read the same way
        big["metadata"]["labels"] = {"touched": "1"}
        api.put_pod(big)
        d.wait_log(r"pod event type=MODIFIED pod=default/tenant-bomb ", timeout=30)
        self.env.kubelet.wait_registered(BW)
        d.wait_ready()
        peak = int(cg.read("memory.max_usage_in_bytes"))
        sys.stderr.write("two pods of %d bytes: peak memory %.1f MiB (limit %d MiB)\n"
                         % (size, peak / MIB, LIMIT // MIB))
        # the kept fields of a pod are a few KiB: far below the limit
        self.assertLess(peak, LIMIT // 2)
        self.assertIsNone(d.proc.poll(), "daemon died:\n" + d.text()[-3000:])
        self.assertEqual(d.metric("ioqos_pod_cache_synced"), 1)
        self.assertEqual(d.metric("ioqos_pod_cache_oversized_total"), 0)
        self.assertEqual(cg.read("memory.failcnt"), "0")
        self.assertEqual(d.terminate(), 0)

    def test_env_bomb_pod_fetched_on_a_cache_miss(self):
        """The GET on a cache miss (PreStart before the watch brought the
        pod) reads through the same filter."""
        api, k = self.env.api, self.env.kubelet
        cg = self.memcg()
        d = self.start(wrapper=cg.wrapper())
        self.addCleanup(d.kill)
        k.wait_list(BW, lambda l: len(l) == 1000)
        # the pod cache's next watch is late: the pod is not cached in time
        api.inject(path="/api/v1/pods", watch=True, delay=20, count=1)
        api.close_watches()
        uid = new_uid()
        api.put_pod(env_bomb_pod("tenant-bomb", uid, bw=100))
        ids = ids_free(k)[:100]
        k.allocate(BW, ids)
        k.set_pod("default", "tenant-bomb", {"app": {BW: ids}})
        v2_pod_cgroup(self.env.cgroup_root, uid, "burstable")
        k.prestart(BW, ids)
        d.wait_log(r"pod fetched on cache miss pod=default/tenant-bomb uid=" + uid)
        d.wait_log(r"prestart done resource=ioqos/bandwidth pod=default/tenant-bomb ")
        peak = int(cg.read("memory.max_usage_in_bytes"))
        sys.stderr.write("GET of a pod of 1.4 MB: peak memory %.1f MiB\n" % (peak / MIB))
        self.assertLess(peak, LIMIT // 2)
        self.assertIsNone(d.proc.poll())

    def test_oversized_pod_is_counted_and_refused(self):
        """5000 containers asking for units: the fields ioqos reads exceed
        the per-pod budget; the pod is cached by name, counted, and a
        PreStart for it fails instead of acting on a partial spec."""
        api = self.env.api
        uid = new_uid()
        pod = pod_object("many-ctrs", uid, bw=1)
        c0 = pod["spec"]["containers"][0]
        pod["spec"]["containers"] = [dict(c0, name="c%d" % i) for i in range(5000)]
        api.put_pod(pod)
        api.put_pod(pod_object("fine", new_uid(), bw=10))
        d = self.start()
        d.wait_log(r"pod cache listed pods=2\b")
        d.wait_log(r"pod too large to read: .* pod=default/many-ctrs uid=" + uid)
        self.assertGreaterEqual(d.metric("ioqos_pod_cache_oversized_total"), 1)
        # the normal pod is served as ever
        _, ids, _, _ = self.admit("fine", bw=10)
        self.env.kubelet.prestart(BW, ids[BW])
        # the oversized one: PreStart fails closed
        k = self.env.kubelet
        avail = ids_free(k)
        a = k.allocate(BW, avail[:1])
        self.assertTrue(a.container_responses)
        k.set_pod("default", "many-ctrs", {"c0": {BW: avail[:1]}})
        with self.assertRaises(Exception) as ctx:
            k.prestart(BW, avail[:1])
        self.assertIn("not acting on a partial spec", str(ctx.exception))
        self.assertIsNone(d.proc.poll())


class TerminalPods(PluginTest):
    """A pod in a terminal phase (Succeeded, Failed) that kubelet still
    lists with its units (before 1.34 List showed every pod kubelet knows;
    its device manager hands those units to new pods) is neither counted as
    allocated nor given its limits again: its limits are released."""

    def test_succeeded_pod_is_not_counted_nor_reapplied(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        uid, ids1, _, cg1 = self.admit("done", bw=100)
        _, ids2, _, _ = self.admit("live", bw=50)
        k.prestart(BW, ids1[BW])
        k.prestart(BW, ids2[BW])
        self.assertEqual(d.metric("ioqos_disk_allocated_bytes_per_second", disk="fakedisk0"), 150 * MIB)
        # the job finished; kubelet still lists it with its units
        self.env.api.put_pod(pod_object("done", uid, bw=100, phase="Succeeded"))
        d.wait_log(r"pod event type=MODIFIED pod=default/done uid=%s phase=Succeeded" % uid)
        d.wait_log(r"pod gone, .* pod=default/done")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and \
                d.metric("ioqos_disk_allocated_bytes_per_second", disk="fakedisk0") != 50 * MIB:
            time.sleep(0.2)
        self.assertEqual(d.metric("ioqos_disk_allocated_bytes_per_second", disk="fakedisk0"), 50 * MIB)
        self.assertEqual(d.metric("ioqos_pods_released_total"), 1)
        self.assertIsNone(d.metric("ioqos_pod_grant_bytes_per_second", pod="done"))
        # and reconcile does not put its limits back
        with open(os.path.join(cg1, "io.max"), "w") as f:
            f.write("")
        n = d.text().count("reconcile pass")
        d.wait_log(r"(?s)(reconcile pass.*){%d}" % (n + 2))
        self.assertNotRegex(d.text(), r"(grant rebuilt from pod resources|drift corrected|"
                                      r"grant not in place) pod=default/done")
        # (the pool of pods without a grant may bound it now; its grant is gone)
        with open(os.path.join(cg1, "io.max")) as f:
            self.assertNotIn("rbps=104857600", f.read())
        self.assertEqual(d.metric("ioqos_pod_grant_bytes_per_second", pod="live"), 50 * MIB)


class KubeToken(PluginTest):
    def test_token_over_plain_http_is_refused(self):
        """The stand-in is http://: a token file is refused at start unless
        IOQOS_KUBE_ALLOW_INSECURE_TOKEN=1 (issue 12 item 11)."""
        tok = os.path.join(self.env.root, "token")
        with open(tok, "w") as f:
            f.write("s3cret\n")
        d = self.start(extra=["--kube-token-file", tok], ready=False)
        self.assertNotEqual(d.proc.wait(30), 0)
        self.assertIn("refusing to send the bearer token of %s over plain http://" % tok, d.text())
        self.assertEqual(self.env.api.count("GET", "/api/v1/pods"), 0)


def ids_free(k):
    taken = set(i for _, _, c in k.pod_resources for r in c.values() for i in r.get(BW, []))
    return [i for i, h in k.plugins[BW].lists[-1] if h == "Healthy" and i not in taken]


if __name__ == "__main__":
    unittest.main(verbosity=2)

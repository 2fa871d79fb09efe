# SPDX-License-Identifier: Apache-2.0
"""DRA mode (--mode=dra): the real daemon as the DRA driver ioqos.io.

kubelet is played by dra_kubelet.DraKubelet (python3-grpcio, plugin
registration v1 and the DRA v1/v1beta1 services of proto/) and by the
harness's pod resources stand-in; the API server by tests/support/apiserver.py,
which stores the ResourceSlice the daemon publishes and the ResourceClaims
the tests write as kube-scheduler would have allocated them. Enforcement goes
into the fake cgroup v2 tree (systemd layout) of the harness; HostBlkio below
does the same on the host's real cgroup v1 hierarchy, and tests/e2e/test-dra.sh
on a real cgroup v2 kernel. The fake disk fakedisk0 (250:0) has 1000 MiB/s and
100000 IOPS: 1000 bandwidth units and 1000 IOPS units."""
import json
import os
import re
import subprocess
import threading
import time
import unittest

import grpc

from harness import (BIN, MIB, NODE, PluginTest, fake_disk, iomax_of, new_uid, pod_object, read,
                     remove_fake_disk, unbounded, v2_pod_cgroup, wait_for, write)
from dra_kubelet import DraKubelet  # after harness: it puts the proto modules on sys.path
from test_v1_blkio import BLKIO, host_disk  # only these: its test classes must not run here

DRIVER = "ioqos.io"
DISK, DEV = "fakedisk0", "250:0"
# the daemon's registrar looks every second and on each directory event
GAUGE_WAIT_S = 5


def claim_object(name, uid, pod_name, pod_uid, consumed, device=DISK, ns="default", pool=NODE,
                 driver=DRIVER, request="disk", share_id="6a0c", reserved=None):
    """A ResourceClaim as the API server returns it once kube-scheduler
    allocated it: one result of `driver`, `consumed` ({"bandwidth": "200"}),
    reserved for one pod (or the `reserved` list)."""
    result = {"request": request, "driver": driver, "pool": pool, "device": device,
              "consumedCapacity": consumed}
    if share_id is not None:
        result["shareID"] = share_id
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns, "uid": uid},
        "spec": {"devices": {"requests": [{"name": request, "exactly": {
            "deviceClassName": "ioqos-disk", "capacity": {"requests": consumed}}}]}},
        "status": {
            "allocation": {"devices": {"results": [result]}, "nodeSelector": {}},
            "reservedFor": reserved if reserved is not None else [
                {"resource": "pods", "name": pod_name, "uid": pod_uid}],
        },
    }


class DraTest(PluginTest):
    def assert_cleared(self, cg):
        """DEV's limits cleared in pod cgroup cg (no line, or every key max), and still so a
        moment later. In these test trees io.max is a plain file: a rewrite by a pass of the
        plugin (open with O_TRUNC, then write) can be read empty half-way, which the kernel's
        cgroup file never is (seen once under load: the read returned no line). So the state
        is awaited, then read again after the rewrite window."""
        wait_for(lambda: unbounded(iomax_of(cg, DEV)), timeout=5,
                 what="%s cleared in %s/io.max" % (DEV, cg))
        time.sleep(0.2)
        lim = iomax_of(cg, DEV)
        self.assertTrue(unbounded(lim), "%s/io.max limits %s again: %r" % (cg, DEV, lim))

    def start_dra(self, extra=(), register=True):
        env = self.env
        self.plugins_dir = os.path.join(env.root, "plugins")
        self.registry_dir = os.path.join(env.root, "plugins_registry")
        d = self.start(extra=["--mode=dra", "--kubelet-plugins-dir", self.plugins_dir,
                              "--kubelet-registry-dir", self.registry_dir] + list(extra),
                       ready=False)
        if register:
            self.kubelet_dra = DraKubelet(self.registry_dir)
            self.addCleanup(self.kubelet_dra.close)
            self.kubelet_dra.register()
            d.wait_ready()
        return d

    def pod(self, name, qos="burstable", ns="default"):
        """A pod bound here whose cgroup kubelet made (before prepare)."""
        uid = new_uid()
        self.env.api.put_pod(pod_object(name, uid, ns=ns, qos={"burstable": "Burstable",
                                                                "guaranteed": "Guaranteed",
                                                                "besteffort": "BestEffort"}[qos],
                                        phase="Pending"))
        self.env.kubelet.set_pod(ns, name, {"app": {}})
        return uid, v2_pod_cgroup(self.env.cgroup_root, uid, qos, atomic=True)

    def name_claims(self, pod_name, pod_uid, spec=(), status=(), phase="Running"):
        """The pod object as the API server shows it once kubelet runs it: its
        claims in spec.resourceClaims (by name) and, for those made from a
        template, status.resourceClaimStatuses."""
        pod = pod_object(pod_name, pod_uid, phase=phase)
        pod["spec"]["resourceClaims"] = (
            [{"name": "r%d" % i, "resourceClaimName": n} for i, n in enumerate(spec)] +
            [{"name": "t%d" % i, "resourceClaimTemplateName": "tpl"} for i in range(len(status))])
        pod["status"]["resourceClaimStatuses"] = [{"name": "t%d" % i, "resourceClaimName": n}
                                                  for i, n in enumerate(status)]
        self.env.api.put_pod(pod)

    def claim(self, pod_name, pod_uid, consumed, name=None, **kw):
        name = name or "%s-disk-%s" % (pod_name, new_uid()[:5])
        uid = new_uid()
        self.env.api.put_claim(claim_object(name, uid, pod_name, pod_uid, consumed, **kw))
        return ("default" if "ns" not in kw else kw["ns"], uid, name)

    def wait_gauge(self, d, value, what):
        """ioqos_kubelet_registered of the driver reaches value within GAUGE_WAIT_S."""
        wait_for(lambda: d.metric("ioqos_kubelet_registered", resource=DRIVER) == value,
                 timeout=GAUGE_WAIT_S, what="ioqos_kubelet_registered %d (%s)" % (value, what))

    def slice_devices(self):
        s = self.env.api.slices(node=NODE, driver=DRIVER)
        return s, {d["name"]: d for sl in s for d in sl["spec"]["devices"]}


class Registration(DraTest):
    def test_registers_publishes_and_sells_nothing_as_device_plugin(self):
        d = self.start_dra()
        info = self.kubelet_dra.info
        self.assertEqual(info.type, "DRAPlugin")
        self.assertEqual(info.name, DRIVER)
        self.assertEqual(info.endpoint, os.path.join(self.plugins_dir, DRIVER, "dra.sock"))
        self.assertEqual(list(info.supported_versions), ["v1.DRAPlugin", "v1beta1.DRAPlugin"])
        self.assertEqual(self.kubelet_dra.version, "v1.DRAPlugin")
        self.assertTrue(os.path.exists(os.path.join(self.registry_dir, DRIVER + "-reg.sock")))
        # one slice, owned by the Node, one device per disk, capacity in units
        slices, devs = self.slice_devices()
        self.assertEqual(len(slices), 1, slices)
        sl = slices[0]
        node_uid = self.env.api.get("Node", None, NODE)["metadata"]["uid"]
        self.assertEqual([o["uid"] for o in sl["metadata"]["ownerReferences"]], [node_uid])
        self.assertEqual(sl["spec"]["pool"]["name"], NODE)
        self.assertEqual(sl["spec"]["pool"]["resourceSliceCount"], 1)
        dev = devs[DISK]
        self.assertTrue(dev["allowMultipleAllocations"])
        self.assertEqual(dev["attributes"]["disk"], {"string": DISK})
        # the API server canonicalises 1000 to 1k: compared by value by the daemon
        self.assertEqual(dev["capacity"]["bandwidth"]["value"], "1k")
        self.assertEqual(dev["capacity"]["iops"]["value"], "1k")
        self.assertEqual(dev["capacity"]["bandwidth"]["requestPolicy"]["validRange"]["step"], "1")
        # no device plugin: nothing registered with kubelet's device-plugin socket
        self.assertEqual(os.listdir(self.env.dp_dir), [x for x in os.listdir(self.env.dp_dir)
                                                      if not x.startswith("ioqos-")])
        self.assertFalse(self.env.kubelet.registrations, self.env.kubelet.registrations)
        self.assertIn("dra driver registered with kubelet driver=ioqos.io", d.text())
        # the same content is never written again (generation stays)
        gen = sl["spec"]["pool"]["generation"]
        time.sleep(2.5)
        self.assertEqual(self.slice_devices()[0][0]["spec"]["pool"]["generation"], gen)
        self.assertEqual(self.env.api.count("PUT", "/apis/resource.k8s.io/v1/resourceslices"), 0)
        # SIGTERM: kubelet deregisters us (socket gone); the slice stays for the next
        # instance (kubelet deletes it if none registers within 30 s)
        self.assertEqual(d.terminate(), 0)
        self.assertFalse(os.path.exists(os.path.join(self.registry_dir, DRIVER + "-reg.sock")))
        self.assertEqual(len(self.env.api.slices(node=NODE, driver=DRIVER)), 1)

    def test_kubelet_refusal_keeps_it_unready(self):
        d = self.start_dra(register=False)
        k = DraKubelet(self.registry_dir)
        self.addCleanup(k.close)
        with self.assertRaises(Exception):
            k.register(reject="driver ioqos.io: no such version")
        d.wait_log(r'kubelet refused the dra driver driver=ioqos.io error="driver ioqos.io: no such '
                   r'version"')
        code, body = d.http("/readyz")
        self.assertEqual(code, 503, body)
        self.assertIn("not registered with kubelet", body)
        self.assertEqual(d.metric("ioqos_kubelet_registered", resource=DRIVER), 0)
        k.register()  # kubelet tries again later
        d.wait_ready()
        self.wait_gauge(d, 1, "registered")
        with self.assertRaises(Exception):  # and refuses it after all
            k.register(reject="driver ioqos.io: plugin name already registered")
        self.wait_gauge(d, 0, "refused")
        d.wait_log(r'kubelet registration lost driver=ioqos.io reason="kubelet refused the driver"')

    def test_registration_gauge_follows_kubelet_and_the_registration_socket(self):
        d = self.start_dra()
        self.wait_gauge(d, 1, "registered")
        # kubelet stopped: kubelet.sock goes (every kubelet serves it, DRA or not)
        self.env.kubelet.stop_registration()
        self.wait_gauge(d, 0, "kubelet.sock gone")
        d.wait_log(r'kubelet registration lost driver=ioqos.io reason="kubelet socket gone"')
        self.env.kubelet.start_registration()
        self.kubelet_dra.register()  # a starting kubelet registers what plugins_registry holds
        self.wait_gauge(d, 1, "kubelet back")
        # the registration socket deleted: kubelet deregisters the driver; the
        # daemon serves a fresh one, which kubelet's watcher registers again
        reg = os.path.join(self.registry_dir, DRIVER + "-reg.sock")
        os.unlink(reg)
        self.wait_gauge(d, 0, "registration socket deleted")
        d.wait_log(r'kubelet registration lost driver=ioqos.io reason="registration socket deleted')
        d.wait_log(r"dra registration socket gone, serving it again driver=ioqos.io")
        wait_for(lambda: os.path.exists(reg), timeout=GAUGE_WAIT_S, what="a fresh registration socket")
        self.assertEqual(d.http("/readyz")[0], 503)
        self.kubelet_dra.register()
        self.wait_gauge(d, 1, "registered again")
        d.wait_ready()

    def test_the_other_mode_on_the_same_node_is_refused(self):
        self.start_dra()
        env = self.env
        out = subprocess.run([BIN, "--device-plugin-dir", env.dp_dir, "--state-dir", env.state_dir + "2",
                              "--pod-resources-socket", env.podres_sock, "--node-name", NODE,
                              "--kube-api-server", env.api.url, "--cgroupfs-root", env.cgroup_root,
                              "--sysfs-root", env.sysfs_root, "--kubelet-registry-dir",
                              self.registry_dir, "--metrics-address", "", "--explain-socket", "off",
                              "--config", env.config_path],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("--mode=device-plugin: a dra mode instance runs on this node", out.stdout + out.stderr)


    def test_dra_mode_beside_a_device_plugin_instance_is_refused(self):
        self.start()  # device-plugin mode, registered with kubelet
        env = self.env
        out = subprocess.run([BIN, "--mode=dra", "--device-plugin-dir", env.dp_dir,
                              "--state-dir", env.state_dir + "2", "--pod-resources-socket", env.podres_sock,
                              "--node-name", NODE, "--kube-api-server", env.api.url,
                              "--cgroupfs-root", env.cgroup_root, "--sysfs-root", env.sysfs_root,
                              "--kubelet-plugins-dir", os.path.join(env.root, "plugins"),
                              "--kubelet-registry-dir", os.path.join(env.root, "plugins_registry"),
                              "--metrics-address", "", "--explain-socket", "off", "--config", env.config_path],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("--mode=dra: a device-plugin mode instance runs on this node", out.stdout + out.stderr)
        self.assertEqual(self.env.api.slices(), [], "nothing published")


class Prepare(DraTest):
    def test_limits_in_place_before_the_sandbox_and_cleared_at_unprepare(self):
        d = self.start_dra()
        k = self.kubelet_dra
        uid, cg = self.pod("db")
        self.assertEqual(read(os.path.join(cg, "io.max")), "", "nothing before prepare")
        c = self.claim("db", uid, {"bandwidth": "200", "iops": "10"})
        got = k.prepare([c])
        self.assertEqual(got[c[1]]["error"], "", got)
        self.assertEqual(got[c[1]]["devices"], [{"request_names": ["disk"], "pool_name": NODE,
                                                 "device_name": DISK, "cdi_device_ids": [],
                                                 "share_id": "6a0c"}])
        # written and read back before the answer: kubelet creates the sandbox after it
        self.assertEqual(iomax_of(cg, DEV), {"rbps": 200 * MIB, "wbps": 200 * MIB,
                                             "riops": 1000, "wiops": 1000})
        self.assertRegex(d.text(), r"dra claim prepared claim=default/%s uid=%s pod=default/db "
                                   r"pod_uid=%s cgroup=%s disk=%s device=%s request=disk share_id=6a0c "
                                   r"bandwidth_units=200 iops_units=10" %
                         (c[2], c[1], uid, re.escape(cg), DISK, DISK))
        self.assertEqual(d.metric("ioqos_dra_claims_prepared_total"), 1)
        # again (kubelet retries after its own restart): same answer, no write
        self.assertEqual(k.prepare([c]), got)
        # ioqosctl explain: the same pod view as a device-plugin grant, the reason is the claim
        r = subprocess.run([os.environ["IOQOS_CTL_BIN"], "explain", "--socket",
                            os.path.join(self.env.state_dir, "plugin.sock"), "--json", "default/db"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertTrue(doc["granted"], doc)
        (g,) = doc["grants"]
        self.assertEqual(g["reason"]["summary"],
                         "kube-scheduler allocated it to the pod's DRA claim default/%s" % c[2])
        self.assertEqual(g["reason"]["claims"][0]["bandwidthUnits"], 200)
        self.assertEqual([f["readBack"] for f in doc["files"] if f["file"] == "io.max"],
                         ["%s rbps=%d wbps=%d riops=1000 wiops=1000" % (DEV, 200 * MIB, 200 * MIB)])
        # the held units count for the node annotation and pods without a grant
        self.env.api.wait(lambda: '"allocated":{"ioqos/bandwidth":200,"ioqos/iops":10}'
                          in (self.env.api.annotation(NODE, "ioqos.io/devices") or ""),
                          what="held units in the node annotation")
        # drift is corrected like any grant's
        write(os.path.join(cg, "io.max"), "%s rbps=max wbps=max riops=max wiops=max\n" % DEV)
        d.wait_log(r"limit drift corrected pod=default/db uid=%s" % uid, timeout=15)
        self.assertEqual(iomax_of(cg, DEV)["wbps"], 200 * MIB)
        # unprepare: limits go, and the log counts the two writes that cleared them (io.max
        # and io.weight; it said writes=0 before); again: nothing to do, no error
        self.assertEqual(k.unprepare([c]), {c[1]: ""})
        self.assertEqual(iomax_of(cg, DEV), {"rbps": None, "wbps": None, "riops": None, "wiops": None})
        self.assertRegex(d.text(), r"dra claim unprepared claim=default/%s uid=%s pod=default/db "
                                   r"cgroup=%s writes=2\n" % (c[2], c[1], re.escape(cg)))
        self.assertEqual(k.unprepare([c]), {c[1]: ""})
        self.assertEqual(d.metric("ioqos_dra_claims_unprepared_total"), 1)

    def test_two_claims_of_one_pod_add_up_and_v1beta1_has_no_share_id(self):
        self.start_dra()
        k = self.kubelet_dra
        uid, cg = self.pod("db")
        a = self.claim("db", uid, {"bandwidth": "100"})
        b = self.claim("db", uid, {"iops": "5"}, share_id=None)
        got = k.prepare([a, b], version="v1beta1")
        self.assertEqual({u: r["error"] for u, r in got.items()}, {a[1]: "", b[1]: ""})
        self.assertIsNone(got[a[1]]["devices"][0]["share_id"])
        self.assertEqual(iomax_of(cg, DEV), {"rbps": 100 * MIB, "wbps": 100 * MIB,
                                             "riops": 500, "wiops": 500})
        k.unprepare([a], version="v1beta1")
        # the IOPS claim alone: capped at its share of the bandwidth too (5 of 1000 units)
        self.assertEqual(iomax_of(cg, DEV), {"rbps": 5 * MIB, "wbps": 5 * MIB, "riops": 500,
                                             "wiops": 500})

    def test_iops_only_claim_is_capped_at_its_share_of_bandwidth(self):
        """An IOPS-only grant holds no bandwidth units, but it is capped at the same share
        of the disk's bandwidth: 10 of fakedisk0's 1000 IOPS units (1 %) -> 10 of its 1000
        bandwidth units. Before, io.max said rbps=max wbps=max: I/O of 1 MiB at its IOPS
        could take the disk."""
        self.start_dra()
        uid, cg = self.pod("db")
        c = self.claim("db", uid, {"iops": "10"})
        self.assertEqual(self.kubelet_dra.prepare([c])[c[1]]["error"], "")
        self.assertEqual(iomax_of(cg, DEV), {"rbps": 10 * MIB, "wbps": 10 * MIB, "riops": 1000,
                                             "wiops": 1000})
        # the cap is not held: the node still has all its bandwidth units to sell
        self.env.api.wait(lambda: '"allocated":{"ioqos/bandwidth":0,"ioqos/iops":10}'
                          in (self.env.api.annotation(NODE, "ioqos.io/devices") or ""),
                          what="only the IOPS units held")
        r = subprocess.run([os.environ["IOQOS_CTL_BIN"], "explain", "--socket",
                            os.path.join(self.env.state_dir, "plugin.sock"), "--json", "default/db"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        (g,) = json.loads(r.stdout)["grants"]
        self.assertTrue(g["bandwidthCapFromIops"], g)
        self.assertEqual(g["limits"]["rbps"], 10 * MIB)
        # kept by the reconcile loop as written (no drift, no rewrite to max)
        time.sleep(1.5)
        self.assertEqual(iomax_of(cg, DEV)["wbps"], 10 * MIB)

    def test_restart_keeps_claims_and_the_slice(self):
        """A restart (a rollout) keeps the prepared claims and the node's slice:
        the slice was deleted at SIGTERM and created again by the next instance,
        and no claim could be allocated on the node in between. Sampled every
        20 ms across the restart, while kubelet keeps preparing new claims (it
        retries those that fail while the driver is away)."""
        d = self.start_dra()
        k = self.kubelet_dra
        uid, cg = self.pod("db")
        c = self.claim("db", uid, {"bandwidth": "300"})
        self.assertEqual(k.prepare([c])[c[1]]["error"], "")
        (before,) = self.env.api.slices(node=NODE, driver=DRIVER)
        seen, stop = [], threading.Event()

        def sample():
            while not stop.is_set():
                seen.append([s["metadata"]["name"] for s in self.env.api.slices(node=NODE, driver=DRIVER)])
                time.sleep(0.02)
        t = threading.Thread(target=sample)
        t.start()
        try:
            self.assertEqual(d.terminate(), 0)
            self.assertRegex(d.text(), r"resourceslice kept at shutdown node=%s driver=%s reason=" % (NODE, DRIVER))
            self.assertNotIn("resourceslice deleted", d.text())
            self.assertEqual(iomax_of(cg, DEV)["wbps"], 300 * MIB, "limits stay across a restart")
            # kubelet prepares the next pod's claim while the driver is away: it fails, kubelet retries
            uid2, cg2 = self.pod("app")
            c2 = self.claim("app", uid2, {"bandwidth": "100"})
            self.assertRaises(grpc.RpcError, k.prepare, [c2], timeout=2)
            k.close()
            d2 = self.start_dra()  # kubelet registers the new instance (new socket)
            self.assertEqual(self.kubelet_dra.prepare([c2])[c2[1]]["error"], "")
            self.assertEqual(iomax_of(cg2, DEV)["wbps"], 100 * MIB)
            time.sleep(0.5)  # a few publisher passes of the new instance
        finally:
            stop.set()
            t.join()
        self.assertRegex(d2.text(), r"prepared DRA claims restored claims=1")
        self.assertTrue(seen, "the slices were sampled")
        self.assertEqual([x for x in seen if x != [before["metadata"]["name"]]], [],
                         "the node's one slice was there at every sample, under its name")
        (after,) = self.env.api.slices(node=NODE, driver=DRIVER)
        self.assertEqual(after["spec"]["pool"]["generation"], before["spec"]["pool"]["generation"],
                         "same content: the new instance did not rewrite it")
        self.assertNotRegex(d2.text(), r"resourceslice (created|updated|deleted)")
        # kubelet never prepares again: the restored claim is kept in place
        write(os.path.join(cg, "io.max"), "")
        d2.wait_log(r"limit drift corrected pod=default/db uid=%s" % uid, timeout=15)
        self.assertEqual(iomax_of(cg, DEV)["wbps"], 300 * MIB)
        self.assertEqual(self.kubelet_dra.unprepare([c]), {c[1]: ""})
        self.assert_cleared(cg)

    def test_lost_state_file_rebuilt_from_the_api_server(self):
        """The node's state directory wiped while a claim is prepared: kubelet never
        prepares it again, so the restarted plugin finds it from the API server (the
        pod names its claim, the claim is allocated here and reserved for the pod)
        and keeps it: held units, drift correction, unprepare. Claims that are not
        this node's to keep are left alone."""
        d = self.start_dra()
        k = self.kubelet_dra
        uid, cg = self.pod("db")
        c = self.claim("db", uid, {"bandwidth": "200"})
        self.name_claims("db", uid, spec=[c[2]], phase="Running")
        self.assertEqual(k.prepare([c])[c[1]]["error"], "")
        # a second pod, force-deleted later while kubelet has not unprepared its claim
        uid4, cg4 = self.pod("gone")
        c4 = self.claim("gone", uid4, {"iops": "5"})
        self.name_claims("gone", uid4, spec=[c4[2]], phase="Running")
        self.assertEqual(k.prepare([c4])[c4[1]]["error"], "")
        # a claim made from a template (named in the status), allocated in another node's pool
        uid2, _ = self.pod("elsewhere")
        c2 = self.claim("elsewhere", uid2, {"bandwidth": "100"}, pool="node-b")
        self.name_claims("elsewhere", uid2, status=[c2[2]], phase="Running")
        # a finished pod: kubelet unprepared its claim before the final status
        uid3, _ = self.pod("done")
        c3 = self.claim("done", uid3, {"bandwidth": "100"})
        self.name_claims("done", uid3, spec=[c3[2]], phase="Succeeded")
        self.assertEqual(d.terminate(), 0)
        os.remove(os.path.join(self.env.state_dir, "dra-claims.json"))
        k.close()
        write(os.path.join(cg, "io.max"), "")  # and the limits drifted meanwhile
        d2 = self.start_dra()
        d2.wait_log(r"dra claim recovered from the API server \(the state file did not hold it\) "
                    r"claim=default/%s uid=%s pod=default/db pod_uid=%s disk=%s bandwidth_units=200 "
                    r"iops_units=0" % (c[2], c[1], uid, DISK))
        d2.wait_log(r"prepared DRA claims checked against the API server pods=3 claims=3 recovered=2 "
                    r"skipped=1 held=2")
        self.assertRegex(d2.text(), r"dra claim recovery: claim skipped claim=default/%s "
                                    r"pod=default/elsewhere reason=.*pool" % c2[2])
        self.assertEqual(d2.metric("ioqos_dra_claims_recovered_total"), 2)
        # the pod gone from the API server and from kubelet without an unprepare: its claim's
        # record goes with its limits (else its units would stay held for good)
        self.env.api.wait(lambda: iomax_of(cg4, DEV)["riops"] == 500, timeout=15,
                          what="the second recovered claim's limits written")
        self.env.kubelet.remove_pod("default", "gone")
        self.env.api.delete_pod("default", "gone")
        d2.wait_log(r"dra claims of a gone pod forgotten pod=default/gone uid=%s claims=1" % uid4)
        self.assertNotIn(c4[1], read(os.path.join(self.env.state_dir, "dra-claims.json")))
        # in place again (the drift corrected by the pass), counted as held
        self.env.api.wait(lambda: iomax_of(cg, DEV)["wbps"] == 200 * MIB, timeout=15,
                          what="the recovered claim's limits written")
        self.env.api.wait(lambda: '"allocated":{"ioqos/bandwidth":200,"ioqos/iops":0}'
                          in (self.env.api.annotation(NODE, "ioqos.io/devices") or ""),
                          what="the recovered claim's units held in the node annotation")
        # and kubelet's unprepare finds it
        self.assertEqual(self.kubelet_dra.unprepare([c]), {c[1]: ""})
        self.assert_cleared(cg)
        self.assertEqual(d2.metric("ioqos_dra_claims_unprepared_total"), 1)
        # kubelet done with it: a later pass never brings it back
        time.sleep(1.5)
        self.assert_cleared(cg)

    def test_kubelet_restart_deletes_slices_they_come_back(self):
        d = self.start_dra()
        (name,) = [s["metadata"]["name"] for s in self.env.api.slices(node=NODE, driver=DRIVER)]
        self.env.api.delete_slice(name)  # kubelet >= 1.34 at its start
        self.env.api.wait(lambda: self.env.api.slices(node=NODE, driver=DRIVER), timeout=20,
                          what="the slice published again")
        d.wait_log(r"resourceslice created name=\S+ pool=%s generation=0 devices=1" % NODE)

    def test_capacity_change_bumps_the_generation(self):
        d = self.start_dra()
        (sl,) = self.env.api.slices(node=NODE, driver=DRIVER)
        # someone edits the slice (or an older ioqos wrote other content)
        sl["spec"]["devices"][0]["capacity"]["bandwidth"]["value"] = "5"
        self.env.api.put_slice(sl)
        self.env.api.wait(lambda: self.env.api.slices(node=NODE, driver=DRIVER)[0]["spec"]["pool"]
                          ["generation"] == 1, timeout=20, what="the slice rewritten")
        (sl,) = self.env.api.slices(node=NODE, driver=DRIVER)
        self.assertEqual(sl["spec"]["devices"][0]["capacity"]["bandwidth"]["value"], "1k")
        d.wait_log(r"resourceslice updated name=%s pool=%s generation=1" % (sl["metadata"]["name"], NODE))


class Health(DraTest):
    """A disk that goes away leaves the slice (the scheduler places no new
    claim on it) and comes back with it; each change is one generation."""
    env_args = {"disks": (("diska", "250:0"), ("diskb", "250:16"))}

    def devices(self):
        (sl,) = self.env.api.slices(node=NODE, driver=DRIVER)
        return sorted(d["name"] for d in sl["spec"]["devices"]), sl["spec"]["pool"]["generation"]

    def test_disk_gone_and_back(self):
        d = self.start_dra()
        self.assertEqual(self.devices(), (["diska", "diskb"], 0))
        remove_fake_disk(self.env.sysfs_root, "diskb", "250:16")
        self.env.api.wait(lambda: self.devices()[0] == ["diska"], timeout=20, what="diskb out of the slice")
        self.assertEqual(self.devices(), (["diska"], 1))
        d.wait_log(r"resourceslice updated name=\S+ pool=%s generation=1 devices=1" % NODE)
        fake_disk(self.env.sysfs_root, "diskb", "250:16")
        self.env.api.wait(lambda: self.devices()[0] == ["diska", "diskb"], timeout=20,
                          what="diskb back in the slice")
        self.assertEqual(self.devices(), (["diska", "diskb"], 2))


class Ungranted(DraTest):
    """nodePolicy.ungranted works the same in DRA mode: the claims' units are
    what is held, the rest of the disk is the pool of pods without a grant."""
    # lending off: the claim's pod is idle and would lend (test_ungranted.py proves lending)
    env_args = {"extra_config": {"nodePolicy": {"ungranted": {"enable": True, "intervalMs": 300,
                                                              "lend": False}}}}

    def test_pods_without_a_claim_share_what_claims_do_not_hold(self):
        d = self.start_dra()
        uid, cg = self.pod("db")
        _, other = self.pod("batch")
        c = self.claim("db", uid, {"bandwidth": "300"})
        self.assertEqual(self.kubelet_dra.prepare([c])[c[1]]["error"], "")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            lim = iomax_of(other, DEV)
            if lim and lim["wbps"] == 700 * MIB:
                break
            time.sleep(0.05)
        self.assertEqual(iomax_of(other, DEV)["wbps"], 700 * MIB, read(os.path.join(other, "io.max")))
        self.assertEqual(iomax_of(cg, DEV)["wbps"], 300 * MIB, "the claim's grant is left alone")
        # unprepared: nothing is held, so nothing bounds the others
        self.kubelet_dra.unprepare([c])
        d.wait_log(r"ungranted bounds removed disk=%s pods=1 reason=\"no pod holds units of the disk\"" % DISK,
                   timeout=10)


class BadInput(DraTest):
    """Every refusal: a clear error for the claim, nothing written."""

    def assert_refused(self, claims, pattern, cg, version=None):
        got = self.kubelet_dra.prepare(claims, version=version)
        self.assertEqual(set(got), {c[1] for c in claims}, "every claim has an entry")
        for c in claims:
            self.assertRegex(got[c[1]]["error"], pattern)
            self.assertEqual(got[c[1]]["devices"], [])
        self.assertEqual(read(os.path.join(cg, "io.max")), "", "nothing written")

    def test_refusals(self):
        d = self.start_dra()
        uid, cg = self.pod("db")
        other_uid, _ = self.pod("web")
        cases = [
            (("default", new_uid(), "nosuch"), r"claim default/nosuch does not exist in the API server"),
            (self.claim("db", uid, {"bandwidth": "20"}, pool="node-b"), r"pool"),
            (self.claim("db", uid, {"bandwidth": "20"}, driver="gpu.example.com"), r"gpu\.example\.com"),
            (self.claim("db", uid, {"bandwidth": "5000"}), r"above|more than"),
            (self.claim("db", uid, {"bandwidth": "abc"}), r"quantity"),
            (self.claim("db", uid, {"bandwidth": "20"}, device="nosuchdisk"), r"nosuchdisk"),
            (self.claim("db", uid, {"bandwidth": "20"}, reserved=[
                {"resource": "pods", "name": "db", "uid": uid},
                {"resource": "pods", "name": "web", "uid": other_uid}]),
             r"reserved for 2 pods.*ResourceClaimTemplate"),
            (self.claim("db", other_uid, {"bandwidth": "20"}), r"reserved for pod db with UID %s, "
                                                                r"the pod of that name has UID %s"
             % (other_uid, uid)),
            (("../etc", new_uid(), "x"), r"not a namespace name"),
        ]
        for c, pattern in cases:
            with self.subTest(pattern=pattern):
                self.assert_refused([c], pattern, cg)
        # the UID kubelet sends differs from the claim's (deleted and recreated)
        ns, _, name = self.claim("db", uid, {"bandwidth": "20"})
        self.assert_refused([(ns, new_uid(), name)], r"deleted and recreated", cg)
        # a good claim beside a bad one: each answered on its own
        good = self.claim("db", uid, {"bandwidth": "20"})
        got = self.kubelet_dra.prepare([good, ("default", new_uid(), "nosuch")])
        self.assertEqual(got[good[1]]["error"], "")
        self.assertEqual(iomax_of(cg, DEV)["wbps"], 20 * MIB)
        self.assertGreaterEqual(d.metric("ioqos_dra_claim_prepare_errors_total"), len(cases) + 2)
        # garbage protobuf: INVALID_ARGUMENT, the daemon lives on
        code, details = self.kubelet_dra.raw(
            "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources", b"\x0a\xff\xff\xff")
        self.assertEqual(code.name, "INVALID_ARGUMENT", details)
        # more claims in one call than any pod has: refused whole, memory stays bounded
        with self.assertRaises(Exception) as cm:
            self.kubelet_dra.prepare([("default", new_uid(), "c%d" % i) for i in range(129)])
        self.assertIn("129 claims in one call, at most 128", str(cm.exception))
        self.assertIsNone(d.proc.poll())

    def test_api_server_down_fails_closed(self):
        self.start_dra()
        uid, cg = self.pod("db")
        c = self.claim("db", uid, {"bandwidth": "20"})
        self.env.api.inject(path="/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
                            method="GET", status=503, message="etcd unavailable")
        self.assert_refused([c], r"HTTP 503", cg)


def remove_cgroup_tree(top):
    """rmdir a cgroup subtree of our own, leaves first (real cgroups: the
    files go with their directory)."""
    for dirpath, _, _ in sorted(os.walk(top), key=lambda t: -t[0].count("/")):
        os.rmdir(dirpath)


HOST_DISK, HOST_DEV = host_disk()
ROOT = "/ioqos-dra-test-%d" % os.getpid()


@unittest.skipUnless(os.path.exists(BLKIO + "/blkio.throttle.read_bps_device") and os.geteuid() == 0
                     and HOST_DISK, "needs root and a cgroup v1 blkio hierarchy at " + BLKIO)
class HostBlkio(DraTest):
    """Prepare and unprepare on the host's real cgroup v1 blkio hierarchy,
    below a child cgroup of our own (kubelet's cgroupfs layout)."""
    env_args = {"cgroup_root": "/sys/fs/cgroup", "sysfs_root": "/sys", "disks": ((HOST_DISK, HOST_DEV),),
                "kubelet_cgroup_root": ROOT, "driver": "cgroupfs"}

    def remove_tree(self):
        remove_cgroup_tree(os.path.join(BLKIO, ROOT.strip("/")))

    def test_prepare_and_unprepare_on_real_blkio(self):
        d = self.start_dra()
        uid = new_uid()
        self.env.api.put_pod(pod_object("db", uid, qos="Burstable", phase="Pending"))
        self.env.kubelet.set_pod("default", "db", {"app": {}})
        cg = os.path.join(BLKIO, ROOT.strip("/"), "kubepods", "burstable", "pod" + uid)
        os.makedirs(cg)
        self.addCleanup(self.remove_tree)
        self.assertEqual(read(cg + "/blkio.throttle.read_bps_device"), "")
        name, cuid = "db-disk", new_uid()
        self.env.api.put_claim(claim_object(name, cuid, "db", uid, {"bandwidth": "200", "iops": "30"},
                                            device=HOST_DISK.replace("_", "-").lower()))
        got = self.kubelet_dra.prepare([("default", cuid, name)])
        self.assertEqual(got[cuid]["error"], "", got)
        for f, v in (("read_bps", 200 * MIB), ("write_bps", 200 * MIB), ("read_iops", 3000),
                     ("write_iops", 3000)):
            self.assertEqual(read(cg + "/blkio.throttle.%s_device" % f).strip(), "%s %d" % (HOST_DEV, v))
        self.assertIn("readback=", d.text())
        self.assertEqual(self.kubelet_dra.unprepare([("default", cuid, name)]), {cuid: ""})
        self.assertEqual(read(cg + "/blkio.throttle.read_bps_device"), "")
        # the four blkio.throttle files cleared, and counted (the kernel drops the lines)
        self.assertRegex(d.text(), r"dra claim unprepared claim=default/%s uid=%s pod=default/db "
                                   r"cgroup=%s writes=4\n" % (name, cuid, re.escape(cg)))


V2_DISK = os.environ.get("IOQOS_DRA_V2_DISK")  # set by tests/e2e/test-dra.sh inside the VM
CG2 = "/sys/fs/cgroup"


@unittest.skipUnless(V2_DISK and os.path.exists(CG2 + "/cgroup.controllers") and os.geteuid() == 0,
                     "runs inside the cgroup v2 VM (tests/e2e/test-dra.sh)")
class HostV2(DraTest):
    """Prepare and unprepare on a real cgroup v2 kernel (the e2e VM), with
    kubelet's cgroupfs layout below a child cgroup of our own."""
    env_args = {"cgroup_root": CG2, "sysfs_root": "/sys",
                "disks": ((V2_DISK, read("/sys/block/%s/dev" % V2_DISK).strip() if V2_DISK else ""),),
                "kubelet_cgroup_root": ROOT, "driver": "cgroupfs"}

    def remove_tree(self):
        remove_cgroup_tree(os.path.join(CG2, ROOT.strip("/")))

    def test_prepare_and_unprepare_on_real_cgroup_v2(self):
        dev = read("/sys/block/%s/dev" % V2_DISK).strip()
        # what kubelet makes before prepare: the QoS and pod cgroups, io enabled
        uid = new_uid()
        top = os.path.join(CG2, ROOT.strip("/"))
        cg = os.path.join(top, "kubepods", "burstable", "pod" + uid)
        self.addCleanup(self.remove_tree)
        parent = CG2
        for part in (ROOT.strip("/"), "kubepods", "burstable", "pod" + uid):
            write(os.path.join(parent, "cgroup.subtree_control"), "+io +memory")
            parent = os.path.join(parent, part)
            os.mkdir(parent)
        d = self.start_dra()
        self.env.api.put_pod(pod_object("db", uid, qos="Burstable", phase="Pending"))
        self.env.kubelet.set_pod("default", "db", {"app": {}})
        self.assertNotIn(dev, read(cg + "/io.max"), "no limit before prepare")
        self.assertNotIn(dev, read(cg + "/io.stat"), "0 bytes before prepare")
        name, cuid = "db-disk", new_uid()
        self.env.api.put_claim(claim_object(name, cuid, "db", uid, {"bandwidth": "50", "iops": "3"},
                                            device=V2_DISK))
        got = self.kubelet_dra.prepare([("default", cuid, name)])
        self.assertEqual(got[cuid]["error"], "", got)
        self.assertEqual(iomax_of(cg, dev), {"rbps": 50 * MIB, "wbps": 50 * MIB, "riops": 300,
                                             "wiops": 300}, read(cg + "/io.max"))
        self.assertIn("readback=", d.text())
        # I/O of a process in the pod cgroup is charged there (the limit's cgroup)
        out = subprocess.run(["sh", "-c", "echo $$ > %s/cgroup.procs && exec dd if=/dev/%s of=/dev/null "
                              "bs=64k count=64 iflag=direct status=none" % (cg, V2_DISK)],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        stat = [ln for ln in read(cg + "/io.stat").splitlines() if ln.startswith(dev + " ")]
        self.assertTrue(stat and "rbytes=4194304" in stat[0], stat)
        self.assertEqual(self.kubelet_dra.unprepare([("default", cuid, name)]), {cuid: ""})
        self.assertNotIn(dev, read(cg + "/io.max"), "cleared at unprepare")
        # An IOPS-only claim and a writer of 1 MiB requests: held at the claim's share of
        # the disk's bandwidth (10 of 1000 IOPS units: 10 MiB/s), not at 1000 IOPS x 1 MiB
        # (all of the disk). The kernel's io.max, measured: the rate never above 1.1 x.
        name, cuid = "db-iops", new_uid()
        self.env.api.put_claim(claim_object(name, cuid, "db", uid, {"iops": "10"}, device=V2_DISK))
        got = self.kubelet_dra.prepare([("default", cuid, name)])
        self.assertEqual(got[cuid]["error"], "", got)
        self.assertEqual(iomax_of(cg, dev), {"rbps": 10 * MIB, "wbps": 10 * MIB, "riops": 1000,
                                             "wiops": 1000}, read(cg + "/io.max"))
        t0 = time.monotonic()
        out = subprocess.run(["sh", "-c", "echo $$ > %s/cgroup.procs && exec dd if=/dev/zero of=/dev/%s "
                              "bs=1M count=40 oflag=direct status=none" % (cg, V2_DISK)],
                             capture_output=True, text=True, timeout=120)
        took = time.monotonic() - t0
        self.assertEqual(out.returncode, 0, out.stderr)
        rate = 40 * MIB / took
        print("IOPS-only claim, 1 MiB writes: %.1f MiB/s against a cap of 10 MiB/s (%.1f s)"
              % (rate / MIB, took))
        self.assertLessEqual(rate, 1.1 * 10 * MIB, "the bandwidth cap held")
        self.assertEqual(self.kubelet_dra.unprepare([("default", cuid, name)]), {cuid: ""})


if __name__ == "__main__":
    unittest.main(verbosity=2)

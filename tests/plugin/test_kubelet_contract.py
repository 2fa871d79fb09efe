# SPDX-License-Identifier: Apache-2.0
"""The kubelet side of ioqos-plugin against a kubelet stand-in (python grpcio)
over real unix sockets: registration (with kubelet's GetDevicePluginOptions
call inside Register), ListAndWatch, GetPreferredAllocation, Allocate, bad
input, kubelet restart, kubelet stopped or crashed (ioqos_kubelet_registered
follows it), a second instance, SIGTERM."""
import os
import stat
import time
import unittest

import grpc

from harness import BW, IOPS, MIB, PluginTest, ids_of, pod_object, new_uid, wait_for
import kubelet_stub  # after harness: it puts tests/support and the proto modules on sys.path

# the registrar looks at kubelet.sock on every directory event and at least
# once a second. The bound is generous because the wait can include starting a
# python kubelet process (grpc import) on a loaded machine (make test runs four
# tests at a time, valgrind among them): it still fails a daemon that never looks.
GAUGE_WAIT_S = 30


class Registration(PluginTest):
    def test_register_with_options_callback_and_full_lists(self):
        d = self.start()
        k = self.env.kubelet
        # Register only succeeded because our socket answered kubelet's
        # GetDevicePluginOptions while Register was in flight
        for res, sock in ((BW, "ioqos-bandwidth.sock"), (IOPS, "ioqos-iops.sock")):
            p = k.plugins[res]
            self.assertEqual(p.endpoint, sock)
            self.assertTrue(p.options.pre_start_required)
            self.assertTrue(p.options.get_preferred_allocation_available)
            lst = k.wait_list(res, lambda l: len(l) == 1000)
            tag = "bw" if res == BW else "iops"
            self.assertEqual(sorted(i for i, _ in lst),
                             sorted("fakedisk0-%s-%d" % (tag, n) for n in range(1000)))
            self.assertEqual({h for _, h in lst}, {"Healthy"})
            self.assertTrue(all(len(i) <= 63 for i, _ in lst))
            # only root (kubelet) may connect to a root daemon's socket
            mode = os.stat(os.path.join(self.env.dp_dir, sock)).st_mode & 0o777
            self.assertEqual(mode & 0o077, 0, "%s mode %o: group or others may connect" % (sock, mode))
        self.assertEqual(k.register_errors, [])
        self.assertEqual(d.metric("ioqos_kubelet_registered", resource=BW), 1)
        self.assertIn("registered with kubelet resource=ioqos/bandwidth", d.text())

    def test_waits_for_kubelet_and_backs_off(self):
        k = self.env.kubelet
        k.reject_register = "device manager not ready"
        d = self.env.start_daemon()
        d.wait_log(r"register with kubelet failed resource=ioqos/bandwidth retry_in=1s")
        d.wait_log(r"register with kubelet failed resource=ioqos/bandwidth retry_in=2s")
        self.assertEqual(d.http("/readyz")[0], 503)
        self.assertIn("not registered", d.http("/readyz")[1])
        self.assertEqual(d.metric("ioqos_kubelet_registered", resource=BW), 0)
        k.reject_register = None
        k.wait_registered(BW)
        k.wait_registered(IOPS)
        d.wait_ready()
        self.assertGreaterEqual(d.metric("ioqos_kubelet_registration_errors_total", resource=BW), 2)
        self.assertEqual(d.metric("ioqos_kubelet_registered", resource=BW), 1)

    def test_kubelet_restart_reserves_and_reregisters(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        k.restart(down_seconds=0.3)
        # our socket was deleted: the plugin must serve a fresh one and register again
        k.wait_registered(BW, count=2)
        k.wait_registered(IOPS, count=2)
        for res in (BW, IOPS):
            lst = k.wait_list(res, lambda l: len(l) == 1000)
            self.assertEqual(len(ids_of(lst)), 1000)
            self.assertTrue(stat.S_ISSOCK(os.lstat(os.path.join(
                self.env.dp_dir, k.plugins[res].endpoint)).st_mode))
        d.wait_log(r"own socket gone, serving again resource=ioqos/bandwidth")
        d.wait_log(r"kubelet socket re-created")
        self.wait_gauge(d, 1, "registered with the new kubelet")
        self.assertEqual(d.metric("ioqos_kubelet_restarts_total"), 1)
        self.assertEqual(d.metric("ioqos_socket_reserves_total", resource=IOPS), 1)
        # and it still serves
        a = k.allocate(BW, ["fakedisk0-bw-7"])
        self.assertEqual(a.container_responses[0].envs["IOQOS_BANDWIDTH_BYTES_PER_SEC"], str(MIB))

    def wait_gauge(self, d, value, what):
        wait_for(lambda: all(d.metric("ioqos_kubelet_registered", resource=r) == value
                             for r in (BW, IOPS)),
                 timeout=GAUGE_WAIT_S, what="ioqos_kubelet_registered %d (%s)" % (value, what))

    def test_register_refused_as_already_connected_stands(self):
        """kubelet.sock becomes another file while kubelet keeps streaming from our
        sockets (as when the plugin looked at the old kubelet's file just before Register
        reached the new one, during a kubelet restart): the plugin reads it as a new
        kubelet and registers again; kubelet 1.37 refuses, it already streams from that
        socket. The registration stands: gauge 1, /readyz 200 (before: 0 and 503 for
        good, retried with back-off, seen on the real kubelet in the cluster test)."""
        d = self.start()
        k = self.env.kubelet
        self.wait_gauge(d, 1, "registered")
        for res in (BW, IOPS):
            k.wait_list(res, lambda l: len(l) == 1000)
        k.replace_registration_socket()
        k.wait(lambda: set(k.refused_connected) >= {BW, IOPS}, what="both Registers refused as connected")
        d.wait_log(r"kubelet already streams from our socket, registration stands resource=ioqos/bandwidth")
        self.wait_gauge(d, 1, "the registration stands")
        d.wait_ready()
        self.assertEqual(len(k.registrations), 2, "kubelet kept the first connections")
        # and the first streams still serve
        a = k.allocate(BW, ["fakedisk0-bw-3"])
        self.assertEqual(a.container_responses[0].envs["IOQOS_BANDWIDTH_BYTES_PER_SEC"], str(MIB))

    def test_kubelet_stopped_gauge_follows_its_socket(self):
        d = self.start()
        k = self.env.kubelet
        self.wait_gauge(d, 1, "registered")
        sock = os.path.join(self.env.dp_dir, "kubelet.sock")
        before = os.stat(sock).st_ino
        k.stop_registration()  # kubelet.sock goes; our sockets stay
        self.wait_gauge(d, 0, "kubelet.sock gone")
        d.wait_log(r'kubelet registration lost resource=ioqos/bandwidth kubelet=\S+ '
                   r'reason="kubelet socket gone"')
        self.assertEqual(d.http("/readyz")[0], 503)
        k.start_registration()
        after = os.stat(sock).st_ino
        k.wait_registered(BW, count=2)
        k.wait_registered(IOPS, count=2)
        self.wait_gauge(d, 1, "kubelet back")
        d.wait_ready()
        # a kubelet.sock that was gone and is back is a new kubelet, also when the
        # filesystem gave the new file the old one's inode (ext4 does at once)
        d.wait_log(r"kubelet socket re-created")
        self.assertEqual(d.metric("ioqos_kubelet_restarts_total"), 1,
                         "inode before %d, after %d" % (before, after))

    def test_kubelet_crash_gauge_follows_a_dead_socket(self):
        k = self.env.kubelet
        k.stop_registration()
        d = self.env.start_daemon()
        child = kubelet_stub.spawn(self.env.dp_dir)
        self.addCleanup(lambda: child.poll() is None and (child.kill(), child.wait()))
        self.wait_gauge(d, 1, "registered with the kubelet process")
        sock = os.path.join(self.env.dp_dir, "kubelet.sock")
        ident = os.stat(sock).st_ino
        child.kill()
        child.wait()
        # a crashed kubelet leaves its socket file: only a connection tells
        self.assertEqual(os.stat(sock).st_ino, ident)
        self.wait_gauge(d, 0, "kubelet killed, its socket left behind")
        d.wait_log(r'kubelet registration lost resource=ioqos/iops kubelet=\S+ '
                   r'reason="kubelet socket refuses connections')
        time.sleep(2)  # a dead kubelet is not called: no Register failing against it
        self.assertNotIn("register with kubelet failed", d.text())
        self.assertEqual(d.metric("ioqos_kubelet_registered", resource=BW), 0)
        k.start_registration()
        k.wait_registered(BW)
        k.wait_registered(IOPS)
        self.wait_gauge(d, 1, "a new kubelet")

    def test_second_instance_refuses_to_start(self):
        self.start()
        d2 = self.env.start_daemon()
        rc = d2.proc.wait(30)
        self.assertEqual(rc, 1)
        self.assertIn("served by another live process", d2.text())
        self.assertIn("refusing to take it over", d2.text())
        # the first one is untouched
        a = self.env.kubelet.allocate(BW, ["fakedisk0-bw-1"])
        self.assertEqual(len(a.container_responses), 1)

    def test_sigterm_empty_list_then_unavailable_then_exit_0(self):
        d = self.start()
        k = self.env.kubelet
        for res in (BW, IOPS):
            k.wait_list(res, lambda l: len(l) == 1000)
        self.assertEqual(d.terminate(), 0)
        for res in (BW, IOPS):
            p = k.plugins[res]
            k.wait(lambda: p.stream_code is not None, what="stream end")
            self.assertEqual(p.lists[-1], [], "last message must be the empty list")
            self.assertEqual(p.stream_code, grpc.StatusCode.UNAVAILABLE)
            self.assertFalse(os.path.exists(os.path.join(self.env.dp_dir, p.endpoint)))
        self.assertIn("ioqos-plugin stopped", d.text())


class Allocation(PluginTest):
    env_args = {"disks": (("diska", "250:0"), ("diskb", "250:16"))}

    def test_preferred_keeps_must_include_and_stays_on_one_disk(self):
        self.start()
        k = self.env.kubelet
        lst = k.wait_list(BW, lambda l: len(l) == 2000)
        avail = ids_of(lst)
        must = ["diskb-bw-5", "diskb-bw-9"]
        r = k.preferred(BW, avail, must=must, size=10)
        got = list(r.container_responses[0].deviceIDs)
        self.assertEqual(len(got), 10)
        self.assertEqual(got[:2], must)
        self.assertTrue(all(i.startswith("diskb-") for i in got), got)
        self.assertEqual(len(set(got)), 10)
        self.assertTrue(set(got) <= set(avail))

    def test_preferred_uses_placement_on_offered_units(self):
        self.start()
        k = self.env.kubelet
        lst = k.wait_list(BW, lambda l: len(l) == 2000)
        # diska has only 100 units left to offer: least-allocated picks diskb
        avail = [i for i in ids_of(lst) if i.startswith("diskb-") or int(i.rsplit("-", 1)[1]) < 100]
        r = k.preferred(BW, avail, size=50)
        got = list(r.container_responses[0].deviceIDs)
        self.assertEqual(len(got), 50)
        self.assertTrue(all(i.startswith("diskb-") and i in avail for i in got), got)
        # a request only diska's offer... no: only diskb can hold 950
        r = k.preferred(BW, avail, size=950)
        self.assertTrue(all(i.startswith("diskb-") for i in r.container_responses[0].deviceIDs))

    def test_preferred_follows_annotation_of_the_one_pending_pod(self):
        d = self.start()
        k, api = self.env.kubelet, self.env.api
        lst = k.wait_list(BW, lambda l: len(l) == 2000)
        avail = ids_of(lst)
        # placement alone would pick diska (tie on score and free units -> lower name)
        r = k.preferred(BW, avail, size=30)
        self.assertTrue(all(i.startswith("diska-") for i in r.container_responses[0].deviceIDs))
        api.put_pod(pod_object("db", new_uid(), bw=30, annotations={"ioqos.io/disk": "diskb"}))
        d.wait_log(r"pod event type=ADDED pod=default/db")
        r = k.preferred(BW, avail, size=30)
        got = list(r.container_responses[0].deviceIDs)
        self.assertTrue(all(i.startswith("diskb-") for i in got), got)
        self.assertIn("how=annotation", d.text())
        # a second pending pod of the same size makes it ambiguous: placement again
        api.put_pod(pod_object("db2", new_uid(), bw=30, annotations={"ioqos.io/disk": "diskb"}))
        d.wait_log(r"pod event type=ADDED pod=default/db2")
        r = k.preferred(BW, avail, size=30)
        self.assertTrue(all(i.startswith("diska-") for i in r.container_responses[0].deviceIDs))
        d.wait_log(r"how=placement candidates=2")

    def test_preferred_annotation_for_the_second_resource_of_a_pod(self):
        d = self.start()
        k, api = self.env.kubelet, self.env.api
        avail = ids_of(k.wait_list(IOPS, lambda l: len(l) == 2000))
        # "web" got its bandwidth units already and now asks for IOPS: still a
        # candidate, and its annotation wins over placement (which would pick
        # diskb, the disk with more free IOPS units)
        api.put_pod(pod_object("web", new_uid(), bw=30, iops=20, annotations={"ioqos.io/disk": "diska"}))
        k.set_pod("default", "web", {"app": {BW: ["diska-bw-%d" % i for i in range(30)]}})
        # "old" holds all of its IOPS units: not asking any more
        api.put_pod(pod_object("old", new_uid(), iops=20, annotations={"ioqos.io/disk": "diska"}))
        k.set_pod("default", "old", {"app": {IOPS: ["diska-iops-%d" % i for i in range(20)]}})
        d.wait_log(r"pod event type=ADDED pod=default/old")
        r = k.preferred(IOPS, [i for i in avail if not i.startswith("diska-iops-") or
                               int(i.rsplit("-", 1)[1]) >= 20], size=20)
        got = list(r.container_responses[0].deviceIDs)
        self.assertEqual(len(got), 20)
        self.assertTrue(all(i.startswith("diska-iops-") for i in got), got)
        d.wait_log(r"how=annotation candidates=1 pod=default/web")

    def test_allocate_envs(self):
        self.start()
        k = self.env.kubelet
        k.wait_list(IOPS, lambda l: len(l) == 2000)
        a = k.allocate(BW, ["diska-bw-%d" % i for i in range(200)])
        envs = dict(a.container_responses[0].envs)
        self.assertEqual(envs, {"IOQOS_DEVICES": "diska",
                                "IOQOS_BANDWIDTH_BYTES_PER_SEC": str(200 * MIB)})
        a = k.allocate(IOPS, ["diska-iops-1", "diskb-iops-2", "diskb-iops-3"])
        envs = dict(a.container_responses[0].envs)
        self.assertEqual(envs, {"IOQOS_DEVICES": "diska,diskb", "IOQOS_IOPS": "diska=100,diskb=200"})


class BadInput(PluginTest):
    def assert_invalid(self, fn, *args, contains=""):
        with self.assertRaises(grpc.RpcError) as cm:
            fn(*args)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, cm.exception.details())
        self.assertIn(contains, cm.exception.details())
        return cm.exception.details()

    def test_each_bad_input_is_rejected_and_a_good_call_still_works(self):
        d = self.start()
        k = self.env.kubelet
        k.wait_list(BW, lambda l: len(l) == 1000)
        garbage = b"\xff\xfe\x00garbage\x12\x99"
        for method in ("Allocate", "GetPreferredAllocation", "PreStartContainer"):
            self.assert_invalid(k.raw, BW, method, garbage, contains="not a valid")
        self.assert_invalid(k.allocate, BW, ["fakedisk0-bw-1000"], contains="does not exist")
        self.assert_invalid(k.allocate, BW, ["nvme9n1-bw-1"], contains="does not manage")
        self.assert_invalid(k.allocate, BW, ["fakedisk0-iops-1"], contains="not ioqos/bandwidth")
        self.assert_invalid(k.allocate, BW, ["fakedisk0-bw-3", "fakedisk0-bw-3"], contains="more than once")
        self.assert_invalid(k.allocate, BW, [], contains="no device IDs")
        self.assert_invalid(k.allocate, BW, ["x" * 64], contains="longer than 63")
        self.assert_invalid(k.allocate, BW, ["fakedisk0-bw-01"], contains="ID #1")
        self.assert_invalid(k.allocate, BW, ["fakedisk0-bw-%d" % (i % 1000) for i in range(100000)],
                            contains="100000 IDs given but this node has only 1000")
        self.assert_invalid(k.preferred, BW, ["fakedisk0-bw-%d" % i for i in range(10)], (), 11,
                            contains="only 10 are available")
        self.assert_invalid(k.preferred, BW, ["fakedisk0-bw-1"], (), 0, contains="allocation_size 0")
        self.assert_invalid(k.prestart, BW, ["fakedisk0-bw-1", "fakedisk0-bw-1"], contains="more than once")
        self.assert_invalid(k.prestart, BW, ["f" * 100000], contains="longer than 63")
        with self.assertRaises(grpc.RpcError) as cm:
            k.channel(BW).unary_unary("/v1beta1.DevicePlugin/NoSuchMethod")(b"", timeout=5)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        # nothing changed: same list, and good calls succeed
        a = k.allocate(BW, ["fakedisk0-bw-3", "fakedisk0-bw-4"])
        self.assertEqual(a.container_responses[0].envs["IOQOS_BANDWIDTH_BYTES_PER_SEC"], str(2 * MIB))
        r = k.preferred(BW, ids_of(k.plugins[BW].lists[-1]), size=5)
        self.assertEqual(len(r.container_responses[0].deviceIDs), 5)
        self.assertEqual(len(k.plugins[BW].lists[-1]), 1000)
        self.assertEqual(d.metric("ioqos_rpc_requests_total", resource=BW, method="Allocate",
                                  code="INVALID_ARGUMENT"), 9)
        self.assertEqual(d.metric("ioqos_enforcement_errors_total", reason="invalid-ids"), 2)
        self.assertIsNone(d.proc.poll())


if __name__ == "__main__":
    unittest.main(verbosity=2)

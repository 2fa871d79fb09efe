# SPDX-License-Identifier: Apache-2.0
"""A kubelet stand-in for ioqos-plugin tests, written with Debian's grpcio.

It plays kubelet's side of the device plugin API over real unix sockets, in
the order kubelet does (shared/reference/k8s-interfaces.md section 3):

- Registration on <dp_dir>/kubelet.sock: Register checks the version and the
  resource name, then dials the plugin's endpoint and calls
  GetDevicePluginOptions *before* answering, then opens one ListAndWatch
  stream whose messages each replace the resource's device list. Like
  kubelet 1.37, a Register for the endpoint it already streams from is
  refused ("device plugin already connected: <path>").
- PodResourcesLister (v1 List) on its own socket, serving a pod table the
  test sets, one ContainerDevices entry per device ID like kubelet.
- restart(): what a kubelet restart does to the directory: every unix socket
  in it is deleted, then kubelet.sock is served again.
- stop_registration() / start_registration(): kubelet stopped (its
  kubelet.sock goes, the plugins' sockets stay) and started again without a
  cleanup; spawn(): kubelet's registration in a process of its own, which a
  test kills with SIGKILL to leave kubelet.sock behind as a crashed kubelet
  does (a socket file nobody accepts connections on).

The schemas are the ones in proto/ (python modules generated at build time);
service stubs are built with grpc's generic handler and channel APIs.
"""
import os
import stat
import subprocess
import sys
import threading
import time
from concurrent import futures

import grpc

from cvwait import cv_wait  # tests/support (on sys.path via harness)
from deviceplugin.v1beta1 import api_pb2 as dp
from podresources.v1 import api_pb2 as pr

DP = "/v1beta1.DevicePlugin/"


class Plugin:
    """kubelet's view of one registered resource."""

    def __init__(self, resource, endpoint, options):
        self.resource = resource
        self.endpoint = endpoint
        self.options = options
        self.lists = []          # every ListAndWatch message, as [(id, health)]
        self.stream_code = None  # gRPC status the stream ended with
        self.stream_details = None
        self.channel = None


class Kubelet:
    def __init__(self, dp_dir, podres_socket, options_timeout=10.0):
        self.dp_dir = dp_dir
        self.podres_socket = podres_socket
        self.options_timeout = options_timeout
        self.cv = threading.Condition()
        self.plugins = {}        # resource -> Plugin (latest registration)
        self.registrations = []  # (resource, endpoint, options) in order
        self.register_errors = []
        self.pod_resources = []  # [(ns, name, {container: {resource: [ids]}})]
        self.podres_calls = 0
        self.reject_register = None  # message: Register fails with it
        self.refused_connected = []  # Registers refused: kubelet already streams from that socket
        self._old_reg_servers = []
        self._reg_server = None
        self._podres_server = None

    # ---- servers ----
    def start(self):
        self.start_registration()
        self._start_podresources()
        return self

    def start_registration(self, name="kubelet.sock"):
        """Serves kubelet.sock (a stale file there is replaced)."""
        s = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        h = grpc.method_handlers_generic_handler("v1beta1.Registration", {
            "Register": grpc.unary_unary_rpc_method_handler(
                self._register,
                request_deserializer=dp.RegisterRequest.FromString,
                response_serializer=dp.Empty.SerializeToString),
        })
        s.add_generic_rpc_handlers((h,))
        s.add_insecure_port("unix:" + os.path.join(self.dp_dir, name))
        s.start()
        self._reg_server = s

    def replace_registration_socket(self):
        """kubelet.sock becomes another file (a new inode, renamed into place) while
        kubelet keeps its connections and streams to the plugins: what a plugin sees
        when it looked at the old kubelet's file just before Register reached the new
        one. The old server stays up until stop() (grpc unlinks a unix socket's path
        when its server stops, which would take the new file)."""
        old = self._reg_server
        self.start_registration("kubelet.sock.new")
        os.rename(os.path.join(self.dp_dir, "kubelet.sock.new"), os.path.join(self.dp_dir, "kubelet.sock"))
        self._old_reg_servers.append(old)

    def _start_podresources(self):
        s = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        h = grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
            "List": grpc.unary_unary_rpc_method_handler(
                self._list,
                request_deserializer=pr.ListPodResourcesRequest.FromString,
                response_serializer=pr.ListPodResourcesResponse.SerializeToString),
        })
        s.add_generic_rpc_handlers((h,))
        s.add_insecure_port("unix:" + self.podres_socket)
        s.start()
        self._podres_server = s

    def stop(self):
        for p in list(self.plugins.values()):
            if p.channel:
                p.channel.close()
        if self._reg_server:
            self._reg_server.stop(0).wait()
            self._reg_server = None
        for old in self._old_reg_servers:
            old.stop(0).wait()
        self._old_reg_servers = []
        if self._podres_server:
            self._podres_server.stop(0).wait()
            self._podres_server = None

    def stop_registration(self):
        """kubelet stopped: its kubelet.sock goes (the server removes it) and
        its streams to the plugins drop; the plugins' sockets stay."""
        if self._reg_server:
            self._reg_server.stop(0).wait()
            self._reg_server = None
        with self.cv:
            plugins = list(self.plugins.values())
            self.plugins = {}
        for p in plugins:
            if p.channel:
                p.channel.close()

    def restart(self, down_seconds=0.0):
        """A kubelet restart: streams drop, every socket in the dir goes,
        kubelet.sock comes back."""
        self.stop_registration()
        for name in os.listdir(self.dp_dir):
            path = os.path.join(self.dp_dir, name)
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                os.unlink(path)
        time.sleep(down_seconds)
        self.start_registration()

    # ---- Registration ----
    def _register(self, req, ctx):
        if self.reject_register:
            ctx.abort(grpc.StatusCode.UNKNOWN, self.reject_register)
        if req.version != "v1beta1":
            ctx.abort(grpc.StatusCode.UNKNOWN, "unsupported version " + req.version)
        if "/" not in req.resource_name:
            ctx.abort(grpc.StatusCode.UNKNOWN, "not an extended resource " + req.resource_name)
        if "/" in req.endpoint:
            ctx.abort(grpc.StatusCode.UNKNOWN, "endpoint must be a file name")
        ch = grpc.insecure_channel("unix:" + os.path.join(self.dp_dir, req.endpoint))
        try:
            # kubelet dials (10 s, blocking) and asks for the options before it answers
            grpc.channel_ready_future(ch).result(timeout=self.options_timeout)
            opts = ch.unary_unary(DP + "GetDevicePluginOptions",
                                  request_serializer=dp.Empty.SerializeToString,
                                  response_deserializer=dp.DevicePluginOptions.FromString)(
                                      dp.Empty(), timeout=self.options_timeout)
        except Exception as exc:  # kubelet fails the Register then
            ch.close()
            with self.cv:
                self.register_errors.append(str(exc))
                self.cv.notify_all()
            ctx.abort(grpc.StatusCode.UNKNOWN, "dial plugin: %s" % exc)
        path = os.path.join(self.dp_dir, req.endpoint)
        with self.cv:
            old = self.plugins.get(req.resource_name)
            connected = old is not None and old.endpoint == req.endpoint and old.stream_code is None
            if connected:
                self.refused_connected.append(req.resource_name)
                self.cv.notify_all()
        if connected:
            # kubelet >= 1.37 (devicemanager PluginConnected): one connection per resource
            # and socket path until its ListAndWatch ends; a second Register is refused
            ch.close()
            ctx.abort(grpc.StatusCode.UNKNOWN, "device plugin already connected: %s" % path)
        p = Plugin(req.resource_name, req.endpoint, opts)
        p.channel = ch
        with self.cv:
            old = self.plugins.get(req.resource_name)
            self.plugins[req.resource_name] = p
            self.registrations.append((req.resource_name, req.endpoint, opts))
            self.cv.notify_all()
        if old and old.channel:
            old.channel.close()
        threading.Thread(target=self._watch, args=(p,), daemon=True).start()
        return dp.Empty()

    def _watch(self, p):
        call = p.channel.unary_stream(DP + "ListAndWatch",
                                      request_serializer=dp.Empty.SerializeToString,
                                      response_deserializer=dp.ListAndWatchResponse.FromString)(dp.Empty())
        try:
            for msg in call:
                with self.cv:
                    p.lists.append([(d.ID, d.health) for d in msg.devices])
                    self.cv.notify_all()
            code, details = grpc.StatusCode.OK, ""
        except grpc.RpcError as err:
            code, details = err.code(), err.details()
        with self.cv:
            p.stream_code, p.stream_details = code, details
            self.cv.notify_all()

    # ---- pod resources ----
    def _list(self, req, ctx):
        with self.cv:
            self.podres_calls += 1
            table = list(self.pod_resources)
        resp = pr.ListPodResourcesResponse()
        for ns, name, ctrs in table:
            podm = resp.pod_resources.add(name=name, namespace=ns)
            for cname, res in ctrs.items():
                c = podm.containers.add(name=cname)
                for rname, ids in res.items():
                    for i in ids:  # kubelet: one entry per device ID
                        c.devices.add(resource_name=rname, device_ids=[i])
        return resp

    def set_pod(self, ns, name, ctrs):
        with self.cv:
            self.pod_resources = [t for t in self.pod_resources if (t[0], t[1]) != (ns, name)]
            self.pod_resources.append((ns, name, ctrs))

    def remove_pod(self, ns, name):
        with self.cv:
            self.pod_resources = [t for t in self.pod_resources if (t[0], t[1]) != (ns, name)]

    # ---- waiting ----
    def wait(self, pred, timeout=20.0, what="condition"):
        """Waits until pred() (called under the lock) is true."""
        cv_wait(self.cv, pred, timeout, what, "kubelet stand-in")

    def wait_registered(self, resource, count=1, timeout=20.0):
        self.wait(lambda: sum(1 for r in self.registrations if r[0] == resource) >= count,
                  timeout, "%s registration #%d" % (resource, count))
        return self.plugins[resource]

    def wait_list(self, resource, pred, timeout=20.0, what="device list"):
        def ok():
            p = self.plugins.get(resource)
            return p is not None and p.lists and pred(p.lists[-1])
        self.wait(ok, timeout, "%s %s" % (resource, what))
        return self.plugins[resource].lists[-1]

    # ---- calls into the plugin (what kubelet's device manager sends) ----
    def channel(self, resource):
        p = self.plugins[resource]
        return p.channel

    def preferred(self, resource, available, must=(), size=0, timeout=10):
        req = dp.PreferredAllocationRequest()
        req.container_requests.add(available_deviceIDs=list(available),
                                   must_include_deviceIDs=list(must), allocation_size=size)
        return self.channel(resource).unary_unary(
            DP + "GetPreferredAllocation",
            request_serializer=dp.PreferredAllocationRequest.SerializeToString,
            response_deserializer=dp.PreferredAllocationResponse.FromString)(req, timeout=timeout)

    def allocate(self, resource, ids, timeout=10):
        req = dp.AllocateRequest()
        req.container_requests.add(devices_ids=list(ids))
        return self.channel(resource).unary_unary(
            DP + "Allocate",
            request_serializer=dp.AllocateRequest.SerializeToString,
            response_deserializer=dp.AllocateResponse.FromString)(req, timeout=timeout)

    def prestart(self, resource, ids, timeout=30):
        req = dp.PreStartContainerRequest(devices_ids=list(ids))
        return self.channel(resource).unary_unary(
            DP + "PreStartContainer",
            request_serializer=dp.PreStartContainerRequest.SerializeToString,
            response_deserializer=dp.PreStartContainerResponse.FromString)(req, timeout=timeout)

    def raw(self, resource, method, payload, timeout=10):
        """Sends raw bytes as the request message of a unary method."""
        return self.channel(resource).unary_unary(DP + method)(payload, timeout=timeout)


def spawn(dp_dir):
    """kubelet's registration (kubelet.sock in dp_dir) served by a child
    process, returned once it serves: proc.kill() is a kubelet crash."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), dp_dir],
                            stdout=subprocess.PIPE, env=env)
    started = proc.stdout.readline().strip() == b"serving"
    proc.stdout.close()
    if not started:
        proc.kill()
        proc.wait()
        raise AssertionError("kubelet stand-in process did not start (exit %s)" % proc.poll())
    return proc


if __name__ == "__main__":  # spawn()'s child: serves until killed
    Kubelet(sys.argv[1], None).start_registration()
    print("serving", flush=True)
    threading.Event().wait()

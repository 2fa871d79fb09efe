# SPDX-License-Identifier: Apache-2.0
"""A kubelet stand-in for ioqos-plugin's DRA driver mode, written with
Debian's grpcio.

It plays kubelet's side of plugin registration and of the DRA service, as
the client both are on kubelet's side (shared/reference/dra-interfaces.md
sections 1 to 3):

- register(): the plugin watcher's sequence: a unix socket appears in
  plugins_registry (names starting with "." ignored) -> dial (10 s) ->
  GetInfo (1 s timeout) -> validate (type "DRAPlugin", a known version) ->
  NotifyRegistrationStatus (5 s); then it dials the DRA endpoint at once,
  as kubelet >= 1.34 does.
- prepare() / unprepare(): NodePrepareResources / NodeUnprepareResources on
  that endpoint, v1 or v1beta1 (the version kubelet picked: the first of the
  plugin's supported_versions it knows), 45 s timeout as kubelet's; answers
  as plain dicts.
- raw(): garbage bytes as the request of any method.

The schemas are the ones in proto/ (python modules generated at build time,
on sys.path from IOQOS_PROTO_PY_DIR via harness); calls are made with grpc's
generic channel API, as in kubelet_stub.py.
"""
import os
import stat
import time

import grpc

from dra.v1 import api_pb2 as dra1
from dra.v1beta1 import api_pb2 as dra1b
from pluginregistration.v1 import api_pb2 as reg

REG = "/pluginregistration.Registration/"
DRA_PLUGIN = "DRAPlugin"
# service names a plugin may list in supported_versions -> generated module
VERSIONS = {"v1.DRAPlugin": dra1, "v1beta1.DRAPlugin": dra1b}
DIAL_TIMEOUT, INFO_TIMEOUT, NOTIFY_TIMEOUT = 10.0, 1.0, 5.0


class RegistrationFailed(Exception):
    """kubelet refused the plugin (after telling it so when it got that far)."""


class DraKubelet:
    def __init__(self, registry_dir):
        self.registry_dir = registry_dir
        self.socket = None        # the registration socket found
        self.info = None          # PluginInfo from GetInfo
        self.name = self.endpoint = None
        self.supported_versions = []
        self.version = None       # the service picked: "v1.DRAPlugin" or "v1beta1.DRAPlugin"
        self.raw_response = None  # the bytes of the last raw() call that succeeded
        self._dra = None          # channel to the DRA endpoint
        self._ready = None        # its connection, started at registration

    # ---- registration ----
    def find_socket(self):
        """The first unix socket in registry_dir or below (by path), else None."""
        found = []
        for d, dirs, files in os.walk(self.registry_dir):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            for f in files:
                p = os.path.join(d, f)
                try:
                    if not f.startswith(".") and stat.S_ISSOCK(os.lstat(p).st_mode):
                        found.append(p)
                except FileNotFoundError:
                    pass
        return min(found) if found else None

    def register(self, timeout=10, reject=None):
        """Waits up to `timeout` s for a registration socket and registers the
        plugin behind it; reject="why": kubelet refuses it with that text
        (NotifyRegistrationStatus(false, why), then RegistrationFailed).
        Returns the PluginInfo."""
        deadline = time.monotonic() + timeout
        while True:
            self.socket = self.find_socket()
            if self.socket:
                break
            if time.monotonic() >= deadline:
                raise AssertionError("DRA kubelet stand-in: no registration socket in %s after %ss"
                                     % (self.registry_dir, timeout))
            time.sleep(0.05)
        self.close()
        # kubelet's connection to the registration socket lasts for the sequence
        ch = grpc.insecure_channel("unix:" + self.socket)
        try:
            grpc.channel_ready_future(ch).result(timeout=DIAL_TIMEOUT)
            info = ch.unary_unary(REG + "GetInfo",
                                  request_serializer=reg.InfoRequest.SerializeToString,
                                  response_deserializer=reg.PluginInfo.FromString)(
                                      reg.InfoRequest(), timeout=INFO_TIMEOUT)
            self.info = info
            self.name, self.endpoint = info.name, info.endpoint or self.socket
            self.supported_versions = list(info.supported_versions)
            self.version = next((v for v in self.supported_versions if v in VERSIONS), None)
            why = reject
            if info.type != DRA_PLUGIN:
                why = "unsupported plugin type %r" % info.type
            elif self.version is None:
                why = "none of the versions %s is supported" % self.supported_versions
            st = reg.RegistrationStatus(plugin_registered=not why, error=why or "")
            ch.unary_unary(REG + "NotifyRegistrationStatus",
                           request_serializer=reg.RegistrationStatus.SerializeToString,
                           response_deserializer=reg.RegistrationStatusResponse.FromString)(
                               st, timeout=NOTIFY_TIMEOUT)
        finally:
            ch.close()
        if why:
            raise RegistrationFailed(why)
        # kubelet >= 1.34 connects to the endpoint as soon as it has registered it
        self._dra = grpc.insecure_channel("unix:" + self.endpoint)
        self._ready = grpc.channel_ready_future(self._dra)
        return info

    def ready(self, timeout=10):
        """Waits until the DRA endpoint's channel is connected; False on timeout."""
        self._registered()
        try:
            self._ready.result(timeout=timeout)
            return True
        except grpc.FutureTimeoutError:
            return False

    # ---- the DRA service ----
    def _registered(self):
        if self._dra is None:
            raise AssertionError("DRA kubelet stand-in: no plugin registered (call register() first)")
        return self._dra

    def _service(self, version):
        """(module, "/package.DRAPlugin/") of a version: "v1", "v1beta1",
        their service names, or None for the one registered."""
        v = version or self.version
        if v and not v.endswith("." + DRA_PLUGIN):
            v += "." + DRA_PLUGIN
        if v not in VERSIONS:
            raise ValueError("unknown DRA version %r" % version)
        mod = VERSIONS[v]
        return mod, "/%s/" % mod.DESCRIPTOR.services_by_name[DRA_PLUGIN].full_name

    def _call(self, method, claims, version, timeout):
        """One unary DRA call: (module, response message)."""
        mod, svc = self._service(version)
        req_type, resp_type = getattr(mod, method + "Request"), getattr(mod, method + "Response")
        req = req_type(claims=[mod.Claim(namespace=ns, uid=uid, name=name) for ns, uid, name in claims])
        call = self._registered().unary_unary(svc + method, request_serializer=req_type.SerializeToString,
                                              response_deserializer=resp_type.FromString)
        return mod, call(req, timeout=timeout)

    def prepare(self, claims, version=None, timeout=45):
        """NodePrepareResources for [(namespace, uid, name)]: {uid: {"error": str,
        "devices": [{"request_names", "pool_name", "device_name", "cdi_device_ids",
        "share_id" (None when absent; always None in v1beta1)}]}}. A failed call
        raises grpc.RpcError."""
        mod, resp = self._call("NodePrepareResources", claims, version, timeout)
        has_share = "share_id" in mod.Device.DESCRIPTOR.fields_by_name
        return {uid: {"error": r.error,
                      "devices": [{"request_names": list(d.request_names), "pool_name": d.pool_name,
                                   "device_name": d.device_name, "cdi_device_ids": list(d.cdi_device_ids),
                                   "share_id": d.share_id if has_share and d.HasField("share_id") else None}
                                  for d in r.devices]}
                for uid, r in resp.claims.items()}

    def unprepare(self, claims, version=None, timeout=45):
        """NodeUnprepareResources for [(namespace, uid, name)]: {uid: error}.
        A failed call raises grpc.RpcError."""
        _, resp = self._call("NodeUnprepareResources", claims, version, timeout)
        return {uid: r.error for uid, r in resp.claims.items()}

    def raw(self, path, payload_bytes, timeout=5):
        """Sends raw bytes as the request of the unary method `path`
        ("/package.Service/Method"; /pluginregistration.* goes to the
        registration socket, anything else to the DRA endpoint). Returns
        (grpc.StatusCode, details); the answer of a call that succeeded is
        in raw_response."""
        to_reg = path.startswith("/pluginregistration.")
        if to_reg:
            sock = self.socket or self.find_socket()
            if not sock:
                raise AssertionError("DRA kubelet stand-in: no registration socket in " + self.registry_dir)
            ch = grpc.insecure_channel("unix:" + sock)
        else:
            ch = self._registered()
        try:
            self.raw_response = ch.unary_unary(path)(payload_bytes, timeout=timeout)
            return grpc.StatusCode.OK, ""
        except grpc.RpcError as err:
            return err.code(), err.details()
        finally:
            if to_reg:
                ch.close()

    def close(self):
        """Drops the connection to the DRA endpoint (register() dials again)."""
        if self._ready:
            self._ready.cancel()
        if self._dra:
            self._dra.close()
        self._dra = self._ready = None

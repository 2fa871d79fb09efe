# SPDX-License-Identifier: Apache-2.0
"""proto/pluginregistration/v1, proto/dra/v1 and proto/dra/v1beta1 are
wire-identical to upstream: every package, service, method, message, field
name, number, type and label below is transcribed from
shared/reference/dra-interfaces.md (sections 1 and 2; docs/dra.md has the
same tables). A change to the schemas that breaks the wire fails here.

share_id (dra/v1 field 5) is proto3 `optional` upstream and in proto/; the C
copy drops the label (strip_for_c.cmake). The byte test below pins what a set
share_id looks like on the wire; tests/unit/test_proto_dra.c decodes and
encodes the same bytes with the protoc-c code."""
import unittest

from google.protobuf import descriptor as d

import harness  # noqa: F401  (sets sys.path for the generated modules)
import protocheck
from dra.v1 import api_pb2 as dra1
from dra.v1beta1 import api_pb2 as dra1b
from pluginregistration.v1 import api_pb2 as reg

S, B, M = d.FieldDescriptor.TYPE_STRING, d.FieldDescriptor.TYPE_BOOL, d.FieldDescriptor.TYPE_MESSAGE
R, O = d.FieldDescriptor.LABEL_REPEATED, d.FieldDescriptor.LABEL_OPTIONAL

REGISTRATION = {
    "InfoRequest": [],
    "PluginInfo": [("type", 1, S, O), ("name", 2, S, O), ("endpoint", 3, S, O),
                   ("supported_versions", 4, S, R)],
    "RegistrationStatus": [("plugin_registered", 1, B, O), ("error", 2, S, O)],
    "RegistrationStatusResponse": [],
}
REGISTRATION_SERVICES = {
    "Registration": [("GetInfo", "InfoRequest", "PluginInfo", False),
                     ("NotifyRegistrationStatus", "RegistrationStatus", "RegistrationStatusResponse", False)],
}

DRA_V1BETA1 = {
    "NodePrepareResourcesRequest": [("claims", 1, M, R)],
    "NodePrepareResourcesResponse": [("claims", 1, M, R)],  # map<string, NodePrepareResourceResponse>
    "NodePrepareResourceResponse": [("devices", 1, M, R), ("error", 2, S, O)],
    "Device": [("request_names", 1, S, R), ("pool_name", 2, S, O), ("device_name", 3, S, O),
               ("cdi_device_ids", 4, S, R)],
    "NodeUnprepareResourcesRequest": [("claims", 1, M, R)],
    "NodeUnprepareResourcesResponse": [("claims", 1, M, R)],  # map<string, NodeUnprepareResourceResponse>
    "NodeUnprepareResourceResponse": [("error", 1, S, O)],
    "Claim": [("namespace", 1, S, O), ("uid", 2, S, O), ("name", 3, S, O)],
}
DRA_V1 = dict(DRA_V1BETA1)
DRA_V1["Device"] = DRA_V1BETA1["Device"] + [("share_id", 5, S, O)]
DRA_SERVICES = {
    "DRAPlugin": [("NodePrepareResources", "NodePrepareResourcesRequest", "NodePrepareResourcesResponse", False),
                  ("NodeUnprepareResources", "NodeUnprepareResourcesRequest", "NodeUnprepareResourcesResponse",
                   False)],
}
MAPS = {"NodePrepareResourcesResponse": "NodePrepareResourceResponse",
        "NodeUnprepareResourcesResponse": "NodeUnprepareResourceResponse"}

SHARE_ID = "4f3c2b1a-0d9e-4c8b-a7f6-e5d4c3b2a190"
# Device{pool_name "node-a", device_name "sda", share_id SHARE_ID}, by hand:
# field 2 (0x12) len 6, field 3 (0x1a) len 3, field 5 (0x2a) len 36.
DEVICE_BYTES = (b"\x12\x06node-a" + b"\x1a\x03sda" + b"\x2a\x24" + SHARE_ID.encode())


class Wire(unittest.TestCase):
    def check(self, mod, package, messages, services):
        protocheck.check(self, mod, package, messages, services)

    def check_maps(self, mod):
        for name, value_type in MAPS.items():
            entry = mod.DESCRIPTOR.message_types_by_name[name].fields_by_name["claims"].message_type
            self.assertTrue(entry.GetOptions().map_entry, name)
            key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
            self.assertEqual((key.number, key.type), (1, S), name)
            self.assertEqual((value.number, value.type, value.message_type.name), (2, M, value_type), name)

    def test_plugin_registration_v1(self):
        self.check(reg, "pluginregistration", REGISTRATION, REGISTRATION_SERVICES)

    def test_dra_v1(self):
        self.check(dra1, "k8s.io.kubelet.pkg.apis.dra.v1", DRA_V1, DRA_SERVICES)
        self.check_maps(dra1)
        share = dra1.Device.DESCRIPTOR.fields_by_name["share_id"]
        self.assertTrue(share.has_presence, "share_id is proto3 optional upstream")
        self.assertIsNotNone(share.containing_oneof, "proto3 optional is a synthetic oneof")

    def test_dra_v1beta1(self):
        self.check(dra1b, "k8s.io.kubelet.pkg.apis.dra.v1beta1", DRA_V1BETA1, DRA_SERVICES)
        self.check_maps(dra1b)

    def test_rpc_paths(self):
        # what kubelet dials: "/<package>.<service>/<method>"
        for mod, pkg in ((dra1, "k8s.io.kubelet.pkg.apis.dra.v1"), (dra1b, "k8s.io.kubelet.pkg.apis.dra.v1beta1")):
            svc = mod.DESCRIPTOR.services_by_name["DRAPlugin"]
            self.assertEqual(["/" + svc.full_name + "/" + m.name for m in svc.methods],
                             ["/%s.DRAPlugin/NodePrepareResources" % pkg, "/%s.DRAPlugin/NodeUnprepareResources" % pkg])
        svc = reg.DESCRIPTOR.services_by_name["Registration"]
        self.assertEqual(["/" + svc.full_name + "/" + m.name for m in svc.methods],
                         ["/pluginregistration.Registration/GetInfo",
                          "/pluginregistration.Registration/NotifyRegistrationStatus"])

    def test_share_id_bytes(self):
        dev = dra1.Device(pool_name="node-a", device_name="sda", share_id=SHARE_ID)
        self.assertEqual(dev.SerializeToString(), DEVICE_BYTES)
        back = dra1.Device.FromString(DEVICE_BYTES)
        self.assertTrue(back.HasField("share_id"))
        self.assertEqual(back.share_id, SHARE_ID)
        # unset: no field 5 at all (the C side sends none for "")
        self.assertEqual(dra1.Device(pool_name="node-a", device_name="sda").SerializeToString(), DEVICE_BYTES[:13])
        # a v1beta1 reader (kubelet 1.32-1.33) skips the unknown field 5
        old = dra1b.Device.FromString(DEVICE_BYTES)
        self.assertEqual((old.pool_name, old.device_name), ("node-a", "sda"))


if __name__ == "__main__":
    unittest.main(verbosity=2)

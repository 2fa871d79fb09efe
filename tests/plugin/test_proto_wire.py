# SPDX-License-Identifier: Apache-2.0
"""proto/ is wire-identical to upstream: every package, service, method,
message, field name, number, type and label below is transcribed from
shared/reference/k8s-interfaces.md (kubelet v1beta1 device plugin API and
pod resources v1). A change to the schemas that breaks the wire fails here."""
import unittest

from google.protobuf import descriptor as d

import harness  # noqa: F401  (sets sys.path for the generated modules)
import protocheck
from deviceplugin.v1beta1 import api_pb2 as dp
from podresources.v1 import api_pb2 as pr

S, B, I32, I64, U64, M = (d.FieldDescriptor.TYPE_STRING, d.FieldDescriptor.TYPE_BOOL,
                          d.FieldDescriptor.TYPE_INT32, d.FieldDescriptor.TYPE_INT64,
                          d.FieldDescriptor.TYPE_UINT64, d.FieldDescriptor.TYPE_MESSAGE)
R, O = d.FieldDescriptor.LABEL_REPEATED, d.FieldDescriptor.LABEL_OPTIONAL

DEVICEPLUGIN = {
    "DevicePluginOptions": [("pre_start_required", 1, B, O), ("get_preferred_allocation_available", 2, B, O)],
    "RegisterRequest": [("version", 1, S, O), ("endpoint", 2, S, O), ("resource_name", 3, S, O),
                        ("options", 4, M, O)],
    "Empty": [],
    "ListAndWatchResponse": [("devices", 1, M, R)],
    "TopologyInfo": [("nodes", 1, M, R)],
    "NUMANode": [("ID", 1, I64, O)],
    "Device": [("ID", 1, S, O), ("health", 2, S, O), ("topology", 3, M, O)],
    "PreStartContainerRequest": [("devices_ids", 1, S, R)],
    "PreStartContainerResponse": [],
    "PreferredAllocationRequest": [("container_requests", 1, M, R)],
    "ContainerPreferredAllocationRequest": [("available_deviceIDs", 1, S, R),
                                            ("must_include_deviceIDs", 2, S, R),
                                            ("allocation_size", 3, I32, O)],
    "PreferredAllocationResponse": [("container_responses", 1, M, R)],
    "ContainerPreferredAllocationResponse": [("deviceIDs", 1, S, R)],
    "AllocateRequest": [("container_requests", 1, M, R)],
    "ContainerAllocateRequest": [("devices_ids", 1, S, R)],
    "AllocateResponse": [("container_responses", 1, M, R)],
    "ContainerAllocateResponse": [("envs", 1, M, R), ("mounts", 2, M, R), ("devices", 3, M, R),
                                  ("annotations", 4, M, R), ("cdi_devices", 5, M, R)],
    "Mount": [("container_path", 1, S, O), ("host_path", 2, S, O), ("read_only", 3, B, O)],
    "DeviceSpec": [("container_path", 1, S, O), ("host_path", 2, S, O), ("permissions", 3, S, O)],
    "CDIDevice": [("name", 1, S, O)],
}
DEVICEPLUGIN_SERVICES = {
    "Registration": [("Register", "RegisterRequest", "Empty", False)],
    "DevicePlugin": [("GetDevicePluginOptions", "Empty", "DevicePluginOptions", False),
                     ("ListAndWatch", "Empty", "ListAndWatchResponse", True),
                     ("GetPreferredAllocation", "PreferredAllocationRequest", "PreferredAllocationResponse", False),
                     ("Allocate", "AllocateRequest", "AllocateResponse", False),
                     ("PreStartContainer", "PreStartContainerRequest", "PreStartContainerResponse", False)],
}
PODRESOURCES = {
    "AllocatableResourcesRequest": [],
    "AllocatableResourcesResponse": [("devices", 1, M, R), ("cpu_ids", 2, I64, R), ("memory", 3, M, R)],
    "ListPodResourcesRequest": [],
    "ListPodResourcesResponse": [("pod_resources", 1, M, R)],
    "PodResources": [("name", 1, S, O), ("namespace", 2, S, O), ("containers", 3, M, R),
                     ("cpu_ids", 4, I64, R), ("memory", 5, M, R)],
    "ContainerResources": [("name", 1, S, O), ("devices", 2, M, R), ("cpu_ids", 3, I64, R),
                           ("memory", 4, M, R), ("dynamic_resources", 5, M, R)],
    "ContainerMemory": [("memory_type", 1, S, O), ("size", 2, U64, O), ("topology", 3, M, O)],
    "ContainerDevices": [("resource_name", 1, S, O), ("device_ids", 2, S, R), ("topology", 3, M, O)],
    "TopologyInfo": [("nodes", 1, M, R)],
    "NUMANode": [("ID", 1, I64, O)],
    "DynamicResource": [("claim_name", 2, S, O), ("claim_namespace", 3, S, O), ("claim_resources", 4, M, R)],
    "ClaimResource": [("cdi_devices", 1, M, R), ("driver_name", 2, S, O), ("pool_name", 3, S, O),
                      ("device_name", 4, S, O), ("share_id", 5, S, O)],
    "CDIDevice": [("name", 1, S, O)],
    "GetPodResourcesRequest": [("pod_name", 1, S, O), ("pod_namespace", 2, S, O)],
    "GetPodResourcesResponse": [("pod_resources", 1, M, O)],
}
PODRESOURCES_SERVICES = {
    "PodResourcesLister": [("List", "ListPodResourcesRequest", "ListPodResourcesResponse", False),
                           ("GetAllocatableResources", "AllocatableResourcesRequest", "AllocatableResourcesResponse", False),
                           ("Get", "GetPodResourcesRequest", "GetPodResourcesResponse", False)],
}


class Wire(unittest.TestCase):
    def check(self, mod, package, messages, services):
        protocheck.check(self, mod, package, messages, services)

    def test_device_plugin_v1beta1(self):
        self.check(dp, "v1beta1", DEVICEPLUGIN, DEVICEPLUGIN_SERVICES)
        envs = dp.ContainerAllocateResponse.DESCRIPTOR.fields_by_name["envs"].message_type
        self.assertTrue(envs.GetOptions().map_entry)

    def test_pod_resources_v1(self):
        self.check(pr, "v1", PODRESOURCES, PODRESOURCES_SERVICES)
        dr = pr.DynamicResource.DESCRIPTOR
        self.assertNotIn(1, [f.number for f in dr.fields], "field 1 is upstream's tombstone")


if __name__ == "__main__":
    unittest.main(verbosity=2)

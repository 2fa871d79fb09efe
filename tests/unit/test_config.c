// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "fixture.h"
#include "ioqos/config.h"

Test(config, defaults) {
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_load(NULL, &c, &e), 0, "%s", e.msg);
  cr_assert_str_eq(c.kubelet_root, "/var/lib/kubelet");
  cr_assert_eq(c.units.size[IOQ_RES_BANDWIDTH], 1048576);
  cr_assert_eq(c.units.size[IOQ_RES_IOPS], 100);
  cr_assert_float_eq(c.allocatable_fraction, 0.8, 1e-9);
  cr_assert_eq(c.n_devices, 0);
  cr_assert_eq(c.policy, IOQ_POLICY_LEAST_ALLOCATED);
  cr_assert_not(c.enforcement.fail_open);
  cr_assert(c.enforcement.io_weight);
  cr_assert(c.node_policy.ungranted_enable, "pods without a grant are bounded by default");
  cr_assert_eq(c.node_policy.ungranted_interval_ms, 1000);
  cr_assert_float_eq(c.node_policy.ungranted_headroom_share, 0.5, 1e-9);
  ioq_config_free(&c);
}

Test(config, ungranted) {
  struct ioq_config c;
  ioq_err e = {0};
  const char *j = "{\"devices\": [{\"select\": \"sda\", \"capacity\": {\"bandwidthBytesPerSec\": 209715200},"
                  " \"ungrantedPool\": {\"bandwidthBytesPerSec\": 41943040, \"iops\": 2000}}],"
                  " \"nodePolicy\": {\"ungranted\": {\"enable\": false, \"intervalMs\": 250, \"headroomShare\": 0.25}}}";
  cr_assert_eq(ioq_config_parse(j, "c.json", &c, &e), 0, "%s", e.msg);
  cr_assert_eq(c.devices[0].ungranted_pool_bw_bytes, 41943040ull);
  cr_assert_eq(c.devices[0].ungranted_pool_iops, 2000);
  cr_assert_not(c.node_policy.ungranted_enable);
  cr_assert_eq(c.node_policy.ungranted_interval_ms, 250);
  cr_assert_float_eq(c.node_policy.ungranted_headroom_share, 0.25, 1e-9);
  ioq_config_free(&c);
}

Test(config, full_file) {
  char *dir = fx_tmpdir();
  fx_write(dir, "c.json",
           "{\n"
           "  \"kubeletRootDir\": \"/data/kubelet\",\n"
           "  \"calibrationFile\": \"/data/cal.json\",\n"
           "  \"units\": {\"bandwidthBytesPerSec\": 10485760, \"iops\": 1000},\n"
           "  \"allocatableFraction\": 0.9,\n"
           "  \"placementPolicy\": \"balanced\",\n"
           "  \"devices\": [\n"
           "    {\"select\": \"/var/lib/kubelet\", \"class\": \"standard\"},\n"
           "    {\"select\": \"nvme1n1\", \"class\": \"fast\", \"capacity\": {\"bandwidthBytesPerSec\": 2000000000, \"iops\": 400000}, \"allocatableFraction\": 0.7}\n"
           "  ],\n"
           "  \"enforcement\": {\"failOpen\": true, \"ioWeight\": false, \"bfqWeight\": false, \"enableControllers\": false, \"reconcileIntervalSeconds\": 3},\n"
           "  \"nodePolicy\": {\"qosClassWeights\": {\"besteffort\": 10}, \"iocost\": {\"enable\": true, \"ctrl\": \"user\", \"min\": 100, \"max\": 100, \"latencyTargetUs\": 5000}}\n"
           "}\n");
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_load(fx_path(dir, "c.json"), &c, &e), 0, "%s", e.msg);
  cr_assert_str_eq(c.kubelet_root, "/data/kubelet");
  cr_assert_eq(c.units.size[IOQ_RES_BANDWIDTH], 10485760);
  cr_assert_eq(c.units.size[IOQ_RES_IOPS], 1000);
  cr_assert_float_eq(c.allocatable_fraction, 0.9, 1e-9);
  cr_assert_eq(c.policy, IOQ_POLICY_BALANCED);
  cr_assert_eq(c.n_devices, 2);
  cr_assert_str_eq(c.devices[1].select, "nvme1n1");
  cr_assert_str_eq(c.devices[1].class_name, "fast");
  cr_assert_eq(c.devices[1].capacity_bw_bytes, 2000000000ull);
  cr_assert_eq(c.devices[1].capacity_iops, 400000);
  cr_assert_float_eq(c.devices[1].allocatable_fraction, 0.7, 1e-9);
  cr_assert_float_eq(c.devices[0].allocatable_fraction, -1, 1e-9);
  cr_assert(c.enforcement.fail_open);
  cr_assert_not(c.enforcement.io_weight);
  cr_assert_eq(c.enforcement.reconcile_interval_s, 3);
  cr_assert_eq(c.node_policy.weight_besteffort, 10);
  cr_assert_eq(c.node_policy.weight_burstable, 0);
  cr_assert(c.node_policy.iocost_enable);
  cr_assert_eq(c.node_policy.iocost_latency_us, 5000);
  ioq_config_free(&c);
  fx_rmtree(dir);
  free(dir);
}

struct bad { char json[200]; char want[320]; };
ParameterizedTestParameters(config, rejects) {
  static struct bad cases[] = {
      {"", "c.json: line 1: invalid JSON"},
      {"{\n\"units\": {\n", "c.json: line 3: invalid JSON"},
      {"[]", "c.json: (top level): must be a JSON object"},
      {"{} {}", "c.json: trailing data after the JSON object"},
      {"{\"unit\": {}}", "c.json: (top level): unknown field 'unit' (allowed: kubeletRootDir"},
      {"{\"units\": {\"bandwidth\": 5}}", "c.json: units: unknown field 'bandwidth'"},
      {"{\"units\": {\"iops\": 0}}", "c.json: units.iops: must be an integer in [1, 1000000]"},
      {"{\"units\": {\"bandwidthBytesPerSec\": 1.5}}", "c.json: units.bandwidthBytesPerSec: must be an integer"},
      {"{\"units\": []}", "c.json: units: must be an object"},
      {"{\"allocatableFraction\": 0}", "c.json: allocatableFraction: must be a number in (0, 1]"},
      {"{\"allocatableFraction\": 1.2}", "c.json: allocatableFraction: must be a number in (0, 1]"},
      {"{\"allocatableFraction\": \"0.8\"}", "c.json: allocatableFraction: must be a number"},
      {"{\"placementPolicy\": \"random\"}", "c.json: placementPolicy: must be least-allocated, most-allocated or balanced"},
      {"{\"kubeletRootDir\": \"var/lib\"}", "c.json: kubeletRootDir: must be an absolute path"},
      {"{\"kubeletRootDir\": 5}", "c.json: kubeletRootDir: must be a string"},
      {"{\"defaultClass\": \"fast\"}", "c.json: (top level): unknown field 'defaultClass'"},
      {"{\"devices\": [{\"select\": \"sda\", \"class\": \"Fast Disks\"}]}", "c.json: devices[0].class: must be 1-63 characters"},
      {"{\"devices\": {}}", "c.json: devices: must be an array"},
      {"{\"devices\": [5]}", "c.json: devices[0]: must be an object"},
      {"{\"devices\": [{}]}", "c.json: devices[0].select: is required"},
      {"{\"devices\": [{\"select\": \"\"}]}", "c.json: devices[0].select: must not be empty"},
      {"{\"devices\": [{\"select\": \"sda\", \"klass\": \"x\"}]}", "c.json: devices[0]: unknown field 'klass'"},
      {"{\"devices\": [{\"select\": \"sda\"}, {\"select\": \"sda\"}]}", "c.json: devices[1].select: selects the same device"},
      {"{\"devices\": [{\"select\": \"sda\", \"class\": \"-x\"}]}", "c.json: devices[0].class: must be 1-63"},
      {"{\"devices\": [{\"select\": \"sda\", \"capacity\": {\"iops\": -1}}]}", "c.json: devices[0].capacity.iops: must be an integer in [1, "},
      {"{\"devices\": [{\"select\": \"sda\", \"capacity\": {\"bw\": 1}}]}", "c.json: devices[0].capacity: unknown field 'bw'"},
      {"{\"devices\": [{\"select\": \"sda\", \"allocatableFraction\": 2}]}", "c.json: devices[0].allocatableFraction: must be a number in (0, 1]"},
      {"{\"enforcement\": {\"failOpen\": \"yes\"}}", "c.json: enforcement.failOpen: must be true or false"},
      {"{\"devices\": [{\"select\": \"vda\",}]}", "c.json: line 1: invalid JSON: "},
      {"{\"devices\": [{\"select\": \"vda\"},]}", "c.json: line 1: invalid JSON: "},
      {"{\"enforcement\": {\"reconcileIntervalSeconds\": 0}}", "c.json: enforcement.reconcileIntervalSeconds: must be an integer in [1, 3600]"},
      {"{\"nodePolicy\": {\"qosClassWeights\": {\"besteffort\": 0}}}", "c.json: nodePolicy.qosClassWeights.besteffort: must be an integer in [1, 10000]"},
      {"{\"nodePolicy\": {\"iocost\": {\"ctrl\": \"manual\"}}}", "c.json: nodePolicy.iocost.ctrl: must be user or auto"},
      {"{\"nodePolicy\": {\"qosClassWeights\": {\"guaranteed\": 500}}}", "c.json: nodePolicy.qosClassWeights: unknown field 'guaranteed' (allowed: burstable besteffort)"},
      {"{\"nodePolicy\": {\"iocost\": {\"latencyTargetUs\": 0}}}", "c.json: nodePolicy.iocost.latencyTargetUs: must be an integer in [1, 10000000]"},
      {"{\"nodePolicy\": {\"iocost\": {\"min\": 200, \"max\": 100}}}", "c.json: nodePolicy.iocost.min: must not exceed nodePolicy.iocost.max"},
      {"{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"pace\": 0}}}", "c.json: nodePolicy.iocost.pace: must be a number in (0, 1]"},
      {"{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"pace\": 1.2}}}", "c.json: nodePolicy.iocost.pace: must be a number in (0, 1]"},
      {"{\"nodePolicy\": {\"iocost\": {\"pace\": 0.85}}}", "c.json: nodePolicy.iocost.pace: needs nodePolicy.iocost.enable true and ctrl user"},
      {"{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"ctrl\": \"auto\", \"pace\": 0.85}}}", "c.json: nodePolicy.iocost.pace: needs nodePolicy.iocost.enable true and ctrl user"},
      {"{\"nodePolicy\": {\"ungranted\": {\"enable\": 1}}}", "c.json: nodePolicy.ungranted.enable: must be true or false"},
      {"{\"nodePolicy\": {\"ungranted\": {\"intervalMs\": 50}}}", "c.json: nodePolicy.ungranted.intervalMs: must be an integer in [100, 60000]"},
      {"{\"nodePolicy\": {\"ungranted\": {\"pool\": 5}}}", "c.json: nodePolicy.ungranted: unknown field 'pool' (allowed: enable intervalMs headroomShare)"},
      {"{\"nodePolicy\": {\"ungranted\": {\"headroomShare\": 0}}}", "c.json: nodePolicy.ungranted.headroomShare: must be a number in (0, 1]"},
      {"{\"nodePolicy\": {\"ungranted\": {\"headroomShare\": 1.5}}}", "c.json: nodePolicy.ungranted.headroomShare: must be a number in (0, 1]"},
      {"{\"devices\": [{\"select\": \"sda\", \"ungrantedPool\": {\"bandwidthBytesPerSec\": 1}}]}", "c.json: devices[0].ungrantedPool.bandwidthBytesPerSec: must be an integer in [2, "},
      {"{\"devices\": [{\"select\": \"sda\", \"ungrantedPool\": {\"bw\": 1}}]}", "c.json: devices[0].ungrantedPool: unknown field 'bw'"},
      {"{\"devices\": [{\"select\": \"sda\", \"capacity\": {\"iops\": 100}, \"ungrantedPool\": {\"iops\": 101}}]}", "c.json: devices[0].ungrantedPool.iops: is larger than the disk (capacity.iops)"},
      {"{\"devices\": [{\"select\": \"sda\", \"capacity\": {\"bandwidthBytesPerSec\": 100}, \"ungrantedPool\": {\"bandwidthBytesPerSec\": 200}}]}", "c.json: devices[0].ungrantedPool.bandwidthBytesPerSec: is larger than the disk"},
      /* issue 12 item 10: ListAndWatch must stay well under kubelet's 4 MiB */
      {"{\"devices\": [{\"select\": \"sda\", \"capacity\": {\"iops\": 3200000}}]}",
       "c.json: devices[0].capacity.iops: 3200000 x allocatable fraction 0.8 / unit size 100 = 25600 ioqos/iops units, more than the 25000 one disk may advertise (each unit is one device in kubelet's ListAndWatch message, at most 78 bytes each, limit 4194304 bytes): raise units.iops"},
      {"{\"allocatableFraction\": 1, \"devices\": [{\"select\": \"sda\", \"capacity\": {\"bandwidthBytesPerSec\": 16106127360}}, {\"select\": \"sdb\", \"capacity\": {\"bandwidthBytesPerSec\": 16106127360}}]}",
       "c.json: devices: the configured capacities add up to 30720 ioqos/bandwidth units, more than the 25000 one node may advertise"},
  };
  return cr_make_param_array(struct bad, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct bad *b, config, rejects) {
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse(b->json, "c.json", &c, &e), -1, "accepted: %s", b->json);
  cr_assert(strstr(e.msg, b->want), "for %s\n got: %s\nwant: %s", b->json, e.msg, b->want);
  cr_assert_eq(e.code, IOQ_EINVAL_INPUT);
  cr_assert_null(c.source, "config must be freed on error");
}

Test(config, missing_file) {
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_load("/nonexistent/ioqos.json", &c, &e), -1);
  cr_assert(strstr(e.msg, "config: open /nonexistent/ioqos.json: No such file or directory"), "%s", e.msg);
}

Test(config, policy_names) {
  enum ioq_policy p;
  cr_assert_eq(ioq_policy_parse("most-allocated", &p), 0);
  cr_assert_eq(p, IOQ_POLICY_MOST_ALLOCATED);
  cr_assert_eq(ioq_policy_parse("least", &p), -1);
  cr_assert_str_eq(ioq_policy_name(IOQ_POLICY_BALANCED), "balanced");
}

/* issue 12 item 10: the bound itself is accepted, and a larger unit size
 * is the way out */
Test(config, unit_bounds_edge) {
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse("{\"allocatableFraction\": 1, \"devices\": [{\"select\": \"sda\", \"capacity\": {\"iops\": 2500000}}]}",
                                "c.json", &c, &e), 0, "%s", e.msg);
  ioq_config_free(&c);
  cr_assert_eq(ioq_config_parse("{\"units\": {\"iops\": 1000}, \"devices\": [{\"select\": \"sda\", \"capacity\": {\"iops\": 3200000}}]}",
                                "c.json", &c, &e), 0, "%s", e.msg);
  ioq_config_free(&c);
}

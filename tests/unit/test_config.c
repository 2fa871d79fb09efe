// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "config/config.h"
#include "base/yamljson.h"

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
  cr_assert_not(c.enforcement.combined_directions, "combined-direction grants are opt-in");
  cr_assert(c.node_policy.ungranted_enable, "pods without a grant are bounded by default");
  cr_assert_eq(c.node_policy.ungranted_interval_ms, 1000);
  cr_assert_float_eq(c.node_policy.ungranted_headroom_share, 0.5, 1e-9);
  ioq_config_free(&c);
}

Test(config, monitor) {
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse("{}", "c.json", &c, &e), 0, "%s", e.msg);
  cr_assert(c.monitor.enable, "the grant monitor runs by default");
  cr_assert_eq(c.monitor.interval_s, 1);
  cr_assert_eq(c.monitor.starved_window_s, 30);
  cr_assert_eq(c.monitor.event_interval_s, 600);
  ioq_config_free(&c);
  const char *j = "{\"monitor\": {\"enable\": false, \"intervalSeconds\": 2, \"starvedWindowSeconds\": 5,"
                  " \"eventIntervalSeconds\": 0}}";
  cr_assert_eq(ioq_config_parse(j, "c.json", &c, &e), 0, "%s", e.msg);
  cr_assert_not(c.monitor.enable);
  cr_assert_eq(c.monitor.interval_s, 2);
  cr_assert_eq(c.monitor.starved_window_s, 5);
  cr_assert_eq(c.monitor.event_interval_s, 0);
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

/* nodePolicy.ungranted.lend*: on by default; the sample must fit between passes */
Test(config, ungranted_lend) {
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse("{}", "c.json", &c, &e), 0, "%s", e.msg);
  cr_assert(c.node_policy.ungranted_lend);
  cr_assert_float_eq(c.node_policy.ungranted_lend_reserve, IOQ_DEFAULT_UNGRANTED_LEND_RESERVE, 1e-12);
  cr_assert_eq(c.node_policy.ungranted_lend_sample_ms, IOQ_DEFAULT_UNGRANTED_LEND_SAMPLE_MS);
  cr_assert_eq(c.node_policy.ungranted_page_cache_bytes, 64ull << 20, "page cache bound on by default");
  cr_assert_eq(c.node_policy.ungranted_burst, IOQ_UG_BURST_OFF, "grants stay limits unless asked");
  ioq_config_free(&c);
  static const struct {
    const char *v;
    enum ioq_ug_burst_mode m;
  } modes[] = {{"off", IOQ_UG_BURST_OFF}, {"annotated", IOQ_UG_BURST_ANNOTATED}, {"all", IOQ_UG_BURST_ALL}};
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
    char j[128];
    snprintf(j, sizeof j, "{\"nodePolicy\": {\"ungranted\": {\"burst\": \"%s\"}}}", modes[i].v);
    cr_assert_eq(ioq_config_parse(j, "c.json", &c, &e), 0, "%s: %s", j, e.msg);
    cr_assert_eq(c.node_policy.ungranted_burst, modes[i].m, "%s", j);
    cr_assert_str_eq(ioq_ug_burst_mode_name(c.node_policy.ungranted_burst), modes[i].v);
    ioq_config_free(&c);
  }
  cr_assert_eq(ioq_config_parse("{\"nodePolicy\": {\"ungranted\": {\"pageCacheBytes\": 0}}}", "c.json", &c, &e), 0,
               "%s", e.msg);
  cr_assert_eq(c.node_policy.ungranted_page_cache_bytes, 0, "0 turns it off");
  ioq_config_free(&c);
  cr_assert_eq(ioq_config_parse("{\"nodePolicy\": {\"ungranted\": {\"pageCacheBytes\": 268435456}}}", "c.json", &c,
                                &e),
               0, "%s", e.msg);
  cr_assert_eq(c.node_policy.ungranted_page_cache_bytes, 256ull << 20);
  ioq_config_free(&c);
  cr_assert_eq(ioq_config_parse("{\"nodePolicy\": {\"ungranted\": {\"lend\": false, \"lendReserve\": 0.3, "
                                "\"lendSampleMs\": 20}}}",
                                "c.json", &c, &e),
               0, "%s", e.msg);
  cr_assert_not(c.node_policy.ungranted_lend);
  cr_assert_float_eq(c.node_policy.ungranted_lend_reserve, 0.3, 1e-12);
  cr_assert_eq(c.node_policy.ungranted_lend_sample_ms, 20);
  ioq_config_free(&c);
  static const struct {
    const char *json, *want;
  } bad[] = {
      {"{\"nodePolicy\": {\"ungranted\": {\"lendReserve\": 0}}}",
       "c.json: line 1: nodePolicy.ungranted.lendReserve: must be a number in (0, 1]"},
      {"{\"nodePolicy\": {\"ungranted\": {\"lendSampleMs\": 5}}}", "c.json: line 1: nodePolicy.ungranted.lendSampleMs:"},
      {"{\"nodePolicy\": {\"ungranted\": {\"intervalMs\": 200, \"lendSampleMs\": 200}}}",
       "c.json: line 1: nodePolicy.ungranted.lendSampleMs: must be shorter than nodePolicy.ungranted.intervalMs"},
      {"{\"nodePolicy\": {\"ungranted\": {\"lend\": \"yes\"}}}", "c.json: line 1: nodePolicy.ungranted.lend:"},
      {"{\"nodePolicy\": {\"ungranted\": {\"pageCacheBytes\": 4096}}}",
       "c.json: line 1: nodePolicy.ungranted.pageCacheBytes: must be 0 (not bounded) or at least 8388608"},
      {"{\"nodePolicy\": {\"ungranted\": {\"pageCacheBytes\": -1}}}", "c.json: line 1: nodePolicy.ungranted.pageCacheBytes:"},
      {"{\"nodePolicy\": {\"ungranted\": {\"pageCacheBytes\": \"64Mi\"}}}",
       "c.json: line 1: nodePolicy.ungranted.pageCacheBytes:"},
      {"{\"nodePolicy\": {\"ungranted\": {\"burst\": \"yes\"}}}",
       "c.json: line 1: nodePolicy.ungranted.burst: must be off, annotated or all"},
      {"{\"nodePolicy\": {\"ungranted\": {\"burst\": true}}}", "c.json: line 1: nodePolicy.ungranted.burst:"},
      {"{\"nodePolicy\": {\"ungranted\": {\"enable\": false, \"burst\": \"all\"}}}",
       "c.json: line 1: nodePolicy.ungranted.burst: needs nodePolicy.ungranted.enable true"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_assert_eq(ioq_config_parse(bad[i].json, "c.json", &c, &e), -1, "accepted %s", bad[i].json);
    cr_assert(strncmp(e.msg, bad[i].want, strlen(bad[i].want)) == 0, "for %s\n got: %s\nwant: %s...", bad[i].json,
              e.msg, bad[i].want);
  }
}

/* nodePolicy.iocost.pace: auto (each disk at grants + pool, ungranted.h) */
Test(config, pace_auto) {
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse("{}", "c.json", &c, &e), 0, "%s", e.msg);
  cr_assert_not(ioq_config_paces(&c), "no pacing by default");
  ioq_config_free(&c);
  cr_assert_eq(ioq_config_parse("{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"pace\": \"auto\"}}}",
                                "c.json", &c, &e), 0, "%s", e.msg);
  cr_assert(c.node_policy.iocost_pace_auto);
  cr_assert_float_eq(c.node_policy.iocost_pace, 0.0, 1e-12);
  cr_assert(ioq_config_paces(&c));
  cr_assert_eq(c.node_policy.iocost_latency_us, IOQ_DEFAULT_IOCOST_PACE_LATENCY_US, "pace's 4 ms period");
  ioq_config_free(&c);
  cr_assert_eq(ioq_config_parse("{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"pace\": 0.85, "
                                "\"latencyTargetUs\": 1000}}}", "c.json", &c, &e), 0, "%s", e.msg);
  cr_assert_not(c.node_policy.iocost_pace_auto);
  cr_assert(ioq_config_paces(&c));
  cr_assert_eq(c.node_policy.iocost_latency_us, 1000, "an explicit target is kept");
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
           "  \"enforcement\": {\"failOpen\": true, \"ioWeight\": false, \"bfqWeight\": false, \"enableControllers\": false, \"reconcileIntervalSeconds\": 3, \"combinedDirections\": true, \"combinedDirectionsFloor\": 0.05},\n"
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
  cr_assert(c.enforcement.combined_directions);
  cr_assert_float_eq(c.enforcement.combined_floor, 0.05, 1e-9);
  cr_assert_eq(c.node_policy.weight_besteffort, 10);
  cr_assert_eq(c.node_policy.weight_burstable, 0);
  cr_assert(c.node_policy.iocost_enable);
  cr_assert_eq(c.node_policy.iocost_latency_us, 5000);
  ioq_config_free(&c);
  fx_rmtree(dir);
  free(dir);
}

/* "c.yaml: line 7: x: y" -> "c.yaml: x: y" */
static void drop_line(char *m) {
  char *l = strstr(m, ": line ");
  if (!l)
    return;
  char *end = l + 7 + strspn(l + 7, "0123456789");
  if (*end == ':')
    memmove(l, end, strlen(end) + 1);
}

struct bad { char json[220]; char want[320]; };
static struct bad g_bad_cases[] = {
      {"", "c.json: line 1: invalid JSON"},
      {"{\n\"units\": {\n", "c.json: line 3: invalid JSON"},
      {"[]", "c.json: (top level): must be an object"},
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
      {"{\"enforcement\": {\"combinedDirections\": \"on\"}}", "c.json: enforcement.combinedDirections: must be true or false"},
      {"{\"enforcement\": {\"combinedDirectionsFloor\": 0.5}}", "c.json: enforcement.combinedDirectionsFloor: must be a number in (0, 0.25]"},
      {"{\"enforcement\": {\"combinedDirectionsFloor\": 0}}", "c.json: enforcement.combinedDirectionsFloor: must be a number in (0, 0.25]"},
      {"{\"nodePolicy\": {\"qosClassWeights\": {\"besteffort\": 0}}}", "c.json: nodePolicy.qosClassWeights.besteffort: must be an integer in [1, 10000]"},
      {"{\"nodePolicy\": {\"iocost\": {\"ctrl\": \"manual\"}}}", "c.json: nodePolicy.iocost.ctrl: must be user or auto"},
      {"{\"nodePolicy\": {\"qosClassWeights\": {\"guaranteed\": 500}}}", "c.json: nodePolicy.qosClassWeights: unknown field 'guaranteed' (allowed: burstable besteffort)"},
      {"{\"nodePolicy\": {\"iocost\": {\"latencyTargetUs\": 0}}}", "c.json: nodePolicy.iocost.latencyTargetUs: must be an integer in [1, 10000000]"},
      {"{\"nodePolicy\": {\"iocost\": {\"min\": 200, \"max\": 100}}}", "c.json: nodePolicy.iocost.min: must not exceed nodePolicy.iocost.max"},
      {"{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"pace\": 0}}}", "c.json: nodePolicy.iocost.pace: must be a number in (0, 1]"},
      {"{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"pace\": 1.2}}}", "c.json: nodePolicy.iocost.pace: must be a number in (0, 1]"},
      {"{\"nodePolicy\": {\"iocost\": {\"pace\": 0.85}}}", "c.json: nodePolicy.iocost.pace: needs nodePolicy.iocost.enable true and ctrl user"},
      {"{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"pace\": \"fast\"}}}", "c.json: nodePolicy.iocost.pace: must be a number in (0, 1] or auto"},
      {"{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"pace\": \"AUTO\"}}}", "c.json: nodePolicy.iocost.pace: must be a number in (0, 1] or auto"},
      {"{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"pace\": true}}}", "c.json: nodePolicy.iocost.pace: must be a number"},
      {"{\"nodePolicy\": {\"iocost\": {\"pace\": \"auto\"}}}", "c.json: nodePolicy.iocost.pace: needs nodePolicy.iocost.enable true and ctrl user"},
      {"{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"ctrl\": \"auto\", \"pace\": 0.85}}}", "c.json: nodePolicy.iocost.pace: needs nodePolicy.iocost.enable true and ctrl user"},
      {"{\"nodePolicy\": {\"ungranted\": {\"enable\": 1}}}", "c.json: nodePolicy.ungranted.enable: must be true or false"},
      {"{\"monitor\": {\"intervalSeconds\": 0}}", "c.json: monitor.intervalSeconds: must be an integer in [1, 60]"},
      {"{\"monitor\": {\"starvedWindowSeconds\": 0}}", "c.json: monitor.starvedWindowSeconds: must be an integer in [1, 3600]"},
      {"{\"monitor\": {\"eventIntervalSeconds\": -1}}", "c.json: monitor.eventIntervalSeconds: must be an integer in [0, 86400]"},
      {"{\"monitor\": {\"intervalSeconds\": 10, \"starvedWindowSeconds\": 5}}", "c.json: monitor.starvedWindowSeconds: must be at least monitor.intervalSeconds"},
      {"{\"monitor\": {\"window\": 5}}", "c.json: monitor: unknown field 'window' (allowed: enable intervalSeconds starvedWindowSeconds eventIntervalSeconds)"},
      {"{\"monitor\": {\"enable\": \"yes\"}}", "c.json: monitor.enable: must be true or false"},
      {"{\"nodePolicy\": {\"ungranted\": {\"intervalMs\": 50}}}", "c.json: nodePolicy.ungranted.intervalMs: must be an integer in [100, 60000]"},
      {"{\"nodePolicy\": {\"ungranted\": {\"pool\": 5}}}", "c.json: nodePolicy.ungranted: unknown field 'pool' (allowed: enable intervalMs headroomShare lend lendReserve lendSampleMs pageCacheBytes burst)"},
      {"{\"nodePolicy\": {\"ungranted\": {\"headroomShare\": 0}}}", "c.json: nodePolicy.ungranted.headroomShare: must be a number in (0, 1]"},
      {"{\"nodePolicy\": {\"ungranted\": {\"headroomShare\": 1.5}}}", "c.json: nodePolicy.ungranted.headroomShare: must be a number in (0, 1]"},
      {"{\"devices\": [{\"select\": \"sda\", \"ungrantedPool\": {\"bandwidthBytesPerSec\": 1}}]}", "c.json: devices[0].ungrantedPool.bandwidthBytesPerSec: must be an integer in [2, "},
      {"{\"devices\": [{\"select\": \"sda\", \"ungrantedPool\": {\"bw\": 1}}]}", "c.json: devices[0].ungrantedPool: unknown field 'bw'"},
      {"{\"devices\": [{\"select\": \"sda\", \"capacity\": {\"iops\": 100}, \"ungrantedPool\": {\"iops\": 101}}]}", "c.json: devices[0].ungrantedPool.iops: is larger than the disk (capacity.iops)"},
      {"{\"devices\": [{\"select\": \"sda\", \"capacity\": {\"bandwidthBytesPerSec\": 100}, \"ungrantedPool\": {\"bandwidthBytesPerSec\": 200}}]}", "c.json: devices[0].ungrantedPool.bandwidthBytesPerSec: is larger than the disk"},
      /* issue 16: nvmet namespaces */
      {"{\"nvmet\": {\"namespace\": []}}", "c.json: nvmet: unknown field 'namespace' (allowed: parent allowNamespaceRestart namespaces)"},
      {"{\"nvmet\": {\"parent\": \"/ioqos\"}}", "c.json: nvmet.parent: must be a relative path below the cgroup2 root"},
      {"{\"nvmet\": {\"parent\": \"a/../b\"}}", "c.json: nvmet.parent: must not contain '.' or '..'"},
      {"{\"nvmet\": {\"parent\": \"kubepods.slice/x\"}}", "c.json: nvmet.parent: must not be inside kubelet's kubepods tree"},
      {"{\"nvmet\": {\"parent\": \"a b\"}}", "c.json: nvmet.parent: may hold only A-Z a-z 0-9"},
      {"{\"nvmet\": {\"allowNamespaceRestart\": 1}}", "c.json: nvmet.allowNamespaceRestart: must be true or false"},
      {"{\"nvmet\": {\"namespaces\": {}}}", "c.json: nvmet.namespaces: must be an array"},
      {"{\"nvmet\": {\"namespaces\": [{\"nsid\": 1, \"grant\": {\"bandwidth\": 1}}]}}", "c.json: nvmet.namespaces[0].subsystem: is required"},
      {"{\"nvmet\": {\"namespaces\": [{\"subsystem\": \"a/b\", \"grant\": {\"bandwidth\": 1}}]}}", "c.json: nvmet.namespaces[0].subsystem: must not contain '/'"},
      {"{\"nvmet\": {\"namespaces\": [{\"subsystem\": \"q\", \"nsid\": 0, \"grant\": {\"iops\": 1}}]}}", "c.json: nvmet.namespaces[0].nsid: must be an integer in [1, 4294967295]"},
      {"{\"nvmet\": {\"namespaces\": [{\"subsystem\": \"q\"}]}}", "c.json: nvmet.namespaces[0]: needs grant (bandwidth/iops units) or limits (raw io.max values)"},
      {"{\"nvmet\": {\"namespaces\": [{\"subsystem\": \"q\", \"grant\": {\"bandwidth\": 1}, \"limits\": {\"rbps\": 9}}]}}", "c.json: nvmet.namespaces[0].limits: and grant exclude each other"},
      {"{\"nvmet\": {\"namespaces\": [{\"subsystem\": \"q\", \"grant\": {}}]}}", "c.json: nvmet.namespaces[0].grant: must set bandwidth or iops"},
      {"{\"nvmet\": {\"namespaces\": [{\"subsystem\": \"q\", \"grant\": {\"bandwidth\": 0}}]}}", "c.json: nvmet.namespaces[0].grant.bandwidth: must be an integer in [1, 25000]"},
      {"{\"nvmet\": {\"namespaces\": [{\"subsystem\": \"q\", \"limits\": {\"rbps\": 1}}]}}", "c.json: nvmet.namespaces[0].limits.rbps: must be an integer in [2, "},
      {"{\"nvmet\": {\"namespaces\": [{\"subsystem\": \"q\", \"limits\": {\"rios\": 5}}]}}", "c.json: nvmet.namespaces[0].limits: unknown field 'rios' (allowed: rbps wbps riops wiops)"},
      {"{\"nvmet\": {\"namespaces\": [{\"subsystem\": \"q\", \"grant\": {\"iops\": 1}, \"weight\": 10001}]}}", "c.json: nvmet.namespaces[0].weight: must be an integer in [1, 10000]"},
      {"{\"nvmet\": {\"namespaces\": [{\"subsystem\": \"q\", \"grant\": {\"iops\": 1}}, {\"subsystem\": \"q\", \"grant\": {\"iops\": 2}}]}}", "c.json: nvmet.namespaces[1]: selects the same namespaces as nvmet.namespaces[0]"},
      {"{\"nvmet\": {\"namespaces\": [{\"subsystem\": \"q\", \"grant\": {\"iops\": 1}}, {\"subsystem\": \"q\", \"nsid\": 2, \"grant\": {\"iops\": 2}}]}}", "c.json: nvmet.namespaces[1]: is never used: nvmet.namespaces[0] before it selects every namespace"},
      /* issue 12 item 10: ListAndWatch must stay well under kubelet's 4 MiB */
      {"{\"devices\": [{\"select\": \"sda\", \"capacity\": {\"iops\": 3200000}}]}",
       "c.json: devices[0].capacity.iops: 3200000 x allocatable fraction 0.8 / unit size 100 = 25600 ioqos/iops units, more than the 25000 one disk may advertise (each unit is one device in kubelet's ListAndWatch message, at most 78 bytes each, limit 4194304 bytes): raise units.iops"},
      {"{\"allocatableFraction\": 1, \"devices\": [{\"select\": \"sda\", \"capacity\": {\"bandwidthBytesPerSec\": 16106127360}}, {\"select\": \"sdb\", \"capacity\": {\"bandwidthBytesPerSec\": 16106127360}}]}",
       "c.json: devices: the configured capacities add up to 30720 ioqos/bandwidth units, more than the 25000 one node may advertise"},
};
ParameterizedTestParameters(config, rejects) {
  return cr_make_param_array(struct bad, g_bad_cases, sizeof g_bad_cases / sizeof g_bad_cases[0]);
}
ParameterizedTest(struct bad *b, config, rejects) {
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse(b->json, "c.json", &c, &e), -1, "accepted: %s", b->json);
  /* the table predates lines in JSON validation errors (config, json_lines) */
  if (!strstr(b->want, "invalid JSON"))
    drop_line(e.msg);
  cr_assert(strstr(e.msg, b->want), "for %s\n got: %s\nwant: %s", b->json, e.msg, b->want);
  cr_assert_eq(e.code, IOQ_EINVAL_INPUT);
  cr_assert_null(c.source, "config must be freed on error");
}

Test(config, nvmet) {
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse("{}", "c.json", &c, &e), 0, "%s", e.msg);
  cr_assert_str_eq(c.nvmet.parent, "ioqos-nvmet.slice");
  cr_assert_not(c.nvmet.allow_namespace_restart, "never disruptive by default");
  cr_assert_eq(c.nvmet.n, 0);
  ioq_config_free(&c);
  const char *y = "apiVersion: ioqos.io/v1alpha1\nkind: NodeConfiguration\n"
                  "nvmet:\n  parent: storage/ioqos-nvmet\n  allowNamespaceRestart: true\n"
                  "  namespaces:\n"
                  "  - subsystem: nqn.2014-08.org.example:db\n    nsid: 3\n"
                  "    grant: {bandwidth: 200, iops: 10}\n    weight: 900\n"
                  "  - subsystem: nqn.2014-08.org.example:db\n"
                  "    limits: {rbps: 104857600, wiops: 500}\n";
  cr_assert_eq(ioq_config_parse(y, "c.yaml", &c, &e), 0, "%s", e.msg);
  cr_assert_str_eq(c.nvmet.parent, "storage/ioqos-nvmet");
  cr_assert(c.nvmet.allow_namespace_restart);
  cr_assert_eq(c.nvmet.n, 2);
  cr_assert_str_eq(c.nvmet.ns[0].subsystem, "nqn.2014-08.org.example:db");
  cr_assert_eq(c.nvmet.ns[0].nsid, 3);
  cr_assert_not(c.nvmet.ns[0].raw);
  cr_assert_eq(c.nvmet.ns[0].units[IOQ_RES_BANDWIDTH], 200);
  cr_assert_eq(c.nvmet.ns[0].units[IOQ_RES_IOPS], 10);
  cr_assert_eq(c.nvmet.ns[0].weight, 900);
  cr_assert_eq(c.nvmet.ns[1].nsid, 0, "every namespace of the subsystem");
  cr_assert(c.nvmet.ns[1].raw);
  cr_assert_eq(c.nvmet.ns[1].limits.rbps, 104857600ull);
  cr_assert_eq(c.nvmet.ns[1].limits.wbps, 0, "not limited");
  cr_assert_eq(c.nvmet.ns[1].limits.wiops, 500);
  ioq_config_free(&c);
  /* a pool sets its own nvmet section (storage nodes are a pool) */
  const char *pj = "{\"pools\": [{\"nodeSelector\": {\"matchLabels\": {\"role\": \"storage\"}},"
                   " \"nvmet\": {\"namespaces\": [{\"subsystem\": \"q\", \"grant\": {\"iops\": 1}}]}}]}";
  json_object *labels = json_tokener_parse("{\"role\": \"storage\"}");
  cr_assert_eq(ioq_config_parse_node(pj, "c.json", labels, &c, &e), 0, "%s", e.msg);
  cr_assert_eq(c.nvmet.n, 1);
  cr_assert_str_eq(c.nvmet.ns[0].subsystem, "q");
  ioq_config_free(&c);
  json_object_put(labels);
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

/* ---- YAML (issue 14 item 5) ---- */

/* Block-style YAML for a JSON tree, as an operator writes it (keys plain,
 * strings double-quoted, which YAML reads with JSON's escapes). */
static void emit(FILE *f, json_object *o, int ind);
static void emit_scalar(FILE *f, json_object *v) {
  fprintf(f, "%s\n", json_object_to_json_string_ext(v, JSON_C_TO_STRING_NOSLASHESCAPE));
}
static bool is_block(json_object *v) {
  return (json_object_is_type(v, json_type_object) && json_object_object_length(v) > 0) ||
         (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0);
}
static void emit(FILE *f, json_object *o, int ind) {
  if (json_object_is_type(o, json_type_object)) {
    json_object_object_foreach(o, k, v) {
      fprintf(f, "%*s%s:", ind, "", k);
      if (is_block(v)) {
        fputc('\n', f);
        emit(f, v, ind + 2);
      } else {
        fputc(' ', f);
        emit_scalar(f, v);
      }
    }
  } else {
    for (size_t i = 0; i < json_object_array_length(o); i++) {
      json_object *v = json_object_array_get_idx(o, i);
      fprintf(f, "%*s-", ind, "");
      if (is_block(v)) {
        fputc('\n', f);
        emit(f, v, ind + 2);
      } else {
        fputc(' ', f);
        emit_scalar(f, v);
      }
    }
  }
}
/* NULL when the JSON itself does not parse (syntax cases have no YAML twin) */
static char *to_yaml(const char *json) {
  json_tokener *tok = json_tokener_new();
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
  json_object *j = json_tokener_parse_ex(tok, json, (int)strlen(json));
  bool whole = json_tokener_get_error(tok) == json_tokener_success &&
               json_tokener_get_parse_end(tok) == strlen(json);
  json_tokener_free(tok);
  if (!j || !whole) {
    json_object_put(j);
    return NULL;
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (is_block(j))
    emit(f, j, 0);
  else
    emit_scalar(f, j);
  fclose(f);
  json_object_put(j);
  return buf;
}
/* Every rejected JSON case, written as block YAML: refused with the same
 * message (plus a line). */
ParameterizedTestParameters(config, yaml_same_errors) {
  return cr_make_param_array(struct bad, g_bad_cases, sizeof g_bad_cases / sizeof g_bad_cases[0]);
}
ParameterizedTest(struct bad *b, config, yaml_same_errors) {
  char *yaml = to_yaml(b->json);
  if (!yaml)
    cr_skip_test("JSON syntax case");
  struct ioq_config c;
  ioq_err ej = {0}, ey = {0};
  cr_assert_eq(ioq_config_parse(b->json, "c.json", &c, &ej), -1);
  cr_assert_eq(ioq_config_parse(yaml, "c.yaml", &c, &ey), -1, "YAML accepted:\n%s", yaml);
  cr_assert_eq(ey.code, IOQ_EINVAL_INPUT);
  cr_assert(strstr(ey.msg, "c.yaml: line "), "no line in: %s", ey.msg);
  char want[sizeof ej.msg];
  drop_line(ej.msg); /* both have lines, of different texts */
  snprintf(want, sizeof want, "c.yaml%s", ej.msg + strlen("c.json"));
  drop_line(ey.msg);
  cr_assert_str_eq(ey.msg, want, "YAML:\n%s", yaml);
  free(yaml);
}

struct good { char json[400]; };
ParameterizedTestParameters(config, yaml_same_values) {
  static struct good cases[] = {
      {"{}"},
      {"{\"apiVersion\": \"ioqos.io/v1alpha1\", \"kind\": \"NodeConfiguration\", \"units\": {\"bandwidthBytesPerSec\": 10485760, \"iops\": 1000}, \"allocatableFraction\": 0.9, \"placementPolicy\": \"balanced\"}"},
      {"{\"devices\": [{\"select\": \"/var/lib/kubelet\", \"class\": \"standard\"}, {\"select\": \"nvme1n1\", \"class\": \"fast\", \"capacity\": {\"bandwidthBytesPerSec\": 2000000000, \"iops\": 400000}, \"allocatableFraction\": 0.7}]}"},
      {"{\"enforcement\": {\"failOpen\": true, \"ioWeight\": false, \"reconcileIntervalSeconds\": 3}, \"nodePolicy\": {\"qosClassWeights\": {\"besteffort\": 10}, \"iocost\": {\"enable\": true, \"ctrl\": \"user\", \"min\": 100, \"max\": 100, \"pace\": 0.85}}}"},
      {"{\"nodePolicy\": {\"iocost\": {\"enable\": true, \"pace\": \"auto\"}}}"},
      {"{\"kubeletRootDir\": \"/data/kubelet\", \"calibrationFile\": \"/data/c.json\", \"nodePolicy\": {\"ungranted\": {\"enable\": false, \"intervalMs\": 250, \"headroomShare\": 0.25}}}"},
      {"{\"monitor\": {\"enable\": false, \"intervalSeconds\": 2, \"starvedWindowSeconds\": 5, \"eventIntervalSeconds\": 60}}"},
  };
  return cr_make_param_array(struct good, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct good *g, config, yaml_same_values) {
  char *yaml = to_yaml(g->json);
  struct ioq_config cj, cy;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse(g->json, "c.json", &cj, &e), 0, "%s", e.msg);
  cr_assert_eq(ioq_config_parse(yaml, "c.yaml", &cy, &e), 0, "%s\n%s", e.msg, yaml);
  cr_assert_str_eq(cj.kubelet_root, cy.kubelet_root);
  cr_assert_str_eq(cj.calibration_file, cy.calibration_file);
  cr_assert_eq(cj.units.size[0], cy.units.size[0]);
  cr_assert_eq(cj.units.size[1], cy.units.size[1]);
  cr_assert_float_eq(cj.allocatable_fraction, cy.allocatable_fraction, 1e-12);
  cr_assert_eq(cj.policy, cy.policy);
  cr_assert_eq(cj.n_devices, cy.n_devices);
  for (size_t i = 0; i < cj.n_devices; i++) {
    cr_assert_str_eq(cj.devices[i].select, cy.devices[i].select);
    cr_assert_eq(cj.devices[i].capacity_bw_bytes, cy.devices[i].capacity_bw_bytes);
    cr_assert_eq(cj.devices[i].capacity_iops, cy.devices[i].capacity_iops);
    cr_assert_float_eq(cj.devices[i].allocatable_fraction, cy.devices[i].allocatable_fraction, 1e-12);
  }
  cr_assert_eq(memcmp(&cj.enforcement, &cy.enforcement, sizeof cj.enforcement), 0);
  cr_assert_eq(memcmp(&cj.node_policy, &cy.node_policy, sizeof cj.node_policy), 0);
  cr_assert_eq(memcmp(&cj.monitor, &cy.monitor, sizeof cj.monitor), 0);
  cr_assert_eq(cj.versioned, cy.versioned);
  ioq_config_free(&cj);
  ioq_config_free(&cy);
  free(yaml);
}

static const char *yaml_err(const char *text, const char *source) {
  static ioq_err e;
  struct ioq_config c;
  memset(&e, 0, sizeof e);
  cr_assert_eq(ioq_config_parse(text, source, &c, &e), -1, "accepted:\n%s", text);
  cr_assert_eq(e.code, IOQ_EINVAL_INPUT);
  cr_assert_null(c.source, "config must be freed on error");
  return e.msg;
}

/* what an operator writes: comments, block style; errors name line and path */
Test(config, yaml_block_lines) {
  const char *y = "# node pool A\n"
                  "apiVersion: ioqos.io/v1alpha1\n"
                  "kind: NodeConfiguration\n"
                  "devices:\n"
                  "  - select: sda\n"
                  "  - select: nvme1n1\n"
                  "    class: fast\n"
                  "    capacity:\n"
                  "      iops: 0\n";
  cr_assert_str_eq(yaml_err(y, "n.yaml"),
                   "n.yaml: line 9: devices[1].capacity.iops: must be an integer in [1, 1000000000]");
  cr_assert_str_eq(yaml_err("units:\n  iops: 100\n  bandwith: 5\n", "n.yaml"),
                   "n.yaml: line 3: units: unknown field 'bandwith' (allowed: bandwidthBytesPerSec iops)");
  /* YAML 1.2: yes/on are strings, never a boolean by accident */
  cr_assert_str_eq(yaml_err("enforcement:\n  failOpen: yes\n", "n.yaml"),
                   "n.yaml: line 2: enforcement.failOpen: must be true or false");
  /* a quoted number is a string */
  cr_assert_str_eq(yaml_err("units:\n  iops: \"100\"\n", "n.yaml"),
                   "n.yaml: line 2: units.iops: must be an integer");
  cr_assert(strstr(yaml_err("units:\n  iops: 100\n bad indent: 1\n", "n.yaml"),
                   "n.yaml: line 3: invalid YAML: "));
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse("apiVersion: ioqos.io/v1alpha1\nkind: NodeConfiguration\n"
                                "allocatableFraction: .5\nunits: {iops: 0x3e8}\nenforcement:\n  failOpen: True\n",
                                "n.yaml", &c, &e), 0, "%s", e.msg);
  cr_assert_float_eq(c.allocatable_fraction, 0.5, 1e-12);
  cr_assert_eq(c.units.size[IOQ_RES_IOPS], 1000);
  cr_assert(c.enforcement.fail_open);
  cr_assert(c.versioned);
  ioq_config_free(&c);
}

Test(config, yaml_duplicate_keys) {
  cr_assert_str_eq(yaml_err("units:\n  iops: 100\n  iops: 1000\n", "n.yaml"),
                   "n.yaml: line 3: duplicate key: iops");
  cr_assert_str_eq(yaml_err("devices: []\nenforcement: {}\ndevices: []\n", "n.yaml"),
                   "n.yaml: line 3: duplicate key: devices");
  cr_assert_str_eq(yaml_err("{units: {iops: 1, iops: 2}}", "n.yaml"), "n.yaml: line 1: duplicate key: iops");
}

/* Aliases would let a few lines expand to gigabytes (billion laughs): refused
 * at the first one, so a hostile file costs what its text costs. */
Test(config, yaml_aliases_refused) {
  const char *laughs = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
                       "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                       "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                       "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                       "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                       "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                       "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
                       "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
                       "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
  cr_assert_str_eq(yaml_err(laughs, "n.yaml"),
                   "n.yaml: line 1: anchors are not supported (write the value out): &a");
  cr_assert_str_eq(yaml_err("units:\n  iops: *x\n", "n.yaml"),
                   "n.yaml: line 2: aliases are not supported (write the value out): *x");
  cr_assert_str_eq(yaml_err("devices:\n  - !!map {select: sda}\n", "n.yaml"),
                   "n.yaml: line 2: tags are not supported: tag:yaml.org,2002:map");
  cr_assert_str_eq(yaml_err("units: {}\n---\nunits: {}\n", "n.yaml"),
                   "n.yaml: line 2: more than one YAML document (one configuration per file)");
  cr_assert_str_eq(yaml_err("? [a, b]\n: 1\n", "n.yaml"),
                   "n.yaml: line 1: a key must be a plain value, not a list or a mapping");
  cr_assert_str_eq(yaml_err("units:\n  iops: 99999999999999999999999\n", "n.yaml"),
                   "n.yaml: line 2: integer out of range: 99999999999999999999999");
}

/* nesting is bounded (the builder's stack is fixed): a 1 MiB "[[[[..." is
 * refused at level 65 */
Test(config, yaml_depth_bounded) {
  size_t n = 1u << 20;
  char *t = malloc(n + 1);
  memset(t, '[', n);
  t[n] = '\0';
  cr_assert_str_eq(yaml_err(t, "n.yaml"), "n.yaml: line 1: nested too deep (more than 64 levels)");
  free(t);
}

Test(config, syntax_detection) {
  struct ioq_config c;
  ioq_err e = {0};
  /* no telling extension: '{' is JSON (strict: a trailing comma is an error) */
  cr_assert(strstr(yaml_err("{\"units\": {},}", "/etc/ioqos/config"), "invalid JSON"));
  cr_assert_eq(ioq_config_parse("units:\n  iops: 1000\n", "/etc/ioqos/config", &c, &e), 0, "%s", e.msg);
  cr_assert_eq(c.units.size[IOQ_RES_IOPS], 1000);
  ioq_config_free(&c);
  /* .yaml: flow style (JSON-like) is YAML too */
  cr_assert_eq(ioq_config_parse("{\"units\": {\"iops\": 1000},}", "c.yaml", &c, &e), 0, "%s", e.msg);
  ioq_config_free(&c);
  cr_assert(strstr(yaml_err("units:\n  iops: 1000\n", "c.json"), "c.json: line 1: invalid JSON"));
  cr_assert_str_eq(yaml_err("", "c.yaml"), "c.yaml: (top level): must be an object");
}

Test(config, api_version_and_kind) {
  cr_assert_str_eq(yaml_err("apiVersion: ioqos.io/v1\nkind: NodeConfiguration\n", "n.yaml"),
                   "n.yaml: line 1: apiVersion: must be ioqos.io/v1alpha1");
  cr_assert_str_eq(yaml_err("apiVersion: ioqos.io/v1alpha1\nkind: Node\n", "n.yaml"),
                   "n.yaml: line 2: kind: must be NodeConfiguration");
  cr_assert_str_eq(yaml_err("apiVersion: ioqos.io/v1alpha1\n", "n.yaml"),
                   "n.yaml: line 1: kind: is required with apiVersion (NodeConfiguration)");
  cr_assert_str_eq(yaml_err("{\"kind\": \"NodeConfiguration\"}", "n.json"),
                   "n.json: line 1: apiVersion: is required with kind (ioqos.io/v1alpha1)");
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse("{}", "n.json", &c, &e), 0, "%s", e.msg);
  cr_assert_not(c.versioned, "no header: accepted (files from before it), the loader warns");
  ioq_config_free(&c);
}

/* ---- pools: one DaemonSet, several node pools ---- */

static const char *g_pools =
    "apiVersion: ioqos.io/v1alpha1\n"
    "kind: NodeConfiguration\n"
    "allocatableFraction: 0.9\n"
    "devices:\n"
    "  - select: sda\n"
    "enforcement:\n"
    "  failOpen: true\n"
    "pools:\n"
    "  - name: fast\n"
    "    nodeSelector:\n"
    "      matchLabels: {pool: fast, zone: a}\n"
    "    devices:\n"
    "      - select: nvme1n1\n"
    "        class: fast\n"
    "  - nodeSelector:\n"
    "      matchLabels: {pool: fast}\n"
    "    allocatableFraction: 0.5\n";

static void labels_case(const char *labels_json, const char *want_pool, const char *want_dev,
                        double want_frac) {
  json_object *l = labels_json ? json_tokener_parse(labels_json) : NULL;
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse_node(g_pools, "p.yaml", l, &c, &e), 0, "%s", e.msg);
  cr_assert_eq(c.n_pools, 2);
  if (want_pool) {
    cr_assert_str_eq(c.pool, want_pool);
    /* the index tells pools apart whatever their names (the plugin keeps one config per pool) */
    cr_assert_eq(c.pool_index, strcmp(want_pool, "fast") == 0 ? 0u : 1u);
  } else {
    cr_assert_null(c.pool);
  }
  cr_assert_str_eq(c.devices[0].select, want_dev);
  cr_assert_float_eq(c.allocatable_fraction, want_frac, 1e-12);
  cr_assert(c.enforcement.fail_open, "sections a pool does not set stay the top level's");
  cr_assert_str_eq(c.source, "p.yaml");
  ioq_config_free(&c);
  json_object_put(l);
}

Test(config, pools_select_by_labels) {
  /* first match wins; its sections replace the top level's whole */
  labels_case("{\"pool\": \"fast\", \"zone\": \"a\", \"other\": \"x\"}", "fast", "nvme1n1", 0.9);
  labels_case("{\"pool\": \"fast\", \"zone\": \"b\"}", "pools[1]", "sda", 0.5);
  /* no match, or no labels: the top level */
  labels_case("{\"pool\": \"slow\"}", NULL, "sda", 0.9);
  labels_case(NULL, NULL, "sda", 0.9);
}

Test(config, pools_validated_all) {
  /* a pool that does not match this node is still checked, named by index */
  cr_assert_str_eq(yaml_err("pools:\n  - nodeSelector: {matchLabels: {a: b}}\n"
                            "  - nodeSelector: {matchLabels: {a: c}}\n"
                            "    devices:\n      - select: sda\n        capacity: {iops: 0}\n",
                            "n.yaml"),
                   "n.yaml: line 6: pools[1].devices[0].capacity.iops: must be an integer in [1, 1000000000]");
  cr_assert_str_eq(yaml_err("pools:\n  - devices: []\n", "n.yaml"),
                   "n.yaml: line 2: pools[0].nodeSelector: is required (matchLabels: the node labels of this pool)");
  cr_assert_str_eq(yaml_err("pools:\n  - nodeSelector: {matchLabels: {}}\n", "n.yaml"),
                   "n.yaml: line 2: pools[0].nodeSelector.matchLabels: must be an object with at least one label");
  cr_assert_str_eq(yaml_err("pools:\n  - nodeSelector:\n      matchLabels:\n        gpu: true\n", "n.yaml"),
                   "n.yaml: line 4: pools[0].nodeSelector.matchLabels.gpu: must be a string (quote numbers and true/false)");
  cr_assert_str_eq(yaml_err("pools:\n  - nodeSelector: {matchLabels: {a: b}}\n    units: {iops: 10}\n", "n.yaml"),
                   "n.yaml: line 3: pools[0]: unknown field 'units' (allowed: name nodeSelector kubeletRootDir calibrationFile allocatableFraction devices enforcement monitor nodePolicy nvmet)");
  cr_assert_str_eq(yaml_err("{\"pools\": [{\"nodeSelector\": {\"matchLabels\": {\"a\": \"b\"}}, \"allocatableFraction\": 2}]}", "n.json"),
                   "n.json: line 1: pools[0].allocatableFraction: must be a number in (0, 1]");
  cr_assert_str_eq(yaml_err("pools: {}\n", "n.yaml"), "n.yaml: line 1: pools: must be an array");
}

/* memory: a YAML file may hold at most IOQ_CONFIG_MAX_NODES keys and values
 * (the worst shape at the budget peaks at ~61 MB RSS in ioqosctl probe, under
 * the DaemonSet's 128Mi; 183 MB without the budget for a 4 MiB file) */
Test(config, yaml_node_budget) {
  size_t n = IOQ_CONFIG_MAX_NODES / 3 + 10, cap = 16 + n * 24;
  char *t = malloc(cap), *p = t;
  p += sprintf(p, "devices:\n");
  for (size_t i = 0; i < n; i++)
    p += sprintf(p, "  - {s: %zu}\n", i);
  char want[128];
  /* the mapping, the key and the list: 3 values, then 3 per entry (from line 2) */
  snprintf(want, sizeof want, "n.yaml: line %d: more than %d values", (IOQ_CONFIG_MAX_NODES - 2) / 3 + 1,
           IOQ_CONFIG_MAX_NODES);
  cr_assert_str_eq(yaml_err(t, "n.yaml"), want);
  free(t);
}

/* JSON validation errors carry the line of the field too (found by reading
 * the text again as YAML, on the error path only) */
Test(config, json_lines) {
  cr_assert_str_eq(yaml_err("{\n  \"units\": {\"iops\": 100},\n  \"devices\": [\n    {\"select\": \"sda\"},\n"
                            "    {\"select\": \"sdb\",\n     \"capacity\": {\"iops\": 0}}\n  ]\n}\n", "c.json"),
                   "c.json: line 6: devices[1].capacity.iops: must be an integer in [1, 1000000000]");
  cr_assert_str_eq(yaml_err("{\n \"units\": {\n  \"iops\": 1,\n  \"bw\": 2\n }\n}\n", "c.json"),
                   "c.json: line 4: units: unknown field 'bw' (allowed: bandwidthBytesPerSec iops)");
  cr_assert_str_eq(yaml_err("{\"pools\": [\n {\"nodeSelector\": {\"matchLabels\": {\"a\": \"b\"}},\n"
                            "  \"enforcement\": {\"failOpen\": 1}}]}", "c.json"),
                   "c.json: line 3: pools[0].enforcement.failOpen: must be true or false");
  /* JSON that libyaml does not read (an implicit key over 1024 characters):
   * the message without a line */
  char t[1200], k[1100];
  memset(k, 'k', sizeof k - 1);
  k[sizeof k - 1] = '\0';
  snprintf(t, sizeof t, "{\"%s\": 1}", k);
  cr_assert(strstr(yaml_err(t, "c.json"), "c.json: (top level): unknown field 'kkkk"));
}

/* the same in both syntaxes: a repeated key is refused, with its line (json-c
 * alone keeps the last one silently) */
Test(config, json_duplicate_keys) {
  cr_assert_str_eq(yaml_err("{\"units\": {\"iops\": 100,\n \"iops\": 1000}}", "c.json"),
                   "c.json: line 2: duplicate key: iops");
  cr_assert_str_eq(yaml_err("{\"devices\": [], \"devices\": [{\"select\": \"sda\"}]}", "c"),
                   "c: line 1: duplicate key: devices");
}

/* the budget holds for JSON too: json-c's tree is not built past it (a 4 MiB
 * JSON list took 167 MB RSS in ioqosctl probe; refused, 61 MB) */
Test(config, json_node_budget) {
  size_t n = IOQ_CONFIG_MAX_NODES / 3 + 10, cap = 32 + n * 24;
  char *t = malloc(cap), *p = t;
  p += sprintf(p, "{\"devices\": [\n");
  for (size_t i = 0; i < n; i++)
    p += sprintf(p, "%s{\"s\": %zu}\n", i ? "," : "", i);
  sprintf(p, "]}\n");
  char want[128];
  snprintf(want, sizeof want, "n.json: line %d: more than %d values", (IOQ_CONFIG_MAX_NODES - 2) / 3 + 1,
           IOQ_CONFIG_MAX_NODES);
  cr_assert_str_eq(yaml_err(t, "n.json"), want);
  free(t);
}

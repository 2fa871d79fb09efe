// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grant/nodeanno.h"

static const char *k_example =
    "{\"version\":1,\"node\":\"node-a\",\"units\":{\"ioqos/bandwidth\":1048576,\"ioqos/iops\":100},"
    "\"devices\":[{\"name\":\"nvme0n1\",\"dev\":\"259:0\",\"class\":\"default\",\"healthy\":true,"
    "\"capacity\":{\"ioqos/bandwidth\":2000,\"ioqos/iops\":500},"
    "\"allocated\":{\"ioqos/bandwidth\":350,\"ioqos/iops\":0},"
    "\"capabilities\":[\"io.max\",\"io.weight\",\"io.future-thing\"],\"extra\":{\"x\":1}}],"
    "\"newTopLevel\":[1,2]}";

Test(nodeanno, parse_example_ignores_unknown) {
  struct ioq_node_state s;
  ioq_err e = {0};
  cr_assert_eq(ioq_node_anno_parse(k_example, strlen(k_example), &s, &e), 0, "%s", e.msg);
  cr_assert_str_eq(s.node, "node-a");
  cr_assert_eq(s.n_disks, 1);
  cr_assert_str_eq(s.disks[0].name, "nvme0n1");
  cr_assert_str_eq(s.disks[0].dev, "259:0");
  cr_assert(s.disks[0].healthy);
  cr_assert_eq(s.disks[0].capacity[IOQ_RES_BANDWIDTH], 2000);
  cr_assert_eq(s.disks[0].allocated[IOQ_RES_BANDWIDTH], 350);
  cr_assert_eq(s.disks[0].capacity[IOQ_RES_IOPS], 500);
  cr_assert_eq(s.disks[0].caps, IOQ_CAP_IO_MAX | IOQ_CAP_IO_WEIGHT);
  cr_assert_eq(s.units.size[IOQ_RES_BANDWIDTH], 1048576);
  ioq_node_state_free(&s);
}

Test(nodeanno, roundtrip) {
  struct ioq_disk_state disks[2];
  memset(disks, 0, sizeof disks);
  strcpy(disks[0].name, "sda");
  strcpy(disks[0].dev, "8:0");
  strcpy(disks[0].class_name, "default");
  disks[0].healthy = true;
  disks[0].capacity[0] = 400;
  disks[0].allocated[0] = 12;
  disks[0].caps = IOQ_CAP_BLKIO_THROTTLE;
  disks[0].ungranted_pool[0] = 41943040;
  disks[0].ungranted_pool[1] = 10240;
  strcpy(disks[1].name, "dm-0");
  strcpy(disks[1].dev, "253:0");
  strcpy(disks[1].class_name, "fast");
  disks[1].capacity[1] = 77;
  char pods[2][IOQ_POD_UID_STR_MAX + 1] = {"0f4c2a5e-1111-4a7b-9c3d-2e5f6a7b8c9d", "u2"};
  struct ioq_node_state s = {.version = 1, .disks = disks, .n_disks = 2, .pods = pods, .n_pods = 2};
  strcpy(s.node, "worker-1");
  ioq_unit_sizes_default(&s.units);
  char *txt = ioq_node_anno_format(&s);
  cr_assert_not_null(txt);
  struct ioq_node_state back;
  ioq_err e = {0};
  cr_assert_eq(ioq_node_anno_parse(txt, strlen(txt), &back, &e), 0, "%s: %s", txt, e.msg);
  cr_assert_eq(back.n_disks, 2);
  cr_assert_eq(memcmp(back.disks, disks, sizeof disks), 0, "%s", txt);
  cr_assert(strstr(txt, "\"ungrantedPool\":{\"bytesPerSecond\":41943040,\"iops\":10240}"), "%s", txt);
  cr_assert_null(strstr(strstr(txt, "dm-0"), "ungrantedPool"), "no pool: no field (%s)", txt);
  cr_assert_str_eq(back.node, "worker-1");
  cr_assert_eq(back.n_pods, 2);
  cr_assert_str_eq(back.pods[0], "0f4c2a5e-1111-4a7b-9c3d-2e5f6a7b8c9d");
  cr_assert_str_eq(back.pods[1], "u2");
  ioq_node_state_free(&back);
  free(txt);
}

struct bad { char json[300]; char want[120]; };
ParameterizedTestParameters(nodeanno, rejects) {
  static struct bad cases[] = {
      {"", "is empty"},
      {"{\"version\":1,", "invalid JSON"},
      {"[1]", "must be a JSON object"},
      {"{\"version\":1,\"devices\":[]} x", "trailing data"},
      {"{\"devices\":[]}", "version: must be an integer"},
      {"{\"version\":2,\"devices\":[]}", "version 2 is not supported"},
      {"{\"version\":1}", "devices: must be an array"},
      {"{\"version\":1,\"devices\":[5]}", "devices[0]: must be an object"},
      {"{\"version\":1,\"devices\":[{\"healthy\":true,\"capacity\":{}}]}", "devices[0].name"},
      {"{\"version\":1,\"devices\":[{\"name\":\"a/b\",\"healthy\":true,\"capacity\":{}}]}", "devices[0].name"},
      {"{\"version\":1,\"devices\":[{\"name\":\"sda\",\"capacity\":{}}]}", "devices[0].healthy"},
      {"{\"version\":1,\"devices\":[{\"name\":\"sda\",\"healthy\":true}]}", "devices[0].capacity: is missing"},
      {"{\"version\":1,\"devices\":[{\"name\":\"sda\",\"healthy\":true,\"capacity\":{\"ioqos/bandwidth\":-5}}]}",
       "devices[0].capacity[\"ioqos/bandwidth\"]: must be a non-negative integer"},
      {"{\"version\":1,\"devices\":[{\"name\":\"sda\",\"healthy\":true,\"capacity\":{\"ioqos/iops\":\"9\"}}]}",
       "capacity[\"ioqos/iops\"]"},
      {"{\"version\":1,\"devices\":[{\"name\":\"sda\",\"healthy\":true,\"capacity\":{},\"capabilities\":\"io.max\"}]}",
       "capabilities: must be an array"},
      {"{\"version\":1,\"devices\":[{\"name\":\"sda\",\"healthy\":true,\"capacity\":{}},{\"name\":\"sda\",\"healthy\":true,\"capacity\":{}}]}",
       "devices[1].name: duplicates"},
      {"{\"version\":1,\"node\":7,\"devices\":[]}", "node: must be"},
      {"{\"version\":1,\"devices\":[{\"name\":\"sda\",\"healthy\":true,\"capacity\":{},\"ungrantedPool\":[]}]}",
       "devices[0].ungrantedPool: must be an object"},
      {"{\"version\":1,\"devices\":[{\"name\":\"sda\",\"healthy\":true,\"capacity\":{},\"ungrantedPool\":{\"iops\":-1}}]}",
       "devices[0].ungrantedPool.iops: must be a non-negative integer"},
      {"{\"version\":1,\"devices\":[],\"pods\":{}}", "pods: must be an array of pod UIDs"},
      {"{\"version\":1,\"devices\":[],\"pods\":[\"a\",3]}", "pods[1]: must be a pod UID string"},
  };
  return cr_make_param_array(struct bad, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct bad *c, nodeanno, rejects) {
  struct ioq_node_state s;
  ioq_err e = {0};
  cr_assert_eq(ioq_node_anno_parse(c->json, strlen(c->json), &s, &e), -1, "accepted: %s", c->json);
  cr_assert(strstr(e.msg, c->want), "'%s' -> '%s' (want '%s')", c->json, e.msg, c->want);
  cr_assert(strstr(e.msg, "ioqos.io/devices"), "%s", e.msg);
  cr_assert_null(s.disks);
}

Test(nodeanno, not_nul_terminated) {
  char buf[64];
  const char *j = "{\"version\":1,\"devices\":[]}";
  memcpy(buf, j, strlen(j));
  memset(buf + strlen(j), 'Z', sizeof buf - strlen(j));
  struct ioq_node_state s;
  ioq_err e = {0};
  cr_assert_eq(ioq_node_anno_parse(buf, strlen(j), &s, &e), 0, "%s", e.msg);
  ioq_node_state_free(&s);
}

/* issue 12 item 9: why a disk is unhealthy and which selectors give no disk
 * are published for people; readers (the extender) parse the annotation as
 * before; the reason is kept for kubectl ioqos nodes, never an error */
Test(nodeanno, health_reason_and_faults_are_written_reason_kept_by_readers) {
  struct ioq_disk_state d[2] = {0};
  strcpy(d[0].name, "sda");
  strcpy(d[0].dev, "8:0");
  strcpy(d[0].class_name, "default");
  d[0].healthy = true;
  strcpy(d[0].reason, "ignored: healthy");
  strcpy(d[1].name, "sdb");
  strcpy(d[1].dev, "8:16");
  strcpy(d[1].class_name, "default");
  strcpy(d[1].reason, "capacity of sdb: calibration.json: not a JSON object");
  struct ioq_select_fault f = {.select = "/mnt/gone", .reason = "devices[2].select '/mnt/gone': not found"};
  struct ioq_node_state s = {.version = 1, .node = "node-a", .units = {{1048576, 100}}, .disks = d,
                             .n_disks = 2, .faults = &f, .n_faults = 1};
  char *txt = ioq_node_anno_format(&s);
  cr_assert_not_null(txt);
  cr_assert(strstr(txt, "\"name\":\"sdb\",\"dev\":\"8:16\",\"class\":\"default\",\"healthy\":false,"
                        "\"reason\":\"capacity of sdb: calibration.json: not a JSON object\""), "%s", txt);
  cr_assert_null(strstr(txt, "ignored: healthy"), "no reason on a healthy disk: %s", txt);
  cr_assert(strstr(txt, "\"faults\":[{\"select\":\"/mnt/gone\",\"reason\":\"devices[2].select '/mnt/gone': not found\"}]"),
            "%s", txt);
  struct ioq_node_state back;
  ioq_err e = {0};
  cr_assert_eq(ioq_node_anno_parse(txt, strlen(txt), &back, &e), 0, "%s", e.msg);
  cr_assert_eq(back.n_disks, 2);
  cr_assert_not(back.disks[1].healthy);
  /* kept for people (kubectl ioqos nodes); a healthy disk has none */
  cr_assert_str_eq(back.disks[1].reason, "capacity of sdb: calibration.json: not a JSON object");
  cr_assert_str_eq(back.disks[0].reason, "");
  ioq_node_state_free(&back);
  free(txt);
  /* a reason of another type, or on a healthy disk, is no error and not kept */
  const char *odd = "{\"version\":1,\"devices\":[{\"name\":\"sda\",\"healthy\":false,\"reason\":7,"
                    "\"capacity\":{}},{\"name\":\"sdb\",\"healthy\":true,\"reason\":\"x\",\"capacity\":{}}]}";
  cr_assert_eq(ioq_node_anno_parse(odd, strlen(odd), &back, &e), 0, "%s", e.msg);
  cr_assert_str_eq(back.disks[0].reason, "");
  cr_assert_str_eq(back.disks[1].reason, "");
  ioq_node_state_free(&back);
}
/* issue 12 item 3: the freshness marker */
Test(nodeanno, published_at_roundtrip_and_optional) {
  struct ioq_disk_state d = {.name = "sda", .dev = "8:0", .class_name = "default", .healthy = true};
  struct ioq_node_state s = {.version = 1, .disks = &d, .n_disks = 1, .published_at = 1796092695};
  strcpy(s.node, "w");
  ioq_unit_sizes_default(&s.units);
  char *txt = ioq_node_anno_format(&s);
  cr_assert(strstr(txt, "\"publishedAt\":\"2026-12-01T02:38:15Z\""), "%s", txt);
  struct ioq_node_state back;
  ioq_err e = {0};
  cr_assert_eq(ioq_node_anno_parse(txt, strlen(txt), &back, &e), 0, "%s", e.msg);
  cr_assert_eq(back.published_at, 1796092695);
  ioq_node_state_free(&back);
  free(txt);
  /* an older plugin's annotation has none: 0, still valid */
  cr_assert_eq(ioq_node_anno_parse(k_example, strlen(k_example), &back, &e), 0, "%s", e.msg);
  cr_assert_eq(back.published_at, 0);
  ioq_node_state_free(&back);
  const char *bad[] = {"\"2026-12-01 02:38:15\"", "\"2026-12-01T02:38:15+01:00\"", "17960926",
                       "\"\"", "\"2026-13-01T02:38:15Z\""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char j[200];
    snprintf(j, sizeof j, "{\"version\":1,\"devices\":[],\"publishedAt\":%s}", bad[i]);
    cr_assert_eq(ioq_node_anno_parse(j, strlen(j), &back, &e), -1, "%s", j);
    cr_assert(strstr(e.msg, "publishedAt"), "%s", e.msg);
  }
}

/* issue 16: what the node exports over NVMe-oF is written for people; the
 * extender's reader ignores it */
Test(nodeanno, nvmet_is_written_and_ignored_by_readers) {
  struct ioq_disk_state d = {0};
  strcpy(d.name, "nvme0n1");
  strcpy(d.dev, "259:0");
  strcpy(d.class_name, "default");
  d.healthy = true;
  json_object *nv = json_tokener_parse("{\"state\":\"present\",\"cgroupID\":\"absent\",\"namespaces\":"
                                       "[{\"subsystem\":\"nqn.x\",\"nsid\":1}]}");
  cr_assert_not_null(nv);
  struct ioq_node_state s = {.version = 1, .node = "node-a", .units = {{1048576, 100}}, .disks = &d,
                             .n_disks = 1, .nvmet = nv};
  char *txt = ioq_node_anno_format(&s);
  cr_assert_not_null(txt);
  cr_assert(strstr(txt, "\"nvmet\":{\"state\":\"present\",\"cgroupID\":\"absent\""), "%s", txt);
  struct ioq_node_state back;
  ioq_err e = {0};
  cr_assert_eq(ioq_node_anno_parse(txt, strlen(txt), &back, &e), 0, "%s", e.msg);
  cr_assert_eq(back.n_disks, 1);
  cr_assert_null(back.nvmet, "never parsed");
  ioq_node_state_free(&back);
  free(txt);
  json_object_put(nv); /* the format took its own reference */
}

// SPDX-License-Identifier: Apache-2.0
/* Moving a running plugin to another node pool (plugin/daemon/core/poolswitch.c):
 * which of a pool's settings only a restart changes, and the labels text of
 * the log line. The configs come from one file with pools, as on a node. */
#include <criterion/criterion.h>
#include <string.h>

#include "config/config.h"
#include "core/poolswitch.h"

static const char *g_file =
    "apiVersion: ioqos.io/v1alpha1\n"
    "kind: NodeConfiguration\n"
    "devices: [{select: sda}]\n"
    "nodePolicy: {qosClassWeights: {besteffort: 20}}\n"
    "pools:\n"
    "  - name: live\n" /* differs only in what changes at run time */
    "    nodeSelector: {matchLabels: {pool: live}}\n"
    "    allocatableFraction: 0.5\n"
    "    devices: [{select: nvme0n1, class: fast}]\n"
    "    enforcement: {failOpen: true, reconcileIntervalSeconds: 5, combinedDirectionsFloor: 0.2}\n"
    "    monitor: {intervalSeconds: 2}\n"
    "    nodePolicy:\n"
    "      qosClassWeights: {besteffort: 50}\n"
    "      ungranted: {intervalMs: 500, headroomShare: 0.3, lend: false}\n"
    "  - name: fixed\n" /* and every setting fixed at start */
    "    nodeSelector: {matchLabels: {pool: fixed}}\n"
    "    enforcement: {ioWeight: false, bfqWeight: false, enableControllers: false,\n"
    "                  combinedDirections: true}\n"
    "    monitor: {enable: false}\n"
    "    nodePolicy: {ungranted: {enable: false}}\n"
    "    nvmet: {namespaces: [{subsystem: q, grant: {iops: 1}}]}\n"
    "  - name: storage\n" /* nvmet alone, with the same namespaces as a pool */
    "    nodeSelector: {matchLabels: {pool: storage}}\n"
    "    nvmet: {namespaces: [{subsystem: q, grant: {iops: 2}}]}\n";

static void load(const char *labels_json, struct ioq_config *c) {
  json_object *l = labels_json ? json_tokener_parse(labels_json) : NULL;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse_node(g_file, "n.yaml", l, c, &e), 0, "%s", e.msg);
  json_object_put(l);
}

Test(poolswitch, names) {
  struct ioq_config top, live;
  load(NULL, &top);
  load("{\"pool\": \"live\"}", &live);
  cr_assert_str_eq(poolswitch_name(&top), "(top level)");
  cr_assert_str_eq(poolswitch_name(&live), "live");
  ioq_config_free(&top);
  ioq_config_free(&live);
}

Test(poolswitch, live_settings_need_no_restart) {
  struct ioq_config top, live;
  load(NULL, &top);
  load("{\"pool\": \"live\"}", &live);
  char out[256] = "x";
  cr_assert_eq(poolswitch_restart_fields(&top, &live, out, sizeof out), 0);
  cr_assert_str_eq(out, "");
  cr_assert_eq(poolswitch_restart_fields(&live, &top, out, sizeof out), 0, "either way");
  cr_assert_eq(poolswitch_restart_fields(&top, &top, out, sizeof out), 0);
  ioq_config_free(&top);
  ioq_config_free(&live);
}

Test(poolswitch, fixed_settings_are_named) {
  struct ioq_config top, fixed, storage;
  load(NULL, &top);
  load("{\"pool\": \"fixed\"}", &fixed);
  load("{\"pool\": \"storage\"}", &storage);
  char out[512];
  cr_assert_eq(poolswitch_restart_fields(&top, &fixed, out, sizeof out), 7);
  cr_assert_str_eq(out, "enforcement.ioWeight,enforcement.bfqWeight,enforcement.enableControllers,"
                        "enforcement.combinedDirections,monitor.enable,nodePolicy.ungranted.enable,"
                        "nvmet");
  /* the namespaces are compared entry by entry */
  cr_assert_eq(poolswitch_restart_fields(&fixed, &storage, out, sizeof out), 7);
  cr_assert_eq(poolswitch_restart_fields(&top, &storage, out, sizeof out), 1);
  cr_assert_str_eq(out, "nvmet");
  /* a short buffer: whole names, then "..." */
  char small[40];
  cr_assert_eq(poolswitch_restart_fields(&top, &fixed, small, sizeof small), 7, "all counted");
  cr_assert_str_eq(small, "enforcement.ioWeight...");
  ioq_config_free(&top);
  ioq_config_free(&fixed);
  ioq_config_free(&storage);
}

Test(poolswitch, labels_text) {
  char out[64];
  poolswitch_labels_text(NULL, out, sizeof out);
  cr_assert_str_eq(out, "(none)");
  json_object *l = json_tokener_parse("{}");
  poolswitch_labels_text(l, out, sizeof out);
  cr_assert_str_eq(out, "(none)");
  json_object_put(l);
  /* sorted by key, whatever the Node's order */
  l = json_tokener_parse("{\"zone\": \"a\", \"ioqos.io/pool\": \"fast\", \"arch\": \"amd64\"}");
  poolswitch_labels_text(l, out, sizeof out);
  cr_assert_str_eq(out, "arch=amd64,ioqos.io/pool=fast,zone=a");
  /* cut at the buffer: the labels before stay whole */
  char small[30];
  poolswitch_labels_text(l, small, sizeof small);
  cr_assert_str_eq(small, "arch=amd64...");
  json_object_put(l);
}

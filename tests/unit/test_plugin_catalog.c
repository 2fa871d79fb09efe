// SPDX-License-Identifier: Apache-2.0
/* The plugin's unit catalog (plugin/daemon/state/catalog.c): ID validation for
 * Allocate/PreStart, health and generations, the packed ListAndWatch list,
 * and Allocate's environment. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubelet/allocate.h"
#include "state/catalog.h"
#include "deviceplugin/v1beta1/api.pb-c.h"

static struct catalog *g_cat;

static struct ioq_disk disk(const char *name, unsigned major, unsigned minor, uint64_t bw,
                            uint64_t iops, bool ok) {
  struct ioq_disk d;
  memset(&d, 0, sizeof d);
  snprintf(d.dev.name, sizeof d.dev.name, "%s", name);
  d.dev.major = major;
  d.dev.minor = minor;
  snprintf(d.class_name, sizeof d.class_name, "default");
  d.units[IOQ_RES_BANDWIDTH] = bw;
  d.units[IOQ_RES_IOPS] = iops;
  d.enforceable = ok;
  if (!ok)
    snprintf(d.not_enforceable_reason, sizeof d.not_enforceable_reason, "no io.max");
  return d;
}

static void setup(void) {
  g_cat = catalog_new();
  struct ioq_disk d[2] = {disk("sda", 8, 0, 10, 5, true), disk("dm-0", 253, 0, 4, 0, true)};
  cr_assert(catalog_update(g_cat, d, 2, NULL));
}

static void teardown(void) { catalog_free(g_cat); }

TestSuite(catalog, .init = setup, .fini = teardown);

static int check(enum ioq_resource r, char **ids, size_t n, struct id_tally *t, ioq_err *e) {
  return catalog_check_ids(g_cat, r, ids, n, t, e);
}

Test(catalog, valid_ids_tally_per_disk) {
  char *ids[] = {"sda-bw-0", "dm-0-bw-3", "sda-bw-9"};
  struct id_tally t;
  ioq_err e;
  cr_assert_eq(check(IOQ_RES_BANDWIDTH, ids, 3, &t, &e), 0, "%s", e.msg);
  cr_assert_eq(t.n, 2);
  cr_assert_str_eq(t.d[0].disk, "dm-0");
  cr_assert_eq(t.d[0].count, 1);
  cr_assert_eq(t.d[0].dev.major, 253);
  cr_assert_str_eq(t.d[1].disk, "sda");
  cr_assert_eq(t.d[1].count, 2);
  struct ioq_unit_sizes u;
  ioq_unit_sizes_default(&u);
  struct env_kv env[2];
  cr_assert_eq(allocate_envs(IOQ_RES_BANDWIDTH, &u, &t, env, &e), 0, "%s", e.msg);
  cr_assert_str_eq(env[0].key, "IOQOS_DEVICES");
  cr_assert_str_eq(env[0].value, "dm-0,sda");
  cr_assert_str_eq(env[1].key, "IOQOS_BANDWIDTH_BYTES_PER_SEC");
  cr_assert_str_eq(env[1].value, "dm-0=1048576,sda=2097152");
  id_tally_free(&t);
}

struct bad {
  char id[80];
  char id2[80];
  int res;
  char want[64];
};

ParameterizedTestParameters(catalog, bad_ids) {
  static struct bad cases[] = {
      {"sda-bw-10", "", IOQ_RES_BANDWIDTH, "disk sda has 10 bandwidth units (0-9)"},
      {"sdb-bw-1", "", IOQ_RES_BANDWIDTH, "names disk sdb, which this node does not manage"},
      {"sda-iops-1", "", IOQ_RES_BANDWIDTH, "is a ioqos/iops unit, not ioqos/bandwidth"},
      {"sda-bw-1", "sda-bw-1", IOQ_RES_BANDWIDTH, "appears more than once"},
      {"sda-bw-007", "", IOQ_RES_BANDWIDTH, "ID #1"},
      {"", "", IOQ_RES_BANDWIDTH, "ID #1"},
      {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bw-1", "", IOQ_RES_BANDWIDTH,
       "longer than 63"},
      {"dm-0-iops-0", "", IOQ_RES_IOPS, "dm-0 has 0 iops units"},
  };
  return cr_make_param_array(struct bad, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad *c, catalog, bad_ids) {
  char *ids[2] = {c->id, c->id2};
  struct id_tally t;
  ioq_err e = {0};
  cr_assert_eq(check((enum ioq_resource)c->res, ids, c->id2[0] ? 2 : 1, &t, &e), -1);
  cr_assert(strstr(e.msg, c->want), "'%s' lacks '%s'", e.msg, c->want);
  cr_assert_null(t.d);
}

Test(catalog, empty_and_too_many) {
  struct id_tally t;
  ioq_err e;
  cr_assert_eq(check(IOQ_RES_BANDWIDTH, NULL, 0, &t, &e), -1);
  cr_assert(strstr(e.msg, "no device IDs"));
  char *ids[15];
  char buf[15][16];
  for (int i = 0; i < 15; i++) {
    snprintf(buf[i], sizeof buf[i], "sda-bw-%d", i % 10);
    ids[i] = buf[i];
  }
  cr_assert_eq(check(IOQ_RES_BANDWIDTH, ids, 15, &t, &e), -1);
  cr_assert(strstr(e.msg, "15 IDs given but this node has only 14 ioqos/bandwidth units"), "%s", e.msg);
}

static V1beta1__ListAndWatchResponse *list(enum ioq_resource r, uint64_t *gen) {
  uint8_t *data;
  size_t len;
  cr_assert_eq(catalog_list_packed(g_cat, r, &data, &len, gen), 0);
  V1beta1__ListAndWatchResponse *m = v1beta1__list_and_watch_response__unpack(NULL, len, data);
  free(data);
  cr_assert_not_null(m);
  return m;
}

Test(catalog, lost_disk_keeps_units_unhealthy_and_bumps_generation) {
  uint64_t g0, g1, g2;
  V1beta1__ListAndWatchResponse *m = list(IOQ_RES_BANDWIDTH, &g0);
  cr_assert_eq(m->n_devices, 14);
  for (size_t i = 0; i < m->n_devices; i++)
    cr_assert_str_eq(m->devices[i]->health, "Healthy");
  v1beta1__list_and_watch_response__free_unpacked(m, NULL);

  struct ioq_disk only = disk("sda", 8, 0, 10, 5, true);
  cr_assert(catalog_update(g_cat, &only, 1, "gone from sysfs"));
  m = list(IOQ_RES_BANDWIDTH, &g1);
  cr_assert_gt(g1, g0);
  cr_assert_eq(m->n_devices, 14);
  size_t bad = 0;
  for (size_t i = 0; i < m->n_devices; i++)
    if (strcmp(m->devices[i]->health, "Unhealthy") == 0) {
      bad++;
      cr_assert(strncmp(m->devices[i]->id, "dm-0-bw-", 8) == 0, "%s", m->devices[i]->id);
    }
  cr_assert_eq(bad, 4);
  v1beta1__list_and_watch_response__free_unpacked(m, NULL);
  /* dm-0 has no iops units: that list did not change */
  uint64_t gi;
  m = list(IOQ_RES_IOPS, &gi);
  cr_assert_eq(gi, 2);
  v1beta1__list_and_watch_response__free_unpacked(m, NULL);

  /* capability lost on sda: units stay (not 0 as the probe advertises), unhealthy */
  struct ioq_disk lost[2] = {disk("sda", 8, 0, 0, 0, false), disk("dm-0", 253, 0, 4, 0, true)};
  cr_assert(catalog_update(g_cat, lost, 2, NULL));
  m = list(IOQ_RES_BANDWIDTH, &g2);
  cr_assert_gt(g2, g1);
  cr_assert_eq(m->n_devices, 14);
  uint64_t all, healthy;
  catalog_totals(g_cat, IOQ_RES_BANDWIDTH, &all, &healthy);
  cr_assert_eq(all, 14);
  cr_assert_eq(healthy, 4);
  v1beta1__list_and_watch_response__free_unpacked(m, NULL);
  struct cat_disk cd;
  cr_assert(catalog_get(g_cat, "sda", &cd));
  cr_assert(strstr(cd.why, "cannot enforce limits on sda: no io.max"), "%s", cd.why);
  /* the same probe again changes nothing */
  cr_assert_not(catalog_update(g_cat, lost, 2, NULL));
  cr_assert_eq(catalog_generation(g_cat, IOQ_RES_BANDWIDTH), g2);
}

/* issue 12 item 10: the largest list a node may send (every unit of the
 * node on disks with the longest names a unit ID takes, all Unhealthy) is
 * within the per-device bound units.h computes, under half of kubelet's
 * 4 MiB message limit */
Test(catalog, largest_list_stays_well_under_the_grpc_limit) {
  struct catalog *c = catalog_new();
  char name[2][IOQ_DISK_NAME_MAX + 1];
  memset(name, 'x', sizeof name);
  name[0][IOQ_DISK_NAME_MAX] = name[1][IOQ_DISK_NAME_MAX] = '\0';
  name[1][0] = 'y';
  /* the node bound split over two disks */
  struct ioq_disk d[2] = {disk(name[0], 8, 0, IOQ_MAX_UNITS_PER_NODE / 2, IOQ_MAX_UNITS_PER_NODE / 2, false),
                          disk(name[1], 8, 16, IOQ_MAX_UNITS_PER_NODE - IOQ_MAX_UNITS_PER_NODE / 2,
                               IOQ_MAX_UNITS_PER_NODE - IOQ_MAX_UNITS_PER_NODE / 2, false)};
  catalog_update(c, d, 2, NULL);
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    uint8_t *data;
    size_t len;
    uint64_t gen;
    cr_assert_eq(catalog_list_packed(c, r, &data, &len, &gen), 0);
    V1beta1__ListAndWatchResponse *m = v1beta1__list_and_watch_response__unpack(NULL, len, data);
    cr_assert_not_null(m);
    cr_assert_eq(m->n_devices, IOQ_MAX_UNITS_PER_NODE);
    for (size_t i = 0; i < m->n_devices; i++)
      cr_assert_leq(strlen(m->devices[i]->id), IOQ_UNIT_ID_MAX);
    cr_assert_leq(len, (size_t)IOQ_MAX_UNITS_PER_NODE * IOQ_DEVICE_ENCODED_MAX);
    cr_assert_lt(len, IOQ_GRPC_MESSAGE_MAX / 2, "%zu bytes", len);
    cr_log_info("%s: %u units, %zu bytes (%.0f%% of 4 MiB)", ioq_resource_name(r),
                IOQ_MAX_UNITS_PER_NODE, len, 100.0 * (double)len / IOQ_GRPC_MESSAGE_MAX);
    v1beta1__list_and_watch_response__free_unpacked(m, NULL);
    free(data);
  }
  catalog_free(c);
}

/* issue 12 item 10: units a lost disk keeps (Unhealthy) never take the list
 * past the node bound next to a disk the probe now finds */
Test(catalog, kept_units_of_a_lost_disk_yield_to_the_node_bound) {
  struct catalog *c = catalog_new();
  struct ioq_disk a = disk("sda", 8, 0, IOQ_MAX_UNITS_PER_NODE, 10, true);
  catalog_update(c, &a, 1, NULL);
  /* sda is gone, sdb (new) takes the whole bandwidth bound */
  struct ioq_disk b = disk("sdb", 8, 16, IOQ_MAX_UNITS_PER_NODE, 10, true);
  catalog_update(c, &b, 1, "gone");
  uint64_t all, healthy;
  catalog_totals(c, IOQ_RES_BANDWIDTH, &all, &healthy);
  cr_assert_eq(all, IOQ_MAX_UNITS_PER_NODE);
  cr_assert_eq(healthy, IOQ_MAX_UNITS_PER_NODE);
  catalog_totals(c, IOQ_RES_IOPS, &all, &healthy);
  cr_assert_eq(all, 20, "within the bound the lost disk keeps its units");
  cr_assert_eq(healthy, 10);
  struct cat_disk sda;
  cr_assert(catalog_get(c, "sda", &sda));
  cr_assert_eq(sda.units[IOQ_RES_BANDWIDTH], 0);
  cr_assert_not(sda.healthy);
  catalog_free(c);
}

/* issue 12 item 9: a disk with a fault is listed Unhealthy with the fault as
 * reason (keeping units kubelet knows), the others are not touched; a lost
 * disk whose selector now has a fault says so */
Test(catalog, disk_fault_and_selector_fault_reasons) {
  struct catalog *c = catalog_new();
  struct ioq_disk d[2] = {disk("sda", 8, 0, 10, 5, true), disk("sdb", 8, 16, 7, 3, true)};
  strcpy(d[0].selected_by, "sda");
  strcpy(d[1].selected_by, "/mnt/b");
  catalog_update(c, d, 2, NULL);
  snprintf(d[0].fault, sizeof d[0].fault, "capacity of sda: calibration.json: not a JSON object");
  d[0].units[0] = d[0].units[1] = 0; /* the probe advertises nothing for it */
  struct ioq_select_fault f = {.select = "/mnt/b", .reason = "devices[1].select '/mnt/b': not found"};
  catalog_set_faults(c, &f, 1);
  cr_assert(catalog_update(c, d, 1, NULL), "sdb lost, sda faulted: lists change");
  struct cat_disk a, b;
  cr_assert(catalog_get(c, "sda", &a));
  cr_assert_not(a.healthy);
  cr_assert_str_eq(a.why, "capacity of sda: calibration.json: not a JSON object");
  cr_assert_eq(a.units[0], 10, "units kubelet knows stay listed");
  cr_assert(catalog_get(c, "sdb", &b));
  cr_assert_not(b.healthy);
  cr_assert_str_eq(b.why, "disk sdb is gone: devices[1].select '/mnt/b': not found");
  struct ioq_select_fault *got;
  cr_assert_eq(catalog_faults(c, &got), 1);
  cr_assert_str_eq(got[0].select, "/mnt/b");
  free(got);
  cr_assert_not(catalog_set_faults(c, &f, 1), "unchanged");
  cr_assert(catalog_set_faults(c, NULL, 0));
  catalog_free(c);
}

/* issue 30 item 5: a disk the node's new pool no longer selects leaves the
 * lists (catalog_forget); a lost disk's selector fault is found by
 * catalog_fault_of, which tells a disk lost from one no longer selected */
Test(catalog, forget_drops_a_disk_and_bumps_generation) {
  uint64_t g0 = catalog_generation(g_cat, IOQ_RES_BANDWIDTH);
  uint64_t gi = catalog_generation(g_cat, IOQ_RES_IOPS);
  cr_assert(catalog_forget(g_cat, "dm-0"));
  cr_assert_gt(catalog_generation(g_cat, IOQ_RES_BANDWIDTH), g0);
  cr_assert_eq(catalog_generation(g_cat, IOQ_RES_IOPS), gi, "dm-0 had no iops units");
  uint64_t all, healthy;
  catalog_totals(g_cat, IOQ_RES_BANDWIDTH, &all, &healthy);
  cr_assert_eq(all, 10);
  struct cat_disk cd;
  cr_assert_not(catalog_get(g_cat, "dm-0", &cd));
  cr_assert(catalog_get(g_cat, "sda", &cd), "the others stay");
  cr_assert_not(catalog_forget(g_cat, "dm-0"), "unknown now");
  char *ids[] = {"dm-0-bw-0"};
  struct id_tally t;
  ioq_err e;
  cr_assert_lt(check(IOQ_RES_BANDWIDTH, ids, 1, &t, &e), 0, "its IDs are not this node's any more");
}

Test(catalog, fault_of_a_lost_disk) {
  struct ioq_disk d = disk("sdb", 8, 16, 7, 3, true);
  strcpy(d.selected_by, "/mnt/b");
  struct ioq_select_fault f[2] = {{.select = "sda", .reason = "gone"},
                                  {.select = "/mnt/b", .reason = "not found"}};
  cr_assert_eq(catalog_fault_of(f, 2, &d), &f[1]);
  cr_assert_null(catalog_fault_of(f, 1, &d), "its selector resolved, or is no longer configured");
  strcpy(d.selected_by, "default: kubelet root dir");
  cr_assert_eq(catalog_fault_of(f, 1, &d), &f[0], "the default disk has the only selector");
  cr_assert_null(catalog_fault_of(f, 0, &d));
}

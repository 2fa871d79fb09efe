// SPDX-License-Identifier: Apache-2.0
/* The NVMe-oF namespace plan (src/nvmet/nvmetplan.c): which config entry selects
 * which namespace, the units taken from the disk (so pods and namespaces
 * never oversell it), the limits and weights, and every refusal with its
 * reason. Config from real YAML through the config parser; disks and the
 * nvmet inventory built in memory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "nvmet/nvmetplan.h"

#define SUB "nqn.2014-08.org.example:store"
#define MIB (1024ull * 1024ull)

static void load(struct ioq_config *c, const char *yaml) {
  ioq_err e;
  cr_assert_eq(ioq_config_parse(yaml, "c.yaml", c, &e), 0, "%s", e.msg);
}

/* a managed disk of 100 bandwidth and 50 IOPS units (1 MiB/s, 100 IOPS each) */
static void disk(struct ioq_disk *d, const char *name, unsigned major) {
  memset(d, 0, sizeof *d);
  snprintf(d->dev.name, sizeof d->dev.name, "%s", name);
  d->dev.major = major;
  d->dev.minor = 0;
  d->leaves[0] = d->dev;
  d->n_leaves = 1;
  d->enforceable = true;
  d->capacity_bw_bytes = 125 * MIB;
  d->capacity_iops = 6250;
  d->allocatable_fraction = 0.8;
  d->units[IOQ_RES_BANDWIDTH] = 100;
  d->units[IOQ_RES_IOPS] = 50;
}

static struct ioq_nvmet_ns *add_ns(struct ioq_nvmet_inventory *inv, const char *sub, uint32_t nsid,
                                   const char *diskname, unsigned major, bool cgid) {
  inv->ns = realloc(inv->ns, (inv->n + 1) * sizeof *inv->ns);
  struct ioq_nvmet_ns *ns = &inv->ns[inv->n++];
  memset(ns, 0, sizeof *ns);
  snprintf(ns->subsystem, sizeof ns->subsystem, "%s", sub);
  ns->nsid = nsid;
  ns->enabled = true;
  ns->buffered_io = 0;
  ns->has_cgroup_id = cgid;
  if (diskname) {
    ns->backed = true;
    snprintf(ns->disk.name, sizeof ns->disk.name, "%s", diskname);
    ns->disk.major = major;
  } else {
    snprintf(ns->backing, sizeof ns->backing, "device_path /x: No such file or directory");
  }
  inv->state = IOQ_NVMET_PRESENT;
  return ns;
}

static void plan(const struct ioq_config *c, const struct ioq_nvmet_inventory *inv,
                 struct ioq_disk *d, size_t nd, struct ioq_nvmet_plan *p) {
  ioq_err e;
  cr_assert_eq(ioq_nvmet_plan_build(c, IOQ_CGV2, inv, d, nd, p, &e), 0, "%s", e.msg);
}

Test(nvmetplan, grant_takes_units_from_the_disk) {
  struct ioq_config c;
  load(&c, "nvmet:\n  namespaces:\n  - subsystem: " SUB "\n    nsid: 1\n"
           "    grant: {bandwidth: 30, iops: 10}\n");
  struct ioq_disk d;
  disk(&d, "sdb", 8);
  struct ioq_nvmet_inventory inv = {0};
  add_ns(&inv, SUB, 1, "sdb", 8, true);
  struct ioq_nvmet_plan p;
  plan(&c, &inv, &d, 1, &p);
  cr_assert_eq(p.n, 1);
  cr_assert_eq(p.ns[0].verdict, IOQ_NVMET_NS_ENFORCED, "%s", p.ns[0].why);
  cr_assert_str_eq(p.ns[0].disk, "sdb");
  cr_assert_eq(p.ns[0].units[IOQ_RES_BANDWIDTH], 30);
  cr_assert_eq(p.ns[0].units[IOQ_RES_IOPS], 10);
  /* a pod's io.max for the same units */
  cr_assert_eq(p.ns[0].limits.rbps, 30 * MIB);
  cr_assert_eq(p.ns[0].limits.wbps, 30 * MIB);
  cr_assert_eq(p.ns[0].limits.riops, 1000);
  cr_assert_eq(p.ns[0].limits.wiops, 1000);
  /* share = max(30/100, 10/50) = 0.3: 100 + ceil(9900 x 0.3) */
  cr_assert_eq(p.ns[0].weight, 3070);
  cr_assert_eq(p.ns[0].bfq_weight, 370);
  /* pods are offered what is left */
  cr_assert_eq(d.units[IOQ_RES_BANDWIDTH], 70);
  cr_assert_eq(d.units[IOQ_RES_IOPS], 40);
  cr_assert_eq(d.nvmet_units[IOQ_RES_BANDWIDTH], 30);
  cr_assert_eq(d.nvmet_units[IOQ_RES_IOPS], 10);
  ioq_nvmet_plan_free(&p);
  /* built again on the same disks (a second pass): the same, not twice */
  plan(&c, &inv, &d, 1, &p);
  cr_assert_eq(d.units[IOQ_RES_BANDWIDTH], 70);
  cr_assert_eq(d.nvmet_units[IOQ_RES_BANDWIDTH], 30);
  ioq_nvmet_plan_free(&p);
  free(inv.ns);
  ioq_config_free(&c);
}

/* An IOPS-only entry is capped in bandwidth at the same share of the disk, as a pod's IOPS-only
 * grant is; the cap takes no bandwidth units from the disk. */
Test(nvmetplan, iops_only_grant_capped_at_its_share_of_bandwidth) {
  struct ioq_config c;
  load(&c, "nvmet:\n  namespaces:\n  - subsystem: " SUB "\n    nsid: 1\n"
           "    grant: {iops: 10}\n");
  struct ioq_disk d;
  disk(&d, "sdb", 8);
  struct ioq_nvmet_inventory inv = {0};
  add_ns(&inv, SUB, 1, "sdb", 8, true);
  struct ioq_nvmet_plan p;
  plan(&c, &inv, &d, 1, &p);
  cr_assert_eq(p.ns[0].verdict, IOQ_NVMET_NS_ENFORCED, "%s", p.ns[0].why);
  /* 10 of 50 IOPS units = 0.2 of the disk: 20 of its 100 bandwidth units */
  cr_assert_eq(p.ns[0].limits.riops, 1000);
  cr_assert_eq(p.ns[0].limits.rbps, 20 * MIB, "rbps %llu", (unsigned long long)p.ns[0].limits.rbps);
  cr_assert_eq(p.ns[0].limits.wbps, 20 * MIB);
  cr_assert_eq(p.ns[0].units[IOQ_RES_BANDWIDTH], 0);
  cr_assert_eq(d.units[IOQ_RES_BANDWIDTH], 100);
  cr_assert_eq(d.units[IOQ_RES_IOPS], 40);
  ioq_nvmet_plan_free(&p);
  free(inv.ns);
  ioq_config_free(&c);
}

Test(nvmetplan, kernel_without_cgroup_id_still_reserves) {
  struct ioq_config c;
  load(&c, "nvmet:\n  namespaces:\n  - subsystem: " SUB "\n    grant: {bandwidth: 20}\n"
           "    weight: 800\n");
  struct ioq_disk d;
  disk(&d, "sdb", 8);
  struct ioq_nvmet_inventory inv = {0};
  add_ns(&inv, SUB, 1, "sdb", 8, false);
  struct ioq_nvmet_plan p;
  plan(&c, &inv, &d, 1, &p);
  cr_assert_eq(p.ns[0].verdict, IOQ_NVMET_NS_UNCHARGED);
  cr_assert(strstr(p.ns[0].why, "no nvmet cgroup_id attribute (Linux 7.5+)"), "%s", p.ns[0].why);
  cr_assert_eq(d.units[IOQ_RES_BANDWIDTH], 80, "the namespace uses the disk whatever the kernel");
  cr_assert_eq(d.units[IOQ_RES_IOPS], 50, "no IOPS asked: none taken");
  cr_assert_eq(p.ns[0].limits.riops, 0, "not limited");
  cr_assert_eq(p.ns[0].weight, 800, "the configured weight");
  cr_assert_eq(p.ns[0].bfq_weight, 800);
  ioq_nvmet_plan_free(&p);
  free(inv.ns);
  ioq_config_free(&c);
}

Test(nvmetplan, selection_first_entry_wins) {
  struct ioq_config c;
  load(&c, "nvmet:\n  namespaces:\n"
           "  - {subsystem: " SUB ", nsid: 2, grant: {bandwidth: 40}}\n"
           "  - {subsystem: " SUB ", grant: {bandwidth: 5}}\n");
  struct ioq_disk d;
  disk(&d, "sdb", 8);
  struct ioq_nvmet_inventory inv = {0};
  add_ns(&inv, SUB, 1, "sdb", 8, true);
  add_ns(&inv, SUB, 2, "sdb", 8, true);
  add_ns(&inv, SUB, 3, "sdb", 8, true);
  add_ns(&inv, "nqn.other", 1, "sdb", 8, true);
  struct ioq_nvmet_plan p;
  plan(&c, &inv, &d, 1, &p);
  cr_assert_eq(p.n, 3, "the other subsystem is not configured");
  cr_assert_eq(p.ns[0].cfg_index, 1);
  cr_assert_eq(p.ns[1].cfg_index, 0, "nsid 2 has its own entry");
  cr_assert_eq(p.ns[1].units[IOQ_RES_BANDWIDTH], 40);
  cr_assert_eq(p.ns[2].cfg_index, 1);
  cr_assert_eq(d.units[IOQ_RES_BANDWIDTH], 100 - 5 - 40 - 5);
  cr_assert_eq(p.n_unmatched, 0);
  ioq_nvmet_plan_free(&p);
  free(inv.ns);
  ioq_config_free(&c);
}

Test(nvmetplan, raw_limits_count_rounded_up) {
  struct ioq_config c;
  load(&c, "nvmet:\n  namespaces:\n  - subsystem: " SUB "\n"
           "    limits: {rbps: 10485761, wbps: 2097152, wiops: 250}\n");
  struct ioq_disk d;
  disk(&d, "sdb", 8);
  struct ioq_nvmet_inventory inv = {0};
  add_ns(&inv, SUB, 1, "sdb", 8, true);
  struct ioq_nvmet_plan p;
  plan(&c, &inv, &d, 1, &p);
  cr_assert_eq(p.ns[0].verdict, IOQ_NVMET_NS_ENFORCED, "%s", p.ns[0].why);
  cr_assert_eq(p.ns[0].units[IOQ_RES_BANDWIDTH], 11, "ceil(max(r, w) / 1 MiB)");
  cr_assert_eq(p.ns[0].units[IOQ_RES_IOPS], 3, "ceil(250 / 100)");
  cr_assert_eq(p.ns[0].limits.rbps, 10485761, "the raw values are written as given");
  cr_assert_eq(p.ns[0].limits.wbps, 2097152);
  cr_assert_eq(p.ns[0].limits.riops, 0);
  cr_assert_eq(p.ns[0].limits.wiops, 250);
  ioq_nvmet_plan_free(&p);
  free(inv.ns);
  ioq_config_free(&c);
}

Test(nvmetplan, refusals_take_nothing) {
  struct ioq_config c;
  load(&c, "nvmet:\n  namespaces:\n  - subsystem: " SUB "\n    grant: {bandwidth: 60, iops: 5}\n");
  struct ioq_disk d[2];
  disk(&d[0], "sdb", 8);
  disk(&d[1], "sdc", 9);
  d[1].capacity_iops = 0;
  d[1].units[IOQ_RES_IOPS] = 0;
  struct ioq_nvmet_inventory inv = {0};
  add_ns(&inv, SUB, 1, "sdb", 8, true)->buffered_io = 1;
  add_ns(&inv, SUB, 2, NULL, 0, true);
  add_ns(&inv, SUB, 3, "nvme0n1", 259, true);
  add_ns(&inv, SUB, 4, "sdb", 8, true); /* takes 60 */
  add_ns(&inv, SUB, 5, "sdb", 8, true); /* 40 left */
  add_ns(&inv, SUB, 6, "sdc", 9, true); /* no IOPS capacity */
  struct ioq_nvmet_plan p;
  plan(&c, &inv, d, 2, &p);
  cr_assert_eq(p.n, 6);
  static const char *const why[] = {
      "buffered_io is set: the kernel refuses to enable a namespace with a cgroup_id",
      "its disk is not known: device_path /x: No such file",
      "lands on disk nvme0n1 (259:0), which ioqos does not manage (add it to devices[])",
      NULL,
      "needs 60 bandwidth units of disk sdb, which has 40 (60 taken by namespaces before it)",
      "disk sdc has no IOPS capacity known",
  };
  for (size_t i = 0; i < 6; i++) {
    if (!why[i]) {
      cr_assert_eq(p.ns[i].verdict, IOQ_NVMET_NS_ENFORCED, "%s", p.ns[i].why);
      continue;
    }
    cr_assert_eq(p.ns[i].verdict, IOQ_NVMET_NS_REFUSED, "namespace %zu: %s", i + 1, p.ns[i].why);
    cr_assert(strstr(p.ns[i].why, why[i]), "'%s' in: %s", why[i], p.ns[i].why);
  }
  cr_assert_eq(d[0].units[IOQ_RES_BANDWIDTH], 40, "only namespace 4 took units");
  cr_assert_eq(d[0].nvmet_units[IOQ_RES_BANDWIDTH], 60);
  cr_assert_eq(d[1].units[IOQ_RES_BANDWIDTH], 100);
  ioq_nvmet_plan_free(&p);
  free(inv.ns);
  ioq_config_free(&c);
}

Test(nvmetplan, unhealthy_disk_and_cgroup_v1) {
  struct ioq_config c;
  load(&c, "nvmet:\n  namespaces:\n  - subsystem: " SUB "\n    grant: {bandwidth: 10}\n");
  struct ioq_disk d;
  disk(&d, "sdb", 8);
  snprintf(d.fault, sizeof d.fault, "capacity of sdb: calibration entry malformed");
  struct ioq_nvmet_inventory inv = {0};
  add_ns(&inv, SUB, 1, "sdb", 8, true);
  struct ioq_nvmet_plan p;
  plan(&c, &inv, &d, 1, &p);
  cr_assert_eq(p.ns[0].verdict, IOQ_NVMET_NS_REFUSED);
  cr_assert(strstr(p.ns[0].why, "advertises no units: capacity of sdb: calibration"), "%s",
            p.ns[0].why);
  ioq_nvmet_plan_free(&p);
  d.fault[0] = '\0';
  ioq_err e;
  cr_assert_eq(ioq_nvmet_plan_build(&c, IOQ_CGV1, &inv, &d, 1, &p, &e), 0, "%s", e.msg);
  cr_assert_eq(p.ns[0].verdict, IOQ_NVMET_NS_REFUSED);
  cr_assert(strstr(p.ns[0].why, "cgroup v1"), "%s", p.ns[0].why);
  cr_assert_eq(d.units[IOQ_RES_BANDWIDTH], 100);
  ioq_nvmet_plan_free(&p);
  free(inv.ns);
  ioq_config_free(&c);
}

Test(nvmetplan, unmatched_entries_are_said) {
  struct ioq_config c;
  load(&c, "nvmet:\n  namespaces:\n"
           "  - {subsystem: nqn.typo, grant: {bandwidth: 1}}\n"
           "  - {subsystem: " SUB ", nsid: 9, grant: {bandwidth: 1}}\n");
  struct ioq_disk d;
  disk(&d, "sdb", 8);
  struct ioq_nvmet_inventory inv = {0};
  add_ns(&inv, SUB, 1, "sdb", 8, true);
  struct ioq_nvmet_plan p;
  plan(&c, &inv, &d, 1, &p);
  cr_assert_eq(p.n, 0);
  cr_assert_eq(p.n_unmatched, 2);
  cr_assert(strstr(p.unmatched[0], "nvmet.namespaces[0]: the target has no subsystem nqn.typo"),
            "%s", p.unmatched[0]);
  cr_assert(strstr(p.unmatched[1], "has no namespace 9"), "%s", p.unmatched[1]);
  ioq_nvmet_plan_free(&p);
  /* no target at all: the reason of the probe */
  struct ioq_nvmet_inventory none = {.state = IOQ_NVMET_NO_MODULE};
  snprintf(none.reason, sizeof none.reason, "the nvmet module is not loaded");
  plan(&c, &none, &d, 1, &p);
  cr_assert_eq(p.n_unmatched, 2);
  cr_assert(strstr(p.unmatched[0], "the nvmet module is not loaded"), "%s", p.unmatched[0]);
  ioq_nvmet_plan_free(&p);
  /* without entries: nothing at all, disks untouched */
  struct ioq_config empty;
  load(&empty, "{}");
  plan(&empty, &inv, &d, 1, &p);
  cr_assert_eq(p.n + p.n_unmatched, 0);
  cr_assert_eq(d.units[IOQ_RES_BANDWIDTH], 100);
  ioq_nvmet_plan_free(&p);
  ioq_config_free(&empty);
  free(inv.ns);
  ioq_config_free(&c);
}

Test(nvmetplan, json_and_cgroup_name) {
  struct ioq_config c;
  load(&c, "nvmet:\n  namespaces:\n  - subsystem: " SUB "\n    grant: {bandwidth: 10}\n");
  struct ioq_disk d;
  disk(&d, "sdb", 8);
  struct ioq_nvmet_inventory inv = {0};
  add_ns(&inv, SUB, 1, "sdb", 8, true);
  struct ioq_nvmet_plan p;
  plan(&c, &inv, &d, 1, &p);
  json_object *j = ioq_nvmet_json(&inv), *objs[1];
  cr_assert_eq(ioq_nvmet_plan_json(&p, j, objs), 0);
  cr_assert_not_null(objs[0]);
  const char *s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
  cr_assert(strstr(s, "\"ioqos\":{\"entry\":\"nvmet.namespaces[0]\",\"verdict\":\"enforced\""),
            "%s", s);
  cr_assert(strstr(s, "\"units\":{\"bandwidth\":10,\"iops\":0}"), "%s", s);
  cr_assert(strstr(s, "\"unmatched\":[]"), "%s", s);
  json_object_put(j);
  char name[300];
  ioq_err e;
  cr_assert_eq(ioq_nvmet_cgroup_name(SUB, 7, name, sizeof name, &e), 0);
  cr_assert_str_eq(name, SUB "-7");
  cr_assert_eq(ioq_nvmet_cgroup_name("a/b", 1, name, sizeof name, &e), -1);
  cr_assert_eq(ioq_nvmet_cgroup_name("..", 1, name, sizeof name, &e), -1);
  cr_assert_eq(ioq_nvmet_cgroup_name(SUB, 1, name, 8, &e), -1, "too long for the buffer");
  ioq_nvmet_plan_free(&p);
  free(inv.ns);
  ioq_config_free(&c);
}

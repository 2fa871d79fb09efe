// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "grant/grant.h"

#define CTR(n, k, ...)                                                                            \
  {.name = n, .kind = k, .ids = (const char *const[]){__VA_ARGS__},                               \
   .n_ids = sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)}
#define NOIDS(n, k) {.name = n, .kind = k, .ids = NULL, .n_ids = 0}

static uint64_t units(const struct ioq_pod_grant *g, const char *disk, enum ioq_resource r) {
  const struct ioq_disk_grant *d = ioq_grant_find(g, disk);
  cr_assert_not_null(d, "no grant for %s", disk);
  return d->units[r];
}

Test(grant, apps_sum_per_disk_and_resource) {
  struct ioq_ctr_units c[] = {
      CTR("db", IOQ_CTR_APP, "sda-bw-0", "sda-bw-1", "sda-iops-0", "nvme0n1-bw-3"),
      CTR("log", IOQ_CTR_APP, "sda-bw-2"),
      NOIDS("none", IOQ_CTR_APP),
  };
  struct ioq_pod_grant g;
  ioq_err e = {0};
  cr_assert_eq(ioq_grant_compute(c, 3, &g, &e), 0, "%s", e.msg);
  cr_assert_eq(g.n, 2);
  cr_assert_str_eq(g.disks[0].disk, "sda");
  cr_assert_eq(units(&g, "sda", IOQ_RES_BANDWIDTH), 3);
  cr_assert_eq(units(&g, "sda", IOQ_RES_IOPS), 1);
  cr_assert_eq(units(&g, "nvme0n1", IOQ_RES_BANDWIDTH), 1);
  cr_assert_eq(units(&g, "nvme0n1", IOQ_RES_IOPS), 0);
  cr_assert_null(ioq_grant_find(&g, "sdb"));
}

/* init container larger than the apps: the pod holds the init amount;
 * kubelet hands the init container's units on to the app container. */
Test(grant, init_max_vs_apps) {
  struct ioq_ctr_units c[] = {
      CTR("migrate", IOQ_CTR_INIT, "sda-bw-0", "sda-bw-1", "sda-bw-2", "sda-bw-3"),
      CTR("app", IOQ_CTR_APP, "sda-bw-0", "sda-bw-1"),
  };
  struct ioq_pod_grant g;
  ioq_err e = {0};
  cr_assert_eq(ioq_grant_compute(c, 2, &g, &e), 0, "%s", e.msg);
  cr_assert_eq(units(&g, "sda", IOQ_RES_BANDWIDTH), 4);
  /* apps larger than init */
  struct ioq_ctr_units c2[] = {
      CTR("init", IOQ_CTR_INIT, "sda-bw-0"),
      CTR("a", IOQ_CTR_APP, "sda-bw-0", "sda-bw-1"),
      CTR("b", IOQ_CTR_APP, "sda-bw-2"),
  };
  cr_assert_eq(ioq_grant_compute(c2, 3, &g, &e), 0, "%s", e.msg);
  cr_assert_eq(units(&g, "sda", IOQ_RES_BANDWIDTH), 3);
}

/* KEP-753: a sidecar counts in the steady state and for every init
 * container declared after it. */
Test(grant, sidecars) {
  struct ioq_ctr_units c[] = {
      CTR("init0", IOQ_CTR_INIT, "sda-bw-0", "sda-bw-1", "sda-bw-2"), /* 3 */
      CTR("proxy", IOQ_CTR_SIDECAR, "sda-bw-3", "sda-bw-4"),          /* 2 */
      CTR("init1", IOQ_CTR_INIT, "sda-bw-5", "sda-bw-6", "sda-bw-7"), /* 3 + 2 = 5 */
      CTR("app", IOQ_CTR_APP, "sda-bw-0"),                            /* steady 1 + 2 = 3 */
  };
  struct ioq_pod_grant g;
  ioq_err e = {0};
  cr_assert_eq(ioq_grant_compute(c, 4, &g, &e), 0, "%s", e.msg);
  cr_assert_eq(units(&g, "sda", IOQ_RES_BANDWIDTH), 5);

  /* steady state wins when the apps are big */
  struct ioq_ctr_units c2[] = {
      CTR("proxy", IOQ_CTR_SIDECAR, "sda-bw-0", "sda-bw-1"),
      CTR("init", IOQ_CTR_INIT, "sda-bw-2"),
      CTR("app", IOQ_CTR_APP, "sda-bw-3", "sda-bw-4", "sda-bw-5"),
  };
  cr_assert_eq(ioq_grant_compute(c2, 3, &g, &e), 0, "%s", e.msg);
  cr_assert_eq(units(&g, "sda", IOQ_RES_BANDWIDTH), 5);
}

Test(grant, empty_pod) {
  struct ioq_pod_grant g;
  cr_assert_eq(ioq_grant_compute(NULL, 0, &g, NULL), 0);
  cr_assert_eq(g.n, 0);
}

Test(grant, bad_ids) {
  struct ioq_pod_grant g;
  ioq_err e = {0};
  struct ioq_ctr_units bad[] = {CTR("x", IOQ_CTR_APP, "sda-bw-0", "sda-nope-1")};
  cr_assert_eq(ioq_grant_compute(bad, 1, &g, &e), -1);
  cr_assert(strstr(e.msg, "container x") && strstr(e.msg, "sda-nope-1"), "%s", e.msg);

  struct ioq_ctr_units dup[] = {CTR("x", IOQ_CTR_APP, "sda-bw-0", "sda-bw-0")};
  cr_assert_eq(ioq_grant_compute(dup, 1, &g, &e), -1);
  cr_assert(strstr(e.msg, "listed twice"), "%s", e.msg);

  struct ioq_ctr_units shared[] = {CTR("a", IOQ_CTR_APP, "sda-bw-0"),
                                   CTR("b", IOQ_CTR_SIDECAR, "sda-bw-0")};
  cr_assert_eq(ioq_grant_compute(shared, 2, &g, &e), -1);
  cr_assert_eq(e.code, IOQ_ECONFLICT);
  cr_assert(strstr(e.msg, "container a") && strstr(e.msg, "sidecar b"), "%s", e.msg);

  const char *ids[IOQ_POD_DISKS_MAX + 1];
  char names[IOQ_POD_DISKS_MAX + 1][32];
  for (int i = 0; i <= IOQ_POD_DISKS_MAX; i++) {
    snprintf(names[i], sizeof names[i], "sd%c-bw-0", 'a' + i);
    ids[i] = names[i];
  }
  struct ioq_ctr_units many[] = {{.name = "m", .kind = IOQ_CTR_APP, .ids = ids,
                                  .n_ids = IOQ_POD_DISKS_MAX + 1}};
  cr_assert_eq(ioq_grant_compute(many, 1, &g, &e), -1);
  cr_assert(strstr(e.msg, "more than"), "%s", e.msg);
}

Test(grant, limits) {
  struct ioq_unit_sizes u;
  ioq_unit_sizes_default(&u);
  struct ioq_disk_grant g = {.disk = "sda", .units = {200, 3}};
  struct ioq_io_limits l;
  ioq_err e = {0};
  cr_assert_eq(ioq_grant_limits(&g, &u, &l, &e), 0, "%s", e.msg);
  cr_assert_eq(l.rbps, 200ull * 1048576);
  cr_assert_eq(l.wbps, 200ull * 1048576);
  cr_assert_eq(l.riops, 300);
  cr_assert_eq(l.wiops, 300);
  struct ioq_disk_grant bwonly = {.disk = "sda", .units = {1, 0}};
  cr_assert_eq(ioq_grant_limits(&bwonly, &u, &l, &e), 0);
  cr_assert_eq(l.riops, 0, "no iops units: no iops limit");
  struct ioq_unit_sizes tiny = {.size = {1, 1}};
  struct ioq_disk_grant one = {.disk = "sda", .units = {1, 1}};
  cr_assert_eq(ioq_grant_limits(&one, &tiny, &l, &e), 0);
  cr_assert_eq(l.rbps, 2, "1 is below the kernel's minimum and is raised to 2");
  struct ioq_disk_grant huge = {.disk = "sda", .units = {UINT64_MAX / 2, 0}};
  cr_assert_eq(ioq_grant_limits(&huge, &u, &l, &e), -1);
  cr_assert_eq(e.code, ERANGE);
  struct ioq_disk_grant hugeiops = {.disk = "sda", .units = {0, 50000000}};
  cr_assert_eq(ioq_grant_limits(&hugeiops, &u, &l, &e), -1);
}

/* An IOPS-only grant is capped in bandwidth at the same share of the disk. */
Test(grant, iops_only_grant_gets_its_share_of_bandwidth) {
  struct ioq_unit_sizes u;
  ioq_unit_sizes_default(&u); /* 1 MiB/s, 100 IOPS */
  uint64_t disk[IOQ_RES_COUNT] = {1000, 300}; /* 1000 MiB/s, 30000 IOPS */
  struct ioq_io_limits l;
  ioq_err e = {0};
  struct ioq_disk_grant io = {.disk = "sda", .units = {0, 3}}; /* 1 % of the IOPS */
  cr_assert_eq(ioq_grant_limits_on_disk(&io, &u, disk, &l, &e), 0, "%s", e.msg);
  cr_assert_eq(l.riops, 300);
  cr_assert_eq(l.rbps, 10ull * 1048576, "1 %% of 1000 MiB/s");
  cr_assert_eq(l.wbps, 10ull * 1048576);
  struct ioq_disk_grant odd = {.disk = "sda", .units = {0, 1}}; /* 1000/300 = 3.33: 4 units */
  cr_assert_eq(ioq_grant_limits_on_disk(&odd, &u, disk, &l, &e), 0);
  cr_assert_eq(l.rbps, 4ull * 1048576, "rounded up to whole units");
  struct ioq_disk_grant all = {.disk = "sda", .units = {0, 300}};
  cr_assert_eq(ioq_grant_limits_on_disk(&all, &u, disk, &l, &e), 0);
  cr_assert_eq(l.rbps, 1000ull * 1048576, "never more than the disk");
  /* a grant of both, a bandwidth-only grant: as ioq_grant_limits */
  struct ioq_disk_grant both = {.disk = "sda", .units = {5, 3}}, bw = {.disk = "sda", .units = {5, 0}};
  cr_assert_eq(ioq_grant_limits_on_disk(&both, &u, disk, &l, &e), 0);
  cr_assert_eq(l.rbps, 5ull * 1048576);
  cr_assert_eq(ioq_grant_limits_on_disk(&bw, &u, disk, &l, &e), 0);
  cr_assert_eq(l.riops, 0, "no IOPS cap derived from bandwidth");
  /* a disk without bandwidth units (IOPS-only node config): nothing to derive */
  uint64_t iops_disk[IOQ_RES_COUNT] = {0, 300};
  cr_assert_eq(ioq_grant_limits_on_disk(&io, &u, iops_disk, &l, &e), 0);
  cr_assert_eq(l.rbps, 0);
  /* a unit size too large for the cap: refused, not wrapped */
  struct ioq_unit_sizes big = {.size = {UINT64_MAX / 4, 100}};
  cr_assert_eq(ioq_grant_limits_on_disk(&all, &big, disk, &l, &e), -1);
  cr_assert_eq(e.code, ERANGE);
}

/* The documented formula: 100 + ceil(9900 * share) / 100 + ceil(900 * share). */
Test(grant, weights) {
  uint64_t disk[IOQ_RES_COUNT] = {1000, 200};
  unsigned w, b;
  ioq_err e = {0};
  struct ioq_disk_grant none = {.disk = "sda"};
  cr_assert_eq(ioq_grant_weights(&none, disk, &w, &b, &e), 0);
  cr_assert_eq(w, 0);
  cr_assert_eq(b, 0);

  struct ioq_disk_grant tiny = {.disk = "sda", .units = {1, 0}}; /* 0.1% */
  cr_assert_eq(ioq_grant_weights(&tiny, disk, &w, &b, &e), 0);
  cr_assert_eq(w, 110); /* 100 + ceil(9.9) */
  cr_assert_eq(b, 101); /* 100 + ceil(0.9) */
  cr_assert_gt(w, 100, "a granted pod outweighs the default 100");
  cr_assert_gt(b, 100);

  struct ioq_disk_grant half = {.disk = "sda", .units = {500, 20}}; /* max(0.5, 0.1) */
  cr_assert_eq(ioq_grant_weights(&half, disk, &w, &b, &e), 0);
  cr_assert_eq(w, 5050);
  cr_assert_eq(b, 550);

  struct ioq_disk_grant iops = {.disk = "sda", .units = {100, 160}}; /* max(0.1, 0.8) */
  cr_assert_eq(ioq_grant_weights(&iops, disk, &w, &b, &e), 0);
  cr_assert_eq(w, 8020);
  cr_assert_eq(b, 820);

  struct ioq_disk_grant all = {.disk = "sda", .units = {1000, 0}};
  cr_assert_eq(ioq_grant_weights(&all, disk, &w, &b, &e), 0);
  cr_assert_eq(w, 10000);
  cr_assert_eq(b, 1000);
  struct ioq_disk_grant over = {.disk = "sda", .units = {5000, 0}}; /* capped at share 1 */
  cr_assert_eq(ioq_grant_weights(&over, disk, &w, &b, &e), 0);
  cr_assert_eq(w, 10000);

  uint64_t nobw[IOQ_RES_COUNT] = {0, 200};
  cr_assert_eq(ioq_grant_weights(&tiny, nobw, &w, &b, &e), -1);
  cr_assert(strstr(e.msg, "advertises none"), "%s", e.msg);
}

/* Monotone: more share, never less weight. */
Test(grant, weights_monotone) {
  uint64_t disk[IOQ_RES_COUNT] = {997, 0};
  unsigned prev = 0, prevb = 0;
  for (uint64_t u = 1; u <= 997; u++) {
    struct ioq_disk_grant g = {.disk = "sda", .units = {u, 0}};
    unsigned w, b;
    cr_assert_eq(ioq_grant_weights(&g, disk, &w, &b, NULL), 0);
    cr_assert_geq(w, prev);
    cr_assert_geq(b, prevb);
    cr_assert(w >= 101 && w <= 10000 && b >= 101 && b <= 1000);
    prev = w;
    prevb = b;
  }
}

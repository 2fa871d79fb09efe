// SPDX-License-Identifier: Apache-2.0
/* A pod holding 100 k units (issue 12 item 10): the ID matching on the
 * PreStart/Allocate path - catalog validation, finding the pod in the pod
 * resources List, counting its units, the grant - is O(n log n), not
 * quadratic. The times are logged for the record (no timed assertion: the
 * results are checked, the report quotes the times). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "state/catalog.h"
#include "grant/grant.h"
#include "base/monoclock.h"
#include "state/podres.h"

#define PER_RES 50000u /* 2 x 50000 = 100 k units */
#define OTHER_PODS 20u

static char **make_ids(const char *disk, enum ioq_resource r, size_t from, size_t n) {
  char **ids = calloc(n, sizeof *ids);
  cr_assert_not_null(ids);
  for (size_t i = 0; i < n; i++) {
    ids[i] = malloc(IOQ_UNIT_ID_MAX + 1);
    cr_assert_eq(ioq_unit_id_format(ids[i], IOQ_UNIT_ID_MAX + 1, disk, r, (uint32_t)(from + i), NULL), 0);
  }
  /* kubelet's order is its own: do not hand the code a sorted list */
  srand(7);
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)rand() % i;
    char *t = ids[i - 1];
    ids[i - 1] = ids[j];
    ids[j] = t;
  }
  return ids;
}

static void free_ids(char **ids, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(ids[i]);
  free(ids);
}

Test(bigpod, hundred_thousand_units) {
  /* the node: one disk with the pod's units and the other pods' */
  size_t total = PER_RES + OTHER_PODS * 10;
  struct ioq_disk d;
  memset(&d, 0, sizeof d);
  strcpy(d.dev.name, "nvme0n1");
  d.dev.major = 259;
  strcpy(d.class_name, "default");
  d.units[0] = d.units[1] = total;
  d.enforceable = true;
  struct catalog *cat = catalog_new();
  catalog_update(cat, &d, 1, NULL);

  /* the pod resources List: the big pod (two app containers, one per
   * resource) and small pods */
  struct podres_list l = {0};
  l.n = OTHER_PODS + 1;
  l.pods = calloc(l.n, sizeof *l.pods);
  for (size_t i = 0; i < OTHER_PODS; i++) {
    struct podres_pod *p = &l.pods[i];
    snprintf(p->ns, sizeof p->ns, "default");
    snprintf(p->name, sizeof p->name, "small-%zu", i);
    p->n_ctrs = 1;
    p->ctrs = calloc(1, sizeof *p->ctrs);
    snprintf(p->ctrs[0].name, sizeof p->ctrs[0].name, "app");
    p->ctrs[0].ids = make_ids("nvme0n1", IOQ_RES_BANDWIDTH, PER_RES + i * 10, 10);
    p->ctrs[0].n_ids = 10;
  }
  struct podres_pod *big = &l.pods[OTHER_PODS];
  snprintf(big->ns, sizeof big->ns, "default");
  snprintf(big->name, sizeof big->name, "big");
  big->n_ctrs = 2;
  big->ctrs = calloc(2, sizeof *big->ctrs);
  snprintf(big->ctrs[0].name, sizeof big->ctrs[0].name, "bw");
  big->ctrs[0].ids = make_ids("nvme0n1", IOQ_RES_BANDWIDTH, 0, PER_RES);
  big->ctrs[0].n_ids = PER_RES;
  snprintf(big->ctrs[1].name, sizeof big->ctrs[1].name, "iops");
  big->ctrs[1].ids = make_ids("nvme0n1", IOQ_RES_IOPS, 0, PER_RES);
  big->ctrs[1].n_ids = PER_RES;

  /* what PreStart gets for the bandwidth container: its IDs, in another order */
  char **asked = make_ids("nvme0n1", IOQ_RES_BANDWIDTH, 0, PER_RES);

  double t0 = ioq_mono_s();
  struct id_tally t;
  ioq_err e = {0};
  cr_assert_eq(catalog_check_ids(cat, IOQ_RES_BANDWIDTH, asked, PER_RES, &t, &e), 0, "%s", e.msg);
  double t1 = ioq_mono_s();
  size_t missing = 99;
  const struct podres_pod *found = podres_find_ids(&l, asked, PER_RES, &missing);
  double t2 = ioq_mono_s();
  size_t held_bw = podres_pod_count(big, IOQ_RES_BANDWIDTH), held_iops = podres_pod_count(big, IOQ_RES_IOPS);
  double t3 = ioq_mono_s();
  struct ioq_ctr_units u[2] = {
      {"bw", IOQ_CTR_APP, (const char *const *)big->ctrs[0].ids, PER_RES},
      {"iops", IOQ_CTR_APP, (const char *const *)big->ctrs[1].ids, PER_RES}};
  struct ioq_pod_grant g;
  cr_assert_eq(ioq_grant_compute(u, 2, &g, &e), 0, "%s", e.msg);
  double t4 = ioq_mono_s();

  cr_assert_eq(t.n, 1);
  cr_assert_eq(t.d[0].count, PER_RES);
  cr_assert_eq(found, big);
  cr_assert_eq(missing, 0);
  cr_assert_eq(held_bw, PER_RES);
  cr_assert_eq(held_iops, PER_RES);
  cr_assert_eq(g.n, 1);
  cr_assert_eq(g.disks[0].units[IOQ_RES_BANDWIDTH], PER_RES);
  cr_assert_eq(g.disks[0].units[IOQ_RES_IOPS], PER_RES);
  cr_log_info("pod with %u units: catalog_check_ids %.3f s, podres_find_ids %.3f s, "
              "podres_pod_count x2 %.3f s, ioq_grant_compute %.3f s, total %.3f s",
              2 * PER_RES, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0);

  /* a unit held twice by containers that run together is still found */
  char *keep = big->ctrs[1].ids[17];
  big->ctrs[1].ids[17] = big->ctrs[0].ids[123];
  u[1].ids = (const char *const *)big->ctrs[1].ids;
  cr_assert_eq(ioq_grant_compute(u, 2, &g, &e), -1);
  cr_assert(strstr(e.msg, "is held by container bw and container iops, which run at the same time"), "%s", e.msg);
  big->ctrs[1].ids[17] = keep;

  id_tally_free(&t);
  free_ids(asked, PER_RES);
  for (size_t i = 0; i < l.n; i++) {
    for (size_t k = 0; k < l.pods[i].n_ctrs; k++)
      free_ids(l.pods[i].ctrs[k].ids, l.pods[i].ctrs[k].n_ids);
    free(l.pods[i].ctrs);
  }
  free(l.pods);
  catalog_free(cat);
}

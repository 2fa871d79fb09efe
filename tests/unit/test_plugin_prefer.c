// SPDX-License-Identifier: Apache-2.0
/* GetPreferredAllocation's choice (plugin/daemon/kubelet/prefer.c): must_include,
 * annotation hint, shared placement on the units kubelet offers, fallbacks,
 * and bad input. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubelet/prefer.h"

static struct ioq_disk_state g_disks[2];
static char **g_ids;
static size_t g_n;

static void disks(void) {
  memset(g_disks, 0, sizeof g_disks);
  const char *names[2] = {"nvme0n1", "sdb"};
  for (int i = 0; i < 2; i++) {
    snprintf(g_disks[i].name, sizeof g_disks[i].name, "%s", names[i]);
    snprintf(g_disks[i].class_name, sizeof g_disks[i].class_name, "default");
    g_disks[i].healthy = true;
    g_disks[i].capacity[IOQ_RES_BANDWIDTH] = 100;
    g_disks[i].capacity[IOQ_RES_IOPS] = 100;
  }
}

/* offers: `a` bw IDs of nvme0n1 from index a0, `b` of sdb from b0 */
static void offer(int a0, int a, int b0, int b) {
  g_n = 0;
  g_ids = calloc((size_t)(a + b) + 1, sizeof *g_ids);
  for (int i = 0; i < a; i++)
    cr_assert(asprintf(&g_ids[g_n++], "nvme0n1-bw-%d", a0 + i) > 0);
  for (int i = 0; i < b; i++)
    cr_assert(asprintf(&g_ids[g_n++], "sdb-bw-%d", b0 + i) > 0);
}

static void fini(void) {
  for (size_t i = 0; i < g_n; i++)
    free(g_ids[i]);
  free(g_ids);
  g_ids = NULL;
  g_n = 0;
}

TestSuite(prefer, .init = disks, .fini = fini);

static int choose(char **must, size_t n_must, int size, const char *hint,
                  const struct ioq_need *need, struct prefer_result *r, ioq_err *e) {
  struct prefer_req req = {IOQ_RES_BANDWIDTH, g_ids, g_n, must, n_must, size};
  struct prefer_ctx ctx = {g_disks, 2, hint, need, IOQ_POLICY_LEAST_ALLOCATED};
  return prefer_choose(&req, &ctx, r, e);
}

static bool all_on(const struct prefer_result *r, const char *disk) {
  for (size_t i = 0; i < r->n; i++)
    if (strncmp(r->ids[i], disk, strlen(disk)) != 0 || r->ids[i][strlen(disk)] != '-')
      return false;
  return true;
}

Test(prefer, placement_picks_the_disk_with_more_free_units) {
  offer(0, 30, 0, 80); /* nvme0n1: 70 allocated, sdb: 20 */
  struct prefer_result r;
  ioq_err e;
  cr_assert_eq(choose(NULL, 0, 10, NULL, NULL, &r, &e), 0, "%s", e.msg);
  cr_assert_eq(r.n, 10);
  cr_assert(all_on(&r, "sdb"));
  cr_assert_str_eq(r.how, "placement");
  cr_assert_str_eq(r.ids[0], "sdb-bw-0", "lowest indexes first");
  prefer_result_free(&r);
}

Test(prefer, must_include_first_and_same_disk) {
  offer(0, 50, 0, 50);
  char *must[] = {"nvme0n1-bw-7", "nvme0n1-bw-3"};
  struct prefer_result r;
  ioq_err e;
  cr_assert_eq(choose(must, 2, 5, NULL, NULL, &r, &e), 0, "%s", e.msg);
  cr_assert_eq(r.n, 5);
  cr_assert_str_eq(r.ids[0], "nvme0n1-bw-7");
  cr_assert_str_eq(r.ids[1], "nvme0n1-bw-3");
  cr_assert(all_on(&r, "nvme0n1"));
  for (size_t i = 2; i < r.n; i++)
    cr_assert(strcmp(r.ids[i], "nvme0n1-bw-7") && strcmp(r.ids[i], "nvme0n1-bw-3"), "no repeats");
  prefer_result_free(&r);
}

Test(prefer, hint_wins_when_it_fits_else_placement) {
  offer(0, 60, 0, 100);
  struct prefer_result r;
  ioq_err e;
  cr_assert_eq(choose(NULL, 0, 40, "nvme0n1", NULL, &r, &e), 0, "%s", e.msg);
  cr_assert(all_on(&r, "nvme0n1"));
  cr_assert_str_eq(r.how, "annotation");
  prefer_result_free(&r);
  cr_assert_eq(choose(NULL, 0, 70, "nvme0n1", NULL, &r, &e), 0, "%s", e.msg);
  cr_assert(all_on(&r, "sdb"));
  cr_assert(strstr(r.note, "annotated disk nvme0n1 has 60 free units, 70 needed"), "%s", r.note);
  prefer_result_free(&r);
}

Test(prefer, class_of_the_asking_pod) {
  snprintf(g_disks[1].class_name, sizeof g_disks[1].class_name, "fast");
  offer(0, 100, 0, 10);
  struct ioq_need need = {.class_name = "fast"};
  struct prefer_result r;
  ioq_err e;
  cr_assert_eq(choose(NULL, 0, 10, NULL, &need, &r, &e), 0, "%s", e.msg);
  cr_assert(all_on(&r, "sdb"));
  prefer_result_free(&r);
  /* the class cannot hold it: the largest disk that can, so kubelet gets one disk */
  cr_assert_eq(choose(NULL, 0, 20, NULL, &need, &r, &e), 0, "%s", e.msg);
  cr_assert(all_on(&r, "nvme0n1"));
  cr_assert_str_eq(r.how, "largest-free");
  prefer_result_free(&r);
}

Test(prefer, spreads_only_when_no_disk_can_hold_it) {
  offer(0, 30, 0, 40);
  struct prefer_result r;
  ioq_err e;
  cr_assert_eq(choose(NULL, 0, 60, NULL, NULL, &r, &e), 0, "%s", e.msg);
  cr_assert_eq(r.n, 60);
  cr_assert_str_eq(r.how, "spread");
  size_t on_sdb = 0;
  for (size_t i = 0; i < r.n; i++)
    on_sdb += strncmp(r.ids[i], "sdb-", 4) == 0;
  cr_assert_eq(on_sdb, 40, "the disk with more free units is used up first");
  prefer_result_free(&r);
}

struct bad_case {
  char ids[3][72];
  int n;
  int size;
  char want[64];
};

ParameterizedTestParameters(prefer, bad_input) {
  static struct bad_case cases[] = {
      {{"nvme0n1-bw-1"}, 1, 0, "allocation_size 0"},
      {{"nvme0n1-bw-1"}, 1, -3, "allocation_size -3"},
      {{"nvme0n1-bw-1"}, 1, 2, "only 1 are available"},
      {{"nvme0n1-iops-1"}, 1, 1, "not ioqos/bandwidth"},
      {{"nvme0n1-bw-1", "nvme0n1-bw-1"}, 2, 1, "more than once"},
      {{"vdz-bw-1"}, 1, 1, "only 0 are available (IDs of unknown disks or units skipped)"},
      {{"garbage"}, 1, 1, "available ID #1"},
      {{"nvme0n1-bw-1", "nvme0n1-bw-2", "sdb-bw-1"}, 3, 1, ""}, /* fine: control case */
  };
  return cr_make_param_array(struct bad_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad_case *c, prefer, bad_input) {
  char *ids[3];
  for (int i = 0; i < c->n; i++)
    ids[i] = c->ids[i];
  struct prefer_req req = {IOQ_RES_BANDWIDTH, ids, (size_t)c->n, NULL, 0, c->size};
  struct prefer_ctx ctx = {g_disks, 2, NULL, NULL, IOQ_POLICY_LEAST_ALLOCATED};
  struct prefer_result r;
  ioq_err e = {0};
  int rc = prefer_choose(&req, &ctx, &r, &e);
  if (!c->want[0]) {
    cr_assert_eq(rc, 0, "%s", e.msg);
    prefer_result_free(&r);
    return;
  }
  cr_assert_eq(rc, -1);
  cr_assert(strstr(e.msg, c->want), "'%s' lacks '%s'", e.msg, c->want);
  cr_assert_null(r.ids);
}

Test(prefer, offers_of_unknown_disks_or_units_are_skipped) {
  offer(60, 90, 0, 0); /* nvme0n1 has units 0..99: 100..149 are not ours */
  struct prefer_result r;
  ioq_err e;
  cr_assert_eq(choose(NULL, 0, 40, NULL, NULL, &r, &e), 0, "%s", e.msg);
  cr_assert_eq(r.n, 40);
  cr_assert_str_eq(r.ids[39], "nvme0n1-bw-99");
  cr_assert(strstr(r.note, "50 offered IDs name disks or units this plugin does not advertise"),
            "%s", r.note);
  prefer_result_free(&r);
  cr_assert_eq(choose(NULL, 0, 41, NULL, NULL, &r, &e), -1);
  cr_assert(strstr(e.msg, "only 40 are available"), "%s", e.msg);
}

// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <string.h>

#include "grant/placement.h"

static struct ioq_disk_state disk(const char *name, const char *cls, uint64_t cap_bw,
                                  uint64_t alloc_bw, uint64_t cap_iops, uint64_t alloc_iops) {
  struct ioq_disk_state d;
  memset(&d, 0, sizeof d);
  strcpy(d.name, name);
  strcpy(d.class_name, cls);
  d.healthy = true;
  d.capacity[IOQ_RES_BANDWIDTH] = cap_bw;
  d.allocated[IOQ_RES_BANDWIDTH] = alloc_bw;
  d.capacity[IOQ_RES_IOPS] = cap_iops;
  d.allocated[IOQ_RES_IOPS] = alloc_iops;
  return d;
}

Test(placement, fits_one_disk_not_sum_of_disks) {
  /* 150 free on each of two disks: 200 must not fit (one disk per pod) */
  struct ioq_disk_state d[] = {disk("sda", "default", 400, 250, 0, 0),
                               disk("sdb", "default", 400, 250, 0, 0)};
  struct ioq_need need = {.units = {200, 0}};
  struct ioq_choice c;
  cr_assert_eq(ioq_place(d, 2, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 0);
  cr_assert_eq(c.disk, -1);
  cr_assert_str_eq(c.reason, "no disk in class default has 200 free bandwidth units; best: sda with 150");
}

Test(placement, least_allocated_prefers_emptier) {
  struct ioq_disk_state d[] = {disk("sda", "default", 1000, 600, 0, 0),
                               disk("sdb", "default", 1000, 100, 0, 0)};
  struct ioq_need need = {.units = {100, 0}};
  struct ioq_choice c;
  cr_assert_eq(ioq_place(d, 2, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 1);
  cr_assert_eq(c.disk, 1);
  cr_assert_eq(c.score, 8); /* (100+100)/1000 = 0.2 allocated after placing */
  cr_assert_eq(ioq_place(d, 2, NULL, &need, IOQ_POLICY_MOST_ALLOCATED, &c), 1);
  cr_assert_eq(c.disk, 0);
  cr_assert_eq(c.score, 7);
}

Test(placement, class_and_health) {
  struct ioq_disk_state d[] = {disk("sda", "default", 1000, 0, 0, 0),
                               disk("nvme0n1", "fast", 1000, 900, 0, 0),
                               disk("nvme1n1", "fast", 1000, 0, 0, 0)};
  d[2].healthy = false;
  struct ioq_need need = {.units = {200, 0}, .class_name = "fast"};
  struct ioq_choice c;
  cr_assert_eq(ioq_place(d, 3, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 0);
  cr_assert_str_eq(c.reason, "no disk in class fast has 200 free bandwidth units; best: nvme0n1 with 100");
  need.class_name = "slow";
  cr_assert_eq(ioq_place(d, 3, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 0);
  cr_assert_str_eq(c.reason, "no disk in class slow");
  d[1].healthy = false;
  need.class_name = "fast";
  cr_assert_eq(ioq_place(d, 3, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 0);
  cr_assert_str_eq(c.reason, "no healthy disk in class fast (2 unhealthy)");
  need.class_name = NULL; /* default class */
  cr_assert_eq(ioq_place(d, 3, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 1);
  cr_assert_eq(c.disk, 0);
}

Test(placement, both_resources_at_once) {
  /* sda has bandwidth but no iops left; sdb the reverse; neither fits both */
  struct ioq_disk_state d[] = {disk("sda", "default", 1000, 0, 100, 100),
                               disk("sdb", "default", 1000, 1000, 100, 0)};
  struct ioq_need need = {.units = {100, 10}};
  struct ioq_choice c;
  cr_assert_eq(ioq_place(d, 2, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 0);
  cr_assert_str_eq(c.reason, "no disk in class default has 100 free bandwidth units and 10 free "
                             "iops units; best: sda with 1000 and 0");
  d[0].allocated[IOQ_RES_IOPS] = 50;
  cr_assert_eq(ioq_place(d, 2, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 1);
  cr_assert_eq(c.disk, 0);
}

Test(placement, extra_assumed_units_count) {
  struct ioq_disk_state d[] = {disk("sda", "default", 1000, 500, 0, 0)};
  uint64_t extra[IOQ_RES_COUNT] = {400, 0};
  struct ioq_need need = {.units = {200, 0}};
  struct ioq_choice c;
  cr_assert_eq(ioq_place(d, 1, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 1);
  cr_assert_eq(ioq_place(d, 1, extra, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 0);
  cr_assert_str_eq(c.reason, "no disk in class default has 200 free bandwidth units; best: sda with 100");
}

Test(placement, over_allocated_annotation_is_zero_free) {
  struct ioq_disk_state d[] = {disk("sda", "default", 100, 150, 0, 0)};
  struct ioq_need need = {.units = {1, 0}};
  struct ioq_choice c;
  cr_assert_eq(ioq_place(d, 1, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 0);
  cr_assert(strstr(c.reason, "best: sda with 0"));
}

Test(placement, balanced) {
  struct ioq_disk_state d[] = {disk("sda", "default", 100, 0, 100, 80),
                               disk("sdb", "default", 100, 40, 100, 40)};
  struct ioq_need need = {.units = {10, 10}};
  struct ioq_choice c;
  cr_assert_eq(ioq_place(d, 2, NULL, &need, IOQ_POLICY_BALANCED, &c), 1);
  cr_assert_eq(c.disk, 1);
  cr_assert_eq(c.score, 10);
  int s = -1;
  cr_assert(ioq_disk_score(&d[0], NULL, &need, IOQ_POLICY_BALANCED, &s));
  cr_assert_eq(s, 2); /* |0.1-0.9| */
  struct ioq_need big = {.units = {1000, 0}};
  s = -1;
  cr_assert_not(ioq_disk_score(&d[0], NULL, &big, IOQ_POLICY_BALANCED, &s), "does not fit");
  cr_assert_eq(s, -1, "no score for a disk that does not fit");
}

Test(placement, stable_tie_break) {
  struct ioq_disk_state d[] = {disk("sdb", "default", 100, 0, 0, 0), disk("sda", "default", 100, 0, 0, 0)};
  struct ioq_need need = {.units = {10, 0}};
  struct ioq_choice c;
  cr_assert_eq(ioq_place(d, 2, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 1);
  cr_assert_eq(c.disk, 1);
}

Test(placement, nothing_requested) {
  struct ioq_disk_state d[] = {disk("sda", "default", 100, 100, 0, 0)};
  struct ioq_need need = {.units = {0, 0}};
  struct ioq_choice c;
  cr_assert_eq(ioq_place(d, 1, NULL, &need, IOQ_POLICY_LEAST_ALLOCATED, &c), 1);
  cr_assert_eq(c.score, 10);
}

Test(placement, capability_names) {
  cr_assert_str_eq(ioq_cap_name(IOQ_CAP_IO_MAX), "io.max");
  cr_assert_eq(ioq_cap_from_name("io.weight"), IOQ_CAP_IO_WEIGHT);
  cr_assert_eq(ioq_cap_from_name("io.future"), 0);
  cr_assert_null(ioq_cap_name(1u << 20));
}

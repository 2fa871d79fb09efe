// SPDX-License-Identifier: Apache-2.0
/* nodePolicy.iocost.pace for one disk (probe/pace.h): the fraction the plugin
 * writes iocost's model at, or why a disk is not paced. */
#include <criterion/criterion.h>
#include <string.h>

#include "grant/pace.h"

#define MiB (1024ull * 1024ull)

static struct ioq_config config(const char *json) {
  struct ioq_config c;
  ioq_err e = {0};
  cr_assert_eq(ioq_config_parse(json, "c.json", &c, &e), 0, "%s", e.msg);
  return c;
}

/* a plain disk of 200 MiB/s and 51200 IOPS at fraction 0.8, as the inventory leaves it */
static struct ioq_disk disk(void) {
  struct ioq_disk d;
  memset(&d, 0, sizeof d);
  strcpy(d.dev.name, "nvme1n1");
  d.n_leaves = 1;
  d.capacity_bw_bytes = 200 * MiB;
  d.capacity_iops = 51200;
  d.allocatable_fraction = 0.8;
  d.units[IOQ_RES_BANDWIDTH] = 160;
  d.units[IOQ_RES_IOPS] = 409;
  strcpy(d.capacity_source, "config c.json");
  return d;
}

Test(pace, off_unless_configured) {
  struct ioq_config c = config("{}");
  struct ioq_disk d = disk();
  double pace = 1;
  ioq_err e = {0};
  cr_assert_eq(ioq_pace_of(&c, IOQ_CGV2, &d, &pace, &e), IOQ_PACE_OFF);
  cr_assert_float_eq(pace, 0.0, 1e-12);
  ioq_config_free(&c);
}

Test(pace, a_number_is_taken_as_configured) {
  struct ioq_config c = config("{\"nodePolicy\":{\"iocost\":{\"enable\":true,\"pace\":0.85}}}");
  struct ioq_disk d = disk();
  double pace;
  ioq_err e = {0};
  cr_assert_eq(ioq_pace_of(&c, IOQ_CGV2, &d, &pace, &e), IOQ_PACE_ON, "%s", e.msg);
  cr_assert_float_eq(pace, 0.85, 1e-12);
  ioq_config_free(&c);
}

Test(pace, auto_is_grants_plus_the_pool_of_pods_without_a_grant) {
  struct ioq_config c = config("{\"nodePolicy\":{\"iocost\":{\"enable\":true,\"pace\":\"auto\"}}}");
  struct ioq_disk d = disk();
  double pace;
  ioq_err e = {0};
  cr_assert_eq(ioq_pace_of(&c, IOQ_CGV2, &d, &pace, &e), IOQ_PACE_ON, "%s", e.msg);
  cr_assert_float_eq(pace, 0.9, 1e-9, "0.8 granted + half of the 0.2 not advertised");
  ioq_config_free(&c);
  /* the token-bucket recipe: a small pool */
  c = config("{\"nodePolicy\":{\"iocost\":{\"enable\":true,\"pace\":\"auto\"},"
             "\"ungranted\":{\"headroomShare\":0.05}}}");
  cr_assert_eq(ioq_pace_of(&c, IOQ_CGV2, &d, &pace, &e), IOQ_PACE_ON, "%s", e.msg);
  cr_assert_float_eq(pace, 0.81, 1e-9);
  ioq_config_free(&c);
  c = config("{\"nodePolicy\":{\"iocost\":{\"enable\":true,\"pace\":\"auto\"},\"ungranted\":{"
             "\"enable\":false}}}");
  cr_assert_eq(ioq_pace_of(&c, IOQ_CGV2, &d, &pace, &e), IOQ_PACE_ON, "%s", e.msg);
  cr_assert_float_eq(pace, 0.8, 1e-9, "no pool: the grants alone");
  ioq_config_free(&c);
}

Test(pace, disks_that_cannot_be_paced_say_why) {
  struct ioq_config c = config("{\"nodePolicy\":{\"iocost\":{\"enable\":true,\"pace\":\"auto\"}}}");
  double pace = 1;
  ioq_err e = {0};
  struct ioq_disk d = disk();
  cr_assert_eq(ioq_pace_of(&c, IOQ_CGV1, &d, &pace, &e), IOQ_PACE_CANNOT);
  cr_assert_str_eq(e.msg, "nodePolicy.iocost.pace on nvme1n1: iocost needs cgroup v2; not paced");
  cr_assert_float_eq(pace, 0.0, 1e-12);
  d.n_leaves = 2;
  cr_assert_eq(ioq_pace_of(&c, IOQ_CGV2, &d, &pace, &e), IOQ_PACE_CANNOT);
  cr_assert(strstr(e.msg, "it sits on 2 disks"), "%s", e.msg);
  d = disk();
  d.capacity_iops = 0;
  strcpy(d.capacity_source, "none: set devices[].capacity");
  cr_assert_eq(ioq_pace_of(&c, IOQ_CGV2, &d, &pace, &e), IOQ_PACE_CANNOT);
  cr_assert_str_eq(e.msg, "nodePolicy.iocost.pace on nvme1n1: no capacity to pace from "
                          "(none: set devices[].capacity)");
  ioq_config_free(&c);
}

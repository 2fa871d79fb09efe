// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "units/units.h"

Test(units, resource_names) {
  enum ioq_resource r;
  cr_assert_eq(ioq_resource_from_name("ioqos/bandwidth", &r), 0);
  cr_assert_eq(r, IOQ_RES_BANDWIDTH);
  cr_assert_eq(ioq_resource_from_name("ioqos/iops", &r), 0);
  cr_assert_eq(r, IOQ_RES_IOPS);
  cr_assert_eq(ioq_resource_from_name("nvidia.com/gpu", &r), -1);
  cr_assert_eq(ioq_resource_from_name(NULL, &r), -1);
  cr_assert_str_eq(ioq_resource_name(IOQ_RES_IOPS), "ioqos/iops");
}

struct qcase { char in[40]; unsigned long long want; int ok; };
ParameterizedTestParameters(units, quantity) {
  static struct qcase cases[] = {
      {"200", 200, 1},        {"0", 0, 1},           {"2k", 2000, 1},
      {"1Ki", 1024, 1},       {"3M", 3000000, 1},    {"1.5k", 1500, 1},
      {"+7", 7, 1},           {"1e3", 1000, 1},      {"2000m", 2, 1},
      {"0.5", 0, 0},          {"-1", 0, 0},          {"", 0, 0},
      {"abc", 0, 0},          {"1.2.3", 0, 0},       {"5x", 0, 0},
      {"1500m", 0, 0},        {"99999999999999999999", 0, 0}, {"16Ei", 0, 0},
      /* a fraction with a binary suffix: whole once multiplied out */
      {"1.5Ki", 1536, 1},     {"0.5Gi", 536870912, 1}, {"15.5Ei", 17870283321406128128ull, 1},
      {"1.0001Ki", 0, 0},     {"0.1Ki", 0, 0},       {"1e19", 10000000000000000000ull, 1},
      {"1e20", 0, 0},
  };
  return cr_make_param_array(struct qcase, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct qcase *c, units, quantity) {
  uint64_t v = 12345;
  ioq_err e = {0};
  int rc = ioq_parse_quantity_int(c->in, &v, &e);
  if (c->ok) {
    cr_assert_eq(rc, 0, "'%s': %s", c->in, e.msg);
    cr_assert_eq(v, c->want, "'%s' -> %llu", c->in, (unsigned long long)v);
  } else {
    cr_assert_eq(rc, -1, "'%s' should fail", c->in);
    cr_assert(strstr(e.msg, "quantity") != NULL, "message for '%s': %s", c->in, e.msg);
  }
}

Test(units, id_roundtrip) {
  const char *disks[] = {"nvme0n1", "sda", "dm-0", "md127", "cciss!c0d0", "nullb-db"};
  for (size_t i = 0; i < sizeof disks / sizeof *disks; i++)
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      char id[IOQ_UNIT_ID_MAX + 1];
      ioq_err e = {0};
      cr_assert_eq(ioq_unit_id_format(id, sizeof id, disks[i], r, 4242, &e), 0, "%s", e.msg);
      struct ioq_unit_id u;
      cr_assert_eq(ioq_unit_id_parse(id, &u, &e), 0, "%s: %s", id, e.msg);
      cr_assert_str_eq(u.disk, disks[i]);
      cr_assert_eq(u.res, (enum ioq_resource)r);
      cr_assert_eq(u.index, 4242);
    }
}

Test(units, id_examples) {
  char id[IOQ_UNIT_ID_MAX + 1];
  cr_assert_eq(ioq_unit_id_format(id, sizeof id, "nvme0n1", IOQ_RES_BANDWIDTH, 17, NULL), 0);
  cr_assert_str_eq(id, "nvme0n1-bw-17");
  cr_assert_eq(ioq_unit_id_format(id, sizeof id, "dm-0", IOQ_RES_IOPS, 0, NULL), 0);
  cr_assert_str_eq(id, "dm-0-iops-0");
}

Test(units, id_max_length) {
  char disk[IOQ_DISK_NAME_MAX + 1];
  memset(disk, 'a', IOQ_DISK_NAME_MAX);
  disk[IOQ_DISK_NAME_MAX] = '\0';
  char id[IOQ_UNIT_ID_MAX + 1];
  ioq_err e = {0};
  cr_assert_eq(ioq_unit_id_format(id, sizeof id, disk, IOQ_RES_IOPS, 99999999, &e), 0, "%s", e.msg);
  cr_assert_leq(strlen(id), IOQ_UNIT_ID_MAX);
  char longdisk[IOQ_DISK_NAME_MAX + 2];
  memset(longdisk, 'a', sizeof longdisk - 1);
  longdisk[sizeof longdisk - 1] = '\0';
  cr_assert_eq(ioq_unit_id_format(id, sizeof id, longdisk, IOQ_RES_IOPS, 1, &e), -1);
}

struct badid { char id[80]; char why[40]; };
ParameterizedTestParameters(units, id_rejects) {
  static struct badid cases[] = {
      {"", "empty"},
      {"sda", "DISK-RES-INDEX"},
      {"sda-17", "DISK-RES-INDEX"},
      {"-bw-1", "DISK-RES-INDEX"},
      {"sda-bw-", "malformed index"},
      {"sda-bw-01", "malformed index"},
      {"sda-bw-1x", "malformed index"},
      {"sda-bw--1", "unknown resource"},
      {"sda-cpu-1", "unknown resource"},
      {"sda-bw-99999999999", "out of range"},
      {"s/a-bw-1", "invalid disk name"},
      {"sd a-bw-1", "invalid disk name"},
      {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bw-1", "longer than"},
  };
  return cr_make_param_array(struct badid, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct badid *c, units, id_rejects) {
  struct ioq_unit_id u;
  ioq_err e = {0};
  cr_assert_eq(ioq_unit_id_parse(c->id, &u, &e), -1, "'%s' accepted", c->id);
  cr_assert(strstr(e.msg, c->why) != NULL, "'%s': message '%s' lacks '%s'", c->id, e.msg, c->why);
}

/* issue 12 item 10: every ID the plugin can build fits 63 characters: the
 * longest disk name a unit ID takes with the highest index a disk may have */
Test(units, id_bound_holds_for_longest_name_and_highest_index) {
  char disk[IOQ_DISK_NAME_MAX + 1];
  memset(disk, 'x', IOQ_DISK_NAME_MAX);
  disk[IOQ_DISK_NAME_MAX] = '\0';
  char id[IOQ_UNIT_ID_MAX + 1];
  ioq_err e = {0};
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    cr_assert_eq(ioq_unit_id_format(id, sizeof id, disk, r, IOQ_MAX_UNITS_PER_DISK - 1, &e), 0, "%s", e.msg);
    cr_assert_leq(strlen(id), IOQ_UNIT_ID_MAX);
    struct ioq_unit_id u;
    cr_assert_eq(ioq_unit_id_parse(id, &u, &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.disk, disk);
  }
  cr_assert_not(ioq_disk_name_valid("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), "49 characters");
}

Test(units, id_set_sort_and_find) {
  const char *ids[] = {"sdb-bw-2", "sda-bw-10", "sda-bw-9", "sda-iops-0", "sda-bw-1"};
  ioq_ids_sort(ids, 5);
  cr_assert_str_eq(ids[0], "sda-bw-1");
  cr_assert_str_eq(ids[4], "sdb-bw-2");
  cr_assert_eq(ioq_ids_find(ids, 5, "sda-bw-9"), 2);
  cr_assert_eq(ioq_ids_find(ids, 5, "sdb-bw-2"), 4);
  cr_assert_eq(ioq_ids_find(ids, 5, "sda-bw-3"), -1);
  cr_assert_eq(ioq_ids_find(ids, 0, "sda-bw-1"), -1, "empty set");
}

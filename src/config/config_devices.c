// SPDX-License-Identifier: Apache-2.0
/* The config section devices[]: each entry, class names, the unit bounds of the capacities. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/numconv.h"

#include "config_internal.h"

bool ioq_class_name_valid(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > IOQ_CLASS_NAME_MAX)
    return false;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.';
    if (!ok)
      return false;
  }
  /* "." and "..": never a name, whatever the name ends up in */
  return s[0] != '-' && s[n - 1] != '-' && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static int parse_device(struct ctx *x, json_object *d, size_t i, struct ioq_device_config *out) {
  char path[128];
  snprintf(path, sizeof path, "devices[%zu]", i);
  if (!json_object_is_type(d, json_type_object))
    return cfg_bad(x, path, "must be an object");
  static const char *const keys[] = {"select", "class", "capacity", "allocatableFraction",
                                     "ungrantedPool", NULL};
  if (cfg_check_keys(x, d, path, keys) < 0)
    return -1;
  char p2[160];
  out->allocatable_fraction = -1;
  snprintf(p2, sizeof p2, "%s.select", path);
  if (!json_object_object_get_ex(d, "select", NULL))
    return cfg_bad(x, p2, "is required (disk name, /dev path, mount point or MAJ:MIN)");
  if (cfg_get_string(x, d, "select", p2, &out->select, false) < 0)
    return -1;
  snprintf(p2, sizeof p2, "%s.class", path);
  if (cfg_get_string(x, d, "class", p2, &out->class_name, false) < 0)
    return -1;
  if (out->class_name && !ioq_class_name_valid(out->class_name))
    return cfg_bad(x, p2, "must be 1-63 characters of a-z, 0-9, '-' and '.'");
  json_object *cap;
  snprintf(p2, sizeof p2, "%s.capacity", path);
  if (cfg_get_object(x, d, "capacity", p2, &cap) < 0)
    return -1;
  if (cap) {
    static const char *const ckeys[] = {"bandwidthBytesPerSec", "iops", NULL};
    if (cfg_check_keys(x, cap, p2, ckeys) < 0)
      return -1;
    char p3[200];
    snprintf(p3, sizeof p3, "%s.bandwidthBytesPerSec", p2);
    if (cfg_get_uint(x, cap, "bandwidthBytesPerSec", p3, &out->capacity_bw_bytes, 1,
                 UINT64_MAX >> 4) < 0)
      return -1;
    snprintf(p3, sizeof p3, "%s.iops", p2);
    if (cfg_get_uint(x, cap, "iops", p3, &out->capacity_iops, 1, 1000000000ull) < 0)
      return -1;
  }
  snprintf(p2, sizeof p2, "%s.allocatableFraction", path);
  if (cfg_get_double(x, d, "allocatableFraction", p2, &out->allocatable_fraction, 0.0, 1.0) < 0)
    return -1;
  json_object *pool;
  snprintf(p2, sizeof p2, "%s.ungrantedPool", path);
  if (cfg_get_object(x, d, "ungrantedPool", p2, &pool) < 0)
    return -1;
  if (pool) {
    static const char *const pkeys[] = {"bandwidthBytesPerSec", "iops", NULL};
    if (cfg_check_keys(x, pool, p2, pkeys) < 0)
      return -1;
    char p3[200];
    /* io.max takes no value below 2 (the kernel says EINVAL to 0 and 1) */
    snprintf(p3, sizeof p3, "%s.bandwidthBytesPerSec", p2);
    if (cfg_get_uint(x, pool, "bandwidthBytesPerSec", p3, &out->ungranted_pool_bw_bytes, 2,
                 UINT64_MAX >> 4) < 0)
      return -1;
    if (out->capacity_bw_bytes && out->ungranted_pool_bw_bytes > out->capacity_bw_bytes)
      return cfg_bad(x, p3, "is larger than the disk (capacity.bandwidthBytesPerSec)");
    snprintf(p3, sizeof p3, "%s.iops", p2);
    if (cfg_get_uint(x, pool, "iops", p3, &out->ungranted_pool_iops, 2, 1000000000ull) < 0)
      return -1;
    if (out->capacity_iops && out->ungranted_pool_iops > out->capacity_iops)
      return cfg_bad(x, p3, "is larger than the disk (capacity.iops)");
  }
  return 0;
}

/* Units a configured capacity advertises: the same formula as capacity.c,
 * in integers (floor(cap x fraction / size); fractions have few digits). */
static uint64_t configured_units(uint64_t cap, double fraction, uint64_t size) {
  double u = floor((double)cap * fraction / (double)size);
  return ioq_u64_from_double_sat(u);
}

/* Every ListAndWatch message lists all units of a resource: a config that
 * would advertise more than units.h allows is refused here, naming the
 * numbers (measured capacities are capped by the probe instead). */
static int check_unit_bounds(struct ctx *x, const struct ioq_config *c) {
  static const char *const field[IOQ_RES_COUNT] = {"bandwidthBytesPerSec", "iops"};
  uint64_t total[IOQ_RES_COUNT] = {0};
  for (size_t i = 0; i < c->n_devices; i++) {
    const struct ioq_device_config *d = &c->devices[i];
    double frac = d->allocatable_fraction > 0 ? d->allocatable_fraction : c->allocatable_fraction;
    const uint64_t cap[IOQ_RES_COUNT] = {d->capacity_bw_bytes, d->capacity_iops};
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      uint64_t u = configured_units(cap[r], frac, c->units.size[r]);
      if (u > IOQ_MAX_UNITS_PER_DISK) {
        char p[80], what[400];
        snprintf(p, sizeof p, "devices[%zu].capacity.%s", i, field[r]);
        snprintf(
            what, sizeof what,
            "%llu x allocatable fraction %g / unit size %llu = %llu %s units, more than the %u "
            "one disk may advertise (each unit is one device in kubelet's ListAndWatch "
            "message, at most %u bytes each, limit %u bytes): raise units.%s",
            (unsigned long long)cap[r], frac, (unsigned long long)c->units.size[r],
            (unsigned long long)u, ioq_resource_name(r), IOQ_MAX_UNITS_PER_DISK,
            IOQ_DEVICE_ENCODED_MAX, IOQ_GRPC_MESSAGE_MAX, field[r]);
        return cfg_bad(x, p, what);
      }
      total[r] += u;
    }
  }
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (total[r] > IOQ_MAX_UNITS_PER_NODE) {
      char what[400];
      snprintf(what, sizeof what,
               "the configured capacities add up to %llu %s units, more than the %u one node may "
               "advertise (each unit is one device in kubelet's ListAndWatch message, at most %u "
               "bytes each, limit %u bytes): raise units.%s",
               (unsigned long long)total[r], ioq_resource_name(r), IOQ_MAX_UNITS_PER_NODE,
               IOQ_DEVICE_ENCODED_MAX, IOQ_GRPC_MESSAGE_MAX, field[r]);
      return cfg_bad(x, "devices", what);
    }
  return 0;
}

int cfg_parse_devices(struct ctx *x, json_object *root, struct ioq_config *c) {
  json_object *devs;
  if (json_object_object_get_ex(root, "devices", &devs)) {
    if (!json_object_is_type(devs, json_type_array))
      return cfg_bad(x, "devices", "must be an array");
    size_t n = json_object_array_length(devs);
    if (n > 256)
      return cfg_bad(x, "devices", "more than 256 entries");
    c->devices = calloc(n ? n : 1, sizeof *c->devices);
    if (!c->devices)
      return ioq_fail(x->e, ENOMEM, "%s: out of memory for %zu devices", x->src, n);
    for (size_t i = 0; i < n; i++) {
      c->n_devices = i + 1;
      if (parse_device(x, json_object_array_get_idx(devs, i), i, &c->devices[i]) < 0)
        return -1;
      for (size_t j = 0; j < i; j++)
        if (strcmp(c->devices[j].select, c->devices[i].select) == 0) {
          char p[64];
          snprintf(p, sizeof p, "devices[%zu].select", i);
          return cfg_bad(x, p, "selects the same device as an earlier entry");
        }
    }
  }

  if (check_unit_bounds(x, c) < 0)
    return -1;
  return 0;
}

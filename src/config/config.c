// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grant/dirsplit.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/numconv.h"
#include "base/yamljson.h"

#include "config_internal.h"

static const char *const g_policy_names[] = {"least-allocated", "most-allocated", "balanced"};

const char *ioq_policy_name(enum ioq_policy p) {
  return (unsigned)p < 3 ? g_policy_names[p] : "?";
}

int ioq_policy_parse(const char *s, enum ioq_policy *out) {
  for (int i = 0; i < 3; i++)
    if (s && strcmp(s, g_policy_names[i]) == 0) {
      *out = (enum ioq_policy)i;
      return 0;
    }
  return -1;
}

int ioq_config_defaults(struct ioq_config *c, ioq_err *e) {
  memset(c, 0, sizeof *c);
  c->source = strdup("(built-in defaults)");
  c->kubelet_root = strdup(IOQ_DEFAULT_KUBELET_ROOT);
  c->calibration_file = strdup(IOQ_DEFAULT_CALIBRATION_FILE);
  c->nvmet.parent = strdup(IOQ_DEFAULT_NVMET_PARENT);
  if (!c->source || !c->kubelet_root || !c->calibration_file || !c->nvmet.parent) {
    ioq_config_free(c);
    return ioq_fail(e, ENOMEM, "config: out of memory for the built-in defaults");
  }
  ioq_unit_sizes_default(&c->units);
  c->allocatable_fraction = IOQ_DEFAULT_ALLOCATABLE_FRACTION;
  c->policy = IOQ_POLICY_LEAST_ALLOCATED;
  c->enforcement.fail_open = false;
  c->enforcement.io_weight = true;
  c->enforcement.bfq_weight = true;
  c->enforcement.enable_controllers = true;
  c->enforcement.reconcile_interval_s = 10;
  c->enforcement.combined_directions = false;
  c->enforcement.combined_floor = DIRSPLIT_FLOOR_DEFAULT;
  c->monitor.enable = true;
  c->monitor.interval_s = 1;
  c->monitor.starved_window_s = 30;
  c->monitor.event_interval_s = 600;
  c->node_policy.iocost_ctrl_user = true;
  c->node_policy.iocost_min = 100.0;
  c->node_policy.iocost_max = 100.0;
  c->node_policy.ungranted_enable = true;
  c->node_policy.ungranted_interval_ms = IOQ_DEFAULT_UNGRANTED_INTERVAL_MS;
  c->node_policy.ungranted_headroom_share = IOQ_DEFAULT_UNGRANTED_HEADROOM_SHARE;
  c->node_policy.ungranted_lend = true;
  c->node_policy.ungranted_lend_reserve = IOQ_DEFAULT_UNGRANTED_LEND_RESERVE;
  c->node_policy.ungranted_lend_sample_ms = IOQ_DEFAULT_UNGRANTED_LEND_SAMPLE_MS;
  return 0;
}

void ioq_config_free(struct ioq_config *c) {
  if (!c)
    return;
  free(c->source);
  free(c->kubelet_root);
  free(c->calibration_file);
  for (size_t i = 0; i < c->n_devices; i++) {
    free(c->devices[i].select);
    free(c->devices[i].class_name);
  }
  free(c->devices);
  cfg_nvmet_free(c);
  free(c->pool);
  memset(c, 0, sizeof *c);
}

/* ---- typed field readers: each error names source and field path ---- */


static unsigned line_of(struct ctx *x, json_object *o) { return x->yaml ? ioq_yaml_line(o) : 0; }

/* The line (YAML only, else 0) of the deepest node of `path` ("devices[1].
 * capacity.iops", "(top level)") that exists under `node`. */
static unsigned path_line(struct ctx *x, json_object *node, const char *path) {
  unsigned line = line_of(x, node);
  if (!strcmp(path, "(top level)"))
    return line;
  while (node && *path) {
    json_object *next = NULL;
    if (*path == '[') {
      char *end;
      unsigned long i = strtoul(path + 1, &end, 10);
      if (*end != ']' || !json_object_is_type(node, json_type_array))
        break;
      next = json_object_array_get_idx(node, i);
      path = end + 1;
    } else {
      size_t n = strcspn(path, ".[");
      char key[128];
      if (n >= sizeof key || !json_object_is_type(node, json_type_object))
        break;
      memcpy(key, path, n);
      key[n] = '\0';
      if (!json_object_object_get_ex(node, key, &next))
        break;
      path += n;
    }
    if (*path == '.')
      path++;
    if (!next)
      break;
    node = next;
    if (line_of(x, node))
      line = line_of(x, node);
  }
  return line;
}

/* A field a pool sets is reported under the pool: "pools[1].devices[0]". */
static bool in_pool(struct ctx *x, const char *path) {
  if (!x->pool || !strcmp(path, "(top level)"))
    return false;
  char key[64];
  size_t n = strcspn(path, ".[");
  if (n >= sizeof key)
    return false;
  memcpy(key, path, n);
  key[n] = '\0';
  return json_object_object_get_ex(x->pool, key, NULL);
}

/* key: the unknown key an error is about (its line is the one to show) */
int cfg_bad_at(struct ctx *x, unsigned line, const char *path, const char *key,
                  const char *what) {
  char pre[32] = "";
  if (x->pool && in_pool(x, path))
    snprintf(pre, sizeof pre, "pools[%zu].", x->pool_idx);
  if (x->err_path) {
    bool top = !strcmp(path, "(top level)");
    snprintf(x->err_path, ERR_PATH_MAX, "%s%s%s%s", pre, top ? "" : path, key && !top ? "." : "",
             key ? key : "");
  }
  if (line)
    return ioq_fail(x->e, IOQ_EINVAL_INPUT, "%s: line %u: %s%s: %s", x->src, line, pre, path, what);
  return ioq_fail(x->e, IOQ_EINVAL_INPUT, "%s: %s%s: %s", x->src, pre, path, what);
}

int cfg_bad(struct ctx *x, const char *path, const char *what) {
  return cfg_bad_at(x, path_line(x, x->root, path), path, NULL, what);
}

/* Rejects keys not in `allowed` (NULL-terminated): a typo must not be a
 * silently ignored setting. */
int cfg_check_keys(struct ctx *x, json_object *obj, const char *path,
                      const char *const *allowed) {
  json_object_object_foreach(obj, key, val) {
    bool ok = false;
    for (const char *const *a = allowed; *a; a++)
      if (strcmp(key, *a) == 0)
        ok = true;
    if (!ok) {
      char msg[512];
      snprintf(msg, sizeof msg, "unknown field '%.100s' (allowed:", key);
      for (const char *const *a = allowed; *a; a++) {
        strncat(msg, " ", sizeof msg - strlen(msg) - 1);
        strncat(msg, *a, sizeof msg - strlen(msg) - 1);
      }
      strncat(msg, ")", sizeof msg - strlen(msg) - 1);
      const char *p = path[0] ? path : "(top level)";
      unsigned line = line_of(x, val); /* the unknown key's own line */
      return cfg_bad_at(x, line ? line : path_line(x, x->root, p), p, key, msg);
    }
  }
  return 0;
}

int cfg_get_string(struct ctx *x, json_object *obj, const char *key, const char *path,
                      char **out, bool allow_empty) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v))
    return 0;
  if (!json_object_is_type(v, json_type_string))
    return cfg_bad(x, path, "must be a string");
  const char *s = json_object_get_string(v);
  if (!allow_empty && !*s)
    return cfg_bad(x, path, "must not be empty");
  char *dup = strdup(s);
  if (!dup)
    return ioq_fail(x->e, ENOMEM, "%s: out of memory for the value of %s", x->src, path);
  free(*out);
  *out = dup;
  return 0;
}

int cfg_get_bool(struct ctx *x, json_object *obj, const char *key, const char *path, bool *out) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v))
    return 0;
  if (!json_object_is_type(v, json_type_boolean))
    return cfg_bad(x, path, "must be true or false");
  *out = json_object_get_boolean(v);
  return 0;
}

int cfg_get_uint(struct ctx *x, json_object *obj, const char *key, const char *path,
                    uint64_t *out, uint64_t min, uint64_t max) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v))
    return 0;
  if (!json_object_is_type(v, json_type_int))
    return cfg_bad(x, path, "must be an integer");
  errno = 0;
  int64_t n = json_object_get_int64(v);
  if (n < 0 || (uint64_t)n < min || (uint64_t)n > max || errno) {
    char msg[128];
    snprintf(msg, sizeof msg, "must be an integer in [%llu, %llu]", (unsigned long long)min,
             (unsigned long long)max);
    return cfg_bad(x, path, msg);
  }
  *out = (uint64_t)n;
  return 0;
}

int cfg_get_double(struct ctx *x, json_object *obj, const char *key, const char *path,
                      double *out, double lo_excl, double hi_incl) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v))
    return 0;
  if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
    return cfg_bad(x, path, "must be a number");
  double d = json_object_get_double(v);
  if (!isfinite(d) || d <= lo_excl || d > hi_incl) {
    char msg[128];
    snprintf(msg, sizeof msg, "must be a number in (%g, %g]", lo_excl, hi_incl);
    return cfg_bad(x, path, msg);
  }
  *out = d;
  return 0;
}

int cfg_get_object(struct ctx *x, json_object *obj, const char *key, const char *path,
                      json_object **out) {
  *out = NULL;
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v))
    return 0;
  if (!json_object_is_type(v, json_type_object))
    return cfg_bad(x, path, "must be an object");
  *out = v;
  return 0;
}

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

static int parse_root(struct ctx *x, json_object *root, struct ioq_config *c) {
  if (!json_object_is_type(root, json_type_object))
    return cfg_bad(x, "(top level)", "must be an object");
  static const char *const keys[] = {"kubeletRootDir", "calibrationFile",
                                     "units", "allocatableFraction", "placementPolicy",
                                     "devices", "enforcement", "monitor", "nodePolicy", "nvmet",
                                     "pools", "apiVersion", "kind", NULL};
  if (cfg_check_keys(x, root, "", keys) < 0)
    return -1;
  if (cfg_get_string(x, root, "kubeletRootDir", "kubeletRootDir", &c->kubelet_root, false) < 0 ||
      cfg_get_string(x, root, "calibrationFile", "calibrationFile", &c->calibration_file, false) < 0)
    return -1;
  if (c->kubelet_root[0] != '/')
    return cfg_bad(x, "kubeletRootDir", "must be an absolute path");
  if (c->calibration_file[0] != '/')
    return cfg_bad(x, "calibrationFile", "must be an absolute path");

  json_object *units;
  if (cfg_get_object(x, root, "units", "units", &units) < 0)
    return -1;
  if (units) {
    static const char *const ukeys[] = {"bandwidthBytesPerSec", "iops", NULL};
    if (cfg_check_keys(x, units, "units", ukeys) < 0 ||
        cfg_get_uint(x, units, "bandwidthBytesPerSec", "units.bandwidthBytesPerSec",
                 &c->units.size[IOQ_RES_BANDWIDTH], 4096, 1ull << 40) < 0 ||
        cfg_get_uint(x, units, "iops", "units.iops", &c->units.size[IOQ_RES_IOPS], 1, 1000000) < 0)
      return -1;
  }
  if (cfg_get_double(x, root, "allocatableFraction", "allocatableFraction", &c->allocatable_fraction,
                 0.0, 1.0) < 0)
    return -1;
  char *policy = NULL;
  if (cfg_get_string(x, root, "placementPolicy", "placementPolicy", &policy, false) < 0)
    return -1;
  if (policy) {
    int rc = ioq_policy_parse(policy, &c->policy);
    free(policy);
    if (rc < 0)
      return cfg_bad(x, "placementPolicy", "must be least-allocated, most-allocated or balanced");
  }

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

  json_object *enf;
  if (cfg_get_object(x, root, "enforcement", "enforcement", &enf) < 0)
    return -1;
  if (enf) {
    static const char *const ekeys[] = {"failOpen", "ioWeight", "bfqWeight", "enableControllers",
                                        "reconcileIntervalSeconds", "combinedDirections",
                                        "combinedDirectionsFloor", NULL};
    uint64_t ri = c->enforcement.reconcile_interval_s;
    if (cfg_check_keys(x, enf, "enforcement", ekeys) < 0 ||
        cfg_get_bool(x, enf, "failOpen", "enforcement.failOpen", &c->enforcement.fail_open) < 0 ||
        cfg_get_bool(x, enf, "ioWeight", "enforcement.ioWeight", &c->enforcement.io_weight) < 0 ||
        cfg_get_bool(x, enf, "bfqWeight", "enforcement.bfqWeight", &c->enforcement.bfq_weight) < 0 ||
        cfg_get_bool(x, enf, "enableControllers", "enforcement.enableControllers",
                 &c->enforcement.enable_controllers) < 0 ||
        cfg_get_uint(x, enf, "reconcileIntervalSeconds", "enforcement.reconcileIntervalSeconds", &ri, 1,
                 3600) < 0 ||
        cfg_get_bool(x, enf, "combinedDirections", "enforcement.combinedDirections",
                 &c->enforcement.combined_directions) < 0 ||
        cfg_get_double(x, enf, "combinedDirectionsFloor", "enforcement.combinedDirectionsFloor",
                   &c->enforcement.combined_floor, 0, 0.25) < 0)
      return -1;
    c->enforcement.reconcile_interval_s = (unsigned)ri;
  }

  json_object *mon;
  if (cfg_get_object(x, root, "monitor", "monitor", &mon) < 0)
    return -1;
  if (mon) {
    static const char *const mkeys[] = {"enable", "intervalSeconds", "starvedWindowSeconds",
                                        "eventIntervalSeconds", NULL};
    uint64_t iv = c->monitor.interval_s, win = c->monitor.starved_window_s,
             ev = c->monitor.event_interval_s;
    if (cfg_check_keys(x, mon, "monitor", mkeys) < 0 ||
        cfg_get_bool(x, mon, "enable", "monitor.enable", &c->monitor.enable) < 0 ||
        cfg_get_uint(x, mon, "intervalSeconds", "monitor.intervalSeconds", &iv, 1, 60) < 0 ||
        cfg_get_uint(x, mon, "starvedWindowSeconds", "monitor.starvedWindowSeconds", &win, 1, 3600) < 0 ||
        cfg_get_uint(x, mon, "eventIntervalSeconds", "monitor.eventIntervalSeconds", &ev, 0, 86400) < 0)
      return -1;
    if (win < iv)
      return cfg_bad(x, "monitor.starvedWindowSeconds", "must be at least monitor.intervalSeconds");
    c->monitor.interval_s = (unsigned)iv;
    c->monitor.starved_window_s = (unsigned)win;
    c->monitor.event_interval_s = (unsigned)ev;
  }

  json_object *np;
  if (cfg_get_object(x, root, "nodePolicy", "nodePolicy", &np) < 0)
    return -1;
  if (np) {
    static const char *const nkeys[] = {"qosClassWeights", "iocost", "ungranted", NULL};
    if (cfg_check_keys(x, np, "nodePolicy", nkeys) < 0)
      return -1;
    json_object *w, *ic, *ug;
    if (cfg_get_object(x, np, "qosClassWeights", "nodePolicy.qosClassWeights", &w) < 0 ||
        cfg_get_object(x, np, "iocost", "nodePolicy.iocost", &ic) < 0 ||
        cfg_get_object(x, np, "ungranted", "nodePolicy.ungranted", &ug) < 0)
      return -1;
    if (ug) {
      static const char *const ukeys[] = {"enable",      "intervalMs",   "headroomShare", "lend",
                                          "lendReserve", "lendSampleMs", NULL};
      uint64_t iv = c->node_policy.ungranted_interval_ms, sm = c->node_policy.ungranted_lend_sample_ms;
      if (cfg_check_keys(x, ug, "nodePolicy.ungranted", ukeys) < 0 ||
          cfg_get_bool(x, ug, "enable", "nodePolicy.ungranted.enable",
                   &c->node_policy.ungranted_enable) < 0 ||
          cfg_get_uint(x, ug, "intervalMs", "nodePolicy.ungranted.intervalMs", &iv, 100, 60000) < 0 ||
          cfg_get_double(x, ug, "headroomShare", "nodePolicy.ungranted.headroomShare",
                     &c->node_policy.ungranted_headroom_share, 0.0, 1.0) < 0 ||
          cfg_get_bool(x, ug, "lend", "nodePolicy.ungranted.lend", &c->node_policy.ungranted_lend) < 0 ||
          cfg_get_double(x, ug, "lendReserve", "nodePolicy.ungranted.lendReserve",
                         &c->node_policy.ungranted_lend_reserve, 0.0, 1.0) < 0 ||
          cfg_get_uint(x, ug, "lendSampleMs", "nodePolicy.ungranted.lendSampleMs", &sm, 10, 1000) < 0)
        return -1;
      c->node_policy.ungranted_interval_ms = (unsigned)iv;
      c->node_policy.ungranted_lend_sample_ms = (unsigned)sm;
      if (sm >= iv)
        return cfg_bad(x, "nodePolicy.ungranted.lendSampleMs",
                       "must be shorter than nodePolicy.ungranted.intervalMs: lent capacity is taken "
                       "back between passes");
    }
    if (w) {
      static const char *const wkeys[] = {"burstable", "besteffort", NULL};
      uint64_t b = 0, be = 0;
      if (cfg_check_keys(x, w, "nodePolicy.qosClassWeights", wkeys) < 0 ||
          cfg_get_uint(x, w, "burstable", "nodePolicy.qosClassWeights.burstable", &b, 1, 10000) < 0 ||
          cfg_get_uint(x, w, "besteffort", "nodePolicy.qosClassWeights.besteffort", &be, 1, 10000) < 0)
        return -1;
      c->node_policy.weight_burstable = (unsigned)b;
      c->node_policy.weight_besteffort = (unsigned)be;
    }
    if (ic) {
      static const char *const ikeys[] = {"enable", "ctrl", "min", "max", "latencyTargetUs", "pace",
                                          NULL};
      uint64_t lat = 0;
      char *ctrl = NULL;
      if (cfg_check_keys(x, ic, "nodePolicy.iocost", ikeys) < 0 ||
          cfg_get_bool(x, ic, "enable", "nodePolicy.iocost.enable",
                   &c->node_policy.iocost_enable) < 0 ||
          cfg_get_string(x, ic, "ctrl", "nodePolicy.iocost.ctrl", &ctrl, false) < 0)
        return -1;
      if (ctrl) {
        bool user = strcmp(ctrl, "user") == 0, autom = strcmp(ctrl, "auto") == 0;
        free(ctrl);
        if (!user && !autom)
          return cfg_bad(x, "nodePolicy.iocost.ctrl", "must be user or auto");
        c->node_policy.iocost_ctrl_user = user;
      }
      if (cfg_get_double(x, ic, "min", "nodePolicy.iocost.min", &c->node_policy.iocost_min, 0.99,
                     10000) < 0 ||
          cfg_get_double(x, ic, "max", "nodePolicy.iocost.max", &c->node_policy.iocost_max, 0.99,
                     10000) < 0)
        return -1;
      if (c->node_policy.iocost_min > c->node_policy.iocost_max)
        return cfg_bad(x, "nodePolicy.iocost.min", "must not exceed nodePolicy.iocost.max");
      if (cfg_get_uint(x, ic, "latencyTargetUs", "nodePolicy.iocost.latencyTargetUs", &lat, 1,
                   10000000) < 0)
        return -1;
      c->node_policy.iocost_latency_us = (unsigned)lat;
      json_object *pv;
      if (json_object_object_get_ex(ic, "pace", &pv) && json_object_is_type(pv, json_type_string)) {
        if (strcmp(json_object_get_string(pv), "auto") != 0)
          return cfg_bad(x, "nodePolicy.iocost.pace", "must be a number in (0, 1] or auto");
        c->node_policy.iocost_pace_auto = true;
      } else if (cfg_get_double(x, ic, "pace", "nodePolicy.iocost.pace", &c->node_policy.iocost_pace,
                            0.0, 1.0) < 0) {
        return -1;
      }
      if (ioq_config_paces(c)) {
        if (!c->node_policy.iocost_enable || !c->node_policy.iocost_ctrl_user)
          return cfg_bad(x, "nodePolicy.iocost.pace",
                     "needs nodePolicy.iocost.enable true and ctrl user");
        /* the period is twice the latency target: 4 ms spreads a throttled
         * burst well within a token bucket's refill (measured, benchmark.md) */
        if (!lat)
          c->node_policy.iocost_latency_us = IOQ_DEFAULT_IOCOST_PACE_LATENCY_US;
      }
    }
  }
  return cfg_parse_nvmet(x, root, c);
}

bool ioq_config_paces(const struct ioq_config *c) {
  return c->node_policy.iocost_pace_auto || c->node_policy.iocost_pace > 0;
}

/* ---- the document: header, pools, syntax ---- */

/* apiVersion and kind: both or neither (files from before the header). */
static int check_header(struct ctx *x, json_object *root, bool *versioned) {
  json_object *av, *kind;
  bool has_av = json_object_object_get_ex(root, "apiVersion", &av);
  bool has_kind = json_object_object_get_ex(root, "kind", &kind);
  *versioned = has_av || has_kind;
  if (has_av && (!json_object_is_type(av, json_type_string) ||
                 strcmp(json_object_get_string(av), IOQ_CONFIG_API_VERSION) != 0))
    return cfg_bad(x, "apiVersion", "must be " IOQ_CONFIG_API_VERSION);
  if (has_kind && (!json_object_is_type(kind, json_type_string) ||
                   strcmp(json_object_get_string(kind), IOQ_CONFIG_KIND) != 0))
    return cfg_bad(x, "kind", "must be " IOQ_CONFIG_KIND);
  if (has_av && !has_kind)
    return cfg_bad(x, "kind", "is required with apiVersion (" IOQ_CONFIG_KIND ")");
  if (has_kind && !has_av)
    return cfg_bad(x, "apiVersion", "is required with kind (" IOQ_CONFIG_API_VERSION ")");
  return 0;
}

/* The keys a pool may set; each replaces the top-level one whole. units and
 * placementPolicy are not among them: they must agree across the cluster. */
static const char *const g_pool_overrides[] = {"kubeletRootDir", "calibrationFile",
                                               "allocatableFraction", "devices", "enforcement",
                                               "monitor", "nodePolicy", "nvmet", NULL};

/* Checks pools[i]'s own fields; *labels gets its matchLabels object. */
static int check_pool(struct ctx *x, json_object *pool, size_t i, json_object **labels) {
  char path[96], p2[128];
  snprintf(path, sizeof path, "pools[%zu]", i);
  if (!json_object_is_type(pool, json_type_object))
    return cfg_bad(x, path, "must be an object");
  static const char *const keys[] = {"name", "nodeSelector", "kubeletRootDir", "calibrationFile",
                                     "allocatableFraction", "devices", "enforcement", "monitor",
                                     "nodePolicy", "nvmet", NULL};
  if (cfg_check_keys(x, pool, path, keys) < 0)
    return -1;
  json_object *v, *sel;
  snprintf(p2, sizeof p2, "%s.name", path);
  if (json_object_object_get_ex(pool, "name", &v) &&
      (!json_object_is_type(v, json_type_string) || !*json_object_get_string(v)))
    return cfg_bad(x, p2, "must be a non-empty string");
  snprintf(p2, sizeof p2, "%s.nodeSelector", path);
  if (!json_object_object_get_ex(pool, "nodeSelector", &sel))
    return cfg_bad(x, p2, "is required (matchLabels: the node labels of this pool)");
  if (!json_object_is_type(sel, json_type_object))
    return cfg_bad(x, p2, "must be an object");
  static const char *const skeys[] = {"matchLabels", NULL};
  if (cfg_check_keys(x, sel, p2, skeys) < 0)
    return -1;
  snprintf(p2, sizeof p2, "%s.nodeSelector.matchLabels", path);
  if (!json_object_object_get_ex(sel, "matchLabels", labels) ||
      !json_object_is_type(*labels, json_type_object) || json_object_object_length(*labels) == 0)
    return cfg_bad(x, p2, "must be an object with at least one label");
  json_object_object_foreach(*labels, k, lv) {
    char p3[256];
    snprintf(p3, sizeof p3, "%s.%.100s", p2, k);
    if (!json_object_is_type(lv, json_type_string))
      return cfg_bad_at(x, line_of(x, lv), p3, NULL, "must be a string (quote numbers and true/false)");
    if (strlen(k) > 317 || json_object_get_string_len(lv) > 63)
      return cfg_bad_at(x, line_of(x, lv), p3, NULL, "is longer than a Kubernetes label allows");
  }
  return 0;
}

/* true when every label of `want` is on the node with that value */
static bool labels_match(json_object *want, json_object *node_labels) {
  json_object_object_foreach(want, k, v) {
    json_object *have;
    if (!node_labels || !json_object_object_get_ex(node_labels, k, &have) ||
        !json_object_is_type(have, json_type_string) ||
        strcmp(json_object_get_string(have), json_object_get_string(v)) != 0)
      return false;
  }
  return true;
}

/* The document as pool `pool` sees it: the top level with the pool's
 * sections in place of its own (shared nodes, new references). */
static json_object *merged_view(json_object *root, json_object *pool) {
  json_object *m = json_object_new_object();
  if (!m)
    return NULL;
  json_object_object_foreach(root, k, v) {
    if (!strcmp(k, "pools") || json_object_object_get_ex(pool, k, NULL))
      continue;
    if (json_object_object_add(m, k, json_object_get(v)) < 0)
      goto oom;
  }
  for (const char *const *o = g_pool_overrides; *o; o++) {
    json_object *v;
    if (json_object_object_get_ex(pool, *o, &v) &&
        json_object_object_add(m, *o, json_object_get(v)) < 0)
      goto oom;
  }
  return m;
oom:
  json_object_put(m);
  return NULL;
}

/* Validates the whole document (the top level and every pool as it would
 * apply) and fills *c for a node with `node_labels` (NULL: the top level). */
static int parse_doc(struct ctx *x, json_object *root, json_object *node_labels,
                     struct ioq_config *c) {
  if (!json_object_is_type(root, json_type_object))
    return cfg_bad(x, "(top level)", "must be an object");
  bool versioned;
  if (check_header(x, root, &versioned) < 0)
    return -1;
  c->versioned = versioned;
  json_object *pools = NULL;
  if (json_object_object_get_ex(root, "pools", &pools)) {
    if (!json_object_is_type(pools, json_type_array))
      return cfg_bad(x, "pools", "must be an array");
    if (json_object_array_length(pools) > IOQ_CONFIG_MAX_POOLS)
      return cfg_bad(x, "pools", "more than 32 entries");
  }
  if (parse_root(x, root, c) < 0)
    return -1;
  size_t n = pools ? json_object_array_length(pools) : 0, chosen = n;
  for (size_t i = 0; i < n; i++) {
    json_object *pool = json_object_array_get_idx(pools, i), *labels;
    if (check_pool(x, pool, i, &labels) < 0)
      return -1;
    json_object *m = merged_view(root, pool);
    if (!m)
      return ioq_fail(x->e, ENOMEM, "%s: out of memory for the merged view of pools[%zu]", x->src,
                      i);
    struct ctx px = {x->src, x->e, m, pool, i, x->yaml, x->err_path};
    struct ioq_config tmp;
    int rc = ioq_config_defaults(&tmp, x->e);
    if (rc == 0) {
      rc = parse_root(&px, m, &tmp);
      ioq_config_free(&tmp);
    }
    if (rc == 0 && chosen == n && node_labels && labels_match(labels, node_labels)) {
      /* first match wins: *c becomes this pool's view */
      struct ioq_config pc;
      if ((rc = ioq_config_defaults(&pc, x->e)) == 0 && (rc = parse_root(&px, m, &pc)) < 0)
        ioq_config_free(&pc);
      if (rc == 0) {
        json_object *nm;
        char def[32];
        snprintf(def, sizeof def, "pools[%zu]", i);
        const char *name =
            json_object_object_get_ex(pool, "name", &nm) ? json_object_get_string(nm) : def;
        pc.pool = strdup(name);
        if (!pc.pool) {
          ioq_config_free(&pc);
          rc = ioq_fail(x->e, ENOMEM, "%s: out of memory for the name of pools[%zu]", x->src, i);
        } else {
          free(pc.source); /* the defaults' name: the file's is kept */
          pc.source = c->source;
          c->source = NULL;
          ioq_config_free(c);
          *c = pc;
          c->pool_index = i;
          chosen = i;
        }
      }
    }
    json_object_put(m);
    if (rc < 0)
      return -1;
  }
  c->n_pools = n;
  c->versioned = versioned;
  return 0;
}

/* A JSON validation error gets the line of its field: json-c keeps no
 * positions, but JSON is YAML, so on the error path only the text is read
 * again by the YAML reader, which does. Nothing changes when that fails
 * (a duplicate key, a construct libyaml reads differently). */
static void add_json_line(struct ctx *x, const char *text, ioq_err *e) {
  size_t sl = strlen(x->src);
  if (strncmp(e->msg, x->src, sl) != 0 || strncmp(e->msg + sl, ": ", 2) != 0 ||
      !strncmp(e->msg + sl + 2, "line ", 5))
    return;
  json_object *y = NULL;
  ioq_err ye = {0};
  if (ioq_yaml_to_json(text, strlen(text), x->src, IOQ_CONFIG_MAX_NODES, &y, &ye) < 0)
    return;
  struct ctx yx = {.src = x->src, .yaml = true};
  unsigned line = path_line(&yx, y, x->err_path[0] ? x->err_path : "(top level)");
  json_object_put(y);
  if (!line)
    return;
  char msg[sizeof e->msg];
  snprintf(msg, sizeof msg, "%s: line %u: %s", x->src, line, e->msg + sl + 2);
  snprintf(e->msg, sizeof e->msg, "%s", msg);
}

/* json-c keeps the last of two equal keys and has no budget of values; YAML
 * files refuse both, and so do JSON files: the YAML reader reads the JSON
 * text first (JSON is YAML) and its tree is dropped at once, so json-c's
 * tree (the larger: 167 MB for a 4 MiB list) is only built within the
 * budget. Its other complaints are not JSON's business (json-c judges the
 * syntax; libyaml refuses a few exotic JSON texts, such as a key over 1024
 * characters, which then get no budget). */
static int json_no_duplicates(struct ctx *x, const char *text) {
  json_object *y = NULL;
  ioq_err ye = {0};
  if (ioq_yaml_to_json(text, strlen(text), x->src, IOQ_CONFIG_MAX_NODES, &y, &ye) == 0) {
    json_object_put(y);
    return 0;
  }
  if (ye.code == IOQ_EINVAL_INPUT &&
      (strstr(ye.msg, ": duplicate key: ") || strstr(ye.msg, ": more than "))) {
    *x->e = ye;
    return -1;
  }
  return 0;
}

/* YAML by the file's extension, else by content (JSON starts with '{'). */
static bool looks_like_yaml(const char *text, const char *source) {
  const char *dot = source ? strrchr(source, '.') : NULL;
  if (dot && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml")))
    return true;
  if (dot && !strcmp(dot, ".json"))
    return false;
  text += strspn(text, " \t\r\n");
  return *text != '{';
}

static int parse_json_text(struct ctx *x, const char *text, json_object **out) {
  *out = NULL;
  json_tokener *tok = json_tokener_new();
  if (!tok)
    return ioq_fail(x->e, ENOMEM, "%s: out of memory for the JSON parser", x->src);
  /* strict JSON, as the docs promise (without the flag json-c accepts
   * trailing commas); trailing whitespace is checked below to say what is
   * wrong */
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
  size_t len = strlen(text);
  json_object *root = json_tokener_parse_ex(tok, text, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t consumed = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if (!root || jerr != json_tokener_success) {
    /* report the line of the parse error */
    int line = 1;
    for (size_t i = 0; i < consumed && i < len; i++)
      if (text[i] == '\n')
        line++;
    json_object_put(root);
    return ioq_fail(x->e, IOQ_EINVAL_INPUT, "%s: line %d: invalid JSON: %s", x->src, line,
                    jerr != json_tokener_success ? json_tokener_error_desc(jerr)
                                                 : "unexpected end of input");
  }
  for (size_t i = consumed; i < len; i++)
    if (text[i] != ' ' && text[i] != '\n' && text[i] != '\t' && text[i] != '\r') {
      json_object_put(root);
      return ioq_fail(x->e, IOQ_EINVAL_INPUT, "%s: trailing data after the JSON object", x->src);
    }
  *out = root;
  return 0;
}

int ioq_config_parse_node(const char *text, const char *source, json_object *node_labels,
                          struct ioq_config *c, ioq_err *e) {
  if (ioq_config_defaults(c, e) < 0)
    return -1;
  free(c->source);
  c->source = strdup(source ? source : "(config)");
  if (!c->source) {
    ioq_config_free(c);
    return ioq_fail(e, ENOMEM, "config: out of memory for the source name");
  }
  /* the messages name the source: keep a copy that outlives *c */
  char src[256];
  snprintf(src, sizeof src, "%s", c->source);
  char err_path[ERR_PATH_MAX] = "";
  struct ctx x = {src, e, NULL, NULL, 0, looks_like_yaml(text, source), err_path};
  json_object *root = NULL;
  /* JSON: duplicates first, so the two trees never exist at once */
  int rc = x.yaml ? ioq_yaml_to_json(text, strlen(text), src, IOQ_CONFIG_MAX_NODES, &root, e)
                  : json_no_duplicates(&x, text) < 0 ? -1
                                                     : parse_json_text(&x, text, &root);
  if (rc == 0) {
    x.root = root;
    rc = parse_doc(&x, root, node_labels, c);
  }
  json_object_put(root); /* first: add_json_line builds a tree of its own */
  if (rc < 0 && !x.yaml && e && e->code == IOQ_EINVAL_INPUT)
    add_json_line(&x, text, e);
  if (rc < 0)
    ioq_config_free(c);
  return rc;
}

int ioq_config_parse(const char *text, const char *source, struct ioq_config *c, ioq_err *e) {
  return ioq_config_parse_node(text, source, NULL, c, e);
}

int ioq_config_load_node(const char *path, json_object *node_labels, struct ioq_config *c,
                         ioq_err *e) {
  if (!path)
    return ioq_config_defaults(c, e);
  char *text;
  if (ioq_read_file(path, &text, NULL, 4u << 20, e) < 0) {
    ioq_err_prefix(e, "config");
    return -1;
  }
  int rc = ioq_config_parse_node(text, path, node_labels, c, e);
  free(text);
  if (rc == 0 && !c->versioned)
    ioq_warn("config %s has no apiVersion/kind: read as %s %s; add both lines to make the "
             "version explicit", path, IOQ_CONFIG_API_VERSION, IOQ_CONFIG_KIND);
  return rc;
}

int ioq_config_load(const char *path, struct ioq_config *c, ioq_err *e) {
  return ioq_config_load_node(path, NULL, c, e);
}

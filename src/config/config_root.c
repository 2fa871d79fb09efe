// SPDX-License-Identifier: Apache-2.0
/* One config view: defaults, free, top-level fields, enforcement, monitor; then the sections. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
  c->enforcement.combined_floor = IOQ_COMBINED_FLOOR_DEFAULT;
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
  c->node_policy.ungranted_page_cache_bytes = IOQ_DEFAULT_UNGRANTED_PAGE_CACHE_BYTES;
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

int cfg_parse_root(struct ctx *x, json_object *root, struct ioq_config *c) {
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

  if (cfg_parse_devices(x, root, c) < 0)
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

  if (cfg_parse_node_policy(x, root, c) < 0)
    return -1;
  return cfg_parse_nvmet(x, root, c);
}

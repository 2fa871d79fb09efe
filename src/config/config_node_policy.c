// SPDX-License-Identifier: Apache-2.0
/* The config section nodePolicy: QoS class weights, iocost, pods without a grant. */
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

int cfg_parse_node_policy(struct ctx *x, json_object *root, struct ioq_config *c) {
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
      static const char *const ukeys[] = {"enable",       "intervalMs",     "headroomShare",
                                          "lend",         "lendReserve",    "lendSampleMs",
                                          "pageCacheBytes", "burst",        NULL};
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
          cfg_get_uint(x, ug, "lendSampleMs", "nodePolicy.ungranted.lendSampleMs", &sm, 10, 1000) < 0 ||
          cfg_get_uint(x, ug, "pageCacheBytes", "nodePolicy.ungranted.pageCacheBytes",
                       &c->node_policy.ungranted_page_cache_bytes, 0, 1ull << 50) < 0)
        return -1;
      if (c->node_policy.ungranted_page_cache_bytes &&
          c->node_policy.ungranted_page_cache_bytes < IOQ_UNGRANTED_PAGE_CACHE_MIN)
        return cfg_bad(x, "nodePolicy.ungranted.pageCacheBytes",
                       "must be 0 (not bounded) or at least 8388608 (8 MiB): below that a pod's "
                       "own program files and the pages it is writing do not fit");
      char *burst = NULL;
      if (cfg_get_string(x, ug, "burst", "nodePolicy.ungranted.burst", &burst, false) < 0)
        return -1;
      if (burst) {
        int m = -1;
        for (int k = IOQ_UG_BURST_OFF; k <= IOQ_UG_BURST_ALL; k++)
          if (strcmp(burst, ioq_ug_burst_mode_name((enum ioq_ug_burst_mode)k)) == 0)
            m = k;
        free(burst);
        if (m < 0)
          return cfg_bad(x, "nodePolicy.ungranted.burst", "must be off, annotated or all");
        c->node_policy.ungranted_burst = (enum ioq_ug_burst_mode)m;
      }
      c->node_policy.ungranted_interval_ms = (unsigned)iv;
      c->node_policy.ungranted_lend_sample_ms = (unsigned)sm;
      if (sm >= iv)
        return cfg_bad(x, "nodePolicy.ungranted.lendSampleMs",
                       "must be shorter than nodePolicy.ungranted.intervalMs: lent capacity is taken "
                       "back between passes");
    }
    if (c->node_policy.ungranted_burst != IOQ_UG_BURST_OFF && !c->node_policy.ungranted_enable)
      return cfg_bad(x, "nodePolicy.ungranted.burst",
                     "needs nodePolicy.ungranted.enable true: the burst is what pods without a "
                     "grant leave idle, decided by their bounds' pass");
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
  return 0;
}

bool ioq_config_paces(const struct ioq_config *c) {
  return c->node_policy.iocost_pace_auto || c->node_policy.iocost_pace > 0;
}

const char *ioq_ug_burst_mode_name(enum ioq_ug_burst_mode m) {
  switch (m) {
  case IOQ_UG_BURST_ANNOTATED: return "annotated";
  case IOQ_UG_BURST_ALL: return "all";
  case IOQ_UG_BURST_OFF: break;
  }
  return "off";
}

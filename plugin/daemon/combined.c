// SPDX-License-Identifier: Apache-2.0
/* Combined-direction grants: the monitor hook (combined.h). */
#include "combined.h"
#include "podtable.h"
#include "ioqos/dirsplit.h"
#include "ioqos/log.h"
#include "metrics.h"
#include "monitor.h"
#include "plugin.h"


static void resplit_one(struct plugin *p, const struct monitor_sample *s) {
  struct ioq_io_limits grant, cur, out;
  if (!podtable_get_split(p->table, s->uid, s->disk, &grant, &cur))
    return; /* released, or its init containers are unknown: not ours to split */
  /* no rates for the first interval of a pod: leave it as it is */
  bool known = s->verdict != MON_UNKNOWN && s->interval_s > 0;
  double ach[IOQ_LIMIT_KEYS] = {known ? s->rbps : -1, known ? s->wbps : -1,
                                known ? s->riops : -1, known ? s->wiops : -1};
  if (!ioq_dirsplit_limits(&grant, &cur, ach, p->cfg.enforcement.combined_floor, &out))
    return;
  bool res[IOQ_RES_COUNT] = {
      [IOQ_RES_BANDWIDTH] = out.rbps != cur.rbps || out.wbps != cur.wbps,
      [IOQ_RES_IOPS] = out.riops != cur.riops || out.wiops != cur.wiops};
  ioq_err e;
  int rc = podtable_set_split(p->table, s->uid, s->disk, &grant, &out, &e);
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (res[r] && rc != 0)
      metrics_inc_res(p->metrics, rc > 0 ? C_RESPLITS : C_RESPLIT_FAIL, (enum ioq_resource)r);
  if (rc < 0)
    ioq_warn("direction re-split not written pod=%s/%s disk=%s error=\"%s\"", s->ns, s->name,
             s->disk, e.msg);
  else if (rc > 0)
    ioq_debug("direction re-split pod=%s/%s disk=%s rbps=%llu wbps=%llu riops=%llu wiops=%llu "
              "achieved_rbps=%.0f achieved_wbps=%.0f achieved_riops=%.0f achieved_wiops=%.0f",
              s->ns, s->name, s->disk, (unsigned long long)out.rbps, (unsigned long long)out.wbps,
              (unsigned long long)out.riops, (unsigned long long)out.wiops, s->rbps, s->wbps,
              s->riops, s->wiops);
}

void combined_hook(void *ud, const struct monitor_sample *s, size_t n) {
  struct plugin *p = ud;
  for (size_t i = 0; i < n && !atomic_load(&p->stopping); i++)
    resplit_one(p, &s[i]);
}

void combined_attach(struct plugin *p) {
  if (!p->cfg.enforcement.combined_directions)
    return;
  if (!p->mon) {
    ioq_warn("enforcement.combinedDirections is set but the grant monitor is off (monitor.enable): "
             "read and write limits stay at the full grant each");
    return;
  }
  monitor_set_hook(p->mon, combined_hook, p);
  ioq_info("combined-direction grants on: read + write re-split from demand every monitor "
           "interval floor=%.3f",
           p->cfg.enforcement.combined_floor);
}

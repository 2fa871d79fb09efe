// SPDX-License-Identifier: Apache-2.0
/* The drift report (drift.h). */
#include "drift.h"
#include "podtable.h"
#include "support/events.h"
#include "base/log.h"
#include "support/metrics.h"
#include "plugin.h"
#include "state/podres.h"

#include <stdio.h>
#include <string.h>


/* "" (no line: the kernel's defaults) shown as such */
static const char *shown(const char *v) { return v[0] ? v : "(none: no limit)"; }

void drift_report(struct plugin *p, const struct podres_pod *pr, const char *uid,
                  const struct podtable_result *res) {
  char msg[900];
  size_t off = 0;
  msg[0] = 0;
  for (size_t i = 0; i < res->n_changes; i++) {
    const struct enforce_change *c = &res->changes[i];
    ioq_warn("limit drift corrected pod=%s/%s uid=%s cgroup=%s file=%s disk=%s dev=%s found=\"%s\" "
             "wrote=\"%s\"",
             pr->ns, pr->name, uid, res->cgroup, c->file, c->disk, c->dev, c->before, c->written);
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      if (c->limit[r])
        metrics_inc_res(p->metrics, C_LIMIT_DRIFT, (enum ioq_resource)r);
    if (off < sizeof msg) {
      int n = snprintf(msg + off, sizeof msg - off, "%s%s of disk %s (%s) was '%s', rewritten to '%s'",
                       i ? "; " : "", c->file, c->disk, c->dev, shown(c->before), c->written);
      off += n > 0 ? (size_t)n : 0;
    }
  }
  if (res->writes > res->n_changes)
    ioq_warn("limit drift corrected pod=%s/%s uid=%s more_files=%u", pr->ns, pr->name, uid,
             res->writes - (unsigned)res->n_changes);
  if (res->n_changes)
    events_post(p->events, pr->ns, pr->name, uid, "Warning", "IoqosLimitDrift",
                "I/O limits changed outside ioqos in cgroup %s: %s", res->cgroup, msg);
}

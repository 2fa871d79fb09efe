// SPDX-License-Identifier: Apache-2.0
/* The report of the node's disks' health changes and of selectors that give
 * no disk (log + Event on the node), and why a disk a node pool no longer
 * selects is not served. The disk states placement sees (catalog plus what
 * the pod table has allocated) are core/diskalloc.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "diskstate.h"
#include "support/events.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "probe/probe.h"
#include "plugin.h"

/* What the last report said, so each change is told once (the probe runs
 * every reconcile pass). Only the reconcile thread and startup call
 * disks_report_health, never at once. */
struct reported {
  char name[320]; /* disk name, or the selector of a fault */
  char why[320];  /* "" = healthy */
};
static struct reported *g_rep;
static size_t g_nrep;

static const struct reported *reported_find(const struct reported *r, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(r[i].name, name) == 0)
      return &r[i];
  return NULL;
}

void disks_report_health(struct plugin *p) {
  struct cat_disk *cd;
  struct ioq_select_fault *f;
  size_t n = catalog_snapshot(p->catalog, &cd);
  size_t nf = catalog_faults(p->catalog, &f);
  struct reported *now = calloc(n + nf + 1, sizeof *now);
  if (!cd || !f || !now) {
    ioq_error("disk health report failed reason=out-of-memory");
    free(cd);
    free(f);
    free(now);
    return;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++, m++) {
    /* name[320] holds any disk name */
    ioq_copy_trunc(now[m].name, sizeof now[m].name, cd[i].disk.dev.name);
    if (!cd[i].healthy)
      ioq_copy_trunc(now[m].why, sizeof now[m].why, cd[i].why[0] ? cd[i].why : "unhealthy");
    const struct reported *was = reported_find(g_rep, g_nrep, now[m].name);
    if (!cd[i].healthy && (!was || strcmp(was->why, now[m].why) != 0))
      events_post(p->events, NULL, NULL, NULL, "Warning", "IoqosDiskUnhealthy",
                  "disk %s (%u:%u): %s; its units are Unhealthy, the node's other disks keep serving",
                  cd[i].disk.dev.name, cd[i].dev.major, cd[i].dev.minor, now[m].why);
    else if (cd[i].healthy && was && was->why[0])
      events_post(p->events, NULL, NULL, NULL, "Normal", "IoqosDiskHealthy",
                  "disk %s (%u:%u) is healthy again", cd[i].disk.dev.name, cd[i].dev.major,
                  cd[i].dev.minor);
  }
  for (size_t i = 0; i < nf; i++, m++) {
    /* selector names are kept apart from disk names by a prefix */
    snprintf(now[m].name, sizeof now[m].name, "select:%s", f[i].select);
    ioq_copy_trunc(now[m].why, sizeof now[m].why, f[i].reason);
    const struct reported *was = reported_find(g_rep, g_nrep, now[m].name);
    if (!was || strcmp(was->why, now[m].why) != 0) {
      ioq_warn("disk selector gave no disk select=\"%s\" error=\"%s\"", f[i].select, f[i].reason);
      events_post(p->events, NULL, NULL, NULL, "Warning", "IoqosDiskSelectFailed",
                  "configured disk '%s' is not served: %s; the node's other disks keep serving",
                  f[i].select, f[i].reason);
    }
  }
  for (size_t i = 0; i < g_nrep; i++)
    if (!strncmp(g_rep[i].name, "select:", 7) && !reported_find(now, m, g_rep[i].name))
      ioq_info("disk selector resolves again select=\"%s\"", g_rep[i].name + 7);
  free(g_rep);
  g_rep = now;
  g_nrep = m;
  free(cd);
  free(f);
}

const char *disks_unselected_why(const struct ioq_config *c, char *buf, size_t len) {
  snprintf(buf, len, "not selected by node pool %s, in force since the node was relabelled",
           c->pool ? c->pool : "(top level)");
  return buf;
}

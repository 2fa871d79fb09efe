// SPDX-License-Identifier: Apache-2.0
/* Combined-direction grants: the monitor hook (combined.h). */
#include "combined.h"

#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "podtable.h"
#include "grant/dirsplit.h"
#include "base/log.h"
#include "support/metrics.h"
#include "monitor.h"
#include "plugin.h"


/* The damping memory of each pod grant on a disk (dirsplit.h), kept by the
 * monitor thread (the only caller) from one pass to the next: a pass's
 * samples name every monitored grant, so what a pass does not name is gone. */
struct split_mem {
  char uid[IOQ_POD_UID_MAX + 1];
  char disk[IOQ_DISK_NAME_MAX + 1];
  struct dirsplit_memory m;
};

struct combined {
  struct plugin *p;
  struct split_mem *mem, *next;
  size_t n, n_next, cap;
};

static struct dirsplit_memory *memory_of(struct combined *c, const struct monitor_sample *s) {
  struct split_mem *x = NULL;
  for (size_t i = 0; i < c->n && !x; i++)
    if (strcmp(c->mem[i].uid, s->uid) == 0 && strcmp(c->mem[i].disk, s->disk) == 0)
      x = &c->mem[i];
  if (c->n_next == c->cap)
    return NULL; /* more grants than last pass and no room: undamped this once */
  struct split_mem *y = &c->next[c->n_next++];
  if (x) {
    *y = *x;
  } else {
    memset(y, 0, sizeof *y);
    ioq_copy_trunc(y->uid, sizeof y->uid, s->uid);
    ioq_copy_trunc(y->disk, sizeof y->disk, s->disk);
  }
  return &y->m;
}

/* Room for a pass of n samples (the memory of the last pass kept). */
static void reserve(struct combined *c, size_t n) {
  if (n <= c->cap)
    return;
  struct split_mem *a = realloc(c->mem, n * sizeof *a);
  if (a)
    c->mem = a;
  struct split_mem *b = a ? realloc(c->next, n * sizeof *b) : NULL;
  if (b) {
    c->next = b;
    c->cap = n;
  } else {
    ioq_warn("direction re-split damping memory not grown reason=out-of-memory grants=%zu", n);
  }
}

static void resplit_one(struct combined *c, double floor, const struct monitor_sample *s) {
  struct plugin *p = c->p;
  struct ioq_io_limits grant, cur, out;
  if (!podtable_get_split(p->table, s->uid, s->disk, &grant, &cur))
    return; /* released, or its init containers are unknown: not ours to split */
  /* no rates for the first interval of a pod: leave it as it is */
  bool known = s->verdict != MON_UNKNOWN && s->interval_s > 0;
  double ach[IOQ_LIMIT_KEYS] = {known ? s->rbps : -1, known ? s->wbps : -1,
                                known ? s->riops : -1, known ? s->wiops : -1};
  if (!ioq_dirsplit_limits(&grant, &cur, ach, floor, memory_of(c, s), &out))
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
  struct combined *c = ud;
  double floor = plugin_cfg(c->p)->enforcement.combined_floor; /* the pool's, for the whole batch */
  reserve(c, n);
  c->n_next = 0;
  for (size_t i = 0; i < n && !atomic_load(&c->p->stopping); i++)
    resplit_one(c, floor, &s[i]);
  struct split_mem *t = c->mem;
  c->mem = c->next;
  c->next = t;
  c->n = c->n_next;
}

void combined_attach(struct plugin *p) {
  if (!p->cfg.enforcement.combined_directions)
    return;
  if (!p->mon) {
    ioq_warn("enforcement.combinedDirections is set but the grant monitor is off (monitor.enable): "
             "read and write limits stay at the full grant each");
    return;
  }
  struct combined *c = calloc(1, sizeof *c);
  if (!c) {
    ioq_error("enforcement.combinedDirections is set but its state could not be allocated "
              "(out of memory): read and write limits stay at the full grant each");
    return;
  }
  c->p = p;
  p->combined = c;
  monitor_set_hook(p->mon, combined_hook, c);
  ioq_info("combined-direction grants on: read + write re-split from demand every monitor "
           "interval floor=%.3f",
           p->cfg.enforcement.combined_floor);
}

void combined_free(struct combined *c) {
  if (!c)
    return;
  free(c->mem);
  free(c->next);
  free(c);
}

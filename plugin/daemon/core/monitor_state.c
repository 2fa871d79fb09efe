// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's tables (monitor_internal.h): one entry per granted pod
 * (a slot per grant disk) and one per managed disk, made to match the pod
 * table and the catalog in each pass; and their copy for observe/
 * (monitor_snapshot). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "base/monoclock.h"
#include "monitor_internal.h"
#include "base/grow.h"

static struct mon_pod *find_pod(struct monitor *m, const char *uid) {
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(m->pods[i].uid, uid) == 0)
      return &m->pods[i];
  return NULL;
}

struct mon_disk *mon_find_disk(struct monitor *m, const char *name) {
  for (size_t i = 0; i < m->n_disks; i++)
    if (strcmp(m->disks[i].name, name) == 0)
      return &m->disks[i];
  return NULL;
}

struct mon_pod *mon_sync_pod(struct monitor *m, const struct applied_pod *ap,
                             const struct ioq_unit_sizes *u) {
  struct mon_pod *pp = find_pod(m, ap->uid);
  if (pp && (strcmp(pp->cgroup, ap->cgroup) != 0 || pp->version != ap->version)) {
    free(pp->s); /* another cgroup: its counters are another series */
    pp->s = NULL;
    pp->n = 0;
  }
  if (!pp) {
    struct mon_pod *g = ioq_grow(m->pods, &m->cap, m->n + 1, sizeof *g, 16);
    if (!g)
      return NULL;
    m->pods = g;
    pp = &m->pods[m->n++];
    memset(pp, 0, sizeof *pp);
    ioq_copy_trunc(pp->uid, sizeof pp->uid, ap->uid); /* same-size fields: fits */
  }
  ioq_copy_trunc(pp->ns, sizeof pp->ns, ap->ns); /* same-size fields: fits */
  ioq_copy_trunc(pp->name, sizeof pp->name, ap->name); /* same-size fields: fits */
  ioq_copy_trunc(pp->cgroup, sizeof pp->cgroup, ap->cgroup); /* same-size fields: fits */
  pp->version = ap->version;
  /* slots: one per grant disk, state kept for disks that stay */
  struct mon_slot *ns = calloc(ap->grant.n ? ap->grant.n : 1, sizeof *ns);
  if (!ns)
    return NULL;
  for (size_t d = 0; d < ap->grant.n; d++) {
    const struct ioq_disk_grant *g = &ap->grant.disks[d];
    for (size_t k = 0; k < pp->n; k++)
      if (strcmp(pp->s[k].disk, g->disk) == 0 && ioq_devno_eq(pp->s[k].dev, ap->devs[d]))
        ns[d] = pp->s[k];
    ioq_copy_trunc(ns[d].disk, sizeof ns[d].disk, g->disk); /* same-size fields: fits */
    ns[d].dev = ap->devs[d];
    ioq_err e;
    if (ioq_grant_limits(g, u, &ns[d].grant, &e) < 0)
      memset(&ns[d].grant, 0, sizeof ns[d].grant); /* not enforceable either: no verdict */
  }
  free(pp->s);
  pp->s = ns;
  pp->n = ap->grant.n;
  pp->seen = true;
  return pp;
}

static struct mon_disk *use_disk(struct monitor *m, const struct cat_disk *cd) {
  struct mon_disk *d = mon_find_disk(m, cd->disk.dev.name);
  if (d && !ioq_devno_eq(d->dev, cd->dev))
    d->have_prev = false;
  if (!d) {
    if (m->n_disks == MON_DISKS)
      return NULL;
    d = &m->disks[m->n_disks++];
    memset(d, 0, sizeof *d);
    ioq_copy_trunc(d->name, sizeof d->name, cd->disk.dev.name); /* same-size fields: fits */
  }
  d->dev = cd->dev;
  /* same-size fields: fits */
  ioq_copy_trunc(d->class_name, sizeof d->class_name, cd->disk.class_name);
  d->cur.cap_bps = (double)cd->disk.capacity_bw_bytes;
  d->cur.cap_iops = (double)cd->disk.capacity_iops;
  d->seen = true;
  return d;
}

void mon_tables_start(struct monitor *m, const struct cat_disk *cd, size_t ncd) {
  for (size_t i = 0; i < m->n; i++)
    m->pods[i].seen = false;
  for (size_t i = 0; i < m->n_disks; i++)
    m->disks[i].seen = false;
  for (size_t i = 0; i < ncd; i++)
    use_disk(m, &cd[i]);
}

void mon_tables_forget(struct monitor *m) {
  size_t w = 0;
  for (size_t i = 0; i < m->n; i++) {
    if (m->pods[i].seen)
      m->pods[w++] = m->pods[i];
    else
      free(m->pods[i].s);
  }
  m->n = w;
}

/* ---- snapshot ---- */

static void copy_slot(struct monitor_snap_slot *o, const struct mon_slot *s) {
  ioq_copy_trunc(o->disk, sizeof o->disk, s->disk); /* same-size fields: fits */
  o->dev = s->dev;
  o->grant = s->grant;
  o->verdict = s->verdict;
  o->verdict_since = s->track.verdict_since;
  o->starved_since = s->track.starved_since;
  o->have_rates = s->have_rates;
  o->rates = s->rates;
  o->interval_s = s->interval_s;
  for (size_t j = 0; j < s->nhist; j++) /* oldest first */
    o->hist[j] = s->hist[(s->hnext + MONITOR_HISTORY - s->nhist + j) % MONITOR_HISTORY];
  o->nhist = s->nhist;
}

static int copy_pod(struct monitor_snap_pod *o, const struct mon_pod *pp) {
  ioq_copy_trunc(o->ns, sizeof o->ns, pp->ns); /* same-size fields: fits */
  ioq_copy_trunc(o->name, sizeof o->name, pp->name); /* same-size fields: fits */
  ioq_copy_trunc(o->uid, sizeof o->uid, pp->uid); /* same-size fields: fits */
  ioq_copy_trunc(o->cgroup, sizeof o->cgroup, pp->cgroup); /* same-size fields: fits */
  o->slots = calloc(pp->n ? pp->n : 1, sizeof *o->slots);
  if (!o->slots)
    return -1;
  for (size_t k = 0; k < pp->n; k++)
    copy_slot(&o->slots[k], &pp->s[k]);
  o->n = pp->n;
  for (size_t j = 0; j < pp->nev; j++) /* oldest first */
    o->events[j] = pp->ev[(pp->evnext + MONITOR_EVENTS - pp->nev + j) % MONITOR_EVENTS];
  o->nevents = pp->nev;
  o->events_suppressed = pp->rl.suppressed;
  return 0;
}

static void copy_disk(struct monitor_snap_disk *o, const struct mon_disk *d) {
  ioq_copy_trunc(o->name, sizeof o->name, d->name); /* same-size fields: fits */
  ioq_copy_trunc(o->class_name, sizeof o->class_name, d->class_name); /* same-size fields: fits */
  o->seen = d->seen;
  o->cur = d->cur;
  o->cont = d->cont;
  o->cause = d->cause;
  for (int v = 0; v < MON_VERDICTS; v++)
    o->verdict_s[v] = d->verdict_s[v];
}

/* everything but the pods */
static void copy_rest(struct monitor_snap *s, const struct monitor *m) {
  for (size_t i = 0; i < m->n_disks; i++)
    copy_disk(&s->disks[i], &m->disks[i]);
  s->n_disks = m->n_disks;
  s->passes = m->passes;
  s->read_fail = m->read_fail;
  s->last_pass_s = m->last_pass_s;
  s->cpu_s = m->cpu_s;
  for (int k = 0; k < MONITOR_EV_KINDS; k++) {
    s->events[k] = m->events[k];
    s->suppressed[k] = m->suppressed[k];
  }
}

struct monitor_snap *monitor_snapshot(struct monitor *m, const char *uid, ioq_err *e) {
  if (!m)
    return ioq_fail(e, IOQ_EUNSUPPORTED, "the grant monitor is off (monitor.enable: false)"), NULL;
  struct monitor_snap *s = calloc(1, sizeof *s);
  if (!s)
    return ioq_fail(e, ENOMEM, "grant monitor: out of memory copying its state"), NULL;
  pthread_mutex_lock(&m->mu);
  s->mono = ioq_mono_s();
  s->wall = wall_now();
  size_t cap = uid ? 1 : m->n;
  s->pods = calloc(cap ? cap : 1, sizeof *s->pods);
  s->disks = calloc(m->n_disks ? m->n_disks : 1, sizeof *s->disks);
  bool ok = s->pods && s->disks;
  for (size_t i = 0; ok && i < m->n; i++) {
    if (uid && strcmp(m->pods[i].uid, uid) != 0)
      continue;
    ok = copy_pod(&s->pods[s->n_pods], &m->pods[i]) == 0;
    if (ok)
      s->n_pods++;
    if (uid)
      break; /* the first with that uid, as there is one */
  }
  if (ok)
    copy_rest(s, m);
  pthread_mutex_unlock(&m->mu);
  if (!ok) {
    monitor_snapshot_free(s);
    return ioq_fail(e, ENOMEM, "grant monitor: out of memory copying its state"), NULL;
  }
  return s;
}

void monitor_snapshot_free(struct monitor_snap *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n_pods; i++)
    free(s->pods[i].slots);
  free(s->pods);
  free(s->disks);
  free(s);
}

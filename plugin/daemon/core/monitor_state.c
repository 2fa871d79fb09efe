// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's tables (monitor_internal.h): one entry per granted pod
 * (a slot per grant disk) and one per managed disk, made to match the pod
 * table and the catalog at the start of each pass. */
#include <stdlib.h>
#include <string.h>

#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "monitor_internal.h"

struct mon_pod *mon_find_pod(struct monitor *m, const char *uid) {
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

/* the pod's entry, made to match the applied pod (NULL: out of memory) */
struct mon_pod *mon_sync_pod(struct monitor *m, const struct applied_pod *ap,
                             const struct ioq_unit_sizes *u) {
  struct mon_pod *pp = mon_find_pod(m, ap->uid);
  if (pp && (strcmp(pp->cgroup, ap->cgroup) != 0 || pp->version != ap->version)) {
    free(pp->s); /* another cgroup: its counters are another series */
    pp->s = NULL;
    pp->n = 0;
  }
  if (!pp) {
    if (m->n == m->cap) {
      size_t nc = m->cap ? m->cap * 2 : 16;
      struct mon_pod *g = realloc(m->pods, nc * sizeof *g);
      if (!g)
        return NULL;
      m->pods = g;
      m->cap = nc;
    }
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

struct mon_disk *mon_use_disk(struct monitor *m, const struct cat_disk *cd) {
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

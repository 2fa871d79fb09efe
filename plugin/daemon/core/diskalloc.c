// SPDX-License-Identifier: Apache-2.0
/* The node's disks with the units the pod table holds on them: the disk
 * states placement and the node annotation see (catalog + allocated units),
 * and the disks a new node pool no longer selects, forgotten once none of
 * their units is held. */
#include "diskalloc.h"

#include <stdlib.h>
#include <string.h>

#include "state/catalog.h"
#include "state/diskstate.h"
#include "podtable.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "probe/probe.h"
#include "grant/ungranted.h"
#include "plugin.h"

size_t plugin_disk_states(struct plugin *p, struct ioq_disk_state **out) {
  struct cat_disk *cd;
  const struct ioq_config *c = plugin_cfg(p); /* one pool's share for every disk */
  size_t n = catalog_snapshot(p->catalog, &cd);
  *out = cd ? calloc(n ? n : 1, sizeof **out) : NULL;
  if (!*out) {
    free(cd);
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    struct ioq_disk_state *d = &(*out)[i];
    ioq_copy_trunc(d->name, sizeof d->name, cd[i].disk.dev.name); /* same-size fields: fits */
    ioq_devno_str(cd[i].dev, d->dev, sizeof d->dev);
    /* same-size fields: fits */
    ioq_copy_trunc(d->class_name, sizeof d->class_name, cd[i].disk.class_name);
    d->healthy = cd[i].healthy;
    if (!d->healthy)
      ioq_copy_trunc(d->reason, sizeof d->reason, cd[i].why);
    d->caps = cd[i].disk.caps;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      d->capacity[r] = cd[i].units[r];
    listview_allocated(p->table, d->name, d->allocated);
    /* the pool the ungranted pass uses: bounds apply while units are held */
    if (p->ug && d->healthy && (d->allocated[0] || d->allocated[1]))
      ioq_ug_pool(&cd[i].disk, &p->cfg.units, c->node_policy.ungranted_headroom_share, d->allocated,
                  d->ungranted_pool);
  }
  free(cd);
  return n;
}

static bool probed(const struct ioq_inventory *inv, const char *name) {
  for (size_t i = 0; i < inv->n; i++)
    if (strcmp(inv->disks[i].dev.name, name) == 0)
      return true;
  return false;
}

void disks_forget_unselected(struct plugin *p, const struct ioq_inventory *inv,
                             const struct ioq_config *c) {
  char why[160];
  struct cat_disk *cd;
  size_t n = catalog_snapshot(p->catalog, &cd);
  for (size_t i = 0; cd && i < n; i++) {
    const struct ioq_disk *d = &cd[i].disk;
    /* a healthy one is listed Unhealthy first: kubelet may be allocating its units now */
    if (cd[i].healthy || probed(inv, d->dev.name) ||
        catalog_fault_of(inv->faults, inv->n_faults, d))
      continue;
    uint64_t held[IOQ_RES_COUNT];
    listview_allocated(p->table, d->dev.name, held);
    if (held[IOQ_RES_BANDWIDTH] || held[IOQ_RES_IOPS])
      continue; /* its pods keep their grants; it goes after them */
    if (catalog_forget(p->catalog, d->dev.name))
      ioq_info("disk no longer managed disk=%s dev=%u:%u reason=\"%s, and no pod holds its units\"",
               d->dev.name, cd[i].dev.major, cd[i].dev.minor,
               disks_unselected_why(c, why, sizeof why));
  }
  free(cd);
}

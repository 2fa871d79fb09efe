/* The node's disks as placement sees them: catalog (units, health, caps) plus
 * what the enforcer has allocated. One builder for GetPreferredAllocation and
 * the node annotation, so both describe the disks the same way. */
#include <stdlib.h>

#include "ioqos/fsutil.h"
#include "ioqos/ungranted.h"
#include "plugin.h"

size_t plugin_disk_states(struct plugin *p, struct ioq_disk_state **out) {
  struct cat_disk *cd;
  size_t n = catalog_snapshot(p->catalog, &cd);
  *out = cd ? calloc(n ? n : 1, sizeof **out) : NULL;
  if (!*out) {
    free(cd);
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    struct ioq_disk_state *d = &(*out)[i];
    ioq_copy(d->name, sizeof d->name, cd[i].disk.dev.name);
    ioq_devno_str(cd[i].dev, d->dev, sizeof d->dev);
    ioq_copy(d->class_name, sizeof d->class_name, cd[i].disk.class_name);
    d->healthy = cd[i].healthy;
    d->caps = cd[i].disk.caps;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      d->capacity[r] = cd[i].units[r];
    enforcer_allocated(p->enf, d->name, d->allocated);
    /* the pool the ungranted pass uses: bounds apply while units are held */
    if (p->ug && d->healthy && (d->allocated[0] || d->allocated[1]))
      ioq_ug_pool(&cd[i].disk, &p->cfg.units, p->cfg.node_policy.ungranted_headroom_share, d->allocated,
                  d->ungranted_pool);
  }
  free(cd);
  return n;
}

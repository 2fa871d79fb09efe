// SPDX-License-Identifier: Apache-2.0
/* Node inventory: managed disks resolved from the config, their kernel
 * capabilities and their capacity. Used by `ioqosctl probe` and by the
 * plugin daemon before it advertises anything: a disk that cannot be
 * enforced advertises no units and says why. */
#ifndef IOQOS_PROBE_H
#define IOQOS_PROBE_H

#include "config/config.h"
#include "probe/disk.h"
#include "base/error.h"
#include "cgroup/caps.h" /* IOQ_CAP_* */

struct ioq_probe_opts {
  struct ioq_roots roots;
  /* cgroup whose io files show what pods get (kubepods); NULL = look for
   * kubepods.slice or kubepods under the io root */
  const char *kubepods_dir;
};
void ioq_probe_opts_default(struct ioq_probe_opts *o);

/* Resolves one selector (disk name, /dev path, mount point or directory,
 * MAJ:MIN) to a managed disk: d->dev, d->leaves, d->resolution,
 * d->throttle_note. */
IOQ_MUST_CHECK
int ioq_disk_resolve(const struct ioq_roots *roots, const char *selector, struct ioq_disk *d,
                     ioq_err *e);

/* Probes capabilities for every disk of the inventory (inv->layout must be
 * set). */
IOQ_MUST_CHECK
int ioq_probe_capabilities(const struct ioq_probe_opts *o, struct ioq_inventory *inv, ioq_err *e);

/* Builds the inventory: layout detection, disk resolution (config devices,
 * or the disk behind cfg->kubelet_root), capabilities, capacity. Errors are
 * kept to what they concern: a selector that does not resolve (or reaches a
 * disk an earlier selector took) goes to inv->faults with the reason, a
 * disk whose capacity source is broken (corrupt calibration entry, bad
 * io.cost.model line) gets d->fault and no units; the other disks are
 * unaffected. Only node-wide failures (no cgroup io hierarchy, OOM) fail the
 * whole build. */
IOQ_MUST_CHECK
int ioq_inventory_build(const struct ioq_config *cfg, const struct ioq_probe_opts *o,
                        struct ioq_inventory *inv, ioq_err *e);
void ioq_inventory_free(struct ioq_inventory *inv);

/* Finds a disk of the inventory by name (NULL if none). */
struct ioq_disk *ioq_inventory_find(struct ioq_inventory *inv, const char *name);

#endif

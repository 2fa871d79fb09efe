// SPDX-License-Identifier: Apache-2.0
/* diskalloc.c: the node's disks with the units the pod table holds on them. */
#ifndef IOQOS_PLUGIN_DISKALLOC_H
#define IOQOS_PLUGIN_DISKALLOC_H

#include <stddef.h>

struct plugin;
struct ioq_config;
struct ioq_disk_state;
struct ioq_inventory;
/* The disks with units, health, capabilities and allocated units, for the
 * placement function and the node annotation. *out is malloc'd (NULL and 0
 * when out of memory). */
size_t plugin_disk_states(struct plugin *p, struct ioq_disk_state **out);
/* After the node moved to another pool (nodepool.c), before the catalog
 * takes the probe `inv` of the pool in force: the disks it no longer selects
 * (not probed, no selector fault) leave the catalog once they are already
 * listed Unhealthy (kubelet allocates none of their units any more) and no
 * pod holds their units, as a restart would drop them. The others stay,
 * Unhealthy, until a later probe. Reconcile thread only. */
void disks_forget_unselected(struct plugin *p, const struct ioq_inventory *inv,
                             const struct ioq_config *c);

#endif

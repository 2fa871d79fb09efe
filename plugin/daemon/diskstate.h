// SPDX-License-Identifier: Apache-2.0
/* diskstate.c: the disks as the placement function, the node annotation and Events see them. */
#ifndef IOQOS_PLUGIN_DISKSTATE_H
#define IOQOS_PLUGIN_DISKSTATE_H

#include <stddef.h>

struct plugin;
struct ioq_disk_state;
/* The disks with units, health, capabilities and allocated units, for the
 * placement function and the node annotation. *out is malloc'd (NULL and 0
 * when out of memory). */
size_t plugin_disk_states(struct plugin *p, struct ioq_disk_state **out);
/* After a probe: tells each change of a disk's health or reason, and each
 * configured selector that gives no disk, once (log + Event on the node). */
void disks_report_health(struct plugin *p);

#endif

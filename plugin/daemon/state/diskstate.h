// SPDX-License-Identifier: Apache-2.0
/* diskstate.c: the disks' health as Events tell it; why an unselected disk is not served. */
#ifndef IOQOS_PLUGIN_DISKSTATE_H
#define IOQOS_PLUGIN_DISKSTATE_H

#include <stddef.h>

struct plugin;
struct ioq_config;
struct ioq_disk_state;
struct ioq_inventory;
/* After a probe: tells each change of a disk's health or reason, and each
 * configured selector that gives no disk, once (log + Event on the node). */
void disks_report_health(struct plugin *p);
/* Why a disk the node pool in force no longer selects is not served (the
 * catalog's reason; disks_forget_unselected, core/diskalloc.h): written
 * into buf. */
const char *disks_unselected_why(const struct ioq_config *c, char *buf, size_t len);

#endif

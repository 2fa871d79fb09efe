// SPDX-License-Identifier: Apache-2.0
/* nodepolicy.c: config nodePolicy (iocost, QoS-class weights). */
#ifndef IOQOS_PLUGIN_NODEPOLICY_H
#define IOQOS_PLUGIN_NODEPOLICY_H

#include "config/config.h"
#include "probe/probe.h"

struct plugin;

/* Applies the policy of c (the config in force, plugin_cfg) to the disks of
 * `inv`; returns how many kernel files it changed (the probe then sees e.g.
 * iocost enabled). Failures are logged and counted, never fatal: the
 * policy is an opt-in extra. */
unsigned nodepolicy_apply(struct plugin *p, const struct ioq_config *c,
                          const struct ioq_inventory *inv);

#endif

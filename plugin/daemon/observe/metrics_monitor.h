// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's /metrics families (metrics_text.c), read through
 * monitor_snapshot (core/monitor.h). */
#ifndef IOQOS_PLUGIN_METRICS_MONITOR_H
#define IOQOS_PLUGIN_METRICS_MONITOR_H

#include <stdio.h>

struct plugin;

/* Writes the grant monitor's families (docs/operations.md): nothing when the
 * monitor is off (p->mon NULL). */
void metrics_monitor(FILE *f, struct plugin *p);

#endif

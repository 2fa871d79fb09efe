// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's /metrics families (metrics_text.c). */
#ifndef IOQOS_PLUGIN_METRICS_MONITOR_H
#define IOQOS_PLUGIN_METRICS_MONITOR_H

#include <stdio.h>

struct monitor;

/* Writes the ioqos_monitor_* families (docs/operations.md). NULL-safe
 * (writes nothing). */
void monitor_metrics(struct monitor *m, FILE *f);

#endif

// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's part of `ioqosctl explain` (explain.c), read through
 * monitor_snapshot (core/monitor.h). */
#ifndef IOQOS_PLUGIN_EXPLAIN_MONITOR_H
#define IOQOS_PLUGIN_EXPLAIN_MONITOR_H

#include "base/error.h"

struct plugin;
struct json_object;

/* The pod's monitor view for `ioqosctl explain` (item 5): per disk the last
 * sample, the verdict and since when, the recent history, the Events raised.
 * NULL + *e when the monitor is off (p->mon NULL) or the pod is not
 * monitored. */
struct json_object *explain_monitor_pod(struct plugin *p, const char *uid, ioq_err *e);

#endif

// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's part of `ioqosctl explain` (explain.c). */
#ifndef IOQOS_PLUGIN_EXPLAIN_MONITOR_H
#define IOQOS_PLUGIN_EXPLAIN_MONITOR_H

#include "base/error.h"

struct monitor;

/* The pod's monitor view for `ioqosctl explain` (item 5): per disk the last
 * sample, the verdict and since when, the recent history, the Events raised.
 * NULL + *e when the pod is not monitored. */
struct json_object;
struct json_object *monitor_pod_json(struct monitor *m, const char *uid, ioq_err *e);

#endif

// SPDX-License-Identifier: Apache-2.0
/* The drift report: a reconcile pass rewrote limits of a pod whose grant
 * and cgroup it already knew (someone else changed them; ioqos's own
 * combined-direction re-split is the pod table's desired state, so it is not
 * drift). Each file is logged with the device, what was there and what ioqos
 * wrote back; limits count in ioqos_limit_drift_total{resource}; the pod
 * gets a Warning Event IoqosLimitDrift (events.c: the same message is not
 * repeated within a minute). */
#ifndef IOQOS_PLUGIN_DRIFT_H
#define IOQOS_PLUGIN_DRIFT_H

#include "podtable.h"
#include "state/podres.h"

struct plugin;

/* Called by reconcile for a known pod, same grant, files written. */
void drift_report(struct plugin *p, const struct podres_pod *pr, const char *uid,
                  const struct podtable_result *res);

#endif

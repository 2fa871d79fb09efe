// SPDX-License-Identifier: Apache-2.0
/* A pod's grant from the unit IDs kubelet lists for its containers plus
 * the units of a regular init container about to start (which kubelet does
 * not list): the containers are put in pod spec order with their kinds from
 * the API object (a name the object does not know counts as an app
 * container) and ioq_grant_compute (grant.h) gives the pod-level totals per
 * disk. Pure functions. */
#ifndef IOQOS_PLUGIN_PODGRANT_H
#define IOQOS_PLUGIN_PODGRANT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "grant/grant.h"
#include "state/podcache.h"
#include "state/podres.h"

/* pi may be NULL (every listed container an app container); init_ids (n_init
 * of them, may be 0) go after every sidecar, before the app containers. */
int podgrant_compute(const struct podres_pod *pr, const struct pod_info *pi,
                     char *const *init_ids, size_t n_init, struct ioq_pod_grant *g, ioq_err *e);
/* true if two grants give the same units on the same disks */
bool podgrant_eq(const struct ioq_pod_grant *a, const struct ioq_pod_grant *b);

#endif

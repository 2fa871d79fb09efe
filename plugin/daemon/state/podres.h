// SPDX-License-Identifier: Apache-2.0
/* Client of kubelet's pod resources API (v1 List): which pod holds which
 * ioqos unit IDs. kubelet names pods by namespace + name only (no UID), and
 * lists a pod's IDs as soon as admission allocated them, before its sandbox
 * or containers exist. Every listed pod is kept, also one without ioqos IDs
 * (n_ctrs 0): being listed means kubelet runs it, and a regular init
 * container's units are never listed (see podres_find_ids). */
#ifndef IOQOS_PLUGIN_PODRES_H
#define IOQOS_PLUGIN_PODRES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "units/units.h"

#define PODRES_NAME_MAX 253

struct podres_ctr {
  char name[PODRES_NAME_MAX + 1];
  char **ids; /* ioqos unit IDs of both resources, as kubelet reports them */
  size_t n_ids;
};

struct podres_pod {
  char ns[PODRES_NAME_MAX + 1];
  char name[PODRES_NAME_MAX + 1];
  struct podres_ctr *ctrs;
  size_t n_ctrs;
};

struct podres_list {
  struct podres_pod *pods;
  size_t n;
  double asked_at; /* CLOCK_MONOTONIC seconds when List was called */
};

/* Calls List on the socket (bounded by timeout_ms). */
int podres_list(const char *socket, long timeout_ms, struct podres_list *out, ioq_err *e);
void podres_list_free(struct podres_list *l);
/* Frees one pod's containers (for removing a pod from a list). */
void podres_pod_free(struct podres_pod *p);

/* The pod holding the most of `ids` (NULL if no pod holds any). A
 * PreStart for a regular init container may carry IDs no listed container
 * has: kubelet lists sidecars and app containers only, and hands an init
 * container's units on to the app containers when they start. *missing (may
 * be NULL) gets how many of ids the pod does not hold. */
const struct podres_pod *podres_find_ids(const struct podres_list *l, char *const *ids, size_t n,
                                         size_t *missing);
/* true if any container of the pod holds id */
bool podres_pod_has(const struct podres_pod *p, const char *id);
/* The pod by namespace/name (NULL if none). */
const struct podres_pod *podres_find_pod(const struct podres_list *l, const char *ns,
                                         const char *name);
/* Number of IDs of resource r the pod holds on all disks (distinct IDs). */
size_t podres_pod_count(const struct podres_pod *p, enum ioq_resource r);

#endif

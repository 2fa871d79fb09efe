// SPDX-License-Identifier: Apache-2.0
/* The part of `ioqosctl explain` about pods without a grant (explain.c),
 * read through ungranted_pod_view (core/ungranted.h). */
#ifndef IOQOS_PLUGIN_EXPLAIN_UNGRANTED_H
#define IOQOS_PLUGIN_EXPLAIN_UNGRANTED_H

struct ungranted;
struct json_object;

/* The pod (by UID) as the ungranted bounds see it, per disk: whether bounds
 * apply, the pool and its parts, the pod's cap in place, its measured rate
 * and what a granted pod lends. {} for NULL u; NULL when out of memory. */
struct json_object *explain_ungranted_pod(struct ungranted *u, const char *uid);

#endif

// SPDX-License-Identifier: Apache-2.0
/* `ioqosctl explain`: everything the plugin knows about one pod, as one JSON
 * document, served on the local socket (httpd.c, GET /v1/explain).
 *
 * What it gathers, without writing anything: the pod (this node's pod
 * cache; never a GET, which could bring in another node's pod), its units per container and resource (a fresh pod resources List),
 * per disk the grant, the io.max values it makes and why that disk (the pod's
 * class and ioqos.io/disk annotation, the placement policy, and the
 * preferred-allocation decision when this plugin made one for the pod), the
 * pod cgroup and how it is found (QoS class, driver, derived path or search),
 * each kernel file of the grant with the value written, read back and when
 * (the pod table's record), the grant monitor's view, the pod's recent Events
 * (events.c), and the node policy that holds a pod without a grant
 * (nodePolicy weights, the ungranted pool and the pod's bound on each disk).
 * Field reference: docs/operations.md "Explaining a pod". */
#ifndef IOQOS_PLUGIN_EXPLAIN_H
#define IOQOS_PLUGIN_EXPLAIN_H

#include <stddef.h>

#include "units/units.h"

struct plugin;
struct explain;

/* The largest document served; a pod whose explanation would be larger
 * (not possible with the bounds below, kept as a guard) gets a 500. */
#define EXPLAIN_BODY_MAX (256 * 1024)
/* Events listed per pod. */
#define EXPLAIN_EVENTS_MAX 10
/* Answers GET /v1/explain: exactly one of pod ("NAMESPACE/NAME") or uid is
 * non-NULL. Returns the HTTP status; *body (malloc'd, NULL only when out of
 * memory) is the JSON document, or {"error": "..."} for 400/404/500. */
unsigned explain_handle(struct plugin *p, const char *pod, const char *uid, char **body);

/* GET /v1/nvmet on the explain socket (`ioqosctl explain --nvmet`): the
 * NVMe-oF namespaces' state (nvmetns_state), its namespaces narrowed to
 * `filter` ("NQN" or "NQN/NSID", NULL = all). Returns the HTTP status; *body
 * is malloc'd JSON ({"error": ...} when not 200). */
unsigned explain_nvmet(struct plugin *p, const char *filter, char **body);

/* A JSON error answer of the explain socket: *body = {"error": "..."}
 * (malloc'd; NULL on OOM, which the caller answers without a body).
 * Returns status. */
unsigned explain_error_body(unsigned status, char **body, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

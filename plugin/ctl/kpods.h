// SPDX-License-Identifier: Apache-2.0
/* kubectl ioqos pods: the ioqos pods (those requesting ioqos/bandwidth or
 * ioqos/iops, by the one request rule of src/grant/podneed.c) with their grant and
 * disk, as table rows and JSON entries.
 *
 * Where the disk comes from, in order: the pod annotation ioqos.io/disk (the
 * extender's bind writes it; a user may); else the node annotation, when the
 * pod's class (ioqos.io/class) has exactly one disk there; else unknown. The
 * grant's state comes from the node annotation's `pods` (UIDs whose units
 * kubelet has allocated on that node): "held", else "not reported yet"
 * (kubelet has not admitted it, or the plugin's next pass has not run).
 */
#ifndef IOQOSCTL_KPODS_H
#define IOQOSCTL_KPODS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "grant/podneed.h"
#include "knodes.h"
#include "ktable.h"

#define CTL_PODS_COLS 9
/* NAMESPACE NAME NODE PHASE BANDWIDTH IOPS CLASS DISK GRANT */
extern const char *const ctl_pods_headers[CTL_PODS_COLS];

/* The members of a Pod the listing reads: everything ioq_pod_need_from_json
 * reads, spec.nodeName and status.phase. */
extern const struct ioq_jf_rule ctl_pod_rules[];
#define CTL_POD_COST_MAX (256u << 10)

struct ctl_pod {
  struct ioq_pod_need need;
  char node[IOQ_NODE_NAME_MAX + 1]; /* spec.nodeName, "" = not scheduled */
  char phase[32];
  char error[512]; /* the pod's ioqos requests are invalid: why ("" = fine) */
};

/* Decodes a (filtered) Pod. Returns 1 for an ioqos pod (out filled; an
 * invalid request is an ioqos pod with error set), 0 for any other pod, -1
 * for a Pod without metadata.name. */
int ctl_pod_from_json(json_object *pod, bool truncated, struct ctl_pod *out, ioq_err *e);

/* How the node's state reaches a pod row. */
enum ctl_node_view {
  CTL_VIEW_NODE,        /* node: its decoded annotation */
  CTL_VIEW_NOT_FOUND,   /* the node list has no such node */
  CTL_VIEW_NO_ACCESS,   /* the user may not list nodes */
};

/* Appends the pod's row to t and its entry to arr (either may be NULL).
 * node: the pod's node when view is CTL_VIEW_NODE, else NULL. -1 on OOM. */
int ctl_pod_render(const struct ctl_pod *p, enum ctl_node_view view, const struct ctl_node *node,
                   struct ctl_table *t, json_object *arr);

#endif

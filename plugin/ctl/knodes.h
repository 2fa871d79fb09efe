// SPDX-License-Identifier: Apache-2.0
/* kubectl ioqos nodes: what one Node's `ioqos.io/devices` annotation says,
 * as table rows (one per disk) and a JSON entry. The annotation is read by
 * the one codec (src/grant/nodeanno.c), never by hand. A node without the
 * annotation is one row "no ioqos plugin"; an annotation the codec rejects
 * is one row naming the codec's error (the listing goes on); an annotation
 * older than CTL_ANNO_STALE_S is marked stale (its plugin stopped
 * refreshing it: the extender's default --annotation-max-age).
 */
#ifndef IOQOSCTL_KNODES_H
#define IOQOSCTL_KNODES_H

#include <json-c/json.h>
#include <stdint.h>

#include "base/error.h"
#include "grant/nodeanno.h"
#include "kube/kube_jfilter.h"
#include "ktable.h"

#define CTL_ANNO_STALE_S 900
#define CTL_NODES_COLS 12
/* NODE DISK CLASS HEALTHY BW-CAP BW-ALLOC BW-FREE IOPS-CAP IOPS-ALLOC
 * IOPS-FREE PUBLISHED REASON */
extern const char *const ctl_nodes_headers[CTL_NODES_COLS];

/* The members of a Node the listing reads (name, the annotation). */
extern const struct ioq_jf_rule ctl_node_rules[];
/* what one Node may keep of those (annotations are at most 256 KiB) */
#define CTL_NODE_COST_MAX (640u << 10)

enum ctl_node_kind { CTL_NODE_OK, CTL_NODE_NO_PLUGIN, CTL_NODE_INVALID };

/* One node's annotation, decoded. */
struct ctl_node {
  char name[IOQ_NODE_NAME_MAX + 1];
  enum ctl_node_kind kind;
  char error[IOQ_ERR_MSG_MAX]; /* CTL_NODE_INVALID: why */
  struct ioq_node_state st;    /* CTL_NODE_OK */
};

/* Decodes a (filtered) Node object; truncated: the filter cut it (the
 * annotation is then reported as too large). -1 only for a Node without a
 * name. Free with ctl_node_free. */
int ctl_node_from_json(json_object *node, bool truncated, struct ctl_node *out, ioq_err *e);
void ctl_node_free(struct ctl_node *n);

/* Appends the node's rows to t (CTL_NODES_COLS columns) and its entry to
 * the JSON array arr (either may be NULL); now: unix seconds, for ages.
 * -1 on OOM. */
int ctl_node_render(const struct ctl_node *n, int64_t now, struct ctl_table *t, json_object *arr);

#endif

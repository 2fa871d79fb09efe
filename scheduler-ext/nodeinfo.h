// SPDX-License-Identifier: Apache-2.0
/* One node as the extender sees it: its name and the ioqos state parsed from
 * its `ioqos.io/devices` annotation, or why that state is unusable. Built from
 * a Node JSON object, either one kube-scheduler sent (full-node mode) or one
 * the node cache received from the API server. */
#ifndef IOQOS_EXT_NODEINFO_H
#define IOQOS_EXT_NODEINFO_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/error.h"
#include "grant/nodeanno.h"

enum ext_node_status {
  EXT_NODE_OK = 0,
  EXT_NODE_NO_ANNOTATION, /* the plugin has not published (yet) */
  EXT_NODE_MALFORMED,     /* the annotation does not parse */
};

struct ext_nodeinfo {
  char name[IOQ_NODE_NAME_MAX + 1];
  enum ext_node_status status;
  struct ioq_node_state st; /* valid when status == EXT_NODE_OK */
  char *error;              /* why not OK (malloc'd), else NULL */
  char *anno;               /* raw annotation text (malloc'd) or NULL */
  /* st.pods: UIDs of the pods the plugin counts in `allocated`; an assumed
   * placement of one of them has been reported */
};

/* Fills *out from a Node object. Fails (-1) only if the object is not a Node
 * (not an object, no metadata.name); a missing or malformed annotation is a
 * node status, not a failure. */
int ext_nodeinfo_from_json(json_object *node, struct ext_nodeinfo *out, ioq_err *e);

/* Same, from the annotation text alone (NULL = no annotation). */
void ext_nodeinfo_from_anno(const char *name, const char *anno, size_t len,
                            struct ext_nodeinfo *out);

void ext_nodeinfo_free(struct ext_nodeinfo *ni);

/* The node's metadata.name, or NULL. */
const char *ext_node_name(json_object *node);

/* The annotation value (and its length), or NULL if absent. -1 if the node's
 * metadata.annotations has the wrong type, with the reason in *e. */
int ext_node_annotation(json_object *node, const char **text, size_t *len, ioq_err *e);

#endif

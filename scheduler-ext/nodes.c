// SPDX-License-Identifier: Apache-2.0
/* Resolving the node set of a filter/prioritize request.
 *
 * Full-node mode reads the Node objects in the request body, but a request
 * body never changes shared state: anyone who can reach the port could send
 * a Node whose annotation lists pods and so drop their assumed placements.
 * Placements are confirmed only from the node cache (list+watch of the API
 * server), and bind, which makes them, needs that cache anyway. */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "extender.h"

int ext_nodes_resolve(struct extender *x, const struct ext_args *a, enum ext_verb verb,
                      struct ext_nodes *out, struct ext_reply *r) {
  memset(out, 0, sizeof *out);
  out->x = x;
  out->a = a;
  if (a->names_mode) {
    if (!x->cache) {
      ext_reply_error(r, verb == EXT_VERB_FILTER ? 200 : 400,
                      "ioqos extender has no node cache (it runs without Kubernetes API access): "
                      "configure it with nodeCacheCapable: false, or give it API access");
      return -1;
    }
    if (!ext_nodecache_synced(x->cache)) {
      ext_reply_error(r, verb == EXT_VERB_FILTER ? 200 : 503,
                      "ioqos extender node cache is not synced yet (first node list pending)");
      return -1;
    }
    ext_nodecache_rdlock(x->cache);
    out->locked = true;
    return 0;
  }
  out->parsed = calloc(a->n ? a->n : 1, sizeof *out->parsed);
  if (!out->parsed) {
    ext_reply_error(r, 500, "ioqos extender out of memory building the node list");
    return -1;
  }
  for (size_t i = 0; i < a->n; i++) {
    ioq_err e = {0};
    if (ext_nodeinfo_from_json(ext_args_node(a, i), &out->parsed[i], &e) < 0) {
      ext_reply_error(r, 400, "Nodes.items[%zu]: %s", i, e.msg);
      ext_metrics_reject(x->metrics, EXT_REJECT_BAD_REQUEST);
      ext_nodes_release(out);
      return -1;
    }
  }
  return 0;
}

const char *ext_nodes_name(const struct ext_nodes *ns, size_t i) {
  return ns->a->names_mode ? ext_args_name(ns->a, i) : ns->parsed[i].name;
}

const struct ext_nodeinfo *ext_nodes_info(const struct ext_nodes *ns, size_t i) {
  if (ns->a->names_mode)
    return ext_nodecache_find(ns->x->cache, ext_args_name(ns->a, i));
  return &ns->parsed[i];
}

void ext_nodes_release(struct ext_nodes *ns) {
  if (ns->locked)
    ext_nodecache_unlock(ns->x->cache);
  ns->locked = false;
  if (ns->parsed) {
    for (size_t i = 0; i < ns->a->n; i++)
      ext_nodeinfo_free(&ns->parsed[i]);
    free(ns->parsed);
    ns->parsed = NULL;
  }
}

// SPDX-License-Identifier: Apache-2.0
/* The extender's verbs and the state they share. Each verb takes the parsed
 * request body and fills a reply; none of them fails without a reply. */
#ifndef IOQOS_EXT_EXTENDER_H
#define IOQOS_EXT_EXTENDER_H

#include <json-c/json.h>

#include "assumed.h"
#include "body.h"
#include "config/config.h"
#include "kube/kube.h"
#include "metrics.h"
#include "nodecache.h"
#include "reply.h"

struct ext_podsync;
struct extender {
  enum ioq_policy policy;
  struct ext_metrics *metrics;
  struct ext_assumed *assumed;
  struct ext_nodecache *cache; /* NULL: no node cache (full-node mode only) */
  struct ioq_kube *kube;       /* NULL: no API access (no bind) */
  struct ext_budget *budget;   /* parse memory of request bodies and bind's pod GET */
  struct ext_podsync *sync;    /* NULL: no assumed placement sync (no node cache) */
  const char *const *scheduler_names; /* bind serves pods whose spec.schedulerName is one */
  size_t n_scheduler_names;
};

/* POST /filter: ExtenderArgs -> ExtenderFilterResult */
void ext_filter(struct extender *x, json_object *args, struct ext_reply *r);
/* POST /prioritize: ExtenderArgs -> HostPriorityList */
void ext_prioritize(struct extender *x, json_object *args, struct ext_reply *r);
/* POST /bind: ExtenderBindingArgs -> ExtenderBindingResult */
void ext_bind(struct extender *x, json_object *args, struct ext_reply *r);

/* The node set of a request, resolved: names mode reads the node cache
 * (read-locked until ext_nodes_release), full mode parses every Node object.
 * Returns 0, or -1 with the reply already filled (bad input, no cache). */
struct ext_args;
struct ext_nodes {
  struct extender *x;
  const struct ext_args *a;
  bool locked;
  struct ext_nodeinfo *parsed; /* full mode: one per item */
};
int ext_nodes_resolve(struct extender *x, const struct ext_args *a, enum ext_verb verb,
                      struct ext_nodes *out, struct ext_reply *r);
/* name and info (NULL = unknown) of node i */
const char *ext_nodes_name(const struct ext_nodes *ns, size_t i);
const struct ext_nodeinfo *ext_nodes_info(const struct ext_nodes *ns, size_t i);
void ext_nodes_release(struct ext_nodes *ns);

#endif

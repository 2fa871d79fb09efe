// SPDX-License-Identifier: Apache-2.0
/* Node pools (config pools[], docs/configuration.md): one DaemonSet serves
 * nodes with different disks; the Node's labels pick the pool, at start and
 * whenever they change (the Node is watched).
 *
 * Threads: nodepool_select runs at start, before any other thread; after
 * nodepool_watch everything here is the watch thread's (its callback), until
 * nodepool_stop. Other threads see only p->live, an atomic pointer to one
 * of the configs below, each complete before it is published and kept until
 * nodepool_free: a pass that took it reads one pool's settings throughout. */
#include "nodepool.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/events.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "state/nodewatch.h"
#include "plugin.h"
#include "poolswitch.h"
#include "reconcile.h"

#define TOP IOQ_CONFIG_MAX_POOLS /* the slot of the top level */
#define LABELS_TEXT_MAX 1024

struct nodepool {
  struct plugin *p;
  char *path; /* the config file */
  char *text; /* its text as read at start */
  /* the config of each pool the node has been in ([TOP]: the top level),
   * parsed when the node first moves there; owned[] unless it is the one
   * selected at start, which is struct plugin's cfg */
  struct ioq_config *by_slot[IOQ_CONFIG_MAX_POOLS + 1];
  bool owned[IOQ_CONFIG_MAX_POOLS + 1];
  size_t cur;          /* the slot in force */
  size_t want;         /* the slot the labels select (cur, or one that needs a restart) */
  json_object *labels; /* the labels last seen; NULL = none */
  struct nodewatch *w;
};

static size_t slot_of(const struct ioq_config *c) { return c->pool ? c->pool_index : TOP; }

/* ---- at start ---- */

/* The Node's labels (a new reference; NULL when it has none). */
static int node_labels(struct ioq_kube *k, const char *node, json_object **out, ioq_err *e) {
  char path[512];
  /* the node name was checked as a DNS-1123 subdomain: safe in a path */
  snprintf(path, sizeof path, "/api/v1/nodes/%s", node);
  json_object *obj = NULL, *meta, *labels = NULL;
  *out = NULL;
  if (ioq_kube_get_json(k, path, &obj, NULL, e) < 0)
    return -1;
  if (json_object_object_get_ex(obj, "metadata", &meta))
    json_object_object_get_ex(meta, "labels", &labels);
  if (labels && !json_object_is_type(labels, json_type_object)) {
    json_object_put(obj);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "GET %s: metadata.labels is not an object", path);
  }
  *out = json_object_get(labels); /* outlives obj */
  json_object_put(obj);
  return 0;
}

static void np_free(struct nodepool *np) {
  for (size_t i = 0; i <= TOP; i++)
    if (np->owned[i]) {
      ioq_config_free(np->by_slot[i]);
      free(np->by_slot[i]);
    }
  json_object_put(np->labels);
  free(np->text);
  free(np->path);
  free(np);
}

int nodepool_select(struct ioq_kube *k, const char *node, const char *config_path,
                    struct ioq_config *cfg, struct nodepool **out, ioq_err *e) {
  *out = NULL;
  if (!cfg->n_pools)
    return 0; /* no pools: the node's labels do not matter, no GET */
  struct nodepool *np = calloc(1, sizeof *np);
  if (!np || !(np->path = strdup(config_path))) {
    free(np);
    return ioq_fail(e, ENOMEM, "config %s has pools: out of memory", config_path);
  }
  struct ioq_config c;
  if (ioq_read_file(config_path, &np->text, NULL, 4u << 20, e) < 0) {
    ioq_err_prefix(e, "config");
    np_free(np);
    return -1;
  }
  if (node_labels(k, node, &np->labels, e) < 0) {
    ioq_err_prefix(e, "config %s has pools: reading the labels of node %s", config_path, node);
    np_free(np);
    return -1;
  }
  if (ioq_config_parse_node(np->text, config_path, np->labels, &c, e) < 0) {
    np_free(np);
    return -1;
  }
  ioq_config_free(cfg);
  *cfg = c;
  np->cur = np->want = slot_of(cfg);
  np->by_slot[np->cur] = cfg; /* struct plugin's: not owned */
  if (cfg->pool)
    ioq_info("config pool selected by the labels of the node pool=%s node=%s pools=%zu", cfg->pool,
             node, cfg->n_pools);
  else
    ioq_info("config: no pool matches the labels of node %s (%zu pools): the top level applies",
             node, cfg->n_pools);
  *out = np;
  return 0;
}

/* ---- a relabel ---- */

static bool no_labels(json_object *l) { return !l || json_object_object_length(l) == 0; }

static bool same_labels(json_object *a, json_object *b) {
  return no_labels(a) ? no_labels(b) : !no_labels(b) && json_object_equal(a, b);
}

/* The config of next's slot: next itself, moved into the slot the first
 * time, else the one kept there (next is freed either way). NULL on OOM. */
static const struct ioq_config *keep(struct nodepool *np, struct ioq_config *next) {
  size_t s = slot_of(next);
  if (np->by_slot[s]) {
    ioq_config_free(next);
    return np->by_slot[s];
  }
  struct ioq_config *c = malloc(sizeof *c);
  if (!c) {
    ioq_config_free(next);
    return NULL;
  }
  *c = *next;
  np->by_slot[s] = c;
  np->owned[s] = true;
  return c;
}

/* The pool in force is `to` from now on: published, said, and what depends
 * on it redone (probe: devices, capacities, node policy; then the pass and
 * the annotation). The other threads pick it up at their next pass. */
static void switch_to(struct nodepool *np, const struct ioq_config *to, const char *labels) {
  struct plugin *p = np->p;
  const char *from = poolswitch_name(np->by_slot[np->cur]);
  atomic_store_explicit(&p->live, to, memory_order_release);
  ioq_info("node pool changed from=\"%s\" to=\"%s\" node=%s labels=\"%s\"", from,
           poolswitch_name(to), p->opts.node_name, labels);
  events_post(p->events, NULL, NULL, NULL, "Normal", "IoqosNodePoolChanged",
              "the node's labels now select ioqos node pool %s (was %s): its devices and "
              "policies apply from now on, without a restart",
              poolswitch_name(to), from);
  np->cur = slot_of(to);
  reconciler_kick_probe(atomic_load(&p->rec));
}

/* `to` differs from the running config in a setting fixed at start: none
 * of it applies, the operator is told to restart the plugin's pod. */
static void needs_restart(struct nodepool *np, const struct ioq_config *to, const char *fields,
                          const char *labels) {
  struct plugin *p = np->p;
  const char *in_force = poolswitch_name(np->by_slot[np->cur]);
  ioq_warn("node pool change needs a restart: the pool in force stays, whole, until the plugin "
           "restarts from=\"%s\" to=\"%s\" node=%s labels=\"%s\" restart_only=%s",
           in_force, poolswitch_name(to), p->opts.node_name, labels, fields);
  events_post(p->events, NULL, NULL, NULL, "Warning", "IoqosNodePoolRestartNeeded",
              "the node's labels now select ioqos node pool %s, which differs from pool %s in "
              "settings fixed at start (%s): %s stays in force until the ioqos-plugin pod "
              "restarts",
              poolswitch_name(to), in_force, fields, in_force);
}

/* Labels taken: events with these labels change nothing from now on. */
static void take_labels(struct nodepool *np, json_object *labels) {
  json_object_put(np->labels);
  np->labels = json_object_get(labels);
}

/* The watch's callback: the Node as listed or changed. */
static void on_labels(void *ud, json_object *labels) {
  struct nodepool *np = ud;
  if (same_labels(np->labels, labels))
    return; /* a status update, an annotation patch: the pool cannot change */
  char text[LABELS_TEXT_MAX];
  poolswitch_labels_text(labels, text, sizeof text);
  struct ioq_config next;
  ioq_err e;
  /* on failure the labels are not taken: the Node's next event tries again */
  if (ioq_config_parse_node(np->text, np->path, labels, &next, &e) < 0) {
    /* the same text parsed at start: only memory can fail here */
    ioq_error("node labels changed but the node pool was not selected again labels=\"%s\" "
              "error=\"%s\"",
              text, e.msg);
    return;
  }
  size_t slot = slot_of(&next);
  if (slot == np->want) {
    ioq_config_free(&next);
    take_labels(np, labels);
    ioq_debug("node labels changed, node pool unchanged pool=\"%s\" labels=\"%s\"",
              poolswitch_name(np->by_slot[np->want]), text);
    return;
  }
  const struct ioq_config *to = keep(np, &next);
  if (!to) {
    ioq_error("node pool not changed labels=\"%s\" reason=out-of-memory", text);
    return;
  }
  take_labels(np, labels);
  np->want = slot;
  if (slot == np->cur) {
    ioq_info("node pool stays: the labels select the pool in force again pool=\"%s\" labels=\"%s\"",
             poolswitch_name(to), text);
    return;
  }
  char fields[256];
  if (poolswitch_restart_fields(&np->p->cfg, to, fields, sizeof fields))
    needs_restart(np, to, fields, text);
  else
    switch_to(np, to, text);
}

int nodepool_watch(struct nodepool *np, struct plugin *p, ioq_err *e) {
  if (!np)
    return 0;
  np->p = p;
  if (!(np->w = nodewatch_start(p->kube, p->opts.node_name, on_labels, np, e))) {
    ioq_err_prefix(e, "config %s has pools: following the labels of the node", np->path);
    return -1;
  }
  ioq_info("node labels watched: a relabel that selects another pool applies it node=%s",
           p->opts.node_name);
  return 0;
}

void nodepool_stop(struct nodepool *np) {
  if (!np)
    return;
  nodewatch_stop(np->w);
  np->w = NULL;
}

void nodepool_free(struct nodepool *np) {
  if (!np)
    return;
  nodepool_stop(np);
  np_free(np);
}

// SPDX-License-Identifier: Apache-2.0
#ifndef IOQOS_NODEPOOL_H
#define IOQOS_NODEPOOL_H

#include "config/config.h"
#include "kube/kube.h"

struct plugin;
struct nodepool;

/* At start, when *cfg (loaded from config_path) has pools: GETs the Node and
 * replaces *cfg with the file read for its labels (the first matching pool,
 * else the top level), and returns the state that follows the labels from
 * then on (nodepool_watch). The file's text is kept: a relabelled node gets
 * its pool from the file as read at start. A Node that cannot be read is an
 * error: a pool's disks are never guessed. *np is NULL without pools. */
int nodepool_select(struct ioq_kube *k, const char *node, const char *config_path,
                    struct ioq_config *cfg, struct nodepool **np, ioq_err *e);

/* Watches the Node's labels (nodewatch.h) from now on. When they select
 * another pool, its config is put in force (p->live) at once, unless it
 * differs from p->cfg in a setting only a restart changes (poolswitch.h):
 * then nothing of it applies. Either way one log line and one Event on the
 * Node say so; a change kicks a reconcile pass with a probe. Needs p->kube,
 * p->events and p->rec. NULL-safe (no pools: nothing to watch). */
int nodepool_watch(struct nodepool *np, struct plugin *p, ioq_err *e);

/* Stops the watch: no pool changes after it returns. NULL-safe. */
void nodepool_stop(struct nodepool *np);

/* Frees the pools' configs: after everything that reads plugin_cfg has
 * stopped, with p->live cleared. NULL-safe. */
void nodepool_free(struct nodepool *np);

#endif

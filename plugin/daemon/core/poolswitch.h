// SPDX-License-Identifier: Apache-2.0
/* What moving a running plugin to another node pool may change (pure
 * functions; nodepool.c applies them). A pool's settings take effect at run
 * time, except those the plugin set up once at start: the pod table's
 * enforcement switches (enforcement.ioWeight, bfqWeight, enableControllers),
 * the threads that run or not (monitor.enable, nodePolicy.ungranted.enable,
 * enforcement.combinedDirections, which hooks into the monitor) and the
 * NVMe-oF target namespaces (nvmet, whose cgroups are made and swept
 * against the parent of start). A pool that differs from the running one in
 * any of those is not applied at all: it needs a restart. */
#ifndef IOQOS_PLUGIN_POOLSWITCH_H
#define IOQOS_PLUGIN_POOLSWITCH_H

#include <stddef.h>

#include <json-c/json.h>

#include "config/config.h"

/* The name logged for the pool of c: its name, or "(top level)". */
const char *poolswitch_name(const struct ioq_config *c);

/* The settings only a restart changes in which `next` differs from `run`
 * (the config the plugin started with): their config paths, comma-joined in
 * out (cut to outsz, "" when none). Returns how many differ. */
size_t poolswitch_restart_fields(const struct ioq_config *run, const struct ioq_config *next,
                                 char *out, size_t outsz);

/* A Node's labels (a JSON object of strings, NULL = none) for a log line:
 * "key=value" sorted by key, comma-joined, cut with "..." to fit outsz;
 * "(none)" without labels. */
void poolswitch_labels_text(json_object *labels, char *out, size_t outsz);

#endif

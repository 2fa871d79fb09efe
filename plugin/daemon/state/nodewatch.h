// SPDX-License-Identifier: Apache-2.0
/* nodewatch.c: list+watch of the plugin's own Node, for its labels. */
#ifndef IOQOS_PLUGIN_NODEWATCH_H
#define IOQOS_PLUGIN_NODEWATCH_H

#include <json-c/json.h>

#include "base/error.h"
#include "kube/kube.h"

struct nodewatch;

/* Called on the watch's thread with the Node's labels (a JSON object of
 * strings; NULL when it has none) each time the Node is listed or changes,
 * labels changed or not. Valid during the call only. */
typedef void (*nodewatch_labels_fn)(void *ud, json_object *labels);

/* Starts watching node `node` (fieldSelector metadata.name: that Node only,
 * read through a filter that keeps its name and labels). */
struct nodewatch *nodewatch_start(struct ioq_kube *k, const char *node, nodewatch_labels_fn fn,
                                  void *ud, ioq_err *e) __attribute__((warn_unused_result));
/* Stops the thread (within about a second; no call after it returns) and
 * frees. NULL-safe. */
void nodewatch_stop(struct nodewatch *w);

#endif

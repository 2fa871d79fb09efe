// SPDX-License-Identifier: Apache-2.0
/* The plugin's own Node, watched for its labels (config pools: the labels
 * pick the node pool, nodepool.c). One informer on /api/v1/nodes narrowed to
 * the node by name; each object is read through the streaming filter, which
 * keeps its name and labels only (a Node's status and managedFields are
 * most of its bytes). Its status changes and the plugin's own annotation
 * patches arrive as events too: the receiver compares the labels. */
#include "nodewatch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/jsonfield.h"
#include "kube/kube_jfilter.h"
#include "base/log.h"

static const struct ioq_jf_rule R_META[] = {{"name", IOQ_JF_ICASE, NULL},
                                            {"resourceVersion", IOQ_JF_ICASE, NULL},
                                            {"labels", IOQ_JF_ICASE, NULL},
                                            {NULL, 0, NULL}};
static const struct ioq_jf_rule R_NODE[] = {{"metadata", IOQ_JF_ICASE, R_META}, {NULL, 0, NULL}};

struct nodewatch {
  struct ioq_kube_informer *inf;
  nodewatch_labels_fn fn;
  void *ud;
  char node[256];
};

static void deliver(struct nodewatch *w, json_object *obj) {
  const char *name = ioq_json_str_at(obj, "metadata", "name");
  if (name && strcmp(name, w->node) != 0)
    return; /* a server that ignored the field selector: not our Node */
  if (json_object_object_get_ex(obj, IOQ_JF_TRUNCATED_KEY, NULL)) {
    ioq_warn("node watch: node %s is larger than the read budget: its labels are not read, the "
             "node pool in force stays",
             w->node);
    return;
  }
  json_object *labels = ioq_json_field(ioq_json_field(obj, "metadata"), "labels");
  if (labels && !json_object_is_type(labels, json_type_object)) {
    ioq_warn("node watch: metadata.labels of node %s is not an object: the node pool in force "
             "stays",
             w->node);
    return;
  }
  w->fn(w->ud, labels);
}

static void list_begin(void *ud) { (void)ud; }

static void list_page(void *ud, json_object *items) {
  for (size_t i = 0; i < json_object_array_length(items); i++)
    deliver(ud, json_object_array_get_idx(items, i));
}

static void list_end(void *ud, bool complete) {
  (void)ud;
  (void)complete; /* one Node: each item was taken as it came */
}

static void on_event(void *ud, const char *type, json_object *obj) {
  struct nodewatch *w = ud;
  if (strcmp(type, "DELETED") == 0) {
    ioq_warn("node watch: node %s was deleted: the node pool in force stays", w->node);
    return;
  }
  deliver(w, obj);
}

struct nodewatch *nodewatch_start(struct ioq_kube *k, const char *node, nodewatch_labels_fn fn,
                                  void *ud, ioq_err *e) {
  struct nodewatch *w = calloc(1, sizeof *w);
  if (!w)
    return ioq_fail(e, ENOMEM, "node watch: out of memory"), NULL;
  w->fn = fn;
  w->ud = ud;
  if (!ioq_copy(w->node, sizeof w->node, node)) {
    free(w);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "node watch: node name too long: %.80s", node), NULL;
  }
  char sel[300];
  snprintf(sel, sizeof sel, "metadata.name=%s", node);
  static const struct ioq_kube_informer_cb cb = {.list_begin = list_begin,
                                                 .list_page = list_page,
                                                 .list_end = list_end,
                                                 .on_event = on_event,
                                                 .filter = R_NODE};
  w->inf = ioq_kube_informer_start(k, "/api/v1/nodes", sel, &cb, w, e);
  if (!w->inf) {
    ioq_err_prefix(e, "node watch %s", node);
    free(w);
    return NULL;
  }
  return w;
}

void nodewatch_stop(struct nodewatch *w) {
  if (!w)
    return;
  ioq_kube_informer_stop(w->inf);
  free(w);
}

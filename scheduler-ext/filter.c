// SPDX-License-Identifier: Apache-2.0
/* POST /filter: keep the nodes where one disk of the pod's class has enough
 * free units of every requested ioqos resource at once. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "decide.h"
#include "extender.h"
#include "base/log.h"

/* ExtenderFilterResult with every field, as Go marshals it. */
static json_object *result_new(bool names_mode, json_object **passed, json_object **failed,
                               json_object **unresolvable) {
  json_object *res = json_object_new_object();
  *passed = json_object_new_array();
  *failed = json_object_new_object();
  *unresolvable = json_object_new_object();
  if (!res || !*passed || !*failed || !*unresolvable) {
    json_object_put(res);
    json_object_put(*passed);
    json_object_put(*failed);
    json_object_put(*unresolvable);
    return NULL;
  }
  if (names_mode) {
    json_object_object_add(res, "Nodes", NULL);
    json_object_object_add(res, "NodeNames", *passed);
  } else {
    /* kube-scheduler uses the Node objects it gets back, so they are echoed
     * whole (the same objects it sent) */
    json_object *list = json_object_new_object();
    json_object_object_add(list, "metadata", json_object_new_object());
    json_object_object_add(list, "items", *passed);
    json_object_object_add(res, "Nodes", list);
    json_object_object_add(res, "NodeNames", NULL);
  }
  json_object_object_add(res, "FailedNodes", *failed);
  json_object_object_add(res, "FailedAndUnresolvableNodes", *unresolvable);
  json_object_object_add(res, "Error", json_object_new_string(""));
  return res;
}

static void add_passed(const struct ext_args *a, size_t i, json_object *passed) {
  if (a->names_mode)
    json_object_array_add(passed, json_object_get(json_object_array_get_idx(a->names, i)));
  else
    json_object_array_add(passed, json_object_get(ext_args_node(a, i)));
}

void ext_filter(struct extender *x, json_object *body, struct ext_reply *r) {
  struct ext_args a;
  ioq_err e = {0};
  if (ext_args_parse(body, &a, &e) < 0) {
    ext_metrics_reject(x->metrics, EXT_REJECT_BAD_REQUEST);
    ext_metrics_pod(x->metrics, EXT_VERB_FILTER, EXT_POD_INVALID);
    ext_reply_error(r, 400, "%s", e.msg);
    return;
  }
  json_object *passed, *failed, *unresolvable;
  json_object *res = result_new(a.names_mode, &passed, &failed, &unresolvable);
  if (!res) {
    ext_reply_error(r, 500, "ioqos extender out of memory building the filter result");
    return;
  }

  /* pods without ioqos resources pass untouched */
  if (!ioq_pod_need_any(&a.need)) {
    for (size_t i = 0; i < a.n; i++)
      add_passed(&a, i, passed);
    ext_metrics_pod(x->metrics, EXT_VERB_FILTER, EXT_POD_PASSTHROUGH);
    ext_metrics_nodes(x->metrics, EXT_NODE_PASSED, a.n);
    ext_reply_json(r, 200, res);
    return;
  }

  struct ext_nodes ns;
  if (ext_nodes_resolve(x, &a, EXT_VERB_FILTER, &ns, r) < 0) {
    json_object_put(res);
    return;
  }
  ext_metrics_pod(x->metrics, EXT_VERB_FILTER, EXT_POD_IOQOS);
  struct ioq_need need;
  ioq_pod_need_placement(&a.need, &need);
  char self_buf[IOQ_POD_NAMESPACE_MAX + IOQ_POD_NAME_MAX + 2];
  const char *self = ext_assume_id(&a.need, self_buf, sizeof self_buf);
  uint64_t count[EXT_NODE_RESULT_COUNT] = {0};
  for (size_t i = 0; i < a.n; i++) {
    const char *name = ext_nodes_name(&ns, i);
    struct ext_verdict v;
    ext_decide(x->assumed, x->policy, &need, self, name, ext_nodes_info(&ns, i), &v);
    if (v.kind == EXT_FITS) {
      add_passed(&a, i, passed);
      count[EXT_NODE_PASSED]++;
    } else {
      json_object_object_add(v.kind == EXT_FAILED ? failed : unresolvable, name,
                             json_object_new_string(v.reason));
      count[v.kind == EXT_FAILED ? EXT_NODE_FAILED : EXT_NODE_UNRESOLVABLE]++;
    }
  }
  ext_nodes_release(&ns);
  for (int k = 0; k < EXT_NODE_RESULT_COUNT; k++)
    ext_metrics_nodes(x->metrics, (enum ext_node_result)k, count[k]);
  ioq_debug("filter pod=%s/%s class=%s bandwidth=%llu iops=%llu nodes=%zu passed=%llu failed=%llu "
            "unresolvable=%llu",
            a.need.ns, a.need.name, a.need.class_name,
            (unsigned long long)a.need.units[IOQ_RES_BANDWIDTH],
            (unsigned long long)a.need.units[IOQ_RES_IOPS], a.n,
            (unsigned long long)count[EXT_NODE_PASSED], (unsigned long long)count[EXT_NODE_FAILED],
            (unsigned long long)count[EXT_NODE_UNRESOLVABLE]);
  ext_reply_json(r, 200, res);
}

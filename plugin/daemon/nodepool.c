// SPDX-License-Identifier: Apache-2.0
/* Node pools (config pools[], docs/configuration.md): one DaemonSet serves
 * nodes with different disks; the Node's labels pick the pool. */
#include "nodepool.h"

#include <stdio.h>

#include "ioqos/log.h"

int nodepool_select(struct ioq_kube *k, const char *node, const char *config_path,
                    struct ioq_config *cfg, ioq_err *e) {
  if (!cfg->n_pools)
    return 0; /* no pools: the node's labels do not matter, no GET */
  char path[512];
  /* the node name was checked as a DNS-1123 subdomain: safe in a path */
  snprintf(path, sizeof path, "/api/v1/nodes/%s", node);
  json_object *obj = NULL, *meta, *labels = NULL;
  if (ioq_kube_get_json(k, path, &obj, NULL, e) < 0) {
    ioq_err_prefix(e, "config %s has pools: reading the labels of node %s", config_path, node);
    return -1;
  }
  if (json_object_object_get_ex(obj, "metadata", &meta))
    json_object_object_get_ex(meta, "labels", &labels);
  if (labels && !json_object_is_type(labels, json_type_object)) {
    json_object_put(obj);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "GET %s: metadata.labels is not an object", path);
  }
  struct ioq_config c;
  int rc = ioq_config_load_node(config_path, labels, &c, e);
  json_object_put(obj);
  if (rc < 0)
    return -1;
  ioq_config_free(cfg);
  *cfg = c;
  if (cfg->pool)
    ioq_info("config pool selected by the labels of the node pool=%s node=%s pools=%zu", cfg->pool,
             node, cfg->n_pools);
  else
    ioq_info("config: no pool matches the labels of node %s (%zu pools): the top level applies",
             node, cfg->n_pools);
  return 0;
}

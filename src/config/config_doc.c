// SPDX-License-Identifier: Apache-2.0
/* The config document: its apiVersion/kind header and pools[] (the node's first match wins). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

/* ---- the document: header, pools ---- */

/* apiVersion and kind: both or neither (files from before the header). */
static int check_header(struct ctx *x, json_object *root, bool *versioned) {
  json_object *av, *kind;
  bool has_av = json_object_object_get_ex(root, "apiVersion", &av);
  bool has_kind = json_object_object_get_ex(root, "kind", &kind);
  *versioned = has_av || has_kind;
  if (has_av && (!json_object_is_type(av, json_type_string) ||
                 strcmp(json_object_get_string(av), IOQ_CONFIG_API_VERSION) != 0))
    return cfg_bad(x, "apiVersion", "must be " IOQ_CONFIG_API_VERSION);
  if (has_kind && (!json_object_is_type(kind, json_type_string) ||
                   strcmp(json_object_get_string(kind), IOQ_CONFIG_KIND) != 0))
    return cfg_bad(x, "kind", "must be " IOQ_CONFIG_KIND);
  if (has_av && !has_kind)
    return cfg_bad(x, "kind", "is required with apiVersion (" IOQ_CONFIG_KIND ")");
  if (has_kind && !has_av)
    return cfg_bad(x, "apiVersion", "is required with kind (" IOQ_CONFIG_API_VERSION ")");
  return 0;
}

/* The keys a pool may set; each replaces the top-level one whole. units and
 * placementPolicy are not among them: they must agree across the cluster. */
static const char *const g_pool_overrides[] = {"kubeletRootDir", "calibrationFile",
                                               "allocatableFraction", "devices", "enforcement",
                                               "monitor", "nodePolicy", "nvmet", NULL};

/* Checks pools[i]'s own fields; *labels gets its matchLabels object. */
static int check_pool(struct ctx *x, json_object *pool, size_t i, json_object **labels) {
  char path[96], p2[128];
  snprintf(path, sizeof path, "pools[%zu]", i);
  if (!json_object_is_type(pool, json_type_object))
    return cfg_bad(x, path, "must be an object");
  static const char *const keys[] = {"name", "nodeSelector", "kubeletRootDir", "calibrationFile",
                                     "allocatableFraction", "devices", "enforcement", "monitor",
                                     "nodePolicy", "nvmet", NULL};
  if (cfg_check_keys(x, pool, path, keys) < 0)
    return -1;
  json_object *v, *sel;
  snprintf(p2, sizeof p2, "%s.name", path);
  if (json_object_object_get_ex(pool, "name", &v) &&
      (!json_object_is_type(v, json_type_string) || !*json_object_get_string(v)))
    return cfg_bad(x, p2, "must be a non-empty string");
  snprintf(p2, sizeof p2, "%s.nodeSelector", path);
  if (!json_object_object_get_ex(pool, "nodeSelector", &sel))
    return cfg_bad(x, p2, "is required (matchLabels: the node labels of this pool)");
  if (!json_object_is_type(sel, json_type_object))
    return cfg_bad(x, p2, "must be an object");
  static const char *const skeys[] = {"matchLabels", NULL};
  if (cfg_check_keys(x, sel, p2, skeys) < 0)
    return -1;
  snprintf(p2, sizeof p2, "%s.nodeSelector.matchLabels", path);
  if (!json_object_object_get_ex(sel, "matchLabels", labels) ||
      !json_object_is_type(*labels, json_type_object) || json_object_object_length(*labels) == 0)
    return cfg_bad(x, p2, "must be an object with at least one label");
  json_object_object_foreach(*labels, k, lv) {
    char p3[256];
    snprintf(p3, sizeof p3, "%s.%.100s", p2, k);
    if (!json_object_is_type(lv, json_type_string))
      return cfg_bad_at(x, cfg_line_of(x, lv), p3, NULL, "must be a string (quote numbers and true/false)");
    if (strlen(k) > 317 || json_object_get_string_len(lv) > 63)
      return cfg_bad_at(x, cfg_line_of(x, lv), p3, NULL, "is longer than a Kubernetes label allows");
  }
  return 0;
}

/* true when every label of `want` is on the node with that value */
static bool labels_match(json_object *want, json_object *node_labels) {
  json_object_object_foreach(want, k, v) {
    json_object *have;
    if (!node_labels || !json_object_object_get_ex(node_labels, k, &have) ||
        !json_object_is_type(have, json_type_string) ||
        strcmp(json_object_get_string(have), json_object_get_string(v)) != 0)
      return false;
  }
  return true;
}

/* The document as pool `pool` sees it: the top level with the pool's
 * sections in place of its own (shared nodes, new references). */
static json_object *merged_view(json_object *root, json_object *pool) {
  json_object *m = json_object_new_object();
  if (!m)
    return NULL;
  json_object_object_foreach(root, k, v) {
    if (!strcmp(k, "pools") || json_object_object_get_ex(pool, k, NULL))
      continue;
    if (json_object_object_add(m, k, json_object_get(v)) < 0)
      goto oom;
  }
  for (const char *const *o = g_pool_overrides; *o; o++) {
    json_object *v;
    if (json_object_object_get_ex(pool, *o, &v) &&
        json_object_object_add(m, *o, json_object_get(v)) < 0)
      goto oom;
  }
  return m;
oom:
  json_object_put(m);
  return NULL;
}

/* Validates the whole document (the top level and every pool as it would
 * apply) and fills *c for a node with `node_labels` (NULL: the top level). */
int cfg_parse_doc(struct ctx *x, json_object *root, json_object *node_labels,
                  struct ioq_config *c) {
  if (!json_object_is_type(root, json_type_object))
    return cfg_bad(x, "(top level)", "must be an object");
  bool versioned;
  if (check_header(x, root, &versioned) < 0)
    return -1;
  c->versioned = versioned;
  json_object *pools = NULL;
  if (json_object_object_get_ex(root, "pools", &pools)) {
    if (!json_object_is_type(pools, json_type_array))
      return cfg_bad(x, "pools", "must be an array");
    if (json_object_array_length(pools) > IOQ_CONFIG_MAX_POOLS)
      return cfg_bad(x, "pools", "more than 32 entries");
  }
  if (cfg_parse_root(x, root, c) < 0)
    return -1;
  size_t n = pools ? json_object_array_length(pools) : 0, chosen = n;
  for (size_t i = 0; i < n; i++) {
    json_object *pool = json_object_array_get_idx(pools, i), *labels;
    if (check_pool(x, pool, i, &labels) < 0)
      return -1;
    json_object *m = merged_view(root, pool);
    if (!m)
      return ioq_fail(x->e, ENOMEM, "%s: out of memory for the merged view of pools[%zu]", x->src,
                      i);
    struct ctx px = {x->src, x->e, m, pool, i, x->yaml, x->err_path};
    struct ioq_config tmp;
    int rc = ioq_config_defaults(&tmp, x->e);
    if (rc == 0) {
      rc = cfg_parse_root(&px, m, &tmp);
      ioq_config_free(&tmp);
    }
    if (rc == 0 && chosen == n && node_labels && labels_match(labels, node_labels)) {
      /* first match wins: *c becomes this pool's view */
      struct ioq_config pc;
      if ((rc = ioq_config_defaults(&pc, x->e)) == 0 && (rc = cfg_parse_root(&px, m, &pc)) < 0)
        ioq_config_free(&pc);
      if (rc == 0) {
        json_object *nm;
        char def[32];
        snprintf(def, sizeof def, "pools[%zu]", i);
        const char *name =
            json_object_object_get_ex(pool, "name", &nm) ? json_object_get_string(nm) : def;
        pc.pool = strdup(name);
        if (!pc.pool) {
          ioq_config_free(&pc);
          rc = ioq_fail(x->e, ENOMEM, "%s: out of memory for the name of pools[%zu]", x->src, i);
        } else {
          free(pc.source); /* the defaults' name: the file's is kept */
          pc.source = c->source;
          c->source = NULL;
          ioq_config_free(c);
          *c = pc;
          c->pool_index = i;
          chosen = i;
        }
      }
    }
    json_object_put(m);
    if (rc < 0)
      return -1;
  }
  c->n_pools = n;
  c->versioned = versioned;
  return 0;
}

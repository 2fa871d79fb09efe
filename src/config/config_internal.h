// SPDX-License-Identifier: Apache-2.0
/* The configuration parser's shared parts: the parse context, the field
 * helpers (config_field.c), so every section with its own file validates
 * and reports errors exactly as the rest does, and the parsers each file
 * offers the one above it. Calls go one way only:
 *   config.c -> config_doc.c -> config_root.c -> config_devices.c,
 *   config_node_policy.c, config_nvmet.c -> config_field.c.
 * Not installed. */
#ifndef IOQOS_CONFIG_INTERNAL_H
#define IOQOS_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "config/config.h"
#include "base/error.h"

struct ctx {
  const char *src;
  ioq_err *e;
  json_object *root; /* the document: error lines are looked up in it */
  /* validating pools[pool_idx]: fields it sets are named pools[N].FIELD */
  json_object *pool;
  size_t pool_idx;
  bool yaml; /* lines are known (json-c's own userdata means something else) */
  /* JSON: the document path of the last error ("pools[1].devices[0].x"), so
   * its line can be found afterwards (ERR_PATH_MAX bytes, shared by pools) */
  char *err_path;
};
#define ERR_PATH_MAX 512

/* config_field.c: the field helpers. */

/* The line (YAML only, else 0) of `o`, and of the deepest node of `path`
 * ("devices[1].capacity.iops", "(top level)") that exists under `node`. */
unsigned cfg_line_of(struct ctx *x, json_object *o);
unsigned cfg_path_line(struct ctx *x, json_object *node, const char *path);
/* Each returns -1 with "SOURCE: line N: PATH: what" in x->e. */
int cfg_bad_at(struct ctx *x, unsigned line, const char *path, const char *key, const char *what);
int cfg_bad(struct ctx *x, const char *path, const char *what);
/* rejects keys not in `allowed` (NULL-terminated) */
int cfg_check_keys(struct ctx *x, json_object *obj, const char *path, const char *const *allowed);
/* absent keys leave *out as it is */
int cfg_get_string(struct ctx *x, json_object *obj, const char *key, const char *path, char **out,
                   bool allow_empty);
int cfg_get_bool(struct ctx *x, json_object *obj, const char *key, const char *path, bool *out);
int cfg_get_uint(struct ctx *x, json_object *obj, const char *key, const char *path, uint64_t *out,
                 uint64_t min, uint64_t max);
int cfg_get_double(struct ctx *x, json_object *obj, const char *key, const char *path, double *out,
                   double lo_excl, double hi_incl);
int cfg_get_object(struct ctx *x, json_object *obj, const char *key, const char *path,
                   json_object **out);

/* The sections: each reads its part of one view (`root`) into *c, -1 with
 * the error in x->e. */
/* config_devices.c: devices[] into c->devices, then the capacities' unit
 * bounds. */
int cfg_parse_devices(struct ctx *x, json_object *root, struct ioq_config *c);
/* config_node_policy.c: nodePolicy into c->node_policy. */
int cfg_parse_node_policy(struct ctx *x, json_object *root, struct ioq_config *c);
/* config_nvmet.c: the `nvmet` section into c->nvmet; free with
 * cfg_nvmet_free. */
int cfg_parse_nvmet(struct ctx *x, json_object *root, struct ioq_config *c);
void cfg_nvmet_free(struct ioq_config *c);

/* config_root.c: one view of the document (the top level, or a pool's
 * merged view) into *c, which holds the defaults: the top-level fields,
 * then every section. */
int cfg_parse_root(struct ctx *x, json_object *root, struct ioq_config *c);

/* config_doc.c: validates the whole document (the top level and every pool
 * as it would apply) and fills *c for a node with `node_labels` (NULL: the
 * top level). */
int cfg_parse_doc(struct ctx *x, json_object *root, json_object *node_labels, struct ioq_config *c);

#endif

// SPDX-License-Identifier: Apache-2.0
/* Config field helpers for every section: typed readers, allowed keys, error context. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/yamljson.h"

#include "config_internal.h"

/* ---- typed field readers: each error names source and field path ---- */

unsigned cfg_line_of(struct ctx *x, json_object *o) { return x->yaml ? ioq_yaml_line(o) : 0; }

/* The line (YAML only, else 0) of the deepest node of `path` ("devices[1].
 * capacity.iops", "(top level)") that exists under `node`. */
unsigned cfg_path_line(struct ctx *x, json_object *node, const char *path) {
  unsigned line = cfg_line_of(x, node);
  if (!strcmp(path, "(top level)"))
    return line;
  while (node && *path) {
    json_object *next = NULL;
    if (*path == '[') {
      char *end;
      unsigned long i = strtoul(path + 1, &end, 10);
      if (*end != ']' || !json_object_is_type(node, json_type_array))
        break;
      next = json_object_array_get_idx(node, i);
      path = end + 1;
    } else {
      size_t n = strcspn(path, ".[");
      char key[128];
      if (n >= sizeof key || !json_object_is_type(node, json_type_object))
        break;
      memcpy(key, path, n);
      key[n] = '\0';
      if (!json_object_object_get_ex(node, key, &next))
        break;
      path += n;
    }
    if (*path == '.')
      path++;
    if (!next)
      break;
    node = next;
    if (cfg_line_of(x, node))
      line = cfg_line_of(x, node);
  }
  return line;
}

/* A field a pool sets is reported under the pool: "pools[1].devices[0]". */
static bool in_pool(struct ctx *x, const char *path) {
  if (!x->pool || !strcmp(path, "(top level)"))
    return false;
  char key[64];
  size_t n = strcspn(path, ".[");
  if (n >= sizeof key)
    return false;
  memcpy(key, path, n);
  key[n] = '\0';
  return json_object_object_get_ex(x->pool, key, NULL);
}

/* key: the unknown key an error is about (its line is the one to show) */
int cfg_bad_at(struct ctx *x, unsigned line, const char *path, const char *key,
                  const char *what) {
  char pre[32] = "";
  if (x->pool && in_pool(x, path))
    snprintf(pre, sizeof pre, "pools[%zu].", x->pool_idx);
  if (x->err_path) {
    bool top = !strcmp(path, "(top level)");
    snprintf(x->err_path, ERR_PATH_MAX, "%s%s%s%s", pre, top ? "" : path, key && !top ? "." : "",
             key ? key : "");
  }
  if (line)
    return ioq_fail(x->e, IOQ_EINVAL_INPUT, "%s: line %u: %s%s: %s", x->src, line, pre, path, what);
  return ioq_fail(x->e, IOQ_EINVAL_INPUT, "%s: %s%s: %s", x->src, pre, path, what);
}

int cfg_bad(struct ctx *x, const char *path, const char *what) {
  return cfg_bad_at(x, cfg_path_line(x, x->root, path), path, NULL, what);
}

/* Rejects keys not in `allowed` (NULL-terminated): a typo must not be a
 * silently ignored setting. */
int cfg_check_keys(struct ctx *x, json_object *obj, const char *path,
                      const char *const *allowed) {
  json_object_object_foreach(obj, key, val) {
    bool ok = false;
    for (const char *const *a = allowed; *a; a++)
      if (strcmp(key, *a) == 0)
        ok = true;
    if (!ok) {
      char msg[512];
      snprintf(msg, sizeof msg, "unknown field '%.100s' (allowed:", key);
      for (const char *const *a = allowed; *a; a++) {
        strncat(msg, " ", sizeof msg - strlen(msg) - 1);
        strncat(msg, *a, sizeof msg - strlen(msg) - 1);
      }
      strncat(msg, ")", sizeof msg - strlen(msg) - 1);
      const char *p = path[0] ? path : "(top level)";
      unsigned line = cfg_line_of(x, val); /* the unknown key's own line */
      return cfg_bad_at(x, line ? line : cfg_path_line(x, x->root, p), p, key, msg);
    }
  }
  return 0;
}

int cfg_get_string(struct ctx *x, json_object *obj, const char *key, const char *path,
                      char **out, bool allow_empty) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v))
    return 0;
  if (!json_object_is_type(v, json_type_string))
    return cfg_bad(x, path, "must be a string");
  const char *s = json_object_get_string(v);
  if (!allow_empty && !*s)
    return cfg_bad(x, path, "must not be empty");
  char *dup = strdup(s);
  if (!dup)
    return ioq_fail(x->e, ENOMEM, "%s: out of memory for the value of %s", x->src, path);
  free(*out);
  *out = dup;
  return 0;
}

int cfg_get_bool(struct ctx *x, json_object *obj, const char *key, const char *path, bool *out) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v))
    return 0;
  if (!json_object_is_type(v, json_type_boolean))
    return cfg_bad(x, path, "must be true or false");
  *out = json_object_get_boolean(v);
  return 0;
}

int cfg_get_uint(struct ctx *x, json_object *obj, const char *key, const char *path,
                    uint64_t *out, uint64_t min, uint64_t max) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v))
    return 0;
  if (!json_object_is_type(v, json_type_int))
    return cfg_bad(x, path, "must be an integer");
  errno = 0;
  int64_t n = json_object_get_int64(v);
  if (n < 0 || (uint64_t)n < min || (uint64_t)n > max || errno) {
    char msg[128];
    snprintf(msg, sizeof msg, "must be an integer in [%llu, %llu]", (unsigned long long)min,
             (unsigned long long)max);
    return cfg_bad(x, path, msg);
  }
  *out = (uint64_t)n;
  return 0;
}

int cfg_get_double(struct ctx *x, json_object *obj, const char *key, const char *path,
                      double *out, double lo_excl, double hi_incl) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v))
    return 0;
  if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
    return cfg_bad(x, path, "must be a number");
  double d = json_object_get_double(v);
  if (!isfinite(d) || d <= lo_excl || d > hi_incl) {
    char msg[128];
    snprintf(msg, sizeof msg, "must be a number in (%g, %g]", lo_excl, hi_incl);
    return cfg_bad(x, path, msg);
  }
  *out = d;
  return 0;
}

int cfg_get_object(struct ctx *x, json_object *obj, const char *key, const char *path,
                      json_object **out) {
  *out = NULL;
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v))
    return 0;
  if (!json_object_is_type(v, json_type_object))
    return cfg_bad(x, path, "must be an object");
  *out = v;
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
#include "initstate.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "cgroup/podcg.h"

void initstate_free(struct init_record *r, size_t n) {
  for (size_t i = 0; r && i < n; i++)
    for (int k = 0; k < IOQ_RES_COUNT; k++) {
      for (size_t j = 0; j < r[i].n_ids[k]; j++)
        free(r[i].ids[k][j]);
      free(r[i].ids[k]);
    }
  free(r);
}

/* ---- format ---- */

static json_object *record_json(const struct init_record *r) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "uid", json_object_new_string(r->uid));
  json_object_object_add(o, "namespace", json_object_new_string(r->ns));
  json_object_object_add(o, "name", json_object_new_string(r->name));
  json_object_object_add(o, "cgroup", json_object_new_string(r->cgroup));
  json_object_object_add(o, "cgroupVersion", json_object_new_int((int)r->version));
  json_object *g = json_object_new_array();
  for (size_t d = 0; d < r->grant.n; d++) {
    json_object *dg = json_object_new_object();
    char dev[32];
    snprintf(dev, sizeof dev, "%u:%u", r->devs[d].major, r->devs[d].minor);
    json_object_object_add(dg, "disk", json_object_new_string(r->grant.disks[d].disk));
    json_object_object_add(dg, "dev", json_object_new_string(dev));
    for (int k = 0; k < IOQ_RES_COUNT; k++)
      json_object_object_add(dg, ioq_resource_short((enum ioq_resource)k),
                             json_object_new_uint64(r->grant.disks[d].units[k]));
    json_object_array_add(g, dg);
  }
  json_object_object_add(o, "grant", g);
  json_object *iu = json_object_new_object();
  for (int k = 0; k < IOQ_RES_COUNT; k++) {
    json_object *a = json_object_new_array_ext((int)r->n_ids[k]);
    for (size_t j = 0; j < r->n_ids[k]; j++)
      json_object_array_add(a, json_object_new_string(r->ids[k][j]));
    json_object_object_add(iu, ioq_resource_name((enum ioq_resource)k), a);
  }
  json_object_object_add(o, "initUnits", iu);
  json_object *gs = json_object_new_array();
  for (int k = 0; k < IOQ_RES_COUNT; k++)
    if (r->guess[k])
      json_object_array_add(gs, json_object_new_string(ioq_resource_name((enum ioq_resource)k)));
  json_object_object_add(o, "initGuess", gs);
  json_object_object_add(o, "initUnknown", json_object_new_boolean(r->init_unknown));
  return o;
}

char *initstate_format(const struct init_record *r, size_t n) {
  json_object *root = json_object_new_object();
  if (!root)
    return NULL;
  json_object_object_add(root, "version", json_object_new_int(INITSTATE_VERSION));
  json_object *pods = json_object_new_array();
  for (size_t i = 0; i < n; i++)
    json_object_array_add(pods, record_json(&r[i]));
  json_object_object_add(root, "pods", pods);
  const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
  char *out = s ? strdup(s) : NULL;
  json_object_put(root);
  return out;
}

/* ---- parse ---- */

static int get_str(json_object *o, const char *key, char *out, size_t outsz, size_t i,
                   ioq_err *e) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].%s: missing or not a string", i, key);
  const char *s = json_object_get_string(v);
  if (!*s || !ioq_copy(out, outsz, s))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].%s: empty or longer than %zu characters", i,
                    key, outsz - 1);
  return 0;
}

static int get_u64(json_object *o, const char *key, uint64_t *out, const char *where,
                   ioq_err *e) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int) ||
      json_object_get_int64(v) < 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.%s: missing or not a count", where, key);
  *out = json_object_get_uint64(v);
  return 0;
}

static int parse_grant(json_object *o, struct init_record *r, size_t i, ioq_err *e) {
  json_object *g;
  if (!json_object_object_get_ex(o, "grant", &g) || !json_object_is_type(g, json_type_array))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].grant: missing or not an array", i);
  size_t n = json_object_array_length(g);
  if (n > IOQ_POD_DISKS_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].grant: more than %d disks", i,
                    IOQ_POD_DISKS_MAX);
  for (size_t d = 0; d < n; d++) {
    json_object *dg = json_object_array_get_idx(g, d), *v;
    char where[64];
    snprintf(where, sizeof where, "pods[%zu].grant[%zu]", i, d);
    if (!json_object_is_type(dg, json_type_object))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: not an object", where);
    struct ioq_disk_grant *out = &r->grant.disks[d];
    if (!json_object_object_get_ex(dg, "disk", &v) || !json_object_is_type(v, json_type_string) ||
        !*json_object_get_string(v) ||
        !ioq_copy(out->disk, sizeof out->disk, json_object_get_string(v)))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.disk: missing or not a disk name", where);
    unsigned maj, min;
    char tail;
    if (!json_object_object_get_ex(dg, "dev", &v) || !json_object_is_type(v, json_type_string) ||
        sscanf(json_object_get_string(v), "%u:%u%c", &maj, &min, &tail) != 2)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.dev: missing or not MAJOR:MINOR", where);
    r->devs[d] = (struct ioq_devno){maj, min};
    for (int k = 0; k < IOQ_RES_COUNT; k++)
      if (get_u64(dg, ioq_resource_short((enum ioq_resource)k), &out->units[k], where, e) < 0)
        return -1;
  }
  r->grant.n = n;
  return 0;
}

static int parse_ids(json_object *o, struct init_record *r, size_t i, ioq_err *e) {
  json_object *iu;
  if (!json_object_object_get_ex(o, "initUnits", &iu) || !json_object_is_type(iu, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].initUnits: missing or not an object", i);
  size_t total = 0;
  for (int k = 0; k < IOQ_RES_COUNT; k++) {
    const char *rn = ioq_resource_name((enum ioq_resource)k);
    json_object *a;
    if (!json_object_object_get_ex(iu, rn, &a))
      continue;
    if (!json_object_is_type(a, json_type_array))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].initUnits.%s: not an array", i, rn);
    size_t n = json_object_array_length(a);
    if (!(r->ids[k] = calloc(n ? n : 1, sizeof *r->ids[k])))
      return ioq_fail(e, ENOMEM, "out of memory (init unit IDs of pods[%zu])", i);
    for (size_t j = 0; j < n; j++) {
      json_object *v = json_object_array_get_idx(a, j);
      struct ioq_unit_id u;
      if (!json_object_is_type(v, json_type_string) ||
          ioq_unit_id_parse(json_object_get_string(v), &u, NULL) < 0 || (int)u.res != k)
        return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].initUnits.%s[%zu]: not a unit ID of %s", i,
                        rn, j, rn);
      if (!(r->ids[k][j] = strdup(json_object_get_string(v))))
        return ioq_fail(e, ENOMEM,
                        "out of memory (init unit ID pods[%zu].initUnits.%s[%zu])", i, rn, j);
      r->n_ids[k]++;
    }
    total += n;
  }
  if (!total && !r->init_unknown) /* only pods holding init units are saved */
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].initUnits: no unit IDs", i);
  return 0;
}

static int parse_record(json_object *o, struct init_record *r, size_t i, ioq_err *e) {
  if (!json_object_is_type(o, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu]: not an object", i);
  if (get_str(o, "uid", r->uid, sizeof r->uid, i, e) < 0 ||
      get_str(o, "namespace", r->ns, sizeof r->ns, i, e) < 0 ||
      get_str(o, "name", r->name, sizeof r->name, i, e) < 0 ||
      get_str(o, "cgroup", r->cgroup, sizeof r->cgroup, i, e) < 0)
    return -1;
  if (ioq_pod_uid_check(r->uid, e) < 0) {
    ioq_err_prefix(e, "pods[%zu].uid", i);
    return -1;
  }
  if (r->cgroup[0] != '/')
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].cgroup: not an absolute path", i);
  json_object *v;
  int64_t ver = 0;
  if (json_object_object_get_ex(o, "cgroupVersion", &v) && json_object_is_type(v, json_type_int))
    ver = json_object_get_int64(v);
  if (ver != IOQ_CGV1 && ver != IOQ_CGV2)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].cgroupVersion: must be 1 or 2", i);
  r->version = (enum ioq_cg_version)ver;
  if (json_object_object_get_ex(o, "initUnknown", &v)) {
    if (!json_object_is_type(v, json_type_boolean))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].initUnknown: not a boolean", i);
    r->init_unknown = json_object_get_boolean(v);
  }
  if (json_object_object_get_ex(o, "initGuess", &v)) {
    if (!json_object_is_type(v, json_type_array))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].initGuess: not an array", i);
    for (size_t k = 0; k < json_object_array_length(v); k++) {
      json_object *rn = json_object_array_get_idx(v, k);
      enum ioq_resource res;
      if (!json_object_is_type(rn, json_type_string) ||
          ioq_resource_from_name(json_object_get_string(rn), &res) < 0)
        return ioq_fail(e, IOQ_EINVAL_INPUT, "pods[%zu].initGuess[%zu]: not a resource name", i, k);
      r->guess[res] = true;
    }
  }
  if (parse_grant(o, r, i, e) < 0)
    return -1;
  return parse_ids(o, r, i, e);
}

int initstate_parse(const char *text, size_t len, struct init_record **out, size_t *n,
                    ioq_err *e) {
  *out = NULL;
  *n = 0;
  if (len > INITSTATE_MAX_BYTES)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "larger than %u bytes", INITSTATE_MAX_BYTES);
  json_tokener *tok = json_tokener_new();
  if (!tok)
    return ioq_fail(e, ENOMEM, "out of memory (JSON parser of the state file)");
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
  json_object *root = json_tokener_parse_ex(tok, text, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  json_tokener_free(tok);
  int rc = -1;
  json_object *v, *pods;
  if (!root || jerr != json_tokener_success) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "invalid JSON: %s",
             jerr != json_tokener_success ? json_tokener_error_desc(jerr)
                                          : "unexpected end of input");
  } else if (!json_object_is_type(root, json_type_object) ||
             !json_object_object_get_ex(root, "version", &v) ||
             !json_object_is_type(v, json_type_int)) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "no version");
  } else if (json_object_get_int64(v) != INITSTATE_VERSION) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "unknown version %lld (this plugin reads version %d)",
             (long long)json_object_get_int64(v), INITSTATE_VERSION);
  } else if (!json_object_object_get_ex(root, "pods", &pods) ||
             !json_object_is_type(pods, json_type_array)) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "pods: missing or not an array");
  } else {
    size_t np = json_object_array_length(pods);
    struct init_record *r = calloc(np ? np : 1, sizeof *r);
    if (!r) {
      ioq_fail(e, ENOMEM, "out of memory (%zu init records)", np);
    } else {
      size_t i = 0;
      for (; i < np; i++)
        if (parse_record(json_object_array_get_idx(pods, i), &r[i], i, e) < 0)
          break;
      if (i < np) {
        initstate_free(r, np);
      } else {
        *out = r;
        *n = np;
        rc = 0;
      }
    }
  }
  json_object_put(root);
  return rc;
}

int initstate_load(const char *path, struct init_record **out, size_t *n, ioq_err *e) {
  *out = NULL;
  *n = 0;
  char *text;
  size_t len;
  if (ioq_read_file(path, &text, &len, INITSTATE_MAX_BYTES, e) < 0)
    return -1;
  int rc = initstate_parse(text, len, out, n, e);
  free(text);
  if (rc < 0)
    ioq_err_prefix(e, "%s", path);
  return rc;
}

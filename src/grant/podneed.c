// SPDX-License-Identifier: Apache-2.0
#include "grant/podneed.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/jsonparse.h"
#include "grant/nodeanno.h"

static int bad(ioq_err *e, const char *path, const char *what) {
  return ioq_fail(e, IOQ_EINVAL_INPUT, "pod %s: %s", path, what);
}

/* Copies an optional string field into out; absent or null leaves "". */
static int opt_string(json_object *obj, const char *key, const char *path, char *out, size_t outsz,
                      ioq_err *e) {
  out[0] = '\0';
  json_object *v = ioq_json_field(obj, key);
  if (!v)
    return 0;
  if (!json_object_is_type(v, json_type_string))
    return bad(e, path, "must be a string");
  const char *s = json_object_get_string(v);
  size_t n = (size_t)json_object_get_string_len(v);
  if (n >= outsz || strlen(s) != n) {
    char what[96];
    snprintf(what, sizeof what, "must be a string of at most %zu characters", outsz - 1);
    return bad(e, path, what);
  }
  memcpy(out, s, n + 1);
  return 0;
}

/* A Kubernetes quantity: Go marshals resource.Quantity as a string, and its
 * decoder also takes a bare JSON number. */
static int quantity(json_object *v, const char *path, uint64_t *out, ioq_err *e) {
  const char *text;
  char buf[64];
  if (json_object_is_type(v, json_type_string)) {
    text = json_object_get_string(v);
    if ((size_t)json_object_get_string_len(v) != strlen(text))
      return bad(e, path, "quantity contains a NUL byte");
  } else if (json_object_is_type(v, json_type_int)) {
    errno = 0;
    int64_t n = json_object_get_int64(v);
    if (n < 0 || errno)
      return bad(e, path, "quantity must be a non-negative whole number");
    snprintf(buf, sizeof buf, "%lld", (long long)n);
    text = buf;
  } else if (json_object_is_type(v, json_type_double)) {
    text = json_object_get_string(v); /* the number as written in the input */
  } else {
    return bad(e, path, "must be a quantity string such as \"200\"");
  }
  if (ioq_parse_quantity_int(text, out, e) < 0) {
    ioq_err_prefix(e, "pod %s", path);
    return -1;
  }
  return 0;
}

/* One resource list (requests or limits): units per ioqos resource, and
 * which ones are present. Other resources are not ours and are skipped. */
static int resource_list(json_object *list, const char *path, uint64_t *units, bool *present,
                         ioq_err *e) {
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    units[r] = 0;
    present[r] = false;
  }
  if (!list)
    return 0;
  if (!json_object_is_type(list, json_type_object))
    return bad(e, path, "must be an object of resource name to quantity");
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    json_object *v;
    if (!json_object_object_get_ex(list, ioq_resource_name(r), &v) || !v)
      continue;
    char p[192];
    snprintf(p, sizeof p, "%s[\"%s\"]", path, ioq_resource_name(r));
    if (quantity(v, p, &units[r], e) < 0)
      return -1;
    present[r] = true;
  }
  return 0;
}

/* A container's ioqos amounts (limit, else request) and whether it is a
 * sidecar (init container with restartPolicy Always). */
static int container_units(json_object *c, const char *path, uint64_t *units, bool *sidecar,
                           ioq_err *e) {
  if (!json_object_is_type(c, json_type_object))
    return bad(e, path, "must be an object");
  char where[160];
  json_object *name = ioq_json_field(c, "name");
  if (name && json_object_is_type(name, json_type_string))
    snprintf(where, sizeof where, "%s (%.64s)", path, json_object_get_string(name));
  else
    snprintf(where, sizeof where, "%s", path);

  *sidecar = false;
  json_object *rp = ioq_json_field(c, "restartPolicy");
  if (rp) {
    if (!json_object_is_type(rp, json_type_string))
      return bad(e, where, "restartPolicy must be a string");
    *sidecar = strcmp(json_object_get_string(rp), "Always") == 0;
  }

  uint64_t req[IOQ_RES_COUNT], lim[IOQ_RES_COUNT];
  bool has_req[IOQ_RES_COUNT], has_lim[IOQ_RES_COUNT];
  json_object *res = ioq_json_field(c, "resources");
  if (res && !json_object_is_type(res, json_type_object))
    return bad(e, where, "resources must be an object");
  char p[192];
  snprintf(p, sizeof p, "%s: resources.requests", where);
  if (resource_list(ioq_json_field(res, "requests"), p, req, has_req, e) < 0)
    return -1;
  snprintf(p, sizeof p, "%s: resources.limits", where);
  if (resource_list(ioq_json_field(res, "limits"), p, lim, has_lim, e) < 0)
    return -1;
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    if (has_req[r] && has_lim[r] && req[r] != lim[r]) {
      char what[256];
      snprintf(what, sizeof what,
               "%s request %llu must equal its limit %llu (extended resources cannot be "
               "overcommitted)",
               ioq_resource_name(r), (unsigned long long)req[r], (unsigned long long)lim[r]);
      return bad(e, where, what);
    }
    units[r] = has_lim[r] ? lim[r] : req[r];
  }
  return 0;
}

static int add_units(uint64_t *acc, const uint64_t *add, const char *path, ioq_err *e) {
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    if (acc[r] > UINT64_MAX - add[r])
      return bad(e, path, "sum of ioqos requests overflows");
    acc[r] += add[r];
  }
  return 0;
}

static void max_units(uint64_t *acc, const uint64_t *v) {
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (v[r] > acc[r])
      acc[r] = v[r];
}

static json_object *container_array(json_object *spec, const char *key, const char *path,
                                    ioq_err *e, int *rc) {
  *rc = 0;
  json_object *a = ioq_json_field(spec, key);
  if (a && !json_object_is_type(a, json_type_array)) {
    *rc = bad(e, path, "must be an array of containers");
    return NULL;
  }
  return a;
}

static int effective_units(json_object *spec, uint64_t *out, ioq_err *e) {
  int rc;
  json_object *apps = container_array(spec, "containers", "spec.containers", e, &rc);
  if (rc < 0)
    return -1;
  json_object *inits = container_array(spec, "initContainers", "spec.initContainers", e, &rc);
  if (rc < 0)
    return -1;

  uint64_t running[IOQ_RES_COUNT] = {0}, sidecars[IOQ_RES_COUNT] = {0},
           init_max[IOQ_RES_COUNT] = {0};
  char path[64];
  bool sidecar;
  for (size_t i = 0; apps && i < json_object_array_length(apps); i++) {
    uint64_t u[IOQ_RES_COUNT];
    snprintf(path, sizeof path, "spec.containers[%zu]", i);
    if (container_units(json_object_array_get_idx(apps, i), path, u, &sidecar, e) < 0 ||
        add_units(running, u, path, e) < 0)
      return -1;
  }
  for (size_t i = 0; inits && i < json_object_array_length(inits); i++) {
    uint64_t u[IOQ_RES_COUNT], use[IOQ_RES_COUNT];
    snprintf(path, sizeof path, "spec.initContainers[%zu]", i);
    if (container_units(json_object_array_get_idx(inits, i), path, u, &sidecar, e) < 0)
      return -1;
    if (sidecar) {
      /* a sidecar keeps running: it adds to the pod total and to what every
       * later init container runs beside */
      if (add_units(running, u, path, e) < 0 || add_units(sidecars, u, path, e) < 0)
        return -1;
      memcpy(use, sidecars, sizeof use);
    } else {
      memcpy(use, u, sizeof use);
      if (add_units(use, sidecars, path, e) < 0)
        return -1;
    }
    max_units(init_max, use);
  }
  max_units(running, init_max);
  memcpy(out, running, sizeof running);
  return 0;
}

static int annotations(json_object *meta, struct ioq_pod_need *out, ioq_err *e) {
  json_object *ann = ioq_json_field(meta, "annotations");
  if (ann && !json_object_is_type(ann, json_type_object))
    return bad(e, "metadata.annotations", "must be an object of string values");
  json_object *v;
  if (ann && json_object_object_get_ex(ann, IOQ_POD_CLASS_ANNOTATION, &v) && v) {
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    if (!s || !ioq_class_name_valid(s) ||
        strlen(s) != (size_t)json_object_get_string_len(v))
      return bad(e, "annotation " IOQ_POD_CLASS_ANNOTATION,
                 "must be a device class name (1-63 characters of a-z, 0-9, '-', '.')");
    strcpy(out->class_name, s);
  }
  if (ann && json_object_object_get_ex(ann, IOQ_POD_DISK_ANNOTATION, &v) && v) {
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    if (!s || !ioq_disk_name_valid(s) || strlen(s) != (size_t)json_object_get_string_len(v))
      return bad(e, "annotation " IOQ_POD_DISK_ANNOTATION,
                 "must be a disk name (1-48 characters of A-Z, a-z, 0-9, '.', '_', '!', '+', '-')");
    strcpy(out->disk, s);
  }
  if (ann && json_object_object_get_ex(ann, IOQ_POD_BURST_ANNOTATION, &v) && v) {
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    bool len_ok = s && strlen(s) == (size_t)json_object_get_string_len(v);
    out->burst = len_ok && strcmp(s, "true") == 0;
    out->burst_invalid = !len_ok || (strcmp(s, "true") != 0 && strcmp(s, "false") != 0);
  }
  return 0;
}

int ioq_pod_need_from_json(json_object *pod, struct ioq_pod_need *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  strcpy(out->class_name, IOQ_DEFAULT_CLASS);
  if (!pod || !json_object_is_type(pod, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod must be a JSON object");
  json_object *meta = ioq_json_field(pod, "metadata");
  if (meta && !json_object_is_type(meta, json_type_object))
    return bad(e, "metadata", "must be an object");
  if (opt_string(meta, "namespace", "metadata.namespace", out->ns, sizeof out->ns, e) < 0 ||
      opt_string(meta, "name", "metadata.name", out->name, sizeof out->name, e) < 0 ||
      opt_string(meta, "uid", "metadata.uid", out->uid, sizeof out->uid, e) < 0 ||
      annotations(meta, out, e) < 0)
    return -1;
  json_object *spec = ioq_json_field(pod, "spec");
  if (spec && !json_object_is_type(spec, json_type_object))
    return bad(e, "spec", "must be an object");
  return effective_units(spec, out->units, e);
}

int ioq_pod_need_parse(const char *text, size_t len, struct ioq_pod_need *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  strcpy(out->class_name, IOQ_DEFAULT_CLASS);
  json_object *root;
  if (ioq_json_parse_strict(text, len, INT32_MAX, "pod", &root, e) < 0)
    return -1;
  int rc = ioq_pod_need_from_json(root, out, e);
  json_object_put(root);
  return rc;
}

bool ioq_pod_need_any(const struct ioq_pod_need *n) {
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (n->units[r])
      return true;
  return false;
}

void ioq_pod_need_placement(const struct ioq_pod_need *n, struct ioq_need *out) {
  memcpy(out->units, n->units, sizeof out->units);
  out->class_name = n->class_name;
}

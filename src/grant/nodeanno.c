// SPDX-License-Identifier: Apache-2.0
#include "grant/nodeanno.h"

#include "base/fsutil.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void ioq_node_state_free(struct ioq_node_state *s) {
  if (!s)
    return;
  free(s->disks);
  s->disks = NULL;
  s->n_disks = 0;
  free(s->pods);
  s->pods = NULL;
  s->n_pods = 0;
}

static int bad(ioq_err *e, const char *field, const char *what) {
  return ioq_fail(e, IOQ_EINVAL_INPUT, "annotation %s: %s: %s", IOQ_NODE_ANNOTATION, field, what);
}

static int get_u64(json_object *obj, const char *key, uint64_t *out) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_int))
    return -1;
  errno = 0;
  int64_t n = json_object_get_int64(v);
  if (n < 0 || errno)
    return -1;
  *out = (uint64_t)n;
  return 0;
}

static int get_str(json_object *obj, const char *key, char *out, size_t outsz) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
    return -1;
  const char *s = json_object_get_string(v);
  if (strlen(s) >= outsz)
    return -2;
  strcpy(out, s);
  return 0;
}

/* {"ioqos/bandwidth":N,"ioqos/iops":M}: each known resource optional (0 if
 * absent), unknown resources ignored */
static int parse_res_map(json_object *obj, const char *field, uint64_t *out, ioq_err *e) {
  if (!json_object_is_type(obj, json_type_object))
    return bad(e, field, "must be an object of resource name to units");
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    json_object *v;
    out[r] = 0;
    if (!json_object_object_get_ex(obj, ioq_resource_name(r), &v))
      continue;
    if (get_u64(obj, ioq_resource_name(r), &out[r]) < 0) {
      char f[96];
      snprintf(f, sizeof f, "%s[\"%s\"]", field, ioq_resource_name(r));
      return bad(e, f, "must be a non-negative integer");
    }
  }
  return 0;
}

static int parse_disk(json_object *d, size_t i, struct ioq_disk_state *out, ioq_err *e) {
  char f[96];
  snprintf(f, sizeof f, "devices[%zu]", i);
  if (!json_object_is_type(d, json_type_object))
    return bad(e, f, "must be an object");
  memset(out, 0, sizeof *out);
  char ff[128];
  snprintf(ff, sizeof ff, "%s.name", f);
  if (get_str(d, "name", out->name, sizeof out->name) < 0 || !ioq_disk_name_valid(out->name))
    return bad(e, ff, "must be a disk name (string, 1-48 characters)");
  snprintf(ff, sizeof ff, "%s.dev", f);
  json_object *v;
  if (json_object_object_get_ex(d, "dev", &v) && get_str(d, "dev", out->dev, sizeof out->dev) < 0)
    return bad(e, ff, "must be a \"MAJ:MIN\" string");
  snprintf(ff, sizeof ff, "%s.class", f);
  if (json_object_object_get_ex(d, "class", &v)) {
    if (get_str(d, "class", out->class_name, sizeof out->class_name) < 0 || !out->class_name[0])
      return bad(e, ff, "must be a non-empty string of at most 63 characters");
  } else {
    strcpy(out->class_name, IOQ_DEFAULT_CLASS);
  }
  snprintf(ff, sizeof ff, "%s.healthy", f);
  if (!json_object_object_get_ex(d, "healthy", &v) || !json_object_is_type(v, json_type_boolean))
    return bad(e, ff, "must be true or false");
  out->healthy = json_object_get_boolean(v);
  /* reason: for people (kubectl ioqos nodes shows it); kept when it is a
   * string on an unhealthy disk, cut to fit, never an error: placement
   * ignores it, and readers of any version accept what writers add here */
  if (!out->healthy && json_object_object_get_ex(d, "reason", &v) &&
      json_object_is_type(v, json_type_string))
    snprintf(out->reason, sizeof out->reason, "%s", json_object_get_string(v));
  snprintf(ff, sizeof ff, "%s.capacity", f);
  if (!json_object_object_get_ex(d, "capacity", &v))
    return bad(e, ff, "is missing");
  if (parse_res_map(v, ff, out->capacity, e) < 0)
    return -1;
  snprintf(ff, sizeof ff, "%s.allocated", f);
  if (json_object_object_get_ex(d, "allocated", &v) && parse_res_map(v, ff, out->allocated, e) < 0)
    return -1;
  if (json_object_object_get_ex(d, "ungrantedPool", &v)) {
    static const char *const keys[IOQ_RES_COUNT] = {"bytesPerSecond", "iops"};
    snprintf(ff, sizeof ff, "%s.ungrantedPool", f);
    if (!json_object_is_type(v, json_type_object))
      return bad(e, ff, "must be an object");
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      json_object *n;
      snprintf(ff, sizeof ff, "%s.ungrantedPool.%s", f, keys[r]);
      if (!json_object_object_get_ex(v, keys[r], &n))
        continue;
      if (!json_object_is_type(n, json_type_int) || json_object_get_int64(n) < 0)
        return bad(e, ff, "must be a non-negative integer");
      out->ungranted_pool[r] = (uint64_t)json_object_get_int64(n);
    }
  }
  if (json_object_object_get_ex(d, "capabilities", &v)) {
    snprintf(ff, sizeof ff, "%s.capabilities", f);
    if (!json_object_is_type(v, json_type_array))
      return bad(e, ff, "must be an array of strings");
    for (size_t k = 0; k < json_object_array_length(v); k++) {
      json_object *c = json_object_array_get_idx(v, k);
      if (!json_object_is_type(c, json_type_string))
        return bad(e, ff, "must be an array of strings");
      out->caps |= ioq_cap_from_name(json_object_get_string(c));
    }
  }
  return 0;
}

/* "2026-12-01T02:38:15Z" (RFC 3339, UTC, whole seconds: what the plugin
 * writes) to unix seconds; -1 if it is not that. */
static int64_t parse_utc(const char *s) {
  struct tm tm = {0};
  const char *end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (!end || *end)
    return -1;
  time_t t = timegm(&tm);
  return t <= 0 ? -1 : (int64_t)t;
}

int ioq_node_anno_parse(const char *text, size_t len, struct ioq_node_state *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (!text || len == 0)
    return bad(e, "(value)", "is empty");
  if (len > (16u << 20))
    return bad(e, "(value)", "is larger than 16 MiB");
  json_tokener *tok = json_tokener_new();
  if (!tok)
    return ioq_fail(e, ENOMEM, "out of memory for the node annotation's JSON parser");
  json_object *root = json_tokener_parse_ex(tok, text, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t end = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if (!root || jerr != json_tokener_success || end != len) {
    json_object_put(root);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "annotation %s: invalid JSON: %s", IOQ_NODE_ANNOTATION,
                    jerr != json_tokener_success ? json_tokener_error_desc(jerr)
                                                 : (root ? "trailing data" : "incomplete"));
  }
  int rc = -1;
  json_object *v;
  uint64_t ver;
  if (!json_object_is_type(root, json_type_object)) {
    bad(e, "(value)", "must be a JSON object");
    goto out;
  }
  if (get_u64(root, "version", &ver) < 0) {
    bad(e, "version", "must be an integer");
    goto out;
  }
  if (ver != IOQ_NODE_ANNO_VERSION) {
    ioq_fail(e, IOQ_EINVAL_INPUT,
             "annotation %s: version %llu is not supported (this build reads %d)",
             IOQ_NODE_ANNOTATION, (unsigned long long)ver, IOQ_NODE_ANNO_VERSION);
    goto out;
  }
  out->version = (int)ver;
  if (json_object_object_get_ex(root, "node", &v) &&
      get_str(root, "node", out->node, sizeof out->node) < 0) {
    bad(e, "node", "must be a node name string");
    goto out;
  }
  ioq_unit_sizes_default(&out->units);
  if (json_object_object_get_ex(root, "units", &v)) {
    uint64_t u[IOQ_RES_COUNT];
    if (parse_res_map(v, "units", u, e) < 0)
      goto out;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      if (u[r])
        out->units.size[r] = u[r];
  }
  json_object *devs;
  if (!json_object_object_get_ex(root, "devices", &devs) ||
      !json_object_is_type(devs, json_type_array)) {
    bad(e, "devices", "must be an array");
    goto out;
  }
  size_t n = json_object_array_length(devs);
  if (n > 4096) {
    bad(e, "devices", "more than 4096 entries");
    goto out;
  }
  out->disks = calloc(n ? n : 1, sizeof *out->disks);
  if (!out->disks) {
    ioq_fail(e, ENOMEM, "out of memory for the node annotation's %zu disks", n);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    if (parse_disk(json_object_array_get_idx(devs, i), i, &out->disks[i], e) < 0)
      goto out;
    for (size_t j = 0; j < i; j++)
      if (strcmp(out->disks[j].name, out->disks[i].name) == 0) {
        char f[64];
        snprintf(f, sizeof f, "devices[%zu].name", i);
        bad(e, f, "duplicates an earlier device");
        goto out;
      }
    out->n_disks = i + 1;
  }
  json_object *pods;
  if (json_object_object_get_ex(root, "pods", &pods) && pods) {
    if (!json_object_is_type(pods, json_type_array)) {
      bad(e, "pods", "must be an array of pod UIDs");
      goto out;
    }
    size_t np = json_object_array_length(pods);
    out->pods = calloc(np ? np : 1, sizeof *out->pods);
    if (!out->pods) {
      ioq_fail(e, ENOMEM, "out of memory for the node annotation's %zu pods of one disk", np);
      goto out;
    }
    for (size_t i = 0; i < np; i++) {
      json_object *u = json_object_array_get_idx(pods, i);
      if (!json_object_is_type(u, json_type_string) ||
          !ioq_copy(out->pods[i], sizeof out->pods[i], json_object_get_string(u))) {
        char f[48];
        snprintf(f, sizeof f, "pods[%zu]", i);
        bad(e, f, "must be a pod UID string");
        goto out;
      }
      out->n_pods = i + 1;
    }
  }
  if (json_object_object_get_ex(root, "publishedAt", &v)) {
    out->published_at =
        json_object_is_type(v, json_type_string) ? parse_utc(json_object_get_string(v)) : -1;
    if (out->published_at < 0) {
      out->published_at = 0;
      bad(e, "publishedAt", "must be a UTC time like \"2026-12-01T02:38:15Z\"");
      goto out;
    }
  }
  rc = 0;
out:
  json_object_put(root);
  if (rc < 0)
    ioq_node_state_free(out);
  return rc;
}

static json_object *res_map(const uint64_t *v) {
  json_object *o = json_object_new_object();
  for (int r = 0; o && r < IOQ_RES_COUNT; r++)
    json_object_object_add(o, ioq_resource_name(r), json_object_new_int64((int64_t)v[r]));
  return o;
}

char *ioq_node_anno_format(const struct ioq_node_state *s) {
  json_object *root = json_object_new_object();
  if (!root)
    return NULL;
  json_object_object_add(root, "version", json_object_new_int(IOQ_NODE_ANNO_VERSION));
  json_object_object_add(root, "node", json_object_new_string(s->node));
  json_object_object_add(root, "units", res_map(s->units.size));
  json_object *devs = json_object_new_array();
  for (size_t i = 0; i < s->n_disks; i++) {
    const struct ioq_disk_state *d = &s->disks[i];
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(d->name));
    json_object_object_add(o, "dev", json_object_new_string(d->dev));
    json_object_object_add(o, "class", json_object_new_string(d->class_name));
    json_object_object_add(o, "healthy", json_object_new_boolean(d->healthy));
    if (!d->healthy && d->reason[0])
      json_object_object_add(o, "reason", json_object_new_string(d->reason));
    json_object_object_add(o, "capacity", res_map(d->capacity));
    json_object_object_add(o, "allocated", res_map(d->allocated));
    json_object *caps = json_object_new_array();
    for (unsigned b = 0; b < IOQ_CAP_COUNT_; b++)
      if (d->caps & (1u << b))
        json_object_array_add(caps, json_object_new_string(ioq_cap_name(1u << b)));
    json_object_object_add(o, "capabilities", caps);
    if (d->ungranted_pool[0] || d->ungranted_pool[1]) {
      json_object *ug = json_object_new_object();
      json_object_object_add(ug, "bytesPerSecond",
                             json_object_new_int64((int64_t)d->ungranted_pool[0]));
      json_object_object_add(ug, "iops", json_object_new_int64((int64_t)d->ungranted_pool[1]));
      json_object_object_add(o, "ungrantedPool", ug);
    }
    json_object_array_add(devs, o);
  }
  json_object_object_add(root, "devices", devs);
  if (s->n_pods) {
    json_object *pods = json_object_new_array();
    for (size_t i = 0; i < s->n_pods; i++)
      json_object_array_add(pods, json_object_new_string(s->pods[i]));
    json_object_object_add(root, "pods", pods);
  }
  if (s->n_faults) {
    json_object *faults = json_object_new_array();
    for (size_t i = 0; i < s->n_faults; i++) {
      json_object *f = json_object_new_object();
      json_object_object_add(f, "select", json_object_new_string(s->faults[i].select));
      json_object_object_add(f, "reason", json_object_new_string(s->faults[i].reason));
      json_object_array_add(faults, f);
    }
    json_object_object_add(root, "faults", faults);
  }
  if (s->nvmet)
    json_object_object_add(root, "nvmet", json_object_get(s->nvmet));
  if (s->published_at > 0) {
    time_t t = (time_t)s->published_at;
    struct tm tm;
    char when[32];
    if (!gmtime_r(&t, &tm) || strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
      json_object_put(root);
      return NULL;
    }
    json_object_object_add(root, "publishedAt", json_object_new_string(when));
  }
  const char *txt =
      json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  char *copy = txt ? strdup(txt) : NULL;
  json_object_put(root);
  return copy;
}

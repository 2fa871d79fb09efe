// SPDX-License-Identifier: Apache-2.0
/* Which settings a node pool change may bring in at run time (poolswitch.h). */
#include "poolswitch.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *poolswitch_name(const struct ioq_config *c) {
  return c->pool ? c->pool : "(top level)";
}

/* A comma-separated list being written into a caller's buffer: once an
 * item does not fit, it ends in "..." and takes nothing more. */
struct list {
  char *s;
  size_t sz, len;
  bool cut;
};

static void list_init(struct list *l, char *out, size_t outsz) {
  *l = (struct list){.s = out, .sz = outsz};
  if (outsz)
    out[0] = '\0';
}

static void list_add(struct list *l, const char *item) {
  static const char cut[] = "...";
  if (l->cut || l->sz < sizeof cut)
    return;
  size_t il = strlen(item), need = il + (l->len ? 1 : 0);
  if (l->len + need + sizeof cut > l->sz) {
    memcpy(l->s + l->len, cut, sizeof cut); /* room kept for it: the items before stay whole */
    l->len += sizeof cut - 1;
    l->cut = true;
    return;
  }
  if (l->len)
    l->s[l->len++] = ',';
  memcpy(l->s + l->len, item, il + 1);
  l->len += il;
}

/* ---- settings fixed at start ---- */

struct fixed_flag {
  const char *path; /* as in the config file */
  size_t off;       /* of a bool in struct ioq_config */
};
#define FIXED(path, member) {path, offsetof(struct ioq_config, member)}
static const struct fixed_flag g_fixed[] = {
    /* given to the pod table at start (main.c setup_podtable) */
    FIXED("enforcement.ioWeight", enforcement.io_weight),
    FIXED("enforcement.bfqWeight", enforcement.bfq_weight),
    FIXED("enforcement.enableControllers", enforcement.enable_controllers),
    /* a hook into the monitor, attached at start (combined.c) */
    FIXED("enforcement.combinedDirections", enforcement.combined_directions),
    /* threads started at start, or not */
    FIXED("monitor.enable", monitor.enable),
    FIXED("nodePolicy.ungranted.enable", node_policy.ungranted_enable),
};

static bool flag_of(const struct ioq_config *c, size_t off) {
  return *(const bool *)((const char *)c + off);
}

static bool str_eq(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

static bool nvmet_ns_eq(const struct ioq_nvmet_ns_config *a, const struct ioq_nvmet_ns_config *b) {
  if (!str_eq(a->subsystem, b->subsystem) || a->nsid != b->nsid || a->raw != b->raw ||
      a->weight != b->weight)
    return false;
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (a->units[r] != b->units[r])
      return false;
  return a->limits.rbps == b->limits.rbps && a->limits.wbps == b->limits.wbps &&
         a->limits.riops == b->limits.riops && a->limits.wiops == b->limits.wiops;
}

static bool nvmet_eq(const struct ioq_config *a, const struct ioq_config *b) {
  if (!str_eq(a->nvmet.parent, b->nvmet.parent) ||
      a->nvmet.allow_namespace_restart != b->nvmet.allow_namespace_restart ||
      a->nvmet.n != b->nvmet.n)
    return false;
  for (size_t i = 0; i < a->nvmet.n; i++)
    if (!nvmet_ns_eq(&a->nvmet.ns[i], &b->nvmet.ns[i]))
      return false;
  return true;
}

size_t poolswitch_restart_fields(const struct ioq_config *run, const struct ioq_config *next,
                                 char *out, size_t outsz) {
  size_t n = 0;
  struct list l;
  list_init(&l, out, outsz);
  for (size_t i = 0; i < sizeof g_fixed / sizeof g_fixed[0]; i++)
    if (flag_of(run, g_fixed[i].off) != flag_of(next, g_fixed[i].off)) {
      n++;
      list_add(&l, g_fixed[i].path);
    }
  if (!nvmet_eq(run, next)) {
    n++;
    list_add(&l, "nvmet");
  }
  return n;
}

/* ---- labels ---- */

static int by_key(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void poolswitch_labels_text(json_object *labels, char *out, size_t outsz) {
  if (!outsz)
    return;
  out[0] = '\0';
  size_t n = labels && json_object_is_type(labels, json_type_object)
                 ? (size_t)json_object_object_length(labels)
                 : 0;
  const char **keys = n ? malloc(n * sizeof *keys) : NULL;
  if (!keys) {
    /* no labels, or no memory to sort them: say which */
    snprintf(out, outsz, "%s", n ? "(out of memory)" : "(none)");
    return;
  }
  size_t k = 0;
  json_object_object_foreach(labels, key, val) {
    (void)val;
    keys[k++] = key;
  }
  qsort(keys, k, sizeof *keys, by_key);
  struct list l;
  list_init(&l, out, outsz);
  for (size_t i = 0; i < k; i++) {
    json_object *v = json_object_object_get(labels, keys[i]);
    const char *vs = v ? json_object_get_string(v) : "";
    size_t pl = strlen(keys[i]) + 1 + strlen(vs) + 1;
    char *pair = malloc(pl);
    if (!pair) {
      list_add(&l, "(out of memory)");
      break;
    }
    snprintf(pair, pl, "%s=%s", keys[i], vs);
    list_add(&l, pair);
    free(pair);
  }
  free(keys);
}

// SPDX-License-Identifier: Apache-2.0
#include "knodes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/jsonfield.h"
#include "kfmt.h"

const char *const ctl_nodes_headers[CTL_NODES_COLS] = {
    "NODE",    "DISK",     "CLASS",      "HEALTHY",   "BW-CAP",    "BW-ALLOC",
    "BW-FREE", "IOPS-CAP", "IOPS-ALLOC", "IOPS-FREE", "PUBLISHED", "REASON"};

static const struct ioq_jf_rule R_ANNO[] = {{IOQ_NODE_ANNOTATION, 0, NULL}, {NULL, 0, NULL}};
static const struct ioq_jf_rule R_META[] = {
    {"name", IOQ_JF_ICASE, NULL}, {"annotations", IOQ_JF_ICASE, R_ANNO}, {NULL, 0, NULL}};
const struct ioq_jf_rule ctl_node_rules[] = {{"metadata", IOQ_JF_ICASE, R_META}, {NULL, 0, NULL}};

int ctl_node_from_json(json_object *node, bool truncated, struct ctl_node *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  const char *name = ioq_json_str_at(node, "metadata", "name");
  if (!name || !ioq_copy(out->name, sizeof out->name, name))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "a Node without a valid metadata.name");
  json_object *meta, *ann, *v;
  if (truncated) {
    out->kind = CTL_NODE_INVALID;
    snprintf(out->error, sizeof out->error, "annotation %s: larger than %u KiB", IOQ_NODE_ANNOTATION,
             CTL_NODE_COST_MAX >> 10);
    return 0;
  }
  if (!json_object_object_get_ex(node, "metadata", &meta) ||
      !json_object_object_get_ex(meta, "annotations", &ann) ||
      !json_object_object_get_ex(ann, IOQ_NODE_ANNOTATION, &v) || !v) {
    out->kind = CTL_NODE_NO_PLUGIN;
    return 0;
  }
  ioq_err pe = {0};
  if (!json_object_is_type(v, json_type_string)) {
    out->kind = CTL_NODE_INVALID;
    snprintf(out->error, sizeof out->error, "annotation %s: not a string", IOQ_NODE_ANNOTATION);
  } else if (ioq_node_anno_parse(json_object_get_string(v), (size_t)json_object_get_string_len(v),
                                 &out->st, &pe) < 0) {
    if (pe.code == ENOMEM)
      return ioq_fail(e, ENOMEM, "%s", pe.msg);
    out->kind = CTL_NODE_INVALID;
    snprintf(out->error, sizeof out->error, "%s", pe.msg);
  } else {
    out->kind = CTL_NODE_OK;
  }
  return 0;
}

void ctl_node_free(struct ctl_node *n) {
  if (n->kind == CTL_NODE_OK)
    ioq_node_state_free(&n->st);
}

static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* units x size, saturating (a hostile annotation's numbers stay numbers) */
static uint64_t scaled(uint64_t units, uint64_t size) {
  return size && units > UINT64_MAX / size ? UINT64_MAX : units * size;
}

/* a JSON integer of an unsigned amount (clamped: JSON readers take int64) */
static json_object *jnum(uint64_t v) { return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v); }

static int add_row(struct ctl_table *t, const char *const *c) { return t ? ctl_table_add(t, c) : 0; }

int ctl_node_render(const struct ctl_node *n, int64_t now, struct ctl_table *t, json_object *arr) {
  json_object *j = arr ? json_object_new_object() : NULL;
  if (arr && (!j || json_object_array_add(arr, j) < 0)) {
    json_object_put(j);
    return -1;
  }
  if (j)
    json_object_object_add(j, "name", json_object_new_string(n->name));
  if (n->kind != CTL_NODE_OK) {
    const char *why = n->kind == CTL_NODE_NO_PLUGIN ? "no ioqos plugin" : n->error;
    if (j) {
      json_object_object_add(j, "plugin", json_object_new_boolean(n->kind != CTL_NODE_NO_PLUGIN));
      if (n->kind == CTL_NODE_INVALID)
        json_object_object_add(j, "error", json_object_new_string(n->error));
    }
    char reason[IOQ_ERR_MSG_MAX + 32];
    snprintf(reason, sizeof reason, "%s%s", n->kind == CTL_NODE_INVALID ? "invalid: " : "", why);
    const char *c[CTL_NODES_COLS] = {n->name, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", reason};
    return add_row(t, c);
  }
  const struct ioq_node_state *s = &n->st;
  char age[64] = "unknown", pub[32] = "";
  bool stale = false;
  if (s->published_at > 0) {
    int64_t a = now - s->published_at;
    stale = a > CTL_ANNO_STALE_S;
    ctl_fmt_age(a, age, sizeof age);
    if (stale)
      strncat(age, " (stale)", sizeof age - strlen(age) - 1);
    ctl_fmt_utc(s->published_at, pub, sizeof pub);
  }
  json_object *disks = NULL;
  if (j) {
    json_object_object_add(j, "plugin", json_object_new_boolean(true));
    json_object_object_add(j, "publishedAt", pub[0] ? json_object_new_string(pub) : NULL);
    if (s->published_at > 0) {
      json_object_object_add(j, "ageSeconds", json_object_new_int64(now - s->published_at));
      json_object_object_add(j, "stale", json_object_new_boolean(stale));
    }
    json_object *u = json_object_new_object();
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      json_object_object_add(u, ioq_resource_name(r), jnum(s->units.size[r]));
    json_object_object_add(j, "unitSizes", u);
    disks = json_object_new_array();
    json_object_object_add(j, "disks", disks);
  }
  if (s->n_disks == 0) {
    const char *c[CTL_NODES_COLS] = {n->name, "-", "-", "-", "-", "-", "-", "-", "-", "-", age,
                                     "the plugin manages no disk"};
    return add_row(t, c);
  }
  for (size_t i = 0; i < s->n_disks; i++) {
    const struct ioq_disk_state *d = &s->disks[i];
    uint64_t cap[IOQ_RES_COUNT], al[IOQ_RES_COUNT], fr[IOQ_RES_COUNT];
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      cap[r] = scaled(d->capacity[r], s->units.size[r]);
      al[r] = scaled(d->allocated[r], s->units.size[r]);
      fr[r] = scaled(sub0(d->capacity[r], d->allocated[r]), s->units.size[r]);
    }
    char bc[32], ba[32], bf[32], ic[24], ia[24], iff[24];
    ctl_fmt_bw(cap[IOQ_RES_BANDWIDTH], bc, sizeof bc);
    ctl_fmt_bw(al[IOQ_RES_BANDWIDTH], ba, sizeof ba);
    ctl_fmt_bw(fr[IOQ_RES_BANDWIDTH], bf, sizeof bf);
    snprintf(ic, sizeof ic, "%" PRIu64, cap[IOQ_RES_IOPS]);
    snprintf(ia, sizeof ia, "%" PRIu64, al[IOQ_RES_IOPS]);
    snprintf(iff, sizeof iff, "%" PRIu64, fr[IOQ_RES_IOPS]);
    const char *reason = d->healthy ? "" : (d->reason[0] ? d->reason : "(no reason given)");
    const char *c[CTL_NODES_COLS] = {n->name, d->name, d->class_name, d->healthy ? "true" : "false",
                                     bc, ba, bf, ic, ia, iff, age, reason};
    if (add_row(t, c) < 0)
      return -1;
    if (!disks)
      continue;
    json_object *dj = json_object_new_object();
    json_object_object_add(dj, "name", json_object_new_string(d->name));
    json_object_object_add(dj, "dev", json_object_new_string(d->dev));
    json_object_object_add(dj, "class", json_object_new_string(d->class_name));
    json_object_object_add(dj, "healthy", json_object_new_boolean(d->healthy));
    if (!d->healthy)
      json_object_object_add(dj, "reason", json_object_new_string(d->reason));
    static const char *const what[] = {"capacity", "allocated", "free"};
    const uint64_t *units[3] = {d->capacity, d->allocated, NULL};
    const uint64_t *real[3] = {cap, al, fr};
    for (int w = 0; w < 3; w++) {
      json_object *m = json_object_new_object();
      for (int r = 0; r < IOQ_RES_COUNT; r++)
        json_object_object_add(m, ioq_resource_name(r),
                               jnum(units[w] ? units[w][r] : sub0(d->capacity[r], d->allocated[r])));
      json_object_object_add(dj, what[w], m);
    }
    json_object *bw = json_object_new_object(), *io = json_object_new_object();
    for (int w = 0; w < 3; w++) {
      json_object_object_add(bw, what[w], jnum(real[w][IOQ_RES_BANDWIDTH]));
      json_object_object_add(io, what[w], jnum(real[w][IOQ_RES_IOPS]));
    }
    json_object_object_add(dj, "bandwidthBytesPerSecond", bw);
    json_object_object_add(dj, "iops", io);
    json_object_array_add(disks, dj);
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
#include "kpods.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/jsonfield.h"
#include "kfmt.h"

const char *const ctl_pods_headers[CTL_PODS_COLS] = {"NAMESPACE", "NAME",  "NODE", "PHASE", "BANDWIDTH",
                                                     "IOPS",      "CLASS", "DISK", "GRANT"};

#define SCALAR(k) {k, IOQ_JF_ICASE, NULL}
static const struct ioq_jf_rule R_ANN[] = {
    {IOQ_POD_CLASS_ANNOTATION, 0, NULL}, {IOQ_POD_DISK_ANNOTATION, 0, NULL},
    {IOQ_POD_BURST_ANNOTATION, 0, NULL},  {NULL, 0, NULL}};
static const struct ioq_jf_rule R_META[] = {
    SCALAR("name"), SCALAR("namespace"), SCALAR("uid"), {"annotations", IOQ_JF_ICASE, R_ANN},
    {NULL, 0, NULL}};
static const struct ioq_jf_rule R_RESLIST[] = {
    {IOQ_RESOURCE_BANDWIDTH, 0, NULL}, {IOQ_RESOURCE_IOPS, 0, NULL}, {NULL, 0, NULL}};
static const struct ioq_jf_rule R_RES[] = {
    {"limits", IOQ_JF_ICASE, R_RESLIST}, {"requests", IOQ_JF_ICASE, R_RESLIST}, {NULL, 0, NULL}};
static const struct ioq_jf_rule R_CTR[] = {
    SCALAR("name"), SCALAR("restartPolicy"), {"resources", IOQ_JF_ICASE, R_RES}, {NULL, 0, NULL}};
static const struct ioq_jf_rule R_SPEC[] = {{"containers", IOQ_JF_ICASE, R_CTR},
                                            {"initContainers", IOQ_JF_ICASE, R_CTR},
                                            SCALAR("nodeName"),
                                            {NULL, 0, NULL}};
static const struct ioq_jf_rule R_STATUS[] = {SCALAR("phase"), {NULL, 0, NULL}};
const struct ioq_jf_rule ctl_pod_rules[] = {{"metadata", IOQ_JF_ICASE, R_META},
                                            {"spec", IOQ_JF_ICASE, R_SPEC},
                                            {"status", IOQ_JF_ICASE, R_STATUS},
                                            {NULL, 0, NULL}};

int ctl_pod_from_json(json_object *pod, bool truncated, struct ctl_pod *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  const char *name = ioq_json_str_at(pod, "metadata", "name");
  const char *ns = ioq_json_str_at(pod, "metadata", "namespace");
  if (!name)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "a Pod without metadata.name");
  ioq_err pe = {0};
  int rc = ioq_pod_need_from_json(pod, &out->need, &pe);
  if (truncated) {
    /* the request may be among what was cut: say so rather than guess */
    snprintf(out->error, sizeof out->error, "pod object larger than %u KiB of the fields read",
             CTL_POD_COST_MAX >> 10);
  } else if (rc < 0) {
    snprintf(out->error, sizeof out->error, "%s", pe.msg);
  } else if (!ioq_pod_need_any(&out->need)) {
    return 0;
  }
  if (rc < 0 || truncated) { /* the identity still comes from the object */
    if (!ioq_copy(out->need.name, sizeof out->need.name, name))
      return ioq_fail(e, ENAMETOOLONG, "pod name too long: %.80s", name);
    if (!ioq_copy(out->need.ns, sizeof out->need.ns, ns ? ns : ""))
      return ioq_fail(e, ENAMETOOLONG, "pod %.80s: namespace too long: %.80s", name, ns);
    const char *uid = ioq_json_str_at(pod, "metadata", "uid");
    if (!ioq_copy(out->need.uid, sizeof out->need.uid, uid ? uid : ""))
      return ioq_fail(e, ENAMETOOLONG, "pod %.80s: uid too long: %.80s", name, uid);
  }
  const char *node = ioq_json_str_at(pod, "spec", "nodeName");
  const char *phase = ioq_json_str_at(pod, "status", "phase");
  if (!ioq_copy(out->node, sizeof out->node, node ? node : ""))
    return ioq_fail(e, ENAMETOOLONG, "pod %.80s: spec.nodeName too long: %.80s", name, node);
  ioq_copy_trunc(out->phase, sizeof out->phase, phase ? phase : ""); /* shown, not matched */
  return 1;
}

static bool pod_listed(const struct ioq_node_state *s, const char *uid) {
  for (size_t i = 0; i < s->n_pods; i++)
    if (uid[0] && strcmp(s->pods[i], uid) == 0)
      return true;
  return false;
}

/* The pod's disk on the node: index into s->disks, -1 if none is known.
 * *src says where it came from. */
static int pod_disk(const struct ctl_pod *p, const struct ioq_node_state *s, const char **src,
                    size_t *n_in_class) {
  *n_in_class = 0;
  *src = NULL;
  int only = -1;
  for (size_t i = 0; s && i < s->n_disks; i++) {
    if (p->need.disk[0] && strcmp(s->disks[i].name, p->need.disk) == 0) {
      *src = "annotation";
      return (int)i;
    }
    if (strcmp(s->disks[i].class_name, p->need.class_name) == 0) {
      only = (int)i;
      (*n_in_class)++;
    }
  }
  if (p->need.disk[0]) {
    *src = "annotation";
    return -1;
  }
  if (*n_in_class == 1) {
    *src = "only disk of its class";
    return only;
  }
  return -1;
}

static void fmt_amount(const struct ctl_pod *p, int r, const struct ioq_node_state *s, char *buf,
                       size_t n) {
  uint64_t u = p->need.units[r];
  if (!u) {
    snprintf(buf, n, "-");
    return;
  }
  if (!s) {
    snprintf(buf, n, "%" PRIu64 " units", u);
    return;
  }
  uint64_t sz = s->units.size[r];
  uint64_t v = sz && u > UINT64_MAX / sz ? UINT64_MAX : u * sz;
  char amt[40];
  if (r == IOQ_RES_BANDWIDTH)
    ctl_fmt_bw(v, amt, sizeof amt);
  else
    snprintf(amt, sizeof amt, "%" PRIu64 " IOPS", v);
  snprintf(buf, n, "%" PRIu64 " (%s)", u, amt);
}

int ctl_pod_render(const struct ctl_pod *p, enum ctl_node_view view, const struct ctl_node *node,
                   struct ctl_table *t, json_object *arr) {
  const struct ioq_node_state *s =
      view == CTL_VIEW_NODE && node && node->kind == CTL_NODE_OK ? &node->st : NULL;
  const char *src;
  size_t n_class;
  int di = pod_disk(p, s, &src, &n_class);
  char disk[IOQ_DISK_NAME_MAX + 48] = "-";
  if (di >= 0)
    snprintf(disk, sizeof disk, "%s", s->disks[di].name);
  else if (p->need.disk[0])
    snprintf(disk, sizeof disk, "%s%s", p->need.disk, s ? " (not on the node)" : "");
  else if (s && n_class > 1)
    snprintf(disk, sizeof disk, "one of %zu", n_class);

  char grant[160];
  const char *g = grant;
  bool held = false;
  if (p->error[0])
    snprintf(grant, sizeof grant, "invalid request: %s", p->error);
  else if (strcmp(p->phase, "Succeeded") == 0 || strcmp(p->phase, "Failed") == 0)
    g = "ended";
  else if (!p->node[0])
    g = "unscheduled";
  else if (view == CTL_VIEW_NO_ACCESS)
    g = "unknown (cannot list nodes)";
  else if (view == CTL_VIEW_NOT_FOUND || !node)
    g = "node not found";
  else if (node->kind == CTL_NODE_NO_PLUGIN)
    g = "node has no ioqos plugin";
  else if (node->kind == CTL_NODE_INVALID)
    g = "node annotation invalid";
  else if ((held = pod_listed(s, p->need.uid)))
    g = di >= 0 && !s->disks[di].healthy ? "held (disk unhealthy)" : "held";
  else
    g = "not reported yet";

  char bw[64], io[64];
  fmt_amount(p, IOQ_RES_BANDWIDTH, s, bw, sizeof bw);
  fmt_amount(p, IOQ_RES_IOPS, s, io, sizeof io);
  if (t) {
    const char *c[CTL_PODS_COLS] = {p->need.ns, p->need.name, p->node[0] ? p->node : "-",
                                    p->phase[0] ? p->phase : "-", bw, io, p->need.class_name,
                                    disk, g};
    if (ctl_table_add(t, c) < 0)
      return -1;
  }
  if (!arr)
    return 0;
  json_object *j = json_object_new_object();
  if (!j || json_object_array_add(arr, j) < 0) {
    json_object_put(j);
    return -1;
  }
  json_object_object_add(j, "namespace", json_object_new_string(p->need.ns));
  json_object_object_add(j, "name", json_object_new_string(p->need.name));
  json_object_object_add(j, "uid", json_object_new_string(p->need.uid));
  json_object_object_add(j, "node", p->node[0] ? json_object_new_string(p->node) : NULL);
  json_object_object_add(j, "phase", p->phase[0] ? json_object_new_string(p->phase) : NULL);
  json_object_object_add(j, "class", json_object_new_string(p->need.class_name));
  if (p->error[0]) {
    json_object_object_add(j, "error", json_object_new_string(p->error));
  } else {
    json_object *u = json_object_new_object();
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      if (p->need.units[r])
        json_object_object_add(u, ioq_resource_name(r), json_object_new_int64((int64_t)p->need.units[r]));
    json_object_object_add(j, "units", u);
    if (s) {
      uint64_t b = p->need.units[IOQ_RES_BANDWIDTH], i = p->need.units[IOQ_RES_IOPS];
      uint64_t bs = s->units.size[IOQ_RES_BANDWIDTH], is = s->units.size[IOQ_RES_IOPS];
      if (b && (!bs || b <= INT64_MAX / bs))
        json_object_object_add(j, "bandwidthBytesPerSecond", json_object_new_int64((int64_t)(b * bs)));
      if (i && (!is || i <= INT64_MAX / is))
        json_object_object_add(j, "iops", json_object_new_int64((int64_t)(i * is)));
    }
  }
  json_object_object_add(j, "disk", di >= 0 ? json_object_new_string(s->disks[di].name)
                                   : p->need.disk[0] ? json_object_new_string(p->need.disk) : NULL);
  json_object_object_add(j, "diskSource", src ? json_object_new_string(src) : NULL);
  if (di >= 0)
    json_object_object_add(j, "diskHealthy", json_object_new_boolean(s->disks[di].healthy));
  json_object_object_add(j, "grant", json_object_new_string(held ? "held" : g));
  json_object_object_add(j, "held", json_object_new_boolean(held));
  return 0;
}

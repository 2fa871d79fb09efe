// SPDX-License-Identifier: Apache-2.0
/* kubectl ioqos (plugin/ctl): table layout (column widths, UTF-8, control
 * characters, empty cells), ages, and the node-annotation -> rows and
 * pod -> row decisions, without an API server. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfmt.h"
#include "knodes.h"
#include "kpods.h"
#include "ktable.h"

static char *render(struct ctl_table *t) {
  char *s = ctl_table_format(t);
  cr_assert_not_null(s);
  return s;
}

Test(ctl_table, columns_align_to_the_widest_cell_with_three_spaces) {
  static const char *const h[] = {"NAME", "X", "LAST"};
  struct ctl_table t;
  cr_assert_eq(ctl_table_init(&t, 3, h), 0);
  const char *r1[] = {"a", "longer-cell", "end"};
  const char *r2[] = {"much-longer-name", "b", "tail value"};
  cr_assert_eq(ctl_table_add(&t, r1), 0);
  cr_assert_eq(ctl_table_add(&t, r2), 0);
  char *s = render(&t);
  cr_assert_str_eq(s, "NAME               X             LAST\n"
                      "a                  longer-cell   end\n"
                      "much-longer-name   b             tail value\n");
  free(s);
  ctl_table_free(&t);
}

Test(ctl_table, utf8_counts_characters_and_empty_cells_say_none) {
  static const char *const h[] = {"A", "B"};
  struct ctl_table t;
  ctl_table_init(&t, 2, h);
  const char *r1[] = {"déjà", "x"};
  const char *r2[] = {"", NULL};
  ctl_table_add(&t, r1);
  ctl_table_add(&t, r2);
  cr_assert_eq(ctl_text_width("déjà"), 4);
  char *s = render(&t);
  cr_assert_str_eq(s, "A        B\n"
                      "déjà     x\n"
                      "<none>   <none>\n");
  free(s);
  ctl_table_free(&t);
}

Test(ctl_table, control_characters_never_reach_the_output) {
  static const char *const h[] = {"A", "B"};
  struct ctl_table t;
  ctl_table_init(&t, 2, h);
  const char *r[] = {"x\ny\x1b[2J", "t\tz\x7f"};
  ctl_table_add(&t, r);
  char *s = render(&t);
  cr_assert_str_eq(s, "A         B\n"
                      "x?y?[2J   t?z?\n");
  free(s);
  ctl_table_free(&t);
}

Test(ctl_table, column_count_is_bounded) {
  static const char *const h[CTL_TABLE_COLS_MAX + 1] = {"A"};
  struct ctl_table t;
  cr_assert_eq(ctl_table_init(&t, 0, h), -1);
  cr_assert_eq(ctl_table_init(&t, CTL_TABLE_COLS_MAX + 1, h), -1);
}

Test(ctl_fmt, ages_as_kubectl_prints_them) {
  static const struct {
    long long s;
    const char *want;
  } c[] = {{-5, "0s"},       {0, "0s"},       {119, "119s"},  {120, "2m"},   {130, "2m10s"},
           {600, "10m"},     {3599, "59m"},   {10799, "179m"}, {10800, "3h"}, {11400, "3h10m"},
           {28800, "8h"},    {172799, "47h"}, {172800, "2d"},  {190800, "2d5h"}, {86400 * 45, "45d"},
           {86400 * 800, "2y"}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char b[32];
    cr_assert_str_eq(ctl_fmt_age(c[i].s, b, sizeof b), c[i].want, "%lld", c[i].s);
  }
  char b[32];
  cr_assert_str_eq(ctl_fmt_bw(200u << 20, b, sizeof b), "200MiB/s");
  cr_assert_str_eq(ctl_fmt_bw(1u << 19, b, sizeof b), "0.5MiB/s");
  cr_assert_str_eq(ctl_fmt_bw(0, b, sizeof b), "0MiB/s");
  cr_assert_str_eq(ctl_fmt_bw(3000000, b, sizeof b), "2.86MiB/s");
}

/* ---- node annotation -> rows ---- */

static json_object *node_obj(const char *name, const char *anno) {
  json_object *n = json_object_new_object(), *m = json_object_new_object();
  json_object_object_add(m, "name", json_object_new_string(name));
  if (anno) {
    json_object *a = json_object_new_object();
    json_object_object_add(a, IOQ_NODE_ANNOTATION, json_object_new_string(anno));
    json_object_object_add(m, "annotations", a);
  }
  json_object_object_add(n, "metadata", m);
  return n;
}

static const char *cell(const struct ctl_table *t, size_t row, size_t col) {
  return t->cells[row * t->ncols + col];
}

#define ANNO_A                                                                                       \
  "{\"version\":1,\"node\":\"n1\",\"units\":{\"ioqos/bandwidth\":2097152,\"ioqos/iops\":100},"      \
  "\"devices\":[{\"name\":\"nvme0n1\",\"class\":\"fast\",\"healthy\":true,"                        \
  "\"capacity\":{\"ioqos/bandwidth\":500,\"ioqos/iops\":40},\"allocated\":{\"ioqos/bandwidth\":600}}," \
  "{\"name\":\"sdb\",\"healthy\":false,\"reason\":\"disk sdb is gone\",\"capacity\":{}}],"         \
  "\"pods\":[\"u1\"],\"publishedAt\":\"2026-12-01T02:38:15Z\"}"

Test(ctl_nodes, one_row_per_disk_in_real_units_free_never_negative) {
  json_object *o = node_obj("n1", ANNO_A);
  struct ctl_node n;
  ioq_err e = {0};
  cr_assert_eq(ctl_node_from_json(o, false, &n, &e), 0, "%s", e.msg);
  cr_assert_eq(n.kind, CTL_NODE_OK);
  struct ctl_table t;
  ctl_table_init(&t, CTL_NODES_COLS, ctl_nodes_headers);
  json_object *arr = json_object_new_array();
  int64_t now = 1796092695 + 1000; /* publishedAt + 1000 s: past the stale mark */
  cr_assert_eq(ctl_node_render(&n, now, &t, arr), 0);
  cr_assert_eq(t.nrows, 2);
  /* 2 MiB/s units: 500 units = 1000 MiB/s; allocated beyond capacity: free 0 */
  const char *want0[CTL_NODES_COLS] = {"n1", "nvme0n1", "fast", "true", "1000MiB/s", "1200MiB/s",
                                       "0MiB/s", "4000", "0", "4000", "16m (stale)", ""};
  for (size_t c = 0; c < CTL_NODES_COLS; c++)
    cr_assert_str_eq(cell(&t, 0, c), want0[c], "column %s", ctl_nodes_headers[c]);
  cr_assert_str_eq(cell(&t, 1, 2), "default");
  cr_assert_str_eq(cell(&t, 1, 3), "false");
  cr_assert_str_eq(cell(&t, 1, 11), "disk sdb is gone");
  json_object *j = json_object_array_get_idx(arr, 0), *v, *d;
  cr_assert(json_object_object_get_ex(j, "stale", &v) && json_object_get_boolean(v));
  cr_assert(json_object_object_get_ex(j, "publishedAt", &v));
  cr_assert_str_eq(json_object_get_string(v), "2026-12-01T02:38:15Z");
  json_object_object_get_ex(j, "disks", &d);
  json_object *d0 = json_object_array_get_idx(d, 0), *fr, *b;
  json_object_object_get_ex(d0, "free", &fr);
  json_object_object_get_ex(fr, "ioqos/bandwidth", &b);
  cr_assert_eq(json_object_get_int64(b), 0);
  json_object_put(arr);
  ctl_table_free(&t);
  ctl_node_free(&n);
  json_object_put(o);
}

Test(ctl_nodes, without_annotation_invalid_and_truncated_are_one_row_each) {
  static const struct {
    const char *anno;
    bool truncated;
    enum ctl_node_kind kind;
    const char *reason_prefix;
  } c[] = {
      {NULL, false, CTL_NODE_NO_PLUGIN, "no ioqos plugin"},
      {"{\"version\":2,\"devices\":[]}", false, CTL_NODE_INVALID,
       "invalid: annotation ioqos.io/devices: version 2 is not supported"},
      {"{\"version\":1,\"devices\":[{\"name\":\"sda\"}]}", false, CTL_NODE_INVALID,
       "invalid: annotation ioqos.io/devices: devices[0].healthy: must be true or false"},
      {"[", false, CTL_NODE_INVALID, "invalid: annotation ioqos.io/devices: invalid JSON"},
      {NULL, true, CTL_NODE_INVALID, "invalid: annotation ioqos.io/devices: larger than"},
      {"{\"version\":1,\"devices\":[]}", false, CTL_NODE_OK, "the plugin manages no disk"},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    json_object *o = node_obj("n", c[i].anno);
    struct ctl_node n;
    ioq_err e = {0};
    cr_assert_eq(ctl_node_from_json(o, c[i].truncated, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n.kind, c[i].kind, "case %zu", i);
    struct ctl_table t;
    ctl_table_init(&t, CTL_NODES_COLS, ctl_nodes_headers);
    cr_assert_eq(ctl_node_render(&n, 0, &t, NULL), 0);
    cr_assert_eq(t.nrows, 1);
    cr_assert_str_eq(cell(&t, 0, 0), "n");
    cr_assert(strncmp(cell(&t, 0, 11), c[i].reason_prefix, strlen(c[i].reason_prefix)) == 0,
              "case %zu: %s", i, cell(&t, 0, 11));
    ctl_table_free(&t);
    ctl_node_free(&n);
    json_object_put(o);
  }
  /* no name: not a node */
  json_object *o = json_object_new_object();
  struct ctl_node n;
  ioq_err e = {0};
  cr_assert_eq(ctl_node_from_json(o, false, &n, &e), -1);
  json_object_put(o);
}

/* ---- pod -> row ---- */

static json_object *pod_obj(const char *uid, const char *node, const char *bw, const char *disk,
                            const char *cls, const char *phase) {
  char txt[2048];
  snprintf(txt, sizeof txt,
           "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"%s\",\"annotations\":{%s%s%s%s%s%s%s}},"
           "\"spec\":{%s%s%s\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{%s%s%s}}}]},"
           "\"status\":{\"phase\":\"%s\"}}",
           uid, disk ? "\"ioqos.io/disk\":\"" : "", disk ? disk : "", disk ? "\"" : "",
           disk && cls ? "," : "", cls ? "\"ioqos.io/class\":\"" : "", cls ? cls : "", cls ? "\"" : "",
           node ? "\"nodeName\":\"" : "", node ? node : "", node ? "\"," : "",
           bw ? "\"ioqos/bandwidth\":\"" : "", bw ? bw : "", bw ? "\"" : "", phase);
  json_object *o = json_tokener_parse(txt);
  cr_assert_not_null(o, "%s", txt);
  return o;
}

#define ANNO_P                                                                                       \
  "{\"version\":1,\"devices\":["                                                                    \
  "{\"name\":\"a\",\"healthy\":false,\"capacity\":{\"ioqos/bandwidth\":100}},"                      \
  "{\"name\":\"b\",\"class\":\"fast\",\"healthy\":true,\"capacity\":{\"ioqos/bandwidth\":100}},"     \
  "{\"name\":\"c\",\"class\":\"fast\",\"healthy\":true,\"capacity\":{\"ioqos/bandwidth\":100}}],"    \
  "\"pods\":[\"held-uid\"]}"

Test(ctl_pods, disk_and_grant_follow_the_annotations) {
  json_object *no = node_obj("n1", ANNO_P);
  struct ctl_node node;
  ioq_err e = {0};
  cr_assert_eq(ctl_node_from_json(no, false, &node, &e), 0, "%s", e.msg);
  static const struct {
    const char *uid, *node, *bw, *disk, *cls, *phase;
    enum ctl_node_view view;
    const char *want_disk, *want_grant, *want_bw;
  } c[] = {
      /* the only default disk, unhealthy, held */
      {"held-uid", "n1", "10", NULL, NULL, "Running", CTL_VIEW_NODE, "a", "held (disk unhealthy)", "10 (10MiB/s)"},
      /* two disks of class fast and no ioqos.io/disk: not known which */
      {"x", "n1", "10", NULL, "fast", "Pending", CTL_VIEW_NODE, "one of 2", "not reported yet", "10 (10MiB/s)"},
      {"x", "n1", "10", "c", "fast", "Running", CTL_VIEW_NODE, "c", "not reported yet", "10 (10MiB/s)"},
      {"x", "n1", "10", "zz", NULL, "Running", CTL_VIEW_NODE, "zz (not on the node)", "not reported yet", "10 (10MiB/s)"},
      {"x", NULL, "10", NULL, NULL, "Pending", CTL_VIEW_NOT_FOUND, "-", "unscheduled", "10 units"},
      {"x", "n9", "10", "c", NULL, "Running", CTL_VIEW_NOT_FOUND, "c", "node not found", "10 units"},
      {"x", "n1", "10", "c", NULL, "Running", CTL_VIEW_NO_ACCESS, "c", "unknown (cannot list nodes)", "10 units"},
      {"held-uid", "n1", "10", NULL, NULL, "Succeeded", CTL_VIEW_NODE, "a", "ended", "10 (10MiB/s)"},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    json_object *po = pod_obj(c[i].uid, c[i].node, c[i].bw, c[i].disk, c[i].cls, c[i].phase);
    struct ctl_pod p;
    cr_assert_eq(ctl_pod_from_json(po, false, &p, &e), 1, "case %zu: %s", i, e.msg);
    struct ctl_table t;
    ctl_table_init(&t, CTL_PODS_COLS, ctl_pods_headers);
    cr_assert_eq(ctl_pod_render(&p, c[i].view, c[i].view == CTL_VIEW_NODE ? &node : NULL, &t, NULL), 0);
    cr_assert_str_eq(cell(&t, 0, 7), c[i].want_disk, "case %zu", i);
    cr_assert_str_eq(cell(&t, 0, 8), c[i].want_grant, "case %zu", i);
    cr_assert_str_eq(cell(&t, 0, 4), c[i].want_bw, "case %zu", i);
    cr_assert_str_eq(cell(&t, 0, 5), "-", "case %zu", i);
    ctl_table_free(&t);
    json_object_put(po);
  }
  ctl_node_free(&node);
  json_object_put(no);
}

Test(ctl_pods, pods_without_ioqos_are_skipped_and_bad_requests_shown) {
  ioq_err e = {0};
  struct ctl_pod p;
  json_object *po = pod_obj("u", "n1", NULL, NULL, NULL, "Running");
  cr_assert_eq(ctl_pod_from_json(po, false, &p, &e), 0);
  json_object_put(po);
  po = pod_obj("u", "n1", "many", NULL, NULL, "Running");
  cr_assert_eq(ctl_pod_from_json(po, false, &p, &e), 1);
  cr_assert(p.error[0]);
  cr_assert_str_eq(p.need.name, "p");
  cr_assert_str_eq(p.need.uid, "u");
  struct ctl_table t;
  ctl_table_init(&t, CTL_PODS_COLS, ctl_pods_headers);
  cr_assert_eq(ctl_pod_render(&p, CTL_VIEW_NOT_FOUND, NULL, &t, NULL), 0);
  cr_assert(strncmp(cell(&t, 0, 8), "invalid request: ", 17) == 0, "%s", cell(&t, 0, 8));
  ctl_table_free(&t);
  json_object_put(po);
  /* cut by the filter: shown, never guessed */
  po = pod_obj("u", "n1", NULL, NULL, NULL, "Running");
  cr_assert_eq(ctl_pod_from_json(po, true, &p, &e), 1);
  cr_assert(strstr(p.error, "larger than"), "%s", p.error);
  json_object_put(po);
}

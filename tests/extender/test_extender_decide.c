// SPDX-License-Identifier: Apache-2.0
/* Request parsing and per-node decisions: filter verdicts, reasons, scores,
 * assumed placements, node annotation problems. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "decide.h"
#include "nodeinfo.h"

#define ANNO_TWO_DISKS                                                                             \
  "{\"version\":1,\"node\":\"n1\",\"devices\":["                                                   \
  "{\"name\":\"nvme0n1\",\"dev\":\"259:0\",\"class\":\"fast\",\"healthy\":true,"                    \
  "\"capacity\":{\"ioqos/bandwidth\":1000,\"ioqos/iops\":100},"                                     \
  "\"allocated\":{\"ioqos/bandwidth\":880,\"ioqos/iops\":0}},"                                      \
  "{\"name\":\"nvme1n1\",\"dev\":\"259:1\",\"class\":\"fast\",\"healthy\":true,"                    \
  "\"capacity\":{\"ioqos/bandwidth\":1000,\"ioqos/iops\":100},"                                     \
  "\"allocated\":{\"ioqos/bandwidth\":300,\"ioqos/iops\":0}},"                                      \
  "{\"name\":\"sda\",\"dev\":\"8:0\",\"class\":\"default\",\"healthy\":false,"                      \
  "\"capacity\":{\"ioqos/bandwidth\":200},\"allocated\":{}}]}"

static void info_from(const char *anno, struct ext_nodeinfo *ni) {
  ext_nodeinfo_from_anno("n1", anno, anno ? strlen(anno) : 0, ni);
}

static struct ioq_need need(uint64_t bw, uint64_t iops, const char *cls) {
  struct ioq_need n = {.units = {bw, iops}, .class_name = cls};
  return n;
}

Test(decide, fits_on_the_best_disk) {
  struct ext_nodeinfo ni;
  info_from(ANNO_TWO_DISKS, &ni);
  cr_assert_eq(ni.status, EXT_NODE_OK, "%s", ni.error);
  struct ext_assumed *a = ext_assumed_new(60000);
  struct ioq_need n = need(200, 0, "fast");
  struct ext_verdict v;
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_FITS);
  cr_assert_str_eq(ni.st.disks[v.disk].name, "nvme1n1");
  cr_assert_eq(v.score, 5); /* 1 - 500/1000 */
  ext_assumed_free(a);
  ext_nodeinfo_free(&ni);
}

Test(decide, not_enough_free_units_names_the_best_disk) {
  struct ext_nodeinfo ni;
  info_from(ANNO_TWO_DISKS, &ni);
  struct ext_assumed *a = ext_assumed_new(60000);
  struct ioq_need n = need(800, 0, "fast");
  struct ext_verdict v;
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_FAILED);
  cr_assert(strstr(v.reason, "no disk in class fast has 800 free bandwidth units; best: nvme1n1 with 700"),
            "%s", v.reason);
  ext_assumed_free(a);
  ext_nodeinfo_free(&ni);
}

Test(decide, assumed_units_count_against_the_disk) {
  struct ext_nodeinfo ni;
  info_from(ANNO_TWO_DISKS, &ni);
  struct ext_assumed *a = ext_assumed_new(60000);
  ioq_err e = {0};
  struct ext_node_lock *l = ext_assumed_lock_node(a, "n1", &e);
  uint64_t u[IOQ_RES_COUNT] = {600, 0};
  cr_assert_eq(ext_assumed_add(a, "n1", "uid-1", "ns/p", "nvme1n1", u, &e), 0);
  ext_assumed_unlock_node(l);
  struct ioq_need n = need(200, 0, "fast");
  struct ext_verdict v;
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_FAILED, "700 - 600 assumed leaves 100");
  cr_assert(strstr(v.reason, "best: nvme0n1 with 120"), "%s", v.reason);
  /* the node reports the pod: its units are in `allocated` now, the
   * assumption goes (here the annotation did not change, so it fits again) */
  const char uids[][IOQ_POD_UID_STR_MAX + 1] = {"uid-1"};
  ext_assumed_confirm(a, "n1", uids, 1);
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_FITS);
  ext_assumed_free(a);
  ext_nodeinfo_free(&ni);
}

Test(decide, class_absent_is_unresolvable_unhealthy_is_not) {
  struct ext_nodeinfo ni;
  info_from(ANNO_TWO_DISKS, &ni);
  struct ext_assumed *a = ext_assumed_new(60000);
  struct ext_verdict v;
  struct ioq_need n = need(10, 0, "archive");
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_UNRESOLVABLE);
  cr_assert(strstr(v.reason, "no disk in class archive"), "%s", v.reason);
  n = need(10, 0, NULL); /* default class: only sda, which is unhealthy */
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_FAILED);
  cr_assert(strstr(v.reason, "no healthy disk in class default"), "%s", v.reason);
  ext_assumed_free(a);
  ext_nodeinfo_free(&ni);
}

Test(decide, missing_malformed_and_unknown_nodes) {
  struct ext_assumed *a = ext_assumed_new(60000);
  struct ioq_need n = need(10, 0, NULL);
  struct ext_verdict v;
  struct ext_nodeinfo ni;
  info_from(NULL, &ni);
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_UNRESOLVABLE);
  cr_assert(strstr(v.reason, "no ioqos.io/devices annotation"), "%s", v.reason);
  ext_nodeinfo_free(&ni);

  info_from("{\"version\":1,\"devices\":[{\"name\":\"sda\",\"healthy\":\"yes\",\"capacity\":{}}]}", &ni);
  cr_assert_eq(ni.status, EXT_NODE_MALFORMED);
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_UNRESOLVABLE);
  cr_assert(strstr(v.reason, "devices[0].healthy"), "%s", v.reason);
  ext_nodeinfo_free(&ni);

  info_from("{not json", &ni);
  cr_assert_eq(ni.status, EXT_NODE_MALFORMED);
  cr_assert(strstr(ni.error, "invalid JSON"), "%s", ni.error);
  ext_nodeinfo_free(&ni);

  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "ghost", NULL, &v);
  cr_assert_eq(v.kind, EXT_UNRESOLVABLE);
  cr_assert(strstr(v.reason, "not in the ioqos extender's node cache"), "%s", v.reason);
  ext_assumed_free(a);
}

Test(decide, plugin_pod_list) {
  struct ext_nodeinfo ni;
  info_from("{\"version\":1,\"devices\":[],\"pods\":[\"a\",\"b\"]}", &ni);
  cr_assert_eq(ni.status, EXT_NODE_OK, "%s", ni.error);
  cr_assert_eq(ni.st.n_pods, 2);
  cr_assert_str_eq(ni.st.pods[1], "b");
  ext_nodeinfo_free(&ni);
  info_from("{\"version\":1,\"devices\":[],\"pods\":\"a\"}", &ni);
  cr_assert_eq(ni.status, EXT_NODE_MALFORMED);
  cr_assert(strstr(ni.error, "pods: must be an array"), "%s", ni.error);
  ext_nodeinfo_free(&ni);
}

Test(nodeinfo, from_node_object) {
  json_object *node = json_tokener_parse(
      "{\"metadata\":{\"name\":\"w1\",\"annotations\":{\"ioqos.io/devices\":\"{\\\"version\\\":1,"
      "\\\"devices\\\":[]}\"}},\"status\":{}}");
  struct ext_nodeinfo ni;
  ioq_err e = {0};
  cr_assert_eq(ext_nodeinfo_from_json(node, &ni, &e), 0, "%s", e.msg);
  cr_assert_str_eq(ni.name, "w1");
  cr_assert_eq(ni.status, EXT_NODE_OK);
  ext_nodeinfo_free(&ni);
  json_object_put(node);

  node = json_tokener_parse("{\"metadata\":{\"name\":\"w1\",\"annotations\":{\"ioqos.io/devices\":5}}}");
  cr_assert_eq(ext_nodeinfo_from_json(node, &ni, &e), 0);
  cr_assert_eq(ni.status, EXT_NODE_MALFORMED);
  cr_assert(strstr(ni.error, "must be a string"), "%s", ni.error);
  ext_nodeinfo_free(&ni);
  json_object_put(node);

  node = json_tokener_parse("{\"metadata\":{}}");
  cr_assert_eq(ext_nodeinfo_from_json(node, &ni, &e), -1);
  cr_assert(strstr(e.msg, "no metadata.name"), "%s", e.msg);
  json_object_put(node);
}

/* ---- request parsing ---- */

static int args_of(const char *json, struct ext_args *a, ioq_err *e, json_object **root) {
  *root = json_tokener_parse(json);
  return ext_args_parse(*root, a, e);
}

Test(args, both_modes_and_casing) {
  struct ext_args a;
  ioq_err e = {0};
  json_object *root;
  cr_assert_eq(args_of("{\"Pod\":{},\"Nodes\":null,\"NodeNames\":[\"a\",\"b\"]}", &a, &e, &root), 0,
               "%s", e.msg);
  cr_assert(a.names_mode);
  cr_assert_eq(a.n, 2);
  cr_assert_str_eq(ext_args_name(&a, 1), "b");
  json_object_put(root);
  cr_assert_eq(args_of("{\"pod\":{},\"nodes\":{\"items\":[{\"metadata\":{\"name\":\"x\"}}]},"
                       "\"nodenames\":null}",
                       &a, &e, &root),
               0, "%s", e.msg);
  cr_assert_not(a.names_mode);
  cr_assert_eq(a.n, 1);
  json_object_put(root);
  cr_assert_eq(args_of("{\"Pod\":{},\"Nodes\":{\"metadata\":{},\"items\":null}}", &a, &e, &root), 0);
  cr_assert_eq(a.n, 0);
  json_object_put(root);
}

struct bad_args {
  char json[160];
  char want[80];
};

ParameterizedTestParameters(args, bad) {
  static struct bad_args cases[] = {
      {"[]", "request: must be a JSON object"},
      {"{\"Nodes\":{\"items\":[]}}", "Pod: is missing"},
      {"{\"Pod\":null,\"NodeNames\":[]}", "Pod: is missing"},
      {"{\"Pod\":[],\"NodeNames\":[]}", "Pod: must be a Pod object"},
      {"{\"Pod\":{}}", "neither Nodes nor NodeNames"},
      {"{\"Pod\":{},\"Nodes\":{},\"NodeNames\":[]}", "both Nodes and NodeNames"},
      {"{\"Pod\":{},\"NodeNames\":\"a\"}", "NodeNames: must be an array"},
      {"{\"Pod\":{},\"NodeNames\":[\"a\",3]}", "NodeNames[1]: must be a node name"},
      {"{\"Pod\":{},\"NodeNames\":[\"\"]}", "NodeNames[0]: must be a node name"},
      {"{\"Pod\":{},\"Nodes\":[]}", "Nodes: must be a NodeList object"},
      {"{\"Pod\":{},\"Nodes\":{\"items\":{}}}", "Nodes.items: must be an array"},
      {"{\"Pod\":{},\"Nodes\":{\"items\":[1]}}", "Nodes.items[0]: must be a Node object"},
      {"{\"Pod\":{\"spec\":{\"containers\":5}},\"NodeNames\":[]}", "pod spec.containers"},
  };
  return cr_make_param_array(struct bad_args, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad_args *c, args, bad) {
  struct ext_args a;
  ioq_err e = {0};
  json_object *root;
  cr_assert_eq(args_of(c->json, &a, &e, &root), -1, "%s should fail", c->json);
  cr_assert(strstr(e.msg, c->want), "%s: '%s' lacks '%s'", c->json, e.msg, c->want);
  json_object_put(root);
}

Test(args, bind_args) {
  struct ext_bind_args b;
  ioq_err e = {0};
  json_object *root = json_tokener_parse(
      "{\"PodName\":\"db-0\",\"PodNamespace\":\"prod\",\"PodUID\":\"6f1c2a9e-6a1b\",\"Node\":\"w1.example\"}");
  cr_assert_eq(ext_bind_args_parse(root, &b, &e), 0, "%s", e.msg);
  cr_assert_str_eq(b.pod_name, "db-0");
  cr_assert_str_eq(b.node, "w1.example");
  cr_assert_str_eq(b.pod_uid, "6f1c2a9e-6a1b");
  json_object_put(root);
  root = json_tokener_parse("{\"podname\":\"a\",\"podnamespace\":\"b\",\"node\":\"c\"}");
  cr_assert_eq(ext_bind_args_parse(root, &b, &e), 0, "any key casing: %s", e.msg);
  json_object_put(root);

  const char *bad[][2] = {
      {"{\"PodNamespace\":\"b\",\"Node\":\"c\"}", "PodName: is missing"},
      {"{\"PodName\":\"../etc\",\"PodNamespace\":\"b\",\"Node\":\"c\"}", "not a valid Kubernetes name"},
      {"{\"PodName\":\"a\",\"PodNamespace\":\"b/c\",\"Node\":\"c\"}", "PodNamespace"},
      /* the shared DNS-1123 rules: no empty label, a namespace has no dot */
      {"{\"PodName\":\"a..b\",\"PodNamespace\":\"b\",\"Node\":\"c\"}", "PodName"},
      {"{\"PodName\":\"a\",\"PodNamespace\":\"b.c\",\"Node\":\"c\"}", "PodNamespace"},
      {"{\"PodName\":\"a\",\"PodNamespace\":\"b\",\"Node\":\"w1..example\"}", "Node"},
      {"{\"PodName\":\"a\",\"PodNamespace\":\"b\",\"Node\":7}", "Node: must be a string"},
      {"{\"PodName\":\"a\",\"PodNamespace\":\"b\",\"Node\":\"c\",\"PodUID\":\"x?y\"}", "PodUID"},
      {"5", "must be a JSON object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    root = json_tokener_parse(bad[i][0]);
    cr_assert_eq(ext_bind_args_parse(root, &b, &e), -1, "%s", bad[i][0]);
    cr_assert(strstr(e.msg, bad[i][1]), "%s: '%s' lacks '%s'", bad[i][0], e.msg, bad[i][1]);
    json_object_put(root);
  }
}

/* ---- freshness of the node annotation (issue 12 item 3) ---- */

static int64_t g_wall = 1796092695; /* 2026-12-01T02:38:15Z */
static int64_t wall(void) { return g_wall; }

Test(decide, stale_annotation_is_unknown) {
  ext_decide_set_max_age(900, wall);
  const char *fresh = "{\"version\":1,\"devices\":[{\"name\":\"sda\",\"healthy\":true,"
                      "\"capacity\":{\"ioqos/bandwidth\":100}}],"
                      "\"publishedAt\":\"2026-12-01T02:30:00Z\"}";
  struct ext_nodeinfo ni;
  info_from(fresh, &ni);
  cr_assert_eq(ni.status, EXT_NODE_OK, "%s", ni.error);
  struct ext_assumed *a = ext_assumed_new(60000);
  struct ioq_need n = need(10, 0, NULL);
  struct ext_verdict v;
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_FITS, "495 s old, bound 900: %s", v.reason);
  g_wall += 600; /* 1095 s after publishing */
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_UNRESOLVABLE);
  cr_assert(strstr(v.reason, "is stale: published 1095 s ago, more than 900 s"), "%s", v.reason);
  ext_nodeinfo_free(&ni);
  /* no publishedAt (a plugin older than the marker): taken as it is */
  info_from(ANNO_TWO_DISKS, &ni);
  struct ioq_need f = need(10, 0, "fast");
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &f, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_FITS, "%s", v.reason);
  ext_nodeinfo_free(&ni);
  /* 0 = never stale */
  ext_decide_set_max_age(0, wall);
  info_from(fresh, &ni);
  ext_decide(a, IOQ_POLICY_LEAST_ALLOCATED, &n, NULL, "n1", &ni, &v);
  cr_assert_eq(v.kind, EXT_FITS, "%s", v.reason);
  ext_nodeinfo_free(&ni);
  ext_assumed_free(a);
  ext_decide_set_max_age(0, NULL);
}

/* ---- body reading and the parse-memory budget ---- */
#include "body.h"

static void feed_all(struct ext_body *b, const char *s, size_t chunk) {
  size_t n = strlen(s);
  for (size_t off = 0; off < n; off += chunk)
    ext_body_feed(b, s + off, n - off < chunk ? n - off : chunk);
  ext_body_finish(b);
}

Test(body, chunked_reading_and_errors) {
  const char *cases[][2] = {
      {"{\"a\":[1,2,{\"b\":null}]}  \n", ""},
      {"  42 ", ""},
      {"{\"a\":", "truncated JSON"},
      {"{} x", "data after the JSON value"},
      {"{\"a\":tru}", "not valid JSON"},
      {"", "body is empty"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (size_t chunk = 1; chunk <= 7; chunk += 3) {
      struct ext_body b;
      cr_assert_eq(ext_body_init(&b, 1024, EXT_BODY_LENGTH_UNKNOWN, NULL), 0);
      feed_all(&b, cases[i][0], chunk);
      if (!cases[i][1][0]) {
        cr_assert_eq(b.err_status, 0, "%s: %s", cases[i][0], b.err);
        cr_assert(b.complete);
      } else {
        cr_assert_eq(b.err_status, 400, "%s", cases[i][0]);
        cr_assert(strstr(b.err, cases[i][1]), "%s: '%s'", cases[i][0], b.err);
      }
      ext_body_free(&b);
    }
}

Test(body, byte_limit) {
  struct ext_body b;
  ext_body_init(&b, 10, EXT_BODY_LENGTH_UNKNOWN, NULL);
  feed_all(&b, "[1,2,3,4,5,6,7]", 4);
  cr_assert_eq(b.err_status, 413);
  cr_assert(strstr(b.err, "larger than 10 bytes"), "%s", b.err);
  ext_body_free(&b);
}

Test(body, memory_budget_is_shared_and_returned) {
  struct ext_budget budget = {.max = 100000};
  struct ext_body a, b;
  ext_body_init(&a, 1 << 20, EXT_BODY_LENGTH_UNKNOWN, &budget);
  ext_body_init(&b, 1 << 20, EXT_BODY_LENGTH_UNKNOWN, &budget);
  /* 60 objects ~ 53 KB each way: a fits, b does not while a holds its share */
  char big[512] = "[";
  for (int i = 0; i < 60; i++)
    strcat(big, "{},");
  ext_body_feed(&a, big, strlen(big));
  cr_assert_eq(a.err_status, 0, "%s", a.err);
  cr_assert_gt(budget.used, 50000);
  ext_body_feed(&b, big, strlen(big));
  cr_assert_eq(b.err_status, 503);
  cr_assert(strstr(b.err, "too many large requests in progress"), "%s", b.err);
  ext_body_free(&b);
  ext_body_free(&a);
  cr_assert_eq(budget.used, 0, "reservations returned");
  /* alone too big: 413 */
  char huge[1024] = "[";
  for (int i = 0; i < 150; i++)
    strcat(huge, "{},");
  ext_body_init(&a, 1 << 20, EXT_BODY_LENGTH_UNKNOWN, &budget);
  ext_body_feed(&a, huge, strlen(huge));
  cr_assert_eq(a.err_status, 413);
  cr_assert(strstr(a.err, "needs more than 87500 bytes of memory"), "%s", a.err);
  cr_assert_eq(budget.used, 0, "an error returns the reservation at once");
  ext_body_free(&a);
}

static size_t est(const char *s) {
  struct ext_json_scan sc = {0};
  return ext_json_tree_estimate(&sc, s, strlen(s));
}

Test(body, estimate_is_an_upper_bound_for_common_shapes) {
  /* per-shape costs measured on json-c 0.16 (see body.c); the measured
   * check over whole floods is in test_extender_memory.c */
  cr_assert_geq(est("{},"), 792);
  cr_assert_geq(est("[],"), 152);
  cr_assert_geq(est("1,"), 72);
  cr_assert_geq(est("{\"a\":1},"), 888);
  cr_assert_geq(est("\"a\":1,"), 200);
}

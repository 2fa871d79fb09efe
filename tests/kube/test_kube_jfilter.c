// SPDX-License-Identifier: Apache-2.0
/* The streaming JSON filter (src/kube/kube_jfilter.c): what it keeps,
 * units one at a time, the per-unit cost budget. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_jfilter.h"

static const struct ioq_jf_rule LIMITS[] = {{"ioqos/iops", 0, NULL}, {NULL, 0, NULL}};
static const struct ioq_jf_rule CTR[] = {{"name", IOQ_JF_ICASE, NULL},
                                         {"limits", IOQ_JF_ICASE, LIMITS},
                                         {NULL, 0, NULL}};
static const struct ioq_jf_rule ITEM[] = {{"name", IOQ_JF_ICASE, NULL},
                                          {"containers", IOQ_JF_ICASE, CTR},
                                          {"status", 0, NULL}, /* kept whole */
                                          {NULL, 0, NULL}};
static const struct ioq_jf_rule LIST[] = {{"continue", 0, NULL},
                                          {"items", IOQ_JF_UNIT, ITEM},
                                          {NULL, 0, NULL}};
static const struct ioq_jf_rule ROOT = {"", 0, LIST};

struct got {
  char text[8][32768];
  bool trunc[8];
  int n;
};

static void on_unit(void *ud, json_object *u, bool truncated) {
  struct got *g = ud;
  cr_assert_lt(g->n, 8);
  snprintf(g->text[g->n], sizeof g->text[0], "%s", json_object_to_json_string_ext(u, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  g->trunc[g->n++] = truncated;
}

static json_object *run(const char *text, size_t cap, struct got *g) {
  ioq_err e = {0};
  json_object *root = NULL;
  int rc = ioq_jf_parse(&ROOT, cap, text, strlen(text), on_unit, g, &root, &e);
  cr_assert_eq(rc, 0, "%s", e.msg);
  return root;
}

Test(jfilter, keeps_only_named_fields) {
  struct got *g = calloc(1, sizeof *g);
  json_object *root = run(
      "{\"kind\":\"List\",\"continue\":\"c1\",\"items\":["
      "{\"Name\":\"a\",\"env\":[{\"name\":\"E1\"},{\"name\":\"E2\"}],\"managedFields\":{\"x\":{}},"
      "\"containers\":[{\"NAME\":\"c\",\"image\":\"i\",\"limits\":{\"ioqos/iops\":\"5\",\"IOQOS/IOPS\":\"7\",\"cpu\":1}}],"
      "\"status\":{\"phase\":\"Running\",\"n\":[1,2.50,null,true]}},"
      "{\"name\":\"b\",\"containers\":7}]}",
      1 << 20, g);
  cr_assert_str_eq(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN),
                   "{\"continue\":\"c1\",\"items\":[]}");
  json_object_put(root);
  cr_assert_eq(g->n, 2);
  /* struct fields match ignoring case (original key kept), map keys exactly;
   * numbers as json-c reads them */
  cr_assert_str_eq(g->text[0], "{\"Name\":\"a\",\"containers\":[{\"NAME\":\"c\",\"limits\":"
                              "{\"ioqos/iops\":\"5\"}}],\"status\":{\"phase\":\"Running\","
                              "\"n\":[1,2.50,null,true]}}");
  cr_assert_str_eq(g->text[1], "{\"name\":\"b\",\"containers\":7}");
  cr_assert(!g->trunc[0] && !g->trunc[1]);
  free(g);
}

Test(jfilter, unit_over_budget_is_cut_and_marked) {
  /* 3000 containers: the kept fields exceed 16 KiB of cost */
  size_t cap = 3000 * 40 + 256;
  char *big = malloc(cap);
  size_t n = (size_t)snprintf(big, cap, "{\"items\":[{\"name\":\"huge\",\"containers\":[");
  for (int i = 0; i < 3000; i++)
    n += (size_t)snprintf(big + n, cap - n, "%s{\"name\":\"c%d\"}", i ? "," : "", i);
  n += (size_t)snprintf(big + n, cap - n, "]},{\"name\":\"next\"}]}");
  struct got *g = calloc(1, sizeof *g);
  json_object_put(run(big, 16 * 1024, g));
  free(big);
  cr_assert_eq(g->n, 2);
  cr_assert(g->trunc[0]);
  cr_assert(strstr(g->text[0], "\"name\":\"huge\""), "%s", g->text[0]);
  cr_assert(strstr(g->text[0], "\"" IOQ_JF_TRUNCATED_KEY "\":true"), "%s", g->text[0]);
  /* the next unit has a budget of its own */
  cr_assert(!g->trunc[1]);
  cr_assert_str_eq(g->text[1], "{\"name\":\"next\"}");
  free(g);
}

Test(jfilter, skipped_parts_cost_nothing_even_deep) {
  /* 200 000 levels of nesting in a field nobody reads */
  size_t depth = 200000;
  char *t = malloc(2 * depth + 64);
  size_t n = (size_t)sprintf(t, "{\"items\":[{\"deep\":");
  memset(t + n, '[', depth);
  n += depth;
  memset(t + n, ']', depth);
  n += depth;
  strcpy(t + n, ",\"name\":\"x\"}]}");
  struct got *g = calloc(1, sizeof *g);
  json_object_put(run(t, 1024, g));
  free(t);
  cr_assert_eq(g->n, 1);
  cr_assert_str_eq(g->text[0], "{\"name\":\"x\"}");
  free(g);
}

Test(jfilter, errors) {
  ioq_err e = {0};
  json_object *root = NULL;
  cr_assert_eq(ioq_jf_parse(&ROOT, 1024, "{\"items\":[{]}", 13, on_unit, NULL, &root, &e), -1);
  cr_assert(strstr(e.msg, "invalid JSON"), "%s", e.msg);
  cr_assert_eq(ioq_jf_parse(&ROOT, 1024, "{\"items\":[]", 11, on_unit, NULL, &root, &e), -1);
  /* the kept root (outside units) has the same budget: an error, not a cut */
  char big[4096];
  snprintf(big, sizeof big, "{\"continue\":\"%03000d\"}", 0);
  cr_assert_eq(ioq_jf_parse(&ROOT, 1024, big, strlen(big), on_unit, NULL, &root, &e), -1);
  cr_assert(strstr(e.msg, "budget"), "%s", e.msg);
}

// SPDX-License-Identifier: Apache-2.0
/* The pod cache reads pods through the streaming filter with
 * podcache_pod_rules: what it learns must be exactly what the whole object
 * gives (a field pod_info_from_json or ioq_pod_need_from_json reads but the
 * rules miss would silently read as absent). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/podcache.h"

/* every field the readers look at, in the casings Go's decoder accepts */
static const char *const RICH_POD =
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
    "\"metadata\":{\"name\":\"db-0\",\"namespace\":\"prod\",\"uid\":\"8b1c\","
    "\"resourceVersion\":\"42\",\"creationTimestamp\":\"2026-01-02T03:04:05Z\","
    "\"deletionTimestamp\":\"2026-01-02T04:00:00Z\",\"labels\":{\"a\":\"b\"},"
    "\"annotations\":{\"ioqos.io/class\":\"fast\",\"ioqos.io/disk\":\"nvme0n1\",\"ioqos.io/burst\":\"true\","
    "\"other\":\"x\"},"
    "\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsV1\":{\"f:spec\":{}}}]},"
    "\"spec\":{\"nodeName\":\"n1\",\"volumes\":[{\"name\":\"v\"}],"
    "\"initContainers\":["
    "{\"name\":\"init-a\",\"image\":\"i\",\"resources\":{\"limits\":{\"ioqos/bandwidth\":\"300\"}}},"
    "{\"name\":\"side\",\"restartPolicy\":\"Always\",\"Resources\":{\"Requests\":{\"ioqos/iops\":7}}}],"
    "\"containers\":["
    "{\"Name\":\"app\",\"env\":[{\"name\":\"E\",\"value\":\"1\"}],"
    "\"resources\":{\"limits\":{\"ioqos/bandwidth\":\"100\",\"cpu\":\"1\"},"
    "\"requests\":{\"ioqos/bandwidth\":\"100\",\"memory\":\"1Gi\"}}},"
    "{\"name\":\"log\",\"resources\":{\"limits\":{\"ioqos/iops\":\"5\"}}}]},"
    "\"status\":{\"phase\":\"Pending\",\"qosClass\":\"Burstable\",\"podIP\":\"10.0.0.1\","
    "\"initContainerStatuses\":["
    "{\"name\":\"init-a\",\"state\":{\"terminated\":{\"exitCode\":0,\"message\":\"done\"}}},"
    "{\"Name\":\"side\",\"State\":{\"running\":{\"startedAt\":\"2026-01-02T03:05:00Z\"}}}],"
    "\"containerStatuses\":[{\"name\":\"app\",\"ready\":false}]}}";

static void keep(void *ud, json_object *unit, bool truncated) {
  (void)truncated;
  *(json_object **)ud = json_object_get(unit);
}

static json_object *filtered(const char *text) {
  static const struct ioq_jf_rule root = {"", IOQ_JF_UNIT, podcache_pod_rules};
  json_object *obj = NULL;
  ioq_err e = {0};
  cr_assert_eq(ioq_jf_parse(&root, POD_COST_MAX, text, strlen(text), keep, &obj, NULL, &e), 0,
               "%s", e.msg);
  cr_assert_not_null(obj);
  return obj;
}

Test(podcache, filtered_pod_reads_the_same_as_the_whole_object) {
  json_object *whole = json_tokener_parse(RICH_POD), *part = filtered(RICH_POD);
  cr_assert_not_null(whole);
  static struct pod_info a, b;
  ioq_err e = {0};
  cr_assert_eq(pod_info_from_json(whole, &a, &e), 0, "%s", e.msg);
  cr_assert_eq(pod_info_from_json(part, &b, &e), 0, "%s", e.msg);
  cr_assert(a.need_ok && !a.oversized && a.terminating && a.has_qos);
  cr_assert_eq(a.n_ctrs, 4);
  cr_assert_str_eq(a.need.disk, "nvme0n1");
  cr_assert(a.need.burst, "the burst annotation survives the filter");
  cr_assert_eq(a.ctrs[0].state, PCS_TERMINATED, "init-a: %d", a.ctrs[0].state);
  cr_assert_eq(a.ctrs[1].state, PCS_RUNNING, "side: %d", a.ctrs[1].state);
  cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "the filtered pod reads differently");
  /* and the parts nobody reads are not kept */
  const char *txt = json_object_to_json_string(part);
  cr_assert_null(strstr(txt, "managedFields"));
  cr_assert_null(strstr(txt, "env"));
  cr_assert_null(strstr(txt, "other"));
  cr_assert_null(strstr(txt, "cpu"));
  cr_assert_null(strstr(txt, "exitCode"));
  json_object_put(whole);
  json_object_put(part);
}

Test(podcache, invalid_spec_reads_invalid_both_ways) {
  /* request != limit: invalid whichever way it is read */
  const char *bad = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},\"spec\":{\"containers\":"
                    "[{\"name\":\"c\",\"resources\":{\"limits\":{\"ioqos/iops\":\"5\"},"
                    "\"requests\":{\"ioqos/iops\":\"4\"}}}]}}";
  json_object *whole = json_tokener_parse(bad), *part = filtered(bad);
  static struct pod_info a, b;
  ioq_err e = {0};
  cr_assert_eq(pod_info_from_json(whole, &a, &e), 0);
  cr_assert_eq(pod_info_from_json(part, &b, &e), 0);
  cr_assert(!a.need_ok && !b.need_ok);
  cr_assert_eq(memcmp(&a, &b, sizeof a), 0);
  json_object_put(whole);
  json_object_put(part);
}

Test(podcache, pod_past_its_budget_is_oversized) {
  /* 4000 containers asking for units */
  size_t cap = 4000 * 90 + 200;
  char *t = malloc(cap);
  size_t n = (size_t)snprintf(t, cap, "{\"metadata\":{\"name\":\"big\",\"namespace\":\"n\",\"uid\":\"u\"},"
                                      "\"spec\":{\"containers\":[");
  for (int i = 0; i < 4000; i++)
    n += (size_t)snprintf(t + n, cap - n, "%s{\"name\":\"c%d\",\"resources\":{\"limits\":{\"ioqos/iops\":\"1\"}}}",
                          i ? "," : "", i);
  snprintf(t + n, cap - n, "]}}");
  json_object *part = filtered(t);
  free(t);
  static struct pod_info p;
  ioq_err e = {0};
  cr_assert_eq(pod_info_from_json(part, &p, &e), 0, "%s", e.msg);
  cr_assert(p.oversized);
  cr_assert(!p.need_ok);
  cr_assert_str_eq(p.name, "big");
  cr_assert_str_eq(p.uid, "u");
  json_object_put(part);
}

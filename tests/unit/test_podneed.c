// SPDX-License-Identifier: Apache-2.0
/* A pod's ioqos needs from Pod JSON: Kubernetes' effective-request rule
 * (init containers, sidecars), quantities, class/disk annotations, Go-style
 * key casing, and a clear error for each bad input. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "grant/podneed.h"

static struct ioq_pod_need parse_ok(const char *json) {
  struct ioq_pod_need n;
  ioq_err e = {0};
  int rc = ioq_pod_need_parse(json, strlen(json), &n, &e);
  cr_assert_eq(rc, 0, "parse failed: %s\ninput: %s", e.msg, json);
  return n;
}

static void parse_bad(const char *json, const char *want) {
  struct ioq_pod_need n;
  ioq_err e = {0};
  int rc = ioq_pod_need_parse(json, strlen(json), &n, &e);
  cr_assert_eq(rc, -1, "expected failure for %s", json);
  cr_assert(strstr(e.msg, want), "message '%s' lacks '%s'", e.msg, want);
}

/* a pod with app containers given as "bw/iops" pairs via JSON fragments */
#define POD(containers, inits)                                                                      \
  "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u-1\"},\"spec\":{\"containers\":[" \
  containers "],\"initContainers\":[" inits "]}}"
#define C(name, res) "{\"name\":\"" name "\",\"resources\":" res "}"
#define SIDECAR(name, res) "{\"name\":\"" name "\",\"restartPolicy\":\"Always\",\"resources\":" res "}"
#define BW(n) "{\"limits\":{\"ioqos/bandwidth\":\"" #n "\"},\"requests\":{\"ioqos/bandwidth\":\"" #n "\"}}"

Test(podneed, no_ioqos_resources_is_no_need) {
  struct ioq_pod_need n = parse_ok(
      "{\"metadata\":{\"name\":\"web\",\"namespace\":\"default\",\"uid\":\"abc\"},"
      "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"100m\","
      "\"memory\":\"64Mi\"}}}]}}");
  cr_assert_not(ioq_pod_need_any(&n));
  cr_assert_str_eq(n.class_name, "default");
  cr_assert_str_eq(n.disk, "");
  cr_assert_str_eq(n.name, "web");
  cr_assert_str_eq(n.ns, "default");
  cr_assert_str_eq(n.uid, "abc");
}

Test(podneed, limit_only_request_only_and_both) {
  struct ioq_pod_need n = parse_ok(POD(
      C("a", "{\"limits\":{\"ioqos/bandwidth\":\"100\"}}") ","
      C("b", "{\"requests\":{\"ioqos/bandwidth\":\"20\",\"ioqos/iops\":\"3\"}}") ","
      C("c", "{\"limits\":{\"ioqos/iops\":\"4\"},\"requests\":{\"ioqos/iops\":\"4\"}}"), ""));
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 120);
  cr_assert_eq(n.units[IOQ_RES_IOPS], 7);
  cr_assert(ioq_pod_need_any(&n));
}

Test(podneed, request_different_from_limit_is_invalid) {
  parse_bad(POD(C("db", "{\"limits\":{\"ioqos/bandwidth\":\"200\"},\"requests\":{\"ioqos/bandwidth\":\"100\"}}"), ""),
            "spec.containers[0] (db): ioqos/bandwidth request 100 must equal its limit 200");
}

Test(podneed, init_container_larger_than_apps_wins) {
  struct ioq_pod_need n = parse_ok(POD(C("a", BW(100)) "," C("b", BW(50)), C("init", BW(300))));
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 300);
}

Test(podneed, apps_larger_than_init_win) {
  struct ioq_pod_need n = parse_ok(POD(C("a", BW(100)) "," C("b", BW(50)), C("init", BW(120))));
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 150);
}

/* upstream rule: a sidecar adds to the running total and to every later
 * init container's use */
Test(podneed, sidecar_adds_to_apps_and_later_inits) {
  /* app 100 + sidecar 50 running = 150; init after the sidecar uses 120 + 50 = 170 */
  struct ioq_pod_need n =
      parse_ok(POD(C("app", BW(100)), SIDECAR("proxy", BW(50)) "," C("migrate", BW(120))));
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 170);
}

Test(podneed, init_before_sidecar_does_not_see_it) {
  /* init 120 runs alone; then app 100 + sidecar 50 = 150 */
  struct ioq_pod_need n =
      parse_ok(POD(C("app", BW(100)), C("migrate", BW(120)) "," SIDECAR("proxy", BW(50))));
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 150);
}

Test(podneed, sidecars_accumulate) {
  /* sidecars 10 + 20, then an init of 5 uses 35; running = 100 + 30 = 130 */
  struct ioq_pod_need n = parse_ok(POD(C("app", BW(100)), SIDECAR("s1", BW(10)) "," SIDECAR(
                                                             "s2", BW(20)) "," C("late", BW(5))));
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 130);
  /* and a big late init: 200 + 30 = 230 */
  n = parse_ok(POD(C("app", BW(100)),
                   SIDECAR("s1", BW(10)) "," SIDECAR("s2", BW(20)) "," C("late", BW(200))));
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 230);
}

Test(podneed, sidecar_only_pod) {
  struct ioq_pod_need n = parse_ok(POD(C("app", "{}"), SIDECAR("s", BW(40))));
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 40);
}

Test(podneed, restart_policy_other_than_always_is_plain_init) {
  struct ioq_pod_need n = parse_ok(POD(
      C("app", BW(100)),
      "{\"name\":\"i\",\"restartPolicy\":\"OnFailure\",\"resources\":" BW(50) "}"));
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 100);
}

Test(podneed, resources_are_independent) {
  /* init is larger on iops only */
  struct ioq_pod_need n = parse_ok(POD(
      C("app", "{\"limits\":{\"ioqos/bandwidth\":\"100\",\"ioqos/iops\":\"2\"}}"),
      C("init", "{\"limits\":{\"ioqos/bandwidth\":\"10\",\"ioqos/iops\":\"9\"}}")));
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 100);
  cr_assert_eq(n.units[IOQ_RES_IOPS], 9);
}

struct qcase {
  char q[24];
  unsigned long long want; /* 0 = must fail */
  char err[48];
};

ParameterizedTestParameters(podneed, quantities) {
  static struct qcase cases[] = {
      {"\"200\"", 200, ""},           {"\"2k\"", 2000, ""},
      {"\"1Ki\"", 1024, ""},          {"\"1.5k\"", 1500, ""},
      {"\"3e2\"", 300, ""},           {"200", 200, ""},
      {"\"0.5\"", 0, "not a whole number"},
      {"\"-1\"", 0, "negative"},      {"\"abc\"", 0, "no digits"},
      {"\"12x\"", 0, "unknown suffix"},
      {"-5", 0, "non-negative"},      {"true", 0, "quantity string"},
      {"2.5", 0, "not a whole number"},
  };
  return cr_make_param_array(struct qcase, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct qcase *c, podneed, quantities) {
  char json[256];
  snprintf(json, sizeof json,
           "{\"spec\":{\"containers\":[{\"name\":\"x\",\"resources\":{\"limits\":{\"ioqos/"
           "bandwidth\":%s}}}]}}",
           c->q);
  struct ioq_pod_need n;
  ioq_err e = {0};
  int rc = ioq_pod_need_parse(json, strlen(json), &n, &e);
  if (c->want) {
    cr_assert_eq(rc, 0, "%s: %s", c->q, e.msg);
    cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], c->want);
  } else {
    cr_assert_eq(rc, -1, "%s should fail", c->q);
    cr_assert(strstr(e.msg, c->err), "%s: message '%s' lacks '%s'", c->q, e.msg, c->err);
    cr_assert(strstr(e.msg, "spec.containers[0] (x): resources.limits[\"ioqos/bandwidth\"]"),
              "message '%s' does not name the field", e.msg);
  }
}

Test(podneed, annotations_class_and_disk) {
  struct ioq_pod_need n = parse_ok(
      "{\"metadata\":{\"annotations\":{\"ioqos.io/class\":\"fast\",\"ioqos.io/disk\":\"nvme1n1\","
      "\"other\":\"x\"}},\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"ioqos/"
      "bandwidth\":\"5\"}}}]}}");
  cr_assert_str_eq(n.class_name, "fast");
  cr_assert_str_eq(n.disk, "nvme1n1");
  struct ioq_need pl;
  ioq_pod_need_placement(&n, &pl);
  cr_assert_str_eq(pl.class_name, "fast");
  cr_assert_eq(pl.units[IOQ_RES_BANDWIDTH], 5);
}

Test(podneed, burst_annotation) {
  static const struct {
    const char *ann;
    bool burst, invalid;
  } cases[] = {
      {"", false, false},
      {",\"ioqos.io/burst\":\"true\"", true, false},
      {",\"ioqos.io/burst\":\"false\"", false, false},
      /* a typo must not cost the pod its grant: not bursting, said invalid */
      {",\"ioqos.io/burst\":\"True\"", false, true},
      {",\"ioqos.io/burst\":\"yes\"", false, true},
      {",\"ioqos.io/burst\":true", false, true},
      {",\"ioqos.io/burst\":\"true\\u0000x\"", false, true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char j[512];
    snprintf(j, sizeof j,
             "{\"metadata\":{\"annotations\":{\"other\":\"x\"%s}},\"spec\":{\"containers\":[{"
             "\"resources\":{\"limits\":{\"ioqos/bandwidth\":\"5\"}}}]}}",
             cases[i].ann);
    struct ioq_pod_need n = parse_ok(j);
    cr_assert_eq(n.burst, cases[i].burst, "%s", j);
    cr_assert_eq(n.burst_invalid, cases[i].invalid, "%s", j);
    cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 5, "the need stands whatever the annotation: %s", j);
  }
}

Test(podneed, bad_annotations) {
  parse_bad("{\"metadata\":{\"annotations\":{\"ioqos.io/class\":\"Fast!\"}}}", "annotation ioqos.io/class");
  parse_bad("{\"metadata\":{\"annotations\":{\"ioqos.io/class\":\"\"}}}", "annotation ioqos.io/class");
  parse_bad("{\"metadata\":{\"annotations\":{\"ioqos.io/class\":7}}}", "annotation ioqos.io/class");
  parse_bad("{\"metadata\":{\"annotations\":{\"ioqos.io/disk\":\"a/b\"}}}", "annotation ioqos.io/disk");
  parse_bad("{\"metadata\":{\"annotations\":[]}}", "metadata.annotations");
}

Test(podneed, go_style_key_casing) {
  /* Go's decoder matches struct fields case-insensitively; map keys exactly */
  struct ioq_pod_need n = parse_ok(
      "{\"METADATA\":{\"Name\":\"p\",\"NameSpace\":\"n\"},\"Spec\":{\"CONTAINERS\":[{\"Resources\":"
      "{\"Limits\":{\"ioqos/bandwidth\":\"7\",\"IOQOS/IOPS\":\"9\"}}}]}}");
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 7);
  cr_assert_eq(n.units[IOQ_RES_IOPS], 0, "resource names are map keys: matched exactly");
  cr_assert_str_eq(n.name, "p");
  cr_assert_str_eq(n.ns, "n");
}

Test(podneed, nulls_are_absent) {
  struct ioq_pod_need n = parse_ok(
      "{\"metadata\":{\"annotations\":null},\"spec\":{\"initContainers\":null,\"containers\":[{"
      "\"resources\":{\"limits\":null,\"requests\":{\"ioqos/bandwidth\":null,\"ioqos/iops\":\"1\"}}}]}}");
  cr_assert_eq(n.units[IOQ_RES_IOPS], 1);
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 0);
}

Test(podneed, wrong_types_name_the_field) {
  parse_bad("{\"spec\":{\"containers\":{}}}", "spec.containers: must be an array");
  parse_bad("{\"spec\":{\"initContainers\":\"x\"}}", "spec.initContainers: must be an array");
  parse_bad("{\"spec\":{\"containers\":[7]}}", "spec.containers[0]: must be an object");
  parse_bad("{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":[]}]}}",
            "spec.containers[0] (c): resources must be an object");
  parse_bad("{\"spec\":{\"containers\":[{\"resources\":{\"limits\":[]}}]}}",
            "resources.limits: must be an object");
  parse_bad("{\"spec\":{\"initContainers\":[{\"restartPolicy\":1}]}}", "restartPolicy must be a string");
  parse_bad("{\"spec\":[]}", "pod spec: must be an object");
  parse_bad("{\"metadata\":{\"name\":5}}", "metadata.name: must be a string");
  parse_bad("[]", "pod must be a JSON object");
  parse_bad("null", "pod must be a JSON object");
}

Test(podneed, bad_json_text) {
  parse_bad("{\"spec\":", "truncated");
  parse_bad("{} {}", "trailing data");
  parse_bad("{\"a\":}", "invalid JSON");
  parse_bad("[1,]", "invalid JSON");
  struct ioq_pod_need n;
  ioq_err e = {0};
  cr_assert_eq(ioq_pod_need_parse("", 0, &n, &e), -1);
  cr_assert(strstr(e.msg, "empty"));
}

Test(podneed, sum_overflow_is_an_error) {
  parse_bad(POD(C("a", "{\"limits\":{\"ioqos/iops\":\"18E\"}}") "," C("b", "{\"limits\":{\"ioqos/iops\":\"1E\"}}"), ""),
            "overflows");
}

/* A pod as client-go marshals it: managedFields, status, defaulted fields. */
Test(podneed, go_marshalled_pod) {
  const char *pod =
      "{\"metadata\":{\"name\":\"db-0\",\"generateName\":\"db-\",\"namespace\":\"prod\",\"uid\":"
      "\"6f1c2a9e-6a1b-4a47-9b1e-3c7f0d2e8a11\",\"resourceVersion\":\"12345\",\"creationTimestamp\":"
      "\"2024-05-01T10:00:00Z\",\"labels\":{\"app\":\"db\"},\"annotations\":{\"ioqos.io/class\":"
      "\"fast\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"name\":"
      "\"db\",\"uid\":\"x\",\"controller\":true,\"blockOwnerDeletion\":true}],\"managedFields\":[{"
      "\"manager\":\"kube-controller-manager\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
      "\"time\":\"2024-05-01T10:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{"
      "\"f:generateName\":{},\"f:labels\":{\".\":{},\"f:app\":{}}},\"f:spec\":{\"f:containers\":{"
      "\"k:{\\\"name\\\":\\\"db\\\"}\":{\".\":{},\"f:resources\":{\".\":{},\"f:limits\":{\".\":{},"
      "\"f:ioqos/bandwidth\":{}}}}}}}}]},\"spec\":{\"volumes\":[{\"name\":\"kube-api-access\","
      "\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":"
      "\"token\"}}],\"defaultMode\":420}}],\"initContainers\":[{\"name\":\"log-shipper\",\"image\":"
      "\"fluent-bit\",\"resources\":{\"limits\":{\"ioqos/bandwidth\":\"20\"},\"requests\":{"
      "\"ioqos/bandwidth\":\"20\"}},\"restartPolicy\":\"Always\",\"terminationMessagePolicy\":"
      "\"File\",\"imagePullPolicy\":\"Always\"}],\"containers\":[{\"name\":\"db\",\"image\":"
      "\"postgres:16\",\"ports\":[{\"containerPort\":5432,\"protocol\":\"TCP\"}],\"resources\":{"
      "\"limits\":{\"cpu\":\"2\",\"ioqos/bandwidth\":\"200\",\"ioqos/iops\":\"30\",\"memory\":"
      "\"4Gi\"},\"requests\":{\"cpu\":\"1\",\"ioqos/bandwidth\":\"200\",\"ioqos/iops\":\"30\","
      "\"memory\":\"4Gi\"}},\"terminationMessagePath\":\"/dev/termination-log\"}],\"restartPolicy\":"
      "\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\","
      "\"serviceAccountName\":\"default\",\"securityContext\":{},\"schedulerName\":"
      "\"default-scheduler\",\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\","
      "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],\"priority\":0,"
      "\"enableServiceLinks\":true,\"preemptionPolicy\":\"PreemptLowerPriority\"},\"status\":{"
      "\"phase\":\"Pending\",\"qosClass\":\"Burstable\"}}";
  struct ioq_pod_need n = parse_ok(pod);
  cr_assert_eq(n.units[IOQ_RES_BANDWIDTH], 220);
  cr_assert_eq(n.units[IOQ_RES_IOPS], 30);
  cr_assert_str_eq(n.class_name, "fast");
  cr_assert_str_eq(n.uid, "6f1c2a9e-6a1b-4a47-9b1e-3c7f0d2e8a11");
}

Test(podneed, json_field_lookup) {
  json_object *o = json_tokener_parse("{\"Pod\":1,\"pod\":2,\"NodeNames\":null,\"x\":3}");
  cr_assert_eq(json_object_get_int(ioq_json_field(o, "Pod")), 1, "exact match first");
  cr_assert_eq(json_object_get_int(ioq_json_field(o, "POD")), 1, "then any casing");
  cr_assert_null(ioq_json_field(o, "NodeNames"), "null is absent");
  cr_assert_null(ioq_json_field(o, "missing"));
  cr_assert_null(ioq_json_field(NULL, "x"));
  json_object_put(o);
}

// SPDX-License-Identifier: Apache-2.0
/* ResourceClaim -> allocation of this driver (dra/draclaim.h): each
 * success and each refusal, with claims shaped as the API server returns
 * them (the scheduler's allocation result, consumable capacity). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dra/draclaim.h"

#define UID "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"
#define POD1 "a1b2c3d4-0000-4000-8000-000000000001"
#define POD2 "a1b2c3d4-0000-4000-8000-000000000002"
#define SHARE "0f1e2d3c-4b5a-4697-8877-665544332211"

static struct ioq_disk g_disks[3];

static void setup(void) {
  memset(g_disks, 0, sizeof g_disks);
  const char *names[] = {"sda", "nvme0n1", "sdc"};
  for (int i = 0; i < 3; i++) {
    snprintf(g_disks[i].dev.name, sizeof g_disks[i].dev.name, "%s", names[i]);
    g_disks[i].enforceable = true;
    g_disks[i].units[IOQ_RES_BANDWIDTH] = 1800;
    g_disks[i].units[IOQ_RES_IOPS] = 50;
  }
  snprintf(g_disks[2].fault, sizeof g_disks[2].fault, "disk sdc is gone");
}

static const struct ioq_dra_claim_want g_want = {
    .uid = UID, .driver = IOQ_DRA_DRIVER, .pool = "node-a", .disks = g_disks, .n_disks = 3};

#define RESULT(req, drv, pool, dev, extra)                                                     \
  "{\"request\":\"" req "\",\"driver\":\"" drv "\",\"pool\":\"" pool "\",\"device\":\"" dev "\"" \
  extra "}"
#define OURS(dev, cc) RESULT("io", "ioqos.io", "node-a", dev, ",\"shareID\":\"" SHARE "\",\"consumedCapacity\":" cc)
#define RESERVED_POD(uid) "{\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"" uid "\"}"

/* A claim as GET .../resourceclaims/NAME returns it. */
static char *claim(const char *uid, const char *results, const char *reserved) {
  char *s;
  cr_assert_neq(asprintf(&s,
                         "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                         "\"metadata\":{\"name\":\"db-io\",\"namespace\":\"team-a\",\"uid\":\"%s\","
                         "\"resourceVersion\":\"77\"},"
                         "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"io\",\"exactly\":"
                         "{\"deviceClassName\":\"ioqos-fast\",\"capacity\":{\"requests\":"
                         "{\"bandwidth\":\"200\"}}}}]}},"
                         "\"status\":{\"allocation\":{\"devices\":{\"results\":[%s]},"
                         "\"nodeSelector\":{}},\"reservedFor\":[%s]}}\n",
                         uid, results, reserved),
                -1);
  return s;
}

static void parses(const char *text, struct ioq_dra_claim *c) {
  ioq_err e;
  cr_assert_eq(ioq_dra_claim_parse(text, strlen(text), &g_want, c, &e), 0, "%s", e.msg);
}

static void refuses(const char *text, int code, const char *needle) {
  struct ioq_dra_claim *c = malloc(sizeof *c);
  ioq_err e;
  cr_assert_eq(ioq_dra_claim_parse(text, strlen(text), &g_want, c, &e), -1, "accepted: %s", needle);
  cr_assert_eq(e.code, code, "code %d for '%s'", e.code, e.msg);
  cr_assert(strstr(e.msg, needle), "'%s' lacks '%s'", e.msg, needle);
  cr_assert_eq(c->n_shares, 0, "nothing kept on failure");
  cr_assert_eq(c->n_pods, 0);
  free(c);
}

TestSuite(draclaim, .init = setup);

Test(draclaim, one_share) {
  char *t = claim(UID, OURS("sda", "{\"bandwidth\":\"200\",\"iops\":\"0\"}"), RESERVED_POD(POD1));
  struct ioq_dra_claim *c = malloc(sizeof *c);
  parses(t, c);
  cr_assert_str_eq(c->uid, UID);
  cr_assert_str_eq(c->ns, "team-a");
  cr_assert_str_eq(c->name, "db-io");
  cr_assert_eq(c->n_shares, 1);
  cr_assert_str_eq(c->shares[0].request, "io");
  cr_assert_str_eq(c->shares[0].device, "sda");
  cr_assert_eq(c->shares[0].disk, 0);
  cr_assert_str_eq(c->shares[0].share_id, SHARE);
  cr_assert_eq(c->shares[0].units[IOQ_RES_BANDWIDTH], 200);
  cr_assert_eq(c->shares[0].units[IOQ_RES_IOPS], 0);
  cr_assert_eq(c->n_pods, 1);
  cr_assert_str_eq(c->pods[0], POD1);
  cr_assert_str_eq(c->pod_names[0], "p");
  free(c);
  free(t);
}

Test(draclaim, other_drivers_skipped_quantity_forms_and_pods) {
  /* API-server quantity forms: "1k" (canonical 1000), "1Ki", "2e1", "+5" */
  char *t = claim(UID,
                  RESULT("gpu", "gpu.example.com", "node-a", "gpu-0", "") ","
                  OURS("nvme0n1", "{\"bandwidth\":\"1k\",\"iops\":\"2e1\"}") ","
                  RESULT("io2/fast", "ioqos.io", "node-a", "sda", ",\"consumedCapacity\":{\"bandwidth\":\"1Ki\",\"iops\":\"+5\"}"),
                  RESERVED_POD(POD1) ",{\"apiGroup\":\"apps\",\"resource\":\"statefulsets\",\"name\":\"s\",\"uid\":\"x\"},"
                  RESERVED_POD(POD2));
  struct ioq_dra_claim *c = malloc(sizeof *c);
  parses(t, c);
  cr_assert_eq(c->n_shares, 2);
  cr_assert_eq(c->shares[0].disk, 1);
  cr_assert_eq(c->shares[0].units[IOQ_RES_BANDWIDTH], 1000);
  cr_assert_eq(c->shares[0].units[IOQ_RES_IOPS], 20);
  cr_assert_str_eq(c->shares[1].request, "io2/fast");
  cr_assert_str_eq(c->shares[1].share_id, "", "no shareID in the result");
  cr_assert_eq(c->shares[1].units[IOQ_RES_BANDWIDTH], 1024);
  cr_assert_eq(c->shares[1].units[IOQ_RES_IOPS], 5);
  cr_assert_eq(c->n_pods, 2, "only pods are kept");
  cr_assert_str_eq(c->pods[1], POD2);
  free(c);
  free(t);
}

Test(draclaim, whole_capacity_and_missing_resource) {
  char *t = claim(UID, OURS("sda", "{\"bandwidth\":\"1800\"}"), RESERVED_POD(POD1));
  struct ioq_dra_claim *c = malloc(sizeof *c);
  parses(t, c);
  cr_assert_eq(c->shares[0].units[IOQ_RES_BANDWIDTH], 1800);
  cr_assert_eq(c->shares[0].units[IOQ_RES_IOPS], 0, "absent = none consumed");
  free(c);
  free(t);
}

struct bad {
  const char *results;
  const char *reserved;
  int code;
  const char *needle;
};

Test(draclaim, refusals) {
  const struct bad cases[] = {
      {"", RESERVED_POD(POD1), IOQ_ENOTFOUND, "has no device of driver ioqos.io"},
      {RESULT("g", "gpu.example.com", "node-a", "gpu-0", ""), RESERVED_POD(POD1), IOQ_ENOTFOUND,
       "has no device of driver ioqos.io (only of gpu.example.com)"},
      {RESULT("io", "ioqos.io", "node-b", "sda", ",\"consumedCapacity\":{}"), RESERVED_POD(POD1),
       IOQ_EINVAL_INPUT, "from pool 'node-b', this node serves pool 'node-a'"},
      {OURS("sdz", "{}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "device 'sdz' is not a disk of this node"},
      {OURS("sdc", "{}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "is not offered: disk sdc is gone"},
      {RESULT("io", "ioqos.io", "node-a", "sda", ""), RESERVED_POD(POD1), IOQ_EINVAL_INPUT,
       "has no consumedCapacity"},
      {OURS("sda", "{\"bandwidth\":\"1801\"}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT,
       "consumedCapacity.bandwidth is 1801 units, more than the 1800 device 'sda' has"},
      {OURS("sda", "{\"iops\":\"-1\"}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "is negative"},
      {OURS("sda", "{\"iops\":\"1.5\"}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "not a whole number"},
      {OURS("sda", "{\"iops\":\"lots\"}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "has no digits"},
      {OURS("sda", "{\"iops\":\"5Xi\"}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "unknown suffix"},
      {OURS("sda", "{\"iops\":\"99999999999999999999\"}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "too large"},
      {OURS("sda", "{\"iops\":5}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "not a quantity string"},
      {OURS("sda", "{\"memory\":\"1\"}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "names 'memory', not a capacity"},
      {OURS("sda", "[]"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "consumedCapacity is not an object"},
      {OURS("sda", "{\"bandwidth\":\"1000\"}") "," OURS("sda", "{\"bandwidth\":\"801\"}"), RESERVED_POD(POD1),
       IOQ_EINVAL_INPUT, "consume 1801 bandwidth units in all, more than the 1800"},
      {OURS("sda", "{}"), "", IOQ_EINVAL_INPUT, "reserved for no pod"},
      {OURS("sda", "{}"), "{\"apiGroup\":\"apps\",\"resource\":\"deployments\",\"uid\":\"u\"}", IOQ_EINVAL_INPUT,
       "reserved for no pod"},
      {OURS("sda", "{}"), "{\"resource\":\"pods\",\"name\":\"p\"}", IOQ_EINVAL_INPUT, "reservedFor[0].uid is missing"},
      {OURS("sda", "{}"), "7", IOQ_EINVAL_INPUT, "reservedFor[0] is not an object"},
      {OURS("sda", "{}"), "{\"resource\":\"pods\",\"uid\":\"" POD1 "\"}", IOQ_EINVAL_INPUT,
       "reservedFor[0].name is missing"},
      {OURS("sda", "{}"), "{\"resource\":\"pods\",\"name\":\"A/b\",\"uid\":\"" POD1 "\"}",
       IOQ_EINVAL_INPUT, "reservedFor[0].name 'A/b' is not a pod name"},
      {OURS("sda", "{}"), RESERVED_POD("../../etc"), IOQ_EINVAL_INPUT, "reservedFor[0].uid"},
      {OURS("sda", "{}"), RESERVED_POD("A1B2C3D4-0000-4000-8000-000000000001"), IOQ_EINVAL_INPUT,
       "reservedFor[0].uid"},
      {RESULT("io", "ioqos.io", "node-a", "", ",\"consumedCapacity\":{}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT,
       "device is empty"},
      {RESULT("io", "ioqos.io", "node-a", "sda\\u0000x", ",\"consumedCapacity\":{}"), RESERVED_POD(POD1),
       IOQ_EINVAL_INPUT, "NUL character"},
      {RESULT("i o", "ioqos.io", "node-a", "sda", ",\"consumedCapacity\":{}"), RESERVED_POD(POD1), IOQ_EINVAL_INPUT,
       "request has unprintable characters"},
      {"{\"driver\":7}", RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "result 0.driver is not a string"},
      {"\"x\"", RESERVED_POD(POD1), IOQ_EINVAL_INPUT, "result 0 is not an object"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *t = claim(UID, cases[i].results, cases[i].reserved);
    refuses(t, cases[i].code, cases[i].needle);
    free(t);
  }
}

Test(draclaim, uid_mismatch) {
  char *t = claim("11111111-2222-3333-4444-555555555555", OURS("sda", "{}"), RESERVED_POD(POD1));
  refuses(t, IOQ_EMISMATCH, "claim team-a/db-io has UID 11111111-2222-3333-4444-555555555555, kubelet asked for UID " UID);
  free(t);
}

/* a claim found again from its pod (no UID from kubelet): any UID, the rest checked alike */
Test(draclaim, any_uid_when_none_is_expected) {
  char *t = claim("11111111-2222-3333-4444-555555555555", OURS("sda", "{\"bandwidth\":\"7\"}"),
                  RESERVED_POD(POD1));
  struct ioq_dra_claim_want w = g_want;
  w.uid = NULL;
  struct ioq_dra_claim *c = malloc(sizeof *c);
  ioq_err e;
  cr_assert_eq(ioq_dra_claim_parse(t, strlen(t), &w, c, &e), 0, "%s", e.msg);
  cr_assert_str_eq(c->uid, "11111111-2222-3333-4444-555555555555");
  cr_assert_eq(c->shares[0].units[IOQ_RES_BANDWIDTH], 7);
  free(t);
  t = claim(UID, RESULT("io", "ioqos.io", "node-b", "sda", ",\"consumedCapacity\":{}"),
            RESERVED_POD(POD1));
  cr_assert_eq(ioq_dra_claim_parse(t, strlen(t), &w, c, &e), -1, "another node's pool");
  free(c);
  free(t);
}

Test(draclaim, not_allocated_and_shapes) {
  static const struct {
    const char *text;
    int code;
    const char *needle;
  } cases[] = {
      {"{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"n\",\"uid\":\"" UID "\"}}",
       IOQ_ENOTFOUND, "claim n/c is not allocated"},
      {"{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"n\",\"uid\":\"" UID "\"},"
       "\"status\":{\"reservedFor\":[]}}",
       IOQ_ENOTFOUND, "is not allocated"},
      {"{\"metadata\":{\"name\":\"c\",\"namespace\":\"n\",\"uid\":\"" UID "\"},\"status\":7}", IOQ_EINVAL_INPUT,
       "status is not an object"},
      {"{\"metadata\":{\"name\":\"c\",\"namespace\":\"n\",\"uid\":\"" UID "\"},\"status\":{\"allocation\":"
       "{\"devices\":{\"results\":{}}}}}",
       IOQ_EINVAL_INPUT, "results is not an array"},
      {"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{}}", IOQ_EINVAL_INPUT, "is a Pod of v1, not a ResourceClaim"},
      {"{\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"}}", IOQ_EINVAL_INPUT, "metadata.uid is missing"},
      {"{\"metadata\":{\"name\":\"c\",\"namespace\":\"N_S\",\"uid\":\"" UID "\"}}", IOQ_EINVAL_INPUT,
       "not a valid namespace/name"},
      {"{}", IOQ_EINVAL_INPUT, "metadata is missing"},
      {"[1]", IOQ_EINVAL_INPUT, "not a JSON object"},
      {"{\"metadata\":", IOQ_EINVAL_INPUT, "invalid JSON: truncated"},
      {"{\"a\":1} {}", IOQ_EINVAL_INPUT, "trailing data"},
      {"{\"a\":}", IOQ_EINVAL_INPUT, "invalid JSON"},
      {"", IOQ_EINVAL_INPUT, "empty input"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    refuses(cases[i].text, cases[i].code, cases[i].needle);
}

Test(draclaim, caps) {
  /* 33 results */
  size_t sz = 64 * 1024;
  char *res = calloc(1, sz);
  for (int i = 0; i < 33; i++)
    strcat(strcat(res, i ? "," : ""), OURS("sda", "{}"));
  char *t = claim(UID, res, RESERVED_POD(POD1));
  refuses(t, IOQ_EINVAL_INPUT, "results has 33 entries, more than the 32 allowed");
  free(t);
  /* 257 reservedFor entries */
  char *rf = calloc(1, sz);
  for (int i = 0; i < 257; i++)
    strcat(strcat(rf, i ? "," : ""), RESERVED_POD(POD1));
  t = claim(UID, OURS("sda", "{}"), rf);
  refuses(t, IOQ_EINVAL_INPUT, "reservedFor has 257 entries, more than the 256 allowed");
  free(t);
  free(rf);
  free(res);
  /* a document over 1 MiB is refused before parsing */
  size_t big = IOQ_DRA_CLAIM_MAX_BYTES + 1;
  char *doc = malloc(big + 1);
  memset(doc, ' ', big);
  doc[0] = '{';
  doc[big - 1] = '}';
  doc[big] = '\0';
  refuses(doc, IOQ_EINVAL_INPUT, "more than the 1048576 accepted");
  free(doc);
  /* an over-long string field */
  char longname[300];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  char *u;
  cr_assert_neq(asprintf(&u, "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"n\",\"uid\":\"" UID "\"}}", longname), -1);
  refuses(u, IOQ_EINVAL_INPUT, "metadata.name is 299 characters, more than 253");
  free(u);
}

Test(draclaim, incomplete_expectations) {
  struct ioq_dra_claim *c = malloc(sizeof *c);
  struct ioq_dra_claim_want w = g_want;
  w.uid = "";
  ioq_err e;
  cr_assert_eq(ioq_dra_claim_parse("{}", 2, &w, c, &e), -1);
  cr_assert(strstr(e.msg, "incomplete expectations"), "%s", e.msg);
  free(c);
}

// SPDX-License-Identifier: Apache-2.0
/* Pod -> the ResourceClaims kubelet prepares for it (dra/drapod.h): claim
 * names from the spec and from the status (templates), whether kubelet may
 * still hold them prepared, and each refusal. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "dra/drapod.h"

static struct ioq_dra_pod g_pod;

static int parse(const char *text, ioq_err *e) {
  json_object *o = json_tokener_parse(text);
  cr_assert(o || !*text, "test JSON does not parse: %s", text);
  int rc = ioq_dra_pod_parse(o, &g_pod, e);
  json_object_put(o);
  return rc;
}

#define META "\"metadata\":{\"namespace\":\"db\",\"name\":\"pg-0\",\"uid\":\"u-1\"}"

Test(drapod, claims_from_spec_and_template_status) {
  ioq_err e = {0};
  cr_assert_eq(parse("{" META ",\"spec\":{\"resourceClaims\":["
                     "{\"name\":\"disk\",\"resourceClaimName\":\"pg-disk\"},"
                     "{\"name\":\"tmp\",\"resourceClaimTemplateName\":\"scratch\"},"
                     "{\"name\":\"later\",\"resourceClaimTemplateName\":\"scratch\"}]},"
                     "\"status\":{\"phase\":\"Running\",\"resourceClaimStatuses\":["
                     "{\"name\":\"tmp\",\"resourceClaimName\":\"pg-0-tmp-x7k2\"},"
                     "{\"name\":\"later\",\"resourceClaimName\":null},"
                     "{\"name\":\"disk\",\"resourceClaimName\":\"pg-disk\"}],"
                     "\"containerStatuses\":[{\"state\":{\"running\":{}}}]}}",
                     &e),
               0, "%s", e.msg);
  cr_assert_str_eq(g_pod.ns, "db");
  cr_assert_str_eq(g_pod.name, "pg-0");
  cr_assert_str_eq(g_pod.uid, "u-1");
  cr_assert_eq(g_pod.n_claims, 2, "pg-disk once, the template's claim, none for 'later'");
  cr_assert_str_eq(g_pod.claims[0], "pg-disk");
  cr_assert_str_eq(g_pod.claims[1], "pg-0-tmp-x7k2");
  cr_assert(g_pod.may_hold);
}

Test(drapod, may_hold_follows_phase_and_containers) {
  ioq_err e = {0};
  struct {
    const char *status;
    bool may_hold;
  } cases[] = {
      {"{\"phase\":\"Pending\"}", true}, /* prepared before the sandbox */
      {"{\"phase\":\"Running\",\"containerStatuses\":[{\"state\":{\"terminated\":{}}},"
       "{\"state\":{\"running\":{}}}]}",
       true},
      /* every container stopped: kubelet unprepares before the final status */
      {"{\"phase\":\"Running\",\"containerStatuses\":[{\"state\":{\"terminated\":{}}}]}", false},
      {"{\"phase\":\"Succeeded\"}", false},
      {"{\"phase\":\"Failed\"}", false},
      {"{}", false}, /* no status yet: kubelet has not started it */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[512];
    snprintf(text, sizeof text, "{" META ",\"status\":%s}", cases[i].status);
    cr_assert_eq(parse(text, &e), 0, "%s", e.msg);
    cr_assert_eq(g_pod.may_hold, cases[i].may_hold, "status %s", cases[i].status);
    cr_assert_eq(g_pod.n_claims, 0);
  }
}

Test(drapod, refusals) {
  ioq_err e = {0};
  cr_assert_eq(ioq_dra_pod_parse(NULL, &g_pod, &e), -1);
  cr_assert_eq(parse("[]", &e), -1);
  cr_assert_eq(parse("{\"metadata\":{\"namespace\":\"db\",\"name\":\"pg-0\"}}", &e), -1);
  cr_assert(strstr(e.msg, "metadata.uid"), "%s", e.msg);
  cr_assert_eq(parse("{" META ",\"spec\":{\"resourceClaims\":[{\"resourceClaimName\":\"Bad/Name\"}]}}",
                     &e),
               -1);
  cr_assert(strstr(e.msg, "pod db/pg-0: claim name 'Bad/Name'"), "%s", e.msg);
  /* more claims than kept: refused, not cut */
  char text[8192];
  int off = snprintf(text, sizeof text, "{" META ",\"spec\":{\"resourceClaims\":[");
  for (int i = 0; i <= IOQ_DRA_POD_CLAIMS_MAX; i++)
    off += snprintf(text + off, sizeof text - off, "%s{\"resourceClaimName\":\"c%d\"}", i ? "," : "",
                    i);
  snprintf(text + off, sizeof text - off, "]}}");
  cr_assert_eq(parse(text, &e), -1);
  cr_assert(strstr(e.msg, "more than 32 resource claims"), "%s", e.msg);
  /* wrong types are no claims, not a crash */
  cr_assert_eq(parse("{" META ",\"spec\":{\"resourceClaims\":{\"x\":1}},\"status\":\"odd\"}", &e), 0,
               "%s", e.msg);
  cr_assert_eq(g_pod.n_claims, 0);
  cr_assert_not(g_pod.may_hold);
}

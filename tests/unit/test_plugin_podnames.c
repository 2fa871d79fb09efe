// SPDX-License-Identifier: Apache-2.0
/* Names that become URL paths in the plugin are checked first (issue 12
 * item 13): the pod cache's GET on a miss (namespace and name come from
 * kubelet's pod resources) and --node-name. The API client points at a port
 * nothing listens on: a name that passes fails with a transport error
 * instead of IOQ_EINVAL_INPUT. */
#include <criterion/criterion.h>
#include <string.h>

#include "kube/kube.h"
#include "support/opts.h"
#include "state/podcache.h"

static struct ioq_kube *g_k;
static struct podcache *g_c;

static void setup(void) {
  struct ioq_kube_opts o = {.server = "http://127.0.0.1:1", .timeout_ms = 1000};
  ioq_err e = {0};
  g_k = ioq_kube_new(&o, &e);
  cr_assert_not_null(g_k, "%s", e.msg);
  g_c = podcache_start(g_k, g_k, "n1", NULL, NULL, &e);
  cr_assert_not_null(g_c, "%s", e.msg);
}

static void teardown(void) {
  podcache_stop(g_c);
  ioq_kube_free(g_k);
}

Test(podnames, hostile_namespace_or_name_refused_before_the_get, .init = setup,
     .fini = teardown) {
  static const char *const ns[] = {"..", ".", "a/b", "%2e%2e", "", "kube.system", "default"};
  static const char *const name[] = {"p", "p", "p", "p", "p", "p", ".."};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    struct pod_info pi;
    ioq_err e = {0};
    cr_assert_eq(podcache_get(g_c, ns[i], name[i], &pi, &e), -1);
    cr_assert_eq(e.code, IOQ_EINVAL_INPUT, "%s/%s reached the API client: %s", ns[i], name[i], e.msg);
  }
  /* a valid pair goes to the API server (here: nothing listens) */
  struct pod_info pi;
  ioq_err e = {0};
  cr_assert_eq(podcache_get(g_c, "default", "web-0", &pi, &e), -1);
  cr_assert_neq(e.code, IOQ_EINVAL_INPUT, "%s", e.msg);
}

/* --node-name (NODE_NAME) becomes /api/v1/nodes/NAME and the pods' field
 * selector: a value that is no node name is refused at start */
Test(podnames, node_name_is_a_dns_subdomain) {
  static const char *const bad[] = {"..", ".", "a/b", "node-a,spec.x=y", "Node-A", "%2e%2e"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *argv[] = {"ioqos-plugin", "--node-name", (char *)bad[i], NULL};
    struct plugin_opts o;
    ioq_err e = {0};
    cr_assert_eq(plugin_opts_parse(3, argv, &o, &e), -1, "--node-name '%s' accepted", bad[i]);
    cr_assert(strstr(e.msg, "--node-name"), "%s", e.msg);
  }
  char *argv[] = {"ioqos-plugin", "--node-name", "ip-10-0-0-1.ec2.internal", NULL};
  struct plugin_opts o;
  ioq_err e = {0};
  cr_assert_eq(plugin_opts_parse(3, argv, &o, &e), 0, "%s", e.msg);
}

// SPDX-License-Identifier: Apache-2.0
/* Node cache updates, flags, listen addresses and metrics text. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "flags.h"
#include "httpd.h"
#include "base/listenaddr.h"
#include "metrics.h"
#include "nodecache.h"

static json_object *node(const char *name, const char *anno) {
  json_object *n = json_object_new_object(), *m = json_object_new_object();
  json_object_object_add(m, "name", json_object_new_string(name));
  if (anno) {
    json_object *a = json_object_new_object();
    json_object_object_add(a, "ioqos.io/devices", json_object_new_string(anno));
    json_object_object_add(m, "annotations", a);
  }
  json_object_object_add(n, "metadata", m);
  return n;
}

#define ANNO(alloc)                                                                                \
  "{\"version\":1,\"devices\":[{\"name\":\"sda\",\"healthy\":true,\"capacity\":{\"ioqos/"          \
  "bandwidth\":100},\"allocated\":{\"ioqos/bandwidth\":" #alloc "}}]}"

Test(nodecache, list_then_events) {
  struct ext_assumed *a = ext_assumed_new(60000);
  struct ext_nodecache *c = ext_nodecache_new(a);
  cr_assert_not(ext_nodecache_synced(c));
  json_object *items = json_object_new_array();
  json_object_array_add(items, node("n1", ANNO(10)));
  json_object_array_add(items, node("n2", NULL));
  json_object_array_add(items, json_object_new_string("not a node"));
  ext_nodecache_on_list(c, items);
  json_object_put(items);
  cr_assert(ext_nodecache_synced(c));
  cr_assert_eq(ext_nodecache_size(c), 2);

  ext_nodecache_rdlock(c);
  const struct ext_nodeinfo *n1 = ext_nodecache_find(c, "n1");
  cr_assert_not_null(n1);
  cr_assert_eq(n1->st.disks[0].allocated[0], 10);
  cr_assert_eq(ext_nodecache_find(c, "n2")->status, EXT_NODE_NO_ANNOTATION);
  cr_assert_null(ext_nodecache_find(c, "n3"));
  ext_nodecache_unlock(c);

  json_object *o = node("n1", ANNO(40));
  ext_nodecache_on_event(c, "MODIFIED", o);
  json_object_put(o);
  o = node("n3", ANNO(0));
  ext_nodecache_on_event(c, "ADDED", o);
  json_object_put(o);
  o = node("n2", NULL);
  ext_nodecache_on_event(c, "DELETED", o);
  json_object_put(o);

  ext_nodecache_rdlock(c);
  cr_assert_eq(ext_nodecache_find(c, "n1")->st.disks[0].allocated[0], 40);
  cr_assert_not_null(ext_nodecache_find(c, "n3"));
  cr_assert_null(ext_nodecache_find(c, "n2"));
  ext_nodecache_unlock(c);
  cr_assert_eq(ext_nodecache_size(c), 2);

  /* a re-list replaces everything */
  items = json_object_new_array();
  json_object_array_add(items, node("n9", ANNO(1)));
  ext_nodecache_on_list(c, items);
  json_object_put(items);
  cr_assert_eq(ext_nodecache_size(c), 1);
  ext_nodecache_free(c);
  ext_assumed_free(a);
}

Test(nodecache, events_confirm_and_forget_assumptions) {
  struct ext_assumed *a = ext_assumed_new(60000);
  struct ext_nodecache *c = ext_nodecache_new(a);
  ioq_err e = {0};
  uint64_t u[IOQ_RES_COUNT] = {5, 0};
  struct ext_node_lock *l = ext_assumed_lock_node(a, "n1", &e);
  ext_assumed_add(a, "n1", "pod-a", "ns/a", "sda", u, &e);
  ext_assumed_add(a, "n1", "pod-b", "ns/b", "sda", u, &e);
  ext_assumed_unlock_node(l);
  l = ext_assumed_lock_node(a, "n2", &e);
  ext_assumed_add(a, "n2", "pod-c", "ns/c", "sda", u, &e);
  ext_assumed_unlock_node(l);

  json_object *o = node("n1", "{\"version\":1,\"devices\":[],\"pods\":[\"pod-a\"]}");
  ext_nodecache_on_event(c, "MODIFIED", o);
  json_object_put(o);
  cr_assert_eq(ext_assumed_count(a), 2);
  o = node("n2", NULL);
  ext_nodecache_on_event(c, "DELETED", o);
  json_object_put(o);
  cr_assert_eq(ext_assumed_count(a), 1);
  ext_nodecache_free(c);
  ext_assumed_free(a);
}

static int parse(const char *const *argv, struct ext_flags *f, ioq_err *e) {
  int argc = 0;
  char *args[32];
  for (; argv[argc]; argc++)
    args[argc] = (char *)argv[argc];
  args[argc] = NULL;
  return ext_flags_parse(argc, args, f, e);
}

Test(flags, defaults_and_values) {
  struct ext_flags f;
  ioq_err e = {0};
  const char *none[] = {"x", NULL};
  cr_assert_eq(parse(none, &f, &e), 0);
  cr_assert_str_eq(f.listen, ":8888");
  cr_assert_eq(f.policy, IOQ_POLICY_LEAST_ALLOCATED);
  cr_assert_eq(f.max_request_bytes, 256u << 20);
  cr_assert_eq(f.max_request_memory, 0, "derived from the memory limit");
  cr_assert_eq(f.request_deadline_s, 10);
  cr_assert_eq(f.max_connections_per_ip, 32);
  cr_assert_eq(f.assume_ttl_s, 3600, "a safety bound, not the way placements end");
  cr_assert_eq(f.annotation_max_age_s, 900);
  cr_assert_eq(f.node_cache, -1);
  const char *some[] = {"x", "--listen=127.0.0.1:9", "--policy", "balanced", "--max-request-bytes",
                        "1Gi", "--threads", "8", "--node-cache=false", "--assume-ttl", "5",
                        "--max-request-memory", "2Gi", NULL};
  cr_assert_eq(parse(some, &f, &e), 0, "%s", e.msg);
  cr_assert_str_eq(f.listen, "127.0.0.1:9");
  cr_assert_eq(f.policy, IOQ_POLICY_BALANCED);
  cr_assert_eq(f.max_request_bytes, 1u << 30);
  cr_assert_eq(f.threads, 8);
  cr_assert_eq(f.node_cache, 0);
  cr_assert_eq(f.assume_ttl_s, 5);
  cr_assert_eq(f.max_request_memory, 2ull << 30);
}

/* issue 14 item 4: IOQOS_LOG_FORMAT, then --log-format over it */
Test(flags, log_format) {
  struct ext_flags f;
  ioq_err e = {0};
  const char *none[] = {"x", NULL};
  const char *text[] = {"x", "--log-format=text", NULL};
  unsetenv("IOQOS_LOG_FORMAT");
  cr_assert_eq(parse(none, &f, &e), 0, "%s", e.msg);
  cr_assert_eq(f.log_format, IOQ_LOG_TEXT);
  setenv("IOQOS_LOG_FORMAT", "json", 1);
  cr_assert_eq(parse(none, &f, &e), 0, "%s", e.msg);
  cr_assert_eq(f.log_format, IOQ_LOG_JSON);
  cr_assert_eq(parse(text, &f, &e), 0, "%s", e.msg);
  cr_assert_eq(f.log_format, IOQ_LOG_TEXT, "the flag wins");
  setenv("IOQOS_LOG_FORMAT", "", 1);
  cr_assert_eq(parse(none, &f, &e), -1);
  cr_assert(strstr(e.msg, "IOQOS_LOG_FORMAT: --log-format: '' is not text or json"), "%s", e.msg);
  unsetenv("IOQOS_LOG_FORMAT");
}

Test(flags, auth_and_listeners) {
  struct ext_flags f;
  ioq_err e = {0};
  const char *none[] = {"x", NULL};
  cr_assert_eq(parse(none, &f, &e), 0);
  cr_assert_str_eq(f.metrics_listen, ":9465");
  cr_assert_eq(f.n_scheduler_names, 1);
  cr_assert_str_eq(f.scheduler_names[0], "ioqos-scheduler");
  cr_assert_null(f.tls_client_ca);
  const char *some[] = {"x", "--tls-cert=c", "--tls-key=k", "--tls-client-ca=ca",
                        "--tls-client-subject=ioqos-scheduler", "--metrics-listen=:1",
                        "--scheduler-name=a", "--scheduler-name", "default-scheduler", NULL};
  cr_assert_eq(parse(some, &f, &e), 0, "%s", e.msg);
  cr_assert_str_eq(f.tls_client_ca, "ca");
  cr_assert_str_eq(f.tls_client_subject, "ioqos-scheduler");
  cr_assert_str_eq(f.metrics_listen, ":1");
  cr_assert_eq(f.n_scheduler_names, 2, "the given names replace the default");
  cr_assert_str_eq(f.scheduler_names[0], "a");
  cr_assert_str_eq(f.scheduler_names[1], "default-scheduler");
  const char *many[] = {"x", "--scheduler-name=1", "--scheduler-name=2", "--scheduler-name=3",
                        "--scheduler-name=4", "--scheduler-name=5", "--scheduler-name=6",
                        "--scheduler-name=7", "--scheduler-name=8", "--scheduler-name=9", NULL};
  cr_assert_eq(parse(many, &f, &e), -1);
  cr_assert(strstr(e.msg, "--scheduler-name: at most 8 names"), "%s", e.msg);
}

Test(flags, errors) {
  const char *cases[][4] = {
      {"--bogus", NULL, NULL, "unknown flag '--bogus'"},
      {"--threads", NULL, NULL, "--threads needs a value"},
      {"--threads", "0", NULL, "--threads: '0' is not a whole number in 1..256"},
      {"--policy", "random", NULL, "--policy: 'random' is not"},
      {"--max-request-bytes", "1.5", NULL, "--max-request-bytes"},
      {"--max-request-bytes", "10", NULL, "must be between 4Ki and 4Gi"},
      {"--max-request-memory", "1k", NULL, "must be between 1Mi and 1Ti"},
      {"--tls-cert", "a.pem", NULL, "--tls-cert and --tls-key go together"},
      {"--tls-client-ca", "ca.pem", NULL, "--tls-client-ca needs --tls-cert and --tls-key"},
      {"--tls-client-subject", "x", NULL, "--tls-client-subject needs --tls-client-ca"},
      {"--scheduler-name", "", NULL, "--scheduler-name needs a non-empty value"},
      {"--metrics-listen", "", NULL, "--metrics-listen needs a non-empty value"},
      {"--no-kube", "--kube-api-server=http://x", NULL, "--no-kube conflicts"},
      {"--node-cache", "maybe", NULL, "not true or false"},
      {"--log-level", "loud", NULL, "--log-level"},
      {"--log-format", "yaml", NULL, "--log-format: 'yaml' is not text or json"},
      {"stray", NULL, NULL, "unexpected argument 'stray'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *argv[] = {"x", cases[i][0], cases[i][1], cases[i][2], NULL};
    struct ext_flags f;
    ioq_err e = {0};
    cr_assert_eq(parse(argv, &f, &e), -1, "case %zu", i);
    cr_assert(strstr(e.msg, cases[i][3]), "case %zu: '%s' lacks '%s'", i, e.msg, cases[i][3]);
  }
}

/* The extender's flags have environment variables like the plugin's
 * (IOQOS_ + the flag's name); a flag given wins over its variable. */
Test(flags, env_values_then_flags_win) {
  setenv("IOQOS_THREADS", "2", 1);
  setenv("IOQOS_POLICY", "most-allocated", 1);
  setenv("IOQOS_SCHEDULER_NAME", "a,default-scheduler", 1);
  setenv("IOQOS_NODE_CACHE", "false", 1);
  setenv("IOQOS_KUBE_TIMEOUT", "7", 1);
  setenv("IOQOS_MAX_REQUEST_BYTES", "1Mi", 1);
  setenv("IOQOS_LISTEN", "127.0.0.1:1", 1);
  setenv("IOQOS_LOG_LEVEL", "debug", 1);
  struct ext_flags f;
  ioq_err e = {0};
  const char *none[] = {"x", NULL};
  cr_assert_eq(parse(none, &f, &e), 0, "%s", e.msg);
  cr_assert_eq(f.threads, 2);
  cr_assert_eq(f.policy, IOQ_POLICY_MOST_ALLOCATED);
  cr_assert_eq(f.n_scheduler_names, 2);
  cr_assert_str_eq(f.scheduler_names[0], "a");
  cr_assert_str_eq(f.scheduler_names[1], "default-scheduler");
  cr_assert_eq(f.node_cache, 0);
  cr_assert_eq(f.kube_timeout_s, 7);
  cr_assert_eq(f.max_request_bytes, 1u << 20);
  cr_assert_str_eq(f.listen, "127.0.0.1:1");
  cr_assert_eq(f.log_level, IOQ_LOG_DEBUG);
  const char *flags[] = {"x", "--threads=3", "--scheduler-name", "c", "--listen=:2", NULL};
  cr_assert_eq(parse(flags, &f, &e), 0, "%s", e.msg);
  cr_assert_eq(f.threads, 3, "the flag wins");
  cr_assert_str_eq(f.listen, ":2");
  cr_assert_eq(f.n_scheduler_names, 1, "the flags replace the variable's list, not add to it");
  cr_assert_str_eq(f.scheduler_names[0], "c");
  cr_assert_eq(f.policy, IOQ_POLICY_MOST_ALLOCATED, "a variable without a flag still counts");
  setenv("IOQOS_NO_KUBE", "true", 1);
  unsetenv("IOQOS_NODE_CACHE");
  cr_assert_eq(parse(none, &f, &e), 0, "%s", e.msg);
  cr_assert(f.no_kube);
  setenv("IOQOS_NO_KUBE", "false", 1);
  cr_assert_eq(parse(none, &f, &e), 0, "%s", e.msg);
  cr_assert(!f.no_kube);
}

Test(flags, env_errors_name_the_variable) {
  static char longv[4096];
  memset(longv, 'a', sizeof longv - 1);
  const char *cases[][3] = {
      {"IOQOS_THREADS", "0", "IOQOS_THREADS: --threads: '0' is not a whole number in 1..256"},
      {"IOQOS_POLICY", "random", "IOQOS_POLICY: --policy: 'random' is not"},
      {"IOQOS_NO_KUBE", "maybe", "IOQOS_NO_KUBE: 'maybe' is not true or false"},
      {"IOQOS_LISTEN", "", "IOQOS_LISTEN: --listen needs a non-empty value"},
      {"IOQOS_SCHEDULER_NAME", "a,,b", "IOQOS_SCHEDULER_NAME: --scheduler-name needs a non-empty"},
      {"IOQOS_SCHEDULER_NAME", "1,2,3,4,5,6,7,8,9", "IOQOS_SCHEDULER_NAME: --scheduler-name: at most 8"},
      {"IOQOS_SCHEDULER_NAME", longv, "IOQOS_SCHEDULER_NAME: longer than 1023 bytes"},
      {"IOQOS_TLS_CERT", "c.pem", "--tls-cert and --tls-key go together"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setenv(cases[i][0], cases[i][1], 1);
    const char *none[] = {"x", NULL};
    struct ext_flags f;
    ioq_err e = {0};
    cr_assert_eq(parse(none, &f, &e), -1, "case %zu", i);
    cr_assert(strstr(e.msg, cases[i][2]), "case %zu: '%s' lacks '%s'", i, e.msg, cases[i][2]);
    unsetenv(cases[i][0]);
  }
}

/* --help names the variable of every flag that takes one */
Test(flags, help_lists_every_env) {
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  ext_flags_usage(out);
  fclose(out);
  const char *env = strstr(buf, "\nEnvironment");
  cr_assert(env, "%s", buf);
  size_t n = 0;
  for (const char *p = buf; (p = strstr(p, "\n  --")) && p < env; p++) {
    char flag[64];
    cr_assert_eq(sscanf(p + 3, "--%63[a-z-]", flag), 1);
    if (!strcmp(flag, "help") || !strcmp(flag, "version"))
      continue;
    char want[128], name[64];
    size_t k = 0;
    for (const char *q = flag; *q && k < sizeof name - 1; q++)
      name[k++] = *q == '-' ? '_' : (char)(*q - 'a' + 'A');
    name[k] = '\0';
    snprintf(want, sizeof want, "IOQOS_%s ", name);
    cr_assert(strstr(env, want), "--%s has no %s in --help", flag, want);
    /* kubelet's service-link variables (SVC_PORT, SVC_SERVICE_HOST, ...) must not collide */
    cr_assert(!strstr(name, "_PORT") && !strstr(name, "SERVICE_HOST"), "%s looks like a service link", want);
    n++;
  }
  cr_assert_geq(n, 20, "found only %zu flags in --help", n);
  free(buf);
}

Test(listen, addresses) {
  struct ioq_listen_addr la;
  ioq_err e = {0};
  /* the extender's --listen: the shared parser with port 0 allowed */
  cr_assert_eq(ioq_parse_listen(":8888", IOQ_LISTEN_PORT0, &la, &e), 0);
  cr_assert_eq(la.ss.ss_family, AF_INET);
  cr_assert_eq(ntohs(((struct sockaddr_in *)&la.ss)->sin_port), 8888);
  cr_assert_eq(ioq_parse_listen("10.1.2.3:1", IOQ_LISTEN_PORT0, &la, &e), 0);
  cr_assert_eq(ioq_parse_listen("[::]:443", IOQ_LISTEN_PORT0, &la, &e), 0);
  cr_assert_eq(la.ss.ss_family, AF_INET6);
  cr_assert_eq(ioq_parse_listen("[::1]:0", IOQ_LISTEN_PORT0, &la, &e), 0);
  const char *bad[] = {"", "8888", "host:80", "1.2.3.4:99999", "1.2.3.4:", "[::1:80", "[x]:1", ":-1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_assert_eq(ioq_parse_listen(bad[i], IOQ_LISTEN_PORT0, &la, &e), -1, "'%s' should fail",
                 bad[i]);
}

Test(metrics, render) {
  struct ext_metrics *m = ext_metrics_new();
  ext_metrics_request(m, EXT_VERB_FILTER, 200, 0.0003);
  ext_metrics_request(m, EXT_VERB_FILTER, 200, 7.0); /* beyond the last bucket */
  ext_metrics_request(m, EXT_VERB_FILTER, 400, 0.002);
  ext_metrics_nodes(m, EXT_NODE_FAILED, 3);
  ext_metrics_bind(m, 1);
  struct ext_gauges g = {.assumed = 2, .node_cache_enabled = 1, .node_cache_nodes = 5};
  char *t = ext_metrics_render(m, &g);
  cr_assert(strstr(t, "ioqos_extender_requests_total{verb=\"filter\",code=\"200\"} 2\n"), "%s", t);
  cr_assert(strstr(t, "ioqos_extender_requests_total{verb=\"filter\",code=\"400\"} 1\n"));
  cr_assert(strstr(t, "ioqos_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"0.0005\"} 1\n"));
  cr_assert(strstr(t, "ioqos_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"5\"} 2\n"));
  cr_assert(strstr(t, "ioqos_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 3\n"));
  cr_assert(strstr(t, "ioqos_extender_filter_nodes_total{result=\"failed\"} 3\n"));
  cr_assert(strstr(t, "ioqos_extender_binds_total{result=\"bound\"} 1\n"));
  cr_assert(strstr(t, "ioqos_extender_assumed_placements 2\n"));
  cr_assert(strstr(t, "ioqos_extender_node_cache_nodes 5\n"));
  free(t);
  ext_metrics_free(m);
}

#include <stdlib.h>

#include "nodemap.h"

static struct ext_nodeinfo *mk(const char *name) {
  struct ext_nodeinfo *ni = calloc(1, sizeof *ni);
  snprintf(ni->name, sizeof ni->name, "%s", name);
  return ni;
}

Test(nodemap, put_find_delete_keep_chains) {
  struct ext_nodemap m;
  cr_assert_eq(ext_nodemap_init(&m, 0), 0);
  char name[32];
  for (int i = 0; i < 3000; i++) {
    snprintf(name, sizeof name, "node-%05d", i);
    cr_assert_eq(ext_nodemap_put(&m, mk(name)), 0);
  }
  cr_assert_eq(m.n, 3000);
  /* replacing keeps the count */
  cr_assert_eq(ext_nodemap_put(&m, mk("node-00007")), 0);
  cr_assert_eq(m.n, 3000);
  for (int i = 0; i < 3000; i += 3) {
    snprintf(name, sizeof name, "node-%05d", i);
    cr_assert(ext_nodemap_del(&m, name));
  }
  cr_assert_not(ext_nodemap_del(&m, "node-00000"), "already gone");
  cr_assert_not(ext_nodemap_del(&m, "ghost"));
  for (int i = 0; i < 3000; i++) {
    snprintf(name, sizeof name, "node-%05d", i);
    struct ext_nodeinfo *ni = ext_nodemap_find(&m, name);
    if (i % 3 == 0)
      cr_assert_null(ni, "%s should be gone", name);
    else
      cr_assert(ni && strcmp(ni->name, name) == 0, "%s lost after deletions", name);
  }
  cr_assert_eq(m.n, 2000);
  size_t seen = 0;
  for (size_t i = 0; i < m.cap; i++)
    seen += m.slots[i].ni != NULL;
  cr_assert_eq(seen, 2000);
  ext_nodemap_free(&m);
}

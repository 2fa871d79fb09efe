// SPDX-License-Identifier: Apache-2.0
/* --kubeconfig / KUBECONFIG (issue 14 item 6): the API client against the
 * API server stand-in (tests/support/apiserver.py) over HTTPS with a test PKI
 * (mkcerts.sh): bearer token and client certificate variants, inline (-data)
 * and file forms, insecure-skip-tls-verify, and the auth plugins it refuses
 * with the field named. */
#include <criterion/criterion.h>
#include <gnutls/gnutls.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "kube/kube.h"

static pid_t g_srv = -1;
static char g_dir[64];
static int g_port;

static void sh(const char *fmt, const char *arg) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, fmt, arg);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void setup(void) {
  strcpy(g_dir, "/tmp/ioqos-kc-XXXXXX");
  cr_assert_not_null(mkdtemp(g_dir));
  sh(MKCERTS " %s", g_dir);
}

static void teardown(void) {
  if (g_srv > 0) {
    kill(g_srv, SIGTERM);
    waitpid(g_srv, NULL, 0);
    g_srv = -1;
  }
  sh("rm -rf %s", g_dir);
  unsetenv("KUBECONFIG");
}

/* HTTPS stand-in; token: required bearer token; client_ca: require a
 * client certificate */
static void start_server(const char *token, bool client_ca) {
  char portfile[128], cert[128], key[128], ca[128];
  snprintf(portfile, sizeof portfile, "%s/port", g_dir);
  snprintf(cert, sizeof cert, "%s/server.crt", g_dir);
  snprintf(key, sizeof key, "%s/server.key", g_dir);
  snprintf(ca, sizeof ca, "%s/ca.crt", g_dir);
  g_srv = fork();
  if (g_srv == 0) {
    const char *argv[16] = {"python3", FAKE_APISERVER, "--port-file", portfile, "--tls-cert", cert,
                            "--tls-key", key};
    int n = 8;
    if (token) {
      argv[n++] = "--token";
      argv[n++] = token;
    }
    if (client_ca) {
      argv[n++] = "--tls-client-ca";
      argv[n++] = ca;
    }
    execv("/usr/bin/python3", (char **)argv);
    _exit(127);
  }
  for (int i = 0; i < 200; i++) {
    FILE *f = fopen(portfile, "r");
    if (f) {
      cr_assert_eq(fscanf(f, "%d", &g_port), 1);
      fclose(f);
      return;
    }
    usleep(50000);
  }
  cr_assert_fail("API server stand-in did not start");
}

static char *b64_of(const char *file) {
  char path[128], *text;
  size_t len;
  ioq_err e = {0};
  snprintf(path, sizeof path, "%s/%s", g_dir, file);
  cr_assert_eq(ioq_read_file(path, &text, &len, 1 << 20, &e), 0, "%s", e.msg);
  gnutls_datum_t in = {(unsigned char *)text, (unsigned)len}, out;
  cr_assert_eq(gnutls_base64_encode2(&in, &out), 0);
  char *s = strndup((char *)out.data, out.size);
  gnutls_free(out.data);
  free(text);
  return s;
}

/* Writes DIR/kubeconfig: current context "test" -> cluster "c" (server +
 * cluster_extra lines) and user "u" (user_extra lines). */
static char *kubeconfig(const char *cluster_extra, const char *user_extra) {
  static char path[128];
  snprintf(path, sizeof path, "%s/kubeconfig", g_dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "apiVersion: v1\n"
          "kind: Config\n"
          "current-context: test\n"
          "contexts:\n"
          "- name: other\n"
          "  context: {cluster: nowhere, user: nobody}\n"
          "- name: test\n"
          "  context:\n"
          "    cluster: c\n"
          "    user: u\n"
          "clusters:\n"
          "- name: c\n"
          "  cluster:\n"
          "    server: https://127.0.0.1:%d\n"
          "%s"
          "users:\n"
          "- name: u\n"
          "  user:\n"
          "%s",
          g_port, cluster_extra, user_extra);
  fclose(f);
  return path;
}

static struct ioq_kube *client_from(const char *path, ioq_err *e) {
  struct ioq_kube_opts o = {.kubeconfig = path, .timeout_ms = 5000};
  return ioq_kube_new(&o, e);
}

/* GET /api/v1/nodes; returns the HTTP status, 0 for a transport failure
 * (a refusal is the status the tests look at: *e has the message) */
static long get_nodes(struct ioq_kube *k, ioq_err *e) {
  long status = 0;
  json_object *o = NULL;
  if (ioq_kube_get_json(k, "/api/v1/nodes", &o, &status, e) < 0 && status == 0)
    return 0;
  json_object_put(o);
  return status;
}

TestSuite(kubeconfig, .init = setup, .fini = teardown);

Test(kubeconfig, token_and_ca_file) {
  start_server("s3cret", false);
  /* a relative path is relative to the kubeconfig's directory */
  char *p = kubeconfig("    certificate-authority: ca.crt\n", "    token: s3cret\n");
  ioq_err e = {0};
  struct ioq_kube *k = client_from(p, &e);
  cr_assert_not_null(k, "%s", e.msg);
  cr_assert_eq(get_nodes(k, &e), 200, "%s", e.msg);
  ioq_kube_free(k);
  /* the server does check the token */
  p = kubeconfig("    certificate-authority: ca.crt\n", "    token: wrong\n");
  cr_assert_not_null(k = client_from(p, &e), "%s", e.msg);
  cr_assert_eq(get_nodes(k, &e), 401, "%s", e.msg);
  ioq_kube_free(k);
}

Test(kubeconfig, token_file_wins) {
  start_server("from-file", false);
  char tf[128];
  snprintf(tf, sizeof tf, "%s/token", g_dir);
  FILE *f = fopen(tf, "w");
  fputs("from-file\n", f);
  fclose(f);
  char *p = kubeconfig("    certificate-authority: ca.crt\n",
                       "    token: stale\n    tokenFile: token\n");
  ioq_err e = {0};
  struct ioq_kube *k = client_from(p, &e);
  cr_assert_not_null(k, "%s", e.msg);
  cr_assert_eq(get_nodes(k, &e), 200, "%s", e.msg);
  ioq_kube_free(k);
}

Test(kubeconfig, client_certificate_data) {
  start_server(NULL, true);
  char *ca = b64_of("ca.crt"), *crt = b64_of("client.crt"), *key = b64_of("client.key");
  char cl[8192], us[8192];
  snprintf(cl, sizeof cl, "    certificate-authority-data: %s\n", ca);
  snprintf(us, sizeof us, "    client-certificate-data: %s\n    client-key-data: %s\n", crt, key);
  char *p = kubeconfig(cl, us);
  ioq_err e = {0};
  struct ioq_kube *k = client_from(p, &e);
  cr_assert_not_null(k, "%s", e.msg);
  cr_assert_eq(get_nodes(k, &e), 200, "%s", e.msg);
  /* the stand-in saw the client certificate */
  json_object *reqs = NULL;
  cr_assert_eq(ioq_kube_get_json(k, "/_admin/requests", &reqs, NULL, &e), 0, "%s", e.msg);
  json_object *first = json_object_array_get_idx(reqs, 0), *cn;
  cr_assert(json_object_object_get_ex(first, "clientCN", &cn));
  cr_assert_str_eq(json_object_get_string(cn), "ioqos-test");
  json_object_put(reqs);
  ioq_kube_free(k);
  /* without the certificate the server refuses the handshake */
  p = kubeconfig(cl, "    {}\n");
  cr_assert_not_null(k = client_from(p, &e), "%s", e.msg);
  cr_assert_eq(get_nodes(k, &e), 0);
  cr_assert(strstr(e.msg, "GET https://127.0.0.1:"), "%s", e.msg);
  ioq_kube_free(k);
  free(ca), free(crt), free(key);
}

Test(kubeconfig, client_certificate_files) {
  start_server(NULL, true);
  char us[512];
  snprintf(us, sizeof us, "    client-certificate: %s/client.crt\n    client-key: client.key\n", g_dir);
  char *p = kubeconfig("    certificate-authority: ca.crt\n", us);
  ioq_err e = {0};
  struct ioq_kube *k = client_from(p, &e);
  cr_assert_not_null(k, "%s", e.msg);
  cr_assert_eq(get_nodes(k, &e), 200, "%s", e.msg);
  ioq_kube_free(k);
}

Test(kubeconfig, verification_on_unless_skipped) {
  start_server("t", false);
  ioq_err e = {0};
  /* no CA: the system CAs do not know the test CA */
  struct ioq_kube *k = client_from(kubeconfig("", "    token: t\n"), &e);
  cr_assert_not_null(k, "%s", e.msg);
  cr_assert_eq(get_nodes(k, &e), 0, "an unknown CA was accepted");
  ioq_kube_free(k);
  k = client_from(kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n"), &e);
  cr_assert_not_null(k, "%s", e.msg);
  cr_assert_eq(get_nodes(k, &e), 200, "%s", e.msg);
  ioq_kube_free(k);
  cr_assert_null(client_from(kubeconfig("    insecure-skip-tls-verify: true\n    certificate-authority: ca.crt\n",
                                        "    token: t\n"), &e));
  cr_assert(strstr(e.msg, "line 15: clusters[name=c].cluster.insecure-skip-tls-verify: is true "
                          "together with a certificate authority"), "%s", e.msg);
}

Test(kubeconfig, auth_plugins_refused) {
  g_port = 6443;
  ioq_err e = {0};
  cr_assert_null(client_from(kubeconfig("", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                                            "      command: aws\n"), &e));
  cr_assert(strstr(e.msg, "/kubeconfig: line 18: users[name=u].user.exec: credential plugins "
                          "(exec) are not supported: give this user a token, tokenFile or "
                          "client-certificate and client-key"), "%s", e.msg);
  cr_assert_null(client_from(kubeconfig("", "    auth-provider: {name: gcp}\n"), &e));
  cr_assert(strstr(e.msg, "line 18: users[name=u].user.auth-provider: auth provider plugins are "
                          "not supported"), "%s", e.msg);
  cr_assert_null(client_from(kubeconfig("", "    username: admin\n    password: x\n"), &e));
  cr_assert(strstr(e.msg, "users[name=u].user.username: basic authentication is not supported"),
            "%s", e.msg);
  cr_assert_null(client_from(kubeconfig("", "    client-certificate: c.crt\n"), &e));
  cr_assert(strstr(e.msg, "users[name=u].user: has a client certificate without client-key(-data)"),
            "%s", e.msg);
  cr_assert_null(client_from(kubeconfig("    proxy-url: http://proxy:3128\n", "    {}\n"), &e));
  cr_assert(strstr(e.msg, "clusters[name=c].cluster.proxy-url: is not supported"), "%s", e.msg);
  cr_assert_null(client_from(kubeconfig("    certificate-authority-data: '!!!'\n", "    {}\n"), &e));
  cr_assert(strstr(e.msg, "clusters[name=c].cluster.certificate-authority-data: is not base64"), "%s", e.msg);
}

Test(kubeconfig, structure_errors) {
  char path[128];
  snprintf(path, sizeof path, "%s/kc", g_dir);
  ioq_err e = {0};
  FILE *f = fopen(path, "w");
  fputs("apiVersion: v1\nclusters: []\n", f);
  fclose(f);
  cr_assert_null(client_from(path, &e));
  cr_assert(strstr(e.msg, "kc: line 1: current-context: is not set"), "%s", e.msg);
  f = fopen(path, "w");
  fputs("current-context: x\ncontexts:\n- name: y\n  context: {cluster: c}\n", f);
  fclose(f);
  cr_assert_null(client_from(path, &e));
  cr_assert(strstr(e.msg, "kc: line 2: contexts: no entry named 'x'"), "%s", e.msg);
  cr_assert_null(client_from("/nonexistent/kc", &e));
  cr_assert(strstr(e.msg, "kubeconfig: open /nonexistent/kc: No such file or directory"), "%s", e.msg);
}

Test(kubeconfig, env_and_precedence) {
  start_server("t", false);
  char *p = kubeconfig("    certificate-authority: ca.crt\n", "    token: t\n");
  ioq_err e = {0};
  /* KUBECONFIG when nothing else is given */
  setenv("KUBECONFIG", p, 1);
  struct ioq_kube_opts o = {.timeout_ms = 5000};
  struct ioq_kube *k = ioq_kube_new(&o, &e);
  cr_assert_not_null(k, "%s", e.msg);
  cr_assert_eq(get_nodes(k, &e), 200, "%s", e.msg);
  ioq_kube_free(k);
  /* an explicit server wins over KUBECONFIG */
  o.server = "http://127.0.0.1:9";
  cr_assert_not_null(k = ioq_kube_new(&o, &e), "%s", e.msg);
  cr_assert_str_eq(ioq_kube_server(k), "http://127.0.0.1:9");
  ioq_kube_free(k);
  /* --kubeconfig and --kube-api-server: two sources of one setting */
  o.kubeconfig = p;
  cr_assert_null(ioq_kube_new(&o, &e));
  cr_assert(strstr(e.msg, "conflicts with --kube-api-server"), "%s", e.msg);
  o = (struct ioq_kube_opts){.timeout_ms = 5000};
  setenv("KUBECONFIG", "/a:/b", 1);
  cr_assert_null(ioq_kube_new(&o, &e));
  cr_assert(strstr(e.msg, "KUBECONFIG=/a:/b lists several files"), "%s", e.msg);
}

Test(kubeconfig, no_token_over_plain_http) {
  g_port = 8080;
  char *p = kubeconfig("", "    token: t\n");
  /* the kubeconfig's server is https: rewrite it to http */
  sh("sed -i 's|https://|http://|' %s", p);
  ioq_err e = {0};
  cr_assert_null(client_from(p, &e));
  cr_assert(strstr(e.msg, "refusing to send the bearer token of "), "%s", e.msg);
  cr_assert(strstr(e.msg, "/kubeconfig over plain http://"), "%s", e.msg);
}

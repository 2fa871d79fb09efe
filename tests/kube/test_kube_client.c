// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"

#include "kube/kube.h"

static pid_t g_srv;
static char g_url[64];
static char g_dir[64];

static void start_server(const char *token) {
  strcpy(g_dir, "/tmp/ioqos-kube-XXXXXX");
  cr_assert_not_null(mkdtemp(g_dir));
  char portfile[128];
  snprintf(portfile, sizeof portfile, "%s/port", g_dir);
  g_srv = fork();
  if (g_srv == 0) {
    if (token)
      execl("/usr/bin/python3", "python3", FAKE_APISERVER, "--port-file", portfile, "--token", token,
            (char *)NULL);
    else
      execl("/usr/bin/python3", "python3", FAKE_APISERVER, "--port-file", portfile, (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 200; i++) {
    FILE *f = fopen(portfile, "r");
    if (f) {
      int port = 0;
      if (fscanf(f, "%d", &port) == 1)
        snprintf(g_url, sizeof g_url, "http://127.0.0.1:%d", port);
      fclose(f);
      return;
    }
    usleep(50000);
  }
  cr_assert_fail("fake API server did not start");
}

static void stop_server(void) {
  if (g_srv > 0) {
    kill(g_srv, SIGTERM);
    waitpid(g_srv, NULL, 0);
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "cleanup of %s failed\n", g_dir);
}

static struct ioq_kube *client(const char *token_file) {
  /* the stand-in speaks plain http */
  struct ioq_kube_opts o = {.server = g_url, .token_file = token_file, .timeout_ms = 5000,
                            .allow_insecure_token = true};
  ioq_err e = {0};
  struct ioq_kube *k = ioq_kube_new(&o, &e);
  cr_assert_not_null(k, "%s", e.msg);
  return k;
}

static void admin_put(struct ioq_kube *k, const char *json) {
  struct ioq_kube_resp r;
  ioq_err e = {0};
  cr_assert_eq(ioq_kube_do(k, "POST", "/_admin/objects", "application/json", json, &r, &e), 0, "%s", e.msg);
  cr_assert_eq(r.status, 200, "%s", r.body);
  ioq_kube_resp_free(&r);
}

TestSuite(kube, .init = NULL, .fini = stop_server);

Test(kube, get_patch_and_errors) {
  start_server(NULL);
  struct ioq_kube *k = client(NULL);
  admin_put(k, "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"annotations\":{\"a\":\"1\"}}}");
  json_object *o;
  ioq_err e = {0};
  long st;
  cr_assert_eq(ioq_kube_get_json(k, "/api/v1/nodes/n1", &o, &st, &e), 0, "%s", e.msg);
  cr_assert_eq(st, 200);
  json_object_put(o);

  cr_assert_eq(ioq_kube_get_json(k, "/api/v1/nodes/missing", &o, &st, &e), -1);
  cr_assert_eq(st, 404);
  cr_assert_eq(e.code, IOQ_ENOTFOUND);
  cr_assert(strstr(e.msg, "HTTP 404") && strstr(e.msg, "nodes \"missing\" not found"), "%s", e.msg);

  json_object *patch = json_tokener_parse("{\"metadata\":{\"annotations\":{\"ioqos.io/devices\":\"x\",\"a\":null}}}");
  cr_assert_eq(ioq_kube_merge_patch(k, "/api/v1/nodes/n1", patch, &o, &st, &e), 0, "%s", e.msg);
  json_object_put(patch);
  json_object *md, *ann, *v;
  cr_assert(json_object_object_get_ex(o, "metadata", &md) && json_object_object_get_ex(md, "annotations", &ann));
  cr_assert(json_object_object_get_ex(ann, "ioqos.io/devices", &v));
  cr_assert_str_eq(json_object_get_string(v), "x");
  cr_assert_not(json_object_object_get_ex(ann, "a", &v), "merge patch null must delete");
  json_object_put(o);
  ioq_kube_free(k);
}

Test(kube, transport_error_is_clear) {
  struct ioq_kube_opts o = {.server = "http://127.0.0.1:1", .timeout_ms = 2000};
  ioq_err e = {0};
  struct ioq_kube *k = ioq_kube_new(&o, &e);
  cr_assert_not_null(k);
  json_object *j;
  long st = -1;
  cr_assert_eq(ioq_kube_get_json(k, "/api/v1/pods", &j, &st, &e), -1);
  cr_assert_eq(st, 0);
  cr_assert(strstr(e.msg, "GET http://127.0.0.1:1/api/v1/pods"), "%s", e.msg);
  ioq_kube_free(k);
}

Test(kube, bad_options) {
  ioq_err e = {0};
  struct ioq_kube_opts o = {.server = "ftp://x"};
  cr_assert_null(ioq_kube_new(&o, &e));
  cr_assert(strstr(e.msg, "must start with https:// or http://"), "%s", e.msg);
  struct ioq_kube_opts o2 = {.server = "https://x", .token_file = "/nonexistent/token"};
  cr_assert_null(ioq_kube_new(&o2, &e));
  cr_assert(strstr(e.msg, "token file /nonexistent/token does not exist"), "%s", e.msg);
  unsetenv("KUBERNETES_SERVICE_HOST");
  struct ioq_kube_opts o3 = {0};
  cr_assert_null(ioq_kube_new(&o3, &e));
  cr_assert(strstr(e.msg, "not in a cluster"), "%s", e.msg);
}

Test(kube, in_cluster_config_and_token) {
  start_server("s3cret");
  char sa[128];
  snprintf(sa, sizeof sa, "%s/sa", g_dir);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "mkdir -p %s && printf 's3cret\\n' > %s/token && touch %s/ca.crt", sa, sa, sa);
  cr_assert_eq(system(cmd), 0);
  const char *port = strrchr(g_url, ':') + 1;
  setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", port, 1);
  struct ioq_kube_opts o = {.sa_dir = sa};
  ioq_err e = {0};
  struct ioq_kube *k = ioq_kube_new(&o, &e);
  cr_assert_not_null(k, "%s", e.msg);
  char want[96];
  snprintf(want, sizeof want, "https://127.0.0.1:%s", port);
  cr_assert_str_eq(ioq_kube_server(k), want);
  ioq_kube_free(k);

  /* explicit http server + token file: token is sent and re-read on change */
  char tok[160];
  snprintf(tok, sizeof tok, "%s/token", sa);
  k = client(tok);
  json_object *j;
  long st;
  cr_assert_eq(ioq_kube_get_json(k, "/api/v1/nodes", &j, &st, &e), 0, "%s", e.msg);
  json_object_put(j);
  sleep(1); /* mtime granularity */
  snprintf(cmd, sizeof cmd, "printf 'wrong' > %s/token", sa);
  cr_assert_eq(system(cmd), 0);
  cr_assert_eq(ioq_kube_get_json(k, "/api/v1/nodes", &j, &st, &e), -1);
  cr_assert_eq(st, 401, "%ld %s", st, e.msg);
  ioq_kube_free(k);
}

Test(kube, token_never_sent_over_plain_http_without_opt_in) {
  start_server("s3cret");
  char tok[160], cmd[512];
  snprintf(tok, sizeof tok, "%s/tok-http", g_dir);
  snprintf(cmd, sizeof cmd, "printf 's3cret' > %s", tok);
  cr_assert_eq(system(cmd), 0);
  unsetenv(IOQ_KUBE_INSECURE_TOKEN_ENV);
  struct ioq_kube_opts o = {.server = g_url, .token_file = tok, .timeout_ms = 5000};
  ioq_err e = {0};
  cr_assert_null(ioq_kube_new(&o, &e));
  cr_assert(strstr(e.msg, "refusing to send the bearer token"), "%s", e.msg);
  cr_assert(strstr(e.msg, IOQ_KUBE_INSECURE_TOKEN_ENV "=1"), "%s", e.msg);
  /* nothing reached the server */
  struct ioq_kube *admin = client(NULL);
  struct ioq_kube_resp r;
  cr_assert_eq(ioq_kube_do(admin, "GET", "/_admin/requests", NULL, NULL, &r, &e), 0, "%s", e.msg);
  cr_assert_str_eq(ioq_trim(r.body), "[]");
  ioq_kube_resp_free(&r);
  /* no token: plain http is fine; https with a token is fine */
  struct ioq_kube_opts o2 = {.server = g_url, .timeout_ms = 5000};
  struct ioq_kube *k = ioq_kube_new(&o2, &e);
  cr_assert_not_null(k, "%s", e.msg);
  ioq_kube_free(k);
  struct ioq_kube_opts o3 = {.server = "https://127.0.0.1:1", .token_file = tok};
  k = ioq_kube_new(&o3, &e);
  cr_assert_not_null(k, "%s", e.msg);
  ioq_kube_free(k);
  /* the environment's opt-in, for binaries */
  setenv(IOQ_KUBE_INSECURE_TOKEN_ENV, "1", 1);
  k = ioq_kube_new(&o, &e);
  unsetenv(IOQ_KUBE_INSECURE_TOKEN_ENV);
  cr_assert_not_null(k, "%s", e.msg);
  json_object *j;
  long st;
  cr_assert_eq(ioq_kube_get_json(k, "/api/v1/nodes", &j, &st, &e), 0, "%s", e.msg);
  json_object_put(j);
  ioq_kube_free(k);
  ioq_kube_free(admin);
}

Test(kube, event_post) {
  start_server(NULL);
  struct ioq_kube *k = client(NULL);
  struct ioq_kube_event ev = {.ns = "db", .kind = "Pod", .name = "pg-0", .uid = "u1",
                              .type = "Warning", .reason = "IoqosEnforceFailed",
                              .message = "write io.max: No such device", .component = "ioqos-plugin",
                              .host = "n1"};
  ioq_err e = {0};
  cr_assert_eq(ioq_kube_post_event(k, &ev, &e), 0, "%s", e.msg);
  json_object *evs;
  cr_assert_eq(ioq_kube_get_json(k, "/_admin/events", &evs, NULL, &e), 0);
  cr_assert_eq(json_object_array_length(evs), 1);
  const char *txt = json_object_to_json_string_ext(evs, JSON_C_TO_STRING_PLAIN);
  cr_assert(strstr(txt, "\"reason\":\"IoqosEnforceFailed\"") && strstr(txt, "\"kind\":\"Pod\"") &&
            strstr(txt, "\"namespace\":\"db\""), "%s", txt);
  json_object_put(evs);
  struct ioq_kube_event bad = {.ns = "db"};
  cr_assert_eq(ioq_kube_post_event(k, &bad, &e), -1);
  ioq_kube_free(k);
}

/* The namespace of an event is the URL path: one that kubelet or a pod
 * reported as "..", "a/b" or "%2e%2e" must not post to another collection
 * (libcurl removes dot segments). Refused before any request is made. */
Test(kube, event_namespace_validated_before_the_url) {
  start_server(NULL);
  struct ioq_kube *k = client(NULL);
  static const char *const bad_ns[] = {"..", ".", "a/b", "%2e%2e", "Default", ""};
  for (size_t i = 0; i < sizeof bad_ns / sizeof *bad_ns; i++) {
    struct ioq_kube_event ev = {.ns = bad_ns[i], .kind = "Pod", .name = "p", .reason = "R",
                                .message = "m"};
    ioq_err e = {0};
    cr_assert_eq(ioq_kube_post_event(k, &ev, &e), -1, "namespace '%s' accepted", bad_ns[i]);
    cr_assert_eq(e.code, IOQ_EINVAL_INPUT, "namespace '%s': %s", bad_ns[i], e.msg);
    cr_assert(strstr(e.msg, "namespace"), "%s", e.msg);
  }
  json_object *evs;
  ioq_err e = {0};
  cr_assert_eq(ioq_kube_get_json(k, "/_admin/events", &evs, NULL, &e), 0);
  cr_assert_eq(json_object_array_length(evs), 0, "an event was posted");
  json_object_put(evs);
  ioq_kube_free(k);
}

/* ---- informer ---- */
struct seen {
  pthread_mutex_t lock;
  int lists, failed_lists, last_list_len, added, modified, deleted;
  int gathering, pages, max_page;
  char last_name[64];
};

static void list_begin(void *ud) {
  struct seen *s = ud;
  pthread_mutex_lock(&s->lock);
  s->gathering = 0;
  s->pages = 0;
  pthread_mutex_unlock(&s->lock);
}

static void list_page(void *ud, json_object *items) {
  struct seen *s = ud;
  pthread_mutex_lock(&s->lock);
  int n = (int)json_object_array_length(items);
  s->gathering += n;
  s->pages++;
  if (n > s->max_page)
    s->max_page = n;
  pthread_mutex_unlock(&s->lock);
}

static void list_end(void *ud, bool complete) {
  struct seen *s = ud;
  pthread_mutex_lock(&s->lock);
  if (complete) {
    s->lists++;
    s->last_list_len = s->gathering;
  } else {
    s->failed_lists++;
  }
  pthread_mutex_unlock(&s->lock);
}

static void on_event(void *ud, const char *type, json_object *obj) {
  struct seen *s = ud;
  json_object *md, *n;
  pthread_mutex_lock(&s->lock);
  if (!strcmp(type, "ADDED"))
    s->added++;
  else if (!strcmp(type, "MODIFIED"))
    s->modified++;
  else if (!strcmp(type, "DELETED"))
    s->deleted++;
  if (json_object_object_get_ex(obj, "metadata", &md) && json_object_object_get_ex(md, "name", &n))
    snprintf(s->last_name, sizeof s->last_name, "%s", json_object_get_string(n));
  pthread_mutex_unlock(&s->lock);
}

static int wait_for(struct seen *s, int *field, int want) {
  for (int i = 0; i < 200; i++) {
    pthread_mutex_lock(&s->lock);
    int v = *field;
    pthread_mutex_unlock(&s->lock);
    if (v >= want)
      return v;
    usleep(50000);
  }
  return *field;
}

Test(kube, informer_list_watch_relist) {
  start_server(NULL);
  struct ioq_kube *k = client(NULL);
  /* 1203 pods, 3 on another node: the list is paginated (limit=500) and
   * filtered by the field selector */
  for (int i = 0; i < 1203; i++) {
    char j[256];
    snprintf(j, sizeof j, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p%d\",\"namespace\":\"ns\"},"
             "\"spec\":{\"nodeName\":\"%s\"}}", i, i < 1200 ? "n1" : "n2");
    admin_put(k, j);
  }
  struct seen s = {.lock = PTHREAD_MUTEX_INITIALIZER};
  struct ioq_kube_informer_cb cb = {list_begin, list_page, list_end, on_event, NULL, 0, 0, 0};
  ioq_err e = {0};
  struct ioq_kube_informer *inf = ioq_kube_informer_start(k, "/api/v1/pods", "spec.nodeName=n1", &cb, &s, &e);
  cr_assert_not_null(inf, "%s", e.msg);
  cr_assert_eq(wait_for(&s, &s.lists, 1), 1);
  cr_assert(ioq_kube_informer_synced(inf));
  cr_assert_eq(s.last_list_len, 1200);
  /* delivered page by page (limit=500), never the whole list at once */
  cr_assert_eq(s.pages, 3);
  cr_assert_eq(s.max_page, 500);

  admin_put(k, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"new\",\"namespace\":\"ns\"},\"spec\":{\"nodeName\":\"n1\"}}");
  admin_put(k, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"other\",\"namespace\":\"ns\"},\"spec\":{\"nodeName\":\"n2\"}}");
  cr_assert_eq(wait_for(&s, &s.added, 1), 1);
  admin_put(k, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"new\",\"namespace\":\"ns\",\"labels\":{\"x\":\"y\"}},\"spec\":{\"nodeName\":\"n1\"}}");
  cr_assert_eq(wait_for(&s, &s.modified, 1), 1);
  struct ioq_kube_resp r;
  cr_assert_eq(ioq_kube_do(k, "DELETE", "/_admin/objects/Pod/ns/new", NULL, NULL, &r, &e), 0);
  ioq_kube_resp_free(&r);
  cr_assert_eq(wait_for(&s, &s.deleted, 1), 1);
  cr_assert_str_eq(s.last_name, "new");
  cr_assert_eq(s.added, 1, "the pod on n2 must be filtered out");

  /* watch ends: reconnect from the last resourceVersion, no re-list */
  cr_assert_eq(ioq_kube_do(k, "POST", "/_admin/close-watches", "application/json", "{}", &r, &e), 0);
  ioq_kube_resp_free(&r);
  admin_put(k, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"after\",\"namespace\":\"ns\"},\"spec\":{\"nodeName\":\"n1\"}}");
  cr_assert_eq(wait_for(&s, &s.added, 2), 2);
  cr_assert_eq(ioq_kube_informer_lists(inf), 1);

  /* history compacted + watch reconnect: 410 Gone -> fresh list */
  cr_assert_eq(ioq_kube_do(k, "POST", "/_admin/compact", "application/json", "{}", &r, &e), 0);
  ioq_kube_resp_free(&r);
  cr_assert_eq(ioq_kube_do(k, "POST", "/_admin/close-watches", "application/json", "{}", &r, &e), 0);
  ioq_kube_resp_free(&r);
  cr_assert_eq(wait_for(&s, &s.lists, 2), 2);
  cr_assert_eq(s.last_list_len, 1201);

  /* API errors: injected 500s on list are retried with backoff */
  cr_assert_eq(ioq_kube_do(k, "POST", "/_admin/fail", "application/json",
                           "{\"path_prefix\":\"/api/v1/pods\",\"status\":500,\"count\":2}", &r, &e), 0);
  ioq_kube_resp_free(&r);
  cr_assert_eq(ioq_kube_do(k, "POST", "/_admin/compact", "application/json", "{}", &r, &e), 0);
  ioq_kube_resp_free(&r);
  cr_assert_eq(ioq_kube_do(k, "POST", "/_admin/close-watches", "application/json", "{}", &r, &e), 0);
  ioq_kube_resp_free(&r);
  cr_assert_eq(wait_for(&s, &s.lists, 3), 3);
  cr_assert_geq(s.failed_lists, 1, "a list that fails midway must end with complete=false");

  ioq_kube_informer_stop(inf);
  ioq_kube_free(k);
}

static void admin_post(struct ioq_kube *k, const char *path, const char *json) {
  struct ioq_kube_resp r;
  ioq_err e = {0};
  cr_assert_eq(ioq_kube_do(k, "POST", path, "application/json", json, &r, &e), 0, "%s", e.msg);
  cr_assert_eq(r.status, 200, "%s", r.body);
  ioq_kube_resp_free(&r);
}

/* requests the stand-in saw whose path (with query) contains needle */
static int count_requests(struct ioq_kube *k, const char *needle) {
  json_object *all;
  ioq_err e = {0};
  cr_assert_eq(ioq_kube_get_json(k, "/_admin/requests", &all, NULL, &e), 0, "%s", e.msg);
  int n = 0;
  for (size_t i = 0; i < json_object_array_length(all); i++) {
    json_object *p;
    if (json_object_object_get_ex(json_object_array_get_idx(all, i), "path", &p) &&
        strstr(json_object_get_string(p), needle))
      n++;
  }
  json_object_put(all);
  return n;
}

/* The informer's log lines (ioq_log writes to stderr) go to a file the test reads. */
static char g_errlog[160];
static void capture_stderr(void) {
  snprintf(g_errlog, sizeof g_errlog, "%s/stderr.log", g_dir);
  int fd = open(g_errlog, O_CREAT | O_WRONLY | O_TRUNC, 0600);
  cr_assert_geq(fd, 0);
  fflush(stderr);
  cr_assert_geq(dup2(fd, 2), 0);
  close(fd);
}

static bool stderr_has(const char *needle) {
  fflush(stderr);
  FILE *f = fopen(g_errlog, "r");
  cr_assert_not_null(f);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strstr(buf, needle) != NULL;
}

/* Makes every new watch fail the way `fail_path`/`fail_body` (an /_admin
 * request) sets up, ends the open watch, and checks the informer backs off
 * (about 3 tries in 3 s: 0.5, 1, 2 s; without a backoff, hundreds), logs
 * `expect`, and recovers once `heal_path` restores the API. */
static void check_watch_backoff(const char *fail_path, const char *fail_body, const char *expect,
                                const char *heal_path, const char *heal_body) {
  start_server(NULL);
  capture_stderr();
  struct ioq_kube *k = client(NULL);
  admin_put(k, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\"},\"spec\":{}}");
  struct seen s = {.lock = PTHREAD_MUTEX_INITIALIZER};
  struct ioq_kube_informer_cb cb = {list_begin, list_page, list_end, on_event, NULL, 0, 0, 0};
  ioq_err e = {0};
  struct ioq_kube_informer *inf = ioq_kube_informer_start(k, "/api/v1/pods", NULL, &cb, &s, &e);
  cr_assert_not_null(inf, "%s", e.msg);
  cr_assert_eq(wait_for(&s, &s.lists, 1), 1);
  sleep(1); /* the first watch lived long enough not to count as "very short" */

  admin_post(k, fail_path, fail_body);
  int before = count_requests(k, "watch=1");
  admin_post(k, "/_admin/close-watches", "{}");
  sleep(3);
  int tries = count_requests(k, "watch=1") - before;
  cr_assert_geq(tries, 1);
  cr_assert_leq(tries, 6, "%d watch requests in 3 s: no backoff", tries);
  cr_assert_leq(ioq_kube_informer_lists(inf), 6);
  cr_assert(stderr_has(expect), "the log does not say '%s'", expect);
  cr_assert_not(stderr_has("unparsable event"), "an error reply was parsed as an event");

  /* the API works again: the next watch (after a list where one is due)
   * delivers what changes after it */
  admin_post(k, heal_path, heal_body);
  int watches = count_requests(k, "watch=1");
  for (int i = 0; i < 200 && count_requests(k, "watch=1") == watches; i++)
    usleep(50000);
  cr_assert_gt(count_requests(k, "watch=1"), watches, "no watch after the API was healed");
  admin_put(k, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\"},\"spec\":{}}");
  cr_assert_geq(wait_for(&s, &s.added, 1), 1, "no event after the API was healed");
  ioq_kube_informer_stop(inf);
  ioq_kube_free(k);
}

/* A watch the API refuses (403 from RBAC, 429 from priority and fairness)
 * answers with one Status, newline-terminated as the real API server writes
 * it: an error to back off from, not an event stream to re-list after at once. */
Test(kube, informer_backs_off_when_watch_is_refused) {
  check_watch_backoff("/_admin/fail",
                      "{\"path_prefix\":\"/api/v1/pods\",\"status\":403,\"count\":100000,\"watch\":true}",
                      "watch /api/v1/pods: HTTP 403: injected failure", "/_admin/unfail", "{}");
}

/* An ERROR event other than 410 Gone: re-list, but after a backoff. */
Test(kube, informer_backs_off_after_an_error_event) {
  check_watch_backoff("/_admin/watch-mode", "{\"mode\":\"error\",\"code\":500}",
                      "ERROR event, code 500: injected watch error", "/_admin/watch-mode",
                      "{\"mode\":\"normal\"}");
}

/* A watch the server (or a proxy) ends at once with nothing in it. */
Test(kube, informer_backs_off_after_an_empty_short_watch) {
  check_watch_backoff("/_admin/watch-mode", "{\"mode\":\"close\"}", "with no event",
                      "/_admin/watch-mode", "{\"mode\":\"normal\"}");
}

/* Stopping an informer whose list is stalled on a slow API server returns
 * promptly instead of waiting out the request timeout. */
Test(kube, informer_stop_does_not_wait_for_a_stalled_list) {
  start_server(NULL);
  struct ioq_kube *k = client(NULL); /* request timeout 5 s */
  admin_post(k, "/_admin/fail", "{\"path_prefix\":\"/api/v1/pods\",\"status\":500,\"delay\":4,\"count\":1}");
  struct seen s = {.lock = PTHREAD_MUTEX_INITIALIZER};
  struct ioq_kube_informer_cb cb = {list_begin, list_page, list_end, on_event, NULL, 0, 0, 0};
  ioq_err e = {0};
  struct ioq_kube_informer *inf = ioq_kube_informer_start(k, "/api/v1/pods", NULL, &cb, &s, &e);
  cr_assert_not_null(inf, "%s", e.msg);
  for (int i = 0; i < 100 && count_requests(k, "/api/v1/pods?limit=") == 0; i++)
    usleep(20000);
  cr_assert_eq(count_requests(k, "/api/v1/pods?limit="), 1, "the list request did not arrive");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ioq_kube_informer_stop(inf);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  /* the stalled list has 4 s left; a stop that waited for it would take that */
  cr_assert_lt(took, 2.5, "stop took %.2f s", took);
  cr_assert_eq(s.lists, 0);
  ioq_kube_free(k);
}

/* A watch whose server stops sending (hung server or proxy, TCP still up):
 * dropped after watch_silence_s without a byte and re-opened from its
 * resourceVersion. A healthy idle watch carries bookmarks and is kept. */
Test(kube, informer_reconnects_a_silent_watch) {
  start_server(NULL);
  capture_stderr();
  struct ioq_kube *k = client(NULL);
  admin_put(k, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\"},\"spec\":{}}");
  struct seen s = {.lock = PTHREAD_MUTEX_INITIALIZER};
  struct ioq_kube_informer_cb cb = {list_begin, list_page, list_end, on_event, NULL, 0, 0, 2};
  ioq_err e = {0};
  struct ioq_kube_informer *inf = ioq_kube_informer_start(k, "/api/v1/pods", NULL, &cb, &s, &e);
  cr_assert_not_null(inf, "%s", e.msg);
  cr_assert_eq(wait_for(&s, &s.lists, 1), 1);
  /* idle but healthy (a bookmark every second): not cut */
  int w0 = count_requests(k, "watch=1");
  sleep(4);
  cr_assert_eq(count_requests(k, "watch=1"), w0, "a healthy idle watch was re-opened");

  admin_post(k, "/_admin/watch-mode", "{\"mode\":\"stall\"}");
  admin_post(k, "/_admin/close-watches", "{}");
  for (int i = 0; i < 100 && count_requests(k, "watch=1") == w0; i++)
    usleep(50000);
  int w1 = count_requests(k, "watch=1"); /* the stalled one is open */
  cr_assert_gt(w1, w0);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  admin_post(k, "/_admin/watch-mode", "{\"mode\":\"normal\"}");
  for (int i = 0; i < 300 && count_requests(k, "watch=1") == w1; i++)
    usleep(50000);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  cr_assert_gt(count_requests(k, "watch=1"), w1, "the silent watch was never re-opened");
  cr_assert_leq(waited, 2.0 + 5.0, "re-opened after %.1f s", waited);
  cr_assert(stderr_has("kube watch silent for 2 s"));
  cr_assert_eq(ioq_kube_informer_lists(inf), 1, "a silent watch needs no re-list");
  /* and the new watch delivers */
  admin_put(k, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\"},\"spec\":{}}");
  cr_assert_geq(wait_for(&s, &s.added, 1), 1);
  ioq_kube_informer_stop(inf);
  ioq_kube_free(k);
}

/* Every connection has TCP keepalive on, probing after 10 s idle: the
 * kernel arms the keepalive timer (tr 2 in /proc/net/tcp) of the watch's
 * socket, due within 10 s (in USER_HZ ticks). */
Test(kube, watch_connection_has_tcp_keepalive) {
  start_server(NULL);
  struct ioq_kube *k = client(NULL);
  struct seen s = {.lock = PTHREAD_MUTEX_INITIALIZER};
  struct ioq_kube_informer_cb cb = {list_begin, list_page, list_end, on_event, NULL, 0, 0, 0};
  ioq_err e = {0};
  struct ioq_kube_informer *inf = ioq_kube_informer_start(k, "/api/v1/pods", NULL, &cb, &s, &e);
  cr_assert_not_null(inf, "%s", e.msg);
  cr_assert_eq(wait_for(&s, &s.lists, 1), 1);
  sleep(1);
  unsigned port = (unsigned)atoi(strrchr(g_url, ':') + 1);
  FILE *f = fopen("/proc/net/tcp", "r");
  cr_assert_not_null(f);
  char line[512];
  int found = 0, keepalive = 0;
  unsigned long when_max = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned lport, rport, st, tr;
    unsigned long when;
    if (sscanf(line, " %*d: %*8X:%X %*8X:%X %X %*X:%*X %X:%lX", &lport, &rport, &st, &tr, &when) != 5)
      continue;
    if (rport != port || st != 1) /* our side of an ESTABLISHED connection to the server */
      continue;
    found++;
    if (tr == 2) {
      keepalive++;
      if (when > when_max)
        when_max = when;
    }
  }
  fclose(f);
  cr_assert_geq(found, 1, "no connection to port %u", port);
  cr_assert_eq(keepalive, found, "%d of %d connections without a keepalive timer", found - keepalive, found);
  cr_assert_leq(when_max, (unsigned long)IOQ_KUBE_KEEPIDLE_S * 100, "keepalive due in %lu ticks", when_max);
  ioq_kube_informer_stop(inf);
  ioq_kube_free(k);
}

// SPDX-License-Identifier: Apache-2.0
/* ioqosctl explain NAMESPACE/NAME | UID: asks the node's ioqos-plugin, over
 * its root-only unix socket, everything it knows about one pod (GET
 * /v1/explain, plugin/daemon/observe/explain.h) and prints it as one screen
 * (explain_render.h), or as the JSON it got (--json).
 * ioqosctl explain --nvmet [NQN[/NSID]]: the same for the node's NVMe-oF
 * target namespaces (GET /v1/nvmet, plugin/daemon/core/nvmetns.h;
 * explain_nvmet.h). */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "explain_nvmet.h"
#include "explain_render.h"
#include "cgroup/podcg.h"
#include "util.h"

#define DEFAULT_SOCKET "/var/lib/ioqos/plugin.sock"
/* the plugin bounds its answer far below this */
#define BODY_MAX (4u << 20)
#define TIMEOUT_S 30L

static const char *const CMD = "explain";

static void help(FILE *f) {
  fprintf(f,
          "usage: ioqosctl explain [--socket PATH] [--json] NAMESPACE/NAME | UID\n"
          "       ioqosctl explain [--socket PATH] [--json] --nvmet [NQN[/NSID]]\n\n"
          "Explains one pod from the node's ioqos-plugin: its units per container and resource,\n"
          "their disk and why that disk, the pod cgroup and how it was found, each file written\n"
          "with the value read back and when, the grant monitor's verdict, the recent Events,\n"
          "and for a pod without a grant the node policy that holds it.\n"
          "With --nvmet: the node's NVMe-oF target namespaces (all, one subsystem, or one\n"
          "namespace): the config entry that selects each, its units of which disk, its cgroup,\n"
          "whether the kernel charges it there (cgroup_id) and what the plugin did or waits for.\n\n"
          "  --socket PATH  the plugin's explain socket (default %s,\n"
          "                 env IOQOS_EXPLAIN_SOCKET; the plugin's --explain-socket)\n"
          "  --json         print the plugin's JSON document as is (for scripts)\n"
          "  --nvmet        explain NVMe-oF target namespaces instead of a pod\n\n"
          "Run it as root on the pod's node, or in the plugin pod of that node:\n"
          "  kubectl -n ioqos-system get pods -o wide   # the plugin pod on the pod's node\n"
          "  kubectl -n ioqos-system exec PLUGIN_POD -- ioqosctl explain default/db\n"
          "Exit status: 0 ok, 1 failed (plugin not reachable, unknown pod), 2 usage.\n",
          DEFAULT_SOCKET);
}

struct buf {
  char *p;
  size_t n;
  bool too_big;
};

static size_t sink(char *data, size_t sz, size_t nm, void *ud) {
  struct buf *b = ud;
  size_t len = sz * nm;
  if (b->n + len > BODY_MAX) {
    b->too_big = true;
    return 0;
  }
  char *np = realloc(b->p, b->n + len + 1);
  if (!np)
    return 0;
  memcpy(np + b->n, data, len);
  b->p = np;
  b->n += len;
  b->p[b->n] = '\0';
  return len;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "ioqosctl %s: ", CMD);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

#define HINT_ROOT                                                                                  \
  "the socket is root only: run it as root on the node, or in the plugin pod of that node "       \
  "(kubectl -n ioqos-system exec PLUGIN_POD -- ioqosctl explain NS/NAME)"

/* Why the socket cannot be used, before curl says it less clearly. */
static int check_socket(const char *path) {
  struct stat st;
  if (stat(path, &st) < 0) {
    if (errno == EACCES)
      return fail("permission denied reaching %s: %s", path, HINT_ROOT);
    if (errno == ENOENT)
      return fail("no explain socket at %s: is ioqos-plugin running on this node (kubectl -n "
                  "ioqos-system get pods -o wide)? Give --socket if the plugin runs with another "
                  "--explain-socket.",
                  path);
    return fail("%s: %s", path, strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode))
    return fail("%s is not a socket (see --socket)", path);
  if (access(path, R_OK | W_OK) < 0 && errno == EACCES)
    return fail("permission denied on %s (root only): %s", path, HINT_ROOT);
  return 0;
}

/* GET url on the plugin's socket: *status and the parsed JSON *doc (NULL
 * when the body is not JSON), the raw body in *raw (caller frees). Returns
 * 1 (said why) when the request itself failed. */
static int fetch(const char *sock, const char *url, long *status, json_object **doc, char **raw) {
  *doc = NULL;
  *raw = NULL;
  CURL *h = curl_easy_init();
  if (!h)
    return fail("out of memory setting up the request (curl handle)");
  struct buf b = {0};
  char cerr[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, sock);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, TIMEOUT_S);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  CURLcode cc = curl_easy_perform(h);
  int rc = 0;
  if (cc != CURLE_OK) {
    long oserr = 0;
    curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
    if (b.too_big)
      rc = fail("the plugin's answer is larger than %u bytes", BODY_MAX);
    else if (cc == CURLE_COULDNT_CONNECT && (oserr == EACCES || oserr == EPERM))
      rc = fail("permission denied on %s: %s", sock, HINT_ROOT);
    else if (cc == CURLE_COULDNT_CONNECT)
      rc = fail("nobody answers on %s (ioqos-plugin not running, or restarting): %s", sock,
                cerr[0] ? cerr : curl_easy_strerror(cc));
    else
      rc = fail("asking the plugin on %s failed: %s", sock, cerr[0] ? cerr : curl_easy_strerror(cc));
    free(b.p);
  } else {
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    *raw = b.p;
    *doc = b.p ? json_tokener_parse(b.p) : NULL;
  }
  curl_easy_cleanup(h);
  return rc;
}

/* The answer: printed (raw with --json, else by `render`), or its error. */
static int answer(long status, json_object *doc, const char *raw, bool json,
                  int (*render)(FILE *, json_object *, char *, size_t)) {
  if (status != 200) {
    json_object *m = NULL;
    const char *msg = doc && json_object_object_get_ex(doc, "error", &m) ? json_object_get_string(m)
                                                                          : (raw ? raw : "");
    if (json && raw)
      printf("%s\n", raw);
    if (status == 404)
      return fail("%s (HTTP 404)", msg);
    return fail("the plugin answered: %s (HTTP %ld)", msg, status);
  }
  if (!doc)
    return fail("the plugin's answer is not JSON");
  if (json) {
    printf("%s\n", raw);
    return 0;
  }
  char err[256];
  if (render(stdout, doc, err, sizeof err) < 0)
    return fail("%s", err);
  return 0;
}

int cmd_explain(int argc, char **argv) {
  static const struct option opts[] = {{"socket", required_argument, NULL, 's'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"nvmet", no_argument, NULL, 'n'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *sock = getenv("IOQOS_EXPLAIN_SOCKET");
  if (!sock || !*sock)
    sock = DEFAULT_SOCKET;
  bool json = false, nvmet = false;
  int c;
  optind = 1;
  while ((c = ctl_getopt(argc, argv, "h", opts, CMD)) != -1) {
    switch (c) {
    case 's': sock = optarg; break;
    case 'j': json = true; break;
    case 'n': nvmet = true; break;
    case 'h': help(stdout); return 0;
    default: return 2;
    }
  }
  const char *what = optind < argc ? argv[optind] : NULL;
  if (nvmet) {
    if (optind + 1 < argc)
      return ctl_usage_error(CMD, "--nvmet takes at most one NQN or NQN/NSID");
    if (what && (!*what || strlen(what) > 240))
      return ctl_usage_error(CMD, "'%.40s': want an NQN or NQN/NSID", what);
  } else {
    if (optind != argc - 1)
      return ctl_usage_error(CMD, optind >= argc ? "which pod? give NAMESPACE/NAME or its UID"
                                                 : "one pod at a time (NAMESPACE/NAME or UID)");
    bool by_uid = strchr(what, '/') == NULL;
    if (by_uid && ioq_pod_uid_check(what, NULL) < 0)
      return ctl_usage_error(CMD, "'%s': want NAMESPACE/NAME (e.g. default/db) or a pod UID", what);
    if (!by_uid && (what[0] == '/' || strchr(what, '/')[1] == '\0'))
      return ctl_usage_error(CMD, "'%s': want NAMESPACE/NAME (e.g. default/db)", what);
    if (strlen(what) > 400)
      return ctl_usage_error(CMD, "'%.40s...': too long for a pod name", what);
  }
  if (check_socket(sock))
    return 1;

  if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK)
    return fail("libcurl initialisation failed");
  int rc = 1;
  char *esc = what ? curl_easy_escape(NULL, what, 0) : NULL; /* no handle needed since curl 7.82 */
  if (what && !esc) {
    fail("out of memory escaping '%.40s'", what);
    goto out;
  }
  char url[1024];
  if (nvmet)
    snprintf(url, sizeof url, "http://localhost/v1/nvmet%s%s", esc ? "?namespace=" : "",
             esc ? esc : "");
  else
    snprintf(url, sizeof url, "http://localhost/v1/explain?%s=%s",
             strchr(what, '/') ? "pod" : "uid", esc);
  long status = 0;
  json_object *doc = NULL;
  char *raw = NULL;
  if (fetch(sock, url, &status, &doc, &raw) == 0)
    rc = answer(status, doc, raw, json, nvmet ? explain_nvmet_render : explain_render);
  json_object_put(doc);
  free(raw);
out:
  curl_free(esc);
  curl_global_cleanup();
  return rc;
}

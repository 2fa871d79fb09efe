// SPDX-License-Identifier: Apache-2.0
/* ioqosctl explain NAMESPACE/NAME | UID: asks the node's ioqos-plugin, over
 * its root-only unix socket, everything it knows about one pod (GET
 * /v1/explain, plugin/daemon/explain.h) and prints it as one screen
 * (explain_render.h), or as the JSON it got (--json). */
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
#include "explain_render.h"
#include "ioqos/podcg.h"
#include "util.h"

#define DEFAULT_SOCKET "/var/lib/ioqos/plugin.sock"
/* the plugin bounds its answer far below this */
#define BODY_MAX (4u << 20)
#define TIMEOUT_S 30L

static const char *const CMD = "explain";

static void help(FILE *f) {
  fprintf(f,
          "usage: ioqosctl explain [--socket PATH] [--json] NAMESPACE/NAME | UID\n\n"
          "Explains one pod from the node's ioqos-plugin: its units per container and resource,\n"
          "their disk and why that disk, the pod cgroup and how it was found, each file written\n"
          "with the value read back and when, the grant monitor's verdict, the recent Events,\n"
          "and for a pod without a grant the node policy that holds it.\n\n"
          "  --socket PATH  the plugin's explain socket (default %s,\n"
          "                 env IOQOS_EXPLAIN_SOCKET; the plugin's --explain-socket)\n"
          "  --json         print the plugin's JSON document as is (for scripts)\n\n"
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

int cmd_explain(int argc, char **argv) {
  static const struct option opts[] = {{"socket", required_argument, NULL, 's'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *sock = getenv("IOQOS_EXPLAIN_SOCKET");
  if (!sock || !*sock)
    sock = DEFAULT_SOCKET;
  bool json = false;
  int c;
  optind = 1;
  while ((c = ctl_getopt(argc, argv, "h", opts, CMD)) != -1) {
    switch (c) {
    case 's': sock = optarg; break;
    case 'j': json = true; break;
    case 'h': help(stdout); return 0;
    default: return 2;
    }
  }
  if (optind != argc - 1)
    return ctl_usage_error(CMD, optind >= argc ? "which pod? give NAMESPACE/NAME or its UID"
                                               : "one pod at a time (NAMESPACE/NAME or UID)");
  const char *pod = argv[optind];
  bool by_uid = strchr(pod, '/') == NULL;
  if (by_uid && ioq_pod_uid_check(pod, NULL) < 0)
    return ctl_usage_error(CMD, "'%s': want NAMESPACE/NAME (e.g. default/db) or a pod UID", pod);
  if (!by_uid && (pod[0] == '/' || strchr(pod, '/')[1] == '\0'))
    return ctl_usage_error(CMD, "'%s': want NAMESPACE/NAME (e.g. default/db)", pod);
  if (strlen(pod) > 400)
    return ctl_usage_error(CMD, "'%.40s...': too long for a pod name", pod);
  if (check_socket(sock))
    return 1;

  if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK)
    return fail("libcurl initialisation failed");
  CURL *h = curl_easy_init();
  int rc = 1;
  struct buf b = {0};
  char *esc = h ? curl_easy_escape(h, pod, 0) : NULL;
  if (!h || !esc) {
    fail("out of memory setting up the request (curl handle, escaped pod name)");
    goto out;
  }
  char url[1024];
  snprintf(url, sizeof url, "http://localhost/v1/explain?%s=%s", by_uid ? "uid" : "pod", esc);
  char cerr[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, sock);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, TIMEOUT_S);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  CURLcode cc = curl_easy_perform(h);
  if (cc != CURLE_OK) {
    long oserr = 0;
    curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
    if (b.too_big)
      fail("the plugin's answer is larger than %u bytes", BODY_MAX);
    else if (cc == CURLE_COULDNT_CONNECT && (oserr == EACCES || oserr == EPERM))
      fail("permission denied on %s: %s", sock, HINT_ROOT);
    else if (cc == CURLE_COULDNT_CONNECT)
      fail("nobody answers on %s (ioqos-plugin not running, or restarting): %s", sock,
           cerr[0] ? cerr : curl_easy_strerror(cc));
    else
      fail("asking the plugin on %s failed: %s", sock, cerr[0] ? cerr : curl_easy_strerror(cc));
    goto out;
  }
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  json_object *doc = b.p ? json_tokener_parse(b.p) : NULL;
  if (status != 200) {
    json_object *m = NULL;
    const char *msg = doc && json_object_object_get_ex(doc, "error", &m) ? json_object_get_string(m)
                                                                          : (b.p ? b.p : "");
    if (json && b.p)
      printf("%s\n", b.p);
    if (status == 404)
      fail("%s (HTTP 404)", msg);
    else
      fail("the plugin answered: %s (HTTP %ld)", msg, status);
    json_object_put(doc);
    goto out;
  }
  if (!doc) {
    fail("the plugin's answer is not JSON");
    goto out;
  }
  if (json) {
    printf("%s\n", b.p);
    rc = 0;
  } else {
    char err[256];
    if (explain_render(stdout, doc, err, sizeof err) < 0)
      fail("%s", err);
    else
      rc = 0;
  }
  json_object_put(doc);
out:
  curl_free(esc);
  if (h)
    curl_easy_cleanup(h);
  curl_global_cleanup();
  free(b.p);
  return rc;
}

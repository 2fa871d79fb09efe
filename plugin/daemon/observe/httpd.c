// SPDX-License-Identifier: Apache-2.0
/* /metrics, /healthz and /readyz over libmicrohttpd.
 *
 * Slow clients. MHD's connection timeout is an idle timeout: every byte
 * resets it, so a client trickling one byte a second keeps its slot for ever.
 * Each listener therefore drives MHD in external-polling mode from a thread of
 * its own, and after every MHD_run_wait() round shuts down the socket of each
 * connection whose request has run past its absolute deadline (accept or the
 * previous response + --http-request-timeout). Doing it on MHD's own thread
 * means the socket cannot be closed and its number reused under us; MHD sees
 * the shut-down socket on its next round and closes the connection.
 * Connection and per-IP limits (MHD options) bound how many slots exist.
 *
 * Probes. With --health-address, /healthz and /readyz get a second listener
 * with its own thread and its own connection slots, so slow /metrics clients
 * and scrapes cannot take the probe's place.
 *
 * Explain. With --explain-socket, GET /v1/explain (explain.h) is served on a
 * unix socket of its own, mode 0600: only root on the node (or in the plugin
 * pod) reaches it. The same limits apply (connection limit, absolute
 * deadline, no bodies); the socket is bound here and handed to MHD. A path
 * that is not a socket, is owned by another user or is served by a live
 * process is refused; a stale socket (nobody answers) is replaced; the
 * socket is removed on stop if it is still the one bound. */
#include <pthread.h>
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "explain.h"
#include "support/grpcs.h"
#include "httpd.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "support/metrics.h"
#include "base/listenaddr.h"
#include "base/monoclock.h"
#include "plugin.h"


/* Longest MHD_run_wait(): how late a deadline or a stop request is noticed. */
#define TICK_MS 200

struct conn { /* one open connection, on its listener's list */
  struct conn *prev, *next;
  struct MHD_Connection *c;
  double deadline; /* CLOCK_MONOTONIC seconds */
  bool cut;
};

struct listener {
  struct httpd *h;
  const char *name; /* "metrics", "health" or "explain", for logs */
  bool probes_only;
  bool explain; /* serves /v1/explain only */
  struct MHD_Daemon *d;
  pthread_t thread;
  bool running;
  struct conn live; /* list sentinel; touched only by the MHD thread */
};

struct httpd {
  struct plugin *p;
  unsigned timeout_s;
  atomic_bool stop;
  struct listener metrics, health, explain;
  /* the explain socket as bound (removed on stop if still ours) */
  char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  dev_t sock_dev;
  ino_t sock_ino;
  bool sock_bound;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *ctype,
                             char *body) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", ctype);
  enum MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

static char *text(const char *fmt, const char *arg) {
  char *s = NULL;
  if (asprintf(&s, fmt, arg) < 0)
    return NULL;
  return s;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state) {
  (void)version;
  (void)upload;
  struct listener *l = cls;
  struct plugin *p = l->h->p;
  if (!*state) { /* first call for this request: headers only */
    *state = (void *)1;
    return MHD_YES;
  }
  if (*upload_size) { /* no bodies wanted */
    *upload_size = 0;
    return MHD_YES;
  }
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
    char *b = text("%s not allowed\n", method);
    return b ? reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", b) : MHD_NO;
  }
  char why[512];
  if (l->explain) {
    if (strcmp(url, "/v1/nvmet") == 0) {
      const char *f = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "namespace");
      char *b = NULL;
      unsigned status = explain_nvmet(p, f, &b);
      ioq_debug("explain request nvmet=%s status=%u", f ? f : "", status);
      return b ? reply(c, status, "application/json", b) : MHD_NO;
    }
    if (strcmp(url, "/v1/explain") != 0) {
      char *b = strdup("{\"error\":\"not found: this socket serves GET "
                       "/v1/explain?pod=NAMESPACE/NAME or ?uid=UID, and GET "
                       "/v1/nvmet[?namespace=NQN[/NSID]]\"}\n");
      return b ? reply(c, MHD_HTTP_NOT_FOUND, "application/json", b) : MHD_NO;
    }
    const char *pod = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pod");
    const char *uid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "uid");
    char *b = NULL;
    unsigned status = explain_handle(p, pod, uid, &b);
    ioq_debug("explain request pod=%s uid=%s status=%u", pod ? pod : "", uid ? uid : "", status);
    return b ? reply(c, status, "application/json", b) : MHD_NO;
  }
  if (strcmp(url, "/metrics") == 0 && !l->probes_only) {
    char *b = metrics_render(p);
    return b ? reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", b) : MHD_NO;
  }
  if (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0) {
    bool ok = plugin_live(p, why, sizeof why);
    char *b = text(ok ? "ok\n" : "not healthy: %s\n", why);
    return b ? reply(c, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", b) : MHD_NO;
  }
  if (strcmp(url, "/readyz") == 0) {
    bool ok = plugin_ready(p, why, sizeof why);
    char *b = text(ok ? "ok\n" : "not ready: %s\n", why);
    return b ? reply(c, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", b) : MHD_NO;
  }
  char *b = text(l->probes_only ? "not found: %s (this listener serves /healthz, /readyz; "
                                  "/metrics is on --metrics-address)\n"
                                : "not found: %s (try /metrics, /healthz, /readyz)\n",
                 url);
  return b ? reply(c, MHD_HTTP_NOT_FOUND, "text/plain", b) : MHD_NO;
}

/* Ends a connection from the MHD thread: MHD reads EOF (or fails to write)
 * on its next round and closes it. */
static void cut(struct listener *l, struct MHD_Connection *c, const char *why) {
  const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!i) {
    ioq_error("http %s: cannot close a connection (%s): no socket", l->name, why);
    return;
  }
  if (shutdown(i->connect_fd, SHUT_RDWR) < 0 && errno != ENOTCONN)
    ioq_error("http %s: shutdown of a connection (%s): %s", l->name, why, strerror(errno));
  else
    ioq_debug("http %s: connection closed reason=\"%s\"", l->name, why);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  struct listener *l = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    struct conn *k = calloc(1, sizeof *k);
    if (!k) { /* a connection without a deadline is not served */
      cut(l, c, "out of memory tracking its deadline");
      return;
    }
    k->c = c;
    k->deadline = ioq_mono_s() + l->h->timeout_s;
    k->next = l->live.next;
    k->prev = &l->live;
    k->next->prev = k;
    l->live.next = k;
    *socket_context = k;
    return;
  }
  struct conn *k = *socket_context; /* MHD_CONNECTION_NOTIFY_CLOSED */
  if (!k)
    return;
  k->prev->next = k->next;
  k->next->prev = k->prev;
  free(k);
  *socket_context = NULL;
}

/* A response went out: the next request on this connection gets a full
 * timeout of its own. */
static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode toe) {
  (void)state;
  (void)toe;
  struct listener *l = cls;
  const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  struct conn *k = i ? i->socket_context : NULL;
  if (k)
    k->deadline = ioq_mono_s() + l->h->timeout_s;
}

static void sweep(struct listener *l) {
  double now = ioq_mono_s();
  for (struct conn *k = l->live.next; k != &l->live; k = k->next) {
    if (k->cut || now < k->deadline)
      continue;
    k->cut = true;
    metrics_inc(l->h->p->metrics, C_HTTP_DEADLINE_CUTS);
    cut(l, k->c, "request deadline exceeded");
  }
}

static void *serve(void *arg) {
  struct listener *l = arg;
  while (!atomic_load(&l->h->stop)) {
    if (MHD_run_wait(l->d, TICK_MS) != MHD_YES) {
      /* not expected with a running daemon; logged, and the tick bounds the rate */
      ioq_error("http %s: libmicrohttpd event loop failed", l->name);
      struct timespec ts = {0, TICK_MS * 1000000L};
      nanosleep(&ts, NULL);
    }
    sweep(l);
  }
  return NULL;
}

static int listener_start(struct httpd *h, struct listener *l, const char *name,
                          const char *address, bool probes_only, const struct plugin_opts *o,
                          ioq_err *e) {
  struct ioq_listen_addr la;
  if (ioq_parse_listen(address, 0, &la, e) < 0)
    return -1;
  l->h = h;
  l->name = name;
  l->probes_only = probes_only;
  l->live.next = l->live.prev = &l->live;
  /* external polling (no MHD thread): our thread runs MHD and the deadline sweep */
  unsigned flags = MHD_USE_EPOLL;
  if (la.ss.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  l->d = MHD_start_daemon(
      flags, (uint16_t)la.port, NULL, NULL, handle, l, MHD_OPTION_SOCK_ADDR,
      (struct sockaddr *)&la.ss,
      MHD_OPTION_CONNECTION_TIMEOUT, o->http_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
      o->http_max_conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->http_max_conns_per_ip,
      MHD_OPTION_NOTIFY_CONNECTION, on_connection, l, MHD_OPTION_NOTIFY_COMPLETED, on_completed, l,
      MHD_OPTION_END);
  if (!l->d)
    return ioq_fail(e, EADDRINUSE, "cannot listen on %s for %s (port in use?)", address,
                    probes_only ? "/healthz, /readyz" : "/metrics");
  int rc = pthread_create(&l->thread, NULL, serve, l);
  if (rc != 0) {
    MHD_stop_daemon(l->d);
    l->d = NULL;
    return ioq_fail(e, rc, "start %s http thread: %s", name, strerror(rc));
  }
  l->running = true;
  ioq_info("%s listening address=%s paths=%s max_connections=%u per_ip=%u request_timeout_s=%u",
           name, address, probes_only ? "/healthz,/readyz" : "/metrics,/healthz,/readyz",
           o->http_max_conns, o->http_max_conns_per_ip, o->http_timeout_s);
  return 0;
}

/* Binds the explain socket (see the top of the file). Returns the
 * listening fd or -1. */
static int explain_socket_bind(struct httpd *h, const char *path, ioq_err *e) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    return ioq_fail(e, ENAMETOOLONG, "explain socket %s: path too long for a unix socket", path);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  struct stat st;
  if (lstat(path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return ioq_fail(e, EEXIST, "explain socket %s: exists and is not a socket; not replaced",
                      path);
    if (st.st_uid != geteuid())
      return ioq_fail(e, EPERM,
                      "explain socket %s: owned by uid %u, not this process (uid %u); not replaced",
                      path, (unsigned)st.st_uid, (unsigned)geteuid());
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0)
      return ioq_fail(e, errno, "explain socket: socket(): %s", strerror(errno));
    int live = connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(probe);
    if (live)
      return ioq_fail(e, EADDRINUSE,
                      "explain socket %s: another process serves it (a second ioqos-plugin?)",
                      path);
    if (unlink(path) < 0 && errno != ENOENT)
      return ioq_fail(e, errno, "explain socket %s: removing the stale socket: %s", path,
                      strerror(errno));
    ioq_info("explain socket: stale socket replaced path=%s", path);
  } else if (errno != ENOENT) {
    return ioq_fail(e, errno, "explain socket %s: %s", path, strerror(errno));
  }
  char dir[PATH_MAX];
  ioq_copy_trunc(dir, sizeof dir, path); /* fits: checked against sun_path above */
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = '\0';
    if (ioq_mkdir_p(dir, e) < 0) {
      ioq_err_prefix(e, "explain socket %s", path);
      return -1;
    }
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return ioq_fail(e, errno, "explain socket: socket(): %s", strerror(errno));
  /* umask 077 (main) makes it 0700 at bind already; 0600 is what is meant */
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    int err = errno;
    close(fd);
    return ioq_fail(e, err, "explain socket %s: bind: %s", path, strerror(err));
  }
  if (chmod(path, 0600) < 0 || lstat(path, &st) < 0 || listen(fd, 16) < 0) {
    int err = errno;
    close(fd);
    unlink(path);
    return ioq_fail(e, err, "explain socket %s: %s", path, strerror(err));
  }
  /* fits: checked against sun_path above */
  ioq_copy_trunc(h->sock_path, sizeof h->sock_path, path);
  h->sock_dev = st.st_dev;
  h->sock_ino = st.st_ino;
  h->sock_bound = true;
  return fd;
}

static int explain_start(struct httpd *h, const char *path, const struct plugin_opts *o,
                         ioq_err *e) {
  struct listener *l = &h->explain;
  l->h = h;
  l->name = "explain";
  l->explain = true;
  l->live.next = l->live.prev = &l->live;
  int fd = explain_socket_bind(h, path, e);
  if (fd < 0)
    return -1;
  /* no per-IP limit: every client of a unix socket has the same (no) address */
  l->d = MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, handle, l, MHD_OPTION_LISTEN_SOCKET, fd,
                          MHD_OPTION_CONNECTION_TIMEOUT, o->http_timeout_s,
                          MHD_OPTION_CONNECTION_LIMIT, o->http_max_conns,
                          MHD_OPTION_NOTIFY_CONNECTION, on_connection, l,
                          MHD_OPTION_NOTIFY_COMPLETED, on_completed, l, MHD_OPTION_END);
  if (!l->d) {
    close(fd);
    return ioq_fail(e, EIO, "explain socket %s: libmicrohttpd would not serve it", path);
  }
  int rc = pthread_create(&l->thread, NULL, serve, l);
  if (rc != 0) {
    MHD_stop_daemon(l->d);
    l->d = NULL;
    return ioq_fail(e, rc, "start explain http thread: %s", strerror(rc));
  }
  l->running = true;
  ioq_info("explain listening socket=%s mode=0600 paths=/v1/explain,/v1/nvmet max_connections=%u "
           "request_timeout_s=%u",
           path, o->http_max_conns, o->http_timeout_s);
  return 0;
}

/* Removes the explain socket if the file is still the one bound. */
static void explain_socket_remove(struct httpd *h) {
  struct stat st;
  if (!h->sock_bound || lstat(h->sock_path, &st) < 0)
    return;
  if (st.st_dev == h->sock_dev && st.st_ino == h->sock_ino && unlink(h->sock_path) < 0)
    ioq_warn("explain socket not removed path=%s error=\"%s\"", h->sock_path, strerror(errno));
}

static void listener_stop(struct listener *l) {
  if (l->running)
    pthread_join(l->thread, NULL);
  if (l->d)
    MHD_stop_daemon(l->d); /* runs on_connection(CLOSED) for what is still open */
}

struct httpd *httpd_start(struct plugin *p, const char *address, ioq_err *e) {
  const struct plugin_opts *o = &p->opts;
  struct httpd *h = calloc(1, sizeof *h);
  if (!h)
    return ioq_fail(e, ENOMEM, "out of memory (http listener state)"), NULL;
  h->p = p;
  h->timeout_s = o->http_timeout_s;
  atomic_init(&h->stop, false);
  if ((*address && listener_start(h, &h->metrics, "metrics", address, false, o, e) < 0) ||
      (*o->health_address &&
       listener_start(h, &h->health, "health", o->health_address, true, o, e) < 0) ||
      (o->explain_socket && explain_start(h, o->explain_socket, o, e) < 0)) {
    httpd_stop(h);
    return NULL;
  }
  return h;
}

void httpd_stop(struct httpd *h) {
  if (!h)
    return;
  atomic_store(&h->stop, true);
  listener_stop(&h->metrics);
  listener_stop(&h->health);
  listener_stop(&h->explain); /* MHD closes the listening socket */
  explain_socket_remove(h);
  free(h);
}

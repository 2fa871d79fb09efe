/* /metrics, /healthz and /readyz over libmicrohttpd (its own thread). */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ioqos/log.h"
#include "plugin.h"

struct httpd {
  struct MHD_Daemon *d;
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
  struct plugin *p = cls;
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
  if (strcmp(url, "/metrics") == 0) {
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
  char *b = text("not found: %s (try /metrics, /healthz, /readyz)\n", url);
  return b ? reply(c, MHD_HTTP_NOT_FOUND, "text/plain", b) : MHD_NO;
}

struct httpd *httpd_start(struct plugin *p, const char *address, ioq_err *e) {
  char host[256];
  unsigned port;
  if (plugin_parse_listen_address(address, host, sizeof host, &port, e) < 0)
    return NULL;
  struct httpd *h = calloc(1, sizeof *h);
  if (!h)
    return ioq_fail(e, ENOMEM, "out of memory"), NULL;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  if (host[0]) {
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_PASSIVE, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc != 0) {
      free(h);
      return ioq_fail(e, IOQ_EINVAL_INPUT, "metrics address %s: host must be a numeric IP (%s)",
                      address, gai_strerror(rc)), NULL;
    }
    memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (ss.ss_family == AF_INET6) {
      ((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
      flags |= MHD_USE_IPv6;
    } else {
      ((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
    }
    h->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, p, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                            MHD_OPTION_END);
  } else {
    h->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, p,
                            MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
  }
  if (!h->d) {
    free(h);
    return ioq_fail(e, EADDRINUSE, "cannot listen on %s for /metrics (port in use?)", address),
           NULL;
  }
  ioq_info("metrics listening address=%s paths=/metrics,/healthz,/readyz", address);
  return h;
}

void httpd_stop(struct httpd *h) {
  if (!h)
    return;
  MHD_stop_daemon(h->d);
  free(h);
}

// SPDX-License-Identifier: Apache-2.0
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "body.h"
#include "base/listenaddr.h"
#include "base/log.h"
#include "base/monoclock.h"

/* per-connection buffer: headers plus the chunk of body handed to us at once */
#define CONN_MEMORY (256u * 1024u)

/* One libmicrohttpd daemon and the TLS credentials (PEM, owned) it was
 * started with. */
struct gen {
  struct MHD_Daemon *d;
  char *cert, *key, *client_ca;
  int quiesced_fd; /* its listening socket once a reload quiesced it, else -1 */
};

struct ext_httpd {
  struct MHD_Daemon *d; /* == cur.d */
  struct gen cur;
  /* the daemon a TLS reload retired: it accepts nothing and is stopped once
   * its connections are done or at retire_deadline_ns (ext_httpd_reap) */
  struct gen old;
  uint64_t retire_deadline_ns;
  unsigned flags;        /* MHD flags of every daemon */
  struct ext_httpd_opts o; /* scalar options; PEM pointers are not kept */
  bool client_auth;      /* --tls-client-ca: every request is checked (check_peer) */
  char *client_subject;  /* NULL = any certificate from client_ca */
  const struct ext_route *routes;
  size_t n_routes;
  struct ext_metrics *m;
  struct ext_refusals *refusals;
  size_t max_body;
  struct ext_budget *budget;
  uint64_t deadline_ns;
  unsigned idle_timeout_s;
  atomic_uint_fast64_t in_flight;
  MHD_socket quiesced;
};

/* One request's state across the access handler's calls. */
struct req {
  const struct ext_route *route; /* the matched route */
  enum ext_verb verb;
  uint64_t start_ns;
  unsigned status; /* status of the queued reply, 0 = none yet */
  bool reading;    /* body initialised */
  struct ext_body body;
  json_object *value; /* the parsed body, freed once the reply is sent */
};

/* libmicrohttpd's messages. Those a client causes, once per connection,
 * are refusals (counted, rate-limited); it has no other hook for a
 * connection it refuses at accept. */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  struct ext_httpd *h = cls;
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
    msg[--n] = '\0';
  enum ext_reject why;
  unsigned status;
  switch (ext_refusal_mhd_kind(msg, &why, &status)) {
  case EXT_MHD_REFUSAL:
    ext_refused(h->refusals, why, EXT_VERB_OTHER, status, msg);
    break;
  case EXT_MHD_DETAIL:
    ioq_debug("http server: %s", msg);
    break;
  case EXT_MHD_OTHER:
    ioq_warn("http server: %s", msg);
    break;
  }
}

static void free_owner(void *owner) { json_object_put(owner); }

static enum MHD_Result send_reply(struct MHD_Connection *c, struct req *q, struct ext_reply *r) {
  struct MHD_Response *resp;
  if (r->owner)
    resp = MHD_create_response_from_buffer_with_free_callback_cls(r->len, (void *)r->body,
                                                                  free_owner, r->owner);
  else
    resp = MHD_create_response_from_buffer_with_free_callback(r->len, (void *)r->body, free);
  if (!resp) {
    ext_reply_free(r);
    return MHD_NO;
  }
  r->owner = NULL; /* the response owns the memory now */
  r->body = NULL;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          r->content_type ? r->content_type : "application/json");
  if (r->status == MHD_HTTP_METHOD_NOT_ALLOWED && q->route)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, q->route->post ? "POST" : "GET, HEAD");
  enum MHD_Result rc = MHD_queue_response(c, r->status, resp);
  MHD_destroy_response(resp);
  q->status = r->status;
  return rc;
}

/* Refuses the request: counted, logged (refusal.h) and answered. */
static enum MHD_Result send_refusal(struct ext_httpd *h, struct MHD_Connection *c, struct req *q,
                                    enum ext_reject why, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static enum MHD_Result send_refusal(struct ext_httpd *h, struct MHD_Connection *c, struct req *q,
                                    enum ext_reject why, unsigned status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ext_refused(h->refusals, why, q->verb, status, msg);
  struct ext_reply r = {0};
  ext_reply_error(&r, status, "%s", msg);
  return send_reply(c, q, &r);
}

/* Last path segment ("/x/filter" -> "filter"). */
static const char *last_segment(const char *url) {
  const char *s = strrchr(url, '/');
  return s ? s + 1 : url;
}

/* Finds the route for url; *wrong_method when only the method differs. */
static const struct ext_route *find_route(struct ext_httpd *h, const char *url, bool post,
                                          bool *wrong_method) {
  *wrong_method = false;
  const struct ext_route *other = NULL;
  for (size_t i = 0; i < h->n_routes; i++) {
    const struct ext_route *rt = &h->routes[i];
    bool match = rt->post ? strcmp(last_segment(url), rt->name) == 0 : strcmp(url, rt->name) == 0;
    if (!match)
      continue;
    if (rt->post == post)
      return rt;
    other = rt;
  }
  *wrong_method = other != NULL;
  return other;
}

/* libmicrohttpd given a trust list (MHD_OPTION_HTTPS_MEM_TRUST) only asks
 * the client for a certificate (GNUTLS_CERT_REQUEST) and never verifies it:
 * a client without one, or with one from another CA, completes the
 * handshake. So every request on a --tls-client-ca server is checked here:
 * a certificate was sent, it chains to the CA, is in its validity period,
 * may be used for TLS client auth, and (optionally) names the subject.
 * Returns 0, or -1 with why. */
static int check_peer(struct ext_httpd *h, struct MHD_Connection *c, char *why, size_t whysz) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (!ci || !ci->tls_session) {
    snprintf(why, whysz, "no TLS session");
    return -1;
  }
  gnutls_session_t s = (gnutls_session_t)ci->tls_session;
  unsigned n = 0;
  const gnutls_datum_t *certs = gnutls_certificate_get_peers(s, &n);
  if (!certs || n == 0) {
    snprintf(why, whysz, "no client certificate presented");
    return -1;
  }
  gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
                                   .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT};
  unsigned status = 0;
  int rc = gnutls_certificate_verify_peers(s, &purpose, 1, &status);
  if (rc < 0) {
    snprintf(why, whysz, "client certificate not verified: %s", gnutls_strerror(rc));
    return -1;
  }
  if (status) {
    gnutls_datum_t txt = {0};
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &txt, 0) == 0) {
      snprintf(why, whysz, "client certificate refused: %s", (const char *)txt.data);
      for (size_t n = strlen(why); n && why[n - 1] == ' ';)
        why[--n] = '\0';
      gnutls_free(txt.data);
    } else {
      snprintf(why, whysz, "client certificate refused (status 0x%x)", status);
    }
    return -1;
  }
  if (!h->client_subject)
    return 0;
  gnutls_x509_crt_t crt;
  if (gnutls_x509_crt_init(&crt) < 0) {
    snprintf(why, whysz, "out of memory reading the client certificate");
    return -1;
  }
  rc = gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER);
  char got[512] = "";
  if (rc >= 0 && strchr(h->client_subject, '=')) {
    gnutls_datum_t dn = {0};
    rc = gnutls_x509_crt_get_dn3(crt, &dn, 0);
    if (rc >= 0) {
      snprintf(got, sizeof got, "%s", (const char *)dn.data);
      gnutls_free(dn.data);
    }
  } else if (rc >= 0) {
    size_t sz = sizeof got;
    rc = gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, got, &sz);
    if (rc == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) {
      got[0] = '\0';
      rc = 0;
    }
  }
  gnutls_x509_crt_deinit(crt);
  if (rc < 0) {
    snprintf(why, whysz, "client certificate subject unreadable: %s", gnutls_strerror(rc));
    return -1;
  }
  if (strcmp(got, h->client_subject) != 0) {
    snprintf(why, whysz, "client certificate %s '%.200s' is not '%.200s' (--tls-client-subject)",
             strchr(h->client_subject, '=') ? "subject" : "CN", got, h->client_subject);
    return -1;
  }
  return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **con_cls) {
  (void)version;
  struct ext_httpd *h = cls;
  struct req *q = *con_cls;
  if (!q) {
    q = calloc(1, sizeof *q);
    if (!q)
      return MHD_NO;
    q->start_ns = ioq_mono_ns();
    q->verb = EXT_VERB_OTHER;
    *con_cls = q;
    atomic_fetch_add(&h->in_flight, 1);

    if (h->client_auth) {
      char why[600];
      if (check_peer(h, c, why, sizeof why) < 0)
        return send_refusal(h, c, q, EXT_REJECT_CLIENT_CERT, MHD_HTTP_FORBIDDEN, "%s", why);
    }
    bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    bool wrong_method;
    const struct ext_route *rt = find_route(h, url, post, &wrong_method);
    if (!rt)
      return send_refusal(h, c, q, EXT_REJECT_NOT_FOUND, MHD_HTTP_NOT_FOUND, "no such path: %.200s",
                          url);
    q->route = rt;
    q->verb = rt->verb;
    if (wrong_method || (!post && !get))
      return send_refusal(h, c, q, EXT_REJECT_METHOD, MHD_HTTP_METHOD_NOT_ALLOWED, "%s needs %s",
                          url, rt->post ? "POST" : "GET");
    if (!rt->post) {
      struct ext_reply r = {0};
      rt->fn(rt->ud, NULL, &r);
      return send_reply(c, q, &r);
    }
    /* refuse an announced oversized body before reading any of it */
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    size_t announced = EXT_BODY_LENGTH_UNKNOWN;
    if (cl) {
      char *end;
      errno = 0;
      unsigned long long n = strtoull(cl, &end, 10);
      bool valid = !errno && *cl && !*end;
      if (valid && n > h->max_body)
        return send_refusal(h, c, q, EXT_REJECT_TOO_LARGE, MHD_HTTP_CONTENT_TOO_LARGE,
                            "request body of %llu bytes is larger than %zu bytes "
                            "(--max-request-bytes)",
                            n, h->max_body);
      /* only a body that announced its length may draw on the part of the
       * parse budget kept for small requests (body.h) */
      if (valid)
        announced = (size_t)n;
    }
    if (ext_body_init(&q->body, h->max_body, announced, h->budget) < 0)
      return send_refusal(h, c, q, EXT_REJECT_OUT_OF_MEMORY, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "out of memory setting up the request body");
    q->reading = true;
    if (h->deadline_ns / 1000000000u < h->idle_timeout_s)
      MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
                                (unsigned)(h->deadline_ns / 1000000000u));
    return MHD_YES;
  }
  if (q->status)
    return MHD_YES; /* reply already queued; MHD discards the rest */
  /* Absolute deadline: a body trickled in a byte at a time resets the idle
   * timeout forever and would hold its connection and parse memory; past
   * the deadline the connection is closed (which frees both). */
  uint64_t now = ioq_mono_ns();
  if (now - q->start_ns >= h->deadline_ns) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "request not received within its deadline of %llu s (--request-deadline), "
             "%zu bytes received: connection closed",
             (unsigned long long)(h->deadline_ns / 1000000000u), q->body.received);
    ext_refused(h->refusals, EXT_REJECT_DEADLINE, q->verb, 0, msg);
    return MHD_NO;
  }
  /* and a client that goes silent is dropped at the deadline too, not
   * only after a full idle timeout counted from its last byte */
  uint64_t left_s = (h->deadline_ns - (now - q->start_ns) + 999999999u) / 1000000000u;
  if (left_s < h->idle_timeout_s)
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)left_s);
  if (*size) {
    ext_body_feed(&q->body, data, *size);
    *size = 0;
    /* a client streaming far past the limit (no Content-Length) is cut off */
    if (q->body.err_status && q->body.received / 4 > h->max_body)
      return MHD_NO;
    return MHD_YES;
  }
  ext_body_finish(&q->body);
  if (q->body.err_status)
    return send_refusal(h, c, q, q->body.err_kind, q->body.err_status, "%s", q->body.err);
  q->value = ext_body_take(&q->body);
  struct ext_reply r = {0};
  q->route->fn(q->route->ud, q->value, &r);
  if (r.status >= 400)
    ioq_debug("request refused verb=%s status=%u reply=%.300s", ext_verb_name(q->verb), r.status,
              r.body ? r.body : "");
  return send_reply(c, q, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
  struct ext_httpd *h = cls;
  struct req *q = *con_cls;
  if (!q)
    return;
  if (q->status)
    ext_metrics_request(h->m, q->verb, q->status, (double)(ioq_mono_ns() - q->start_ns) / 1e9);
  /* the deadline shortened this connection's timeout; a kept-alive
   * connection waits for its next request with the idle timeout again */
  if (q->reading && why == MHD_REQUEST_TERMINATED_COMPLETED_OK)
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, h->idle_timeout_s);
  if (why != MHD_REQUEST_TERMINATED_COMPLETED_OK && why != MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN)
    ioq_debug("http request ended early verb=%s reason=%d status=%u", ext_verb_name(q->verb),
              (int)why, q->status);
  /* a large tree takes a while to free: after the reply, not before it;
   * its memory budget is returned only once it is gone */
  json_object_put(q->value);
  if (q->reading)
    ext_body_free(&q->body);
  free(q);
  *con_cls = NULL;
  atomic_fetch_sub(&h->in_flight, 1);
}

static char *dup_or_null(const char *s, bool *oom) {
  if (!s)
    return NULL;
  char *d = strdup(s);
  if (!d)
    *oom = true;
  return d;
}

/* Stops the daemon and frees its credentials. */
static void gen_stop(struct gen *g) {
  if (g->d)
    MHD_stop_daemon(g->d);
  if (g->quiesced_fd >= 0)
    close(g->quiesced_fd);
  free(g->cert);
  free(g->key);
  free(g->client_ca);
  *g = (struct gen){.quiesced_fd = -1};
}

/* Loads the credentials as libmicrohttpd's TLS setup does, so a bad set is
 * refused before a daemon is started with it. */
static int tls_check(const struct gen *g, ioq_err *e) {
  gnutls_certificate_credentials_t cred;
  if (gnutls_certificate_allocate_credentials(&cred) < 0)
    return ioq_fail(e, ENOMEM, "out of memory building TLS credentials");
  gnutls_datum_t cert = {(unsigned char *)g->cert, (unsigned)strlen(g->cert)};
  gnutls_datum_t key = {(unsigned char *)g->key, (unsigned)strlen(g->key)};
  int rc = gnutls_certificate_set_x509_key_mem(cred, &cert, &key, GNUTLS_X509_FMT_PEM);
  if (rc < 0) {
    gnutls_certificate_free_credentials(cred);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "certificate and key: %s", gnutls_strerror(rc));
  }
  if (g->client_ca) {
    gnutls_datum_t ca = {(unsigned char *)g->client_ca, (unsigned)strlen(g->client_ca)};
    rc = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
    if (rc <= 0) {
      gnutls_certificate_free_credentials(cred);
      return ioq_fail(e, IOQ_EINVAL_INPUT, "client CA: %s",
                      rc < 0 ? gnutls_strerror(rc) : "no certificate in the file");
    }
  }
  gnutls_certificate_free_credentials(cred);
  return 0;
}

/* Starts a daemon with g's credentials, on addr (first start) or on the
 * listening socket of the running daemon (listen_fd, TLS reload). */
static struct MHD_Daemon *start_daemon(struct ext_httpd *h, const struct sockaddr_storage *addr,
                                       MHD_socket listen_fd, const struct gen *g) {
  const struct ext_httpd_opts *o = &h->o;
  struct MHD_OptionItem opts[16];
  int n = 0;
  if (listen_fd != MHD_INVALID_SOCKET) {
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, (intptr_t)listen_fd, NULL};
  } else {
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)addr};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL};
  }
  opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)o->max_connections, NULL};
  opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)o->idle_timeout_s, NULL};
  /* one client (a tenant pod that can reach the port) cannot take every
   * connection: kube-scheduler needs only a few at once */
  if (o->max_per_ip)
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)o->max_per_ip, NULL};
  opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)CONN_MEMORY, NULL};
  if (o->threads > 1)
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)o->threads, NULL};
  if (g->cert) {
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, g->cert};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, g->key};
  }
  if (g->client_ca) /* makes the server ask for a client certificate; check_peer verifies it */
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, g->client_ca};
  opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

  return MHD_start_daemon(h->flags, 0, NULL, NULL, on_request, h,
                          MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
                          MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                          MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
}

struct ext_httpd *ext_httpd_start(const struct ext_httpd_opts *o, const struct ext_route *routes,
                                  size_t n_routes, struct ext_metrics *m, ioq_err *e) {
  struct ioq_listen_addr la; /* port 0: the kernel picks one (tests) */
  if (ioq_parse_listen(o->listen, IOQ_LISTEN_PORT0, &la, e) < 0)
    return NULL;
  if ((o->tls_cert != NULL) != (o->tls_key != NULL)) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "TLS needs both a certificate and a key");
    return NULL;
  }
  if ((o->tls_client_ca || o->tls_client_subject) && !o->tls_cert) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "client certificates need TLS (a certificate and a key)");
    return NULL;
  }
  if (o->tls_client_subject && !o->tls_client_ca) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "a client subject needs a client CA");
    return NULL;
  }
  if (!o->refusals) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "the HTTP server needs the refusal counters and log");
    return NULL;
  }
  if (o->tls_cert && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    ioq_fail(e, IOQ_EUNSUPPORTED, "this libmicrohttpd was built without TLS support");
    return NULL;
  }
  struct ext_httpd *h = calloc(1, sizeof *h);
  if (!h) {
    ioq_fail(e, ENOMEM, "out of memory building the HTTP server");
    return NULL;
  }
  h->routes = routes;
  h->n_routes = n_routes;
  h->m = m;
  h->refusals = o->refusals;
  h->max_body = o->max_body;
  h->budget = o->budget;
  h->deadline_ns = (uint64_t)(o->deadline_s ? o->deadline_s : 10) * 1000000000u;
  h->idle_timeout_s = o->idle_timeout_s;
  h->quiesced = MHD_INVALID_SOCKET;
  h->cur.quiesced_fd = h->old.quiesced_fd = -1;
  h->o = *o;
  h->o.listen = NULL;
  h->o.tls_cert = h->o.tls_key = NULL;
  h->o.tls_client_ca = h->o.tls_client_subject = NULL;
  h->client_auth = o->tls_client_ca != NULL;
  bool oom = false;
  h->cur.cert = dup_or_null(o->tls_cert, &oom);
  h->cur.key = dup_or_null(o->tls_key, &oom);
  h->cur.client_ca = dup_or_null(o->tls_client_ca, &oom);
  h->client_subject = dup_or_null(o->tls_client_subject, &oom);
  if (oom) {
    ioq_fail(e, ENOMEM, "out of memory keeping the TLS certificate, key and client CA");
    goto fail;
  }
  /* libmicrohttpd takes a CA file without a certificate in it (and then
   * refuses every client): check the set as a reload does */
  if (h->cur.cert && tls_check(&h->cur, e) < 0) {
    ioq_err_prefix(e, "TLS");
    goto fail;
  }

  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
  /* poll, not epoll: with epoll, MHD_quiesce_daemon (graceful SIGTERM) races
   * a worker that takes the listen socket out of its epoll set at the
   * connection limit, and libmicrohttpd 0.9.75 then aborts ("Failed to remove
   * listen FD from epoll set"). --max-connections bounds the set poll scans. */
  flags |= MHD_USE_POLL;
  if (la.ss.ss_family == AF_INET6) {
    /* [::] serves IPv4 too, as --help says; a specific address is v6 only */
    const struct in6_addr *a6 = &((const struct sockaddr_in6 *)&la.ss)->sin6_addr;
    flags |= IN6_IS_ADDR_UNSPECIFIED(a6) ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
  }
  if (o->tls_cert)
    flags |= MHD_USE_TLS;
  h->flags = flags;

  h->cur.d = start_daemon(h, &la.ss, MHD_INVALID_SOCKET, &h->cur);
  h->d = h->cur.d;
  if (!h->d) {
    ioq_fail(e, EADDRNOTAVAIL,
             "cannot serve on %s (address in use, not local, or bad TLS certificate/key/CA; see "
             "the http server messages above)",
             o->listen);
    goto fail;
  }
  return h;
fail:
  gen_stop(&h->cur);
  free(h->client_subject);
  free(h);
  return NULL;
}

/* libmicrohttpd cannot change the credentials of a running daemon. A new
 * daemon takes over the listening socket (a duplicate of its descriptor; the
 * kernel queues connections on it throughout, so none is refused); the old
 * one is quiesced, which stops it accepting without closing the socket, and
 * serves its open connections until ext_httpd_reap stops it. */
int ext_httpd_reload_tls(struct ext_httpd *h, const char *cert, const char *key,
                         const char *client_ca, ioq_err *e) {
  if (!(h->flags & MHD_USE_TLS))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "this server does not serve TLS");
  if (!cert || !key || h->client_auth != (client_ca != NULL))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "a TLS reload needs a certificate, a key%s",
                    h->client_auth ? " and the client CA" : "");
  if (h->quiesced != MHD_INVALID_SOCKET)
    return ioq_fail(e, IOQ_ECONFLICT, "the server is shutting down");
  bool oom = false;
  struct gen g = {.cert = dup_or_null(cert, &oom), .key = dup_or_null(key, &oom),
                  .client_ca = dup_or_null(client_ca, &oom), .quiesced_fd = -1};
  if (oom) {
    gen_stop(&g);
    return ioq_fail(e, ENOMEM, "out of memory keeping the new TLS certificate, key and client CA");
  }
  if (tls_check(&g, e) < 0) {
    gen_stop(&g);
    return -1;
  }
  const union MHD_DaemonInfo *li = MHD_get_daemon_info(h->cur.d, MHD_DAEMON_INFO_LISTEN_FD);
  int fd = li ? fcntl(li->listen_fd, F_DUPFD_CLOEXEC, 0) : -1;
  if (fd < 0) {
    gen_stop(&g);
    return ioq_fail(e, errno ? errno : EBADF, "duplicate the listening socket: %s",
                    strerror(errno ? errno : EBADF));
  }
  /* on failure libmicrohttpd closes the socket it was given: only the duplicate */
  g.d = start_daemon(h, NULL, fd, &g);
  if (!g.d) {
    gen_stop(&g);
    return ioq_fail(e, EIO, "start a server with the new TLS files failed (see the http server "
                            "messages above); still serving the old ones");
  }
  /* a reload while the previous old daemon still drains: stop that one now */
  gen_stop(&h->old);
  h->old = h->cur;
  h->old.quiesced_fd = MHD_quiesce_daemon(h->old.d);
  h->cur = g;
  h->d = g.d;
  h->retire_deadline_ns = ioq_mono_ns() + ((uint64_t)h->o.idle_timeout_s + 5) * 1000000000u;
  return 0;
}

unsigned ext_httpd_reap(struct ext_httpd *h) {
  if (!h->old.d)
    return 0;
  const union MHD_DaemonInfo *ci = MHD_get_daemon_info(h->old.d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
  unsigned left = ci ? ci->num_connections : 0;
  if (left && ioq_mono_ns() < h->retire_deadline_ns)
    return left;
  gen_stop(&h->old);
  return 0;
}

unsigned ext_httpd_port(struct ext_httpd *h) {
  const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  return i ? i->port : 0;
}

uint64_t ext_httpd_in_flight(struct ext_httpd *h) { return atomic_load(&h->in_flight); }

uint64_t ext_httpd_parse_memory(struct ext_httpd *h) {
  return h->budget ? atomic_load(&h->budget->used) : 0;
}

void ext_httpd_quiesce(struct ext_httpd *h) {
  if (h->quiesced == MHD_INVALID_SOCKET)
    h->quiesced = MHD_quiesce_daemon(h->d);
}

uint64_t ext_httpd_drain(struct ext_httpd *h, unsigned grace_ms) {
  uint64_t deadline = ioq_mono_ns() + (uint64_t)grace_ms * 1000000u;
  while (atomic_load(&h->in_flight) > 0 && ioq_mono_ns() < deadline) {
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return atomic_load(&h->in_flight);
}

void ext_httpd_stop(struct ext_httpd *h) {
  if (!h)
    return;
  gen_stop(&h->old);
  gen_stop(&h->cur);
  if (h->quiesced != MHD_INVALID_SOCKET)
    close(h->quiesced);
  free(h->client_subject);
  free(h);
}

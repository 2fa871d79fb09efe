// SPDX-License-Identifier: Apache-2.0
/* The HTTP server (libmicrohttpd): a bounded pool of worker threads, a
 * request-body limit, a per-connection idle timeout against slow clients,
 * optional TLS, and JSON bodies parsed incrementally as they arrive (so a
 * large full-node request is never held twice, as text and as a tree). */
#ifndef IOQOS_EXT_HTTPD_H
#define IOQOS_EXT_HTTPD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "body.h"
#include "metrics.h"
#include "refusal.h"
#include "reply.h"

/* body is the parsed JSON request (POST routes) or NULL (GET routes). */
typedef void (*ext_route_fn)(void *ud, json_object *body, struct ext_reply *r);

struct ext_route {
  const char *name;   /* POST routes: the last path segment ("filter"), so any
                         urlPrefix path works; GET routes: the whole path */
  bool post;          /* POST with a JSON body, else GET */
  enum ext_verb verb; /* for metrics */
  ext_route_fn fn;
  void *ud;
};

struct ext_httpd_opts {
  const char *listen;   /* "ADDR:PORT", ":PORT", "[V6]:PORT"; port 0 = any */
  const char *tls_cert; /* PEM text (not a path) or NULL */
  const char *tls_key;
  const char *tls_client_ca;      /* PEM: require client certificates from this CA, or NULL */
  const char *tls_client_subject; /* with '=': the whole subject DN (RFC 4514, e.g.
                                     "CN=x,O=y"), else its CN; NULL = any */
  size_t max_body;      /* bytes */
  struct ext_budget *budget; /* json-c tree memory of all requests in progress
                                (shared with bind's pod GET) */
  struct ext_refusals *refusals; /* counts and logs refused requests (not owned) */
  unsigned threads;     /* worker threads */
  unsigned max_connections;
  unsigned idle_timeout_s; /* a connection silent this long is closed */
  unsigned max_per_ip;     /* connections from one client address */
  unsigned deadline_s;     /* a request body must be in within this time */
};

struct ext_httpd;

struct ext_httpd *ext_httpd_start(const struct ext_httpd_opts *o, const struct ext_route *routes,
                                  size_t n_routes, struct ext_metrics *m, ioq_err *e);
/* Serves these PEM credentials from now on (same socket, no connection
 * refused); the previous daemon finishes its connections until
 * ext_httpd_reap stops it. Fails, still serving the old credentials, when
 * they do not load. Not concurrent with itself, quiesce or stop. */
int ext_httpd_reload_tls(struct ext_httpd *h, const char *cert, const char *key,
                         const char *client_ca, ioq_err *e);
/* Stops the daemon a reload retired once its connections are closed or the
 * idle timeout (+5 s) passed; returns its connections still open. */
unsigned ext_httpd_reap(struct ext_httpd *h);
/* The bound port (useful with port 0). */
unsigned ext_httpd_port(struct ext_httpd *h);
uint64_t ext_httpd_in_flight(struct ext_httpd *h);
/* Estimated bytes the bodies being parsed hold of --max-request-memory. */
uint64_t ext_httpd_parse_memory(struct ext_httpd *h);
/* Stops accepting connections; requests in progress continue. */
void ext_httpd_quiesce(struct ext_httpd *h);
/* Waits until no request is in progress or grace_ms passed; returns the
 * number of requests still in progress. */
uint64_t ext_httpd_drain(struct ext_httpd *h, unsigned grace_ms);
void ext_httpd_stop(struct ext_httpd *h);

#endif

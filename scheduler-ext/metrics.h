// SPDX-License-Identifier: Apache-2.0
/* Prometheus counters and histograms of the extender, rendered as the text
 * exposition format on GET /metrics. Thread-safe. */
#ifndef IOQOS_EXT_METRICS_H
#define IOQOS_EXT_METRICS_H

#include <stddef.h>
#include <stdint.h>

enum ext_verb {
  EXT_VERB_FILTER = 0,
  EXT_VERB_PRIORITIZE,
  EXT_VERB_BIND,
  EXT_VERB_HEALTHZ,
  EXT_VERB_READYZ,
  EXT_VERB_METRICS,
  EXT_VERB_OTHER, /* unknown paths and methods */
  EXT_VERB_COUNT
};
const char *ext_verb_name(enum ext_verb v);

/* how a pod was treated by filter/prioritize/bind */
enum ext_pod_kind { EXT_POD_IOQOS = 0, EXT_POD_PASSTHROUGH, EXT_POD_INVALID, EXT_POD_KIND_COUNT };

/* filter outcome per node */
enum ext_node_result { EXT_NODE_PASSED = 0, EXT_NODE_FAILED, EXT_NODE_UNRESOLVABLE, EXT_NODE_RESULT_COUNT };

/* why a request (or connection) was refused before any decision */
enum ext_reject {
  EXT_REJECT_TOO_LARGE = 0,
  EXT_REJECT_INVALID_JSON,
  EXT_REJECT_BAD_REQUEST,
  EXT_REJECT_BUSY, /* parse memory held by other requests */
  EXT_REJECT_DEADLINE, /* body not received within --request-deadline */
  EXT_REJECT_NOT_FOUND, /* 404: no such path */
  EXT_REJECT_METHOD, /* 405: the path takes another method */
  EXT_REJECT_CLIENT_CERT, /* 403: --tls-client-ca and the client certificate is missing or wrong */
  EXT_REJECT_OUT_OF_MEMORY, /* 500: no memory to set up the request */
  /* refused by libmicrohttpd (seen through its log messages, refusal.c) */
  EXT_REJECT_CONNECTION_LIMIT, /* a new connection over --max-connections(-per-ip) */
  EXT_REJECT_TLS_HANDSHAKE, /* a failed TLS handshake (plain HTTP, no common cipher...) */
  EXT_REJECT_BAD_HTTP, /* malformed HTTP: bad Content-Length, headers too large */
  EXT_REJECT_CLIENT_CLOSED, /* the client closed the connection mid-request or mid-reply */
  EXT_REJECT_COUNT
};
const char *ext_reject_name(enum ext_reject r);

/* Values read at render time from the parts that own them. */
struct ext_gauges {
  uint64_t in_flight;
  uint64_t parse_memory; /* estimated bytes reserved by request bodies being parsed */
  uint64_t parse_budget; /* their bound (--max-request-memory or derived) */
  uint64_t assumed;
  int node_cache_enabled;
  uint64_t node_cache_nodes;
  int node_cache_synced;
  uint64_t node_cache_lists;
};

struct ext_metrics;

struct ext_metrics *ext_metrics_new(void);
void ext_metrics_free(struct ext_metrics *m);

void ext_metrics_request(struct ext_metrics *m, enum ext_verb v, unsigned status, double seconds);
void ext_metrics_pod(struct ext_metrics *m, enum ext_verb v, enum ext_pod_kind k);
void ext_metrics_nodes(struct ext_metrics *m, enum ext_node_result r, uint64_t n);
void ext_metrics_bind(struct ext_metrics *m, int ok);
void ext_metrics_reject(struct ext_metrics *m, enum ext_reject r);

/* malloc'd text exposition; NULL on OOM */
char *ext_metrics_render(struct ext_metrics *m, const struct ext_gauges *g);

#endif

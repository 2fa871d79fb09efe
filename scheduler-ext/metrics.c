// SPDX-License-Identifier: Apache-2.0
#include "metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buildinfo.h"
#include "base/histogram.h"
#include "base/procstat.h"

#define N_BUCKETS 15
static const double g_buckets[N_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                            0.005,  0.01,    0.025,  0.05,  0.1,
                                            0.25,   0.5,     1,      2.5,   5};
#define MAX_CODES 12 /* distinct HTTP status codes kept per verb */

static const char *const g_verbs[EXT_VERB_COUNT] = {"filter",  "prioritize", "bind",  "healthz",
                                                    "readyz",  "metrics",    "other"};
static const char *const g_pod_kinds[EXT_POD_KIND_COUNT] = {"ioqos", "passthrough", "invalid"};
static const char *const g_node_results[EXT_NODE_RESULT_COUNT] = {"passed", "failed",
                                                                  "unresolvable"};
static const char *const g_rejects[EXT_REJECT_COUNT] = {
    [EXT_REJECT_TOO_LARGE] = "too_large",
    [EXT_REJECT_INVALID_JSON] = "invalid_json",
    [EXT_REJECT_BAD_REQUEST] = "bad_request",
    [EXT_REJECT_BUSY] = "busy",
    [EXT_REJECT_DEADLINE] = "deadline",
    [EXT_REJECT_NOT_FOUND] = "not_found",
    [EXT_REJECT_METHOD] = "method_not_allowed",
    [EXT_REJECT_CLIENT_CERT] = "client_cert",
    [EXT_REJECT_OUT_OF_MEMORY] = "out_of_memory",
    [EXT_REJECT_CONNECTION_LIMIT] = "connection_limit",
    [EXT_REJECT_TLS_HANDSHAKE] = "tls_handshake",
    [EXT_REJECT_BAD_HTTP] = "bad_http",
    [EXT_REJECT_CLIENT_CLOSED] = "client_closed",
};

struct code_count {
  unsigned code;
  uint64_t n;
};

struct ext_metrics {
  pthread_mutex_t lock;
  struct code_count codes[EXT_VERB_COUNT][MAX_CODES];
  struct ioq_histogram dur[EXT_VERB_COUNT]; /* seconds, bounds g_buckets */
  uint64_t pods[EXT_VERB_COUNT][EXT_POD_KIND_COUNT];
  uint64_t nodes[EXT_NODE_RESULT_COUNT];
  uint64_t binds[2];
  uint64_t rejects[EXT_REJECT_COUNT];
};

const char *ext_verb_name(enum ext_verb v) {
  return (unsigned)v < EXT_VERB_COUNT ? g_verbs[v] : "other";
}

const char *ext_reject_name(enum ext_reject r) {
  return (unsigned)r < EXT_REJECT_COUNT ? g_rejects[r] : "other";
}

struct ext_metrics *ext_metrics_new(void) {
  struct ext_metrics *m = calloc(1, sizeof *m);
  if (m)
    pthread_mutex_init(&m->lock, NULL);
  return m;
}

void ext_metrics_free(struct ext_metrics *m) {
  if (!m)
    return;
  pthread_mutex_destroy(&m->lock);
  free(m);
}

void ext_metrics_request(struct ext_metrics *m, enum ext_verb v, unsigned status, double seconds) {
  if ((unsigned)v >= EXT_VERB_COUNT)
    v = EXT_VERB_OTHER;
  pthread_mutex_lock(&m->lock);
  for (int i = 0; i < MAX_CODES; i++) {
    struct code_count *c = &m->codes[v][i];
    if (c->n == 0 || c->code == status) {
      c->code = status;
      c->n++;
      break;
    }
  }
  ioq_histogram_observe(&m->dur[v], g_buckets, N_BUCKETS, seconds);
  pthread_mutex_unlock(&m->lock);
}

void ext_metrics_pod(struct ext_metrics *m, enum ext_verb v, enum ext_pod_kind k) {
  pthread_mutex_lock(&m->lock);
  m->pods[v % EXT_VERB_COUNT][k % EXT_POD_KIND_COUNT]++;
  pthread_mutex_unlock(&m->lock);
}

void ext_metrics_nodes(struct ext_metrics *m, enum ext_node_result r, uint64_t n) {
  pthread_mutex_lock(&m->lock);
  m->nodes[r % EXT_NODE_RESULT_COUNT] += n;
  pthread_mutex_unlock(&m->lock);
}

void ext_metrics_bind(struct ext_metrics *m, int ok) {
  pthread_mutex_lock(&m->lock);
  m->binds[ok ? 0 : 1]++;
  pthread_mutex_unlock(&m->lock);
}

void ext_metrics_reject(struct ext_metrics *m, enum ext_reject r) {
  pthread_mutex_lock(&m->lock);
  m->rejects[r % EXT_REJECT_COUNT]++;
  pthread_mutex_unlock(&m->lock);
}

char *ext_metrics_render(struct ext_metrics *m, const struct ext_gauges *g) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;

  pthread_mutex_lock(&m->lock);
  fprintf(f, "# HELP ioqos_extender_requests_total HTTP requests served, by verb and status code.\n"
          "# TYPE ioqos_extender_requests_total counter\n");
  for (int v = 0; v < EXT_VERB_COUNT; v++)
    for (int i = 0; i < MAX_CODES && m->codes[v][i].n; i++)
      fprintf(f, "ioqos_extender_requests_total{verb=\"%s\",code=\"%u\"} %llu\n", g_verbs[v],
          m->codes[v][i].code, (unsigned long long)m->codes[v][i].n);

  fprintf(f, "# HELP ioqos_extender_request_duration_seconds Time from request headers to reply.\n"
          "# TYPE ioqos_extender_request_duration_seconds histogram\n");
  for (int v = 0; v < EXT_VERB_COUNT; v++) {
    if (!m->dur[v].count && v > EXT_VERB_BIND)
      continue;
    char labels[64];
    snprintf(labels, sizeof labels, "verb=\"%s\"", g_verbs[v]);
    ioq_histogram_write(f, "ioqos_extender_request_duration_seconds", labels, g_buckets, N_BUCKETS,
                        &m->dur[v]);
  }

  fprintf(f, "# HELP ioqos_extender_pods_total Pods seen by each verb: requesting ioqos resources, "
          "passed through untouched, or invalid.\n"
          "# TYPE ioqos_extender_pods_total counter\n");
  for (int v = EXT_VERB_FILTER; v <= EXT_VERB_BIND; v++)
    for (int k = 0; k < EXT_POD_KIND_COUNT; k++)
      fprintf(f, "ioqos_extender_pods_total{verb=\"%s\",kind=\"%s\"} %llu\n", g_verbs[v],
          g_pod_kinds[k], (unsigned long long)m->pods[v][k]);

  fprintf(f, "# HELP ioqos_extender_filter_nodes_total Filter decisions per node.\n"
          "# TYPE ioqos_extender_filter_nodes_total counter\n");
  for (int r = 0; r < EXT_NODE_RESULT_COUNT; r++)
    fprintf(f, "ioqos_extender_filter_nodes_total{result=\"%s\"} %llu\n", g_node_results[r],
        (unsigned long long)m->nodes[r]);

  fprintf(f, "# HELP ioqos_extender_binds_total Bind verb outcomes.\n"
          "# TYPE ioqos_extender_binds_total counter\n"
          "ioqos_extender_binds_total{result=\"bound\"} %llu\n"
          "ioqos_extender_binds_total{result=\"error\"} %llu\n",
      (unsigned long long)m->binds[0], (unsigned long long)m->binds[1]);

  fprintf(f, "# HELP ioqos_extender_rejected_requests_total Requests and connections refused "
          "before any decision (or closed by the client before it), by reason; every one, also "
          "those whose log line was rate-limited.\n"
          "# TYPE ioqos_extender_rejected_requests_total counter\n");
  for (int r = 0; r < EXT_REJECT_COUNT; r++)
    fprintf(f, "ioqos_extender_rejected_requests_total{reason=\"%s\"} %llu\n", g_rejects[r],
        (unsigned long long)m->rejects[r]);
  pthread_mutex_unlock(&m->lock);

  fprintf(f, "# HELP ioqos_extender_in_flight_requests Requests being served now.\n"
          "# TYPE ioqos_extender_in_flight_requests gauge\n"
          "ioqos_extender_in_flight_requests %llu\n",
      (unsigned long long)g->in_flight);
  fprintf(f, "# HELP ioqos_extender_request_parse_memory_bytes Estimated memory reserved now by "
          "request bodies being parsed (bounded by --max-request-memory).\n"
          "# TYPE ioqos_extender_request_parse_memory_bytes gauge\n"
          "ioqos_extender_request_parse_memory_bytes %llu\n",
      (unsigned long long)g->parse_memory);
  fprintf(f, "# HELP ioqos_extender_request_parse_memory_limit_bytes The bound on it: "
          "--max-request-memory, by default a quarter of the container's memory limit.\n"
          "# TYPE ioqos_extender_request_parse_memory_limit_bytes gauge\n"
          "ioqos_extender_request_parse_memory_limit_bytes %llu\n",
      (unsigned long long)g->parse_budget);
  fprintf(f, "# HELP ioqos_extender_assumed_placements Placements bound by this extender and not yet "
          "reported by the node's plugin (nor ended).\n"
          "# TYPE ioqos_extender_assumed_placements gauge\n"
          "ioqos_extender_assumed_placements %llu\n",
      (unsigned long long)g->assumed);
  fprintf(f, "# HELP ioqos_extender_node_cache_enabled 1 if the node cache (list+watch) runs.\n"
          "# TYPE ioqos_extender_node_cache_enabled gauge\n"
          "ioqos_extender_node_cache_enabled %d\n"
          "# HELP ioqos_extender_node_cache_nodes Nodes in the node cache.\n"
          "# TYPE ioqos_extender_node_cache_nodes gauge\n"
          "ioqos_extender_node_cache_nodes %llu\n"
          "# HELP ioqos_extender_node_cache_synced 1 once the first node list arrived.\n"
          "# TYPE ioqos_extender_node_cache_synced gauge\n"
          "ioqos_extender_node_cache_synced %d\n"
          "# HELP ioqos_extender_node_cache_lists_total Full node lists done (start, 410 Gone, "
          "errors).\n"
          "# TYPE ioqos_extender_node_cache_lists_total counter\n"
          "ioqos_extender_node_cache_lists_total %llu\n",
      g->node_cache_enabled, (unsigned long long)g->node_cache_nodes, g->node_cache_synced,
      (unsigned long long)g->node_cache_lists);
  ioq_build_info_write(f, "ioqos-scheduler-ext");
  ioq_procstat_expose(f);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

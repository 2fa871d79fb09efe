#include "metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static const char *const g_rejects[EXT_REJECT_COUNT] = {"too_large", "invalid_json",
                                                        "bad_request", "busy"};

struct code_count {
  unsigned code;
  uint64_t n;
};

struct ext_metrics {
  pthread_mutex_t lock;
  struct code_count codes[EXT_VERB_COUNT][MAX_CODES];
  uint64_t bucket[EXT_VERB_COUNT][N_BUCKETS]; /* non-cumulative */
  uint64_t count[EXT_VERB_COUNT];
  double sum[EXT_VERB_COUNT];
  uint64_t pods[EXT_VERB_COUNT][EXT_POD_KIND_COUNT];
  uint64_t nodes[EXT_NODE_RESULT_COUNT];
  uint64_t binds[2];
  uint64_t rejects[EXT_REJECT_COUNT];
};

const char *ext_verb_name(enum ext_verb v) {
  return (unsigned)v < EXT_VERB_COUNT ? g_verbs[v] : "other";
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
  int b = 0;
  while (b < N_BUCKETS - 1 && seconds > g_buckets[b])
    b++;
  if (seconds <= g_buckets[b])
    m->bucket[v][b]++;
  m->count[v]++;
  m->sum[v] += seconds;
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

/* growable text buffer for rendering */
struct text {
  char *s;
  size_t len, cap;
  int oom;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...) {
  if (t->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      t->oom = 1;
      return;
    }
    if ((size_t)n < t->cap - t->len) {
      t->len += (size_t)n;
      return;
    }
    size_t cap = t->cap * 2 + (size_t)n;
    char *ns = realloc(t->s, cap);
    if (!ns) {
      t->oom = 1;
      return;
    }
    t->s = ns;
    t->cap = cap;
  }
}

char *ext_metrics_render(struct ext_metrics *m, const struct ext_gauges *g) {
  struct text t = {.cap = 8192};
  t.s = malloc(t.cap);
  if (!t.s)
    return NULL;
  t.s[0] = '\0';

  pthread_mutex_lock(&m->lock);
  put(&t, "# HELP ioqos_extender_requests_total HTTP requests served, by verb and status code.\n"
          "# TYPE ioqos_extender_requests_total counter\n");
  for (int v = 0; v < EXT_VERB_COUNT; v++)
    for (int i = 0; i < MAX_CODES && m->codes[v][i].n; i++)
      put(&t, "ioqos_extender_requests_total{verb=\"%s\",code=\"%u\"} %llu\n", g_verbs[v],
          m->codes[v][i].code, (unsigned long long)m->codes[v][i].n);

  put(&t, "# HELP ioqos_extender_request_duration_seconds Time from request headers to reply.\n"
          "# TYPE ioqos_extender_request_duration_seconds histogram\n");
  for (int v = 0; v < EXT_VERB_COUNT; v++) {
    if (!m->count[v] && v > EXT_VERB_BIND)
      continue;
    uint64_t cum = 0;
    for (int b = 0; b < N_BUCKETS; b++) {
      cum += m->bucket[v][b];
      put(&t, "ioqos_extender_request_duration_seconds_bucket{verb=\"%s\",le=\"%g\"} %llu\n",
          g_verbs[v], g_buckets[b], (unsigned long long)cum);
    }
    put(&t, "ioqos_extender_request_duration_seconds_bucket{verb=\"%s\",le=\"+Inf\"} %llu\n",
        g_verbs[v], (unsigned long long)m->count[v]);
    put(&t, "ioqos_extender_request_duration_seconds_sum{verb=\"%s\"} %.9f\n", g_verbs[v],
        m->sum[v]);
    put(&t, "ioqos_extender_request_duration_seconds_count{verb=\"%s\"} %llu\n", g_verbs[v],
        (unsigned long long)m->count[v]);
  }

  put(&t, "# HELP ioqos_extender_pods_total Pods seen by each verb: requesting ioqos resources, "
          "passed through untouched, or invalid.\n"
          "# TYPE ioqos_extender_pods_total counter\n");
  for (int v = EXT_VERB_FILTER; v <= EXT_VERB_BIND; v++)
    for (int k = 0; k < EXT_POD_KIND_COUNT; k++)
      put(&t, "ioqos_extender_pods_total{verb=\"%s\",kind=\"%s\"} %llu\n", g_verbs[v],
          g_pod_kinds[k], (unsigned long long)m->pods[v][k]);

  put(&t, "# HELP ioqos_extender_filter_nodes_total Filter decisions per node.\n"
          "# TYPE ioqos_extender_filter_nodes_total counter\n");
  for (int r = 0; r < EXT_NODE_RESULT_COUNT; r++)
    put(&t, "ioqos_extender_filter_nodes_total{result=\"%s\"} %llu\n", g_node_results[r],
        (unsigned long long)m->nodes[r]);

  put(&t, "# HELP ioqos_extender_binds_total Bind verb outcomes.\n"
          "# TYPE ioqos_extender_binds_total counter\n"
          "ioqos_extender_binds_total{result=\"bound\"} %llu\n"
          "ioqos_extender_binds_total{result=\"error\"} %llu\n",
      (unsigned long long)m->binds[0], (unsigned long long)m->binds[1]);

  put(&t, "# HELP ioqos_extender_rejected_requests_total Request bodies refused before any "
          "decision.\n"
          "# TYPE ioqos_extender_rejected_requests_total counter\n");
  for (int r = 0; r < EXT_REJECT_COUNT; r++)
    put(&t, "ioqos_extender_rejected_requests_total{reason=\"%s\"} %llu\n", g_rejects[r],
        (unsigned long long)m->rejects[r]);
  pthread_mutex_unlock(&m->lock);

  put(&t, "# HELP ioqos_extender_in_flight_requests Requests being served now.\n"
          "# TYPE ioqos_extender_in_flight_requests gauge\n"
          "ioqos_extender_in_flight_requests %llu\n",
      (unsigned long long)g->in_flight);
  put(&t, "# HELP ioqos_extender_assumed_placements Placements bound by this extender and not yet "
          "reported by the node's plugin (and not expired).\n"
          "# TYPE ioqos_extender_assumed_placements gauge\n"
          "ioqos_extender_assumed_placements %llu\n",
      (unsigned long long)g->assumed);
  put(&t, "# HELP ioqos_extender_node_cache_enabled 1 if the node cache (list+watch) runs.\n"
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
  if (t.oom) {
    free(t.s);
    return NULL;
  }
  return t.s;
}

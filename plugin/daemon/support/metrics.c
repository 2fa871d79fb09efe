// SPDX-License-Identifier: Apache-2.0
#include "metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const double rpc_bucket_bounds[RPC_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                               0.025,  0.05,  0.1,    0.25,  0.5,
                                               1,      2.5,   5,      10,    30};

struct metrics {
  pthread_mutex_t lock;
  struct metrics_snapshot s;
};

static const char *const g_methods[RPC_METHOD_COUNT_] = {
    "GetDevicePluginOptions", "ListAndWatch", "GetPreferredAllocation", "Allocate",
    "PreStartContainer", "unknown"};

const char *rpc_method_name(enum rpc_method m) {
  return (unsigned)m < RPC_METHOD_COUNT_ ? g_methods[m] : "unknown";
}

enum rpc_method rpc_method_from_path(const char *path) {
  const char *slash = path ? strrchr(path, '/') : NULL;
  if (slash)
    for (int i = 0; i < RPC_UNKNOWN; i++)
      if (strcmp(slash + 1, g_methods[i]) == 0)
        return (enum rpc_method)i;
  return RPC_UNKNOWN;
}

struct metrics *metrics_new(void) {
  struct metrics *m = calloc(1, sizeof *m);
  if (m)
    pthread_mutex_init(&m->lock, NULL);
  return m;
}

void metrics_free(struct metrics *m) {
  if (!m)
    return;
  pthread_mutex_destroy(&m->lock);
  free(m);
}

void metrics_rpc(struct metrics *m, enum ioq_resource r, enum rpc_method meth, grpc_status_code c,
                 double seconds) {
  if (!m || (unsigned)r >= IOQ_RES_COUNT || (unsigned)meth >= RPC_METHOD_COUNT_)
    return;
  pthread_mutex_lock(&m->lock);
  struct rpc_hist *h = &m->s.rpc[r][meth];
  h->codes[(unsigned)c < RPC_CODES ? (unsigned)c : GRPC_STATUS_UNKNOWN]++;
  ioq_histogram_observe(&h->dur, rpc_bucket_bounds, RPC_BUCKETS, seconds);
  pthread_mutex_unlock(&m->lock);
}

void metrics_err(struct metrics *m, enum fail_reason r) {
  if (!m || r == FAIL_NONE || (unsigned)r >= FAIL_COUNT_)
    return;
  pthread_mutex_lock(&m->lock);
  m->s.errors[r]++;
  pthread_mutex_unlock(&m->lock);
}

void metrics_inc(struct metrics *m, enum counter c) {
  if (!m || (unsigned)c >= C_COUNT_)
    return;
  pthread_mutex_lock(&m->lock);
  m->s.counters[c]++;
  pthread_mutex_unlock(&m->lock);
}

void metrics_inc_res(struct metrics *m, enum counter c, enum ioq_resource r) {
  if (!m || (unsigned)c >= C_COUNT_ || (unsigned)r >= IOQ_RES_COUNT)
    return;
  pthread_mutex_lock(&m->lock);
  m->s.counters[c]++;
  m->s.per_res[c][r]++;
  pthread_mutex_unlock(&m->lock);
}

void metrics_snapshot(struct metrics *m, struct metrics_snapshot *out) {
  pthread_mutex_lock(&m->lock);
  *out = m->s;
  pthread_mutex_unlock(&m->lock);
}

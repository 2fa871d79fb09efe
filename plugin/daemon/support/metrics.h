// SPDX-License-Identifier: Apache-2.0
/* Counters and histograms the daemon updates as things happen; gauges (disk
 * units, pod grants, pod I/O) are read from live state when /metrics is
 * scraped (metrics_text.c). Thread-safe. */
#ifndef IOQOS_PLUGIN_METRICS_H
#define IOQOS_PLUGIN_METRICS_H

#include <grpc/grpc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/histogram.h"
#include "failreason.h"
#include "units/units.h"

/* RPC methods, per resource endpoint */
enum rpc_method {
  RPC_OPTIONS = 0, RPC_LIST_AND_WATCH, RPC_PREFERRED, RPC_ALLOCATE, RPC_PRESTART, RPC_UNKNOWN,
  RPC_METHOD_COUNT_
};
const char *rpc_method_name(enum rpc_method m);
enum rpc_method rpc_method_from_path(const char *path);

#define RPC_CODES 17
#define RPC_BUCKETS 15
extern const double rpc_bucket_bounds[RPC_BUCKETS];


enum counter {
  C_REGISTER_OK = 0, C_REGISTER_FAIL, C_KUBELET_RESTARTS, C_RESERVES,
  C_PUBLISH_OK, C_PUBLISH_FAIL, C_PUBLISH_SKIPPED,
  C_RECONCILE_OK, C_RECONCILE_FAIL, C_DRIFT_FIXED, C_PODS_RELEASED,
  C_ENFORCE_OK, C_FAIL_OPEN,
  C_EVENTS_OK, C_EVENTS_FAIL, C_EVENTS_DROPPED,
  C_PROBES, C_PROBE_FAIL,
  C_POLICY_WRITES, C_POLICY_FAIL,
  C_UG_WRITES, C_UG_FAIL,
  C_HTTP_DEADLINE_CUTS,
  C_LIMIT_DRIFT,              /* per resource: limits changed outside ioqos, rewritten */
  C_RESPLITS, C_RESPLIT_FAIL, /* per resource: combined-direction re-splits written / failed */
  C_DRA_PREPARED, C_DRA_PREPARE_FAIL, C_DRA_UNPREPARED, C_DRA_UNPREPARE_FAIL,
  C_DRA_SLICE_WRITES, C_DRA_SLICE_FAIL, C_DRA_RECOVERED,
  C_NVMET_WRITES, C_NVMET_FAIL,
  C_COUNT_
};

struct metrics;

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

void metrics_rpc(struct metrics *m, enum ioq_resource r, enum rpc_method meth, grpc_status_code c,
                 double seconds);
/* counts a failure (FAIL_NONE and out of range are ignored) */
void metrics_err(struct metrics *m, enum fail_reason r);
void metrics_inc(struct metrics *m, enum counter c);
void metrics_inc_res(struct metrics *m, enum counter c, enum ioq_resource r);

struct rpc_hist {
  uint64_t codes[RPC_CODES];
  struct ioq_histogram dur; /* seconds, bounds rpc_bucket_bounds */
};
struct metrics_snapshot {
  struct rpc_hist rpc[IOQ_RES_COUNT][RPC_METHOD_COUNT_];
  uint64_t errors[FAIL_COUNT_]; /* [FAIL_NONE] stays 0 */
  uint64_t counters[C_COUNT_];
  uint64_t per_res[C_COUNT_][IOQ_RES_COUNT];
};
void metrics_snapshot(struct metrics *m, struct metrics_snapshot *out);

#endif

// SPDX-License-Identifier: Apache-2.0
/* A Prometheus latency histogram: observation and text exposition, shared by
 * the plugin's RPC metrics and the extender's request metrics. Not
 * thread-safe: callers hold their metrics lock. */
#ifndef IOQOS_HISTOGRAM_H
#define IOQOS_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define IOQ_HIST_BUCKETS_MAX 16

struct ioq_histogram {
  uint64_t buckets[IOQ_HIST_BUCKETS_MAX]; /* per bound, not cumulative */
  uint64_t count;
  double sum;
};

/* Counts `seconds` in the first bucket whose bound (bounds ascending, n of
 * them, n <= IOQ_HIST_BUCKETS_MAX) it does not exceed; above the last bound
 * it is only in count (le="+Inf"). */
void ioq_histogram_observe(struct ioq_histogram *h, const double *bounds, size_t n, double seconds);

/* Writes NAME_bucket{LABELS,le="B"} (cumulative), le="+Inf", NAME_sum and
 * NAME_count. labels: 'key="value",...' without braces ("" for none). */
void ioq_histogram_write(FILE *f, const char *name, const char *labels, const double *bounds,
                         size_t n, const struct ioq_histogram *h);

#endif

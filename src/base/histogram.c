// SPDX-License-Identifier: Apache-2.0
#include "base/histogram.h"

void ioq_histogram_observe(struct ioq_histogram *h, const double *bounds, size_t n, double seconds) {
  for (size_t b = 0; b < n && b < IOQ_HIST_BUCKETS_MAX; b++)
    if (seconds <= bounds[b]) {
      h->buckets[b]++;
      break;
    }
  h->count++;
  h->sum += seconds;
}

void ioq_histogram_write(FILE *f, const char *name, const char *labels, const double *bounds,
                         size_t n, const struct ioq_histogram *h) {
  const char *sep = *labels ? "," : "";
  uint64_t cum = 0;
  for (size_t b = 0; b < n && b < IOQ_HIST_BUCKETS_MAX; b++) {
    cum += h->buckets[b];
    fprintf(f, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, bounds[b],
            (unsigned long long)cum);
  }
  fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, (unsigned long long)h->count);
  fprintf(f, "%s_sum{%s} %.9f\n", name, labels, h->sum);
  fprintf(f, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

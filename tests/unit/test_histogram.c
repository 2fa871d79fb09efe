// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/histogram.h"

static const double B[3] = {0.001, 0.01, 0.1};

Test(histogram, buckets_by_bound_and_inf) {
  struct ioq_histogram h = {0};
  ioq_histogram_observe(&h, B, 3, 0.0005);
  ioq_histogram_observe(&h, B, 3, 0.001); /* on the bound: that bucket */
  ioq_histogram_observe(&h, B, 3, 0.05);
  ioq_histogram_observe(&h, B, 3, 7.0); /* above every bound: +Inf only */
  cr_assert_eq(h.buckets[0], 2);
  cr_assert_eq(h.buckets[1], 0);
  cr_assert_eq(h.buckets[2], 1);
  cr_assert_eq(h.count, 4);
  cr_assert_float_eq(h.sum, 7.0515, 1e-9);
}

Test(histogram, exposition_is_cumulative) {
  struct ioq_histogram h = {0};
  ioq_histogram_observe(&h, B, 3, 0.0005);
  ioq_histogram_observe(&h, B, 3, 0.05);
  ioq_histogram_observe(&h, B, 3, 7.0);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert_not_null(f);
  ioq_histogram_write(f, "x_seconds", "verb=\"filter\"", B, 3, &h);
  fclose(f);
  cr_assert_str_eq(buf, "x_seconds_bucket{verb=\"filter\",le=\"0.001\"} 1\n"
                        "x_seconds_bucket{verb=\"filter\",le=\"0.01\"} 1\n"
                        "x_seconds_bucket{verb=\"filter\",le=\"0.1\"} 2\n"
                        "x_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 3\n"
                        "x_seconds_sum{verb=\"filter\"} 7.050500000\n"
                        "x_seconds_count{verb=\"filter\"} 3\n");
  free(buf);
}

// SPDX-License-Identifier: Apache-2.0
/* The monotonic clock helper (base/monoclock.h): the three units agree with
 * each other and with clock_gettime, never go back, and deadlines are
 * normalised timespecs the given time ahead. */
#include <criterion/criterion.h>
#include <math.h>
#include <time.h>

#include "base/monoclock.h"

static double ts_s(struct timespec ts) { return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9; }

Test(monoclock, units_agree_with_clock_gettime) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  double s = ioq_mono_s();
  uint64_t ms = ioq_mono_ms();
  uint64_t ns = ioq_mono_ns();
  clock_gettime(CLOCK_MONOTONIC, &b);
  cr_assert(s >= ts_s(a) && s <= ts_s(b), "%f not in [%f, %f]", s, ts_s(a), ts_s(b));
  cr_assert((double)ms / 1e3 >= floor(ts_s(a) * 1e3) / 1e3 - 1e-9 &&
            (double)ms / 1e3 <= ts_s(b) + 1e-9);
  cr_assert((double)ns / 1e9 >= ts_s(a) - 1e-9 && (double)ns / 1e9 <= ts_s(b) + 1e-9);
}

Test(monoclock, never_goes_back) {
  uint64_t last = ioq_mono_ns();
  for (int i = 0; i < 100000; i++) {
    uint64_t now = ioq_mono_ns();
    cr_assert_geq(now, last);
    last = now;
  }
}

Test(monoclock, deadline_is_ahead_and_normalised) {
  const double after[] = {0.0, 0.001, 0.5, 0.999999999, 1.0, 2.75, 30.0};
  for (size_t i = 0; i < sizeof after / sizeof after[0]; i++) {
    double before = ioq_mono_s();
    struct timespec d = ioq_mono_deadline(after[i]);
    double end = ioq_mono_s();
    cr_assert(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L, "tv_nsec %ld", d.tv_nsec);
    cr_assert_geq(ts_s(d), before + after[i] - 1e-6, "deadline for %f too early", after[i]);
    cr_assert_leq(ts_s(d), end + after[i] + 1e-6, "deadline for %f too late", after[i]);
  }
}

Test(monoclock, deadline_of_nonsense_is_now_or_bounded) {
  double before = ioq_mono_s();
  cr_assert_leq(fabs(ts_s(ioq_mono_deadline(-5.0)) - before), 1.0);
  cr_assert_leq(fabs(ts_s(ioq_mono_deadline(NAN)) - before), 1.0);
  struct timespec far = ioq_mono_deadline(INFINITY);
  cr_assert(far.tv_sec > 0 && ts_s(far) <= before + 1e9 + 1.0);
}

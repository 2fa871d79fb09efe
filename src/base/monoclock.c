// SPDX-License-Identifier: Apache-2.0
#include "base/monoclock.h"

static struct timespec now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts;
}

double ioq_mono_s(void) {
  struct timespec ts = now();
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t ioq_mono_ms(void) {
  struct timespec ts = now();
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t ioq_mono_ns(void) {
  struct timespec ts = now();
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct timespec ioq_mono_deadline(double after_s) {
  struct timespec ts = now();
  if (!(after_s > 0)) /* also NaN */
    return ts;
  if (after_s > 1e9) /* ~31 years: keeps the time_t cast defined */
    after_s = 1e9;
  ts.tv_sec += (time_t)after_s;
  ts.tv_nsec += (long)((after_s - (double)(time_t)after_s) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

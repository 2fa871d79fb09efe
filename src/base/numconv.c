// SPDX-License-Identifier: Apache-2.0
#include "base/numconv.h"

#include <errno.h>
#include <math.h>

/* 2^64, exactly representable as a double */
#define TWO64 18446744073709551616.0

int ioq_u64_from_double(double v, const char *what, uint64_t *out, ioq_err *e) {
  if (isnan(v) || v < 0 || v >= TWO64)
    return ioq_fail(e, ERANGE, "%s: %g is not a number in 0..2^64-1", what ? what : "value", v);
  *out = (uint64_t)v; /* in range: defined */
  return 0;
}

uint64_t ioq_u64_from_double_sat(double v) {
  if (isnan(v) || v <= 0)
    return 0;
  if (v >= TWO64)
    return UINT64_MAX;
  return (uint64_t)v;
}

// SPDX-License-Identifier: Apache-2.0
/* Checked conversion of a double to uint64_t. A plain (uint64_t) cast of a
 * NaN, an infinity, a negative value or one of 2^64 or more is undefined
 * behaviour in C (x86 gives 0x8000000000000000); computed rates and capacities
 * go through these instead. */
#ifndef IOQOS_NUMCONV_H
#define IOQOS_NUMCONV_H

#include <stdint.h>

#include "base/error.h"

/* *out = v truncated toward zero, as a cast would, when 0 <= v < 2^64 (and
 * -0.0). Otherwise fails (ERANGE) naming `what` and the value, *out untouched. */
IOQ_MUST_CHECK
int ioq_u64_from_double(double v, const char *what, uint64_t *out, ioq_err *e);

/* Clamped: NaN and v < 0 give 0, v >= 2^64 (and +inf) gives UINT64_MAX, else
 * v truncated toward zero. For values a caller bounds anyway. */
uint64_t ioq_u64_from_double_sat(double v);

#endif

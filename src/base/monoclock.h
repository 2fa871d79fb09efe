// SPDX-License-Identifier: Apache-2.0
/* The monotonic clock (CLOCK_MONOTONIC), the one helper every component uses
 * for intervals, timeouts and ages: it never jumps with the wall clock.
 * Never fails (CLOCK_MONOTONIC is always available on Linux). */
#ifndef IOQOS_MONOCLOCK_H
#define IOQOS_MONOCLOCK_H

#include <stdint.h>
#include <time.h>

/* Now, in seconds / milliseconds / nanoseconds since an arbitrary start. */
double ioq_mono_s(void);
uint64_t ioq_mono_ms(void);
uint64_t ioq_mono_ns(void);

/* The absolute CLOCK_MONOTONIC time `after_s` seconds from now (after_s <= 0:
 * now), normalised (0 <= tv_nsec < 1e9): the deadline for
 * pthread_cond_timedwait on a condition variable whose clock was set to
 * CLOCK_MONOTONIC (pthread_condattr_setclock). */
struct timespec ioq_mono_deadline(double after_s);

#endif

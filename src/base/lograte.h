// SPDX-License-Identifier: Apache-2.0
/* Rate limit of one kind of repeated log line (a refusal reason, say), so a
 * peer that repeats what causes it cannot grow the log without bound: the
 * first line is written, then at most one per window. The lines held back
 * in between are counted; their number goes out with the next line written
 * or, when none comes, in a summary line once the window is over (the
 * caller asks with ioq_lograte_due on a timer). So each kind writes at most
 * one line per window, and no held line goes uncounted.
 *
 * Pure and not thread-safe: the caller passes the time (any monotonic
 * clock, any unit, the window in the same unit) and serialises the calls.
 * Memory is one struct per kind: keep kinds to a fixed set (an enum), never
 * one per peer. */
#ifndef IOQOS_LOGRATE_H
#define IOQOS_LOGRATE_H

#include <stdbool.h>
#include <stdint.h>

struct ioq_lograte {
  uint64_t last; /* when the last line (or summary) was written */
  uint64_t held; /* lines held back since then */
  bool any;      /* a line was written */
};

/* A line of this kind at `now`. Returns true when it is to be written: the
 * first one, or the first once `window` has passed since the last written
 * line (window 0: every one); *held is then the number of lines held back
 * before it, and the count starts again. Otherwise counts it as held back
 * and returns false. */
bool ioq_lograte_allow(struct ioq_lograte *r, uint64_t now, uint64_t window, uint64_t *held);

/* Is a summary due at `now`: lines were held back and `window` has passed
 * since the last written line? Then returns true with *held (the count
 * starts again) and the summary counts as the window's line. */
bool ioq_lograte_due(struct ioq_lograte *r, uint64_t now, uint64_t window, uint64_t *held);

/* The lines held back so far, whatever the time (the last summary, at
 * exit); the count starts again. */
uint64_t ioq_lograte_take(struct ioq_lograte *r);

#endif

// SPDX-License-Identifier: Apache-2.0
/* Rate limit of a repeated log line (base/lograte.h). */
#include "base/lograte.h"

/* Has `window` passed since the last written line? A clock read before
 * `last` (another thread's earlier reading) is still inside the window. */
static bool window_over(const struct ioq_lograte *r, uint64_t now, uint64_t window) {
  return now >= r->last && now - r->last >= window;
}

/* Marks a line written at `now` and hands over the held count. */
static void written(struct ioq_lograte *r, uint64_t now, uint64_t *held) {
  *held = r->held;
  r->held = 0;
  r->last = now;
  r->any = true;
}

bool ioq_lograte_allow(struct ioq_lograte *r, uint64_t now, uint64_t window, uint64_t *held) {
  if (r->any && !window_over(r, now, window)) {
    r->held++;
    return false;
  }
  written(r, now, held);
  return true;
}

bool ioq_lograte_due(struct ioq_lograte *r, uint64_t now, uint64_t window, uint64_t *held) {
  if (!r->held || !window_over(r, now, window))
    return false;
  written(r, now, held);
  return true;
}

uint64_t ioq_lograte_take(struct ioq_lograte *r) {
  uint64_t n = r->held;
  r->held = 0;
  return n;
}

// SPDX-License-Identifier: Apache-2.0
/* The init-only PreStart heuristic (initpick.h). */
#include "initpick.h"

#include <string.h>

bool initpick_may_ask(const struct pod_info *pi, uint64_t listed, const char *disk,
                      enum ioq_resource r, size_t n) {
  if (listed || (unsigned)r >= IOQ_RES_COUNT || strcmp(pi->phase, "Pending") != 0 ||
      pi->terminating || (pi->need.disk[0] && strcmp(pi->need.disk, disk) != 0))
    return false;
  for (size_t k = 0; k < pi->n_ctrs; k++)
    if (pi->ctrs[k].kind == IOQ_CTR_INIT && pi->ctrs[k].units[r] == n)
      return true;
  return false;
}

enum initpick initpick_judge(const struct pod_info *pi, uint64_t listed, const char *disk,
                             enum ioq_resource r, size_t n, int held) {
  if (!initpick_may_ask(pi, listed, disk, r, n))
    return INITPICK_NO;
  if (held == 1)
    return INITPICK_ASKER;
  return held == 0 ? INITPICK_NO : INITPICK_MAYBE;
}

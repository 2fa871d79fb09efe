// SPDX-License-Identifier: Apache-2.0
/* Names of the capability bits (caps.h). */
#include "cgroup/caps.h"

#include <string.h>

static const char *const g_cap_names[IOQ_CAP_COUNT_] = {
    "io.max", "io.weight", "io.bfq.weight", "io.latency",
    "blkio.throttle", "blkio.bfq.weight", "buffered-writes",
};

const char *ioq_cap_name(unsigned bit) {
  for (unsigned i = 0; i < IOQ_CAP_COUNT_; i++)
    if (bit == (1u << i))
      return g_cap_names[i];
  return NULL;
}

unsigned ioq_cap_from_name(const char *name) {
  for (unsigned i = 0; i < IOQ_CAP_COUNT_; i++)
    if (name && strcmp(name, g_cap_names[i]) == 0)
      return 1u << i;
  return 0;
}

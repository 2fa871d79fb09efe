// SPDX-License-Identifier: Apache-2.0
/* The default roots (roots.h). */
#include "disk/roots.h"

void ioq_roots_default(struct ioq_roots *r) {
  r->sysfs = "/sys";
  r->mountinfo = "/proc/self/mountinfo";
  r->cgroupfs = "/sys/fs/cgroup";
  r->devfs = "/dev";
}

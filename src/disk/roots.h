// SPDX-License-Identifier: Apache-2.0
/* The roots every path to a kernel file is built under: parameters, so unit
 * tests point them at temp trees and nothing needs root. */
#ifndef IOQOS_ROOTS_H
#define IOQOS_ROOTS_H

struct ioq_roots {
  const char *sysfs;      /* default "/sys" */
  const char *mountinfo;  /* default "/proc/self/mountinfo" */
  const char *cgroupfs;   /* default "/sys/fs/cgroup" */
  const char *devfs;      /* default "/dev" */
};

/* Sets the defaults (the node's own /sys, /proc, /sys/fs/cgroup, /dev). */
void ioq_roots_default(struct ioq_roots *r);

#endif

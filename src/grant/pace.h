// SPDX-License-Identifier: Apache-2.0
/* nodePolicy.iocost.pace for one disk: the fraction of its capacity iocost's
 * model is written at, or why the disk is not paced. One rule for the plugin
 * (plugin/daemon/core/nodepolicy.c writes it) and `ioqosctl probe` (prints it).
 *
 * Why pace: blk-throttle releases a throttled pod's I/O once per 100 ms slice
 * (Debian's 6.1 kernels), so a large grant reaches a token-bucket disk (cloud
 * volume) in bursts that empty the bucket for several refills, and a
 * latency-bound pod waits for each. With iocost's model at pace x capacity and
 * vrate pinned, a burst drains at the paced rate and 1 - pace of every refill
 * stays free (docs/enforcement.md, "Token-bucket disks"). */
#ifndef IOQOS_PACE_H
#define IOQOS_PACE_H

#include "cgroup/cglayout.h"
#include "config/config.h"
#include "probe/disk.h"
#include "base/error.h"

enum ioq_pace_state {
  IOQ_PACE_OFF,    /* nodePolicy.iocost.pace unset */
  IOQ_PACE_ON,     /* *pace holds the fraction */
  IOQ_PACE_CANNOT, /* set, but this disk cannot be paced: e says why */
};

/* The pace of disk d under config c on a hierarchy of version io_version.
 * auto: ioq_ug_bounded_fraction (grants + pool of pods without a grant). */
enum ioq_pace_state ioq_pace_of(const struct ioq_config *c, enum ioq_cg_version io_version,
                                const struct ioq_disk *d, double *pace, ioq_err *e);

#endif

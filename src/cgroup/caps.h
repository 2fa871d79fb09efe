// SPDX-License-Identifier: Apache-2.0
/* What the kernel offers to hold a pod's share of one disk: the capability
 * bits the probe finds per disk, the node annotation publishes and placement
 * filters on, with their names as published. */
#ifndef IOQOS_CAPS_H
#define IOQOS_CAPS_H

/* capability bits published in the node annotation */
enum {
  IOQ_CAP_IO_MAX = 1u << 0,         /* "io.max" (v2 blk-throttle) */
  IOQ_CAP_IO_WEIGHT = 1u << 1,      /* "io.weight" (v2, iocost enabled on the disk) */
  IOQ_CAP_IO_BFQ_WEIGHT = 1u << 2,  /* "io.bfq.weight" (v2, BFQ scheduler) */
  IOQ_CAP_IO_LATENCY = 1u << 3,     /* "io.latency" */
  IOQ_CAP_BLKIO_THROTTLE = 1u << 4, /* "blkio.throttle" (v1) */
  IOQ_CAP_BLKIO_BFQ_WEIGHT = 1u << 5, /* "blkio.bfq.weight" (v1) */
  IOQ_CAP_BUFFERED_WRITES = 1u << 6,  /* "buffered-writes": writeback charged to the pod */
  IOQ_CAP_COUNT_ = 7,
};
/* name of one capability bit, NULL for unknown bits */
const char *ioq_cap_name(unsigned bit);
/* bit for a name, 0 for unknown names (readers ignore those) */
unsigned ioq_cap_from_name(const char *name);

#endif

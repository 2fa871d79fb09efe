// SPDX-License-Identifier: Apache-2.0
/* Block devices from sysfs: lookup by name or MAJ:MIN, partition -> disk,
 * device-mapper / md stacks -> leaf disks, queue attributes.
 * Paths are under a sysfs root parameter (default "/sys"). */
#ifndef IOQOS_BLOCKDEV_H
#define IOQOS_BLOCKDEV_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "units/iolimit.h"
#include "units/units.h" /* IOQ_DISK_NAME_MAX */

#define IOQ_SCHED_MAX 32

/* One block device as sysfs shows it. */
struct ioq_blockdev {
  char name[IOQ_DISK_NAME_MAX + 1]; /* kernel name in /sys/class/block */
  unsigned major, minor;            /* from sysfs "dev" */
  char scheduler[IOQ_SCHED_MAX];    /* active scheduler ("none", "mq-deadline", "bfq"), "" if none */
  bool rotational;
  unsigned logical_block_size;
};

/* Reads dev, queue/scheduler, queue/rotational, queue/logical_block_size of
 * /sys/class/block/NAME. Partitions have no queue/: those fields stay empty. */
IOQ_MUST_CHECK
int ioq_blockdev_read(const char *sysfs, const char *name, struct ioq_blockdev *out, ioq_err *e);

/* Finds the kernel name for MAJ:MIN (via /sys/dev/block, else a scan). */
IOQ_MUST_CHECK
int ioq_blockdev_name_for(const char *sysfs, unsigned major, unsigned minor, char *name,
                          size_t namesz, ioq_err *e);

/* true if /sys/class/block/NAME is a partition; *disk gets its whole disk. */
bool ioq_blockdev_is_partition(const char *sysfs, const char *name, char *disk, size_t disksz);

/* Finds a device-mapper device by its dm name (/dev/mapper/NAME). */
IOQ_MUST_CHECK
int ioq_blockdev_dm_by_name(const char *sysfs, const char *dm_name, char *name, size_t namesz,
                            ioq_err *e);

/* Leaf whole disks under NAME (walks slaves/ recursively; partitions are
 * lifted to their disks; duplicates removed). A plain disk is its own leaf. */
IOQ_MUST_CHECK
int ioq_blockdev_leaves(const char *sysfs, const char *name, struct ioq_blockdev *leaves,
                        size_t max, size_t *n, ioq_err *e);

/* Whole-disk check by number (sysfs NULL = "/sys"): the device exists and is
 * not a partition; the error for a partition names the disk to use instead
 * (io limits and weights apply to whole disks: the kernel answers ENODEV).
 * name gets the kernel name. */
IOQ_MUST_CHECK
int ioq_blockdev_whole(const char *sysfs, struct ioq_devno dev, char *name, size_t namesz,
                       ioq_err *e);
/* Active I/O scheduler of a device by number ("bfq", "mq-deadline", "none"). */
IOQ_MUST_CHECK
int ioq_blockdev_scheduler(const char *sysfs, struct ioq_devno dev, char *out, size_t outsz,
                           ioq_err *e);

/* true for device-mapper / md devices (stacked: have slaves). */
bool ioq_blockdev_is_stacked(const char *sysfs, const char *name);

#endif

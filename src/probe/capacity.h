// SPDX-License-Identifier: Apache-2.0
/* Disk capacity: where the numbers come from, in order of precedence:
 *   1. config devices[].capacity (operator knows best)
 *   2. io.cost.model of the root cgroup when iocost has a user model
 *      (ctrl=user): bandwidth = min(rbps, wbps), IOPS = min(rrandiops, wrandiops)
 *   3. a saved calibration (`ioqosctl calibrate`): bandwidth =
 *      min(sequential read, sequential write), IOPS = min(4k random read,
 *      4k random write) - the conservative side, since a grant covers both
 *      directions (io.max rbps = wbps = the grant)
 * Advertised units = floor(capacity x allocatable fraction / unit size).
 */
#ifndef IOQOS_CAPACITY_H
#define IOQOS_CAPACITY_H

#include <stdint.h>

#include "config/config.h"
#include "probe/disk.h"
#include "base/error.h"

#define IOQ_CALIBRATION_VERSION 1

struct ioq_calibration {
  char disk[IOQ_DISK_NAME_MAX + 1];
  char dev[24];          /* MAJ:MIN at measurement time */
  char measured_at[32];  /* RFC 3339 UTC */
  char dir[256];         /* where the test file was */
  unsigned seconds;      /* per test */
  uint64_t seq_read_bps, seq_write_bps;   /* bytes/s, 1 MiB direct I/O */
  uint64_t rand_read_iops, rand_write_iops; /* 4 KiB direct I/O */
};

/* Loads the entry for `disk` from a calibration file. Returns 0 and fills
 * *out if present, 1 if the file or the entry does not exist, -1 on errors
 * (unreadable, malformed: the message names the file and field). */
IOQ_MUST_CHECK
int ioq_calibration_load(const char *file, const char *disk, struct ioq_calibration *out,
                         ioq_err *e);
/* Adds/replaces the entry for c->disk in the file (created if missing),
 * keeping other disks' entries; atomic replace. */
IOQ_MUST_CHECK
int ioq_calibration_save(const char *file, const struct ioq_calibration *c, ioq_err *e);

/* Parses the io.cost.model line for MAJ:MIN from the file's content.
 * Returns 0 with bandwidth/IOPS if a ctrl=user model exists, 1 if there is
 * no line or the model is automatic, -1 if the line is malformed. */
IOQ_MUST_CHECK
int ioq_cost_model_parse(const char *content, unsigned major, unsigned minor, uint64_t *bw,
                         uint64_t *iops, ioq_err *e);

/* Fills d->capacity_*, capacity_source, allocatable_fraction and units[]
 * from the sources above. `devcfg` may be NULL (default disk); `cost_model`
 * is the path of the root io.cost.model ("" if none). A disk without any
 * capacity source gets 0 units and capacity_source saying what to do. */
IOQ_MUST_CHECK
int ioq_capacity_resolve(const struct ioq_config *cfg, const struct ioq_device_config *devcfg,
                         const char *cost_model, struct ioq_disk *d, ioq_err *e);

#endif

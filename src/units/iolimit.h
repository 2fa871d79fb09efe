// SPDX-License-Identifier: Apache-2.0
/* I/O limits of one cgroup on one disk, and the text formats of the kernel
 * files that hold them. Pure functions, no filesystem access (the writers in
 * cgwrite.h use them to compare what they wrote with what the kernel reads
 * back: the kernel reformats lines, so the comparison is on parsed values).
 *
 *   v2 io.max          "8:16 rbps=2097152 wbps=max riops=max wiops=120"
 *                      (a device whose four values are all max has no line)
 *   v1 blkio.throttle.{read,write}_{bps,iops}_device   "8:16 2097152"
 *                      (0 written = no limit; an unlimited device has no line)
 *   weight files       "default 100\n8:16 500\n"   (io.weight, io.bfq.weight,
 *                      v1 blkio.bfq.weight_device); v1 blkio.bfq.weight is "100"
 */
#ifndef IOQOS_IOLIMIT_H
#define IOQOS_IOLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Kernel ranges (block/blk-throttle.c, blk-iocost.c, bfq-cgroup.c). io.max
 * rejects values 0 and 1 (EINVAL) and stores IOPS as unsigned int, where
 * UINT_MAX means "max"; BFQ weights are 1..1000, iocost weights 1..10000. */
#define IOQ_LIMIT_MIN 2ull
#define IOQ_BPS_LIMIT_MAX (UINT64_MAX - 1)
#define IOQ_IOPS_LIMIT_MAX (UINT32_MAX - 1ull)
#define IOQ_IO_WEIGHT_MIN 1u
#define IOQ_IO_WEIGHT_MAX 10000u
#define IOQ_BFQ_WEIGHT_MIN 1u
#define IOQ_BFQ_WEIGHT_MAX 1000u
#define IOQ_WEIGHT_DEFAULT 100u

#define IOQ_DEVNO_STR_MAX 24 /* "4294967295:4294967295" */

struct ioq_devno {
  unsigned major, minor;
};

/* Parses "MAJ:MIN" (decimal, nothing else). */
IOQ_MUST_CHECK
int ioq_devno_parse(const char *s, struct ioq_devno *out, ioq_err *e);
/* "MAJ:MIN" into buf (>= IOQ_DEVNO_STR_MAX); returns buf. */
const char *ioq_devno_str(struct ioq_devno d, char *buf, size_t bufsz);
bool ioq_devno_eq(struct ioq_devno a, struct ioq_devno b);

/* Limits of a cgroup on one disk. 0 means no limit ("max"). */
struct ioq_io_limits {
  uint64_t rbps, wbps, riops, wiops;
};
enum ioq_limit_key { IOQ_RBPS = 0, IOQ_WBPS, IOQ_RIOPS, IOQ_WIOPS, IOQ_LIMIT_KEYS };

/* "rbps", "wbps", "riops", "wiops" */
const char *ioq_limit_key_name(enum ioq_limit_key k);
uint64_t ioq_limits_get(const struct ioq_io_limits *l, enum ioq_limit_key k);
void ioq_limits_set(struct ioq_io_limits *l, enum ioq_limit_key k, uint64_t v);
bool ioq_limits_eq(const struct ioq_io_limits *a, const struct ioq_io_limits *b);
bool ioq_limits_unlimited(const struct ioq_io_limits *l);

/* Checks every non-zero value against the kernel range (IOQ_LIMIT_MIN..
 * IOQ_BPS_LIMIT_MAX for bytes/s, ..IOQ_IOPS_LIMIT_MAX for IOPS). */
IOQ_MUST_CHECK
int ioq_limits_check(const struct ioq_io_limits *l, ioq_err *e);

/* io.max line for the device with all four keys ("max" for 0). */
IOQ_MUST_CHECK
int ioq_iomax_format(char *out, size_t outsz, struct ioq_devno d, const struct ioq_io_limits *l,
                     ioq_err *e);
/* Finds the device's line in io.max content. No line = all unlimited
 * (*present = false). Unknown keys are ignored; malformed lines are errors. */
IOQ_MUST_CHECK
int ioq_iomax_parse(const char *content, struct ioq_devno d, struct ioq_io_limits *out,
                    bool *present, ioq_err *e);

/* Value of the device in a v1 blkio.throttle.*_device file; 0 if no line. */
IOQ_MUST_CHECK
int ioq_blkio_parse(const char *content, struct ioq_devno d, uint64_t *out, bool *present,
                    ioq_err *e);

/* Weight file content: the cgroup-wide default and the device's own weight.
 * A bare number (v1 blkio.bfq.weight) is the default. */
struct ioq_weights {
  unsigned dflt;   /* 0 if the file has no default line */
  unsigned device; /* 0 if the device has no line of its own */
};
IOQ_MUST_CHECK
int ioq_weights_parse(const char *content, struct ioq_devno d, struct ioq_weights *out,
                      ioq_err *e);

/* The device's line from a multi-device file ("" if none), for messages. */
void ioq_dev_line(const char *content, struct ioq_devno d, char *out, size_t outsz);

#endif

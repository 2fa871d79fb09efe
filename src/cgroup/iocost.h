// SPDX-License-Identifier: Apache-2.0
/* iocost QoS of the root cgroup (cgroup v2 io.cost.qos), the node policy
 * that makes io.weight hold under saturation (DESIGN: enable=1 ctrl=user
 * min=100 max=100; a latency target helps latency-bound pods).
 *
 * The file holds one line per configured disk, e.g.
 *   8:16 enable=1 ctrl=user rpct=95.00 rlat=5000 wpct=95.00 wlat=5000 min=100.00 max=100.00
 * It exists only in the root cgroup, and only whole request-based disks take
 * it (a partition or a bio-based dm device answers ENODEV/EOPNOTSUPP). */
#ifndef IOQOS_IOCOST_H
#define IOQOS_IOCOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "units/iolimit.h"

struct ioq_iocost_qos {
  bool enable;
  bool ctrl_user;      /* false = ctrl=auto */
  double min, max;     /* percent, 1..10000 (ctrl=user only) */
  unsigned latency_us; /* rlat = wlat at rpct = wpct = 95; 0 = not set/compared */
};

/* Parses the disk's line of io.cost.qos content; *present=false if the disk
 * has no line (iocost never configured for it). */
IOQ_MUST_CHECK
int ioq_iocost_qos_parse(const char *content, struct ioq_devno dev, struct ioq_iocost_qos *out,
                         bool *present, ioq_err *e);

/* The line to write for `want` (without newline). */
IOQ_MUST_CHECK
int ioq_iocost_qos_format(char *out, size_t outsz, struct ioq_devno dev,
                          const struct ioq_iocost_qos *want, ioq_err *e);

/* Makes root/io.cost.qos hold `want` for dev: reads it, writes only when it
 * differs, reads it back and compares (IOQ_EMISMATCH naming what was written
 * and read). *changed tells whether a write happened; `written` (may be
 * NULL) gets the line written. */
IOQ_MUST_CHECK
int ioq_iocost_qos_apply(const char *root, struct ioq_devno dev, const struct ioq_iocost_qos *want,
                         bool *changed, char *written, size_t writtensz, ioq_err *e);

/* iocost's user cost model (root io.cost.model), written by the node policy
 * nodePolicy.iocost.pace: the disk is modelled as doing `bps` bytes/s and
 * `iops` IOs/s in both directions, sequential and random alike, e.g.
 *   8:16 ctrl=user model=linear rbps=178257920 rseqiops=43520 rrandiops=43520
 *        wbps=178257920 wseqiops=43520 wrandiops=43520
 * With vrate pinned (min = max = 100) iocost then issues no more than that
 * to the disk, spread over its period rather than in bursts. */
struct ioq_iocost_model {
  uint64_t bps, iops;
};

/* The six linear coefficients of a disk's io.cost.model line, in the
 * kernel's order; bit i of `have` is set when coefficient i is on the line. */
enum {
  IOQ_COST_RBPS,
  IOQ_COST_RSEQIOPS,
  IOQ_COST_RRANDIOPS,
  IOQ_COST_WBPS,
  IOQ_COST_WSEQIOPS,
  IOQ_COST_WRANDIOPS,
  IOQ_COST_N
};
struct ioq_iocost_coefs {
  bool user; /* ctrl=user (else the kernel's automatic model) */
  uint64_t v[IOQ_COST_N];
  unsigned have;
};

/* Parses the disk's line of io.cost.model content (the one parser of that
 * format: the pace writer and the capacity source both use it);
 * *present=false without a line; -1 on a malformed value. */
IOQ_MUST_CHECK
int ioq_iocost_coefs_parse(const char *content, struct ioq_devno dev, struct ioq_iocost_coefs *out,
                           bool *present, ioq_err *e);

/* The disk's line of io.cost.model content: *user = ctrl=user with all six
 * linear coefficients equal to out's two values (else out is zeroed);
 * *present=false without a line. */
IOQ_MUST_CHECK
int ioq_iocost_model_parse(const char *content, struct ioq_devno dev, struct ioq_iocost_model *out,
                           bool *user, bool *present, ioq_err *e);

/* The line to write (without newline); bps and iops must be > 0. */
IOQ_MUST_CHECK
int ioq_iocost_model_format(char *out, size_t outsz, struct ioq_devno dev,
                            const struct ioq_iocost_model *want, ioq_err *e);

/* Makes root/io.cost.model hold `want` for dev, like ioq_iocost_qos_apply. */
IOQ_MUST_CHECK
int ioq_iocost_model_apply(const char *root, struct ioq_devno dev,
                           const struct ioq_iocost_model *want, bool *changed, char *written,
                           size_t writtensz, ioq_err *e);

#endif

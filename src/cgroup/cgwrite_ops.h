// SPDX-License-Identifier: Apache-2.0
/* The contract between the entry layer of the cgroup writer (cgwrite.c) and
 * its two backends: each backend exports one table of operations, and the
 * entry layer only picks the table by cgroup version (after crun's
 * libcrun/cgroup.c dispatching to its cgroup managers).
 *
 * The entry layer has already checked the setting's ranges and the whole
 * disk, cleared the report and set o (never NULL); a backend writes, reads
 * back and records one report step per file. Errors leave the prefix naming
 * the disk and the cgroup to the entry layer.
 *
 *   cgwrite.c            entry: open a cgroup, check, dispatch
 *     cgwrite_v1.c       ioq_cgwrite_v1: blkio.throttle.*, blkio.bfq.weight*
 *     cgwrite_v2.c       ioq_cgwrite_v2: io.max, io.weight, io.bfq.weight
 *       cgweight.c       weight files, BFQ check
 *         cgfile.c       one cgroup file: path, read, write, report step
 *
 * Includes only the public types; not part of the public API. */
#ifndef IOQOS_CGWRITE_OPS_H
#define IOQOS_CGWRITE_OPS_H

#include "cgroup/cgwrite.h"

struct ioq_cgwrite_ops {
  const char *name; /* "cgroup v1 blkio", "cgroup v2" */
  int (*apply)(const struct ioq_cg *cg, const struct ioq_disk_setting *s,
               const struct ioq_apply_opts *o, struct ioq_apply_report *rep, ioq_err *e);
  int (*clear)(const struct ioq_cg *cg, struct ioq_devno dev, const struct ioq_apply_opts *o,
               struct ioq_apply_report *rep, ioq_err *e);
  /* out is zeroed by the entry layer */
  int (*read)(const struct ioq_cg *cg, struct ioq_devno dev, struct ioq_disk_state_cg *out,
              ioq_err *e);
};

extern const struct ioq_cgwrite_ops ioq_cgwrite_v1; /* cgwrite_v1.c */
extern const struct ioq_cgwrite_ops ioq_cgwrite_v2; /* cgwrite_v2.c */

#endif

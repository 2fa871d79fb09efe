// SPDX-License-Identifier: Apache-2.0
/* Bottom layer of the cgroup writer: weight files (io.weight, io.bfq.weight,
 * blkio.bfq.weight_device) and the BFQ applicability check.
 *
 * A weight file has a per-device form ("MAJ:MIN W", reset "MAJ:MIN default")
 * and a cgroup-wide default used where the per-device form is rejected (the
 * policy not active on the disk) or missing (v1 BFQ before Linux 5.4); the
 * fallback only raises the default, so a pod with grants on several such
 * disks keeps the largest weight it needs. Every write is read back.
 * Used by cgwrite_v1.c and cgwrite_v2.c; includes only cgfile.h. */
#ifndef IOQOS_CGWEIGHT_H
#define IOQOS_CGWEIGHT_H

#include <stdbool.h>

#include "cgfile.h"

/* A weight file of one cgroup version. */
struct ioq_weight_file {
  const char *file;            /* per-device file */
  const char *dflt_file;       /* file for the default form */
  bool dflt_bare;              /* default written/read as a bare "W" (v1 blkio.bfq.weight) */
  unsigned lo, hi;             /* valid range */
  const char *missing;         /* why the file may be missing (for the error) */
  const char *fallback_effect; /* what the default form means, for the note */
};

/* Puts weight w in place for dev (one report step). */
IOQ_MUST_CHECK
int ioq_weight_apply(const struct ioq_cg *cg, const struct ioq_weight_file *wf,
                     struct ioq_devno dev, unsigned w, const struct ioq_apply_opts *o,
                     struct ioq_apply_report *rep, ioq_err *e);
/* Resets dev's weight (and with o->reset_default_weight the default); a
 * missing file is nothing to clear. */
IOQ_MUST_CHECK
int ioq_weight_clear(const struct ioq_cg *cg, const struct ioq_weight_file *wf,
                     struct ioq_devno dev, const struct ioq_apply_opts *o,
                     struct ioq_apply_report *rep, ioq_err *e);
/* The device's weight and the default; *has = the per-device file exists. */
IOQ_MUST_CHECK
int ioq_weight_read(const struct ioq_cg *cg, const struct ioq_weight_file *wf, struct ioq_devno dev,
                    struct ioq_weights *out, bool *has, ioq_err *e);

/* BFQ weight only where the disk runs BFQ: true when it does, false after
 * recording a "skipped" step (an unknown scheduler counts as not bfq). */
bool ioq_bfq_applicable(const char *sysfs_root, const char *file, struct ioq_devno dev,
                        struct ioq_apply_report *rep);

#endif

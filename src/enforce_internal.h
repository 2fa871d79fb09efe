// SPDX-License-Identifier: Apache-2.0
/* Helpers shared by the v1 and v2 writers (enforce_v1.c, enforce_v2.c).
 * Not part of the public API. */
#ifndef IOQOS_ENFORCE_INTERNAL_H
#define IOQOS_ENFORCE_INTERNAL_H

#include "ioqos/enforce.h"

/* Next report step for `file` (a scratch step when rep is NULL or full). */
struct ioq_apply_step *ioq_step_new(struct ioq_apply_report *rep, const char *file);

/* dir/name into out (PATH_MAX). */
int ioq_cg_file(const struct ioq_cg *cg, const char *name, char *out, ioq_err *e);
/* Reads dir/name (malloc'd). */
int ioq_cg_read(const struct ioq_cg *cg, const char *name, char **content, ioq_err *e);
/* Writes one command to dir/name; on failure the message says which value
 * was refused and, for the errno values the kernel uses here, what it means. */
int ioq_cg_write(const struct ioq_cg *cg, const char *name, const char *data, ioq_err *e);
bool ioq_cg_has(const struct ioq_cg *cg, const char *name);

/* A weight file with a per-device form ("MAJ:MIN W", reset "MAJ:MIN
 * default") and a cgroup-wide default used where the per-device form is
 * rejected. */
struct ioq_weight_file {
  const char *file;       /* per-device file */
  const char *dflt_file;  /* file for the default form */
  bool dflt_bare;         /* default written/read as a bare "W" (v1 blkio.bfq.weight) */
  unsigned lo, hi;        /* valid range */
  const char *missing;    /* why the file may be missing (for the error) */
  const char *fallback_effect; /* what the default form means, for the note */
};
int ioq_weight_apply(const struct ioq_cg *cg, const struct ioq_weight_file *wf,
                     struct ioq_devno dev, unsigned w, const struct ioq_apply_opts *o,
                     struct ioq_apply_report *rep, ioq_err *e);
int ioq_weight_clear(const struct ioq_cg *cg, const struct ioq_weight_file *wf,
                     struct ioq_devno dev, const struct ioq_apply_opts *o,
                     struct ioq_apply_report *rep, ioq_err *e);
int ioq_weight_read(const struct ioq_cg *cg, const struct ioq_weight_file *wf,
                    struct ioq_devno dev, struct ioq_weights *out, bool *has, ioq_err *e);

/* BFQ weight only where the disk runs BFQ: returns 1 when it does, 0 after
 * recording a "skipped" step, -1 on error. */
int ioq_bfq_applicable(const char *sysfs_root, const char *file, struct ioq_devno dev,
                       struct ioq_apply_report *rep, ioq_err *e);

/* Version-specific writers. */
extern const struct ioq_weight_file ioq_wf_v2_iocost, ioq_wf_v2_bfq, ioq_wf_v1_bfq;
int ioq_v2_apply(const struct ioq_cg *cg, const struct ioq_disk_setting *s,
                 const struct ioq_apply_opts *o, struct ioq_apply_report *rep, ioq_err *e);
int ioq_v2_clear(const struct ioq_cg *cg, struct ioq_devno dev, const struct ioq_apply_opts *o,
                 struct ioq_apply_report *rep, ioq_err *e);
int ioq_v2_read(const struct ioq_cg *cg, struct ioq_devno dev, struct ioq_disk_state_cg *out,
                ioq_err *e);
int ioq_v1_apply(const struct ioq_cg *cg, const struct ioq_disk_setting *s,
                 const struct ioq_apply_opts *o, struct ioq_apply_report *rep, ioq_err *e);
int ioq_v1_clear(const struct ioq_cg *cg, struct ioq_devno dev, const struct ioq_apply_opts *o,
                 struct ioq_apply_report *rep, ioq_err *e);
int ioq_v1_read(const struct ioq_cg *cg, struct ioq_devno dev, struct ioq_disk_state_cg *out,
                ioq_err *e);

#endif

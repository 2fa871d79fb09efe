// SPDX-License-Identifier: Apache-2.0
/* Bottom layer of the cgroup writer: one cgroup file at a time.
 *
 * Path of a file in a cgroup, existence, read, write (with what the kernel's
 * errno means for these files), and the next step of an apply report.
 * Used by the weight helpers (cgweight.c), both version writers
 * (cgwrite_v1.c, cgwrite_v2.c), the entry layer (cgwrite.c) and the
 * statistics readers (cgstat.c). Includes only the public types; not part of
 * the public API. */
#ifndef IOQOS_CGFILE_H
#define IOQOS_CGFILE_H

#include <stdbool.h>

#include "cgroup/cgwrite.h"

/* Next report step for `file` (a scratch step when rep is NULL or full). */
struct ioq_apply_step *ioq_step_new(struct ioq_apply_report *rep, const char *file);

/* dir/name into out (PATH_MAX). */
IOQ_MUST_CHECK
int ioq_cg_file(const struct ioq_cg *cg, const char *name, char *out, ioq_err *e);
/* Reads dir/name (malloc'd). */
IOQ_MUST_CHECK
int ioq_cg_read(const struct ioq_cg *cg, const char *name, char **content, ioq_err *e);
/* Writes one command to dir/name; on failure the message says which value
 * was refused and, for the errno values the kernel uses here, what it means. */
IOQ_MUST_CHECK
int ioq_cg_write(const struct ioq_cg *cg, const char *name, const char *data, ioq_err *e);
/* Whether dir/name exists. */
bool ioq_cg_has(const struct ioq_cg *cg, const char *name);

#endif

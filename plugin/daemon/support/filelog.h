// SPDX-License-Identifier: Apache-2.0
/* The files one apply of a grant wrote or found in place, as the writer
 * reported them (ioq_apply_report), kept per pod in the pod table for
 * `ioqosctl explain` (struct podtable_file). The record is for display:
 * values longer than its fields are cut (ioq_copy_trunc). Pure functions;
 * the pod table holds its locks around them. */
#ifndef IOQOS_PLUGIN_FILELOG_H
#define IOQOS_PLUGIN_FILELOG_H

#include <stddef.h>

#include "cgroup/cgwrite.h"
#include "units/units.h"

/* One kernel file of a pod's grant as the writer left it, for
 * `ioqosctl explain`: what was written, what the kernel read back, when. */
#define PODTABLE_FILES_MAX 48
struct podtable_file {
  char disk[IOQ_DISK_NAME_MAX + 1]; /* the grant's disk (weights may go to its leaves) */
  char file[40];                    /* file name in the pod cgroup: "io.max", ... */
  char written[160];  /* last value this plugin run wrote; "" = found in place */
  char readback[160]; /* the device's line read back at the last check */
  char note[160];     /* why something was skipped or a fallback form used */
  double written_at;  /* CLOCK_REALTIME seconds of that write; 0 = none */
  double verified_at; /* CLOCK_REALTIME seconds of the last read back */
};

/* The files of one apply, in the order written. */
struct pt_file_log {
  struct podtable_file f[PODTABLE_FILES_MAX];
  size_t n;
  double now; /* CLOCK_REALTIME */
};

/* CLOCK_REALTIME seconds, for written_at / verified_at. */
double pt_realtime_now(void);
/* Appends the steps of one disk's write (l may be NULL: nothing kept;
 * beyond PODTABLE_FILES_MAX files the rest are not recorded). */
void pt_log_steps(struct pt_file_log *l, const char *disk, const struct ioq_apply_report *rep);
/* The new records, each file found in place keeping when it was last
 * written per `old` (malloc'd; NULL when there are none or out of memory). */
struct podtable_file *pt_merge_files(const struct pt_file_log *l, const struct podtable_file *old,
                                     size_t n_old);

#endif

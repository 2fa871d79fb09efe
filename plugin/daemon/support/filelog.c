// SPDX-License-Identifier: Apache-2.0
/* The record of the files one apply wrote or read back (filelog.h). */
#include "filelog.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fsutil.h"

double pt_realtime_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}


void pt_log_steps(struct pt_file_log *l, const char *disk, const struct ioq_apply_report *rep) {
  for (size_t i = 0; l && i < rep->n && l->n < PODTABLE_FILES_MAX; i++) {
    const struct ioq_apply_step *st = &rep->steps[i];
    struct podtable_file *o = &l->f[l->n++];
    memset(o, 0, sizeof *o);
    ioq_copy_trunc(o->disk, sizeof o->disk, disk);
    ioq_copy_trunc(o->file, sizeof o->file, st->file);
    if (st->changed) {
      ioq_copy_trunc(o->written, sizeof o->written, st->written);
      o->written_at = l->now;
    }
    ioq_copy_trunc(o->readback, sizeof o->readback, st->readback);
    ioq_copy_trunc(o->note, sizeof o->note, st->note);
    o->verified_at = l->now;
  }
}

/* The new records, each unchanged file keeping when it was last written
 * (malloc'd; NULL when there are none or out of memory). */
struct podtable_file *pt_merge_files(const struct pt_file_log *l, const struct podtable_file *old,
                                     size_t n_old) {
  struct podtable_file *out = l->n ? malloc(l->n * sizeof *out) : NULL;
  for (size_t i = 0; out && i < l->n; i++) {
    out[i] = l->f[i];
    if (out[i].written_at)
      continue;
    for (size_t k = 0; k < n_old; k++)
      if (strcmp(old[k].file, out[i].file) == 0 && strcmp(old[k].disk, out[i].disk) == 0 &&
          old[k].written_at) {
        ioq_copy_trunc(out[i].written, sizeof out[i].written, old[k].written);
        out[i].written_at = old[k].written_at;
        break;
      }
  }
  return out;
}

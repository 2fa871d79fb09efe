// SPDX-License-Identifier: Apache-2.0
/* Disk calibration with direct I/O on a temporary file (never a raw device).
 *
 * Four phases of `seconds` each: sequential write (1 MiB blocks, 4 threads),
 * sequential read, 4 KiB random read and 4 KiB random write (16 threads, to
 * keep a device queue busy the way concurrent pods do). The file is unlinked
 * right after creation, so it disappears even if the process is killed.
 * Its size is min(1 GiB, 10% of free space), at least 64 MiB.
 */
#ifndef IOQOS_CALIBRATE_H
#define IOQOS_CALIBRATE_H

#include <signal.h>
#include <stdint.h>

#include "probe/capacity.h"
#include "base/error.h"

enum ioq_cal_phase {
  IOQ_CAL_SEQ_WRITE = 0,
  IOQ_CAL_SEQ_READ,
  IOQ_CAL_RAND_READ,
  IOQ_CAL_RAND_WRITE
};
const char *ioq_cal_phase_name(enum ioq_cal_phase p);

/* progress: called about once a second from the calling thread */
typedef void (*ioq_cal_progress_fn)(void *ud, enum ioq_cal_phase phase, double elapsed_s,
                                    double total_s, double rate, const char *unit);

struct ioq_cal_opts {
  const char *dir;
  unsigned seconds;            /* per phase, >= 1 */
  uint64_t file_size;          /* 0 = automatic */
  volatile sig_atomic_t *stop; /* set to non-zero to abort (e.g. from SIGINT) */
  ioq_cal_progress_fn progress;
  void *progress_ud;
};

/* Measures into *out (seq_*_bps, rand_*_iops, seconds, dir, measured_at;
 * disk/dev are left for the caller). Aborted runs fail with ECANCELED. */
IOQ_MUST_CHECK
int ioq_calibrate(const struct ioq_cal_opts *o, struct ioq_calibration *out, ioq_err *e);

#endif

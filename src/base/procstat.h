// SPDX-License-Identifier: Apache-2.0
/* The standard process_* metrics (as Prometheus client libraries export
 * them), read from procfs for the calling process. Shared by the plugin and
 * the extender so both expose the same families. */
#ifndef IOQOS_PROCSTAT_H
#define IOQOS_PROCSTAT_H

#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

struct ioq_procstat {
  double cpu_seconds;        /* user + system CPU time */
  double start_time_seconds; /* since the Unix epoch */
  uint64_t resident_bytes;
  uint64_t virtual_bytes;
  uint64_t open_fds;
  uint64_t max_fds; /* soft RLIMIT_NOFILE ("Max open files"); UINT64_MAX if unlimited */
};

/* Reads PROC/self/stat, PROC/self/limits, PROC/self/fd and the btime line of
 * PROC/stat (proc is "/proc" outside tests). Every file is read with a bound;
 * a file that is missing or malformed fails with its path in the message. */
IOQ_MUST_CHECK
int ioq_procstat_read(const char *proc, struct ioq_procstat *out, ioq_err *e);

/* Writes the six families with HELP and TYPE (text format 0.0.4):
 * process_cpu_seconds_total, process_start_time_seconds,
 * process_resident_memory_bytes, process_virtual_memory_bytes,
 * process_open_fds, process_max_fds. */
void ioq_procstat_write(FILE *f, const struct ioq_procstat *s);

/* What /metrics handlers call: reads /proc and writes the families, or, when
 * procfs cannot be read, writes none of them and logs why (warning). */
void ioq_procstat_expose(FILE *f);

#endif

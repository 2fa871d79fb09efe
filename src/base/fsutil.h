// SPDX-License-Identifier: Apache-2.0
/* Small file helpers for sysfs/cgroupfs style files: whole-file reads,
 * single-write() writes (cgroup files take one command per write), bounded
 * path joins. All report failures with the path in the message. */
#ifndef IOQOS_FSUTIL_H
#define IOQOS_FSUTIL_H

#include <stdbool.h>
#include <string.h> /* memcpy, for IOQ_COPY_FIELD */
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Joins parts with '/', collapsing duplicate separators at the seams.
 * Fails (ENAMETOOLONG) if the result does not fit. Last argument NULL. */
IOQ_MUST_CHECK
int ioq_path_join(char *out, size_t outsz, ioq_err *e, const char *first, ...)
    __attribute__((sentinel));

/* Reads the whole file into a malloc'd NUL-terminated buffer (*out),
 * length in *len (may be NULL). Files up to `max` bytes (0 = 1 MiB). */
IOQ_MUST_CHECK
int ioq_read_file(const char *path, char **out, size_t *len, size_t max, ioq_err *e);

/* Reads the file and strips trailing whitespace into buf. */
IOQ_MUST_CHECK
int ioq_read_line(const char *path, char *buf, size_t bufsz, ioq_err *e);

/* Reads an unsigned decimal number (trailing whitespace allowed). */
IOQ_MUST_CHECK
int ioq_read_u64(const char *path, uint64_t *out, ioq_err *e);

/* Writes `data` with one write(2) call (O_WRONLY|O_TRUNC, no O_CREAT: the
 * file must exist, as cgroup files do). A symlink as the last component is
 * refused (O_NOFOLLOW, code ELOOP). Error: "write 'DATA' to PATH: strerror". */
IOQ_MUST_CHECK
int ioq_write_file(const char *path, const char *data, ioq_err *e);

/* Creates/truncates a regular file atomically (temp + rename), mode 0644,
 * creating missing parent directories (0755); a symlink at the temp name is
 * refused. For state files, not cgroups. */
IOQ_MUST_CHECK
int ioq_write_file_atomic(const char *path, const char *data, ioq_err *e);

/* mkdir -p (0755). */
IOQ_MUST_CHECK
int ioq_mkdir_p(const char *path, ioq_err *e);

bool ioq_path_exists(const char *path);
bool ioq_is_dir(const char *path);

/* Copies src into dst (always NUL-terminated); false if it was truncated.
 * A caller handles truncation (an error naming what did not fit) or, where
 * a cut value is what it wants (a log field, a display name), says so by
 * calling ioq_copy_trunc instead. */
IOQ_MUST_CHECK
bool ioq_copy(char *dst, size_t dstsz, const char *src);
/* The same where truncation is intended: dst gets as much of src as fits. */
void ioq_copy_trunc(char *dst, size_t dstsz, const char *src);
/* Copies a char array field into one of the same size: cannot cut (the
 * sizes are checked at compile time), so there is no result to check. */
#define IOQ_COPY_FIELD(dst, src)                                                                  \
  do {                                                                                           \
    _Static_assert(sizeof(dst) == sizeof(src), "IOQ_COPY_FIELD: field sizes differ");           \
    memcpy((dst), (src), sizeof(dst));                                                           \
  } while (0)

/* Trims leading/trailing ASCII whitespace in place; returns s. */
char *ioq_trim(char *s);

/* Parses a whole string as an unsigned decimal (no sign, no garbage). */
int ioq_parse_u64(const char *s, uint64_t *out);

#endif

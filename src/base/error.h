// SPDX-License-Identifier: Apache-2.0
/* Error values with context.
 *
 * Every fallible function in libioqos takes an `ioq_err *` and returns -1
 * after filling it (0 on success). The message carries the context a user
 * needs ("write /sys/fs/cgroup/x/io.max: No such device"), callers add their
 * own context in front with ioq_err_prefix().
 */
#ifndef IOQOS_ERROR_H
#define IOQOS_ERROR_H

#include <stddef.h>

#define IOQ_ERR_MSG_MAX 1024

typedef struct ioq_err {
  int code;                  /* errno value, or one of IOQ_E* below */
  char msg[IOQ_ERR_MSG_MAX]; /* human-readable, no trailing newline */
} ioq_err;

/* Codes beyond errno for conditions that are not system-call failures. */
enum {
  IOQ_EINVAL_INPUT = 1000, /* malformed input (config, JSON, IDs, flags) */
  IOQ_ENOTFOUND,           /* a looked-up thing does not exist */
  IOQ_EUNSUPPORTED,        /* the kernel or layout lacks a feature */
  IOQ_EMISMATCH,           /* a read-back differs from what was written */
  IOQ_ECONFLICT,           /* state conflicts with the request */
};

/* On the fallible functions of the public headers (those that take an
 * ioq_err and return int): ignoring their result does not compile. */
#define IOQ_MUST_CHECK __attribute__((warn_unused_result))

/* Sets *e (if non-NULL) and returns -1, so `return ioq_fail(...)` reads well. */
int ioq_fail(ioq_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like ioq_fail with code = errno and ": strerror(errno)" appended. */
int ioq_fail_errno(ioq_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prepends "<formatted>: " to an existing message (keeps the code). */
void ioq_err_prefix(ioq_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void ioq_err_clear(ioq_err *e);

#endif

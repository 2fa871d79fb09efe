// SPDX-License-Identifier: Apache-2.0
#include "base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int ioq_fail(ioq_err *e, int code, const char *fmt, ...) {
  if (e) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->code = code;
  }
  return -1;
}

int ioq_fail_errno(ioq_err *e, const char *fmt, ...) {
  int saved = errno;
  if (e) {
    char head[IOQ_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    snprintf(e->msg, sizeof e->msg, "%.900s: %s", head, strerror(saved));
    e->code = saved;
  }
  errno = saved;
  return -1;
}

void ioq_err_prefix(ioq_err *e, const char *fmt, ...) {
  if (!e)
    return;
  char head[IOQ_ERR_MSG_MAX], old[IOQ_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  memcpy(old, e->msg, sizeof old);
  snprintf(e->msg, sizeof e->msg, "%.500s: %.500s", head, old);
}

void ioq_err_clear(ioq_err *e) {
  if (e) {
    e->code = 0;
    e->msg[0] = '\0';
  }
}

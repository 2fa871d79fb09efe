// SPDX-License-Identifier: Apache-2.0
#include "allocate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int append(char *buf, size_t bufsz, size_t *len, ioq_err *e, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int append(char *buf, size_t bufsz, size_t *len, ioq_err *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *len, bufsz - *len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= bufsz - *len)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "environment value longer than %zu bytes", bufsz - 1);
  *len += (size_t)n;
  return 0;
}

int allocate_envs(enum ioq_resource r, const struct ioq_unit_sizes *sizes, const struct id_tally *t,
                  struct env_kv out[2], ioq_err *e) {
  if (t->n == 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "no units to describe");
  snprintf(out[0].key, sizeof out[0].key, "%s", ENV_DEVICES);
  snprintf(out[1].key, sizeof out[1].key, "%s", r == IOQ_RES_BANDWIDTH ? ENV_BANDWIDTH : ENV_IOPS);
  size_t l0 = 0, l1 = 0;
  out[0].value[0] = out[1].value[0] = '\0';
  for (size_t i = 0; i < t->n; i++) {
    uint64_t amount;
    if (__builtin_mul_overflow(t->d[i].count, sizes->size[r], &amount))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%" PRIu64 " units of %s overflow 64 bits",
                      t->d[i].count, ioq_resource_name(r));
    if (append(out[0].value, sizeof out[0].value, &l0, e, "%s%s", i ? "," : "", t->d[i].disk) < 0)
      return -1;
    int rc = t->n == 1
                 ? append(out[1].value, sizeof out[1].value, &l1, e, "%" PRIu64, amount)
                 : append(out[1].value, sizeof out[1].value, &l1, e, "%s%s=%" PRIu64, i ? "," : "",
                          t->d[i].disk, amount);
    if (rc < 0)
      return -1;
  }
  return 0;
}

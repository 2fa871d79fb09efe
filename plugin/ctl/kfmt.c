// SPDX-License-Identifier: Apache-2.0
#include "kfmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

char *ctl_fmt_age(int64_t s, char *buf, size_t n) {
  if (s < 0)
    s = 0;
  const int64_t m = 60, h = 3600, d = 86400;
  if (s < 2 * m)
    snprintf(buf, n, "%" PRId64 "s", s);
  else if (s < 10 * m && s % m)
    snprintf(buf, n, "%" PRId64 "m%" PRId64 "s", s / m, s % m);
  else if (s < 3 * h)
    snprintf(buf, n, "%" PRId64 "m", s / m);
  else if (s < 8 * h && (s % h) / m)
    snprintf(buf, n, "%" PRId64 "h%" PRId64 "m", s / h, (s % h) / m);
  else if (s < 2 * d)
    snprintf(buf, n, "%" PRId64 "h", s / h);
  else if (s < 8 * d && (s % d) / h)
    snprintf(buf, n, "%" PRId64 "d%" PRId64 "h", s / d, (s % d) / h);
  else if (s < 2 * 365 * d)
    snprintf(buf, n, "%" PRId64 "d", s / d);
  else
    snprintf(buf, n, "%" PRId64 "y", s / (365 * d));
  return buf;
}

char *ctl_fmt_bw(uint64_t b, char *buf, size_t n) {
  const uint64_t mib = 1u << 20;
  if (b % mib == 0) {
    snprintf(buf, n, "%" PRIu64 "MiB/s", b / mib);
    return buf;
  }
  snprintf(buf, n, "%.2f", (double)b / (double)mib);
  char *dot = strchr(buf, '.');
  if (dot) { /* "0.50" -> "0.5", "3.00" -> "3" */
    char *end = buf + strlen(buf);
    while (end > dot + 1 && end[-1] == '0')
      *--end = '\0';
    if (end == dot + 1)
      *dot = '\0';
  }
  size_t l = strlen(buf);
  snprintf(buf + l, n > l ? n - l : 0, "MiB/s");
  return buf;
}

char *ctl_fmt_utc(int64_t t, char *buf, size_t n) {
  time_t tt = (time_t)t;
  struct tm tm;
  if (!gmtime_r(&tt, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
    snprintf(buf, n, "%" PRId64, t);
  return buf;
}

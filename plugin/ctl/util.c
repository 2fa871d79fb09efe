// SPDX-License-Identifier: Apache-2.0
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"

const char *ctl_prog = "ioqosctl";

int ctl_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s %s: ", ctl_prog, cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry '%s %s --help'.\n", ctl_prog, cmd);
  va_end(ap);
  return 2;
}

void ctl_deprecated(const char *cmd, const char *old, const char *now) {
  fprintf(stderr, "ioqosctl %s: warning: %s is deprecated and will be removed: use %s (same meaning)\n",
          cmd, old, now);
}

int ctl_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
               const char *cmd) {
  /* a leading ':' makes getopt report a missing value as ':' (not '?') */
  char opts[128];
  snprintf(opts, sizeof opts, ":%s", shortopts[0] == ':' ? shortopts + 1 : shortopts);
  opterr = 0;
  int c = getopt_long(argc, argv, opts, longopts, NULL);
  if (c == ':') {
    ctl_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
    return '?';
  }
  if (c == '?') {
    ctl_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
    return '?';
  }
  return c;
}

int ctl_parse_u64(const char *cmd, const char *flag, const char *val, uint64_t min, uint64_t max,
                  uint64_t *out) {
  uint64_t v;
  if (ioq_parse_u64(val, &v) < 0 || v < min || v > max) {
    ctl_usage_error(cmd, "%s: '%s' is not an integer in [%llu, %llu]", flag, val,
                    (unsigned long long)min, (unsigned long long)max);
    return -1;
  }
  *out = v;
  return 0;
}

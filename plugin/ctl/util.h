// SPDX-License-Identifier: Apache-2.0
/* Helpers shared by the ioqosctl subcommands. */
#ifndef IOQOSCTL_UTIL_H
#define IOQOSCTL_UTIL_H

#include <getopt.h>
#include <stdint.h>

/* How the binary was invoked, for messages: "ioqosctl", or "kubectl ioqos"
 * when run as kubectl-ioqos (main.c sets it). */
extern const char *ctl_prog;

/* Prints "PROG CMD: message" and a --help hint to stderr; returns 2. */
int ctl_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "ioqosctl CMD: warning: OLD is deprecated ...: use NOW" to stderr:
 * a former flag spelling still works but says so. */
void ctl_deprecated(const char *cmd, const char *old, const char *now);

/* getopt_long wrapper that turns getopt's own errors into ctl_usage_error:
 * returns the option, -1 at the end, or '?' after printing the error. */
int ctl_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
               const char *cmd);

/* Parses an unsigned integer flag value; on failure prints a usage error
 * naming the flag and returns -1. */
int ctl_parse_u64(const char *cmd, const char *flag, const char *val, uint64_t min, uint64_t max,
                  uint64_t *out);

#endif

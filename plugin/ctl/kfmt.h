// SPDX-License-Identifier: Apache-2.0
/* Value formatting for kubectl ioqos tables: ages as kubectl prints them,
 * bandwidth in MiB/s, units with their size. Each writes into buf (always
 * NUL-terminated) and returns it. */
#ifndef IOQOSCTL_KFMT_H
#define IOQOSCTL_KFMT_H

#include <stddef.h>
#include <stdint.h>

/* kubectl's HumanDuration: "42s", "5m10s", "47m", "3h10m", "21h", "2d4h",
 * "45d", "3y"; a negative age (clock skew) prints "0s" */
char *ctl_fmt_age(int64_t seconds, char *buf, size_t n);
/* bytes/s as MiB/s: "200MiB/s", "0.5MiB/s" (up to 2 decimals, trimmed) */
char *ctl_fmt_bw(uint64_t bytes_per_s, char *buf, size_t n);
/* "RFC 3339" UTC of unix seconds: "2026-12-01T02:38:15Z" */
char *ctl_fmt_utc(int64_t t, char *buf, size_t n);

#endif

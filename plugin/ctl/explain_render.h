// SPDX-License-Identifier: Apache-2.0
/* `ioqosctl explain`'s screen: the plugin's explain document (JSON, see
 * plugin/daemon/observe/explain.h and docs/operations.md) as one readable page.
 * Pure: formats what it is given, no I/O but the stream written to. */
#ifndef IOQOSCTL_EXPLAIN_RENDER_H
#define IOQOSCTL_EXPLAIN_RENDER_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>

/* Writes the page for `doc`. Returns 0, or -1 with err filled when doc is
 * not an explain document (no "pod" object). Fields it does not know are
 * skipped; missing ones print as "-". */
int explain_render(FILE *out, json_object *doc, char *err, size_t errsz);

/* "1.5 MiB/s", "200 MiB/s", "512 B/s" (bytes per second). */
void explain_fmt_rate(char *buf, size_t sz, double bytes_per_s);
/* "64 MiB", "1.5 GiB", "512 B". */
void explain_fmt_bytes(char *buf, size_t sz, double bytes);
/* "2026-12-01 05:30:01Z (42s ago)" against `now` (both CLOCK_REALTIME
 * seconds); "-" for t <= 0. */
void explain_fmt_time(char *buf, size_t sz, double t, double now);

#endif

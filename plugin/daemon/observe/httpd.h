// SPDX-License-Identifier: Apache-2.0
/* httpd.c + metrics_text.c: /metrics, /healthz, /readyz and the explain socket. */
#ifndef IOQOS_PLUGIN_HTTPD_H
#define IOQOS_PLUGIN_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include "base/error.h"

struct plugin;
struct httpd;

/* Listeners: /metrics etc. on `address` (TCP, "" = none) and, with
 * opts.explain_socket set, /v1/explain on that unix socket (root only:
 * mode 0600; a path owned by another user or served by a live process is
 * refused, a stale socket replaced, the socket removed by httpd_stop). */
struct httpd *httpd_start(struct plugin *p, const char *address, ioq_err *e);
void httpd_stop(struct httpd *h);
/* Prometheus text exposition (malloc'd). */
char *metrics_render(struct plugin *p);
/* /readyz: true when serving and registered; why says what is missing */
bool plugin_ready(struct plugin *p, char *why, size_t whysz);
bool plugin_live(struct plugin *p, char *why, size_t whysz);

#endif

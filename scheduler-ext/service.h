// SPDX-License-Identifier: Apache-2.0
/* The running extender: its parts wired together from the flags. */
#ifndef IOQOS_EXT_SERVICE_H
#define IOQOS_EXT_SERVICE_H

#include "flags.h"
#include "base/error.h"

struct ext_service;

/* Starts everything (API client, node cache, HTTP server). */
struct ext_service *ext_service_start(const struct ext_flags *f, ioq_err *e);
/* Periodic work of the main thread, every second or so: the summaries of
 * refusal log lines held back (refusal.h). */
void ext_service_tick(struct ext_service *s);
/* Graceful stop: no new connections, requests in progress finish within the
 * grace period, then everything is torn down and freed. */
void ext_service_stop(struct ext_service *s, unsigned grace_s);

#endif

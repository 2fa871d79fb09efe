// SPDX-License-Identifier: Apache-2.0
/* events.c: Kubernetes Events, posted off the RPC path. */
#ifndef IOQOS_PLUGIN_EVENTS_H
#define IOQOS_PLUGIN_EVENTS_H

#include <stddef.h>

struct plugin;
struct events;
struct json_object;

struct events *events_start(struct plugin *p);
void events_stop(struct events *ev);
/* Queues a Warning (or Normal) event on a pod (uid may be "") or, with ns
 * NULL, on the node. Never blocks; drops (and counts) when the queue is full. */
void events_post(struct events *ev, const char *ns, const char *name, const char *uid,
                 const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
/* The pod's recent events (at most max, newest first) as a JSON array of
 * {type, reason, message, count, first, last (CLOCK_REALTIME seconds),
 * dropped}; a repeat inside the minute it is not posted again is counted.
 * An empty array for NULL ev; NULL only when out of memory. */
struct json_object *events_recent_json(struct events *ev, const char *ns, const char *name,
                                       size_t max);

#endif

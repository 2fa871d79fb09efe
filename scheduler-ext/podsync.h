// SPDX-License-Identifier: Apache-2.0
/* Keeps assumed placements in step with the pods they stand for
 * (issue 12 item 3), on a thread of its own:
 *
 * - rebuild, once after start (when the node cache has synced): lists the
 *   bound pods (fieldSelector spec.nodeName!=, pages of 100, each charged to
 *   the parse budget) and assumes, for every pod that carries ioqos.io/disk,
 *   has not ended and is not yet in its node's annotation "pods", its units
 *   on that disk. Only nodes whose annotation has publishedAt count: an
 *   older plugin does not list pods, so nothing could tell its counted pods
 *   from the others. Binds are refused until the rebuild is done (a bind
 *   that did not see them could overcommit).
 * - sweep, every interval: GETs the pod of each placement older than a few
 *   seconds and drops the placement when the pod is gone (404, other UID),
 *   has ended (Succeeded, Failed), is bound to another node, or was never
 *   bound although its bind ended long ago.
 */
#ifndef IOQOS_EXT_PODSYNC_H
#define IOQOS_EXT_PODSYNC_H

#include <stdatomic.h>
#include <stdbool.h>

#include "extender.h"

struct ext_podsync;

/* interval_ms: sweep period (min_age_ms: placements younger than this are
 * left alone, their bind may still be running). */
struct ext_podsync *ext_podsync_start(struct extender *x, unsigned interval_ms,
                                      unsigned min_age_ms, ioq_err *e);
/* True once the rebuild is done (binds may proceed). */
bool ext_podsync_ready(struct ext_podsync *s);
void ext_podsync_stop(struct ext_podsync *s);

/* One sweep / the rebuild, for tests (the thread does both). */
void ext_podsync_sweep(struct extender *x, unsigned min_age_ms);
int ext_podsync_rebuild(struct extender *x, atomic_bool *stop, ioq_err *e);

#endif

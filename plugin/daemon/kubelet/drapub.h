// SPDX-License-Identifier: Apache-2.0
/* DRA mode: the node's ResourceSlice (ioq_dra_slice_build) kept in the API
 * server. A thread compares what the catalog offers with the slices of
 * this driver and node every second when the catalog changed, and at
 * least every DRAPUB_RESYNC_S: kubelet >= 1.34 deletes all slices of its
 * node when it starts, so a missing slice is created again. One slice is
 * kept (extra ones, e.g. of an earlier instance that died between create
 * and the next list, are deleted); pool.generation goes up by one whenever
 * the content changes (ioq_dra_slice_same_content: quantities by value) or
 * the owner is not this Node's UID. Stop keeps the slice: a restart or a
 * rollout must not close the node to new claims; kubelet deletes the slices
 * of a driver that stays gone for 30 s (docs/dra.md, Restarts). */
#ifndef IOQOS_PLUGIN_DRAPUB_H
#define IOQOS_PLUGIN_DRAPUB_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define DRAPUB_RESYNC_S 10

struct plugin;
struct drapub;

struct drapub *drapub_start(struct plugin *p, ioq_err *e);
void drapub_stop(struct drapub *d);
/* true once a slice with the current content is in the API server */
bool drapub_ready(struct drapub *d, char *why, size_t whysz);

#endif

// SPDX-License-Identifier: Apache-2.0
/* Placements this extender bound but the node's plugin has not reported yet.
 *
 * bind chooses a disk and records the pod's units against it; until the
 * node annotation lists the pod (its optional "pods" field), the pod ends
 * (deleted, Succeeded or Failed, bound elsewhere or never bound: podsync.c
 * checks placements older than a few seconds) or the node goes,
 * filter/prioritize/bind count those units as allocated on that disk.
 * There is no short TTL: a placement is what keeps the next pod off those
 * units, however long kubelet takes to admit the pod. A long safety bound
 * (--assume-ttl, default 1 h) remains for what nothing else ends: a
 * plugin too old to list pods, or an API server the sweep cannot reach.
 * Counting a placement twice (assumed + reported) only makes the extender
 * conservative; never counting it could put two pods on units that exist
 * once. After a restart podsync.c rebuilds placements from bound pods that
 * carry ioqos.io/disk but are not in their node's annotation yet.
 *
 * Binds to one node are serialised by a per-node lock (ext_assumed_lock_node)
 * held from choosing the disk to recording the placement, so concurrent binds
 * on one node see each other. Thread-safe.
 */
#ifndef IOQOS_EXT_ASSUMED_H
#define IOQOS_EXT_ASSUMED_H

#include <stdbool.h>
#include <stddef.h>

#include "grant/nodeanno.h" /* IOQ_POD_UID_STR_MAX */
#include <stdint.h>

#include "base/error.h"
#include "grant/placement.h"
#include "grant/podneed.h"

struct ext_assumed;
struct ext_node_lock;

/* ttl_ms: the safety bound on how long a placement counts. */
struct ext_assumed *ext_assumed_new(uint64_t ttl_ms);
void ext_assumed_free(struct ext_assumed *a);

/* Units assumed on each of `disks` of `node`: extra[i*IOQ_RES_COUNT + r]
 * (zeroed first), leaving out the placement of pod `self` (may be NULL): a
 * pod asking again, e.g. after a bind whose outcome was unknown, does not
 * compete with itself. Returns the number of live placements on the node. */
size_t ext_assumed_extra(struct ext_assumed *a, const char *node, const char *self,
                         const struct ioq_disk_state *disks, size_t n, uint64_t *extra);

/* Per-node bind lock. NULL only on OOM (with *e set). */
struct ext_node_lock *ext_assumed_lock_node(struct ext_assumed *a, const char *node, ioq_err *e);
void ext_assumed_unlock_node(struct ext_node_lock *l);

/* Records a placement (the caller holds the node's lock). A placement of the
 * same pod replaces the old one. */
int ext_assumed_add(struct ext_assumed *a, const char *node, const char *pod_uid,
                    const char *pod_key, const char *disk, const uint64_t *units, ioq_err *e);

/* Records a placement found after a restart (no bind lock needed: binds
 * are refused until the rebuild is done). */
int ext_assumed_restore(struct ext_assumed *a, const char *node, const char *pod_uid,
                        const char *pod_key, const char *disk, const uint64_t *units, ioq_err *e);

/* Forgets a placement (bind failed, or the pod ended). False if there was
 * none. */
bool ext_assumed_remove(struct ext_assumed *a, const char *node, const char *pod_uid);

/* A placement, as the sweep checks it against the API. */
struct ext_assumed_ref {
  char node[IOQ_NODE_NAME_MAX + 1];
  char uid[IOQ_POD_UID_MAX + 1];
  char key[IOQ_POD_NAMESPACE_MAX + IOQ_POD_NAME_MAX + 2]; /* namespace/name */
  uint64_t age_ms;
};

/* The placements recorded at least min_age_ms ago that are due for a check
 * (each is due again after a quarter of its age, at most a minute; this
 * call marks them checked). *out is malloc'd, freed by the caller;
 * (size_t)-1 on OOM. */
size_t ext_assumed_older(struct ext_assumed *a, uint64_t min_age_ms, struct ext_assumed_ref **out,
                         ioq_err *e);

/* The node's annotation now lists these pods: their placements are reported.
 * Returns how many placements were dropped. */
size_t ext_assumed_confirm(struct ext_assumed *a, const char *node,
                           const char (*pod_uids)[IOQ_POD_UID_STR_MAX + 1], size_t n);

/* The node is gone: forget its placements. */
void ext_assumed_forget_node(struct ext_assumed *a, const char *node);

/* Live placements over all nodes (expired ones are dropped first). */
size_t ext_assumed_count(struct ext_assumed *a);

/* For tests: the clock used for expiry (monotonic ms); NULL restores it. */
void ext_assumed_set_clock(struct ext_assumed *a, uint64_t (*now_ms)(void));

#endif

// SPDX-License-Identifier: Apache-2.0
/* Bounds for pods without a grant on disks where grants exist
 * (nodePolicy.ungranted): a thread that finds pod cgroups (inotify + every
 * interval), measures them and keeps each one's io.max share of the disk's
 * pool. See ungranted.c and grant/ungranted.h. */
#ifndef IOQOS_PLUGIN_UNGRANTED_H
#define IOQOS_PLUGIN_UNGRANTED_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/histogram.h"
#include "units/units.h"

struct plugin;
struct ungranted;

struct ungranted *ungranted_start(struct plugin *p, ioq_err *e);
/* A pass now, on the caller's thread (PreStart: the pool shrinks before the
 * grant is used). NULL-safe. */
void ungranted_sync(struct ungranted *u);
void ungranted_stop(struct ungranted *u);
void ungranted_free(struct ungranted *u);

struct ungranted_disk_stat {
  char disk[IOQ_DISK_NAME_MAX + 1];
  uint64_t pool_bps, pool_iops; /* 0 while nothing is bounded on the disk; lent included */
  uint64_t lent_bps, lent_iops; /* the idle part of grants in the pool now */
  size_t pods;                  /* pods bounded now */
};
struct ungranted_totals {
  uint64_t max_bytes_before;  /* most bytes a pod did before its bound */
  uint64_t reclaims;          /* lent capacity taken back between passes */
  struct ioq_histogram reclaim_s; /* their latency, bounds ungranted_reclaim_bounds() */
};
/* For /metrics. Returns how many disks were filled in. */
size_t ungranted_stats(struct ungranted *u, struct ungranted_disk_stat *out, size_t max,
                       struct ungranted_totals *t);
/* The bucket bounds of ungranted_totals.reclaim_s (seconds). */
const double *ungranted_reclaim_bounds(size_t *n);

/* For `ioqosctl explain`: the pod (by UID) as this module sees it, per
 * disk: whether bounds apply (a grant exists on it), the pool, the pod's
 * cap in place and its measured rate. {} for NULL u; NULL when out of
 * memory. */
struct json_object;
struct json_object *ungranted_pod_json(struct ungranted *u, const char *uid);

#endif

// SPDX-License-Identifier: Apache-2.0
/* Bounds for pods without a grant on disks where grants exist
 * (nodePolicy.ungranted): a thread that finds pod cgroups (inotify + every
 * interval), measures them and keeps each one's io.max share of the disk's
 * pool. See ungranted.c and grant/ungranted.h. */
#ifndef IOQOS_PLUGIN_UNGRANTED_H
#define IOQOS_PLUGIN_UNGRANTED_H

#include <limits.h>
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
  uint64_t burst_bps, burst_iops; /* granted pods' extra above their grants now (opt-in burst) */
  size_t bursting;              /* granted pods bursting now */
};
struct ungranted_totals {
  uint64_t max_bytes_before;  /* most bytes a pod did before its bound */
  uint64_t reclaims;          /* lent capacity taken back between passes */
  uint64_t owe_holds;         /* pods found owing the kernel: their io.max held (ungranted_owe.c) */
  size_t owing;               /* pods held now */
  struct ioq_histogram reclaim_s; /* their latency, bounds ungranted_reclaim_bounds() */
  size_t page_cache_bounded;  /* pods whose memory.high is ours now */
  uint64_t page_cache_writes; /* memory.high writes */
};
/* For /metrics. Returns how many disks were filled in. */
size_t ungranted_stats(struct ungranted *u, struct ungranted_disk_stat *out, size_t max,
                       struct ungranted_totals *t);
/* The bucket bounds of ungranted_totals.reclaim_s (seconds). */
const double *ungranted_reclaim_bounds(size_t *n);

/* For `ioqosctl explain` (observe/explain.c): a copy of the pod (by UID) as
 * this module sees it, per disk: whether bounds apply (a grant exists on
 * it), the pool and its parts, the pod's cap in place, its measured rate
 * and, for a granted pod, what it lends now. */
struct ungranted_disk_view {
  char disk[IOQ_DISK_NAME_MAX + 1];
  bool active;                           /* bounds apply (some pod holds units here) */
  uint64_t pool[IOQ_RES_COUNT];          /* 0 while not active; base + lent */
  uint64_t base_pool[IOQ_RES_COUNT];     /* what nobody holds */
  uint64_t lent[IOQ_RES_COUNT];          /* the idle part of grants in the pool */
  size_t bounded_pods;
  /* the pod's own, when pod_seen */
  bool granted, bounded;
  uint64_t cap[IOQ_RES_COUNT];           /* 0 while not bounded */
  double rate[IOQ_RES_COUNT];            /* measured; < 0 = not measured yet */
  uint64_t lends[IOQ_RES_COUNT];         /* granted and active: lent of its grant now */
  /* granted: the opt-in burst (nodePolicy.ungranted.burst) allowed, and
   * the extra above its grant in place */
  bool may_burst;
  uint64_t burst[IOQ_RES_COUNT];
  /* it owes the kernel: its io.max is held since owes_s seconds */
  bool owes;
  double owes_s;
};
struct ungranted_pod_view {
  bool pod_seen;
  char cgroup[PATH_MAX]; /* when pod_seen */
  /* the page cache bound (nodePolicy.ungranted.pageCacheBytes = room; 0:
   * off): memory.high of ours (0: none), and at the last pass, when
   * have_memory, what the pod held (bytes) */
  uint64_t page_cache_room, memory_high;
  bool have_memory;
  uint64_t pinned, page_cache, dirty, writeback;
  char page_cache_note[160]; /* why it is not bounded, when that is said */
  size_t n;
  struct ungranted_disk_view *disks; /* n of them, malloc'd */
};
/* Fills *out (free with ungranted_pod_view_free). An empty view (nothing
 * seen, no disks) for NULL u; -1 when out of memory. */
int ungranted_pod_view(struct ungranted *u, const char *uid, struct ungranted_pod_view *out);
void ungranted_pod_view_free(struct ungranted_pod_view *v);

#endif

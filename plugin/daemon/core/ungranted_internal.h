// SPDX-License-Identifier: Apache-2.0
/* The state of the module for pods without a grant, shared by its files
 * only: ungranted.c (the pass: pods, disks, pool; the stats; the thread),
 * ungranted_bound.c (the bounds: one pod's cgroup measured and capped, one
 * disk's pool split and written), ungranted_lend.c (lending the idle part
 * of grants, and taking it back between passes) and ungranted_memory.c (the
 * page cache bound: memory.high). Everything here is guarded
 * by ungranted.mu. */
#ifndef IOQOS_PLUGIN_UNGRANTED_INTERNAL_H
#define IOQOS_PLUGIN_UNGRANTED_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cgroup/cgwrite.h"
#include "config/config.h"
#include "base/histogram.h"
#include "cgroup/podcg.h"
#include "grant/grant.h"
#include "grant/ungranted.h"
#include "units/units.h"

#define UG_DISKS_MAX 16
/* a raise smaller than this share of the cap is not written (less churn);
 * a cut is written unless the caps fit the pool without it */
#define UG_HYSTERESIS 0.10

struct ug_slot { /* one pod on one disk */
  bool bounded;                  /* a cap of ours is in place */
  bool granted;                  /* a grant is in place on this disk */
  bool after_grant;              /* bounded again after a grant ended: its I/O was the grant's */
  uint64_t cap[IOQ_RES_COUNT];   /* in place (0 = none) */
  double rate[IOQ_RES_COUNT];    /* last interval; < 0 = not measured */
  bool have_sample;
  struct ioq_iostat last;        /* io.stat at last_t */
  double last_t;
  /* a granted slot as a lender (ungranted_lend.c): its grant per resource
   * and what it lends; fast_last/fast_t: io.stat at the last sample */
  uint64_t grant[IOQ_RES_COUNT];
  struct ioq_ug_lender lend[IOQ_RES_COUNT];
  struct ioq_iostat fast_last;
  double fast_t;
  bool have_fast;
  /* io.stat at the last timed pass: a lender's rate is over whole intervals */
  struct ioq_iostat lend_base;
  double lend_t;
  bool have_lend_base;
  /* a granted slot's opt-in burst (nodePolicy.ungranted.burst): allowed
   * now (policy, and the pod's annotation in "annotated" mode), and the
   * extra above its grant in place per resource (the pod table's, read at
   * every pass; podtable_set_burst writes it). burst_base: the limit the
   * extra goes on top of, the grant's io.max per resource as written (a
   * grant of IOPS units alone is capped in bandwidth too: that cap) */
  bool may_burst;
  uint64_t burst[IOQ_RES_COUNT];
  uint64_t burst_base[IOQ_RES_COUNT];
  /* the last io.max write of ours (a bound, or a burst on a grant): the
   * limits it put in place per resource and those it replaced (0: none),
   * io.stat just before it and when. A pod that did more since than they
   * allow owes the kernel and is not written again until it paid
   * (ioq_ug_owe_judge) */
  bool have_wr;
  double wr_t;
  struct ioq_iostat wr_stat;
  uint64_t wr_lim[IOQ_RES_COUNT], wr_prev[IOQ_RES_COUNT];
  struct ioq_ug_owe owe;
  /* owed at some point since the last io.stat read (owe_seen), and so over
   * the interval the rate was measured on (rate_void): that rate is the
   * kernel holding it, not its demand, and it counts as busy in the split
   * (else its release is a cut, and a cut of a busy pod can let it through
   * again) */
  bool owe_seen, rate_void;
};

struct ug_pod {
  struct ioq_pod_cgroup_entry cg;
  bool seen;
  bool adopted; /* io.max read once at first sight */
  /* as a lender (ungranted_lend.c): io.pressure "some" total (µs) at the
   * last whole interval and at the last sample, and whether the last whole
   * interval found it waiting on I/O or with writes queued in its page cache */
  uint64_t press_us, fpress_us;
  double press_t, fpress_t;
  bool have_press, have_fpress;
  bool stalled;
  /* the page cache bound (ungranted_memory.c): memory.high as we wrote it
   * (0: none of ours), the last reading, and why it is not bounded */
  uint64_t mem_high;
  bool mem_adopted;
  struct ioq_cg_memory mem;
  bool have_mem;
  char mem_note[160];
  struct ug_slot s[UG_DISKS_MAX];
};

struct ug_disk {
  char name[IOQ_DISK_NAME_MAX + 1];
  struct ioq_devno dev;
  bool active; /* some pod holds units here: bounds apply */
  uint64_t pool[IOQ_RES_COUNT];      /* split now: base_pool + lent */
  uint64_t base_pool[IOQ_RES_COUNT]; /* ioq_ug_pool's */
  uint64_t lent[IOQ_RES_COUNT];      /* the idle part of grants added to it */
  size_t bounded;
};

struct ungranted {
  struct plugin *p;
  pthread_mutex_t mu; /* one pass at a time; guards everything below */
  /* the config of the pass or sample in progress: the node pool's in force
   * when it began (plugin_cfg), one for all of it */
  const struct ioq_config *c;
  struct ug_pod *pods;
  size_t n, cap;
  struct ug_disk disks[UG_DISKS_MAX];
  size_t n_disks;
  uint64_t max_bytes_before;
  /* lending (nodePolicy.ungranted.lend) */
  uint64_t reclaims;
  /* pods found owing the kernel (ungranted_owe.c): times a hold began */
  uint64_t owe_holds;
  struct ioq_histogram reclaim_s;
  /* the page cache bound: pods bounded now, memory.high writes */
  size_t mem_bounded;
  uint64_t mem_writes; /* seconds, bounds ug_reclaim_bounds */
  char last_err[IOQ_ERR_MSG_MAX];
  /* the notes of this pass and the one before (several can hold at once,
   * e.g. two QoS cgroups missing): each is said when it first appears */
#define UG_NOTES_MAX 8
  char notes[UG_NOTES_MAX][IOQ_ERR_MSG_MAX], prev_notes[UG_NOTES_MAX][IOQ_ERR_MSG_MAX];
  size_t n_notes, n_prev_notes;
  /* thread */
  pthread_t thread;
  bool running;
  int ino; /* inotify fd */
  int wake[2];
};


#define UG_RECLAIM_BUCKETS 9
extern const double ug_reclaim_bounds[UG_RECLAIM_BUCKETS];

/* ungranted_bound.c: io.stat helpers, also used by ungranted_lend.c */
/* What a cgroup did between two io.stat reads (bytes and IOs, read and
 * write). Counters only grow; a smaller value is a new cgroup under the same
 * name: 0. */
struct ug_delta {
  double rb, wb, ri, wi;
};
struct ug_delta ug_iostat_delta(const struct ioq_iostat *from, const struct ioq_iostat *to);
/* The entry of io.stat (st, n entries) for dev; zeros when the cgroup did no
 * I/O there (io.stat has no line for it yet). */
struct ioq_iostat ug_iostat_of(const struct ioq_iostat *st, size_t n, struct ioq_devno dev);

/* ungranted_owe.c: the guard before a write of a bound or a burst. Reads
 * the pod's io.stat into *cur (*have_cur: it was read) and says whether the
 * pod owes the kernel (ioq_ug_owe_judge against our last write): then the write
 * is held. Logs when a hold begins and ends. */
bool ug_owe_hold(struct ungranted *u, struct ug_pod *pp, size_t d, const struct ioq_cg *cg, double now,
                 struct ioq_iostat *cur, bool *have_cur);
/* After a write: the limits now in place per resource and those it replaced
 * (0: none), and io.stat just before it (NULL: not read; the next write is
 * not judged). */
void ug_owe_wrote(struct ug_slot *s, double now, const struct ioq_iostat *before,
                  const uint64_t lim[IOQ_RES_COUNT], const uint64_t prev[IOQ_RES_COUNT]);

/* ungranted.c */
void ug_failed(struct ungranted *u, const ioq_err *e);
/* Says msg (info) when it first appears, not again while it holds. Not an
 * error: e.g. no QoS cgroup yet. */
void ug_note(struct ungranted *u, const char *msg);

/* ungranted_bound.c */
/* Reads the pod's io.stat once per pass and turns it into rates per disk. */
void ug_measure(struct ungranted *u, struct ug_pod *pp, double now);
/* A grant's io.max per resource (0: none in that resource, or no grant). */
void ug_grant_of(struct ungranted *u, const struct ioq_disk_grant *dg,
                 uint64_t out[IOQ_RES_COUNT]);
/* The caps already in io.max of a pod seen for the first time. */
void ug_adopt(struct ungranted *u, struct ug_pod *pp);
/* Lifts every bound of ours on disk d (its last grant went: why). */
void ug_lift_all(struct ungranted *u, size_t d, const char *why);
/* Re-splits disk d's pool among the pods without a grant there and the
 * granted pods that may burst, and writes the caps: bursts cut first, then
 * cuts, then new bounds, then raises, bursts raised last. */
void ug_balance_disk(struct ungranted *u, size_t d);
/* Takes every burst on disk d back (bounds no longer apply there: why). */
void ug_end_bursts(struct ungranted *u, size_t d, const char *why);

/* ungranted_lend.c */
/* At a pass, before ug_lend_pass: for each pod with a grant, whether it
 * waited on I/O or has writes queued in its page cache over the last whole
 * interval (it then keeps its grant). */
void ug_lend_pods(struct ungranted *u, double now);
/* At a pass, after measuring: each granted slot of active disk d lends what
 * it does not use; sets the disk's lent and pool (base_pool + lent). */
void ug_lend_pass(struct ungranted *u, size_t d);
/* True while something is lent on some disk (the thread then samples). */
bool ug_lending(const struct ungranted *u);
/* A sample between passes: lenders' io.stat; on a wake-up the pool of
 * that disk is cut at once. Takes the podtable writes lock itself. */
void ug_lend_sample(struct ungranted *u);

/* ungranted_memory.c */
/* After the bounds of a pass: memory.high of each pod bounded on some disk
 * and granted on none follows its pinned memory plus pageCacheBytes; ours is
 * lifted from the others. may_reclaim false (a PreStart waits): a value
 * below a pod's usage, which makes the kernel reclaim before the write
 * returns, is left to the thread's next pass. */
void ug_memory_pass(struct ungranted *u, bool may_reclaim);

#endif

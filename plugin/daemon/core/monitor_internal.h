// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's state (monitor.h), shared by the files of the one
 * monitor split for size: monitor.c (the thread and its lifecycle),
 * monitor_state.c (the per-pod and per-disk tables and their snapshot),
 * monitor_events.c (the Events and their log lines) and monitor_pass.c (one
 * pass). Nothing outside them reads it: observe/ uses monitor_snapshot. */
#ifndef IOQOS_PLUGIN_MONITOR_INTERNAL_H
#define IOQOS_PLUGIN_MONITOR_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "state/catalog.h"
#include "podtable.h"
#include "grant/grantmon.h"
#include "monitor.h"

#define MON_DISKS 256 /* config devices[] holds at most 256 */

struct mon_slot { /* one pod on one disk */
  char disk[IOQ_DISK_NAME_MAX + 1];
  struct ioq_devno dev;
  struct ioq_io_limits grant;
  bool have_prev;
  struct ioq_gm_counters prev;
  double prev_t;
  bool have_rates;
  struct ioq_gm_rates rates;
  double interval_s;
  enum monitor_verdict verdict;
  struct ioq_gm_track track;
  struct monitor_hist hist[MONITOR_HISTORY]; /* a ring: hnext the next to write */
  size_t nhist, hnext;
};

struct mon_pod {
  char ns[IOQ_POD_NAMESPACE_MAX + 1], name[IOQ_POD_NAME_MAX + 1], uid[IOQ_POD_UID_MAX + 1];
  char cgroup[PATH_MAX];
  enum ioq_cg_version version;
  struct mon_slot *s;
  size_t n;
  struct ioq_gm_ratelimit rl;
  struct monitor_event ev[MONITOR_EVENTS]; /* a ring: evnext the next to write */
  size_t nev, evnext;
  bool seen;
  char last_err[IOQ_ERR_MSG_MAX];
};

struct mon_disk {
  char name[IOQ_DISK_NAME_MAX + 1];
  char class_name[64];
  struct ioq_devno dev;
  bool have_prev;
  struct ioq_gm_dstat prev;
  double prev_t;
  struct ioq_gm_disk cur;
  enum ioq_gm_contention cont;
  enum ioq_gm_cause cause;
  struct ioq_gm_track track; /* "starved" here = under-delivers */
  struct ioq_gm_ratelimit rl;
  double verdict_s[MON_VERDICTS]; /* pod-seconds per verdict */
  bool seen;
  char last_err[IOQ_ERR_MSG_MAX];
};

struct monitor {
  struct plugin *p;
  pthread_mutex_t mu; /* one pass at a time; guards the state below */
  struct mon_pod *pods;
  size_t n, cap;
  struct mon_disk disks[MON_DISKS];
  size_t n_disks;
  /* the monitor section of the pass in progress: the node pool's in force
   * when it began (plugin_cfg), one for the whole pass */
  unsigned interval_s, window_s, event_interval_s;
  /* cost */
  uint64_t passes, read_fail;
  double last_pass_s, cpu_s;
  uint64_t events[MONITOR_EV_KINDS], suppressed[MONITOR_EV_KINDS];
  /* hook (its own lock: it is called outside mu) */
  pthread_mutex_t hook_mu;
  monitor_hook_fn hook;
  void *hook_ud;
  /* thread */
  pthread_t thread;
  bool running;
  int wake[2];
};

static inline double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- monitor_state.c: the tables (callers hold mu) ---- */
/* Starts a pass: every pod and disk unseen, then the catalog's disks taken
 * (seen, capacity and class brought up to date). */
void mon_tables_start(struct monitor *m, const struct cat_disk *cd, size_t ncd);
/* The pod's entry, made to match the applied pod and marked seen (NULL: out
 * of memory). */
struct mon_pod *mon_sync_pod(struct monitor *m, const struct applied_pod *ap,
                             const struct ioq_unit_sizes *u);
struct mon_disk *mon_find_disk(struct monitor *m, const char *name);
/* Ends a pass: the pods not seen in it (no grant now) are forgotten, and
 * their series go. */
void mon_tables_forget(struct monitor *m);

/* ---- monitor_events.c: the Events (callers hold mu) ---- */
void mon_not_met(struct monitor *m, struct mon_pod *pp, struct mon_slot *s, struct mon_disk *d);
void mon_met(struct monitor *m, struct mon_pod *pp, struct mon_slot *s, double starved_s);
void mon_disk_under(struct monitor *m, struct mon_disk *d, double grants_wanting);

/* ---- monitor_pass.c: one pass ---- */
/* Reads and classifies; fills *out (malloc'd) with this interval's samples.
 * The caller holds mu. */
size_t mon_pass_locked(struct monitor *m, struct monitor_sample **out);

#endif

// SPDX-License-Identifier: Apache-2.0
/* The grant monitor: is every grant being kept?
 *
 * A thread that, every monitor.intervalSeconds, takes the applied pods
 * (podtable_snapshot), reads ONE io.stat and ONE io.pressure per granted pod
 * (v1: blkio.throttle.io_service_bytes/io_serviced_recursive, stall unknown)
 * and one /sys/class/block/DEV/stat per granted disk, and classifies each pod
 * x disk interval as idle / within / at-cap / starved (the rule and its
 * thresholds: grant/grantmon.h and docs/enforcement.md "Is the grant kept").
 * A pod starved for monitor.starvedWindowSeconds gets a Warning Event
 * IoqosGrantNotMet (rate-limited per pod: monitor.eventIntervalSeconds) and a
 * Normal IoqosGrantMet when it recovers; a disk whose starved pods point to
 * its capacity being too high gets a Warning IoqosDiskUnderDelivers on the
 * Node. Cost: no per-I/O work, a few small file reads per pod per interval.
 * Thread-safe; the samples of one interval go to one hook. /metrics and
 * explain read the monitor's state through monitor_snapshot. */
#ifndef IOQOS_PLUGIN_MONITOR_H
#define IOQOS_PLUGIN_MONITOR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup/cglayout.h"
#include "base/error.h"
#include "grant/grantmon.h"
#include "units/iolimit.h"
#include "grant/podneed.h"
#include "units/units.h"

struct plugin;
struct monitor;

enum monitor_verdict { MON_UNKNOWN = 0, MON_IDLE, MON_WITHIN, MON_AT_CAP, MON_STARVED };
#define MON_VERDICTS 5
const char *monitor_verdict_name(enum monitor_verdict v); /* "idle", "within", "at-cap", "starved", "unknown" */

struct monitor_sample { /* one granted pod x disk, one interval */
  char ns[IOQ_POD_NAMESPACE_MAX + 1], name[IOQ_POD_NAME_MAX + 1], uid[IOQ_POD_UID_MAX + 1];
  char cgroup[PATH_MAX];
  enum ioq_cg_version version;
  char disk[IOQ_DISK_NAME_MAX + 1]; /* the catalog's disk name */
  struct ioq_devno dev;             /* the throttled device */
  struct ioq_io_limits grant;       /* the grant's io.max values (ioq_grant_limits) */
  double interval_s;
  double rbps, wbps, riops, wiops; /* achieved over the interval */
  double stall;                    /* io.pressure "some" share of the interval, 0..1; < 0 unknown */
  enum monitor_verdict verdict;
};

/* Called on the monitor thread after each interval with every sample of that
 * interval (the combined-direction re-split of item 3 registers here). One
 * hook; NULL removes it. */
/* Only samples with a rate are passed (an interval of a pod that is new, whose
 * counters went back or whose files could not be read is left out: no rate is
 * better than a false 0). The hook must not call monitor_set_hook. */
typedef void (*monitor_hook_fn)(void *ud, const struct monitor_sample *s, size_t n);
void monitor_set_hook(struct monitor *m, monitor_hook_fn fn, void *ud);

/* ---- lifecycle (main.c) ---- */
/* Starts the thread (monitor.enable); NULL + *e on failure. */
struct monitor *monitor_start(struct plugin *p, ioq_err *e);
/* Ends the thread; NULL-safe. The hook is not called after it returns. */
void monitor_stop(struct monitor *m);
void monitor_free(struct monitor *m);

/* One pass now on the caller's thread (tests, and the thread's own tick). */
void monitor_pass(struct monitor *m);

/* ---- snapshot (observe/: /metrics and `ioqosctl explain` read it) ---- */

#define MONITOR_HISTORY 16 /* intervals kept per pod and disk */
#define MONITOR_EVENTS 8   /* Events kept per pod */

enum monitor_event_kind {
  MONITOR_EV_NOT_MET = 0, MONITOR_EV_MET, MONITOR_EV_DISK,
  MONITOR_EV_KINDS
};
/* "IoqosGrantNotMet", "IoqosGrantMet", "IoqosDiskUnderDelivers" */
const char *monitor_event_reason(enum monitor_event_kind k);

struct monitor_hist { /* one interval of a pod on a disk */
  double wall;        /* end of the interval, seconds since the epoch */
  enum monitor_verdict verdict;
  struct ioq_gm_rates rates;
};

struct monitor_event { /* one Event the monitor posted on a pod */
  double wall;
  char type[16], reason[32], message[768];
};

struct monitor_snap_slot { /* one pod on one disk */
  char disk[IOQ_DISK_NAME_MAX + 1];
  struct ioq_devno dev;
  struct ioq_io_limits grant; /* the grant's io.max values (ioq_grant_limits) */
  enum monitor_verdict verdict;
  double verdict_since, starved_since; /* ioq_mono_s() clock; 0: never, none */
  bool have_rates;                     /* rates and interval_s are the last interval's */
  struct ioq_gm_rates rates;
  double interval_s;
  struct monitor_hist hist[MONITOR_HISTORY]; /* oldest first */
  size_t nhist;
};

struct monitor_snap_pod {
  char ns[IOQ_POD_NAMESPACE_MAX + 1], name[IOQ_POD_NAME_MAX + 1], uid[IOQ_POD_UID_MAX + 1];
  char cgroup[PATH_MAX];
  struct monitor_snap_slot *slots; /* one per grant disk */
  size_t n;
  struct monitor_event events[MONITOR_EVENTS]; /* oldest first */
  size_t nevents;
  uint64_t events_suppressed; /* IoqosGrantNotMet not posted (rate limit) */
};

struct monitor_snap_disk { /* a managed disk */
  char name[IOQ_DISK_NAME_MAX + 1];
  char class_name[64];
  bool seen;              /* in the catalog at the last pass */
  struct ioq_gm_disk cur; /* the last interval; cur.known: it was measured */
  enum ioq_gm_contention cont;
  enum ioq_gm_cause cause;
  double verdict_s[MON_VERDICTS]; /* pod-seconds per verdict */
};

struct monitor_snap {
  double mono, wall; /* when it was taken: ioq_mono_s(), seconds since the epoch */
  struct monitor_snap_pod *pods;
  size_t n_pods;
  struct monitor_snap_disk *disks;
  size_t n_disks;
  /* the monitor's cost and Events */
  uint64_t passes, read_fail;
  double last_pass_s, cpu_s;
  uint64_t events[MONITOR_EV_KINDS], suppressed[MONITOR_EV_KINDS];
};

/* A copy of the monitor's state taken under its lock, in its order: every
 * monitored pod (uid NULL) or only the pod `uid` (n_pods 0 when it is not
 * monitored), and every disk. NULL + *e when the monitor is off (m NULL:
 * IOQ_EUNSUPPORTED) or out of memory. Free with monitor_snapshot_free
 * (NULL-safe). */
struct monitor_snap *monitor_snapshot(struct monitor *m, const char *uid, ioq_err *e);
void monitor_snapshot_free(struct monitor_snap *s);

#endif

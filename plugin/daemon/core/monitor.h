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
 * Thread-safe; the samples of one interval go to one hook. */
#ifndef IOQOS_PLUGIN_MONITOR_H
#define IOQOS_PLUGIN_MONITOR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cgroup/cglayout.h"
#include "base/error.h"
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

#endif

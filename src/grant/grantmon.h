// SPDX-License-Identifier: Apache-2.0
/* Is a grant being kept? The pure logic of the plugin's grant monitor
 * (plugin/daemon/core/monitor.c reads the files and posts the Events): rates from
 * two successive counter samples, the interval classifier, the sustained
 * window / recovery state machine and the Event rate limiter.
 *
 * Inputs per interval (one read each, no per-I/O work):
 *  - per granted pod and disk: io.stat (v1: blkio.throttle.io_service_bytes
 *    and io_serviced) and io.pressure "some" total (v2 only; v1: unknown);
 *  - per disk: /sys/class/block/DEV/stat of the throttled device (what the
 *    disk delivered to everyone, its busy time and its queue).
 *
 * The classifier (ioq_gm_classify), in this order:
 *  unknown  no rate this interval (first sample, a counter went backwards:
 *           the cgroup was re-created or the counters reset, file missing);
 *  at-cap   achieved >= IOQ_GM_AT_CAP x the io.max value in some direction
 *           and resource: demand reaches the grant, the pod is limited as
 *           intended;
 *  idle     less than IOQ_GM_IDLE_BPS and IOQ_GM_IDLE_IOPS and stall below
 *           IOQ_GM_STALL_MIN (or unknown);
 *  starved  below the grant everywhere, wanting more, AND the disk is
 *           contended (ioq_gm_disk_contended). Wanting more: stalled
 *           (io.pressure some >= IOQ_GM_STALL_MIN of the interval), or, as
 *           PSI counts only tasks blocked in synchronous I/O (a pod waiting
 *           on libaio / io_uring completions shows no stall however starved:
 *           measured in the VM, fio libaio writers held at 0.6 of their grant
 *           had none), busy: >= IOQ_GM_BUSY of the grant in some direction
 *           and resource; v1 (no stall figure): not idle;
 *  within   anything else: below the grant and the disk has room, so what
 *           holds the pod back is the pod itself (its queue depth, its CPU,
 *           its pacing), not the disk.
 *
 * Why the disk evidence: a closed-loop QD1 reader is in iowait nearly all of
 * the time even alone on a fast disk, so "below its grant while stalled"
 * alone would call every latency-bound pod starved (the benchmark's db, IOPS
 * bound under a bandwidth grant, is exactly that). A grant is broken only
 * when the disk cannot give the pod more because something else has it. The
 * disk is contended when either
 *  - full: it delivers >= IOQ_GM_DISK_FULL of its capacity (the capacity the
 *    units are sold from: configured, calibrated or io.cost.model), bytes or
 *    IOs, read + write together, to all cgroups; a disk whose grants are
 *    kept runs at most at the allocatable fraction (0.8) plus the share
 *    given to pods without a grant (half the rest by default: 0.9), so the
 *    threshold sits above what kept grants can produce; or
 *  - backlogged: the device was busy >= IOQ_GM_DISK_BUSY of the interval
 *    with >= IOQ_GM_DISK_QUEUE requests in flight on average (time_in_queue)
 *    while it delivered less than full: it is saturated below the capacity
 *    it was sold for. A lone closed-loop QD1 job keeps about one request in
 *    flight, well below the queue threshold.
 *
 * The most likely cause (ioq_gm_cause) of a starved interval on a disk:
 *  ungranted  cgroups without a grant on the disk (delivered minus what the
 *             granted pods achieved) took >= IOQ_GM_OTHERS of its capacity;
 *  oversold   the grants on the disk sum above its capacity, or the granted
 *             pods together achieved more than their grants sum to (a
 *             bandwidth grant B allows B reads and B writes: capacity was
 *             counted once);
 *  capacity   else: the disk delivers less than the grants it was sold
 *             for want (capacity too high: recalibrate).
 *
 * The window (ioq_gm_track_step): IoqosGrantNotMet after the pod was starved
 * for `window` seconds, where intervals with another verdict shorter than
 * `recover` do not break the stretch (a noisy interval does not restart the
 * clock); recovered (IoqosGrantMet) after `recover` seconds without a starved
 * interval, only if the Warning was posted. Unknown intervals change
 * nothing. */
#ifndef IOQOS_GRANTMON_H
#define IOQOS_GRANTMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "units/iolimit.h"

#define IOQ_GM_AT_CAP 0.90
#define IOQ_GM_IDLE_BPS 65536.0
#define IOQ_GM_IDLE_IOPS 1.0
#define IOQ_GM_STALL_MIN 0.10
#define IOQ_GM_BUSY 0.25
#define IOQ_GM_DISK_FULL 0.95
#define IOQ_GM_DISK_BUSY 0.95
#define IOQ_GM_DISK_QUEUE 8.0
#define IOQ_GM_OTHERS 0.10

/* the same order as the plugin's enum monitor_verdict */
enum ioq_gm_verdict { IOQ_GM_UNKNOWN = 0, IOQ_GM_IDLE, IOQ_GM_WITHIN, IOQ_GM_AT_CAP_V, IOQ_GM_STARVED };

/* ---- rates ---- */

/* One sample of a pod's counters on one disk. */
struct ioq_gm_counters {
  uint64_t rbytes, wbytes, rios, wios;
  bool have_stall;   /* io.pressure read (v2 with PSI) */
  uint64_t stall_us; /* io.pressure some total= */
};

struct ioq_gm_rates {
  double rbps, wbps, riops, wiops;
  double stall; /* share of the interval, 0..1; < 0 unknown */
};

/* Rates between two samples `dt` seconds apart. Fails (IOQ_EINVAL_INPUT)
 * when dt <= 0 or a counter went backwards (cgroup re-created, counters
 * reset): the caller starts again from `cur`. */
int ioq_gm_rates(const struct ioq_gm_counters *prev, const struct ioq_gm_counters *cur, double dt,
                 struct ioq_gm_rates *out, ioq_err *e);

struct ioq_cg;
/* One sample of cgroup `cg` on each of the `n` devices `dev` (one io.stat
 * read, one io.pressure read: the stall is the pod's, the same for every
 * device): a device without a line in io.stat had no I/O yet (zeros);
 * io.pressure missing, v1 or no PSI: have_stall false. Fails when the I/O
 * statistics cannot be read (cgroup gone). */
int ioq_gm_read_counters(const struct ioq_cg *cg, const struct ioq_devno *dev, size_t n,
                         struct ioq_gm_counters *out, ioq_err *e);

/* ---- the disk ---- */

/* /sys/class/block/DEV/stat (Documentation/block/stat.rst), the fields used. */
struct ioq_gm_dstat {
  uint64_t rios, rsect, wios, wsect, io_ticks_ms, queue_ms;
};
int ioq_gm_dstat_parse(const char *content, struct ioq_gm_dstat *out, ioq_err *e);
/* Reads SYSFS/class/block/NAME/stat (sysfs NULL = "/sys"). */
int ioq_gm_dstat_read(const char *sysfs, const char *name, struct ioq_gm_dstat *out, ioq_err *e);

struct ioq_gm_disk_rates {
  double bps, iops; /* delivered to everyone, read + write */
  double busy;      /* share of the interval with I/O in flight, 0..1 */
  double queue;     /* average requests in flight */
};
int ioq_gm_disk_rates(const struct ioq_gm_dstat *prev, const struct ioq_gm_dstat *cur, double dt,
                      struct ioq_gm_disk_rates *out, ioq_err *e);

/* One disk in one interval. */
struct ioq_gm_disk {
  double cap_bps, cap_iops; /* the capacity units are sold from; 0 = unknown */
  bool known;               /* `got` is valid */
  struct ioq_gm_disk_rates got;
  double granted_bps, granted_iops; /* achieved by the granted pods, read + write */
  double grants_bps, grants_iops;   /* sum of the grants (one direction's io.max) */
};

enum ioq_gm_contention { IOQ_GM_ROOM = 0, IOQ_GM_FULL, IOQ_GM_BACKLOG };
enum ioq_gm_contention ioq_gm_disk_contended(const struct ioq_gm_disk *d);
/* The larger of delivered / capacity in bytes and in IOs (0 when unknown). */
double ioq_gm_disk_load(const struct ioq_gm_disk *d);

enum ioq_gm_cause { IOQ_GM_CAUSE_NONE = 0, IOQ_GM_CAUSE_UNGRANTED, IOQ_GM_CAUSE_OVERSOLD,
                    IOQ_GM_CAUSE_CAPACITY };
enum ioq_gm_cause ioq_gm_cause(const struct ioq_gm_disk *d);
/* "ungranted", "oversold", "capacity", "none" */
const char *ioq_gm_cause_name(enum ioq_gm_cause c);
/* One sentence for the Event and the log. */
const char *ioq_gm_cause_text(enum ioq_gm_cause c);

/* ---- the classifier ---- */

/* `r` NULL = no rate this interval. */
enum ioq_gm_verdict ioq_gm_classify(const struct ioq_io_limits *grant, const struct ioq_gm_rates *r,
                                    enum ioq_gm_contention disk);

/* ---- window and rate limit ---- */

struct ioq_gm_track {
  enum ioq_gm_verdict verdict; /* of the last interval */
  double verdict_since;        /* when the current verdict started (0 = never set) */
  double starved_since;        /* start of the starved stretch; 0 = none */
  double last_starved;         /* end of the last starved interval */
  bool alerted;                /* the window was reached in this stretch */
  bool posted;                 /* ... and IoqosGrantNotMet was posted (not declined) */
};
enum ioq_gm_action { IOQ_GM_NOTHING = 0, IOQ_GM_NOT_MET, IOQ_GM_MET };
/* One interval [now - dt, now] classified `v`. Returns NOT_MET once per
 * starved stretch of `window` seconds, MET when such a stretch ends (no
 * starved interval for `recover` seconds). The caller may decline a NOT_MET
 * (rate limit): then ioq_gm_track_declined, and no MET follows. */
enum ioq_gm_action ioq_gm_track_step(struct ioq_gm_track *t, enum ioq_gm_verdict v, double now,
                                     double dt, double window, double recover);
void ioq_gm_track_declined(struct ioq_gm_track *t);

/* At most one event per `min_interval` seconds. */
struct ioq_gm_ratelimit {
  double last;
  bool any;
  uint64_t suppressed;
};
bool ioq_gm_ratelimit_allow(struct ioq_gm_ratelimit *rl, double now, double min_interval);

#endif

// SPDX-License-Identifier: Apache-2.0
/* Combined-direction grants: splits one grant between reads and writes from
 * the pod's recent demand, so that read + write never exceeds the grant.
 * Pure functions, no state and no filesystem access (the plugin keeps the
 * current split with the pod and feeds each interval's achieved rates).
 *
 * A grant of G (bytes/s or IOPS) is written by default as rbps=G wbps=G, so
 * a pod doing both at once may use 2G. With the split, each interval:
 *   - a direction is "at its cap" when it achieved >= DIRSPLIT_AT_CAP of its
 *     current limit (>= DIRSPLIT_AT_FLOOR when the limit is the floor: at a
 *     few large I/Os per interval the count is coarse, and a pod that
 *     switched direction must be seen): its demand is unknown (at least the
 *     limit). The margin below 1 absorbs what one interval's count misses
 *     (an I/O in flight at its end; blk-throttle's slices); measured in the
 *     VM, a capped direction shows 0.75-0.98 of its limit per 1 s interval;
 *     otherwise its demand is what it achieved x (1 + DIRSPLIT_HEADROOM);
 *   - G is shared max-min fairly between the two demands: both fit, each
 *     gets its demand plus half of what is left; else the smaller demand
 *     (when below G/2) is met and the other direction gets the rest; both
 *     at least G/2 (or unknown): G/2 each;
 *   - each direction keeps a floor (floor_frac x G, at least the kernel's
 *     minimum), so a pod that switches direction is never shut out: the
 *     direction it switches to is at its cap (the floor) in the next
 *     interval and gets all but the other's floor in the one after.
 * The headroom is larger than 1/DIRSPLIT_AT_CAP - 1, so a direction that
 * achieves its demand is not taken as at its cap the next interval (no
 * oscillation: a direction that flips between "at its cap" and not makes
 * io.max be rewritten every interval, and each write restarts blk-throttle's
 * slices, which costs throughput). A change smaller than DIRSPLIT_HYSTERESIS x G in both
 * directions is not made (no rewrite of io.max for noise), unless the
 * current limits break r + w <= G (the full-grant split after a start or a
 * grant change) or the new split puts one direction on its floor (a pod
 * using one direction gets all of G but the floor, not 4 % less).
 *
 * Damping (with the caller's memory): a direction that was at its cap in one of
 * the last DIRSPLIT_DAMP_INTERVALS intervals and is not now keeps at least its
 * fair half G/2 (or its current limit, if less). A bursty writer whose I/O
 * hardly comes through in one interval is not dropped to the floor and
 * raised again in the next: measured on 6.1, that flip every interval let
 * 2.6 x G through, each io.max rewrite restarting blk-throttle's slices. The
 * price: a pod that switches from one direction to the other gets G/2 for
 * the new one at once, and all but the floor DIRSPLIT_DAMP_INTERVALS
 * intervals after the old one went quiet.
 *
 * A resource without a grant (0: no limit) stays unlimited; a grant too small
 * to split (G < 2 x the kernel minimum) keeps the full-grant split. */
#ifndef IOQOS_DIRSPLIT_H
#define IOQOS_DIRSPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "units/iolimit.h"

#define DIRSPLIT_AT_CAP 0.8
#define DIRSPLIT_AT_FLOOR 0.5
#define DIRSPLIT_HEADROOM 0.35
#define DIRSPLIT_HYSTERESIS 0.04
#define DIRSPLIT_FLOOR_DEFAULT IOQ_COMBINED_FLOOR_DEFAULT /* of the grant, per direction */
#define DIRSPLIT_DAMP_INTERVALS 3

/* One resource (bytes/s or IOPS). */
struct dirsplit_pair {
  uint64_t grant;       /* G; 0 = no limit */
  uint64_t cur_r, cur_w; /* limits in place (0 = none: taken as G) */
  double ach_r, ach_w;  /* achieved over the last interval, same unit; < 0 unknown */
};

/* What the rule keeps of one pod's grant on one disk between intervals (the
 * caller holds it, zeroed at first): per direction (IOQ_RBPS..IOQ_WIOPS), the
 * intervals it is still damped for. */
struct dirsplit_memory {
  uint8_t damp[IOQ_LIMIT_KEYS];
};

/* New limits for one resource into *r, *w (r + w <= grant, each >= the
 * floor). Returns true when they differ from the current ones enough to be
 * written. floor_frac in [0, 0.5). mem: {read, write} damping memory,
 * updated (NULL: no damping). */
bool ioq_dirsplit_pair(const struct dirsplit_pair *p, double floor_frac, uint8_t mem[2],
                       uint64_t *r, uint64_t *w);

/* Both resources of a pod's grant on one disk. `grant` is the full-grant
 * split (rbps == wbps == G, riops == wiops); `cur` what is in place;
 * achieved[IOQ_RBPS..IOQ_WIOPS] the interval's rates (< 0 unknown: that
 * resource is left as it is); mem: the damping memory (NULL: none). Returns
 * true if *out should be written. */
bool ioq_dirsplit_limits(const struct ioq_io_limits *grant, const struct ioq_io_limits *cur,
                         const double achieved[IOQ_LIMIT_KEYS], double floor_frac,
                         struct dirsplit_memory *mem, struct ioq_io_limits *out);

/* true if l is a valid split of grant: each resource either the full grant
 * split or r + w <= G (used to tell a re-split from drift) */
bool ioq_dirsplit_valid(const struct ioq_io_limits *grant, const struct ioq_io_limits *l);

#endif

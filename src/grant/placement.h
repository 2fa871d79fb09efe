// SPDX-License-Identifier: Apache-2.0
/* The one placement function, shared by the scheduler extender (filter,
 * prioritize, bind) and the device plugin (GetPreferredAllocation).
 *
 * A pod needs N units of each ioqos resource, all from ONE disk of its
 * class. A disk fits when it is healthy, in the class, and has at least the
 * needed free units of every requested resource at once.
 *
 * Score (0..10, higher is better) of a fitting disk, over the requested
 * resources r, with f_r = (allocated_r + need_r) / capacity_r after placing:
 *   least-allocated: round(10 * (1 - mean f_r))      spread load
 *   most-allocated:  round(10 * mean f_r)            pack disks
 *   balanced:        round(10 * (1 - |f_bw - f_iops|)) with both resources,
 *                    least-allocated otherwise
 * The chosen disk is the highest score; ties go to more free units of the
 * first requested resource, then the lower name, so the choice is stable.
 */
#ifndef IOQOS_PLACEMENT_H
#define IOQOS_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup/caps.h" /* IOQ_CAP_*, which placement filters on */
#include "config/config.h"
#include "units/units.h"

#define IOQ_DEV_STR_MAX 24 /* "MAJ:MIN" */

/* One disk as the scheduler sees it (units are advertised units). */
struct ioq_disk_state {
  char name[IOQ_DISK_NAME_MAX + 1];
  char dev[IOQ_DEV_STR_MAX];
  char class_name[IOQ_CLASS_NAME_MAX + 1];
  bool healthy;
  uint64_t capacity[IOQ_RES_COUNT];
  uint64_t allocated[IOQ_RES_COUNT];
  unsigned caps; /* IOQ_CAP_* */
  /* what pods without a grant share on the disk now, bytes/s and IOPS
   * (ungranted.h); 0 = not bounded. Informational: placement ignores it. */
  uint64_t ungranted_pool[IOQ_RES_COUNT];
  /* why the disk is unhealthy ("" when healthy); the plugin publishes it in
   * the node annotation for people, placement and the parser ignore it */
  char reason[256];
};

struct ioq_need {
  uint64_t units[IOQ_RES_COUNT]; /* 0 = resource not requested */
  const char *class_name;        /* NULL = IOQ_DEFAULT_CLASS */
};

struct ioq_choice {
  int disk;         /* index of the chosen disk, -1 if none fits */
  int score;        /* 0..10 */
  char reason[256]; /* when nothing fits: why, e.g. "no disk in class fast has
                       200 free bandwidth units; best: nvme1n1 with 120" */
};

/* Places `need` on one of `disks`. `extra` (may be NULL) holds n*IOQ_RES_COUNT
 * additional allocated units per disk (placements assumed but not yet
 * reported). Returns 1 if a disk fits (out->disk, out->score), 0 if none. */
int ioq_place(const struct ioq_disk_state *disks, size_t n, const uint64_t *extra,
              const struct ioq_need *need, enum ioq_policy policy, struct ioq_choice *out);

/* Whether one disk fits `need`; when it does, *score gets its score (0..10). */
bool ioq_disk_score(const struct ioq_disk_state *d, const uint64_t *extra_units,
                    const struct ioq_need *need, enum ioq_policy policy, int *score);

#endif

// SPDX-License-Identifier: Apache-2.0
#include "grant/placement.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *need_class(const struct ioq_need *need) {
  return need->class_name && *need->class_name ? need->class_name : IOQ_DEFAULT_CLASS;
}

static uint64_t extra_at(const uint64_t *extra, int r) { return extra ? extra[r] : 0; }

/* free units of resource r, never negative (the annotation may briefly report
 * more allocated than capacity after a capacity change) */
static uint64_t free_units(const struct ioq_disk_state *d, const uint64_t *extra, int r) {
  uint64_t used = d->allocated[r] + extra_at(extra, r);
  return used >= d->capacity[r] ? 0 : d->capacity[r] - used;
}

bool ioq_disk_score(const struct ioq_disk_state *d, const uint64_t *extra,
                    const struct ioq_need *need, enum ioq_policy policy, int *score) {
  if (!d->healthy || strcmp(d->class_name, need_class(need)) != 0)
    return false;
  double frac[IOQ_RES_COUNT] = {0};
  int nreq = 0;
  double sum = 0;
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    if (need->units[r] == 0)
      continue;
    if (free_units(d, extra, r) < need->units[r])
      return false;
    frac[r] =
        (double)(d->allocated[r] + extra_at(extra, r) + need->units[r]) / (double)d->capacity[r];
    sum += frac[r];
    nreq++;
  }
  if (nreq == 0) {
    *score = 10; /* nothing requested: every healthy disk of the class is equally good */
    return true;
  }
  double mean = sum / nreq, s;
  switch (policy) {
  case IOQ_POLICY_MOST_ALLOCATED:
    s = 10.0 * mean;
    break;
  case IOQ_POLICY_BALANCED:
    if (nreq == IOQ_RES_COUNT) {
      s = 10.0 * (1.0 - fabs(frac[IOQ_RES_BANDWIDTH] - frac[IOQ_RES_IOPS]));
      break;
    }
    __attribute__((fallthrough)); /* balance needs both resources */
  case IOQ_POLICY_LEAST_ALLOCATED:
  default:
    s = 10.0 * (1.0 - mean);
  }
  long r = lround(s);
  *score = r < 0 ? 0 : r > 10 ? 10 : (int)r;
  return true;
}

static int first_requested(const struct ioq_need *need) {
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (need->units[r])
      return r;
  return IOQ_RES_BANDWIDTH;
}

int ioq_place(const struct ioq_disk_state *disks, size_t n, const uint64_t *extra,
              const struct ioq_need *need, enum ioq_policy policy, struct ioq_choice *out) {
  out->disk = -1;
  out->score = 0;
  out->reason[0] = '\0';
  int r0 = first_requested(need);
  const char *cls = need_class(need);

  for (size_t i = 0; i < n; i++) {
    const uint64_t *ex = extra ? extra + i * IOQ_RES_COUNT : NULL;
    int s;
    if (!ioq_disk_score(&disks[i], ex, need, policy, &s))
      continue;
    if (out->disk >= 0) {
      const struct ioq_disk_state *b = &disks[out->disk];
      const uint64_t *bex = extra ? extra + (size_t)out->disk * IOQ_RES_COUNT : NULL;
      uint64_t fi = free_units(&disks[i], ex, r0), fb = free_units(b, bex, r0);
      bool better = s > out->score || (s == out->score && fi > fb) ||
                    (s == out->score && fi == fb && strcmp(disks[i].name, b->name) < 0);
      if (!better)
        continue;
    }
    out->disk = (int)i;
    out->score = s;
  }
  if (out->disk >= 0)
    return 1;

  /* Nothing fits: say why, naming the disk that came closest on the first
   * requested resource that falls short. */
  size_t in_class = 0, healthy = 0;
  int best = -1;
  int short_r = r0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(disks[i].class_name, cls) != 0)
      continue;
    in_class++;
    if (!disks[i].healthy)
      continue;
    healthy++;
    const uint64_t *ex = extra ? extra + i * IOQ_RES_COUNT : NULL;
    if (best < 0 ||
        free_units(&disks[i], ex, r0) >
            free_units(&disks[best], extra ? extra + (size_t)best * IOQ_RES_COUNT : NULL, r0))
      best = (int)i;
  }
  if (in_class == 0) {
    snprintf(out->reason, sizeof out->reason, "no disk in class %s", cls);
  } else if (healthy == 0) {
    snprintf(out->reason, sizeof out->reason, "no healthy disk in class %s (%zu unhealthy)", cls,
             in_class);
  } else {
    const uint64_t *bex = extra ? extra + (size_t)best * IOQ_RES_COUNT : NULL;
    /* which resource is short on the best disk (the first one that is) */
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      if (need->units[r] && free_units(&disks[best], bex, r) < need->units[r]) {
        short_r = r;
        break;
      }
    if (short_r != r0) {
      snprintf(out->reason, sizeof out->reason,
               "no disk in class %s has %llu free %s units and %llu free %s units; best: %s with "
               "%llu and %llu",
               cls, (unsigned long long)need->units[r0], ioq_resource_short(r0),
               (unsigned long long)need->units[short_r], ioq_resource_short(short_r),
               disks[best].name, (unsigned long long)free_units(&disks[best], bex, r0),
               (unsigned long long)free_units(&disks[best], bex, short_r));
    } else {
      snprintf(out->reason, sizeof out->reason,
               "no disk in class %s has %llu free %s units; best: %s with %llu", cls,
               (unsigned long long)need->units[r0], ioq_resource_short(r0), disks[best].name,
               (unsigned long long)free_units(&disks[best], bex, r0));
    }
  }
  return 0;
}

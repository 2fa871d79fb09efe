// SPDX-License-Identifier: Apache-2.0
#include "grant/ungranted.h"

#include <stdlib.h>
#include <string.h>

#include "base/numconv.h"

struct want {
  double w; /* wanted cap; HUGE = busy */
  size_t i;
};

static int by_want(const void *a, const void *b) {
  double x = ((const struct want *)a)->w, y = ((const struct want *)b)->w;
  return x < y ? -1 : x > y;
}

#define BUSY 1e30

/* Water-fills `left` over the wants w[0..n) (sorted ascending): the pods
 * wanting least are served, the rest share what is left equally. Returns
 * how many were served (n: all, with *left what is over). */
static size_t water_fill(struct want *w, size_t n, double *left, uint64_t *out) {
  size_t k = 0;
  for (; k < n; k++) {
    double level = *left / (double)(n - k);
    if (w[k].w > level)
      break;
    out[w[k].i] = ioq_u64_from_double_sat(w[k].w);
    *left -= (double)out[w[k].i];
  }
  if (k < n) {
    uint64_t each = ioq_u64_from_double_sat(*left / (double)(n - k));
    for (size_t j = k; j < n; j++)
      out[w[j].i] = each;
    *left = 0;
  }
  return k;
}

/* a burster's wanted extra above its grant (grant/ungranted.h, "Burst") */
static double burst_want(const struct ioq_ug_burster *b) {
  if (!b->grant || b->rate < 0)
    return 0; /* nothing to burst from, or not measured yet */
  double cap = (double)b->grant + (double)b->extra;
  if (b->rate >= IOQ_UG_BUSY_FRACTION * cap)
    return BUSY;
  double x = b->rate * IOQ_UG_HEADROOM - (double)b->grant;
  return x > 0 ? x : 0;
}

void ioq_ug_split(uint64_t pool, uint64_t floor, const struct ioq_ug_demand *in, size_t n,
                  uint64_t *out) {
  ioq_ug_split_burst(pool, floor, in, n, NULL, 0, out, NULL);
}

void ioq_ug_split_burst(uint64_t pool, uint64_t floor, const struct ioq_ug_demand *in, size_t n,
                        const struct ioq_ug_burster *b, size_t nb, uint64_t *out, uint64_t *bout) {
  for (size_t j = 0; j < nb; j++)
    bout[j] = 0;
  if (!n && !nb)
    return;
  size_t tn = n > nb ? n : nb;
  struct want stack[64], *w = tn <= 64 ? stack : malloc(tn * sizeof *w);
  if (!w) {
    /* out of memory: the equal split needs no table; nothing bursts */
    for (size_t i = 0; i < n; i++)
      out[i] = pool / n > floor ? pool / n : floor;
    return;
  }
  double left = (double)pool;
  bool busy = false;
  if (n) {
    double min_idle = (double)pool / (4.0 * (double)n);
    if (min_idle < (double)floor)
      min_idle = (double)floor; /* served inside the pool, not added on top */
    for (size_t i = 0; i < n; i++) {
      const struct ioq_ug_demand *d = &in[i];
      double want;
      if (d->rate < 0)
        want = d->cap ? (double)d->cap : BUSY; /* not measured yet */
      else if (d->cap && d->rate >= IOQ_UG_BUSY_FRACTION * (double)d->cap)
        want = BUSY;
      else
        want = d->rate * IOQ_UG_HEADROOM;
      if (want < min_idle)
        want = min_idle;
      w[i] = (struct want){want, i};
    }
    qsort(w, n, sizeof *w, by_want);
    busy = water_fill(w, n, &left, out) < n;
  }
  /* bursters are last in line: only what every pod without a grant leaves */
  size_t m = 0;
  for (size_t j = 0; j < nb && !busy; j++) {
    double x = burst_want(&b[j]);
    if (x > 0)
      w[m++] = (struct want){x, j};
  }
  bool bursters_busy = false;
  if (m) {
    qsort(w, m, sizeof *w, by_want);
    bursters_busy = water_fill(w, m, &left, bout) < m;
  }
  if (n && !busy && !bursters_busy && left >= (double)n) {
    /* everyone is served: spread the rest over the pods without a grant */
    uint64_t extra = ioq_u64_from_double_sat(left / (double)n);
    for (size_t i = 0; i < n; i++)
      out[i] += extra;
  }
  for (size_t i = 0; i < n; i++)
    if (out[i] < floor)
      out[i] = floor;
  if (w != stack)
    free(w);
}

uint64_t ioq_ug_lend_pass(struct ioq_ug_lender *l, uint64_t grant, double rate, double reserve) {
  if (l->grant != grant)
    *l = (struct ioq_ug_lender){.grant = grant, .keep = grant};
  if (!grant)
    return 0;
  double keep = (double)grant * reserve;
  if (rate * IOQ_UG_LEND_HEADROOM > keep)
    keep = rate * IOQ_UG_LEND_HEADROOM;
  if (rate < 0 || keep >= (double)grant) {
    /* busy, or not measured: keeps everything; a wake-up seen at a pass
     * counts like one seen by a sample */
    if (l->keep < l->grant)
      l->wakes += l->wakes < IOQ_UG_LEND_BACKOFF_MAX;
    l->keep = grant;
    l->quiet = 0;
    l->calm = 0;
    return 0;
  }
  if (l->quiet < UINT32_MAX)
    l->quiet++;
  if (l->quiet < (IOQ_UG_LEND_QUIET_PASSES << l->wakes)) {
    l->keep = grant;
    return 0;
  }
  if (++l->calm >= IOQ_UG_LEND_FORGET_PASSES) {
    l->wakes = 0;
    l->calm = 0;
  }
  l->keep = ioq_u64_from_double_sat(keep);
  if (l->keep > grant)
    l->keep = grant;
  return grant - l->keep;
}

void ioq_ug_lend_pass_pod(struct ioq_ug_lender l[IOQ_RES_COUNT], const uint64_t grant[IOQ_RES_COUNT],
                          const double rate[IOQ_RES_COUNT], double reserve, uint64_t lent[IOQ_RES_COUNT]) {
  bool busy = false;
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    lent[r] = ioq_ug_lend_pass(&l[r], grant[r], rate[r], reserve);
    busy |= grant[r] && !l[r].quiet; /* measured busy (or not measured), not merely waiting */
  }
  if (!busy)
    return;
  /* busy in one resource: held in all, as if not quiet (no wake-up counted
   * for what was lent only because the other resource was quiet) */
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    l[r].keep = l[r].grant;
    l[r].quiet = 0;
    lent[r] = 0;
  }
}

bool ioq_ug_backlogged(uint64_t queued_bytes, uint64_t grant_bps) {
  double t = (double)grant_bps * IOQ_UG_BACKLOG_S;
  if (t < (double)IOQ_UG_BACKLOG_MIN)
    t = (double)IOQ_UG_BACKLOG_MIN;
  return (double)queued_bytes >= t;
}

bool ioq_ug_stalled(uint64_t stall_us, double seconds, double fraction) {
  return seconds > 0 && (double)stall_us >= fraction * seconds * 1e6;
}

static bool over(uint64_t cap, double done, double dt, double slack_s, double slack) {
  return cap && done > (double)cap * (dt + slack_s) + slack;
}

static bool dir_over(const uint64_t cap[IOQ_RES_COUNT], const struct ioq_ug_done *d, double dt, double slack_s,
                     double slack_bytes, double slack_ios) {
  return over(cap[IOQ_RES_BANDWIDTH], d->bytes, dt, slack_s, slack_bytes) ||
         over(cap[IOQ_RES_IOPS], d->ios, dt, slack_s, slack_ios);
}

/* Seconds from now until the kernel has surely been paid for one direction:
 * what it did beyond its cap since the write, plus a slice of the limit
 * before it (carried into ours), at its cap; and a slice more. */
static double paid_in(const uint64_t cap[IOQ_RES_COUNT], const uint64_t prev[IOQ_RES_COUNT],
                      const struct ioq_ug_done *d, double dt) {
  const double done[IOQ_RES_COUNT] = {[IOQ_RES_BANDWIDTH] = d->bytes, [IOQ_RES_IOPS] = d->ios};
  double s = 0;
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    if (!cap[r])
      continue;
    double owed = done[r] + (double)prev[r] * IOQ_UG_SLICE_S - (double)cap[r] * dt;
    if (owed / (double)cap[r] > s)
      s = owed / (double)cap[r];
  }
  return s + IOQ_UG_SLICE_S;
}

enum ioq_ug_owe_step ioq_ug_owe_judge(struct ioq_ug_owe *o, const uint64_t cap[IOQ_RES_COUNT],
                                      const uint64_t prev[IOQ_RES_COUNT], const struct ioq_ug_done done[IOQ_UG_DIRS],
                                      double dt, double now) {
  if (dt < 0)
    dt = 0;
  if (!o->owes) {
    bool any = false;
    for (int k = 0; k < IOQ_UG_DIRS; k++)
      any |= o->dir[k] = dir_over(cap, &done[k], dt, IOQ_UG_OWE_ENTER_S, (double)IOQ_UG_OWE_ENTER_BYTES,
                                  IOQ_UG_OWE_ENTER_IOS);
    if (!any)
      return IOQ_UG_OWE_NONE;
    o->owes = true;
    o->since = o->t = now;
    o->until = now;
    for (int k = 0; k < IOQ_UG_DIRS; k++) {
      o->at[k] = done[k];
      double in = o->dir[k] ? paid_in(cap, prev, &done[k], dt) : 0;
      if (now + in > o->until)
        o->until = now + in;
    }
    return IOQ_UG_OWE_BEGAN;
  }
  double span = now - o->t;
  if (span < 0)
    span = 0;
  bool again = false, moved = true;
  for (int k = 0; k < IOQ_UG_DIRS; k++) {
    if (!o->dir[k])
      continue;
    struct ioq_ug_done p = {done[k].bytes - o->at[k].bytes, done[k].ios - o->at[k].ios};
    if (dir_over(cap, &p, span, IOQ_UG_OWE_ENTER_S, (double)IOQ_UG_OWE_ENTER_BYTES, IOQ_UG_OWE_ENTER_IOS)) {
      again = true;
      double in = paid_in(cap, prev, &done[k], dt);
      if (now + in > o->until)
        o->until = now + in;
    }
    moved &= p.bytes > 0 || p.ios > 0;
  }
  o->t = now;
  memcpy(o->at, done, sizeof o->at);
  if (again)
    return IOQ_UG_OWE_AGAIN;
  if (moved || now >= o->until) {
    o->owes = false;
    return IOQ_UG_OWE_PAID;
  }
  return IOQ_UG_OWE_HELD;
}

bool ioq_ug_lend_reclaim(struct ioq_ug_lender *l) {
  bool was = l->keep < l->grant;
  if (was)
    l->wakes += l->wakes < IOQ_UG_LEND_BACKOFF_MAX;
  l->keep = l->grant;
  l->quiet = 0;
  l->calm = 0;
  return was;
}

bool ioq_ug_lend_woke(struct ioq_ug_lender *l, double rate) {
  if (l->keep >= l->grant || rate <= (double)l->keep)
    return false;
  return ioq_ug_lend_reclaim(l);
}

void ioq_ug_pool(const struct ioq_disk *d, const struct ioq_unit_sizes *u, double headroom_share,
                 const uint64_t held[IOQ_RES_COUNT], uint64_t pool[IOQ_RES_COUNT]) {
  const uint64_t cap[IOQ_RES_COUNT] = {[IOQ_RES_BANDWIDTH] = d->capacity_bw_bytes,
                                       [IOQ_RES_IOPS] = d->capacity_iops};
  const uint64_t fixed[IOQ_RES_COUNT] = {[IOQ_RES_BANDWIDTH] = d->ungranted_pool_bw_bytes,
                                         [IOQ_RES_IOPS] = d->ungranted_pool_iops};
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    if (fixed[r]) {
      pool[r] = fixed[r];
      continue;
    }
    if (!cap[r]) {
      pool[r] = 0;
      continue;
    }
    /* namespaces' units are granted like pods' units: not headroom */
    double adv = (double)(d->units[r] + d->nvmet_units[r]) * (double)u->size[r];
    double headroom = (double)cap[r] > adv ? (double)cap[r] - adv : 0;
    /* units held beyond those advertised (the capacity was lowered while
     * pods keep their units) come out of the headroom */
    double unheld = ((double)d->units[r] - (double)held[r]) * (double)u->size[r];
    double p = headroom * headroom_share + unheld;
    if (p > (double)cap[r])
      p = (double)cap[r];
    /* an empty pool: the floor of each cap is what the pods get */
    pool[r] = p < 2 ? 2 : ioq_u64_from_double_sat(p);
  }
}

double ioq_ug_bounded_fraction(const struct ioq_disk *d, const struct ioq_unit_sizes *u,
                               bool ungranted_on, double headroom_share) {
  const uint64_t cap[IOQ_RES_COUNT] = {
      [IOQ_RES_BANDWIDTH] = d->capacity_bw_bytes, [IOQ_RES_IOPS] = d->capacity_iops};
  uint64_t pool[IOQ_RES_COUNT] = {0};
  if (ungranted_on)
    ioq_ug_pool(d, u, headroom_share, d->units, pool); /* every unit held */
  double f = 0;
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    if (!cap[r])
      continue;
    double x = ((double)(d->units[r] + d->nvmet_units[r]) * (double)u->size[r] + (double)pool[r]) /
               (double)cap[r];
    if (x > f)
      f = x;
  }
  if (f <= 0)
    f = d->allocatable_fraction;
  return f > 1 ? 1 : f;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t ioq_ug_page_cache_high(uint64_t pinned, uint64_t room, uint64_t cur) {
  uint64_t want = sat_add(pinned, room);
  if (!cur)
    return want;
  if (cur < sat_add(pinned, room / 2) || cur > sat_add(want, room / 2))
    return want;
  return 0;
}

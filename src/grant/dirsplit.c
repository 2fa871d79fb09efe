// SPDX-License-Identifier: Apache-2.0
/* The read/write re-split of a combined-direction grant (dirsplit.h). */
#include "grant/dirsplit.h"

#include <math.h>

static uint64_t clamp_u64(double v, uint64_t lo, uint64_t hi) {
  if (!(v > (double)lo)) /* also NaN */
    return lo;
  if (v >= (double)hi)
    return hi;
  return (uint64_t)v;
}

static bool moved(uint64_t a, uint64_t b, uint64_t g) {
  uint64_t d = a > b ? a - b : b - a;
  return (double)d > DIRSPLIT_HYSTERESIS * (double)g;
}

/* the direction used (nearly) all of its limit: its demand is unknown */
static bool at_cap(double achieved, uint64_t limit, uint64_t floor) {
  double share = limit <= floor ? DIRSPLIT_AT_FLOOR : DIRSPLIT_AT_CAP;
  return achieved > 0 && achieved >= share * (double)limit;
}

/* After the demands are known: a direction that was at its cap lately but
 * not now keeps at least its fair half (or what it has, if less); the
 * memory counts down the intervals that holds. */
static void damp(bool cap_r, bool cap_w, uint64_t cr, uint64_t cw, double gd, double *dr,
                 double *dw, uint8_t mem[2]) {
  if (!cap_r && mem[0])
    *dr = fmax(*dr, fmin((double)cr, gd / 2));
  if (!cap_w && mem[1])
    *dw = fmax(*dw, fmin((double)cw, gd / 2));
  mem[0] = cap_r ? DIRSPLIT_DAMP_INTERVALS : mem[0] ? (uint8_t)(mem[0] - 1) : 0;
  mem[1] = cap_w ? DIRSPLIT_DAMP_INTERVALS : mem[1] ? (uint8_t)(mem[1] - 1) : 0;
}

bool ioq_dirsplit_pair(const struct dirsplit_pair *p, double floor_frac, uint8_t mem[2],
                       uint64_t *r, uint64_t *w) {
  uint64_t g = p->grant;
  uint64_t cr = p->cur_r && p->cur_r <= g ? p->cur_r : g;
  uint64_t cw = p->cur_w && p->cur_w <= g ? p->cur_w : g;
  *r = cr;
  *w = cw;
  if (g == 0) { /* no limit on this resource */
    bool was = p->cur_r || p->cur_w;
    *r = *w = 0;
    return was;
  }
  if (g < 2 * IOQ_LIMIT_MIN) { /* too small to split: the full-grant split */
    *r = *w = g;
    return cr != g || cw != g;
  }
  if (!(floor_frac >= 0) || floor_frac >= 0.5)
    floor_frac = DIRSPLIT_FLOOR_DEFAULT;
  uint64_t f = (uint64_t)ceil((double)g * floor_frac);
  if (f < IOQ_LIMIT_MIN)
    f = IOQ_LIMIT_MIN;
  if (f > g / 2)
    f = g / 2;
  bool broken = cr + cw > g; /* the full-grant split, or a grant that shrank */
  if (p->ach_r < 0 || p->ach_w < 0) {
    if (!broken)
      return false;
    *r = g / 2; /* nothing known about the demand: halves */
    *w = g - *r;
    return true;
  }
  double gd = (double)g;
  bool cap_r = at_cap(p->ach_r, cr, f), cap_w = at_cap(p->ach_w, cw, f);
  double dr = cap_r ? INFINITY : p->ach_r * (1 + DIRSPLIT_HEADROOM);
  double dw = cap_w ? INFINITY : p->ach_w * (1 + DIRSPLIT_HEADROOM);
  if (mem)
    damp(cap_r, cap_w, cr, cw, gd, &dr, &dw, mem);
  double nr;
  if (dr + dw <= gd)
    nr = dr + (gd - dr - dw) / 2; /* both fit: share what is left */
  else if (dr < gd / 2)
    nr = dr;
  else if (dw < gd / 2)
    nr = gd - dw;
  else
    nr = gd / 2;
  uint64_t nri = clamp_u64(floor(nr), f, g - f);
  uint64_t nwi = g - nri;
  /* a small move is not made, unless it gives one direction all but the
   * other's floor (one direction in use: its grant must not be held 4 %
   * short by a leftover of the other's demand) */
  bool extreme = (nri == f || nwi == f) && (nri != cr || nwi != cw);
  if (!broken && !extreme && !moved(nri, cr, g) && !moved(nwi, cw, g))
    return false;
  *r = nri;
  *w = nwi;
  return true;
}

bool ioq_dirsplit_limits(const struct ioq_io_limits *grant, const struct ioq_io_limits *cur,
                         const double achieved[IOQ_LIMIT_KEYS], double floor_frac,
                         struct dirsplit_memory *mem, struct ioq_io_limits *out) {
  struct dirsplit_pair bw = {.grant = grant->rbps,
                             .cur_r = cur->rbps,
                             .cur_w = cur->wbps,
                             .ach_r = achieved[IOQ_RBPS],
                             .ach_w = achieved[IOQ_WBPS]};
  struct dirsplit_pair io = {.grant = grant->riops,
                             .cur_r = cur->riops,
                             .cur_w = cur->wiops,
                             .ach_r = achieved[IOQ_RIOPS],
                             .ach_w = achieved[IOQ_WIOPS]};
  bool c1 = ioq_dirsplit_pair(&bw, floor_frac, mem ? &mem->damp[IOQ_RBPS] : NULL, &out->rbps,
                              &out->wbps);
  bool c2 = ioq_dirsplit_pair(&io, floor_frac, mem ? &mem->damp[IOQ_RIOPS] : NULL, &out->riops,
                              &out->wiops);
  return c1 || c2;
}

static bool pair_valid(uint64_t g, uint64_t r, uint64_t w) {
  if (g == 0)
    return r == 0 && w == 0;
  if (r == g && w == g)
    return true;
  return r >= IOQ_LIMIT_MIN && w >= IOQ_LIMIT_MIN && r <= g && w <= g - r;
}

bool ioq_dirsplit_valid(const struct ioq_io_limits *grant, const struct ioq_io_limits *l) {
  return pair_valid(grant->rbps, l->rbps, l->wbps) && pair_valid(grant->riops, l->riops, l->wiops);
}

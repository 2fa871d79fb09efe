// SPDX-License-Identifier: Apache-2.0
/* The read/write re-split of combined-direction grants (dirsplit.h), driven
 * by a model pod: each interval it achieves min(demand, limit) per direction. */
#include <criterion/criterion.h>
#include <math.h>

#include "grant/dirsplit.h"

#define G 104857600ull /* 100 MiB/s */

struct sim {
  uint64_t g, r, w;
  bool damped; /* with the damping memory below */
  uint8_t mem[2];
};

/* one interval with demands dr, dw (INFINITY: more than any limit) */
static bool step(struct sim *s, double dr, double dw) {
  struct dirsplit_pair p = {.grant = s->g,
                            .cur_r = s->r,
                            .cur_w = s->w,
                            .ach_r = fmin(dr, (double)s->r),
                            .ach_w = fmin(dw, (double)s->w)};
  uint64_t r, w;
  bool ch = ioq_dirsplit_pair(&p, DIRSPLIT_FLOOR_DEFAULT, s->damped ? s->mem : NULL, &r, &w);
  if (ch) {
    s->r = r;
    s->w = w;
  } else {
    cr_assert(r == s->r && w == s->w, "no change must return the current limits");
  }
  return ch;
}

static void check_bounds(const struct sim *s) {
  uint64_t f = (uint64_t)ceil((double)s->g * DIRSPLIT_FLOOR_DEFAULT);
  cr_assert(s->r + s->w <= s->g, "r %llu + w %llu > grant %llu", (unsigned long long)s->r,
            (unsigned long long)s->w, (unsigned long long)s->g);
  cr_assert(s->r >= f && s->w >= f, "floor %llu broken: r %llu w %llu", (unsigned long long)f,
            (unsigned long long)s->r, (unsigned long long)s->w);
}

Test(dirsplit, full_grant_split_is_resplit_at_once) {
  struct sim s = {G, G, G, false, {0}};
  cr_assert(step(&s, INFINITY, INFINITY));
  check_bounds(&s);
  cr_assert_eq(s.r + s.w, G);
  cr_assert_eq(s.r, G / 2);
}

Test(dirsplit, bounds_hold_for_any_demand_sequence) {
  unsigned seed = 12345;
  struct sim s = {G, G, G, false, {0}};
  for (int i = 0; i < 20000; i++) {
    seed = seed * 1103515245u + 12345u;
    double dr = (double)(seed % 1000) / 500.0 * G; /* 0..2G */
    seed = seed * 1103515245u + 12345u;
    double dw = (seed % 7) == 0 ? 0 : (double)(seed % 1000) / 500.0 * G;
    step(&s, (seed % 11) == 0 ? 0 : dr, dw);
    check_bounds(&s);
  }
}

Test(dirsplit, both_directions_at_once_stay_within_grant) {
  struct sim s = {G, G, G, false, {0}};
  for (int i = 0; i < 5; i++)
    step(&s, INFINITY, INFINITY);
  double combined = fmin(INFINITY, (double)s.r) + fmin(INFINITY, (double)s.w);
  cr_assert(combined <= (double)G && combined >= 0.99 * G, "combined %.0f", combined);
  /* max-min fair: an unlimited reader next to a writer that wants 0.2 G */
  for (int i = 0; i < 5; i++)
    step(&s, INFINITY, 0.2 * G);
  cr_assert(s.w >= 0.2 * G, "writer's demand met: w %llu", (unsigned long long)s.w);
  cr_assert(s.r >= 0.7 * G, "reader gets the rest: r %llu", (unsigned long long)s.r);
}

Test(dirsplit, single_direction_keeps_095_of_grant) {
  struct sim s = {G, G, G, false, {0}};
  for (int i = 0; i < 3; i++)
    step(&s, INFINITY, 0);
  cr_assert(s.r >= 0.95 * G, "reader r %llu", (unsigned long long)s.r);
  struct sim t = {G, G, G, false, {0}};
  for (int i = 0; i < 3; i++)
    step(&t, 0, INFINITY);
  cr_assert(t.w >= 0.95 * G, "writer w %llu", (unsigned long long)t.w);
}

Test(dirsplit, switch_from_writing_to_reading_regains_within_two_intervals) {
  struct sim s = {G, G, G, false, {0}};
  for (int i = 0; i < 5; i++)
    step(&s, 0, INFINITY);
  cr_assert(s.r >= 2 && s.r < 0.05 * G, "reader side at its floor: %llu", (unsigned long long)s.r);
  /* the switch: interval 1 reads at the floor (never shut out) */
  step(&s, INFINITY, 0);
  cr_assert(s.r >= 0.95 * G, "regained after 1 interval: r %llu", (unsigned long long)s.r);
  step(&s, INFINITY, 0);
  cr_assert(s.r >= 0.95 * G);
}

Test(dirsplit, steady_demand_does_not_oscillate) {
  struct sim s = {G, G, G, false, {0}};
  int changes = 0;
  for (int i = 0; i < 50; i++)
    changes += step(&s, 0.4 * G, INFINITY) ? 1 : 0;
  cr_assert(changes <= 3, "rewrote io.max %d times for a steady demand", changes);
  cr_assert(s.r >= 0.4 * G, "reader's demand met: %llu", (unsigned long long)s.r);
  check_bounds(&s);
}

Test(dirsplit, demand_below_grant_gets_headroom_both_ways) {
  struct sim s = {G, G, G, false, {0}};
  for (int i = 0; i < 5; i++)
    step(&s, 0.3 * G, 0.3 * G);
  cr_assert(s.r >= 0.3 * G * (1 + DIRSPLIT_HEADROOM) - 1);
  cr_assert(s.w >= 0.3 * G * (1 + DIRSPLIT_HEADROOM) - 1);
  cr_assert_eq(s.r + s.w, G, "the unused part is shared, not left out");
}

Test(dirsplit, rounding_never_exceeds_grant) {
  for (uint64_t g = 4; g < 2000; g += 7) {
    struct sim s = {g, g, g, false, {0}};
    for (int i = 0; i < 6; i++) {
      step(&s, i % 2 ? INFINITY : (double)g / 3, (double)g / 7);
      cr_assert(s.r + s.w <= g, "g %llu: %llu + %llu", (unsigned long long)g,
                (unsigned long long)s.r, (unsigned long long)s.w);
      cr_assert(s.r >= IOQ_LIMIT_MIN && s.w >= IOQ_LIMIT_MIN, "kernel minimum, g %llu",
                (unsigned long long)g);
    }
  }
}

Test(dirsplit, tiny_grant_keeps_full_split) {
  struct dirsplit_pair p = {.grant = 3, .cur_r = 3, .cur_w = 3, .ach_r = 3, .ach_w = 3};
  uint64_t r, w;
  cr_assert_not(ioq_dirsplit_pair(&p, DIRSPLIT_FLOOR_DEFAULT, NULL, &r, &w));
  cr_assert(r == 3 && w == 3);
}

Test(dirsplit, unknown_rates_leave_a_valid_split_alone) {
  struct dirsplit_pair p = {.grant = G, .cur_r = G / 4, .cur_w = G - G / 4, .ach_r = -1, .ach_w = 5};
  uint64_t r, w;
  cr_assert_not(ioq_dirsplit_pair(&p, DIRSPLIT_FLOOR_DEFAULT, NULL, &r, &w));
  cr_assert(r == G / 4 && w == G - G / 4);
  p.cur_r = p.cur_w = G; /* the full-grant split with nothing known: halves */
  cr_assert(ioq_dirsplit_pair(&p, DIRSPLIT_FLOOR_DEFAULT, NULL, &r, &w));
  cr_assert(r + w == G && r == G / 2);
}

Test(dirsplit, iops_and_bandwidth_alike_and_single_resource) {
  struct ioq_io_limits grant = {.rbps = G, .wbps = G, .riops = 1000, .wiops = 1000};
  struct ioq_io_limits cur = grant, out;
  double ach[IOQ_LIMIT_KEYS] = {[IOQ_RBPS] = G, [IOQ_WBPS] = 0, [IOQ_RIOPS] = 1000,
                                [IOQ_WIOPS] = 0};
  cr_assert(ioq_dirsplit_limits(&grant, &cur, ach, DIRSPLIT_FLOOR_DEFAULT, NULL, &out));
  cr_assert(out.rbps >= 0.95 * G && out.rbps + out.wbps <= G);
  cr_assert(out.riops >= 950 && out.riops + out.wiops <= 1000, "riops %llu wiops %llu",
            (unsigned long long)out.riops, (unsigned long long)out.wiops);
  cr_assert(ioq_dirsplit_valid(&grant, &out));
  /* a grant with bandwidth only: IOPS stay unlimited */
  struct ioq_io_limits bw_only = {.rbps = G, .wbps = G}, o2;
  cr_assert(ioq_dirsplit_limits(&bw_only, &bw_only, ach, DIRSPLIT_FLOOR_DEFAULT, NULL, &o2));
  cr_assert(o2.riops == 0 && o2.wiops == 0);
  cr_assert(o2.rbps + o2.wbps <= G);
  /* IOPS only */
  struct ioq_io_limits io_only = {.riops = 1000, .wiops = 1000}, o3;
  cr_assert(ioq_dirsplit_limits(&io_only, &io_only, ach, DIRSPLIT_FLOOR_DEFAULT, NULL, &o3));
  cr_assert(o3.rbps == 0 && o3.wbps == 0 && o3.riops + o3.wiops <= 1000);
}

Test(dirsplit, valid_tells_splits_from_other_values) {
  struct ioq_io_limits grant = {.rbps = G, .wbps = G};
  struct ioq_io_limits full = grant, split = {.rbps = G / 3, .wbps = G - G / 3};
  struct ioq_io_limits over = {.rbps = G / 2, .wbps = G}, lost = {.rbps = 0, .wbps = 0};
  cr_assert(ioq_dirsplit_valid(&grant, &full));
  cr_assert(ioq_dirsplit_valid(&grant, &split));
  cr_assert_not(ioq_dirsplit_valid(&grant, &over));
  cr_assert_not(ioq_dirsplit_valid(&grant, &lost));
}

Test(dirsplit, floor_fraction_out_of_range_uses_default) {
  struct dirsplit_pair p = {.grant = G, .cur_r = G, .cur_w = G, .ach_r = G, .ach_w = 0};
  uint64_t r, w;
  ioq_dirsplit_pair(&p, 0.7, NULL, &r, &w);
  cr_assert(w >= (uint64_t)(DIRSPLIT_FLOOR_DEFAULT * G) && r + w == G);
}

Test(dirsplit, switch_seen_on_the_floor_with_a_coarse_count) {
  /* one large I/O per interval at most: the floor's count shows half of it */
  struct sim s = {G, G, G, false, {0}};
  for (int i = 0; i < 5; i++)
    step(&s, 0, INFINITY);
  struct dirsplit_pair p = {.grant = G, .cur_r = s.r, .cur_w = s.w, .ach_r = 0.6 * (double)s.r,
                            .ach_w = 0};
  uint64_t r, w;
  cr_assert(ioq_dirsplit_pair(&p, DIRSPLIT_FLOOR_DEFAULT, NULL, &r, &w));
  cr_assert(r >= 0.95 * G, "r %llu", (unsigned long long)r);
  /* a writer's occasional small reads well below the floor stay on it */
  p.ach_r = 0.2 * (double)s.r;
  p.ach_w = (double)s.w;
  cr_assert_not(ioq_dirsplit_pair(&p, DIRSPLIT_FLOOR_DEFAULT, NULL, &r, &w));
}

Test(dirsplit, noisy_capped_directions_keep_halves) {
  /* both capped, each showing 0.8-1.0 of its limit per interval: no rewrite */
  struct sim s = {G, G, G, false, {0}};
  step(&s, INFINITY, INFINITY);
  unsigned seed = 7;
  int changes = 0;
  for (int i = 0; i < 200; i++) {
    seed = seed * 1103515245u + 12345u;
    double fr = 0.8 + (double)(seed % 200) / 1000.0;
    seed = seed * 1103515245u + 12345u;
    double fw = 0.8 + (double)(seed % 200) / 1000.0;
    struct dirsplit_pair p = {.grant = G, .cur_r = s.r, .cur_w = s.w, .ach_r = fr * (double)s.r,
                              .ach_w = fw * (double)s.w};
    uint64_t r, w;
    if (ioq_dirsplit_pair(&p, DIRSPLIT_FLOOR_DEFAULT, NULL, &r, &w)) {
      changes++;
      s.r = r;
      s.w = w;
    }
  }
  cr_assert_eq(changes, 0, "%d rewrites", changes);
}

Test(dirsplit, leftover_demand_of_the_other_direction_does_not_hold_the_grant_short) {
  /* a reader stopped; what it read in its last interval left r above the
   * floor by less than the hysteresis: the writer still gets G - floor */
  uint64_t f = (uint64_t)ceil(G * DIRSPLIT_FLOOR_DEFAULT);
  struct dirsplit_pair p = {.grant = G, .cur_r = f + G / 40, .cur_w = G - f - G / 40, .ach_r = 0,
                            .ach_w = (double)(G - f - G / 40)};
  uint64_t r, w;
  cr_assert(ioq_dirsplit_pair(&p, DIRSPLIT_FLOOR_DEFAULT, NULL, &r, &w));
  cr_assert_eq(r, f);
  cr_assert_eq(w, G - f);
}

/* The oscillation measured on 6.1 (docs/benchmark.md): reader and writer both
 * at their caps, the writer's I/O coming through in bursts, nothing in some
 * intervals. Without damping the split flips between halves and (G - floor,
 * floor) with every quiet interval, and each io.max rewrite restarts
 * blk-throttle's slices; with it, nothing is rewritten while the writer is
 * quiet for fewer than DIRSPLIT_DAMP_INTERVALS intervals in a row. */
Test(dirsplit, bursty_writer_damped_no_flip) {
  /* quiet runs of 1 and 2 intervals between bursts */
  static const int quiet[] = {0, 1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0};
  int n = (int)(sizeof quiet / sizeof quiet[0]);
  struct sim plain = {G, G, G, false, {0}}, damped = {G, G, G, true, {0}};
  step(&plain, INFINITY, INFINITY); /* the first split: halves */
  step(&damped, INFINITY, INFINITY);
  int flips_plain = 0, flips_damped = 0;
  for (int i = 0; i < n; i++) {
    double dw = quiet[i] ? 0 : INFINITY;
    flips_plain += step(&plain, INFINITY, dw);
    flips_damped += step(&damped, INFINITY, dw);
    check_bounds(&damped);
  }
  cr_assert_geq(flips_plain, 8, "the undamped rule flips (%d rewrites)", flips_plain);
  cr_assert_eq(flips_damped, 0, "%d rewrites", flips_damped);
  cr_assert_eq(damped.r, G / 2);
  cr_assert_eq(damped.w, G / 2);
}

/* The price: a writer that stops for good gives the reader G/2 at once and
 * all but the floor DIRSPLIT_DAMP_INTERVALS intervals later. */
Test(dirsplit, damped_switch_from_writer_to_reader) {
  uint64_t f = (uint64_t)ceil(G * DIRSPLIT_FLOOR_DEFAULT);
  struct sim s = {G, G, G, true, {0}};
  step(&s, INFINITY, INFINITY);
  for (int i = 0; i < 4; i++) /* the writer alone: it gets all but the reader's floor */
    step(&s, 0, INFINITY);
  cr_assert_eq(s.r, f);
  cr_assert_eq(s.w, G - f);
  /* the switch: the reader at its floor, the writer gone */
  cr_assert(step(&s, INFINITY, 0));
  cr_assert_eq(s.r, G / 2, "the new direction gets the fair half at once");
  int waited = 1;
  while (s.r != G - f && waited < 10) {
    step(&s, INFINITY, 0);
    waited++;
    check_bounds(&s);
  }
  cr_assert_eq(s.r, G - f);
  cr_assert_eq(waited, DIRSPLIT_DAMP_INTERVALS + 1, "%d intervals", waited);
}

/* Damping never breaks the bounds, whatever the demands. */
Test(dirsplit, damped_bounds_hold_for_any_demand_sequence) {
  unsigned seed = 4242;
  struct sim s = {G, G, G, true, {0}};
  for (int i = 0; i < 20000; i++) {
    seed = seed * 1103515245u + 12345u;
    double dr = (seed % 5) == 0 ? 0 : (double)(seed % 1000) / 500.0 * G;
    seed = seed * 1103515245u + 12345u;
    double dw = (seed % 3) == 0 ? 0 : (double)(seed % 1000) / 500.0 * G;
    step(&s, dr, dw);
    check_bounds(&s);
  }
}

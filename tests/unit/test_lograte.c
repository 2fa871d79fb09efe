// SPDX-License-Identifier: Apache-2.0
/* The rate limit of repeated log lines (base/lograte.h), driven by a fake
 * clock: the first line, the lines held back within a window and their count
 * on the next line, the summary once a window is over, window 0, a clock
 * read out of order, and a flood that writes one line per window and loses
 * no count. */
#include <criterion/criterion.h>

#include "base/lograte.h"

#define W 10000 /* the window, in the fake clock's unit (ms) */

Test(lograte, first_line_then_one_per_window) {
  struct ioq_lograte r = {0};
  uint64_t held = 99;
  cr_assert(ioq_lograte_allow(&r, 0, W, &held), "the first line at time 0 is written");
  cr_assert_eq(held, 0);
  for (uint64_t t = 1; t < W; t += 1000)
    cr_assert(!ioq_lograte_allow(&r, t, W, &held), "t=%llu is within the window",
              (unsigned long long)t);
  cr_assert_eq(r.held, 10);
  cr_assert(ioq_lograte_allow(&r, W, W, &held), "the window is over at exactly W");
  cr_assert_eq(held, 10, "the next line carries the count of those held back");
  cr_assert(!ioq_lograte_allow(&r, W + 1, W, &held), "a new window starts at the written line");
  cr_assert_eq(r.held, 1);
}

Test(lograte, summary_once_the_window_is_over) {
  struct ioq_lograte r = {0};
  uint64_t held = 0;
  cr_assert(!ioq_lograte_due(&r, 5 * W, W, &held), "nothing written, nothing held: no summary");
  ioq_lograte_allow(&r, 100, W, &held);
  cr_assert(!ioq_lograte_due(&r, 100 + 2 * W, W, &held), "nothing held back: no summary");
  ioq_lograte_allow(&r, 200, W, &held);
  ioq_lograte_allow(&r, 300, W, &held);
  cr_assert(!ioq_lograte_due(&r, 100 + W - 1, W, &held), "not before the window is over");
  cr_assert(ioq_lograte_due(&r, 100 + W, W, &held));
  cr_assert_eq(held, 2);
  cr_assert(!ioq_lograte_due(&r, 100 + W + 1, W, &held), "the count was handed over");
  /* the summary is the window's line: a line just after it is held */
  cr_assert(!ioq_lograte_allow(&r, 100 + W + 5, W, &held));
  cr_assert(ioq_lograte_due(&r, 100 + 2 * W, W, &held));
  cr_assert_eq(held, 1);
}

Test(lograte, take_hands_over_whatever_is_held) {
  struct ioq_lograte r = {0};
  uint64_t held;
  ioq_lograte_allow(&r, 0, W, &held);
  ioq_lograte_allow(&r, 1, W, &held);
  ioq_lograte_allow(&r, 2, W, &held);
  cr_assert_eq(ioq_lograte_take(&r), 2, "at exit, inside the window");
  cr_assert_eq(ioq_lograte_take(&r), 0);
  cr_assert(!ioq_lograte_due(&r, 3 * W, W, &held), "nothing left for a summary");
}

Test(lograte, window_zero_writes_every_line) {
  struct ioq_lograte r = {0};
  uint64_t held;
  for (int i = 0; i < 5; i++) {
    cr_assert(ioq_lograte_allow(&r, 7, 0, &held));
    cr_assert_eq(held, 0);
  }
}

Test(lograte, clock_read_before_the_last_line_is_inside_the_window) {
  struct ioq_lograte r = {0};
  uint64_t held;
  cr_assert(ioq_lograte_allow(&r, 5 * W, W, &held));
  /* another thread read the clock first and got here second */
  cr_assert(!ioq_lograte_allow(&r, 5 * W - 1, W, &held));
  cr_assert(!ioq_lograte_due(&r, 5 * W - 1, W, &held));
  cr_assert_eq(r.held, 1);
}

/* 100 lines a second for 60 s, a summary check every second: at most one
 * line (the refusal's own or a summary) per window, and every line is either
 * written or counted in a later one. */
Test(lograte, flood_is_bounded_and_every_line_counted) {
  struct ioq_lograte r = {0};
  uint64_t lines = 0, shown = 0, summaries = 0, counted = 0, held;
  for (uint64_t t = 0; t < 60000; t += 10) {
    lines++;
    if (ioq_lograte_allow(&r, t, W, &held)) {
      shown++;
      counted += held;
    }
    if (t % 1000 == 0 && ioq_lograte_due(&r, t, W, &held)) {
      summaries++;
      counted += held;
    }
  }
  counted += ioq_lograte_take(&r);
  cr_assert_leq(shown + summaries, 60000 / W + 1, "%llu lines, %llu summaries",
                (unsigned long long)shown, (unsigned long long)summaries);
  cr_assert_eq(shown + counted, lines, "%llu shown + %llu counted != %llu lines",
               (unsigned long long)shown, (unsigned long long)counted, (unsigned long long)lines);
}

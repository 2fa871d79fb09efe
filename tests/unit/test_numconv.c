// SPDX-License-Identifier: Apache-2.0
/* Checked double -> uint64_t conversion (issue 12 item 10). */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/numconv.h"

Test(numconv, in_range_truncates_like_a_cast) {
  uint64_t v = 7;
  ioq_err e = {0};
  cr_assert_eq(ioq_u64_from_double(0.0, "x", &v, &e), 0);
  cr_assert_eq(v, 0);
  cr_assert_eq(ioq_u64_from_double(-0.0, "x", &v, &e), 0);
  cr_assert_eq(v, 0);
  cr_assert_eq(ioq_u64_from_double(41.99, "x", &v, &e), 0);
  cr_assert_eq(v, 41);
  /* the largest double below 2^64 */
  cr_assert_eq(ioq_u64_from_double(18446744073709549568.0, "x", &v, &e), 0);
  cr_assert_eq(v, 18446744073709549568ull);
}

Test(numconv, out_of_range_fails_and_names_the_value) {
  const double bad[] = {NAN, -NAN, INFINITY, -INFINITY, -1.0, -0.5, 18446744073709551616.0, 1e300};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t v = 7;
    ioq_err e = {0};
    cr_assert_eq(ioq_u64_from_double(bad[i], "capacity of sda", &v, &e), -1, "value #%zu", i);
    cr_assert_eq(v, 7, "untouched on failure");
    cr_assert_eq(e.code, ERANGE);
    cr_assert(strstr(e.msg, "capacity of sda: "), "%s", e.msg);
  }
}

Test(numconv, saturating) {
  cr_assert_eq(ioq_u64_from_double_sat(NAN), 0);
  cr_assert_eq(ioq_u64_from_double_sat(-INFINITY), 0);
  cr_assert_eq(ioq_u64_from_double_sat(-3.5), 0);
  cr_assert_eq(ioq_u64_from_double_sat(3.5), 3);
  cr_assert_eq(ioq_u64_from_double_sat(INFINITY), UINT64_MAX);
  cr_assert_eq(ioq_u64_from_double_sat(1e30), UINT64_MAX);
  cr_assert_eq(ioq_u64_from_double_sat(18446744073709551616.0), UINT64_MAX);
}

// SPDX-License-Identifier: Apache-2.0
/* ioq_grow: room kept, doubling, first size, overflow refused with the array
 * left as it was. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/grow.h"

Test(grow, room_left_is_the_same_array) {
  size_t cap = 4;
  int *a = malloc(cap * sizeof *a);
  cr_assert(a);
  cr_assert_eq(ioq_grow(a, &cap, 4, sizeof *a, 8), a);
  cr_assert_eq(cap, 4);
  free(a);
}

Test(grow, first_then_doubling) {
  size_t cap = 0;
  int *a = NULL;
  a = ioq_grow(a, &cap, 1, sizeof *a, 8);
  cr_assert(a);
  cr_assert_eq(cap, 8);
  for (int i = 0; i < 8; i++)
    a[i] = i;
  a = ioq_grow(a, &cap, 9, sizeof *a, 8);
  cr_assert(a);
  cr_assert_eq(cap, 16);
  for (int i = 0; i < 8; i++)
    cr_assert_eq(a[i], i, "element %d kept", i);
  a = ioq_grow(a, &cap, 100, sizeof *a, 8); /* doubled until it fits */
  cr_assert(a);
  cr_assert_eq(cap, 128);
  free(a);
}

Test(grow, overflow_refused_array_kept) {
  size_t cap = 2;
  char *a = malloc(cap);
  cr_assert(a);
  a[0] = 'x';
  cr_assert_null(ioq_grow(a, &cap, SIZE_MAX, 1, 2));
  cr_assert_eq(cap, 2);
  cr_assert_null(ioq_grow(a, &cap, 3, SIZE_MAX / 2, 2)); /* 4 elements of SIZE_MAX/2 bytes */
  cr_assert_eq(cap, 2);
  cr_assert_eq(a[0], 'x'); /* still the caller's */
  free(a);
}

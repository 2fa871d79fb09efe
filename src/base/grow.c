// SPDX-License-Identifier: Apache-2.0
/* Grow-by-doubling (grow.h). */
#include "base/grow.h"

#include <stdint.h>
#include <stdlib.h>

void *ioq_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first) {
  if (need <= *cap)
    return arr;
  size_t nc = *cap ? *cap : (first ? first : 1);
  while (nc < need) {
    if (nc > SIZE_MAX / 2)
      return NULL;
    nc *= 2;
  }
  if (elem == 0 || nc > SIZE_MAX / elem)
    return NULL;
  void *g = realloc(arr, nc * elem);
  if (!g)
    return NULL;
  *cap = nc;
  return g;
}

// SPDX-License-Identifier: Apache-2.0
/* Growing arrays: the one grow-by-doubling helper (a list read from the API
 * server, the kernel or a state file grows as it is read). */
#ifndef IOQOS_GROW_H
#define IOQOS_GROW_H

#include <stddef.h>

/* `arr` (room for *cap elements of `elem` bytes) with room for at least
 * `need` elements: `arr` itself when it has room, else the array moved to
 * a larger block, doubled from *cap (from `first` when *cap is 0) until
 * `need` fits, and *cap set to the new room. NULL when out of memory or when
 * the size would overflow: `arr` and *cap are then unchanged, and `arr` is
 * still the caller's to use or free. Callers ask for at least one element
 * more than they hold: with need 0 and nothing allocated yet, `arr` (NULL)
 * comes back as it is. */
void *ioq_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first);

#endif

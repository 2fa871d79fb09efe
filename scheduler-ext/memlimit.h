// SPDX-License-Identifier: Apache-2.0
/* The memory limit of this process's container, and the parse budget
 * derived from it.
 *
 * The limit is the smallest memory.max (cgroup v2) or memory.limit_in_bytes
 * (v1 memory controller, preferred on hybrid hosts where it is the one that
 * counts) of the process's cgroup and its ancestors up to the mount, found
 * through /proc/self/cgroup and /proc/self/mountinfo (the files are
 * parameters so tests use temp trees). */
#ifndef IOQOS_EXT_MEMLIMIT_H
#define IOQOS_EXT_MEMLIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Budget when there is no limit, and the clamp of the derived one. */
#define EXT_BUDGET_UNLIMITED (1ull << 30)
#define EXT_BUDGET_MIN (8ull << 20)
#define EXT_BUDGET_MAX (1ull << 30)

/* *limit = the limit in bytes, 0 if none is set. where (may be NULL) gets
 * the file it came from. Fails (with context) only when the files exist
 * but cannot be read or make no sense. */
int ext_memory_limit(const char *proc_cgroup, const char *mountinfo, uint64_t *limit, char *where,
                     size_t wsz, ioq_err *e);

/* A quarter of the limit (the rest: node cache, connection buffers, thread
 * stacks, the reply being built), clamped to [EXT_BUDGET_MIN,
 * EXT_BUDGET_MAX]; EXT_BUDGET_UNLIMITED for limit 0. */
size_t ext_parse_budget(uint64_t limit);

#endif

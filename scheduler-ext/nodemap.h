// SPDX-License-Identifier: Apache-2.0
/* Node name -> ext_nodeinfo, the node cache's index. Open addressing with
 * the 64-bit hash kept beside each entry, so a lookup touches one slot array
 * and compares one name: filter and prioritize look up every node of every
 * request (10000 lookups per filter+prioritize pair at 5000 nodes).
 * Not thread-safe (the node cache locks around it). */
#ifndef IOQOS_EXT_NODEMAP_H
#define IOQOS_EXT_NODEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nodeinfo.h"

struct ext_nodemap {
  struct ext_nodemap_slot {
    uint64_t hash;
    struct ext_nodeinfo *ni; /* NULL = empty */
  } * slots;
  size_t cap; /* power of two */
  size_t n;
};

/* hint: expected entries. -1 on OOM. */
int ext_nodemap_init(struct ext_nodemap *m, size_t hint);
/* Frees the map and every entry (ext_nodeinfo_free + free). */
void ext_nodemap_free(struct ext_nodemap *m);
struct ext_nodeinfo *ext_nodemap_find(const struct ext_nodemap *m, const char *name);
/* Inserts ni (owned by the map from now on), replacing and freeing an entry
 * of the same name. -1 on OOM (ni is then not owned). */
int ext_nodemap_put(struct ext_nodemap *m, struct ext_nodeinfo *ni);
/* Removes and frees the entry; false if there was none (not an error). */
bool ext_nodemap_del(struct ext_nodemap *m, const char *name);

/* Iteration: for (size_t i = 0; i < m->cap; i++) if (m->slots[i].ni) ... */

#endif

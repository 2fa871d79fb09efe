// SPDX-License-Identifier: Apache-2.0
/* The extender's own view of every node, for nodeCacheCapable (names-only)
 * requests: name -> ext_nodeinfo, fed by the kube informer's list and watch
 * events. Readers hold the read lock while they use entries. */
#ifndef IOQOS_EXT_NODECACHE_H
#define IOQOS_EXT_NODECACHE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "assumed.h"
#include "nodeinfo.h"

struct ext_nodecache;

/* assumed (may be NULL): placements are confirmed when a node lists pods and
 * forgotten when a node is deleted. */
struct ext_nodecache *ext_nodecache_new(struct ext_assumed *assumed);
void ext_nodecache_free(struct ext_nodecache *c);

/* Informer callbacks: a list arrives page by page (arrays of Node objects)
 * and, once complete, replaces all; an incomplete one is dropped. An event
 * ("ADDED", "MODIFIED", "DELETED") updates one node. Objects that are not
 * Nodes are logged and skipped. */
void ext_nodecache_list_begin(void *cache);
void ext_nodecache_list_page(void *cache, json_object *items);
void ext_nodecache_list_end(void *cache, bool complete);
/* A whole list in one call (begin + one page + end), for tests. */
void ext_nodecache_on_list(void *cache, json_object *items);
void ext_nodecache_on_event(void *cache, const char *type, json_object *node);

void ext_nodecache_rdlock(struct ext_nodecache *c);
void ext_nodecache_unlock(struct ext_nodecache *c);
/* Under the read lock: the node or NULL. */
const struct ext_nodeinfo *ext_nodecache_find(struct ext_nodecache *c, const char *name);

size_t ext_nodecache_size(struct ext_nodecache *c);
bool ext_nodecache_synced(struct ext_nodecache *c);

#endif

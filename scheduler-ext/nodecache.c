// SPDX-License-Identifier: Apache-2.0
#include "nodecache.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "nodemap.h"

struct ext_nodecache {
  pthread_rwlock_t lock;
  struct ext_nodemap nodes;
  struct ext_assumed *assumed;
  atomic_bool synced;
  atomic_size_t size;
  /* the informer frees each parsed page (a json-c tree ~13x its JSON text)
   * after list_page returns; the next event hands that memory back */
  atomic_bool trim_pending;
  /* the list being gathered page by page (informer thread only) */
  struct ext_nodemap fresh;
  bool building, fresh_oom;
  size_t seen, ok, missing, malformed;
};

static void drop_fresh(struct ext_nodecache *c);

struct ext_nodecache *ext_nodecache_new(struct ext_assumed *assumed) {
  struct ext_nodecache *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  if (ext_nodemap_init(&c->nodes, 0) < 0) {
    free(c);
    return NULL;
  }
  pthread_rwlock_init(&c->lock, NULL);
  c->assumed = assumed;
  return c;
}

void ext_nodecache_free(struct ext_nodecache *c) {
  if (!c)
    return;
  drop_fresh(c);
  ext_nodemap_free(&c->nodes);
  pthread_rwlock_destroy(&c->lock);
  free(c);
}

static void log_status(const struct ext_nodeinfo *ni, const struct ext_nodeinfo *old) {
  if (ni->status == EXT_NODE_MALFORMED &&
      (!old || old->status != EXT_NODE_MALFORMED || strcmp(old->error ? old->error : "", ni->error ? ni->error : "") != 0))
    ioq_warn("node annotation unusable node=%s error=\"%s\"", ni->name,
             ni->error ? ni->error : "out of memory keeping the node's annotation error");
}

/* True if the node's annotation is what the cached entry was built from:
 * node status changes far more often than the annotation, and then nothing
 * needs parsing. */
static bool unchanged(json_object *node, const struct ext_nodeinfo *old) {
  const char *text;
  size_t len;
  ioq_err e = {0};
  if (!old || ext_node_annotation(node, &text, &len, &e) < 0)
    return false;
  if (!text)
    return !old->anno && old->status == EXT_NODE_NO_ANNOTATION;
  return old->anno && strlen(old->anno) == len && memcmp(old->anno, text, len) == 0;
}

/* Builds the entry for a Node object; NULL (logged) if it is not a Node. */
static struct ext_nodeinfo *build(json_object *node, const struct ext_nodeinfo *old) {
  ioq_err e = {0};
  struct ext_nodeinfo *ni = calloc(1, sizeof *ni);
  if (!ni) {
    ioq_error("node cache: out of memory building a node entry");
    return NULL;
  }
  if (ext_nodeinfo_from_json(node, ni, &e) < 0) {
    ioq_warn("node cache: skipping object error=\"%s\"", e.msg);
    free(ni);
    return NULL;
  }
  log_status(ni, old);
  return ni;
}

static void confirm(struct ext_nodecache *c, const struct ext_nodeinfo *ni) {
  if (c->assumed && ni->st.n_pods)
    ext_assumed_confirm(c->assumed, ni->name, ni->st.pods, ni->st.n_pods);
}

static void drop_fresh(struct ext_nodecache *c) {
  if (c->building)
    ext_nodemap_free(&c->fresh);
  c->building = false;
}

void ext_nodecache_list_begin(void *cache) {
  struct ext_nodecache *c = cache;
  drop_fresh(c);
  c->seen = c->ok = c->missing = c->malformed = 0;
  c->fresh_oom = ext_nodemap_init(&c->fresh, 0) < 0;
  c->building = !c->fresh_oom;
}

void ext_nodecache_list_page(void *cache, json_object *items) {
  struct ext_nodecache *c = cache;
  size_t n = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
  if (!c->building)
    return;
  for (size_t i = 0; i < n; i++) {
    c->seen++;
    struct ext_nodeinfo *ni = build(json_object_array_get_idx(items, i), NULL);
    if (!ni)
      continue;
    enum ext_node_status st = ni->status;
    if (ext_nodemap_put(&c->fresh, ni) < 0) {
      ext_nodeinfo_free(ni);
      free(ni);
      c->fresh_oom = true;
      continue;
    }
    c->ok += st == EXT_NODE_OK;
    c->missing += st == EXT_NODE_NO_ANNOTATION;
    c->malformed += st == EXT_NODE_MALFORMED;
  }
  atomic_store(&c->trim_pending, true);
}

void ext_nodecache_list_end(void *cache, bool complete) {
  struct ext_nodecache *c = cache;
  if (!complete || !c->building || c->fresh_oom) {
    if (c->fresh_oom)
      ioq_error("node cache: out of memory building the node list; keeping the previous one");
    drop_fresh(c);
    return;
  }
  c->building = false;
  pthread_rwlock_wrlock(&c->lock);
  struct ext_nodemap old = c->nodes;
  c->nodes = c->fresh;
  atomic_store(&c->size, c->nodes.n);
  pthread_rwlock_unlock(&c->lock);
  ext_nodemap_free(&old);

  /* reported placements go now; those on nodes deleted while no watch ran
   * go when the sweep finds their pods gone (podsync.c) */
  pthread_rwlock_rdlock(&c->lock);
  for (size_t i = 0; i < c->nodes.cap; i++)
    if (c->nodes.slots[i].ni)
      confirm(c, c->nodes.slots[i].ni);
  pthread_rwlock_unlock(&c->lock);
  atomic_store(&c->synced, true);
  atomic_store(&c->trim_pending, true);
  ioq_info("node cache listed nodes=%zu with_state=%zu without_annotation=%zu malformed=%zu", c->seen,
           c->ok, c->missing, c->malformed);
}

void ext_nodecache_on_list(void *cache, json_object *items) {
  ext_nodecache_list_begin(cache);
  ext_nodecache_list_page(cache, items);
  ext_nodecache_list_end(cache, true);
}

void ext_nodecache_on_event(void *cache, const char *type, json_object *node) {
  struct ext_nodecache *c = cache;
  if (atomic_exchange(&c->trim_pending, false))
    malloc_trim(0);
  const char *name = ext_node_name(node);
  if (!name || !*name) {
    ioq_warn("node cache: %s event for an object without metadata.name", type);
    return;
  }
  if (strcmp(type, "DELETED") == 0) {
    pthread_rwlock_wrlock(&c->lock);
    ext_nodemap_del(&c->nodes, name);
    atomic_store(&c->size, c->nodes.n);
    pthread_rwlock_unlock(&c->lock);
    if (c->assumed)
      ext_assumed_forget_node(c->assumed, name);
    ioq_info("node removed from cache node=%s", name);
    return;
  }
  /* ADDED or MODIFIED: build outside the write lock (parsing takes time),
   * comparing against the current entry under the read lock */
  pthread_rwlock_rdlock(&c->lock);
  const struct ext_nodeinfo *old = ext_nodemap_find(&c->nodes, name);
  if (unchanged(node, old)) {
    confirm(c, old);
    pthread_rwlock_unlock(&c->lock);
    return;
  }
  struct ext_nodeinfo *ni = build(node, old);
  pthread_rwlock_unlock(&c->lock);
  if (!ni)
    return;
  pthread_rwlock_wrlock(&c->lock);
  int rc = ext_nodemap_put(&c->nodes, ni); /* frees the old entry */
  atomic_store(&c->size, c->nodes.n);
  pthread_rwlock_unlock(&c->lock);
  if (rc != 0) {
    ioq_error("node cache: out of memory updating node=%s", ni->name);
    ext_nodeinfo_free(ni);
    free(ni);
    return;
  }
  confirm(c, ni); /* only this (informer) thread replaces entries, so ni is still live */
}

void ext_nodecache_rdlock(struct ext_nodecache *c) { pthread_rwlock_rdlock(&c->lock); }
void ext_nodecache_unlock(struct ext_nodecache *c) { pthread_rwlock_unlock(&c->lock); }

const struct ext_nodeinfo *ext_nodecache_find(struct ext_nodecache *c, const char *name) {
  return ext_nodemap_find(&c->nodes, name);
}

size_t ext_nodecache_size(struct ext_nodecache *c) { return atomic_load(&c->size); }
bool ext_nodecache_synced(struct ext_nodecache *c) { return atomic_load(&c->synced); }

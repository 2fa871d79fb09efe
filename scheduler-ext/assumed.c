// SPDX-License-Identifier: Apache-2.0
#include "assumed.h"

#include <errno.h>
#include <stdbool.h>
#include <json-c/linkhash.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/monoclock.h"
#include "grant/podneed.h"
#include "base/grow.h"

struct placement {
  char uid[IOQ_POD_UID_MAX + 1];
  char key[IOQ_POD_NAMESPACE_MAX + IOQ_POD_NAME_MAX + 2]; /* namespace/name, for logs */
  char disk[IOQ_DISK_NAME_MAX + 1];
  uint64_t units[IOQ_RES_COUNT];
  uint64_t added_ms, expires_ms;
  uint64_t checked_ms; /* last handed to the sweep (0 = never) */
};

/* One node with placements or bind lockers. */
struct anode {
  char *name;
  pthread_mutex_t bind_lock;
  unsigned refs; /* holders of (or waiters for) bind_lock */
  struct placement *p;
  size_t n, cap;
};

struct ext_node_lock {
  struct ext_assumed *a;
  struct anode *n;
};

struct ext_assumed {
  pthread_mutex_t mu; /* guards the map, every list and `total` */
  struct lh_table *nodes;
  atomic_size_t total; /* placements in all lists, expired or not */
  uint64_t ttl_ms;
  uint64_t (*now_ms)(void);
};

static void anode_free(struct anode *n) {
  pthread_mutex_destroy(&n->bind_lock);
  free(n->p);
  free(n->name);
  free(n);
}

static void entry_free(struct lh_entry *e) { anode_free((struct anode *)lh_entry_v(e)); }

struct ext_assumed *ext_assumed_new(uint64_t ttl_ms) {
  struct ext_assumed *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->nodes = lh_kchar_table_new(64, entry_free);
  if (!a->nodes) {
    free(a);
    return NULL;
  }
  pthread_mutex_init(&a->mu, NULL);
  a->ttl_ms = ttl_ms;
  a->now_ms = ioq_mono_ms;
  return a;
}

void ext_assumed_free(struct ext_assumed *a) {
  if (!a)
    return;
  lh_table_free(a->nodes);
  pthread_mutex_destroy(&a->mu);
  free(a);
}

void ext_assumed_set_clock(struct ext_assumed *a, uint64_t (*now_ms)(void)) {
  pthread_mutex_lock(&a->mu);
  a->now_ms = now_ms ? now_ms : ioq_mono_ms;
  pthread_mutex_unlock(&a->mu);
}

static struct anode *find(struct ext_assumed *a, const char *node) {
  void *v = NULL;
  return lh_table_lookup_ex(a->nodes, node, &v) ? v : NULL;
}

/* Drops an unused node entry (no placements, nobody holding its lock). */
static void maybe_drop(struct ext_assumed *a, struct anode *n) {
  if (n->n == 0 && n->refs == 0)
    lh_table_delete(a->nodes, n->name); /* entry_free frees n */
}

static void remove_at(struct ext_assumed *a, struct anode *n, size_t i) {
  n->p[i] = n->p[n->n - 1];
  n->n--;
  a->total--;
}

static void expire(struct ext_assumed *a, struct anode *n, uint64_t now) {
  for (size_t i = 0; i < n->n;) {
    if (n->p[i].expires_ms <= now) {
      /* the safety bound: neither the node reported the pod nor did the
       * sweep see it end (a plugin too old to list pods, API errors) */
      ioq_warn("assumed placement expired after --assume-ttl node=%s pod=%s disk=%s", n->name,
               n->p[i].key, n->p[i].disk);
      remove_at(a, n, i);
    } else {
      i++;
    }
  }
}

size_t ext_assumed_extra(struct ext_assumed *a, const char *node, const char *self,
                         const struct ioq_disk_state *disks, size_t nd, uint64_t *extra) {
  memset(extra, 0, nd * IOQ_RES_COUNT * sizeof *extra);
  if (atomic_load(&a->total) == 0)
    return 0; /* the common case: nothing assumed anywhere, no lock taken */
  pthread_mutex_lock(&a->mu);
  size_t live = 0;
  struct anode *n = a->total ? find(a, node) : NULL;
  if (n) {
    expire(a, n, a->now_ms());
    live = n->n;
    for (size_t i = 0; i < n->n; i++)
      for (size_t d = 0; d < nd && !(self && strcmp(self, n->p[i].uid) == 0); d++)
        if (strcmp(disks[d].name, n->p[i].disk) == 0) {
          for (int r = 0; r < IOQ_RES_COUNT; r++)
            extra[d * IOQ_RES_COUNT + r] += n->p[i].units[r];
          break;
        }
    maybe_drop(a, n);
  }
  pthread_mutex_unlock(&a->mu);
  return live;
}

/* The node's entry, created if missing (a->mu held). NULL on OOM. */
static struct anode *get_or_create(struct ext_assumed *a, const char *node) {
  struct anode *n = find(a, node);
  if (n)
    return n;
  n = calloc(1, sizeof *n);
  if (n && !(n->name = strdup(node))) {
    free(n);
    return NULL;
  }
  if (!n)
    return NULL;
  pthread_mutex_init(&n->bind_lock, NULL);
  if (lh_table_insert(a->nodes, n->name, n) != 0) {
    anode_free(n);
    return NULL;
  }
  return n;
}

struct ext_node_lock *ext_assumed_lock_node(struct ext_assumed *a, const char *node, ioq_err *e) {
  struct ext_node_lock *l = calloc(1, sizeof *l);
  if (!l) {
    ioq_fail(e, ENOMEM, "out of memory building the node lock of %s", node);
    return NULL;
  }
  pthread_mutex_lock(&a->mu);
  struct anode *n = get_or_create(a, node);
  if (!n) {
    pthread_mutex_unlock(&a->mu);
    free(l);
    ioq_fail(e, ENOMEM, "out of memory building the assumed placements of node %s", node);
    return NULL;
  }
  n->refs++;
  pthread_mutex_unlock(&a->mu);
  pthread_mutex_lock(&n->bind_lock);
  l->a = a;
  l->n = n;
  return l;
}

void ext_assumed_unlock_node(struct ext_node_lock *l) {
  if (!l)
    return;
  struct ext_assumed *a = l->a;
  pthread_mutex_unlock(&l->n->bind_lock);
  pthread_mutex_lock(&a->mu);
  l->n->refs--;
  maybe_drop(a, l->n);
  pthread_mutex_unlock(&a->mu);
  free(l);
}

/* Records pl on node n, replacing the pod's earlier one (a->mu held). */
static int put(struct ext_assumed *a, struct anode *n, const struct placement *pl, ioq_err *e) {
  for (size_t i = 0; i < n->n; i++)
    if (strcmp(n->p[i].uid, pl->uid) == 0) {
      n->p[i] = *pl;
      return 0;
    }
  struct placement *np = ioq_grow(n->p, &n->cap, n->n + 1, sizeof *np, 4);
  if (!np)
    return ioq_fail(e, ENOMEM, "out of memory growing the assumed placements of a node");
  n->p = np;
  n->p[n->n++] = *pl;
  a->total++;
  return 0;
}

static int make(struct placement *pl, const char *pod_uid, const char *pod_key, const char *disk,
                const uint64_t *units, ioq_err *e) {
  memset(pl, 0, sizeof *pl);
  if (snprintf(pl->uid, sizeof pl->uid, "%s", pod_uid) >= (int)sizeof pl->uid ||
      snprintf(pl->disk, sizeof pl->disk, "%s", disk) >= (int)sizeof pl->disk)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "assumed placement: pod UID or disk name too long");
  snprintf(pl->key, sizeof pl->key, "%s", pod_key);
  memcpy(pl->units, units, sizeof pl->units);
  return 0;
}

int ext_assumed_add(struct ext_assumed *a, const char *node, const char *pod_uid,
                    const char *pod_key, const char *disk, const uint64_t *units, ioq_err *e) {
  struct placement pl;
  if (make(&pl, pod_uid, pod_key, disk, units, e) < 0)
    return -1;
  pthread_mutex_lock(&a->mu);
  pl.added_ms = a->now_ms();
  pl.expires_ms = pl.added_ms + a->ttl_ms;
  struct anode *n = find(a, node);
  int rc = n ? put(a, n, &pl, e)
             : ioq_fail(e, IOQ_ENOTFOUND, "assumed placement on node %s without its bind lock", node);
  pthread_mutex_unlock(&a->mu);
  return rc;
}

int ext_assumed_restore(struct ext_assumed *a, const char *node, const char *pod_uid,
                        const char *pod_key, const char *disk, const uint64_t *units, ioq_err *e) {
  struct placement pl;
  if (make(&pl, pod_uid, pod_key, disk, units, e) < 0)
    return -1;
  pthread_mutex_lock(&a->mu);
  pl.added_ms = a->now_ms();
  pl.expires_ms = pl.added_ms + a->ttl_ms;
  struct anode *n = get_or_create(a, node);
  int rc = n ? put(a, n, &pl, e)
             : ioq_fail(e, ENOMEM, "out of memory building the assumed placements of node %s",
                        node);
  if (n)
    maybe_drop(a, n);
  pthread_mutex_unlock(&a->mu);
  return rc;
}

size_t ext_assumed_older(struct ext_assumed *a, uint64_t min_age_ms, struct ext_assumed_ref **out,
                         ioq_err *e) {
  *out = NULL;
  pthread_mutex_lock(&a->mu);
  uint64_t now = a->now_ms();
  size_t n = 0, cap = 0;
  struct ext_assumed_ref *refs = NULL;
  struct lh_entry *ent;
  lh_foreach(a->nodes, ent) {
    struct anode *nd = (struct anode *)lh_entry_v(ent);
    for (size_t i = 0; i < nd->n; i++) {
      struct placement *pl = &nd->p[i];
      uint64_t age = now - pl->added_ms;
      /* checked again after a quarter of its age, at most a minute: a pod
       * kubelet is slow to admit (or on a node whose plugin never lists
       * pods) costs the API server one GET a minute, not one per sweep */
      uint64_t again = age / 4 < 60000u ? age / 4 : 60000u;
      if (age < min_age_ms || (pl->checked_ms && now - pl->checked_ms < again))
        continue;
      pl->checked_ms = now;
      struct ext_assumed_ref *grown = ioq_grow(refs, &cap, n + 1, sizeof *grown, 16);
      if (!grown) {
        pthread_mutex_unlock(&a->mu);
        free(refs);
        ioq_fail(e, ENOMEM, "out of memory building the list of assumed placements");
        return (size_t)-1;
      }
      refs = grown;
      struct ext_assumed_ref *r = &refs[n++];
      snprintf(r->node, sizeof r->node, "%s", nd->name);
      memcpy(r->uid, nd->p[i].uid, sizeof r->uid);
      memcpy(r->key, nd->p[i].key, sizeof r->key);
      r->age_ms = now - nd->p[i].added_ms;
    }
  }
  pthread_mutex_unlock(&a->mu);
  *out = refs;
  return n;
}

bool ext_assumed_remove(struct ext_assumed *a, const char *node, const char *pod_uid) {
  bool found = false;
  pthread_mutex_lock(&a->mu);
  struct anode *n = find(a, node);
  if (n) {
    for (size_t i = 0; i < n->n && !found; i++)
      if (strcmp(n->p[i].uid, pod_uid) == 0) {
        remove_at(a, n, i);
        found = true;
      }
    maybe_drop(a, n);
  }
  pthread_mutex_unlock(&a->mu);
  return found;
}

size_t ext_assumed_confirm(struct ext_assumed *a, const char *node,
                           const char (*pod_uids)[IOQ_POD_UID_STR_MAX + 1], size_t np) {
  size_t dropped = 0;
  pthread_mutex_lock(&a->mu);
  struct anode *n = a->total && np ? find(a, node) : NULL;
  if (n) {
    for (size_t i = 0; i < n->n;) {
      bool seen = false;
      for (size_t k = 0; k < np && !seen; k++)
        seen = strcmp(n->p[i].uid, pod_uids[k]) == 0;
      if (seen) {
        ioq_debug("assumed placement reported by node node=%s pod=%s disk=%s", node,
                  n->p[i].key, n->p[i].disk);
        remove_at(a, n, i);
        dropped++;
      } else {
        i++;
      }
    }
    maybe_drop(a, n);
  }
  pthread_mutex_unlock(&a->mu);
  return dropped;
}

void ext_assumed_forget_node(struct ext_assumed *a, const char *node) {
  pthread_mutex_lock(&a->mu);
  struct anode *n = find(a, node);
  if (n) {
    a->total -= n->n;
    n->n = 0;
    maybe_drop(a, n);
  }
  pthread_mutex_unlock(&a->mu);
}

size_t ext_assumed_count(struct ext_assumed *a) {
  pthread_mutex_lock(&a->mu);
  uint64_t now = a->now_ms();
  struct lh_entry *ent, *tmp;
  lh_foreach_safe(a->nodes, ent, tmp) {
    struct anode *n = (struct anode *)lh_entry_v(ent);
    expire(a, n, now);
    maybe_drop(a, n);
  }
  size_t total = a->total;
  pthread_mutex_unlock(&a->mu);
  return total;
}

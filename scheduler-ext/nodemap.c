// SPDX-License-Identifier: Apache-2.0
#include "nodemap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a: node names are short, and the hash only has to spread them. */
static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

int ext_nodemap_init(struct ext_nodemap *m, size_t hint) {
  size_t cap = 64;
  while (cap < hint * 2)
    cap <<= 1;
  m->slots = calloc(cap, sizeof *m->slots);
  m->cap = m->slots ? cap : 0;
  m->n = 0;
  return m->slots ? 0 : -1;
}

static void free_entry(struct ext_nodeinfo *ni) {
  ext_nodeinfo_free(ni);
  free(ni);
}

void ext_nodemap_free(struct ext_nodemap *m) {
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].ni)
      free_entry(m->slots[i].ni);
  free(m->slots);
  m->slots = NULL;
  m->cap = m->n = 0;
}

/* Slot holding name, or the empty slot where it would go. */
static size_t probe(const struct ext_nodemap *m, const char *name, uint64_t h) {
  size_t mask = m->cap - 1, i = (size_t)h & mask;
  while (m->slots[i].ni && (m->slots[i].hash != h || strcmp(m->slots[i].ni->name, name) != 0))
    i = (i + 1) & mask;
  return i;
}

struct ext_nodeinfo *ext_nodemap_find(const struct ext_nodemap *m, const char *name) {
  if (!m->cap)
    return NULL;
  return m->slots[probe(m, name, hash_name(name))].ni;
}

static int grow(struct ext_nodemap *m) {
  struct ext_nodemap bigger = {.cap = m->cap * 2};
  bigger.slots = calloc(bigger.cap, sizeof *bigger.slots);
  if (!bigger.slots)
    return -1;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].ni)
      bigger.slots[probe(&bigger, m->slots[i].ni->name, m->slots[i].hash)] = m->slots[i];
  bigger.n = m->n;
  free(m->slots);
  *m = bigger;
  return 0;
}

int ext_nodemap_put(struct ext_nodemap *m, struct ext_nodeinfo *ni) {
  if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
    return -1; /* load factor stays at most 1/2 */
  uint64_t h = hash_name(ni->name);
  size_t i = probe(m, ni->name, h);
  if (m->slots[i].ni)
    free_entry(m->slots[i].ni);
  else
    m->n++;
  m->slots[i] = (struct ext_nodemap_slot){h, ni};
  return 0;
}

bool ext_nodemap_del(struct ext_nodemap *m, const char *name) {
  if (!m->cap)
    return false;
  size_t mask = m->cap - 1, i = probe(m, name, hash_name(name));
  if (!m->slots[i].ni)
    return false;
  free_entry(m->slots[i].ni);
  m->slots[i].ni = NULL;
  m->n--;
  /* backward-shift deletion keeps every probe chain unbroken */
  for (size_t j = (i + 1) & mask; m->slots[j].ni; j = (j + 1) & mask) {
    size_t home = (size_t)m->slots[j].hash & mask;
    /* move j into the hole i unless its home lies cyclically in (i, j] */
    bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      m->slots[i] = m->slots[j];
      m->slots[j].ni = NULL;
      i = j;
    }
  }
  return true;
}

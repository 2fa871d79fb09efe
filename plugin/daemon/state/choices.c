// SPDX-License-Identifier: Apache-2.0
/* The ring of GetPreferredAllocation decisions (choices.h). */
#include "choices.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "support/filelog.h" /* pt_realtime_now */

struct choices {
  pthread_mutex_t mu;
  struct choice ring[CHOICES_MAX];
  size_t next, len;
};

struct choices *choices_new(void) {
  struct choices *x = calloc(1, sizeof *x);
  if (x)
    pthread_mutex_init(&x->mu, NULL);
  return x;
}

void choices_free(struct choices *x) {
  if (!x)
    return;
  pthread_mutex_destroy(&x->mu);
  free(x);
}

void choices_note(struct choices *x, const char *ns, const char *name, enum ioq_resource r,
                  const char *disk, const char *how, const char *note) {
  if (!x)
    return;
  struct choice nc = {0};
  if (!ioq_copy(nc.ns, sizeof nc.ns, ns) || !ioq_copy(nc.name, sizeof nc.name, name) ||
      !ioq_copy(nc.disk, sizeof nc.disk, disk)) {
    /* a cut name would be found under another pod or disk: not remembered */
    ioq_warn("explain: choice not remembered, name too long pod=%.80s/%.80s disk=%.80s", ns, name,
             disk);
    return;
  }
  nc.r = r;
  ioq_copy_trunc(nc.how, sizeof nc.how, how ? how : "");    /* shown text */
  ioq_copy_trunc(nc.note, sizeof nc.note, note ? note : ""); /* shown text */
  nc.at = pt_realtime_now();
  pthread_mutex_lock(&x->mu);
  x->ring[x->next] = nc;
  x->next = (x->next + 1) % CHOICES_MAX;
  if (x->len < CHOICES_MAX)
    x->len++;
  pthread_mutex_unlock(&x->mu);
}

bool choices_find(struct choices *x, const char *ns, const char *name, enum ioq_resource r,
                  const char *disk, struct choice *out) {
  if (!x)
    return false;
  bool found = false;
  pthread_mutex_lock(&x->mu);
  for (size_t k = 0; k < x->len && !found; k++) {
    const struct choice *c = &x->ring[(x->next + CHOICES_MAX - 1 - k) % CHOICES_MAX];
    if (c->r == r && strcmp(c->disk, disk) == 0 && strcmp(c->name, name) == 0 &&
        strcmp(c->ns, ns) == 0) {
      *out = *c;
      found = true;
    }
  }
  pthread_mutex_unlock(&x->mu);
  return found;
}

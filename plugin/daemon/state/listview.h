// SPDX-License-Identifier: Apache-2.0
/* The node's view from a pod resources List: which pods hold units (and
 * how many of each resource) and how many units of each disk are allocated,
 * an ID handed from an init container to an app container counted once.
 * Built from a List (podres.h) and looked up; not locked: the pod table
 * keeps the view of the latest List under its table lock and answers the
 * daemon's questions about it (listview_note, listview_allocated, ...,
 * core/podtable.h), where the grants in place the List does not show are
 * added. */
#ifndef IOQOS_PLUGIN_LISTVIEW_H
#define IOQOS_PLUGIN_LISTVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "units/units.h"
#include "podres.h"

struct listed_pod {
  char ns[PODRES_NAME_MAX + 1];
  char name[PODRES_NAME_MAX + 1];
  uint64_t held[IOQ_RES_COUNT]; /* distinct unit IDs per resource */
};

struct alloc_entry {
  char disk[IOQ_DISK_NAME_MAX + 1];
  uint64_t units[IOQ_RES_COUNT];
};

struct listview {
  bool have_list;            /* a List is in the view (all zero: none yet) */
  double listed_at;          /* the List's asked_at */
  struct listed_pod *listed; /* the pods holding units */
  size_t n_listed;
  struct alloc_entry *alloc; /* units allocated per disk */
  size_t n_alloc;
};

/* Builds the view of List `l` into *v (malloc'd parts; listview_free).
 * Returns false, *v empty, when out of memory (logged). */
bool listview_build(const struct podres_list *l, struct listview *v);
/* Makes `next` (just built) the view in *cur, freeing the one it replaces,
 * unless *cur is of a List asked for later (the reconcile loop and
 * GetPreferredAllocation list concurrently): then returns false and leaves
 * both as they are. */
bool listview_replace(struct listview *cur, const struct listview *next);
void listview_free(struct listview *v);
/* The pod in the view's pods holding units (NULL if not there). */
const struct listed_pod *listview_find(const struct listview *v, const char *ns, const char *name);
/* Units allocated on `disk` per the view (0 when it lists none). */
void listview_disk_units(const struct listview *v, const char *disk, uint64_t out[IOQ_RES_COUNT]);

#endif

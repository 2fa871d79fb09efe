// SPDX-License-Identifier: Apache-2.0
/* The view from a pod resources List: building it, replacing it with a later
 * one, looking pods and disks up in it (listview.h). */
#include "listview.h"

#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/log.h"

/* Copies a char array field into one of the same size (checked at compile
 * time), so it cannot cut. */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool listview_build(const struct podres_list *l, struct listview *v) {
  memset(v, 0, sizeof *v);
  struct listed_pod *lp = calloc(l->n ? l->n : 1, sizeof *lp);
  size_t total = 0;
  for (size_t i = 0; i < l->n; i++)
    for (size_t k = 0; k < l->pods[i].n_ctrs; k++)
      total += l->pods[i].ctrs[k].n_ids;
  const char **ids = calloc(total ? total : 1, sizeof *ids);
  struct alloc_entry *al = NULL;
  size_t n_al = 0;
  if (!lp || !ids)
    goto oom;
  size_t m = 0, n_lp = 0;
  for (size_t i = 0; i < l->n; i++) {
    if (!l->pods[i].n_ctrs) /* listed, but holding no ioqos units */
      continue;
    struct listed_pod *o = &lp[n_lp++];
    IOQ_COPY_FIELD(o->ns, l->pods[i].ns);
    IOQ_COPY_FIELD(o->name, l->pods[i].name);
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      o->held[r] = podres_pod_count(&l->pods[i], (enum ioq_resource)r);
    for (size_t k = 0; k < l->pods[i].n_ctrs; k++)
      for (size_t j = 0; j < l->pods[i].ctrs[k].n_ids; j++)
        ids[m++] = l->pods[i].ctrs[k].ids[j];
  }
  /* an ID handed from an init container to an app container counts once */
  qsort(ids, m, sizeof *ids, cmp_str);
  al = calloc(m ? m : 1, sizeof *al);
  if (!al)
    goto oom;
  for (size_t i = 0; i < m; i++) {
    if (i > 0 && strcmp(ids[i], ids[i - 1]) == 0)
      continue;
    struct ioq_unit_id u;
    if (ioq_unit_id_parse(ids[i], &u, NULL) < 0)
      continue;
    size_t d = 0;
    while (d < n_al && strcmp(al[d].disk, u.disk) != 0)
      d++;
    if (d == n_al)
      ioq_copy_trunc(al[n_al++].disk, sizeof al[0].disk, u.disk); /* same-size fields: fits */
    al[d].units[u.res]++;
  }
  free(ids);
  v->have_list = true;
  v->listed_at = l->asked_at;
  v->listed = lp;
  v->n_listed = n_lp;
  v->alloc = al;
  v->n_alloc = n_al;
  return true;
oom:
  ioq_error("noting the pod resources list failed reason=out-of-memory");
  free(lp);
  free(ids);
  free(al);
  return false;
}

bool listview_replace(struct listview *cur, const struct listview *next) {
  if (cur->have_list && next->listed_at < cur->listed_at)
    return false;
  listview_free(cur);
  *cur = *next;
  return true;
}

void listview_free(struct listview *v) {
  free(v->listed);
  free(v->alloc);
  memset(v, 0, sizeof *v);
}

const struct listed_pod *listview_find(const struct listview *v, const char *ns,
                                       const char *name) {
  for (size_t i = 0; i < v->n_listed; i++)
    if (strcmp(v->listed[i].name, name) == 0 && strcmp(v->listed[i].ns, ns) == 0)
      return &v->listed[i];
  return NULL;
}

void listview_disk_units(const struct listview *v, const char *disk, uint64_t out[IOQ_RES_COUNT]) {
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    out[r] = 0;
  for (size_t i = 0; i < v->n_alloc; i++)
    if (strcmp(v->alloc[i].disk, disk) == 0)
      for (int r = 0; r < IOQ_RES_COUNT; r++)
        out[r] = v->alloc[i].units[r];
}

// SPDX-License-Identifier: Apache-2.0
/* The last pod resources List as the pod table keeps it (listview.h). */
#include "state/listview.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "state/drastate.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "podtable_internal.h"

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void listview_note(struct podtable *f, const struct podres_list *l) {
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
    PT_COPY_FIELD(o->ns, l->pods[i].ns);
    PT_COPY_FIELD(o->name, l->pods[i].name);
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
  pthread_mutex_lock(&f->lock);
  if (f->have_list && l->asked_at < f->listed_at) {
    pthread_mutex_unlock(&f->lock);
    ioq_debug("pod resources List ignored: a later one is already noted");
    free(lp);
    free(al);
    return;
  }
  f->listed_at = l->asked_at;
  free(f->listed);
  free(f->alloc);
  f->listed = lp;
  f->n_listed = n_lp;
  f->alloc = al;
  f->n_alloc = n_al;
  f->have_list = true;
  pthread_mutex_unlock(&f->lock);
  return;
oom:
  ioq_error("noting the pod resources list failed reason=out-of-memory");
  free(lp);
  free(ids);
  free(al);
}

size_t listview_listed_uids(struct podtable *f, struct podcache *pc,
                            char (**out)[IOQ_POD_UID_STR_MAX + 1]) {
  *out = NULL;
  pthread_mutex_lock(&f->lock);
  size_t n = f->n_listed;
  struct listed_pod *copy = malloc((n ? n : 1) * sizeof *copy);
  if (copy && n)
    memcpy(copy, f->listed, n * sizeof *copy);
  pthread_mutex_unlock(&f->lock);
  char (*uids)[IOQ_POD_UID_STR_MAX + 1] = calloc(n ? n : 1, sizeof *uids);
  if (!copy || !uids) {
    free(copy);
    free(uids);
    return 0;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    struct pod_info pi;
    if (podcache_peek(pc, copy[i].ns, copy[i].name, &pi) && pi.uid[0]) {
      if (ioq_copy(uids[m], sizeof uids[0], pi.uid))
        m++;
      else /* a cut UID would be another pod's */
        ioq_warn("pod %s/%s: uid too long, not listed uid=%.80s", copy[i].ns, copy[i].name,
                 pi.uid);
    }
  }
  free(copy);
  *out = uids;
  return m;
}

/* The pod in the last List's pods holding units (NULL if not there). */
const struct listed_pod *pt_find_listed_locked(struct podtable *f, const char *ns,
                                                   const char *name) {
  for (size_t i = 0; i < f->n_listed; i++)
    if (strcmp(f->listed[i].name, name) == 0 && strcmp(f->listed[i].ns, ns) == 0)
      return &f->listed[i];
  return NULL;
}

bool listview_pod_held(struct podtable *f, const char *ns, const char *name,
                       uint64_t held[IOQ_RES_COUNT]) {
  pthread_mutex_lock(&f->lock);
  const struct listed_pod *lp = pt_find_listed_locked(f, ns, name);
  bool found = lp != NULL;
  if (found)
    memcpy(held, lp->held, sizeof lp->held);
  pthread_mutex_unlock(&f->lock);
  if (!found)
    memset(held, 0, IOQ_RES_COUNT * sizeof *held);
  return found;
}

void listview_allocated(struct podtable *f, const char *disk, uint64_t out[IOQ_RES_COUNT]) {
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    out[r] = 0;
  if (f->o.dra) { /* DRA mode: claims hold every unit (no device-plugin units exist) */
    drastate_disk_units(f->o.dra, disk, out);
    return;
  }
  pthread_mutex_lock(&f->lock);
  for (size_t i = 0; i < f->n_alloc; i++)
    if (strcmp(f->alloc[i].disk, disk) == 0)
      for (int r = 0; r < IOQ_RES_COUNT; r++)
        out[r] = f->alloc[i].units[r];
  /* pods with limits in place that the List does not show holding units (a
   * restarting kubelet's, one whose PreStart raced the List, a regular init
   * container's) still hold theirs */
  for (size_t i = 0; i < f->n; i++) {
    const struct ioq_disk_grant *g = ioq_grant_find(&f->pods[i].grant, disk);
    if (!g || pt_find_listed_locked(f, f->pods[i].ns, f->pods[i].name))
      continue;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      out[r] += g->units[r];
  }
  pthread_mutex_unlock(&f->lock);
}

bool listview_have_list(struct podtable *f) {
  pthread_mutex_lock(&f->lock);
  bool h = f->have_list;
  pthread_mutex_unlock(&f->lock);
  return h;
}

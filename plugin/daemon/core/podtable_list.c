// SPDX-License-Identifier: Apache-2.0
/* The view from the last pod resources List as the pod table keeps it
 * (podtable.h; the view itself: state/listview.h): noting a List under the
 * table lock, and the questions asked of it, the allocated units counting
 * the grants in place the List does not show. */
#include "podtable.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "state/drastate.h"
#include "state/listview.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "podtable_internal.h"

void listview_note(struct podtable *f, const struct podres_list *l) {
  struct listview next;
  if (!listview_build(l, &next))
    return;
  pthread_mutex_lock(&f->lock);
  bool taken = listview_replace(&f->list, &next);
  pthread_mutex_unlock(&f->lock);
  if (!taken) {
    ioq_debug("pod resources List ignored: a later one is already noted");
    listview_free(&next);
  }
}

size_t listview_listed_uids(struct podtable *f, struct podcache *pc,
                            char (**out)[IOQ_POD_UID_STR_MAX + 1]) {
  *out = NULL;
  pthread_mutex_lock(&f->lock);
  size_t n = f->list.n_listed;
  struct listed_pod *copy = malloc((n ? n : 1) * sizeof *copy);
  if (copy && n)
    memcpy(copy, f->list.listed, n * sizeof *copy);
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

bool listview_pod_held(struct podtable *f, const char *ns, const char *name,
                       uint64_t held[IOQ_RES_COUNT]) {
  pthread_mutex_lock(&f->lock);
  const struct listed_pod *lp = listview_find(&f->list, ns, name);
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
  listview_disk_units(&f->list, disk, out);
  /* pods with limits in place that the List does not show holding units (a
   * restarting kubelet's, one whose PreStart raced the List, a regular init
   * container's) still hold theirs */
  for (size_t i = 0; i < f->n; i++) {
    const struct ioq_disk_grant *g = ioq_grant_find(&f->pods[i].grant, disk);
    if (!g || listview_find(&f->list, f->pods[i].ns, f->pods[i].name))
      continue;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      out[r] += g->units[r];
  }
  pthread_mutex_unlock(&f->lock);
}

bool listview_have_list(struct podtable *f) {
  pthread_mutex_lock(&f->lock);
  bool h = f->list.have_list;
  pthread_mutex_unlock(&f->lock);
  return h;
}

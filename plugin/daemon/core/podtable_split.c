// SPDX-License-Identifier: Apache-2.0
/* What the pod table keeps in place on a grant disk beside the grant
 * itself: the read/write split of combined-direction grants
 * (podtable_get_split, podtable_set_split) and the opt-in burst above it
 * (podtable_set_burst). */
#include "podtable.h"

#include <pthread.h>
#include <string.h>

#include "support/filelog.h"
#include "podtable_internal.h"
#include "cgroup/cgwrite.h"
#include "grant/dirsplit.h"
#include "base/fsutil.h"

/* the pod's grant disk `disk` and its full-grant split; with `lock` held */
static const struct applied_pod *split_find_locked(struct podtable *f, const char *uid,
                                                   const char *disk, size_t *d,
                                                   struct ioq_io_limits *grant) {
  const struct applied_pod *ap = pt_find_locked(f, uid);
  for (size_t i = 0; ap && !ap->init_unknown && i < ap->grant.n; i++)
    if (strcmp(ap->grant.disks[i].disk, disk) == 0 && ap->full[i].rbps + ap->full[i].riops) {
      *grant = ap->full[i];
      *d = i;
      return ap;
    }
  return NULL;
}

bool podtable_get_split(struct podtable *f, const char *uid, const char *disk,
                        struct ioq_io_limits *grant, struct ioq_io_limits *cur) {
  pthread_mutex_lock(&f->lock);
  size_t d = 0;
  const struct applied_pod *ap = split_find_locked(f, uid, disk, &d, grant);
  if (ap)
    *cur = ap->has_split[d] ? ap->split[d] : *grant;
  pthread_mutex_unlock(&f->lock);
  return ap != NULL;
}

int podtable_set_split(struct podtable *f, const char *uid, const char *disk,
                       const struct ioq_io_limits *grant, const struct ioq_io_limits *split,
                       ioq_err *e) {
  if (!ioq_dirsplit_valid(grant, split))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "disk %s: read/write split is not within the grant", disk);
  pthread_mutex_lock(&f->apply_lock);
  pthread_mutex_lock(&f->lock);
  size_t d = 0;
  struct ioq_io_limits g;
  const struct applied_pod *ap = split_find_locked(f, uid, disk, &d, &g);
  struct applied_pod copy;
  bool same = ap && ioq_limits_eq(&g, grant);
  if (same)
    copy = *ap; /* its init_ids stay owned by the table; not used here */
  pthread_mutex_unlock(&f->lock);
  int rc = 0;
  if (same) {
    /* the table changes only under apply_lock, held: the copy stays true */
    struct ioq_cg cg;
    /* weights left as they are; a burst in place stays on top of the split */
    struct ioq_disk_setting s = {.dev = copy.devs[d], .max = pt_with_burst(*split, copy.burst[d])};
    struct ioq_apply_opts ao = {.sysfs_root = f->sysfs_root};
    struct ioq_apply_report rep;
    if (ioq_cg_open(copy.cgroup, copy.version, &cg, e) < 0 ||
        ioq_cg_apply_disk(&cg, &s, &ao, &rep, e) < 0) {
      ioq_err_prefix(e, "pod %s/%s disk %s", copy.ns, copy.name, disk);
      rc = -1;
    } else {
      pthread_mutex_lock(&f->lock);
      struct applied_pod *w = pt_find_locked(f, uid);
      if (w) {
        w->split[d] = *split;
        w->has_split[d] = true;
        pt_note_written_locked(w, disk, &rep); /* what `ioqosctl explain` shows: the split written */
      }
      pthread_mutex_unlock(&f->lock);
      rc = 1;
    }
  }
  pthread_mutex_unlock(&f->apply_lock);
  return rc;
}

int podtable_set_burst(struct podtable *f, const char *uid, const char *disk,
                       const uint64_t extra[IOQ_RES_COUNT], ioq_err *e) {
  /* the caller holds apply_lock (podtable_writes_lock): the table changes
   * only under it, so the copy taken here stays true across the write */
  pthread_mutex_lock(&f->lock);
  const struct applied_pod *ap = pt_find_locked(f, uid);
  size_t d = 0;
  bool found = false;
  for (size_t i = 0; ap && !ap->init_unknown && i < ap->grant.n && !found; i++)
    if (strcmp(ap->grant.disks[i].disk, disk) == 0 && ap->full[i].rbps + ap->full[i].riops) {
      d = i;
      found = true;
    }
  struct applied_pod copy;
  if (found)
    copy = *ap; /* its init_ids and files stay owned by the table; not used here */
  pthread_mutex_unlock(&f->lock);
  if (!found || memcmp(copy.burst[d], extra, sizeof copy.burst[d]) == 0)
    return 0;
  struct ioq_io_limits base = copy.has_split[d] ? copy.split[d] : copy.full[d];
  struct ioq_cg cg;
  struct ioq_disk_setting s = {.dev = copy.devs[d], .max = pt_with_burst(base, extra)};
  struct ioq_apply_opts ao = {.sysfs_root = f->sysfs_root};
  struct ioq_apply_report rep;
  if (ioq_cg_open(copy.cgroup, copy.version, &cg, e) < 0 ||
      ioq_cg_apply_disk(&cg, &s, &ao, &rep, e) < 0) {
    ioq_err_prefix(e, "pod %s/%s disk %s: burst", copy.ns, copy.name, disk);
    /* a cut stays what is wanted when it cannot be written (the disk is
     * gone): the table says so, the reconcile loop writes it once it can,
     * and the pass does not retry (and report) it every interval */
    bool cut = extra[IOQ_RES_BANDWIDTH] <= copy.burst[d][IOQ_RES_BANDWIDTH] &&
               extra[IOQ_RES_IOPS] <= copy.burst[d][IOQ_RES_IOPS];
    pthread_mutex_lock(&f->lock);
    struct applied_pod *w = cut ? pt_find_locked(f, uid) : NULL;
    if (w)
      memcpy(w->burst[d], extra, sizeof w->burst[d]);
    pthread_mutex_unlock(&f->lock);
    return -1;
  }
  pthread_mutex_lock(&f->lock);
  struct applied_pod *w = pt_find_locked(f, uid);
  if (w) {
    memcpy(w->burst[d], extra, sizeof w->burst[d]);
    pt_note_written_locked(w, disk, &rep);
  }
  pthread_mutex_unlock(&f->lock);
  return 1;
}

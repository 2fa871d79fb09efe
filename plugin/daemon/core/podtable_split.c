// SPDX-License-Identifier: Apache-2.0
/* Combined-direction grants: the read/write split of a pod's grant on a
 * disk that the pod table keeps in place (podtable_get_split, podtable_set_split). */
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
    struct ioq_disk_setting s = {.dev = copy.devs[d], .max = *split}; /* weights left as they are */
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
        /* what `ioqosctl explain` shows for the files: the split written */
        double now = pt_realtime_now();
        for (size_t i = 0; i < rep.n; i++)
          for (size_t k = 0; rep.steps[i].changed && k < w->n_files; k++)
            if (strcmp(w->files[k].file, rep.steps[i].file) == 0 &&
                strcmp(w->files[k].disk, disk) == 0) {
              struct podtable_file *wf = &w->files[k];
              ioq_copy_trunc(wf->written, sizeof wf->written, rep.steps[i].written);
              ioq_copy_trunc(wf->readback, sizeof wf->readback, rep.steps[i].readback);
              w->files[k].written_at = w->files[k].verified_at = now;
            }
      }
      pthread_mutex_unlock(&f->lock);
      rc = 1;
    }
  }
  pthread_mutex_unlock(&f->apply_lock);
  return rc;
}
